"""pdbs_remaining_disruptions: initial budgets, unhealthy pods counted once, forks."""

from scaledown_fakes import pdb, pod, workload

from kubetide.autoscaler.scaledown.drainability import index_workloads
from kubetide.autoscaler.scaledown.pdb import PdbTracker


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


def test_healthy_pods_consume_unhealthy_pods_do_not():
    budget = pdb("web", "rs", allowed=1, current_healthy=3, desired_healthy=2)
    sick = pod("sick", ready=False)
    t = tracker([budget], [pod("a"), pod("b"), pod("c"), sick])
    assert t.consume(sick) is None
    assert t.by_key() == {"default/web": 1}  # subtracted once at the start, not again here
    assert t.consume(pod("a")) is None
    assert t.by_key() == {"default/web": 0}
    assert t.consume(pod("b")) is budget  # refused, nothing charged
    assert t.by_key() == {"default/web": 0}
    # Still fine for an unhealthy one: the budget is met, not violated.
    assert t.consume(pod("sick2", ready=False)) is None


def test_consume_is_all_or_nothing_across_several_budgets():
    wide = pdb("wide", "rs", allowed=5)
    narrow = pdb("narrow", "rs", allowed=0)
    t = tracker([wide, narrow], [pod("a")])
    assert t.consume(pod("a")) is narrow
    assert t.by_key() == {"default/wide": 5, "default/narrow": 0}


def test_force_consume_may_go_negative_and_then_refuses_unhealthy_pods():
    t = tracker([pdb("web", "rs", allowed=0)], [pod("a")])
    t.force_consume(pod("a"))
    assert t.by_key() == {"default/web": -1}
    assert t.blocking(pod("x", ready=False)) is not None


def test_revert_restores_the_counters_a_failed_simulation_spent():
    t = tracker([pdb("web", "rs", allowed=3)], [pod("a")])
    t.fork()
    t.consume(pod("a"))
    t.fork()
    t.consume(pod("b"))
    t.revert()
    assert t.by_key() == {"default/web": 2}
    t.commit()
    assert t.by_key() == {"default/web": 2}
    t.fork()
    t.consume(pod("c"))
    t.consume(pod("d"))
    t.revert()
    assert t.by_key() == {"default/web": 2}
    assert t.overconsumed() == []


def test_a_violated_status_stays_negative():
    t = tracker([pdb("web", "rs", allowed=0, current_healthy=1, desired_healthy=3)], [pod("a")])
    assert t.by_key() == {"default/web": -2}
