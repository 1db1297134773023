"""Memo's invalidation, once for every cache that uses it (the planner's per-node scans and
eligibility, recent evictions' owner counts, the registry's READY records, the pod mover's
homeless copies): a value is served only under the stamp and tag it was stored with, and entries
not visited during a pass leave at the next one."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kubetide.model import Node, ObjectMeta, Pod
from kubetide.snapshot import ClusterSnapshot, Memo


def node(name: str, cpu: int = 4000) -> Node:
    return Node(ObjectMeta(name), {"cpu": cpu, "memory": 8 * 2**30, "pods": 110}, {})


def pod(name: str, cpu: int = 100) -> Pod:
    return Pod(ObjectMeta(name, "default", f"uid-{name}"), {"cpu": cpu, "pods": 1}, {})


def facts(snapshot: ClusterSnapshot, name: str) -> tuple[str, ...]:
    return tuple(sorted(p.name for p in snapshot.pods_on(name).values()))


def test_a_value_is_served_under_its_stamp_and_tag_only():
    memo: Memo[str, str] = Memo()
    group, other = object(), object()
    memo.put("a", "value", 7, group)
    assert memo.get("a", 7, group) == "value"
    assert memo.get("a", 8, group) is None  # the node or its pods changed
    assert memo.get("a", 7, other) is None  # same stamp, another tag (compared by identity)
    assert memo.get("a", 7) is None
    assert memo.get("b", 7, group) is None
    memo.put("a", "newer", 8, group)
    assert memo.get("a", 7, group) is None and memo.get("a", 8, group) == "newer"


def test_entries_not_visited_during_a_pass_leave_at_the_next():
    memo: Memo[str, int] = Memo()
    memo.put("kept", 1)
    memo.put("gone", 2)
    memo.new_pass()
    assert memo.get("kept") == 1  # visited: carried into this pass
    memo.new_pass()
    assert memo.get("kept") == 1
    assert memo.get("gone") is None  # not visited in the pass before: dropped
    memo.put("late", 3)
    memo.new_pass()
    memo.put("kept", 4)  # stored again in a new pass without a visit first: the new value wins
    assert memo.get("kept") == 4
    memo.clear()
    assert memo.get("kept") is None and memo.get("late") is None


def test_every_change_to_a_node_or_its_pods_renews_its_stamp():
    snapshot = ClusterSnapshot([node("a"), node("b")], [])
    memo: Memo[str, tuple[str, ...]] = Memo()

    def cached(name: str) -> bool:
        return memo.get(name, snapshot.stamp(name)) is not None

    def remember() -> None:
        for name in ("a", "b"):
            memo.put(name, facts(snapshot, name), snapshot.stamp(name))

    remember()
    assert cached("a") and cached("b")
    snapshot.add_pod(pod("p"), "a")
    assert not cached("a") and cached("b")  # only the changed node
    remember()
    snapshot.remove_pod("uid-p")
    assert not cached("a")
    remember()
    snapshot.replace_node(node("a", cpu=8000))  # a replaced Node object
    assert not cached("a")
    remember()
    snapshot.fork()
    snapshot.add_pod(pod("q"), "b")
    remember()  # cached inside the fork
    snapshot.revert()  # the inverse change is a change: nothing from inside the fork is served
    assert not cached("b") and cached("a")


def test_stamps_never_repeat_across_snapshots():
    first = ClusterSnapshot([node("a")], [])
    second = ClusterSnapshot([node("a")], [])
    memo: Memo[str, str] = Memo()
    memo.put("a", "from the first", first.stamp("a"))
    assert memo.get("a", second.stamp("a")) is None


@settings(max_examples=60)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["add", "remove", "replace", "fork", "revert", "commit"]), st.sampled_from("ab")
        ),
        max_size=30,
    )
)
def test_a_served_value_always_equals_a_fresh_computation(steps):
    """Whatever happens to the snapshot, a value the memo serves is what computing it again
    gives: the invalidation rule every per-node cache relies on."""
    snapshot = ClusterSnapshot([node("a"), node("b")], [])
    memo: Memo[str, tuple[str, ...]] = Memo()
    serial = 0
    for op, name in steps:
        if op == "add":
            serial += 1
            snapshot.add_pod(pod(f"p{serial}"), name)
        elif op == "remove" and snapshot.pods_on(name):
            snapshot.remove_pod(next(iter(snapshot.pods_on(name))))
        elif op == "replace":
            serial += 1
            snapshot.replace_node(node(name, cpu=4000 + serial))
        elif op == "fork":
            snapshot.fork()
        elif op in ("revert", "commit") and snapshot.depth:
            getattr(snapshot, op)()
        memo.new_pass()
        for each in ("a", "b"):
            stamp = snapshot.stamp(each)
            served = memo.get(each, stamp)
            fresh = facts(snapshot, each)
            if served is None:
                memo.put(each, fresh, stamp)
            else:
                assert served == fresh
