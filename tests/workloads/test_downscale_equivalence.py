"""The key-based sort against a literal transcription of Kubernetes' pairwise comparator.

`go_less` (downscale_factory.py) is Go's `ActivePodsWithRanks.Less`. Refined with a final
(UID, namespace/name) tie-break, it is a total order on most pod sets, and then our order must be
exactly the sorted order it defines. On some sets it is not an order at all (two pods with the same
ready time, a third pod of the same bucket with a UID between theirs: see ranking.py); there our
order may contradict it only on such pairs, and only there.
"""

from __future__ import annotations

import dataclasses
import random

from downscale_factory import (
    HOUR,
    NOW,
    SETTINGS,
    crowded_sets,
    go_less,
    go_sorted,
    go_switches,
    pod,
    pod_sets,
)
from hypothesis import event, given
from hypothesis import strategies as st

from kubetide.workloads import rank, rank_pods_for_deletion


@SETTINGS
@given(st.one_of(pod_sets(), crowded_sets()))
def test_key_sort_equals_the_comparator_sort_whenever_the_comparator_is_an_order(case):
    pods, related, switches = case
    ranking = rank(pods, NOW, related, **switches)
    by_go, consistent = go_sorted(pods, ranking, switches)
    event("comparator is an order" if consistent else "comparator contradicts itself")
    if consistent:
        assert [p.name for p in ranking.order] == [p.name for p in by_go]
        return
    # Not an order: our order may overrule Go only on same-ready-time pairs split into two runs.
    go = go_switches(switches)
    assert switches["logarithmic"]
    order = ranking.order
    for i, x in enumerate(order):
        for y in order[i + 1 :]:
            if go_less(y, ranking.rank_of(y), x, ranking.rank_of(x), NOW, **go):
                kx, ky = ranking.key(x), ranking.key(y)
                assert kx[:3] == ky[:3] and kx[2] >= -1  # same criteria 1-5, same ready-age bucket
                assert x.ready_transition == y.ready_transition  # Go decided by restarts/creation
                assert kx[3] < ky[3]  # we decided by the run heads' UIDs
                low, high = sorted((x.uid, y.uid))
                assert any(  # the witness: same bucket, another ready time, a UID in between
                    ranking.key(z)[:3] == kx[:3]
                    and z.ready_transition != x.ready_transition
                    and low < z.uid < high
                    for z in pods
                )


@SETTINGS
@given(pod_sets(), st.randoms(use_true_random=False))
def test_shuffling_the_input_never_changes_the_order(case, rng):
    pods, related, switches = case
    expected = [p.name for p in rank_pods_for_deletion(pods, NOW, related, **switches)]
    shuffled = list(pods)
    rng.shuffle(shuffled)
    shuffled_related = list(related)
    rng.shuffle(shuffled_related)
    assert [p.name for p in rank_pods_for_deletion(shuffled, NOW, shuffled_related, **switches)] == expected


@SETTINGS
@given(pod_sets(unique_uids=False))
def test_shuffling_never_changes_the_order_even_with_duplicate_uids(case):
    pods, related, switches = case
    expected = [p.name for p in rank_pods_for_deletion(pods, NOW, related, **switches)]
    assert [p.name for p in rank_pods_for_deletion(pods[::-1], NOW, related, **switches)] == expected


@SETTINGS
@given(pod_sets(max_size=7))
def test_the_order_is_a_total_preorder(case):
    pods, related, switches = case
    ranking = rank(pods, NOW, related, **switches)

    def le(a, b):
        return ranking.key(a) <= ranking.key(b)

    for a in pods:
        for b in pods:
            assert le(a, b) or le(b, a)  # total
            if le(a, b) and le(b, a):
                assert a is b  # antisymmetric: the key ends with a unique position
            for c in pods:
                if le(a, b) and le(b, c):
                    assert le(a, c)  # transitive
    positions = [ranking.order.index(p) for p in sorted(pods, key=ranking.key)]
    assert positions == list(range(len(pods)))


