from sim_helpers import advance, deployment, group, make_scenario, pods_of, simulate, workload

from kubetide.autoscaler.ports import InstanceState
from kubetide.sim import NoAutoscaler


def not_ready_at(minutes, duration=None, count=1):
    fault = {"type": "nodeNotReady", "nodeGroup": "general", "count": count}
    if duration:
        fault["duration"] = duration
    return {"at": f"{minutes}m", "fault": fault}


def test_pods_on_a_not_ready_node_are_evicted_after_300s_and_recreated():
    objects = [deployment("web", 4, cpu="500m"), workload("DaemonSet", "agent", cpu="100m")]
    sim = simulate(
        make_scenario(groups=[group(size=2)], objects=objects, events=[not_ready_at(1)]), NoAutoscaler
    )
    advance(sim, 60)
    (down,) = [n for n in sim.world.nodes() if not n.ready]
    assert {(t.key, t.effect) for t in down.taints} == {
        ("node.kubernetes.io/not-ready", "NoSchedule"),
        ("node.kubernetes.io/not-ready", "NoExecute"),
    }
    stranded = [p for p in pods_of(sim, "web") if p.node_name == down.name]
    assert stranded and all(not p.ready for p in stranded)
    advance(sim, 299)
    assert not any(sim.world.pod(p.uid).is_terminating for p in stranded)
    advance(sim, 2)
    assert all(sim.world.pod(p.uid).is_terminating for p in stranded)  # stuck: the kubelet is down
    # DaemonSet pods tolerate not-ready forever.
    assert not any(p.is_terminating for p in pods_of(sim, "agent"))
    advance(sim, 15)
    running = [p for p in pods_of(sim, "web") if not p.is_terminating]
    assert len(running) == 4 and all(p.phase == "Running" and p.node_name != down.name for p in running)
    assert sim.lifecycle.evictions == len(stranded)


def test_a_node_that_recovers_in_time_keeps_its_pods():
    events = [not_ready_at(1, duration="2m")]
    sim = simulate(
        make_scenario(groups=[group(size=2)], objects=[deployment("web", 4, cpu="1")], events=events),
        NoAutoscaler,
    )
    before = {p.uid for p in pods_of(sim, "web")}
    advance(sim, 60 + 121)
    assert all(n.ready and not n.taints for n in sim.world.nodes())
    pods = pods_of(sim, "web")
    assert {p.uid for p in pods} == before and all(p.ready for p in pods)
    advance(sim, 600)
    assert sim.lifecycle.evictions == 0


def test_evicted_pods_leave_when_the_node_comes_back():
    events = [not_ready_at(1, duration="10m")]
    sim = simulate(
        make_scenario(
            groups=[group(size=2)], objects=[deployment("web", 2, cpu="1", grace=30)], events=events
        ),
        NoAutoscaler,
    )
    advance(sim, 60 + 301)
    stuck = [p for p in pods_of(sim, "web") if p.is_terminating]
    assert stuck
    advance(sim, 300)  # node back at 11m; the kubelet finishes the (long expired) grace at once
    assert not any(sim.world.pod(p.uid) for p in stuck)


def test_provisioning_then_ready_delays():
    sim = simulate(
        make_scenario(groups=[group(size=1, provisioningDelay="90s", readyDelay="20s")]), NoAutoscaler
    )
    group_ = sim.cloud.groups["general"]
    group_.increase_size(2)
    assert group_.target_size() == 3
    assert [i.state for i in group_.instances()].count(InstanceState.CREATING) == 2
    advance(sim, 89)
    assert len(sim.world.snapshot) == 1
    advance(sim, 1)
    new = [n for n in sim.world.nodes() if not n.ready]
    assert len(new) == 2
    node = new[0]
    assert (
        node.provider_id.startswith("kubetide://general/")
        and node.labels["kubetide.io/node-group"] == "general"
    )
    assert node.labels["kubernetes.io/hostname"] == node.name
    assert node.allocatable["cpu"] == 4000 and node.has_taint("node.kubernetes.io/not-ready")
    assert all(i.state is InstanceState.RUNNING for i in group_.instances())
    advance(sim, 20)
    assert all(n.ready and not n.taints for n in sim.world.nodes())


def test_delay_ranges_are_drawn_from_the_seeded_stream():
    def registration_times(seed):
        scenario = make_scenario(
            groups=[group(size=0, provisioningDelay={"min": "1m", "max": "3m"})], seed=seed
        )
        sim = simulate(scenario, NoAutoscaler)
        sim.cloud.groups["general"].increase_size(5)
        advance(sim, 200)
        return [n.meta.creation_timestamp - sim.engine.start for n in sim.world.nodes()]

    first = registration_times(1)
    assert len(first) == 5 and all(60 <= t <= 180 for t in first) and len(set(first)) > 1
    assert registration_times(1) == first
    assert registration_times(2) != first


def test_node_deletion_lowers_the_target_and_removes_the_node_after_the_delay():
    sim = simulate(make_scenario(groups=[group(size=3, deletionDelay="30s")]), NoAutoscaler)
    group_ = sim.cloud.groups["general"]
    node = next(iter(sim.world.nodes()))
    group_.delete_nodes([node])
    assert group_.target_size() == 2
    assert [i.state for i in group_.instances()].count(InstanceState.DELETING) == 1
    advance(sim, 31)
    assert node.name not in sim.world.snapshot and len(group_.instances()) == 2


def test_scheduler_marks_pods_that_fit_nowhere_unschedulable():
    sim = simulate(
        make_scenario(groups=[group(size=2)], objects=[deployment("huge", 1, cpu="6")]), NoAutoscaler
    )
    (pod,) = pods_of(sim, "huge")
    assert not pod.node_name and pod.is_unschedulable
    assert (pod.scheduled_status, pod.scheduled_reason) == ("False", "Unschedulable")
    (event,) = [e for e in sim.log.entries if e["reason"] == "FailedScheduling"]
    assert event["message"] == "0/2 nodes are available: 2 Insufficient cpu."
    assert event["object"] == f"Pod/default/{pod.name}"
    # A bigger node makes room: the scheduler retries parked pods when a node turns Ready.
    sim.cloud.groups["general"].increase_size(1)
    advance(sim, 60)
    assert not sim.world.pod(pod.uid).node_name  # the new 4-cpu node does not help
    assert sim.view.pending_pods()[0].is_unschedulable


def test_scheduler_binds_by_priority_and_spreads_by_score():
    low = deployment("low", 4, cpu="1")
    high = deployment("high", 4, cpu="1", pod_extra={"priority": 1000})
    sim = simulate(make_scenario(groups=[group(size=1)], objects=[low, high]), NoAutoscaler)
    assert all(p.node_name for p in pods_of(sim, "high"))
    assert not any(p.node_name for p in pods_of(sim, "low"))


def test_a_quiet_cluster_costs_no_scheduling_passes():
    sim = simulate(make_scenario(groups=[group(size=2)], objects=[deployment("web", 4)]), NoAutoscaler)
    passes = sim.scheduler.passes
    advance(sim, 3600)
    assert sim.scheduler.passes == passes
