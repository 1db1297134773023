"""The sorting_deletion_age_ratio histogram, with real (not integer-truncated) ratios."""

from __future__ import annotations

from downscale_factory import DAY, HOUR, NOW, pod

from kubetide.workloads import DeletionAgeRatio, pods_to_delete


def test_ratios_are_real_and_buckets_cumulative():
    youngest = pod("young", created=NOW - HOUR, ready_at=NOW - HOUR)
    a = pod("a", created=NOW - 1.9 * HOUR, ready_at=NOW - HOUR)  # 1.9: upstream records 1
    b = pod("b", created=NOW - 5 * HOUR, ready_at=NOW - HOUR)  # 5
    not_ready = pod("n", ready=False, created=NOW - 100 * HOUR)  # not observed
    metric = DeletionAgeRatio()
    ratios = metric.observe([a, b, not_ready], [youngest, a, b, not_ready], NOW)
    assert ratios == [1.9, 5.0]
    assert metric.as_dict() == {
        "buckets": {"0.25": 0, "0.5": 0, "1": 0, "2": 1, "4": 1, "8": 2, "+Inf": 2},
        "count": 2,
        "max": 5.0,
    }
    metric.observe([pod("c", created=NOW - 10 * HOUR)], [youngest], NOW)
    metric.observe([youngest], [youngest], NOW)  # the youngest itself: exactly 1
    assert metric.as_dict()["buckets"] == {"0.25": 0, "0.5": 0, "1": 1, "2": 2, "4": 2, "8": 3, "+Inf": 4}
    assert metric.count == 4 and metric.max == 10.0


def test_empty_histogram():
    assert DeletionAgeRatio().as_dict() == {
        "buckets": {"0.25": 0, "0.5": 0, "1": 0, "2": 0, "4": 0, "8": 0, "+Inf": 0},
        "count": 0,
        "max": None,
    }


def test_nothing_is_observed_without_a_positive_youngest_age():
    metric = DeletionAgeRatio()
    just_created = pod("now", created=NOW)
    assert metric.observe([pod("old", created=NOW - DAY)], [just_created], NOW) == []
    assert (
        metric.observe(
            [pod("old", created=NOW - DAY)], [pod("not-ready", ready=False, created=NOW - HOUR)], NOW
        )
        == []
    )
    assert metric.observe([pod("nameless", created=None)], [pod("y", created=NOW - HOUR)], NOW) == []
    assert metric.count == 0


def test_pods_to_delete_observes_only_decisions_that_sorted():
    pods = [pod(f"p{i}", created=NOW - (i + 1) * HOUR, ready_at=NOW - (i + 1) * HOUR) for i in range(4)]
    metric = DeletionAgeRatio()
    assert pods_to_delete(pods, 4, NOW, metric=metric) == pods  # all go: input order, no sort
    assert metric.count == 0
    deleted = pods_to_delete(pods, 2, NOW, metric=metric)
    assert [p.name for p in deleted] == ["p0", "p1"]  # 1h (bucket 41), 2h (42)
    assert metric.count == 2 and metric.max == 2.0


def test_merge():
    one, other = DeletionAgeRatio(), DeletionAgeRatio()
    one.observe_value(1.5)
    other.observe_value(0.2)
    other.observe_value(9.0)
    one.merge(other)
    assert one.as_dict() == {
        "buckets": {"0.25": 1, "0.5": 1, "1": 1, "2": 2, "4": 2, "8": 2, "+Inf": 3},
        "count": 3,
        "max": 9.0,
    }
