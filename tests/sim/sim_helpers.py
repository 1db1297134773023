"""Builders for small scenarios, so each test states only what it is about (imported by the tests)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from kubetide.sim.runtime.simulation import Simulation
from kubetide.sim.spec.scenario import parse_scenario


def group(name="general", size=2, min_size=0, max_size=20, cpu="4", memory="16Gi", pods="110", **extra):
    spec = {
        "name": name,
        "minSize": min_size,
        "maxSize": max_size,
        "initialSize": size,
        "price": 0.2,
        "provisioningDelay": "60s",
        "readyDelay": "10s",
        "template": {"status": {"allocatable": {"cpu": cpu, "memory": memory, "pods": pods}}},
    }
    spec.update(extra)
    return spec


def pod_spec(cpu="500m", memory="512Mi", grace=None, **extra):
    spec = {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu, "memory": memory}}}]}
    if grace is not None:
        spec["terminationGracePeriodSeconds"] = grace
    spec.update(extra)
    return spec


def workload(
    kind,
    name,
    replicas=None,
    cpu="500m",
    memory="512Mi",
    namespace="default",
    labels=None,
    grace=None,
    annotations=None,
    pod_extra=None,
    **spec,
):
    labels = labels or {"app": name}
    body = {
        "selector": {"matchLabels": labels},
        "template": {
            "metadata": {"labels": labels, **({"annotations": annotations} if annotations else {})},
            "spec": pod_spec(cpu, memory, grace, **(pod_extra or {})),
        },
    }
    if replicas is not None:
        body["replicas"] = replicas
    body.update(spec)
    api = "batch/v1" if kind == "Job" else "apps/v1"
    return {"apiVersion": api, "kind": kind, "metadata": {"name": name, "namespace": namespace}, "spec": body}


def deployment(name, replicas, **kw):
    return workload("Deployment", name, replicas, **kw)


def pdb(name, app, min_available=None, max_unavailable=None, policy=None, namespace="default"):
    spec = {"selector": {"matchLabels": {"app": app}}}
    if min_available is not None:
        spec["minAvailable"] = min_available
    if max_unavailable is not None:
        spec["maxUnavailable"] = max_unavailable
    if policy:
        spec["unhealthyPodEvictionPolicy"] = policy
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }


def make_scenario(
    groups=None, objects=(), events=(), duration="30m", seed=1, autoscaler=None, cluster=None, **spec
):
    data = {
        "apiVersion": "kubetide.io/v1alpha1",
        "kind": "Scenario",
        "metadata": {"name": "test"},
        "spec": {
            "duration": duration,
            "seed": seed,
            "nodeGroups": groups or [group()],
            "objects": list(objects),
            "events": list(events),
            **({"autoscaler": autoscaler} if autoscaler else {}),
            **({"cluster": cluster} if cluster else {}),
            **spec,
        },
    }
    return parse_scenario(data, "test.yaml", Path("."))


def simulate(scenario, factory=None):
    """A set-up simulation (t=0 state settled), not yet run."""
    from sim_doubles import ScaleUpDouble

    sim = Simulation(scenario, autoscaler_factory=factory or ScaleUpDouble)
    sim.setup()
    return sim


def advance(sim, seconds):
    """Run `seconds` more of simulated time."""
    sim.engine.run_until(sim.engine.now() + seconds)


def pods_of(sim, app):
    return sorted((p for p in sim.world.pods() if p.labels.get("app") == app), key=lambda p: p.name)
