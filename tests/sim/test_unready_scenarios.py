"""The cluster state registry's use cases UC1-UC8 (issue 5 item 3), proved in the simulator.

Each test runs one scenario of examples/unready/ with the real autoscaler and checks the outcome
its comment header promises, from summary.json, the timeline and events.jsonl. Expected numbers
(node counts, times) are derived from the scenario's own content: pod requests, template
allocatable, DaemonSet overhead, fault and event times, and flags.
"""

from __future__ import annotations

import math
from functools import cache
from pathlib import Path

import pytest
from sim_events import events, increases

from kubetide.sim import Simulation, load_scenario
from kubetide.sim.spec.scenario import FAULT_TYPES, ApplyEvent, FaultEvent, ScaleEvent

UNREADY = Path(__file__).resolve().parents[2] / "examples" / "unready"
ZERO = {"pdb_violations": 0, "pods_lost": 0, "nodes_deleted_with_pods": 0}
RESOURCES = ("cpu", "memory", "pods")


@cache
def run(name: str):
    scenario = load_scenario(UNREADY / f"{name}.yaml")
    return scenario, Simulation(scenario).run()


# -- reading the scenario ----------------------------------------------------------------------
def workload(scenario, kind: str, name: str):
    return next(w for w in scenario.objects.workloads if w.kind == kind and w.name == name)


def applied(scenario, kind: str, name: str):
    for event in scenario.events:
        if isinstance(event, ApplyEvent):
            for w in event.manifests.workloads:
                if w.kind == kind and w.name == name:
                    return w
    raise LookupError(name)


def fault_at(scenario, fault_type: str) -> float:
    for event in scenario.events:
        if isinstance(event, FaultEvent) and event.fault.type == fault_type:
            return event.at
    raise LookupError(fault_type)


def group_config(scenario, name: str):
    return next(g for g in scenario.groups if g.name == name)


def daemonset_overhead(scenario) -> dict[str, int]:
    total: dict[str, int] = {}
    for w in scenario.objects.workloads:
        if w.kind == "DaemonSet":
            for resource, amount in w.template.prototype.requests.items():
                total[resource] = total.get(resource, 0) + amount
    return total


def pods_per_node(scenario, group: str, requests: dict[str, int]) -> int:
    """How many pods of one shape a fresh node of the group holds (DaemonSet pods aside)."""
    allocatable = group_config(scenario, group).template.allocatable
    ds = daemonset_overhead(scenario)
    return min(
        (allocatable.get(r, 0) - ds.get(r, 0)) // requests[r] for r in RESOURCES if requests.get(r, 0) > 0
    )


# -- reading the results -----------------------------------------------------------------------
def deleted_nodes(result) -> dict[str, float]:
    """Node name -> time the cloud was asked to delete it."""
    found = {}
    for e in events(result, "DeleteNodes"):
        listed = e["message"].removeprefix("deleting ").split(";")[0]
        for name in listed.split(", "):
            found[name] = e["time"]
    return found


def assert_clean(result):
    s = result.summary
    assert s["invariants"] == ZERO
    assert s["pods"]["pending_at_end"] == 0
    assert not result.warnings


# -- UC1 ---------------------------------------------------------------------------------------
def test_uc1_slow_provisioning_counts_upcoming_nodes_and_asks_once():
    scenario, result = run("uc1-slow-provisioning")
    web = workload(scenario, "Deployment", "web")
    per_node = pods_per_node(scenario, "general", web.template.prototype.requests)
    group = group_config(scenario, "general")
    free = group.initial_size * per_node - web.replicas
    grown_to = next(e.target.replicas for e in scenario.events if isinstance(e, ScaleEvent))
    needed = math.ceil((grown_to - web.replicas - free) / per_node)

    (scaled_at, delta), *again = increases(result, "general")
    assert delta == needed and not again
    s = result.summary
    assert s["scale_up"] == {
        "events": 1,
        "nodes_requested": needed,
        "nodes_added": needed,
        "nodes_failed": 0,
        "nodes_coming_up_at_end": 0,
    }
    # The requested nodes were upcoming for the whole provisioning delay, loop after loop.
    delay = group.provisioning_delay.max
    upcoming = [
        r for r in result.timeline if scaled_at <= r["time"] < scaled_at + delay and r["nodes_upcoming"] > 0
    ]
    assert len(upcoming) >= delay // scenario.options.scan_interval - 1
    assert s["node_groups"]["general"] == {
        "backoff_seconds": 0.0,
        "unregistered_removed": 0,
        "target_size_fixes": 0,
    }
    assert s["cluster_health"]["halted_loops"] == 0
    assert_clean(result)


