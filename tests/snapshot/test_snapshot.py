from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubetide.model.meta import ObjectMeta
from kubetide.model.node import Node
from kubetide.model.pod import Pod
from kubetide.snapshot import ClusterSnapshot, SnapshotError, SnapshotObserver
from kubetide.snapshot import snapshot as snapshot_module


def node(name, cpu=4000, **extra):
    return Node(
        ObjectMeta(name, labels={"zone": "a"}), {"cpu": cpu, "memory": 8 * 2**30, "pods": 110, **extra}, {}
    )


def pod(name, cpu=100, **extra):
    return Pod(ObjectMeta(name, "default", f"uid-{name}"), {"cpu": cpu, "pods": 1, **extra}, {})


def state(s: ClusterSnapshot):
    """Everything observable about a snapshot, for before/after comparisons."""
    return (
        [n.name for n in s.nodes()],
        {n.name: (s.requested(n.name), sorted(s.pods_on(n.name))) for n in s.nodes()},
        s.pod_count(),
    )


def test_requested_tracks_pods():
    s = ClusterSnapshot([node("n1"), node("n2")])
    s.add_pod(pod("a", 300), "n1")
    s.add_pod(pod("b", 200), "n1")
    assert s.requested("n1") == {"cpu": 500, "pods": 2}
    s.move_pod("uid-a", "n2")
    assert s.requested("n1") == {"cpu": 200, "pods": 1}
    assert s.node_of("uid-a") == "n2"


def test_revert_restores_everything():
    s = ClusterSnapshot([node("n1"), node("n2"), node("n3")], [])
    s.add_pod(pod("a"), "n1")
    before = state(s)
    s.fork()
    s.add_pod(pod("b"), "n2")
    s.remove_node("n1")
    s.add_node(node("n4"))
    s.move_pod("uid-b", "n3")
    s.replace_node(node("n2", cpu=1))
    assert state(s) != before
    s.revert()
    assert state(s) == before
    assert s.node("n2").allocatable["cpu"] == 4000


def test_nested_commit_is_reverted_by_outer_fork():
    s = ClusterSnapshot([node("n1")])
    before = state(s)
    s.fork()
    s.add_pod(pod("a"), "n1")
    s.fork()
    s.add_pod(pod("b"), "n1")
    s.commit()
    assert s.pod_count() == 2
    s.fork()
    s.add_pod(pod("c"), "n1")
    s.revert()
    assert s.pod_count() == 2
    s.revert()
    assert state(s) == before


def test_commit_at_top_level_keeps_changes():
    s = ClusterSnapshot([node("n1")])
    s.fork()
    s.add_pod(pod("a"), "n1")
    s.commit()
    assert s.depth == 0
    assert s.requested("n1")["cpu"] == 100
    with pytest.raises(SnapshotError):
        s.revert()


def test_extended_resources_get_columns():
    s = ClusterSnapshot([node("gpu", **{"nvidia.com/gpu": 4})])
    s.add_pod(pod("a", **{"nvidia.com/gpu": 1}), "gpu")
    s.add_node(node("plain"))
    assert s.requested("gpu") == {"cpu": 100, "pods": 1, "nvidia.com/gpu": 1}
    assert s.allocatable("plain").get("nvidia.com/gpu") is None
    s.add_pod(pod("b", **{"example.com/fpga": 2}), "plain")
    assert s.requested("plain")["example.com/fpga"] == 2
    assert s.requested("gpu")["nvidia.com/gpu"] == 1


def test_errors_on_caller_mistakes():
    s = ClusterSnapshot([node("n1")])
    s.add_pod(pod("a"), "n1")
    with pytest.raises(SnapshotError):
        s.add_pod(pod("a"), "n1")
    with pytest.raises(SnapshotError):
        s.add_pod(pod("b"), "missing")
    with pytest.raises(SnapshotError):
        s.add_node(node("n1"))
    with pytest.raises(SnapshotError):
        s.node("missing")


