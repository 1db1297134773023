"""Drains never take a workload below what it asked for (issue 37 item 3), over random clusters.

Random simulated clusters (4 to 10 nodes) whose replacement pods start slowly (30 s to 3 min), with
Deployments of mixed pod sizes (1.5-CPU pods among smaller ones), grace periods from 5 s to 90 s,
and sometimes an OrderedReady StatefulSet, under every
PodDisruptionBudget shape (maxUnavailable 1, a percentage, minAvailable as a count or a
percentage, or none), max-drain-parallelism 1 to 10 and a load drop of any size (each workload
scaled to a tenth up to nine tenths of its pods), so that several nodes drain in parallel while
the first drains' replacements are still starting.

Property: the simulator's invariants hold, measured by the simulator from what happened to the
cluster, not from what the autoscaler believes: no pod lost (`pods_lost`: an evicted pod whose
workload still wants it and has no Ready replacement 5 minutes later), no PDB violated by an
autoscaler action, and no second below a PDB's minimum (the disruption ledger's
`below_pdb_minimum_seconds`). Not vacuous: across the examples nodes are drained (pods evicted).

Found meanwhile (the last test below, from 1,000 examples): a StatefulSet pod's replacement is
created only once the pod is gone, so Deployment replacements evicted in the same wave took the
one node with room for it; such a pod is now evicted alone and the wave waits for its node
(autoscaler/scaledown/soledestination.py).
"""

from __future__ import annotations

from pathlib import Path
from unittest.mock import patch

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubetide.autoscaler.scaledown.actuation import actuator
from kubetide.autoscaler.scaledown.actuation.soledestination import sole_destinations
from kubetide.sim import Simulation
from kubetide.sim.spec.scenario import parse_scenario

# About 10 CPU s of the suite. Run once with 1,000 random examples when written (issue 37): one
# pod lost, in the scenario of the last test below; no PDB violated, no second below a minimum.
EXAMPLES = 40

PDB_SHAPES = [
    None,
    {"maxUnavailable": 1},
    {"maxUnavailable": "25%"},
    {"maxUnavailable": "50%"},
    {"minAvailable": "60%"},
    {"minAvailable": "count-1"},  # as a count: the replicas after the load drop, less one
]


def _pdb(name: str, shape: dict, replicas: int) -> dict:
    spec = dict(shape)
    if spec.get("minAvailable") == "count-1":
        spec["minAvailable"] = max(1, replicas - 1)
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": "prod"},
        "spec": {"selector": {"matchLabels": {"app": name}}, **spec},
    }


def _template(name: str, millis: int, grace: int) -> dict:
    return {
        "metadata": {"labels": {"app": name}},
        "spec": {
            "terminationGracePeriodSeconds": grace,
            "containers": [{"name": "c", "resources": {"requests": {"cpu": f"{millis}m", "memory": "1Gi"}}}],
        },
    }