# -- UC2 ---------------------------------------------------------------------------------------
def test_uc2_slow_readiness_is_starting_not_unready():
    scenario, result = run("uc2-slow-readiness")
    web = workload(scenario, "Deployment", "web")
    group = group_config(scenario, "general")
    per_node = pods_per_node(scenario, "general", web.template.prototype.requests)
    free = group.initial_size * per_node - web.replicas
    grown_to = next(e.target.replicas for e in scenario.events if isinstance(e, ScaleEvent))
    needed = math.ceil((grown_to - web.replicas - free) / per_node)
    assert group.ready_delay.max < scenario.options.max_node_startup_time

    s = result.summary
    assert [delta for _, delta in increases(result, "general")] == [needed]
    # All the new nodes sat registered and NotReady for a while; that did not make the cluster
    # (or the group) unhealthy, because they were still starting.
    notready = [r for r in result.timeline if r["general_unready"] == needed]
    assert len(notready) >= group.ready_delay.max // scenario.options.scan_interval - 1
    assert needed > scenario.options.ok_total_unready_count
    assert needed / (needed + group.initial_size) > scenario.options.max_total_unready_percentage / 100
    assert s["cluster_health"] == {"unhealthy_seconds": 0.0, "halted_loops": 0}
    assert s["node_groups"]["general"]["backoff_seconds"] == 0.0
    assert_clean(result)


# -- UC3 ---------------------------------------------------------------------------------------
def test_uc3_a_group_whose_nodes_never_become_ready_is_not_scaled_further():
    scenario, result = run("uc3-never-ready")
    options = scenario.options
    batch = applied(scenario, "Job", "batch")
    web = workload(scenario, "Deployment", "web")
    cheap, stable = group_config(scenario, "cheap"), group_config(scenario, "stable")
    per_node = pods_per_node(scenario, "cheap", batch.template.prototype.requests)
    assert per_node == pods_per_node(scenario, "stable", batch.template.prototype.requests)
    assert stable.initial_size * per_node == web.replicas  # web fills stable: no room there
    left = batch.parallelism - cheap.initial_size * per_node  # after cheap's empty nodes
    needed = math.ceil(left / per_node)

    cheap_ups = increases(result, "cheap")
    assert [delta for _, delta in cheap_ups] == [needed], "cheap is grown once and never again"
    # The same pods then went to stable, once cheap's nodes were past max-node-startup-time.
    stable_ups = increases(result, "stable")
    assert [delta for _, delta in stable_ups] == [needed]
    registered = [
        e["time"] for e in events(result, "RegisteredNode") if e["object"].startswith("Node/cheap-")
    ]
    assert len(registered) == needed
    assert stable_ups[0][0] >= max(registered) + options.max_node_startup_time
    s = result.summary
    assert s["cluster_health"]["halted_loops"] == 0  # unhealthy group, healthy cluster
    # The broken nodes are removed later, once unneeded for scale-down-unready-time.
    removed = deleted_nodes(result)
    assert len(removed) == needed and all(n.startswith("cheap-") for n in removed)
    assert min(removed.values()) >= max(registered) + options.scale_down_unready_time
    assert s["groups"]["cheap"]["final"] == cheap.initial_size
    # cheap's nodes registered but never turned Ready: they never came up, stable's did.
    assert s["scale_up"]["nodes_requested"] == 2 * needed
    assert s["scale_up"]["nodes_added"] == needed and s["scale_up"]["nodes_failed"] == needed
    assert_clean(result)


