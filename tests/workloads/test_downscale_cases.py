"""Every published case of the reference (upstream's TestSortingActivePodsWithRanks), table-driven.

Upstream passes ranks explicitly; here a rank comes from where the pods are, as in the controller:
a pod with rank r gets r - 1 related pods (of another ReplicaSet) on its node.
"""

from __future__ import annotations

import dataclasses

import pytest
from downscale_factory import DAY, HOUR, MONTH, NOW, go_less, pod

from kubetide.model.meta import OwnerReference
from kubetide.workloads import age_bucket, rank, rank_pods_for_deletion, to_ns

THEN_1_MONTH = NOW - MONTH
THEN_2H, THEN_5H, THEN_8H = NOW - 2 * HOUR, NOW - 5 * HOUR, NOW - 8 * HOUR
OLD_RS = OwnerReference("ReplicaSet", "web-6d4b7c9f8", "rs-uid-0", controller=True)

PODS = {
    "unscheduled": pod("unscheduled", node="", phase="Pending", ready=False),
    "pending": pod("pending", phase="Pending", ready=False),
    "unknown-phase": pod("unknown-phase", phase="Unknown", ready=False),
    "not-ready": pod("not-ready", ready=False),
    "ready-no-last-transition-time": pod("ready-no-last-transition-time"),
    "ready-now": pod("ready-now", ready_at=NOW, created=NOW),
    "ready-then": pod("ready-then", ready_at=THEN_1_MONTH, created=THEN_1_MONTH),
    "ready-high-restarts": pod("ready-high-restarts", restarts=9001, ready_at=NOW, created=NOW),
    "ready-now-created-then": pod("ready-now-created-then", ready_at=NOW, created=THEN_1_MONTH),
    "low-deletion-cost": pod("low-deletion-cost", ready_at=NOW, created=THEN_1_MONTH, cost="10"),
    "high-deletion-cost": pod("high-deletion-cost", ready_at=NOW, created=THEN_1_MONTH, cost="100"),
    "unscheduled-5-hours": pod(
        "unscheduled-5-hours", node="", phase="Pending", ready=False, ready_at=THEN_5H, created=THEN_5H
    ),
    "unscheduled-8-hours": pod(
        "unscheduled-8-hours", node="", phase="Pending", ready=False, ready_at=THEN_8H, created=THEN_8H
    ),
    "ready-2-hours": pod("ready-2-hours", node="", ready_at=THEN_2H, created=THEN_1_MONTH),
    "ready-5-hours": pod("ready-5-hours", node="", ready_at=THEN_5H, created=THEN_1_MONTH),
    "ready-8-hours": pod("ready-8-hours", node="", ready_at=THEN_8H, created=THEN_1_MONTH),
}


def placed(name: str, node: str, rank: int) -> tuple:
    """The pod on `node` (unless unscheduled) with rank - 1 related pods of another ReplicaSet there."""
    p = PODS[name]
    if p.node_name:
        p = dataclasses.replace(p, node_name=node)
    related = [
        pod(f"{name}-neighbour-{i}", node=p.node_name, owner=OLD_RS, ready_at=NOW - DAY, created=NOW - DAY)
        for i in range(rank - 1)
    ]
    return p, related


# (lesser, its rank, greater, its rank, switches): lesser is deleted first.
INEQUALITIES = [
    ("unscheduled", 1, "pending", 2, {}),
    ("unscheduled", 2, "pending", 1, {}),
    ("pending", 1, "unknown-phase", 2, {}),
    ("unknown-phase", 1, "not-ready", 2, {}),
    ("not-ready", 1, "ready-no-last-transition-time", 1, {}),
    ("ready-no-last-transition-time", 1, "ready-now", 1, {}),
    ("ready-now", 2, "ready-no-last-transition-time", 1, {}),
    ("ready-now", 1, "ready-then", 1, {}),
    ("ready-now", 2, "ready-then", 1, {}),
    ("ready-high-restarts", 1, "ready-now", 1, {}),
    ("ready-now", 2, "ready-high-restarts", 1, {}),
    ("ready-now", 1, "ready-now-created-then", 1, {}),
    ("ready-now-created-then", 2, "ready-now", 1, {}),
    ("low-deletion-cost", 2, "high-deletion-cost", 1, {}),
    ("high-deletion-cost", 2, "low-deletion-cost", 1, {"deletion_cost": False}),
    ("ready-2-hours", 1, "ready-5-hours", 1, {}),
    # the same pairs with the older rules (logarithmic off) where the answer does not change
    ("ready-now", 1, "ready-then", 1, {"logarithmic": False}),
    ("ready-2-hours", 1, "ready-5-hours", 1, {"logarithmic": False}),
    ("ready-5-hours", 1, "ready-8-hours", 1, {"logarithmic": False}),
]