@st.composite
def scenarios(draw: st.DrawFn) -> dict:
    nodes = draw(st.integers(4, 10))
    objects: list[dict] = []
    events: list[dict] = []
    drop_at = draw(st.sampled_from(["10m", "15m", "20m"]))
    workloads = draw(st.integers(2, 3))
    capacity = nodes * 4000 * draw(st.sampled_from([0.5, 0.7]))
    for i in range(workloads + 1):
        stateful = i == workloads
        if stateful and not draw(st.booleans()):
            break
        name = f"db{i}" if stateful else f"app{i}"
        millis = draw(st.sampled_from([250, 400, 600, 900, 1500]))
        replicas = draw(st.integers(2, 5)) if stateful else max(2, round(capacity / workloads / millis))
        grace = draw(st.sampled_from([5, 20, 45, 90]))
        spec: dict = {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": _template(name, millis, grace),
        }
        if stateful:
            spec["serviceName"] = name
        objects.append(
            {
                "apiVersion": "apps/v1",
                "kind": "StatefulSet" if stateful else "Deployment",
                "metadata": {"name": name, "namespace": "prod"},
                "spec": spec,
            }
        )
        shape = draw(st.sampled_from(PDB_SHAPES))
        share = draw(st.integers(1, 9)) / 10
        after = max(1, round(replicas * share))
        if shape is not None:
            # A count stays satisfiable after the drop (a budget the scenario itself scales below
            # its minimum is short for good, whatever the autoscaler does).
            objects.append(_pdb(name, shape, after))
        events.append(
            {
                "at": drop_at,
                "scale": {
                    "kind": objects[-1 if shape is None else -2]["kind"],
                    "namespace": "prod",
                    "name": name,
                    "replicas": after,
                },
            }
        )
    startup_min = draw(st.sampled_from(["30s", "1m"]))
    startup_max = draw(st.sampled_from(["90s", "3m"]))
    seed = draw(st.integers(0, 1000))  # drawn in the order the examples were first drawn in
    autoscaler = {
        "scale-down-unneeded-time": draw(st.sampled_from(["1m", "2m", "5m"])),
        "scale-down-utilization-threshold": draw(st.sampled_from([0.5, 0.6, 0.7])),
        "max-graceful-termination-sec": draw(st.sampled_from([30, 60])),
        "node-delete-delay-after-taint": draw(st.sampled_from(["5s", "20s"])),
        "max-pod-eviction-time": draw(st.sampled_from(["1m", "2m"])),
        "max-drain-parallelism": draw(st.integers(1, 10)),
        "max-scale-down-parallelism": 10,
    }
    return _scenario(
        "drains", seed, (startup_min, startup_max), autoscaler, (nodes, 2 * nodes), objects, events
    )


def _scenario(
    name: str,
    seed: int,
    startup: tuple[str, str],
    autoscaler: dict,
    nodes: tuple[int, int],
    objects: list[dict],
    events: list[dict],
) -> dict:
    """A 90-minute scenario on one group of 4-cpu nodes (`nodes`: initial and maximum size)."""
    initial, maximum = nodes
    group = {
        "name": "general",
        "minSize": 1,
        "maxSize": maximum,
        "initialSize": initial,
        "price": 0.2,
        "provisioningDelay": "1m",
        "readyDelay": "20s",
        "deletionDelay": "30s",
        "template": {"status": {"allocatable": {"cpu": "4", "memory": "16Gi", "pods": "110"}}},
    }
    return {
        "apiVersion": "kubetide.io/v1alpha1",
        "kind": "Scenario",
        "metadata": {"name": name},
        "spec": {
            "duration": "90m",
            "seed": seed,
            "cluster": {"podStartupDelay": {"min": startup[0], "max": startup[1]}},
            "autoscaler": autoscaler,
            "nodeGroups": [group],
            "objects": objects,
            "events": events,
        },
    }


def run(data: dict) -> Simulation:
    parsed = parse_scenario(data, "drains.yaml", Path("."))
    sim = Simulation(parsed, autoscaler_name="kubetide")
    sim.setup()
    sim.engine.run_until(sim.engine.start + parsed.duration)
    sim.scheduler.close()
    return sim


EVICTIONS: list[int] = []
SOLE: list[int] = []  # per example, the drained pods the actuator found with a single destination


def _sole_destinations_counted(*args, **kwargs):
    """The actuator's own `sole_destinations`, its finds counted into SOLE's last entry."""
    found = sole_destinations(*args, **kwargs)
    SOLE[-1] += len(found)
    return found


# Derandomized: the suite runs the same examples every time (a random draw may meet the known
# case below, about 1 in 1,000).
@settings(max_examples=EXAMPLES, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios())
def test_parallel_drains_with_slow_starts_lose_no_pod_and_break_no_budget(data):
    SOLE.append(0)
    with patch.object(actuator, "sole_destinations", _sole_destinations_counted):
        sim = run(data)
    c = sim.metrics.c
    lost = [e for e in sim.log.entries if e["reason"] == "InvariantViolated"]
    assert c.pods_lost == 0, lost
    assert c.pdb_violations == 0, lost
    assert sim.ledger.result().below_pdb_minimum_seconds == 0
    EVICTIONS.append(c.evictions)