# -- UC4 ---------------------------------------------------------------------------------------
def test_uc4_stockout_fixes_the_target_backs_off_and_uses_another_group():
    scenario, result = run("uc4-stockout")
    batch = applied(scenario, "Job", "batch")
    per_node = pods_per_node(scenario, "on-demand", batch.template.prototype.requests)
    needed = math.ceil(batch.parallelism / per_node)  # spot is full with web, on-demand empty
    spot = group_config(scenario, "spot")
    web = workload(scenario, "Deployment", "web")
    assert spot.initial_size * per_node == web.replicas

    s = result.summary
    groups = s["node_groups"]
    assert groups["spot"]["target_size_fixes"] >= 1
    assert groups["spot"]["backoff_seconds"] > 0
    assert s["groups"]["spot"]["target"] == spot.initial_size == s["groups"]["spot"]["final"]
    assert events(result, "ScaleUpFailed") and events(result, "DecreaseTargetSize")
    # Every stocked-out request was given back at once, not after max-node-provision-time.
    for failed, fixed in zip(
        events(result, "ScaleUpFailed"), events(result, "DecreaseTargetSize"), strict=True
    ):
        assert fixed["time"] - failed["time"] <= scenario.options.scan_interval
    # The cloudError on on-demand failed its first increase: it backed off too.
    assert events(result, "FailedToScaleUpGroup") and groups["on-demand"]["backoff_seconds"] > 0
    assert [delta for _, delta in increases(result, "on-demand")] == [needed]
    assert s["groups"]["on-demand"]["final"] == needed
    # Nodes added counts the nodes that came up, not the stocked-out requests.
    stocked_out = len(events(result, "InstanceCreationFailed"))
    requested = sum(delta for group in ("spot", "on-demand") for _, delta in increases(result, group))
    assert stocked_out > 0
    assert s["scale_up"] == {
        "events": len(events(result, "IncreaseSize")),
        "nodes_requested": requested,
        "nodes_added": needed,
        "nodes_failed": stocked_out,
        "nodes_coming_up_at_end": 0,
    }
    assert requested == needed + stocked_out
    assert_clean(result)


# -- UC5 ---------------------------------------------------------------------------------------
def test_uc5_instances_that_never_register_are_deleted():
    scenario, result = run("uc5-never-registers")
    fault = next(
        e.fault for e in scenario.events if isinstance(e, FaultEvent) and e.fault.type == "nodeNeverRegisters"
    )
    s = result.summary
    assert s["node_groups"]["general"]["unregistered_removed"] == fault.count
    removed = events(result, "DeleteUnregistered")
    assert len(removed) == fault.count
    assert len({e["message"] for e in removed}) == fault.count  # each instance once
    # The cloud API was failing at first: the deletion was retried until it went through.
    failed = events(result, "DeleteUnregisteredFailed")
    assert failed and max(e["time"] for e in failed) < min(e["time"] for e in removed)
    timed_out = events(result, "ScaleUpTimedOut")
    assert len(timed_out) == 1
    first_up = increases(result, "general")[0][0]
    assert timed_out[0]["time"] > first_up + scenario.options.max_node_provision_time
    assert s["node_groups"]["general"]["backoff_seconds"] > 0
    assert s["groups"]["general"]["target"] == s["groups"]["general"]["final"]
    # The instances that never registered are failures; the rest came up.
    registered = len(events(result, "RegisteredNode"))
    assert s["scale_up"]["nodes_failed"] == fault.count
    assert s["scale_up"]["nodes_added"] == registered
    assert s["scale_up"]["nodes_requested"] == registered + fault.count
    assert_clean(result)


