"""pdbs_remaining_disruptions: initial budgets, unhealthy pods counted once, CA's per-node charge
(refused below one disruption, risky above), waves, forks."""

import pytest
from scaledown_fakes import pdb, pod, workload

from kubetide.autoscaler.scaledown.planning.drainability import index_workloads
from kubetide.autoscaler.scaledown.planning.pdb import PdbTracker


def tracker(pdbs, pods, workloads=None):
    return PdbTracker(pdbs, pods, index_workloads(workloads) if workloads else None)


def test_status_disruptions_allowed_is_taken_as_is():
    t = tracker([pdb("web", "rs", allowed=2, min_available=1)], [pod("a"), pod("b")])
    assert t.by_key() == {"default/web": 2}


def test_without_status_it_is_healthy_minus_desired():
    pods = [pod("a"), pod("b"), pod("c"), pod("d", ready=False)]
    t = tracker([pdb("web", "rs", min_available=2)], pods)
    # 3 healthy - 2 desired: the unready pod already spent its share of the quota.
    assert t.by_key() == {"default/web": 1}


def test_max_unavailable_uses_the_controllers_scale():
    pods = [pod("a"), pod("b"), pod("c", ready=False)]
    # The ReplicaSet wants 4: one pod is missing altogether. maxUnavailable 2 -> desired 2; 2 healthy.
    t = tracker([pdb("web", "rs", max_unavailable=2)], pods, [workload("ReplicaSet", "rs", 4)])
    assert t.by_key() == {"default/web": 0}
    # Without the controller we fall back to the pods that exist: desired 1, healthy 2.
    assert tracker([pdb("web", "rs", max_unavailable=2)], pods).by_key() == {"default/web": 1}


def test_percentages_round_up():
    pods = [pod(f"p{i}") for i in range(3)]
    t = tracker([pdb("web", "rs", min_available="50%")], pods, [workload("ReplicaSet", "rs", 3)])
    assert t.by_key() == {"default/web": 1}  # desired ceil(1.5) = 2


def test_selector_and_namespace_must_match():
    t = tracker([pdb("web", "rs", allowed=1), pdb("other", "rs", namespace="prod", allowed=1)], [pod("a")])
    assert t.matching(pod("a")) == (0,)
    assert not t.has_pdb(pod("b", owner=("ReplicaSet", "nope")))


# maxUnavailable 1 over ten replicas, all healthy: one disruption allowed, one when healthy.
MAX_UNAVAILABLE_1 = {"allowed": 1, "current_healthy": 10, "desired_healthy": 9, "expected_pods": 10}
# ... with one replica already out (evicted, its replacement not Ready yet).
USED_UP = {"allowed": 0, "current_healthy": 9, "desired_healthy": 9, "expected_pods": 10}
# One replica, minAvailable 1: no eviction can ever take it.
SINGLE_REPLICA = {"allowed": 0, "current_healthy": 1, "desired_healthy": 1, "expected_pods": 1}

# (description, the node's pods, budget status, refused pod or None, waiting, shortfall
#  (pods, left) or None, remaining after)
CHARGES = [
    ("one pod, one disruption left", ["a"], MAX_UNAVAILABLE_1, None, None, None, 0),
    (
        "two pods, one left: removable, risky, charged both",
        ["a", "b"],
        MAX_UNAVAILABLE_1,
        None,
        None,
        (2, 1),
        -1,
    ),
    ("none left for now: refused, waiting for the budget", ["a"], USED_UP, "a", True, None, 0),
    ("none left ever: refused for good", ["a"], SINGLE_REPLICA, "a", False, None, 0),
    ("an unhealthy pod costs nothing at zero", ["sick"], SINGLE_REPLICA, None, None, None, 0),
    (
        "an unhealthy pod is refused when the budget is violated (IfHealthyBudget)",
        ["sick"],
        {"allowed": 0, "current_healthy": 8, "desired_healthy": 9, "expected_pods": 10},
        "sick",
        True,
        None,
        -1,
    ),
    (
        "AlwaysAllow lets it go even then",
        ["sick"],
        {
            "allowed": 0,
            "current_healthy": 8,
            "desired_healthy": 9,
            "expected_pods": 10,
            "policy": "AlwaysAllow",
        },
        None,
        None,
        None,
        -1,
    ),
    (
        "a healthy pod after an unhealthy one is still charged",
        ["sick", "a"],
        {"allowed": 2, "current_healthy": 9, "desired_healthy": 7, "expected_pods": 10},
        None,
        None,
        None,
        1,
    ),
    (
        "no status: full budget as the disruption controller computes it",
        ["a", "b"],
        {"max_unavailable": 1},
        None,
        None,
        (2, 1),
        -1,
    ),
]


