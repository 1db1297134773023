"""Preemption in the simulator and the over-provisioning pattern (issue 17 item 6).

examples/overprovisioning.yaml keeps two 4-CPU nodes warm with placeholder pods (PriorityClass
-1, above expendable-pods-priority-cutoff -10); at 10m web bursts from 4 to 16 pods. With the
placeholders, real pods preempt them and start at once, and the autoscaler adds nodes for the
evicted placeholders; without them, the new web pods wait for nodes to boot.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from sim_events import events
from sim_helpers import deployment, group, make_scenario

from kubetide.sim import Simulation, load_scenario

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "overprovisioning.yaml"


def without_placeholders(scenario):
    workloads = [
        dataclasses.replace(w, replicas=0) if w.name == "overprovisioning" else w
        for w in scenario.objects.workloads
    ]
    return dataclasses.replace(scenario, objects=dataclasses.replace(scenario.objects, workloads=workloads))


def run(scenario):
    sim = Simulation(scenario)
    result = sim.run()
    web = [p for p in sim.world.pods() if p.labels.get("app") == "web"]
    assert len(web) == 16 and all(p.node_name for p in web)
    pending = sum(p.scheduled_transition - p.meta.creation_timestamp for p in web)
    return result, pending


@pytest.fixture(scope="module")
def both_runs():
    scenario = load_scenario(EXAMPLE)
    return run(scenario), run(without_placeholders(scenario)), scenario


def test_real_pods_wait_less_with_over_provisioning(both_runs):
    (with_reserve, pending_with), (without_reserve, pending_without), scenario = both_runs
    group = scenario.groups[0]
    # Without the reserve, 8 new web pods wait at least for a node to boot.
    assert pending_without >= 8 * (group.provisioning_delay.min + group.ready_delay.min)
    # With it, the pods that preempt start within a few scheduler passes.
    assert pending_with < pending_without / 10
    assert pending_with <= 8 * 5 * scenario.cluster.schedulerInterval
    assert with_reserve.summary["invariants"] == without_reserve.summary["invariants"]
    assert all(v == 0 for v in with_reserve.summary["invariants"].values())


def test_placeholders_are_preempted_and_the_autoscaler_restores_the_reserve(both_runs):
    (with_reserve, _), (without_reserve, _), scenario = both_runs
    burst = next(e.at for e in scenario.events if e.kind == "scale")
    preempted = events(with_reserve, "Preempted")
    assert len(preempted) == 2 and all(
        e["object"].startswith("Pod/default/overprovisioning-") for e in preempted
    )
    assert all(e["time"] >= burst for e in preempted)
    assert not events(without_reserve, "Preempted")
    # The evicted placeholders, recreated by their ReplicaSet, asked for nodes after the burst ...
    triggered = [e for e in events(with_reserve, "TriggeredScaleUp") if e["time"] > burst]
    assert triggered and all("overprovisioning-" in e["object"] for e in triggered)
    # ... and are running again by the end: the reserve is back.
    assert with_reserve.summary["pods"]["pending_at_end"] == 0


def test_same_seed_same_summary():
    first = Simulation(load_scenario(EXAMPLE)).run().summary
    second = Simulation(load_scenario(EXAMPLE)).run().summary
    first.pop("wall_seconds", None)
    second.pop("wall_seconds", None)
    assert json.dumps(first, sort_keys=True) == json.dumps(second, sort_keys=True)


def priority_class(name, value, policy=None):
    body = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name}}
    body["value"] = value
    if policy:
        body["preemptionPolicy"] = policy
    return body


@pytest.mark.parametrize(
    ("preemptor_policy", "preempts"),
    [(None, True), ("Never", False)],
)
def test_preemption_picks_the_fewest_lowest_priority_victims(preemptor_policy, preempts):
    """One 4-CPU node: two 1-CPU pods at priority -5, one 2-CPU pod at -1. A 2-CPU pod of priority
    0 needs 2 CPU back: evicting both -5 pods is the lowest highest-priority set."""

    def pods(name, replicas, cpu, pc):
        d = deployment(name, replicas, cpu=cpu, pod_extra={"priorityClassName": pc})
        return d

    scenario = make_scenario(
        groups=[group("general", size=1, min_size=1, max_size=1)],
        objects=[
            priority_class("low", -5),
            priority_class("mid", -1),
            priority_class("urgent", 0, preemptor_policy),
            pods("low", 2, "1", "low"),
            pods("mid", 1, "2", "mid"),
        ],
        events=[
            {
                "at": "1m",
                "apply": [deployment("urgent", 1, cpu="2", pod_extra={"priorityClassName": "urgent"})],
            }
        ],
        duration="5m",
    )
    sim = Simulation(scenario)
    result = sim.run()
    preempted = sorted(e["object"].split("/")[-1].rsplit("-", 2)[0] for e in events(result, "Preempted"))
    urgent = [p for p in sim.world.pods() if p.labels.get("app") == "urgent"]
    if preempts:
        assert preempted == ["low", "low"]
        assert urgent[0].node_name
    else:
        assert preempted == [] and not urgent[0].node_name
