import dataclasses

from sim_helpers import advance, deployment, make_scenario, pdb, pods_of, simulate, workload

from kubetide.autoscaler.ports import EvictionOutcome
from kubetide.sim import NoAutoscaler


def setup(*objects):
    return simulate(make_scenario(objects=list(objects)), NoAutoscaler)


def make_unready(sim, pod):
    sim.world.update_pod(dataclasses.replace(pod, ready=False))
    return sim.world.pod(pod.uid)


def test_an_eviction_that_would_break_min_available_is_refused_with_429():
    sim = setup(deployment("web", 3), pdb("web", "web", min_available=3))
    pod = pods_of(sim, "web")[0]
    assert sim.actions.evict(pod, 30) is EvictionOutcome.BLOCKED_BY_PDB
    assert not sim.world.pod(pod.uid).is_terminating
    assert sim.metrics.c.evictions_refused == 1 and sim.metrics.c.evictions == 0
    assert any(e["reason"] == "EvictionRefused" and "429" in e["message"] for e in sim.log.entries)


def test_max_unavailable_allows_one_at_a_time_until_the_replacement_is_ready():
    sim = setup(deployment("web", 3), pdb("web", "web", max_unavailable=1))
    first, second, _ = pods_of(sim, "web")
    assert sim.actions.evict(first, 30) is EvictionOutcome.EVICTED
    assert sim.world.pod(first.uid).is_terminating
    # The evicted pod is no longer healthy, so the budget is spent.
    assert sim.actions.evict(second, 30) is EvictionOutcome.BLOCKED_BY_PDB
    advance(sim, 12)  # the replacement is created, scheduled and Ready
    assert sim.actions.evict(second, 30) is EvictionOutcome.EVICTED
    assert sim.metrics.c.evictions == 2
    assert sim.metrics.c.pdb_violations == 0


def test_percentages_count_against_the_controllers_scale():
    sim = setup(deployment("web", 10), pdb("web", "web", min_available="80%"))
    pods = pods_of(sim, "web")
    (state,) = sim.budgets.states.values()
    status = sim.budgets.status(state)
    assert (status.expected_pods, status.desired_healthy, status.disruptions_allowed) == (10, 8, 2)
    assert sim.actions.evict(pods[0], 30) is EvictionOutcome.EVICTED
    assert sim.actions.evict(pods[1], 30) is EvictionOutcome.EVICTED
    assert sim.actions.evict(pods[2], 30) is EvictionOutcome.BLOCKED_BY_PDB
    view = sim.view.pdbs()[0]
    assert (view.current_healthy, view.desired_healthy, view.disruptions_allowed) == (8, 8, 0)


def test_only_healthy_pods_count():
    sim = setup(deployment("web", 3), pdb("web", "web", min_available=2))
    a, b, _ = pods_of(sim, "web")
    a = make_unready(sim, a)
    # healthy 2 of 2 required: a healthy pod cannot go...
    assert sim.actions.evict(b, 30) is EvictionOutcome.BLOCKED_BY_PDB
    # ...but the unhealthy one can, since the budget is met (IfHealthyBudget).
    assert sim.actions.evict(a, 30) is EvictionOutcome.EVICTED


def test_unhealthy_pod_eviction_policy():
    for policy, expected in (
        ("IfHealthyBudget", EvictionOutcome.BLOCKED_BY_PDB),
        ("AlwaysAllow", EvictionOutcome.EVICTED),
    ):
        sim = setup(deployment("web", 3), pdb("web", "web", min_available=3, policy=policy))
        pod = make_unready(sim, pods_of(sim, "web")[0])  # budget broken: 2 healthy of 3
        assert sim.actions.evict(pod, 30) is expected, policy


def test_pods_not_yet_running_are_evicted_without_a_budget_check():
    sim = setup(deployment("big", 1, cpu="100"), pdb("big", "big", min_available=1))
    (pod,) = pods_of(sim, "big")
    assert sim.actions.evict(pod, 30) is EvictionOutcome.EVICTED


def test_two_budgets_on_one_pod_fail_and_a_gone_pod_is_not_found():
    sim = setup(deployment("web", 2), pdb("a", "web", max_unavailable=1), pdb("b", "web", max_unavailable=1))
    pod = pods_of(sim, "web")[0]
    assert sim.actions.evict(pod, 30) is EvictionOutcome.FAILED
    sim.budgets.delete("default/b")
    assert sim.actions.evict(pod, 0) is EvictionOutcome.EVICTED
    advance(sim, 1)
    assert sim.actions.evict(pod, 0) is EvictionOutcome.NOT_FOUND


def test_bare_pods_and_daemonsets_make_percentage_budgets_unusable():
    sim = setup(workload("DaemonSet", "agent"), pdb("agent", "agent", max_unavailable="50%"))
    pod = pods_of(sim, "agent")[0]
    assert sim.actions.evict(pod, 30) is EvictionOutcome.BLOCKED_BY_PDB