@pytest.mark.parametrize(
    ("names", "status", "refused", "waiting", "shortfall", "after"),
    [c[1:] for c in CHARGES],
    ids=[c[0] for c in CHARGES],
)
def test_a_node_is_charged_as_the_cluster_autoscaler_charges_it(
    names, status, refused, waiting, shortfall, after
):
    budget = pdb("web", "rs", **status)
    pods = [pod(name, ready=name != "sick") for name in names]
    others = [pod(f"o{i}") for i in range(8)]  # the rest of the ten replicas, elsewhere
    t = tracker([budget], pods + others)
    charge = t.charge_node(pods)
    if refused is None:
        assert charge.refusal is None
    else:
        assert (charge.refusal.pod.name, charge.refusal.pdb, charge.refusal.waiting) == (
            refused,
            budget,
            waiting,
        )
    assert [(s.pdb, s.pods, s.left) for s in charge.shortfalls] == (
        [] if shortfall is None else [(budget, *shortfall)]
    )
    assert charge.risky is (shortfall is not None)
    assert t.by_key() == {"default/web": after}


def test_a_budget_an_earlier_node_used_up_makes_the_next_one_wait():
    t = tracker([pdb("web", "rs", **MAX_UNAVAILABLE_1)], [])
    assert t.charge_node([pod("a"), pod("b")]).risky
    second = t.charge_node([pod("c")])
    assert second.refusal is not None and second.refusal.waiting
    assert t.by_key() == {"default/web": -1}  # the refusal charged nothing


def test_a_refusal_charges_nothing_across_several_budgets():
    wide = pdb("wide", "rs", allowed=5)
    narrow = pdb("narrow", "rs", **SINGLE_REPLICA)
    t = tracker([wide, narrow], [pod("a")])
    assert t.charge_node([pod("a")]).refusal.pdb is narrow
    assert t.by_key() == {"default/wide": 5, "default/narrow": 0}


def test_force_consume_may_go_negative_and_then_refuses_unhealthy_pods():
    t = tracker([pdb("web", "rs", allowed=0)], [pod("a")])
    t.force_consume(pod("a"))
    assert t.by_key() == {"default/web": -1}
    assert t.charge_node([pod("x", ready=False)]).refusal is not None


@pytest.mark.parametrize(
    ("pods", "status", "waves"),
    [
        (3, MAX_UNAVAILABLE_1, 3),
        (3, {"allowed": 2, "current_healthy": 10, "desired_healthy": 8, "expected_pods": 10}, 2),
        (3, USED_UP, 3),  # used up now: each wave still lets one go once the budget is back
        (1, MAX_UNAVAILABLE_1, 1),
    ],
)
def test_waves_are_the_node_s_pods_over_the_full_budget(pods, status, waves):
    t = tracker([pdb("web", "rs", **status)], [])
    assert t.waves([pod(f"p{i}") for i in range(pods)]) == waves
    assert t.waves([pod("free", owner=("ReplicaSet", "other"))]) == 1  # no budget: one wave


def test_revert_restores_the_counters_a_failed_simulation_spent():
    t = tracker([pdb("web", "rs", allowed=3)], [pod("a")])
    t.fork()
    t.charge_node([pod("a")])
    t.fork()
    t.charge_node([pod("b")])
    t.revert()
    assert t.by_key() == {"default/web": 2}
    t.commit()
    assert t.by_key() == {"default/web": 2}
    t.fork()
    t.charge_node([pod("c"), pod("d")])
    t.revert()
    assert t.by_key() == {"default/web": 2}


def test_a_violated_status_stays_negative():
    t = tracker([pdb("web", "rs", allowed=0, current_healthy=1, desired_healthy=3)], [pod("a")])
    assert t.by_key() == {"default/web": -2}


# -- recovering workloads: a displaced pod not Ready again is used budget -------------------------
@pytest.mark.parametrize(
    ("ready", "recovering", "refused"),
    [
        # (the node's pod is Ready, its ReplicaSet is recovering, the budget refuses it as waiting)
        (True, False, False),  # the budget allows 2: charged
        (True, True, True),  # its displaced sibling is not back: the node waits
        (False, True, True),  # the starting replacement itself: not charged, yet it stays
        (False, False, False),  # a pod not Ready for other reasons: free, as before
    ],
)
def test_a_recovering_workloads_pods_wait_for_budget(ready, recovering, refused):
    budget = pdb("web", "web", allowed=2)
    moved = pod("w1", "a", owner=("ReplicaSet", "web"), ready=ready)
    other = pod("o1", "a", owner=("ReplicaSet", "other"), labels={"app": "web"})
    keys = {("ReplicaSet", "default", "web")} if recovering else set()
    t = PdbTracker([budget], (), None, frozenset(keys))
    charge = t.charge_node([moved])
    assert (charge.refusal is not None) is refused
    if refused:
        assert charge.refusal.waiting and charge.refusal.pod is moved and charge.refusal.left <= 0
        assert t.refuses(moved) is not None
        assert t.remaining == [2]  # nothing charged
    # Another workload under the same budget is not held back by it.
    assert t.charge_node([other]).refusal is None
