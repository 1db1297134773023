"""Scale-up's done-when (issue 6): a burst is absorbed, pending pods back to zero, with no more
nodes than the binpacking lower bound plus one per node group.

The lower bound is computed here from the scenario itself: every pod's requests (the burst and
what already runs) against the templates' allocatable minus the DaemonSet pods each node carries,
relaxed to fractions (any real packing needs at least that many nodes). With several groups and
pods that may go to either, the bound is the smallest fractional mix of nodes that covers the
demand. The real autoscaler runs; scale-down is off so the node count is the scale-up's alone.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import pytest
from sim_helpers import deployment, group, make_scenario, workload

from kubetide.sim import Simulation

RESOURCES = ("cpu", "memory", "pods")
ZERO = {"pdb_violations": 0, "pods_lost": 0, "nodes_deleted_with_pods": 0}
GROUP_LABEL = "kubetide.io/node-group"


def daemonset_overhead(scenario) -> dict[str, int]:
    total: dict[str, int] = {}
    for w in scenario.objects.workloads:
        if w.kind == "DaemonSet":
            for r, amount in w.template.prototype.requests.items():
                total[r] = total.get(r, 0) + amount
    return total


def capacity(scenario, group_name: str) -> dict[str, int]:
    """What a node of the group offers to non-DaemonSet pods."""
    config = next(g for g in scenario.groups if g.name == group_name)
    ds = daemonset_overhead(scenario)
    return {r: config.template.allocatable.get(r, 0) - ds.get(r, 0) for r in RESOURCES}


def demand(scenario, replicas: dict[str, int]) -> dict[str | None, dict[str, int]]:
    """Total requests of the Deployments at their final replica counts, by the node group their
    nodeSelector pins them to (None: any group)."""
    out: dict[str | None, dict[str, int]] = {}
    for w in scenario.objects.workloads:
        if w.kind != "Deployment":
            continue
        pod = w.template.prototype
        pinned = pod.node_selector.get(GROUP_LABEL) if pod.node_selector else None
        bucket = out.setdefault(pinned, dict.fromkeys(RESOURCES, 0))
        for r in RESOURCES:
            bucket[r] += pod.requests.get(r, 0) * replicas.get(w.name, w.replicas)
    return out


def lower_bound(scenario, replicas: dict[str, int]) -> int:
    """Fewest nodes (over all groups) whose fractional capacity covers the demand."""
    groups = [g.name for g in scenario.groups]
    caps = {g: capacity(scenario, g) for g in groups}
    need = demand(scenario, replicas)
    free = need.pop(None, dict.fromkeys(RESOURCES, 0))
    # Nodes each group needs at least for the pods pinned to it.
    floor = {g: max(math.ceil(need.get(g, {}).get(r, 0) / caps[g][r]) for r in RESOURCES) for g in groups}
    horizon = max(floor.values()) + max(
        math.ceil(free[r] / min(c[r] for c in caps.values())) for r in RESOURCES
    )
    best = None
    for counts in itertools.product(*(range(floor[g], floor[g] + horizon + 1) for g in groups)):
        total = sum(counts)
        if best is not None and total >= best:
            continue
        # Leftover capacity after the pinned pods, per group; the free pods must fit the sum
        # fractionally, resource by resource (an exact test for a fractional split when the free
        # pods are one shape; a relaxation, hence still a lower bound, otherwise).
        left = {
            r: sum(
                Fraction(n * caps[g][r] - need.get(g, {}).get(r, 0))
                for g, n in zip(groups, counts, strict=True)
            )
            for r in RESOURCES
        }
        if all(left[r] >= free[r] for r in RESOURCES):
            best = total
    assert best is not None
    return best


def run(scenario):
    result = Simulation(scenario).run()
    s = result.summary
    assert s["invariants"] == ZERO
    assert s["pods"]["pending_at_end"] == 0 and s["pods"]["unschedulable_at_end"] == 0
    return result


def absorbed_by(result, at: float) -> float:
    """When pending pods were back to zero for good after `at`."""
    last_pending = max(
        (r["time"] for r in result.timeline if r["time"] >= at and r["pending_pods"] > 0), default=at
    )
    return last_pending


def one_round(scenario, group_name: str) -> float:
    """Time for one scale-up round: notice, provision, register, turn Ready, start the pods."""
    config = next(g for g in scenario.groups if g.name == group_name)
    return (
        3 * scenario.options.scan_interval
        + config.provisioning_delay.max
        + config.ready_delay.max
        + scenario.cluster.podStartupDelay.max
        + scenario.cluster.schedulerInterval
    )


AUTOSCALER = {"scale-down-enabled": "false", "scan-interval": "10s"}
DAEMONSET = workload("DaemonSet", "agent", cpu="100m", memory="128Mi", namespace="kube-system")


@pytest.mark.parametrize("expander", ["least-waste", "most-pods", "random"])
def test_a_mixed_burst_on_one_group_needs_at_most_the_lower_bound_plus_one(expander):
    burst = {"cpu-heavy": 40, "mem-heavy": 30, "small": 100}
    objects = [
        DAEMONSET,
        deployment("cpu-heavy", 2, cpu="1500m", memory="1Gi"),
        deployment("mem-heavy", 1, cpu="250m", memory="5Gi"),
        deployment("small", 4, cpu="100m", memory="128Mi"),
    ]
    events = [
        {"at": "2m", "scale": {"kind": "Deployment", "name": name, "replicas": n}}
        for name, n in burst.items()
    ]
    sc = make_scenario(
        groups=[group("general", size=2, min_size=1, max_size=100)],
        objects=objects,
        events=events,
        autoscaler={**AUTOSCALER, "expander": expander},
        duration="30m",
    )
    bound = lower_bound(sc, burst)
    result = run(sc)
    s = result.summary
    assert s["nodes"]["peak"] <= bound + 1, f"{s['nodes']['peak']} nodes, lower bound {bound}"
    assert absorbed_by(result, 120) <= 120 + 2 * one_round(sc, "general")


def test_a_burst_over_two_differently_shaped_groups():
    burst = {"compute": 60, "cache": 40, "web": 50}
    compute = deployment(
        "compute", 1, cpu="1", memory="1Gi", pod_extra={"nodeSelector": {GROUP_LABEL: "cpu"}}
    )
    cache = deployment("cache", 1, cpu="250m", memory="6Gi", pod_extra={"nodeSelector": {GROUP_LABEL: "mem"}})
    web = deployment("web", 2, cpu="500m", memory="1Gi")
    sc = make_scenario(
        groups=[
            group("cpu", size=1, min_size=1, max_size=60, cpu="8", memory="16Gi"),
            group("mem", size=1, min_size=1, max_size=60, cpu="2", memory="32Gi"),
        ],
        objects=[DAEMONSET, compute, cache, web],
        events=[
            {"at": "2m", "scale": {"kind": "Deployment", "name": name, "replicas": n}}
            for name, n in burst.items()
        ],
        autoscaler=AUTOSCALER,
        duration="40m",
    )
    bound = lower_bound(sc, burst)
    result = run(sc)
    peak = result.summary["nodes"]["peak"]
    assert peak <= bound + 2, f"{peak} nodes, lower bound {bound}"
    assert absorbed_by(result, 120) <= 120 + 2 * max(one_round(sc, "cpu"), one_round(sc, "mem"))


def test_a_balanced_burst_over_three_zones():
    zones = [
        group(
            zone,
            size=1,
            min_size=1,
            max_size=40,
            template={
                "metadata": {"labels": {"topology.kubernetes.io/zone": zone}},
                "status": {"allocatable": {"cpu": "4", "memory": "16Gi", "pods": "110"}},
            },
        )
        for zone in ("zone-a", "zone-b", "zone-c")
    ]
    burst = {"web": 90}
    sc = make_scenario(
        groups=zones,
        objects=[DAEMONSET, deployment("web", 3, cpu="700m", memory="1Gi")],
        events=[{"at": "2m", "scale": {"kind": "Deployment", "name": "web", "replicas": 90}}],
        autoscaler={**AUTOSCALER, "balance-similar-node-groups": "true"},
        duration="30m",
    )
    bound = lower_bound(sc, burst)
    result = run(sc)
    s = result.summary
    assert s["nodes"]["peak"] <= bound + 3, f"{s['nodes']['peak']} nodes, lower bound {bound}"
    finals = [g["final"] for g in s["groups"].values()]
    assert max(finals) - min(finals) <= 1, f"balanced groups: {finals}"
    assert absorbed_by(result, 120) <= 120 + 2 * one_round(sc, "zone-a")
