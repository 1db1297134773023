import pytest
from sim_helpers import advance, deployment, group, make_scenario, pods_of, simulate

from kubetide.autoscaler.ports import ActionError, InstanceState
from kubetide.sim import NoAutoscaler


def fault(kind, at="0s", **extra):
    return {
        "at": at,
        "fault": {"type": kind, **({"nodeGroup": "general"} if kind != "autoscalerRestart" else {}), **extra},
    }


def run(events, size=1, factory=NoAutoscaler, objects=()):
    sim = simulate(
        make_scenario(groups=[group(size=size)], events=events, objects=list(objects), duration="3h"), factory
    )
    advance(sim, 0)  # faults at t=0 fire
    return sim, sim.cloud.groups["general"]


def test_stockout_leaves_requests_failed_with_an_out_of_resources_error():
    sim, group_ = run([fault("stockout", duration="10m")])
    group_.increase_size(2)
    failed = [i for i in group_.instances() if i.error is not None]
    assert len(failed) == 2 and all(i.state is InstanceState.CREATING for i in failed)
    assert failed[0].error.error_class == "OutOfResources" and failed[0].error.code == "STOCKOUT"
    advance(sim, 600)
    assert len(sim.world.snapshot) == 1 and group_.target_size() == 3
    group_.decrease_target_size(-2)  # the autoscaler gives up on them
    assert group_.target_size() == 1 and len(group_.instances()) == 1
    group_.increase_size(1)  # the stockout is over
    advance(sim, 80)
    assert len(sim.world.snapshot) == 2


def test_stockout_count_limits_how_many_requests_fail():
    _, group_ = run([fault("stockout", count=1)])
    group_.increase_size(3)
    assert sum(1 for i in group_.instances() if i.error) == 1


def test_node_never_registers():
    sim, group_ = run([fault("nodeNeverRegisters", duration="5m")])
    group_.increase_size(1)
    advance(sim, 3600)
    assert len(sim.world.snapshot) == 1
    assert [i.state for i in group_.instances()].count(InstanceState.CREATING) == 1
    assert all(i.error is None for i in group_.instances())
    group_.increase_size(1)  # created after the fault: registers
    advance(sim, 61)
    assert len(sim.world.snapshot) == 2


def test_node_never_ready_until_a_node_ready_fault():
    sim, group_ = run([fault("nodeNeverReady"), fault("nodeReady", at="1h")])
    group_.increase_size(1)
    advance(sim, 1800)
    (stuck,) = [n for n in sim.world.nodes() if not n.ready]
    advance(sim, 1800)
    assert sim.world.node(stuck.name).ready


def test_node_not_ready_hits_count_nodes_and_recovers_after_the_duration():
    sim, _ = run([fault("nodeNotReady", at="1m", count=2, duration="10m")], size=3)
    advance(sim, 61)
    assert sum(not n.ready for n in sim.world.nodes()) == 2
    advance(sim, 600)
    assert all(n.ready for n in sim.world.nodes())


def test_node_not_ready_default_count_is_every_node():
    sim, _ = run([fault("nodeNotReady", at="1m")], size=3)
    advance(sim, 61)
    assert not any(n.ready for n in sim.world.nodes())


def test_node_ready_recovers_now():
    sim, _ = run([fault("nodeNotReady", at="1m"), fault("nodeReady", at="2m")], size=2)
    advance(sim, 61)
    assert not any(n.ready for n in sim.world.nodes())
    advance(sim, 60)
    assert all(n.ready for n in sim.world.nodes())


def test_cloud_error_fails_increase_and_delete_while_it_lasts():
    sim, group_ = run([fault("cloudError", duration="5m")], size=2)
    with pytest.raises(ActionError, match="cloud API error"):
        group_.increase_size(1)
    with pytest.raises(ActionError):
        group_.delete_nodes([next(iter(sim.world.nodes()))])
    assert group_.target_size() == 2
    advance(sim, 300)
    group_.increase_size(1)
    assert group_.target_size() == 3
    assert sum(1 for e in sim.log.entries if e["reason"] == "CloudError") == 2


def test_autoscaler_restart_rebuilds_it_from_the_factory():
    built = []

    class Recorder:
        def __init__(self, options, clock, view, actions, cloud):
            built.append(clock.now())
            self.loops = 0

        def run_once(self):
            self.loops += 1

    sim, _ = run([fault("autoscalerRestart", at="5m")], factory=Recorder)
    advance(sim, 600)
    assert [t - sim.engine.start for t in built] == [0, 300]
    assert sim.autoscaler.loops == 31  # the new one has run since 5m (5m..10m every 10s)
    assert sim.metrics.c.autoscaler_restarts == 1


def test_unschedulable_pods_plus_stockout_with_the_test_autoscaler():
    from sim_doubles import ScaleUpDouble

    sim, group_ = run(
        [fault("stockout", duration="3m")], factory=ScaleUpDouble, objects=[deployment("big", 2, cpu="3")]
    )
    advance(sim, 60)
    assert group_.target_size() == 2 and len(sim.world.snapshot) == 1
    assert any(e["reason"] == "InstanceCreationFailed" for e in sim.log.entries)
    assert all(p.node_name or p.is_unschedulable for p in pods_of(sim, "big"))