def test_the_random_clusters_do_drain():
    """Not vacuous: the property's examples evicted pods, and some met pods with a single
    destination (it runs first in file order; run alone, this test runs it)."""
    if not EVICTIONS:
        test_parallel_drains_with_slow_starts_lose_no_pod_and_break_no_budget()
    assert sum(1 for n in EVICTIONS if n > 0) >= EXAMPLES // 3
    # ... among them, drains whose wave held back for a pod with one possible destination.
    assert sum(1 for n in SOLE if n > 0) >= 2


def _workload(kind: str, name: str, replicas: int, millis: int, grace: int) -> dict:
    spec: dict = {
        "replicas": replicas,
        "selector": {"matchLabels": {"app": name}},
        "template": _template(name, millis, grace),
    }
    if kind == "StatefulSet":
        spec["serviceName"] = name
    return {
        "apiVersion": "apps/v1",
        "kind": kind,
        "metadata": {"name": name, "namespace": "prod"},
        "spec": spec,
    }


def test_a_statefulset_replacement_created_after_its_pod_is_gone_keeps_its_room():
    """Two drains at once: a 1.5-CPU StatefulSet pod (90 s grace, capped at 60 s) whose only
    destination is the one node with 2.5 CPUs free, and two 900m Deployment pods that fit there
    or elsewhere. The Deployment replacements, created at once, would be scheduled onto that
    node (the emptiest) before the StatefulSet's, created once its pod is gone: the drains wait
    until the StatefulSet pod's replacement has its node."""
    shapes = [("Deployment", "app0", 2, 1500, 5, "50%"), ("Deployment", "app1", 4, 900, 5, "50%")]
    shapes += [("Deployment", "app2", 4, 900, 5, "50%"), ("StatefulSet", "db3", 3, 1500, 90, "25%")]
    after = {"app0": 1, "app1": 4, "app2": 2, "db3": 3}
    objects = []
    for kind, name, replicas, millis, grace, unavailable in shapes:
        objects.append(_workload(kind, name, replicas, millis, grace))
        objects.append(_pdb(name, {"maxUnavailable": unavailable}, after[name]))
    events = [
        {"at": "20m", "scale": {"kind": kind, "namespace": "prod", "name": name, "replicas": after[name]}}
        for kind, name, *_ in shapes
    ]
    autoscaler = {
        "scale-down-unneeded-time": "5m",
        "scale-down-utilization-threshold": 0.5,
        "max-graceful-termination-sec": 60,
        "node-delete-delay-after-taint": "20s",
        "max-pod-eviction-time": "1m",
        "max-drain-parallelism": 6,
        "max-scale-down-parallelism": 10,
    }
    data = _scenario("drains", 59, ("1m", "3m"), autoscaler, (4, 8), objects, events)
    assert run(data).metrics.c.pods_lost == 0


def _long_grace_scenario(startup: str) -> dict:
    """Four nodes, load dropping to a fifth: a StatefulSet whose pods take 7 minutes to stop
    (terminationGracePeriodSeconds 420, under max-graceful-termination-sec's 600) is drained."""
    shapes = [("StatefulSet", "db", 4, 1500, 420), ("Deployment", "web", 8, 900, 5)]
    objects = [_workload(*shape) for shape in shapes]
    autoscaler = {"scale-down-unneeded-time": "5m", "scale-down-utilization-threshold": 0.6}
    drop = {"at": "20m", "scale": {"kind": "Deployment", "namespace": "prod", "name": "web", "replicas": 1}}
    return _scenario("long-grace", 7, (startup, startup), autoscaler, (4, 8), objects, [drop])


def test_a_statefulset_pod_stopping_longer_than_five_minutes_is_not_lost():
    """A StatefulSet's replacement takes the evicted pod's name, so it is created only once the
    pod is gone, 7 minutes after its eviction here: its 5 minutes start then. A replacement Ready
    30 s after that is not a lost pod; one that takes 6 minutes is."""
    for startup, lost in (("30s", 0), ("6m", 1)):
        sim = run(_long_grace_scenario(startup))
        evicted = [e["object"] for e in sim.log.entries if e["reason"] == "Evicted"]
        assert any(name.startswith("Pod/prod/db-") for name in evicted), evicted
        violations = [e for e in sim.log.entries if e["reason"] == "InvariantViolated"]
        assert sim.metrics.c.pods_lost == lost, (startup, violations)
