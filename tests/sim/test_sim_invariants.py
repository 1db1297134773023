import functools

import pytest
from sim_doubles import DrainDouble, RecklessDouble, ScaleUpDouble
from sim_helpers import advance, deployment, group, make_scenario, pdb, pods_of, simulate, workload

from kubetide.autoscaler.ports import EvictionOutcome
from kubetide.sim import Simulation
from kubetide.sim.report.output import summary_json


def one_node_with(app, sim):
    return next(p.node_name for p in pods_of(sim, app))


def test_a_careful_drain_keeps_every_invariant():
    objects = [
        deployment("web", 6),
        pdb("web", "web", max_unavailable=1),
        workload("DaemonSet", "agent", cpu="50m"),
    ]
    scenario = make_scenario(groups=[group(size=3)], objects=objects)
    probe = simulate(scenario)
    victim = one_node_with("web", probe)
    sim = simulate(scenario, functools.partial(DrainDouble, drain_names=[victim]))
    advance(sim, 600)
    c = sim.metrics.c
    assert victim not in sim.world.snapshot
    assert (c.pdb_violations, c.pods_lost, c.nodes_deleted_with_pods) == (0, 0, 0)
    assert c.evictions >= 2 and c.drained_removed == 1 and c.empty_removed == 0
    assert c.max_concurrent_drains == 1
    assert EvictionOutcome.EVICTED in sim.autoscaler.outcomes
    assert len([p for p in pods_of(sim, "web") if p.phase == "Running"]) == 6


def test_deleting_a_node_with_pods_breaks_the_invariants():
    # No room elsewhere and no scale-up: the pods on the deleted node have nowhere to go.
    objects = [deployment("web", 4, cpu="1500m"), pdb("web", "web", min_available=4)]
    scenario = make_scenario(groups=[group(size=2)], objects=objects)
    probe = simulate(scenario)
    victim = one_node_with("web", probe)
    sim = simulate(scenario, functools.partial(RecklessDouble, victims=[victim]))
    advance(sim, 400)
    c = sim.metrics.c
    assert c.nodes_deleted_with_pods == 1
    assert c.pdb_violations == 1
    assert c.pods_lost == 2
    reasons = [e["invariant"] for e in sim.log.entries if e["reason"] == "InvariantViolated"]
    assert sorted(set(reasons)) == ["nodes_deleted_with_pods", "pdb_violations", "pods_lost"]


def test_a_replacement_that_starts_in_time_is_not_lost():
    scenario = make_scenario(groups=[group(size=3)], objects=[deployment("web", 2)])
    probe = simulate(scenario)
    victim = one_node_with("web", probe)
    sim = simulate(scenario, functools.partial(RecklessDouble, victims=[victim]))
    advance(sim, 400)
    assert sim.metrics.c.nodes_deleted_with_pods == 1 and sim.metrics.c.pods_lost == 0


def test_scale_up_end_to_end_through_the_ports():
    events = [{"at": "1m", "scale": {"kind": "Deployment", "name": "web", "replicas": 20}}]
    sim = simulate(
        make_scenario(groups=[group(size=1)], objects=[deployment("web", 2, cpu="1")], events=events),
        ScaleUpDouble,
    )
    advance(sim, 60 + 150)
    pods = pods_of(sim, "web")
    assert len(pods) == 20 and all(p.phase == "Running" for p in pods)
    c = sim.metrics.c
    assert c.scale_up_events >= 1 and c.nodes_added >= 4 and len(sim.world.snapshot) == 1 + c.nodes_added
    # 18 new pods; the two the first node takes in the same instant never wait, so never count.
    assert sim.metrics.pending_pod_seconds() > 0 and sim.metrics.max_pending() == 16


def scenario_for_determinism(seed=5):
    events = [
        {"at": "5m", "scale": {"kind": "Deployment", "name": "web", "replicas": 40}},
        {
            "at": "10m",
            "fault": {"type": "nodeNotReady", "nodeGroup": "general", "count": 1, "duration": "8m"},
        },
        {
            "at": "15m",
            "apply": [
                workload(
                    "Job",
                    "batch",
                    parallelism=6,
                    completions=12,
                    annotations={"kubetide.io/run-duration": "4m"},
                )
            ],
        },
        {"at": "25m", "scale": {"kind": "Deployment", "name": "web", "replicas": 10}},
    ]
    groups = [
        group(size=3, provisioningDelay={"min": "30s", "max": "90s"}, readyDelay={"min": "5s", "max": "25s"})
    ]
    objects = [
        deployment("web", 10),
        pdb("web", "web", max_unavailable="20%"),
        workload("DaemonSet", "agent", cpu="50m"),
    ]
    return make_scenario(groups=groups, objects=objects, events=events, duration="40m", seed=seed)


def run_summary(seed=None):
    result = Simulation(scenario_for_determinism(), seed=seed, autoscaler_factory=ScaleUpDouble).run()
    summary = dict(result.summary)
    summary["wall_seconds"] = 0
    return summary_json(summary), result


def test_same_scenario_and_seed_give_byte_identical_summaries():
    first, a = run_summary()
    second, b = run_summary()
    assert first == second
    assert a.timeline == b.timeline and a.events == b.events
    third, _ = run_summary(seed=99)
    assert third != first
    assert '"seed": 99' in third


def test_an_autoscaler_that_leaves_a_fork_open_is_a_bug():
    class Leaky(ScaleUpDouble):
        def run_once(self):
            self.view.snapshot().fork()

    import pytest

    sim = simulate(make_scenario(), Leaky)
    with pytest.raises(RuntimeError, match="left 1 snapshot fork"):
        advance(sim, 1)


@pytest.mark.parametrize(
    ("replicas_after", "lost"),
    [
        # (the Deployment's replicas after the loss, pods counted lost)
        (4, 2),  # it still wants both: both lost
        (3, 1),  # a stranded pod's replacement deleted by the scale-down, and it stays one short
        (2, 0),  # it wants neither any more: nothing lost
    ],
)
def test_a_pod_is_lost_only_while_its_workload_still_wants_it(replicas_after, lost):
    """The two pods of the deleted node fit nowhere (no scale-up); a minute later the Deployment
    is scaled to `replicas_after`. Pods lost: the shortfall of Ready pods 5 minutes later."""
    objects = [deployment("web", 4, cpu="1500m")]
    events = [{"at": "60s", "scale": {"kind": "Deployment", "name": "web", "replicas": replicas_after}}]
    scenario = make_scenario(groups=[group(size=2)], objects=objects, events=events)
    probe = simulate(scenario)
    victim = one_node_with("web", probe)
    sim = simulate(scenario, functools.partial(RecklessDouble, victims=[victim]))
    advance(sim, 400)
    assert sim.metrics.c.nodes_deleted_with_pods == 1
    assert sim.metrics.c.pods_lost == lost
    ready = [p for p in pods_of(sim, "web") if p.ready and not p.is_terminating]
    assert len(ready) == 2  # the survivors, whatever the Deployment wants