@pytest.mark.parametrize(
    ("lesser", "lesser_rank", "greater", "greater_rank", "switches"),
    INEQUALITIES,
    ids=[f"{a}@{ra}<{b}@{rb}{'-' + '-'.join(s) if s else ''}" for a, ra, b, rb, s in INEQUALITIES],
)
@pytest.mark.parametrize("engine", ["python", "numpy"])
def test_published_inequalities(lesser, lesser_rank, greater, greater_rank, switches, engine):
    first, first_related = placed(lesser, "node-a", lesser_rank)
    second, second_related = placed(greater, "node-b", greater_rank)
    related = first_related + second_related
    for pods in ([first, second], [second, first]):
        ranking = rank(pods, NOW, related + pods, engine=engine, **switches)
        assert [p.name for p in ranking.order] == [lesser, greater]
        if first.node_name or second.node_name:
            assert (ranking.rank_of(first), ranking.rank_of(second)) == (lesser_rank, greater_rank)
        else:  # two unscheduled pods share node "": upstream's explicit ranks 1 and 1 become 2 and 2
            assert ranking.rank_of(first) == ranking.rank_of(second) == 2
    go_switches = {"logarithmic": switches.get("logarithmic", True)}
    go_switches["deletion_cost_on"] = switches.get("deletion_cost", True)
    assert go_less(first, lesser_rank, second, greater_rank, NOW, **go_switches)
    assert not go_less(second, greater_rank, first, lesser_rank, NOW, **go_switches)


# Upstream's equalities hold because its test pods have empty UIDs: inside one age bucket Go
# compares UIDs, and equal UIDs are equal. With distinct UIDs the smaller one goes first.
EQUALITIES = [
    ("unscheduled-5-hours", "unscheduled-8-hours"),  # created 5h and 8h ago: both bucket 44
    ("ready-5-hours", "ready-8-hours"),  # ready 5h and 8h ago: both bucket 44
]


@pytest.mark.parametrize(("one", "other"), EQUALITIES)
def test_published_equalities_follow_uid_inside_a_bucket(one, other):
    a, b = PODS[one], PODS[other]
    same_uid = [dataclasses.replace(p, meta=dataclasses.replace(p.meta, uid="")) for p in (a, b)]
    assert not go_less(same_uid[0], 1, same_uid[1], 1, NOW)
    assert not go_less(same_uid[1], 1, same_uid[0], 1, NOW)
    low, high = (a, b) if a.uid < b.uid else (b, a)
    assert [p.name for p in rank_pods_for_deletion([high, low], NOW)] == [low.name, high.name]
    relabeled = [
        dataclasses.replace(a, meta=dataclasses.replace(a.meta, uid="uid-z")),
        dataclasses.replace(b, meta=dataclasses.replace(b.meta, uid="uid-a")),
    ]
    assert [p.name for p in rank_pods_for_deletion(relabeled, NOW)] == [other, one]


@pytest.mark.parametrize("name", sorted(PODS))
def test_every_pod_equals_itself(name):
    p = PODS[name]
    assert not go_less(p, 1, p, 1, NOW)
    ranking = rank([p], NOW)
    assert ranking.key(p) == ranking.key(p)


@pytest.mark.parametrize(
    ("age", "bucket"),
    [
        (2 * HOUR, 42),
        (5 * HOUR, 44),
        (8 * HOUR, 44),
        (30 * DAY, 51),
        (31 * DAY, 51),  # a calendar month either way
        (1.0, 29),  # 1e9 ns
        (0.0, -1),
        (-5.0, -1),
    ],
)
def test_published_buckets(age, bucket):
    assert age_bucket(to_ns(NOW) - to_ns(NOW - age)) == bucket


