"""Explanations: the criterion that put a deleted pod before the first kept pod, in words."""

from __future__ import annotations

import pytest
from downscale_factory import DAY, HOUR, NOW, SETTINGS, go_less, go_switches, pod, pod_sets
from hypothesis import given

from kubetide.model.meta import OwnerReference
from kubetide.workloads import explain_order, rank, reason

OLD_RS = OwnerReference("ReplicaSet", "web-old", "rs-uid-0", controller=True)
KEPT = pod("kept", node="node-1", ready_at=NOW - 5 * DAY, created=NOW - 6 * DAY, cost="100", uid="uid-m")


def why(first, second=KEPT, related=(), **switches):
    ranking = rank([second, first], NOW, list(related), **switches)
    assert ranking.order == [first, second]
    return reason(ranking, first, second)


def test_unscheduled():
    assert why(pod("u", node="", phase="Pending", ready=False)).text == "unscheduled"


def test_phases():
    assert why(pod("p", phase="Pending", ready=False)).text == "pending"
    assert why(pod("u", phase="Unknown", ready=False)).text == "phase Unknown"
    r = why(pod("s", phase="Succeeded", ready=False), pod("k", phase="Unknown", ready=False))
    assert (r.criterion, r.text) == (2, "phase Succeeded (counts as Pending)")


def test_not_ready():
    assert why(pod("n", ready=False)).text == "not ready"


def test_deletion_cost():
    r = why(pod("c", cost="10", ready_at=NOW - 5 * DAY, created=NOW - 6 * DAY, uid="uid-z"))
    assert (r.criterion, r.text) == (4, "deletion cost 10 < 100")


def test_related_pods_on_the_node():
    first = pod("r", node="node-3", cost="100", ready_at=NOW - 5 * DAY, created=NOW - 6 * DAY, uid="uid-z")
    neighbour = pod("x", node="node-3", owner=OLD_RS)
    r = why(first, related=[neighbour])
    assert (r.criterion, r.text) == (5, "2 related pods on node-3 (vs 1 on node-1)")


def test_ready_buckets():
    first = pod("y", cost="100", ready_at=NOW - 2 * HOUR, created=NOW - 6 * DAY, uid="uid-z")
    r = why(first)
    assert (r.criterion, r.text) == (6, "ready 2h ago vs 5d ago (bucket 42 < 48)")
    r = why(first, logarithmic=False)
    assert r.text == "ready 2h ago vs 5d ago (more recently ready first)"


def test_ready_time_missing():
    r = why(pod("z", cost="100", ready_at=None, created=NOW - 6 * DAY, uid="uid-z"))
    assert (r.criterion, r.text) == (6, "no ready time (counts as the newest)")


def test_same_bucket_uid_ordering():
    first = pod("b", cost="100", ready_at=NOW - 4 * DAY - 7 * HOUR, created=NOW - 6 * DAY, uid="uid-a")
    r = why(first)
    assert r.criterion == 6
    assert r.text.startswith("same age bucket, UID ordering (ready 4d7h ago vs 5d ago, bucket 48)")


def test_same_ready_time_split_runs():
    a = pod("a", uid="3", ready_at=NOW - 5000, created=NOW - 6000, restarts=5)
    b = pod("b", uid="1", ready_at=NOW - 5000, created=NOW - 6000)
    c = pod("c", uid="2", ready_at=NOW - 5001, created=NOW - 6000)
    ranking = rank([a, b, c], NOW)
    r = reason(ranking, b, a)
    assert r.criterion == 6
    assert r.text.startswith("same age bucket, UID ordering (both ready 1h23m ago, bucket 42;")


def test_restarts():
    same = {"cost": "100", "ready_at": NOW - 5 * DAY, "created": NOW - 6 * DAY, "uid": "uid-z"}
    assert why(pod("r", restarts=5, **same)).text == "more restarts (5 > 0)"
    assert why(pod("s", sidecar_restarts=3, **same)).text == "more sidecar restarts (3 > 0)"


def test_creation():
    first = pod("c", cost="100", ready_at=NOW - 5 * DAY, created=NOW - 2 * DAY, uid="uid-z")
    assert why(first).text == "created 2d ago vs 6d ago (bucket 47 < 48)"
    assert why(first, logarithmic=False).text == "created 2d ago vs 6d ago (newer first)"
    nameless = pod("n", cost="100", ready_at=NOW - 5 * DAY, created=None, uid="uid-z")
    assert why(nameless).text == "no creation time (counts as the newest)"
    same_bucket = pod("s", cost="100", ready_at=NOW - 5 * DAY, created=NOW - 6 * DAY - HOUR, uid="uid-a")
    r = why(same_bucket)
    assert (r.criterion, r.text) == (
        8,
        "same age bucket, UID ordering (created 6d1h ago vs 6d ago, bucket 48)",
    )


def test_tie():
    twin = pod("twin", cost="100", ready_at=NOW - 5 * DAY, created=NOW - 6 * DAY, uid="uid-a")
    r = why(twin)
    assert (r.criterion, r.text) == (
        9,
        "equal on every criterion (upstream leaves them in its sort's order); kubetide's tie-break: UID",
    )


def test_explain_order_compares_each_deleted_pod_with_the_first_kept_one():
    pods = [
        KEPT,
        pod("u", node="", phase="Pending", ready=False),
        pod("n", ready=False, node="node-2"),
        pod("old", node="node-4", ready_at=NOW - 30 * DAY, created=NOW - 30 * DAY, uid="uid-0"),
    ]
    explained = explain_order(pods, 2, NOW)
    assert [(p.name, r.criterion, r.text) for p, r in explained] == [
        ("u", 1, "unscheduled"),
        ("n", 3, "not ready"),
    ]
    everything = explain_order(pods, 4, NOW)
    assert [p.name for p, _ in everything] == [p.name for p in pods]  # no sorting when all go
    assert {r.text for _, r in everything} == {"every pod goes"}
    assert explain_order(pods, 0, NOW) == []


@SETTINGS
@given(pod_sets())
def test_every_adjacent_pair_has_a_reason_that_go_agrees_with_on_criteria_1_to_5(case):
    pods, related, switches = case
    ranking = rank(pods, NOW, related, **switches)
    go = go_switches(switches)
    for first, second in zip(ranking.order, ranking.order[1:]):
        r = reason(ranking, first, second)
        assert 1 <= r.criterion <= 9 and r.text
        if r.criterion <= 5:
            assert go_less(first, ranking.rank_of(first), second, ranking.rank_of(second), NOW, **go)


@pytest.mark.parametrize("diff", [1, 2, 3])
def test_explained_pods_are_the_deleted_pods(diff):
    from kubetide.workloads import pods_to_delete

    pods = [
        pod(f"p{i}", node=f"n{i % 2}", ready_at=NOW - (i + 1) * HOUR, created=NOW - DAY) for i in range(5)
    ]
    assert [p for p, _ in explain_order(pods, diff, NOW)] == pods_to_delete(pods, diff, NOW)