def test_slots_are_reused_and_order_is_stable():
    s = ClusterSnapshot([node(f"n{i}") for i in range(100)])
    s.remove_node("n3")
    s.add_node(node("new"))
    assert s.slot_of("new") == 3
    assert [n.name for n in s.nodes()][:5] == ["n0", "n1", "n2", "new", "n4"]


class Counter(SnapshotObserver):
    def __init__(self):
        self.pods = {}

    def pod_added(self, pod, node):
        self.pods[node.name] = self.pods.get(node.name, 0) + 1

    def pod_removed(self, pod, node):
        self.pods[node.name] -= 1


def test_observers_follow_changes_and_reverts():
    s = ClusterSnapshot([node("n1"), node("n2")])
    counter = Counter()
    s.add_observer(counter)
    s.add_pod(pod("a"), "n1")
    s.fork()
    s.add_pod(pod("b"), "n2")
    s.remove_node("n1")
    assert counter.pods == {"n1": 0, "n2": 1}
    s.revert()
    assert counter.pods == {"n1": 1, "n2": 0}


operations = st.lists(
    st.tuples(
        st.sampled_from(
            ["add_pod", "remove_pod", "move", "add_node", "remove_node", "fork", "revert", "commit"]
        ),
        st.integers(0, 30),
    ),
    max_size=60,
)


@settings(max_examples=150)
@given(operations)
def test_random_operations_revert_to_the_forked_state(ops):
    """Property: whatever happens inside a fork, revert() gives back exactly the state at fork()."""
    s = ClusterSnapshot([node(f"n{i}") for i in range(4)])
    saved = []
    counter = 0
    for op, arg in ops:
        names = [n.name for n in s.nodes()]
        uids = [p.uid for p in s.pods()]
        if op == "add_pod" and names:
            counter += 1
            s.add_pod(pod(f"p{counter}", cpu=arg + 1), names[arg % len(names)])
        elif op == "remove_pod" and uids:
            s.remove_pod(uids[arg % len(uids)])
        elif op == "move" and uids and names:
            s.move_pod(uids[arg % len(uids)], names[arg % len(names)])
        elif op == "add_node":
            counter += 1
            s.add_node(node(f"x{counter}"))
        elif op == "remove_node" and names:
            s.remove_node(names[arg % len(names)])
        elif op == "fork":
            s.fork()
            saved.append(state(s))
        elif op == "revert" and saved:
            s.revert()
            assert state(s) == saved.pop()
        elif op == "commit" and saved:
            s.commit()
            saved.pop()
    while saved:
        s.revert()
        assert state(s) == saved.pop()
    # Resource accounting never drifts from the pods actually bound.
    for n in s.nodes():
        total = sum(p.requests["cpu"] for p in s.pods_on(n.name).values())
        assert s.requested(n.name).get("cpu", 0) == total


def test_stamps_change_with_every_change_and_a_revert_gives_the_old_ones_back():
    """Stamps key per-node caches: any change to a node or its pods gives it a stamp never issued
    before; a revert restores the content and with it the stamps the fork found (what was cached
    before a what-if stays valid after it), nested forks included."""
    s = ClusterSnapshot([node("n1"), node("n2")])
    seen = {s.stamp("n1"), s.stamp("n2")}
    assert len(seen) == 2

    def changed(name):
        stamp = s.stamp(name)
        assert stamp not in seen
        seen.add(stamp)

    untouched = s.stamp("n2")
    s.add_pod(pod("a"), "n1")
    changed("n1")
    assert s.stamp("n2") == untouched
    before = (s.stamp("n1"), s.stamp("n2"))
    s.fork()
    s.add_pod(pod("b"), "n1")
    changed("n1")
    s.fork()
    s.move_pod("uid-a", "n2")
    changed("n1")
    changed("n2")
    inner = (s.stamp("n1"), s.stamp("n2"))
    s.fork()
    s.remove_pod("uid-b")
    changed("n1")
    s.revert()  # the innermost: back to the stamps after the move
    assert (s.stamp("n1"), s.stamp("n2")) == inner
    s.commit()  # the move stays, inside the outer fork
    assert (s.stamp("n1"), s.stamp("n2")) == inner
    s.revert()  # back to the same pods, and to their stamps
    assert (s.stamp("n1"), s.stamp("n2")) == before
    s.fork()
    s.replace_node(node("n2", cpu=1))
    changed("n2")
    s.remove_node("n1")
    s.add_node(node("n3"))
    s.revert()
    assert (s.stamp("n1"), s.stamp("n2")) == before
    assert "n3" not in s
    s.update_pod(pod("a", 200))  # a is back on n1
    changed("n1")
    assert [(n.name, st) for n, st in s.stamps()] == [("n1", s.stamp("n1")), ("n2", s.stamp("n2"))]
    # Another snapshot never hands out a stamp this one did.
    other = ClusterSnapshot([node("n1")])
    assert other.stamp("n1") not in seen