@SETTINGS
@given(pod_sets(unique_uids=False))
def test_python_and_numpy_engines_agree(case):
    pods, related, switches = case
    python = rank(pods, NOW, related, engine="python", **switches)
    numpy = rank(pods, NOW, related, engine="numpy", **switches)
    assert [p.name for p in python.order] == [p.name for p in numpy.order]
    assert python.keys() == numpy.keys()


@SETTINGS
@given(
    st.lists(
        st.text(alphabet="0123456789abcdef-", min_size=1, max_size=8), min_size=1, max_size=20, unique=True
    )
)
def test_with_equal_timestamps_and_nothing_else_different_the_order_follows_uid(uids):
    pods = [pod(f"p{i}", uid=uid, ready_at=NOW - HOUR, created=NOW - 2 * HOUR) for i, uid in enumerate(uids)]
    for logarithmic in (True, False):
        order = rank_pods_for_deletion(pods, NOW, logarithmic=logarithmic)
        assert [p.uid for p in order] == sorted(uids)


def test_the_comparator_cycle_is_broken_by_keeping_the_uid_decisions():
    """A and B ready at the same second, C a second later in the same bucket; A restarted more.

    Go: A < B (restarts), B < C and C < A (same bucket, UIDs). No order satisfies all three.
    """
    a = pod("a", uid="3", ready_at=NOW - 5000, created=NOW - 6000, restarts=5)
    b = pod("b", uid="1", ready_at=NOW - 5000, created=NOW - 6000)
    c = pod("c", uid="2", ready_at=NOW - 5001, created=NOW - 6000)
    assert go_less(a, 1, b, 1, NOW) and go_less(b, 1, c, 1, NOW) and go_less(c, 1, a, 1, NOW)
    for pods in ([a, b, c], [c, b, a], [b, a, c]):
        assert [p.name for p in rank_pods_for_deletion(pods, NOW)] == ["b", "c", "a"]
    # with nothing between their UIDs, the restarts decide again, as in Go
    c_far = dataclasses.replace(c, meta=dataclasses.replace(c.meta, uid="4"))
    assert [p.name for p in rank_pods_for_deletion([b, c_far, a], NOW)] == ["a", "b", "c"]
    # same-ready-time pods in one run: restarts, then creation bucket, as in Go
    d = pod("d", uid="5", ready_at=NOW - 5000, created=NOW - 60)
    order = rank_pods_for_deletion([a, b, d], NOW)
    assert [p.name for p in order] == ["a", "d", "b"]


def test_engines_agree_on_a_large_random_set():
    rng = random.Random(7)
    pods = [
        pod(
            f"p{i}",
            uid=f"{rng.getrandbits(32):08x}",
            node=f"n{rng.randrange(40)}",
            ready=rng.random() < 0.9,
            ready_at=NOW - rng.randrange(0, 90 * 86400),
            created=NOW - rng.randrange(0, 90 * 86400),
            restarts=rng.choice([0, 0, 0, 1, 3]),
            cost=str(rng.randrange(-3, 3)) if rng.random() < 0.1 else None,
        )
        for i in range(3000)
    ]
    for logarithmic in (True, False):
        python = rank(pods, NOW, engine="python", logarithmic=logarithmic)
        numpy = rank(pods, NOW, engine="numpy", logarithmic=logarithmic)
        assert python.keys() == numpy.keys()
        assert [p.name for p in python.order] == [p.name for p in numpy.order]


def test_times_numpy_cannot_hold_fall_back_to_python():
    far = [pod(f"p{i}", uid=f"u{i}", ready_at=NOW - i * HOUR, created=253402300799.0) for i in range(300)]
    order = rank_pods_for_deletion(far, NOW)  # auto engine: 300 pods would use NumPy
    assert [p.name for p in order] == [p.name for p in rank(far, NOW, engine="python").order]
