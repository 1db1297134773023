"""The column paths (NumPy) against the per-pod references: the ranking against Go's comparator,
the explanations against `reason`, the ages shown against `format_age`."""

from __future__ import annotations

import numpy as np
from downscale_factory import NOW, SETTINGS, crowded_sets, go_less, go_sorted, go_switches, pod_sets
from hypothesis import event, given
from hypothesis import strategies as st

from kubetide.workloads import deletion_reasons, explain_ranking, rank, reason
from kubetide.workloads.explain import _ago
from kubetide.workloads.explain_columns import _agos, explainable
from kubetide.workloads.timebuckets import to_ns

big_sets = st.one_of(pod_sets(min_size=2, max_size=30), pod_sets(min_size=2, max_size=30, unique_uids=False))


@SETTINGS
@given(st.one_of(big_sets, crowded_sets()))
def test_the_numpy_ranking_is_gos_order_whenever_gos_comparator_is_an_order(case):
    """Ties, deletion costs, missing times and pods sharing nodes with related pods, as in
    test_downscale_equivalence, but through the NumPy engine that serves 200 pods and more."""
    pods, related, switches = case
    ranking = rank(pods, NOW, related, engine="numpy", **switches)
    by_go, consistent = go_sorted(pods, ranking, switches)
    event("comparator is an order" if consistent else "comparator contradicts itself")
    if consistent:
        # Go's sort leaves pods its comparator calls equal (two pods with one UID, ready at
        # different times in one bucket) in any order: our order must put no pod after one Go's
        # comparator ranks it before. With unique UIDs, as the API gives, that is Go's order.
        go = go_switches(switches)
        order = [(p, ranking.rank_of(p)) for p in ranking.order]
        inversions = [
            (a.name, b.name)
            for i, (a, ra) in enumerate(order)
            for b, rb in order[i + 1 :]
            if go_less(b, rb, a, ra, NOW, **go)
        ]
        assert not inversions
        if len({p.uid for p in pods}) == len(pods):
            assert [p.name for p in ranking.order] == [p.name for p in by_go]
    python = rank(pods, NOW, related, engine="python", **switches)
    assert [p.name for p in ranking.order] == [p.name for p in python.order]


@SETTINGS
@given(st.one_of(big_sets, crowded_sets()), st.data())
def test_the_columns_explain_every_deleted_pod_as_reason_does(case, data):
    pods, related, switches = case
    ranking = rank(pods, NOW, related, engine="numpy", **switches)
    assert explainable(ranking)
    diff = data.draw(st.integers(1, len(pods) - 1))
    kept = ranking.order[diff]
    expected = [reason(ranking, p, kept) for p in ranking.order[:diff]]
    criteria, texts = deletion_reasons(ranking, diff)
    assert list(zip(criteria, texts, strict=True)) == [(r.criterion, r.text) for r in expected]
    assert deletion_reasons(ranking, diff, columns=False) == (criteria, texts)
    assert [(p, r) for p, r in explain_ranking(ranking, diff)] == list(zip(ranking.order, expected))
    for criterion in set(criteria):
        event(f"criterion {criterion}")


def test_the_columns_explain_many_pods_with_every_criterion():
    """200+ pods take the column path by themselves; every criterion occurs."""
    import random

    from downscale_factory import OLD_RS, pod

    rng = random.Random(3)
    offsets = [None, 0, 1, 0.25, 59, 3600, 3601, 4000, 86400, 5 * 86400 + 7, 90 * 86400, -5]
    pods = []
    for i in range(400):
        ready_at = rng.choice(offsets)
        created = rng.choice(offsets)
        pods.append(
            pod(
                f"p{i}",
                uid=f"{rng.randrange(64):02x}",
                node=rng.choice(["", "n1", "n2", "n3", "n4"]),
                phase=rng.choice(["Running"] * 6 + ["Pending", "Unknown", "Failed"]),
                ready=rng.random() < 0.8,
                ready_at=None if ready_at is None else NOW - ready_at,
                created=None if created is None else NOW - created,
                restarts=rng.choice([0, 0, 0, 2]),
                sidecar_restarts=rng.choice([0, 0, 1]),
                cost=rng.choice([None] * 6 + ["5", "-5"]),
            )
        )
    related = [pod(f"r{i}", uid=f"r{i}", owner=OLD_RS, node=rng.choice(["n1", "n2"])) for i in range(20)]
    seen = set()
    for logarithmic in (True, False):
        ranking = rank(pods, NOW, related, logarithmic=logarithmic)
        assert explainable(ranking)
        for diff in range(1, len(pods), 7):
            criteria, texts = deletion_reasons(ranking, diff)
            assert (criteria, texts) == deletion_reasons(ranking, diff, columns=False)
            seen.update(criteria)
    assert seen == set(range(1, 10))


@given(st.lists(st.integers(-(2**62), 2**62) | st.integers(-(10**10), 10**10), min_size=1, max_size=50))
def test_the_ages_shown_are_formatted_as_one_by_one(ages):
    at = np.array([to_ns(NOW) - age for age in ages], dtype=np.int64)
    present = np.array([age % 7 != 3 for age in ages])
    expected = [_ago(to_ns(NOW), int(t)) if has else "never" for t, has in zip(at, present, strict=True)]
    assert _agos(to_ns(NOW), at, present) == expected