def test_version_moves_with_any_change_and_a_revert_gives_it_back():
    s = ClusterSnapshot([node("n1"), node("n2")])
    start = s.version
    s.add_pod(pod("a"), "n1")
    added = s.version
    assert added > start and added == s.stamp("n1")
    s.fork()
    s.move_pod("uid-a", "n2")
    assert s.version not in (start, added)
    s.revert()
    assert s.version == added
    s.fork()
    s.replace_node(node("n2", cpu=1))
    replaced = s.version
    s.commit()
    assert s.version == replaced != added
    s.remove_pod("uid-a")
    s.add_pod(pod("a"), "n1")  # the same content again, but a change: never an old version
    assert s.version > replaced


def test_pods_by_node_follows_pods_order():
    s = ClusterSnapshot([node("n1"), node("n2"), node("n3")])
    s.add_pod(pod("a"), "n2")
    s.add_pod(pod("b"), "n1")
    s.add_pod(pod("c"), "n2")
    s.fork()
    s.remove_node("n1")
    s.revert()  # n1 comes back: last in pods() order, first in slot order
    grouped = [(name, stamp, list(pods)) for name, stamp, pods in s.pods_by_node()]
    assert [uid for _, _, uids in grouped for uid in uids] == [p.uid for p in s.pods()]
    assert [(name, stamp) for name, stamp, _ in grouped] == [(n, s.stamp(n)) for n in ("n2", "n3", "n1")]


def arrays_match_the_objects(s: ClusterSnapshot) -> None:
    """`used`, `alloc` and `valid` agree with the nodes and pods, row by row (free rows zero)."""
    used, alloc, index = s.used, s.alloc, s.columns.index
    for slot in range(len(s.valid)):
        n = s.node_at(slot)
        expected_used = [0] * len(index)
        expected_alloc = [0] * len(index)
        if n is not None:
            for p in s.pods_on(n.name).values():
                for name, amount in p.requests.items():
                    expected_used[index[name]] += amount
            for name, amount in n.allocatable.items():
                expected_alloc[index[name]] = amount
        assert bool(s.valid[slot]) == (n is not None)
        assert used[slot].tolist() == expected_used, f"used of slot {slot}"
        assert alloc[slot].tolist() == expected_alloc, f"alloc of slot {slot}"


@settings(max_examples=150)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(
                [
                    "add_pod",
                    "gpu_pod",
                    "remove_pod",
                    "move",
                    "add_node",
                    "remove_node",
                    "relabel",
                    "fork",
                    "revert",
                    "commit",
                    "read",
                ]
            ),
            st.integers(0, 30),
        ),
        max_size=60,
    ),
    st.sampled_from([100_000, 1, 3]),
)
def test_resource_rows_stay_exact_however_reads_and_reverts_interleave(ops, queue_bound):
    """Pod requests reach `used` lazily and a revert drops what was never applied: whichever
    moment `used` is read (mid-fork, between an add and its undo, after new resource columns,
    or when the queue reaches its bound), every row equals the sum of its pods, and a free
    slot's rows are zero."""
    with mock.patch.object(snapshot_module, "_MAX_PENDING", queue_bound):
        check_rows_through(ops)