# -- UC6 ---------------------------------------------------------------------------------------
def test_uc6_a_dead_node_is_removed_after_scale_down_unready_time():
    scenario, result = run("uc6-node-dies")
    options = scenario.options
    web = workload(scenario, "Deployment", "web")
    group = group_config(scenario, "general")
    per_node = pods_per_node(scenario, "general", web.template.prototype.requests)
    assert web.replicas == group.initial_size * per_node  # every node holds per_node web pods
    died_at = fault_at(scenario, "nodeNotReady")

    dead = [e["object"].removeprefix("Node/") for e in events(result, "NodeNotReady")]
    assert len(dead) == 1
    removed = deleted_nodes(result)
    assert dead[0] in removed
    assert removed[dead[0]] >= died_at + options.scale_down_unready_time
    s = result.summary
    assert s["node_controller_evictions"] == per_node  # its pods were moved by the node controller
    assert s["scale_up"]["nodes_added"] == 1  # no room elsewhere: one node for them
    assert s["pods"]["running_at_end"] == web.replicas + s["groups"]["general"]["final"]  # + DaemonSet
    assert s["cluster_health"]["halted_loops"] == 0
    assert_clean(result)


# -- UC7 ---------------------------------------------------------------------------------------
def test_uc7_nodes_being_deleted_are_neither_unready_nor_capacity():
    scenario, result = run("uc7-under-deletion")
    s = result.summary
    batch = group_config(scenario, "batch")
    notready_at = fault_at(scenario, "nodeNotReady")
    # Every batch node went NotReady while the cloud was deleting it ...
    down = [e for e in events(result, "NodeNotReady") if e["object"].startswith("Node/batch-")]
    assert len(down) == batch.initial_size
    assert all(e["time"] == notready_at for e in down)
    removed = deleted_nodes(result)
    assert {n for n in removed if n.startswith("batch-")} == {e["object"].removeprefix("Node/") for e in down}
    assert max(removed.values()) < notready_at < max(removed.values()) + batch.deletion_delay.min
    # ... which would be far too many unready nodes, had they counted.
    registered = s["nodes"]["initial"]
    options = scenario.options
    assert batch.initial_size > options.ok_total_unready_count
    assert batch.initial_size / registered > options.max_total_unready_percentage / 100
    assert s["cluster_health"] == {"unhealthy_seconds": 0.0, "halted_loops": 0}
    # Deleted once, despite the restart in the middle; the group ends empty.
    assert len(events(result, "DeleteNodes", "NodeGroup/batch")) == 1
    assert s["autoscaler_restarts"] == 1
    assert s["groups"]["batch"]["final"] == 0 == s["groups"]["batch"]["target"]
    # Not capacity: the new Deployment got a node of its own although the dying nodes had room.
    api = applied(scenario, "Deployment", "api")
    web = workload(scenario, "Deployment", "web")
    general = group_config(scenario, "general")
    per_node = pods_per_node(scenario, "general", api.template.prototype.requests)
    free = general.initial_size * per_node - web.replicas
    needed = math.ceil((api.replicas - free) / per_node)
    assert [delta for _, delta in increases(result, "general")] == [needed]
    assert_clean(result)


# -- UC8 ---------------------------------------------------------------------------------------
def test_uc8_a_zone_outage_halts_the_autoscaler_until_the_zone_is_back():
    scenario, result = run("uc8-zone-outage")
    options = scenario.options
    down_at = fault_at(scenario, "nodeNotReady")
    back_at = fault_at(scenario, "nodeReady")
    zone = group_config(scenario, "zone-a")
    total = sum(g.initial_size for g in scenario.groups)
    assert zone.initial_size > options.ok_total_unready_count
    assert zone.initial_size / total > options.max_total_unready_percentage / 100

    s = result.summary
    health = s["cluster_health"]
    assert health["halted_loops"] > 0
    assert abs(health["unhealthy_seconds"] - (back_at - down_at)) <= options.scan_interval
    assert len(events(result, "ClusterUnhealthy")) == health["halted_loops"]
    assert health["halted_loops"] == pytest.approx((back_at - down_at) / options.scan_interval, abs=1)
    # Nothing scaled while halted, although the evicted pods were pending.
    assert max(r["pending_pods"] for r in result.timeline if down_at < r["time"] < back_at) > 0
    acting = ("IncreaseSize", "ScaleDown", "ScaleDownEmpty", "DeleteNodes", "ScaledUpGroup")
    assert not [e for e in result.events if e["reason"] in acting and down_at < e["time"] <= back_at]
    # Nodes were already unneeded before the outage, and would have gone at down_at + unneeded
    # time; the halt cleared their timers, so they go a full unneeded time after recovery.
    probe = Simulation(scenario)
    probe.setup()
    probe.engine.run_until(probe.engine.start + down_at - options.scan_interval)
    assert probe.autoscaler.planner.unneeded_since, "spare nodes were unneeded before the outage"
    assert down_at + options.scale_down_unneeded_time < back_at
    assert s["scale_down"]["nodes_removed"] >= 1
    assert s["scale_down"]["first_removal_at"] >= back_at + options.scale_down_unneeded_time
    assert_clean(result)