def test_buckets_are_exact_at_powers_of_two():
    for k in range(0, 70):
        assert age_bucket(2**k) == k
        assert age_bucket(2**k - 1) == k - 1 if k else age_bucket(0) == -1
        assert age_bucket(2**k + 1) == k if k else True


def test_pods_ready_2h_and_5h_ago_are_in_different_buckets():
    ranking = rank([PODS["ready-5-hours"], PODS["ready-2-hours"]], NOW)
    assert [p.name for p in ranking.order] == ["ready-2-hours", "ready-5-hours"]
    assert ranking.key(PODS["ready-2-hours"])[2] == 42
    assert ranking.key(PODS["ready-5-hours"])[2] == 44


def test_a_pod_sharing_its_node_with_a_related_pod_goes_before_a_lone_one():
    shared = pod("shared", node="node-1", ready_at=NOW - DAY, created=NOW - DAY)
    lone = pod("lone", node="node-2", ready_at=NOW - HOUR, created=NOW - HOUR)  # younger, still kept
    neighbour = pod("neighbour", node="node-1", owner=OLD_RS, ready_at=NOW - DAY, created=NOW - DAY)
    assert [p.name for p in rank_pods_for_deletion([lone, shared], NOW, [neighbour])] == ["shared", "lone"]
    # without the related pod, the younger one goes
    assert [p.name for p in rank_pods_for_deletion([lone, shared], NOW)] == ["lone", "shared"]


def test_inactive_related_pods_do_not_count_and_uids_count_once():
    a = pod("a", node="node-1", ready_at=NOW - DAY, created=NOW - DAY)
    b = pod("b", node="node-2", ready_at=NOW - 2 * DAY, created=NOW - 2 * DAY)
    terminating = pod("t", node="node-2", owner=OLD_RS, deleting=True)
    failed = pod("f", node="node-2", owner=OLD_RS, phase="Failed", ready=False)
    succeeded = pod("s", node="node-2", owner=OLD_RS, phase="Succeeded", ready=False)
    ranking = rank([a, b], NOW, [terminating, failed, succeeded, a, b, b])
    assert ranking.rank_of(a) == 1 and ranking.rank_of(b) == 1
    assert [p.name for p in ranking.order] == ["a", "b"]  # ready 1d ago (bucket 46) < 2d (47)


def test_other_phases_count_as_pending():
    succeeded = pod("succeeded", phase="Succeeded", ready=False, uid="uid-b")
    pending = pod("pending", phase="Pending", ready=False, uid="uid-a")
    unknown = pod("unknown", phase="Unknown", ready=False)
    order = rank_pods_for_deletion([unknown, succeeded, pending], NOW)
    assert [p.name for p in order] == ["pending", "succeeded", "unknown"]
    # Go finds them equal (same ordinal, nothing else differs); the UID decides here
    assert not go_less(succeeded, 2, pending, 2, NOW) and not go_less(pending, 2, succeeded, 2, NOW)


def test_sidecar_restarts_break_a_restart_tie():
    calm = pod("calm", restarts=2, sidecar_restarts=0, ready_at=NOW, created=NOW)
    noisy_sidecar = pod("noisy-sidecar", restarts=2, sidecar_restarts=7, ready_at=NOW, created=NOW)
    noisy_main = pod("noisy-main", restarts=3, sidecar_restarts=0, ready_at=NOW, created=NOW)
    order = rank_pods_for_deletion([calm, noisy_sidecar, noisy_main], NOW)
    assert [p.name for p in order] == ["noisy-main", "noisy-sidecar", "calm"]


def test_legacy_mode_deletes_the_newest_first_regardless_of_uid():
    pods = [
        pod(f"p{i}", uid=f"uid-{9 - i}", ready_at=NOW - (i + 1) * HOUR, created=NOW - DAY) for i in range(5)
    ]
    assert [p.name for p in rank_pods_for_deletion(pods[::-1], NOW, logarithmic=False)] == [
        "p0",
        "p1",
        "p2",
        "p3",
        "p4",
    ]
    # logarithmic: 1h (bucket 41), 2h (42), 3h and 4h (43), 5h (44); UID order inside bucket 43
    assert [p.name for p in rank_pods_for_deletion(pods, NOW)] == ["p0", "p1", "p3", "p2", "p4"]