def check_rows_through(ops):
    s = ClusterSnapshot([node(f"n{i}") for i in range(3)])
    for counter, (op, arg) in enumerate(ops):
        names = [n.name for n in s.nodes()]
        uids = [p.uid for p in s.pods()]
        if op == "add_pod" and names:
            s.add_pod(pod(f"p{counter}", cpu=arg + 1), names[arg % len(names)])
        elif op == "gpu_pod" and names:  # a new column while adds may be queued
            s.add_pod(pod(f"p{counter}", **{f"example.com/r{arg % 3}": arg + 1}), names[arg % len(names)])
        elif op == "remove_pod" and uids:
            s.remove_pod(uids[arg % len(uids)])
        elif op == "move" and uids and names:
            s.move_pod(uids[arg % len(uids)], names[arg % len(names)])
        elif op == "add_node":
            s.add_node(
                node(f"x{counter}", cpu=1000 * (arg + 1), **({"example.com/gpu": arg} if arg % 2 else {}))
            )
        elif op == "remove_node" and names:
            s.remove_node(names[arg % len(names)])
        elif op == "relabel" and names:  # a new allocatable for the same node
            s.replace_node(node(names[arg % len(names)], cpu=500 * (arg + 1)))
        elif op == "fork":
            s.fork()
        elif op == "revert" and s.depth:
            s.revert()
        elif op == "commit" and s.depth:
            s.commit()
        elif op == "read":
            arrays_match_the_objects(s)
    while s.depth:
        s.revert()
    arrays_match_the_objects(s)


def test_walks_can_be_consumed_while_the_snapshot_changes():
    """`pods_by_node()` and `stamps()` describe the moment they were asked: a caller may change
    the snapshot while walking them (a generator over the live dict failed with RuntimeError)."""
    s = ClusterSnapshot([node("n1"), node("n2")])
    s.add_pod(pod("a"), "n1")
    walked = []
    for name, _, _ in s.pods_by_node():
        s.add_node(node(f"after-{name}"))
        walked.append(name)
    assert walked == ["n1", "n2"]
    stamps = []
    for n, stamp in s.stamps():
        s.add_pod(pod(f"on-{n.name}"), n.name)
        stamps.append((n.name, stamp != s.stamp(n.name)))
    assert stamps == [("n1", True), ("n2", True), ("after-n1", True), ("after-n2", True)]


@pytest.mark.parametrize("forked", [False, True], ids=["outside-a-fork", "inside-a-fork"])
def test_removing_a_node_s_pods_at_once_leaves_what_removing_them_one_by_one_leaves(forked):
    def build():
        s = ClusterSnapshot([node("n1"), node("n2")])
        s.add_observer(counter := Counter())
        for name, cpu, where in [("a", 100, "n1"), ("b", 250, "n1"), ("c", 400, "n1"), ("d", 50, "n2")]:
            s.add_pod(pod(name, cpu, **({"nvidia.com/gpu": 1} if name == "b" else {})), where)
        return s, counter

    one_by_one, counted = build()
    at_once, batched = build()
    before = state(at_once)
    n2_stamp, n1_stamp = at_once.stamp("n2"), at_once.stamp("n1")
    if forked:
        at_once.fork()
    for uid in ["uid-c", "uid-a"]:
        one_by_one.remove_pod(uid)
    at_once.remove_pods("n1", ["uid-c", "uid-a"])
    assert state(at_once) == state(one_by_one)
    assert at_once.used.tolist() == one_by_one.used.tolist()
    assert batched.pods == counted.pods == {"n1": 1, "n2": 1}
    assert at_once.stamp("n1") != n1_stamp and at_once.stamp("n2") == n2_stamp
    if forked:
        at_once.revert()
        assert state(at_once) == before
        assert batched.pods == {"n1": 3, "n2": 1}
        assert at_once.stamp("n1") == n1_stamp


def test_removing_pods_at_once_refuses_a_pod_not_on_that_node_and_removes_none():
    s = ClusterSnapshot([node("n1"), node("n2")])
    s.add_pod(pod("a"), "n1")
    s.add_pod(pod("b"), "n2")
    before = state(s)
    for uids in (["uid-a", "uid-b"], ["uid-a", "uid-missing"]):
        with pytest.raises(SnapshotError, match="n1"):
            s.remove_pods("n1", uids)
        assert state(s) == before