def test_every_use_case_has_a_scenario():
    names = sorted(p.name for p in UNREADY.glob("uc*.yaml"))
    assert [n[:3] for n in names] == [f"uc{i}" for i in range(1, 9)]
    types = {
        e.fault.type
        for p in UNREADY.glob("uc*.yaml")
        for e in load_scenario(p).events
        if isinstance(e, FaultEvent)
    }
    assert types == set(FAULT_TYPES)


@pytest.mark.parametrize("restart", [False, True], ids=["same-process", "restarted-at-the-outage"])
def test_uc8_a_halt_cancels_deletions_in_progress_instead_of_freezing_them(restart):
    # Regression: while the cluster was unhealthy the loop stopped before scale-down, so a drain
    # started just before the outage stayed frozen: its node kept ToBeDeleted (unschedulable,
    # capacity withheld) for the whole halt and was deleted on the first healthy loop on a
    # decision made before the outage. A halt now cancels deletions in progress (untaint), and
    # releases the nodes a previous process left tainted when the autoscaler restarts into the
    # outage (restart recovery waits for a loop that scales down).
    from sim_helpers import deployment, group, make_scenario, pdb

    from kubetide.autoscaler.ports import TO_BE_DELETED_TAINT

    def zone(name):
        labels = {"topology.kubernetes.io/zone": name}
        allocatable = {"cpu": "4", "memory": "16Gi", "pods": "110"}
        return group(
            name,
            size=6,
            min_size=1,
            template={"metadata": {"labels": labels}, "status": {"allocatable": allocatable}},
        )

    scenario = make_scenario(
        groups=[zone("zone-a"), zone("zone-b")],
        objects=[deployment("web", 12, cpu="1", grace=120), pdb("web", "web", max_unavailable=1)],
        events=[
            {"at": "5m30s", "fault": {"type": "nodeNotReady", "nodeGroup": "zone-b", "duration": "30m"}},
            *([{"at": "5m30s", "fault": {"type": "autoscalerRestart"}}] if restart else []),
        ],
        autoscaler={"scale-down-unneeded-time": "5m", "scale-down-delay-after-add": "0s"},
        duration="50m",
    )
    options = scenario.options
    down_at, back_at = 330.0, 330.0 + 1800.0
    sim = Simulation(scenario)
    sim.setup()
    sim.engine.run_until(sim.engine.start + down_at - 1)
    doomed = [n.name for n in sim.world.snapshot.nodes() if n.has_taint(TO_BE_DELETED_TAINT)]
    assert doomed and all(n.startswith("zone-a-") for n in doomed), (
        "a drain is in progress in the healthy zone"
    )
    t = down_at + 2 * options.scan_interval
    while t < back_at:
        sim.engine.run_until(sim.engine.start + t)
        tainted = [n.name for n in sim.world.snapshot.nodes() if n.has_taint(TO_BE_DELETED_TAINT)]
        assert not tainted, f"t={t:g}: {tainted} still tainted ToBeDeleted while the autoscaler is halted"
        t += 60
    result = sim.run()
    s = result.summary
    assert s["cluster_health"]["halted_loops"] > 0
    assert s["autoscaler_restarts"] == int(restart)
    assert s["invariants"] == ZERO
    # Nothing was removed during the halt; what is still unneeded goes after recovery.
    assert s["scale_down"]["first_removal_at"] >= back_at + options.scale_down_unneeded_time
