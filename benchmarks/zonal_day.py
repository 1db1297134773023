"""A scenario generator for `kubetide simulate` written apart from bench_simulate.py's (issue 30).

`python -m benchmarks.zonal_day --nodes 300 --pods 3000 --hours 6 > scenario.yaml`

Its shapes are those a real cluster has rather than the benchmark's uniform ones: two zonal node
groups (zone-a, zone-b) of 8-cpu nodes, several namespaces (storefront, payments, search, data,
platform, batch), Deployments of varied sizes and requests with recommended labels
(app.kubernetes.io/name, part-of, version) and per-namespace team labels, a StatefulSet,
topology spread over zones for some, PodDisruptionBudgets with both minAvailable and
maxUnavailable, a DaemonSet, standalone Pods with status conditions and owner references to an
operator's object, and a daily load curve that moves every service every 5 minutes (each by its
own phase and amplitude), plus batch Jobs every 2 hours. The pods' owner references and
conditions are what the simulated controllers and kubelet give them.

The sizes: `--nodes` at the start (split evenly over the two zones, each group up to 1.5x its
share), `--pods` at the start (the services' replicas sum to about that), `--hours` simulated.

Issue 38's speed target (a three-policy comparison of a 500-node day, BENCHMARKS.md), in CPU
seconds of the whole process and its workers:

    python -m benchmarks.zonal_day --nodes 500 --pods 5000 --hours 24 > day500.yaml
    /usr/bin/time -v kubetide simulate day500.yaml --compare kubetide:policy=kubetide \
        --compare cluster-autoscaler:policy=cluster-autoscaler --compare karpenter:policy=karpenter \
        --out OUT --no-report
"""

from __future__ import annotations

import argparse
import math
import random
import sys

import yaml

ZONES = ("zone-a", "zone-b")
# namespace -> (team, services, request cpu millicores choices, memory MiB choices)
NAMESPACES: dict[str, tuple[str, int, tuple[int, ...], tuple[int, ...]]] = {
    "storefront": ("web", 6, (100, 250, 400), (256, 512, 768)),
    "payments": ("fintech", 3, (300, 500), (512, 1024)),
    "search": ("discovery", 4, (200, 500, 700), (1024, 2048)),
    "data": ("analytics", 2, (400, 600), (2048, 3072)),
    "platform": ("infra", 3, (50, 150), (128, 256)),
}
STEP = 5 * 60  # the load curve moves every 5 minutes
START = (
    0  # simulated time 0 is midnight, the low: a 6 h run consolidates the night, then climbs to the morning
)


def _labels(namespace: str, name: str, team: str, version: str) -> dict[str, str]:
    return {
        "app.kubernetes.io/name": name,
        "app.kubernetes.io/part-of": namespace,
        "app.kubernetes.io/version": version,
        "team": team,
    }


def _container(name: str, cpu: int, memory: int) -> dict:
    return {
        "name": name,
        "image": f"registry.example.com/{name}:1.{cpu % 7}.{memory % 5}",
        "resources": {"requests": {"cpu": f"{cpu}m", "memory": f"{memory}Mi"}},
    }


def _service(rng: random.Random, namespace: str, index: int, replicas: int) -> tuple[dict, list[dict]]:
    """A Deployment (or StatefulSet for data) and what goes with it; returns (ref, objects)."""
    team, _, cpus, memories = NAMESPACES[namespace]
    name = f"{namespace[:5]}-svc-{index}"
    version = f"v{rng.randint(1, 9)}.{rng.randint(0, 30)}"
    labels = _labels(namespace, name, team, version)
    selector = {"app.kubernetes.io/name": name, "app.kubernetes.io/part-of": namespace}
    cpu, memory = rng.choice(cpus), rng.choice(memories)
    containers = [_container(name, cpu, memory)]
    if rng.random() < 0.4:  # a sidecar
        containers.append(_container(f"{name}-proxy", 50, 64))
    pod_spec: dict = {"terminationGracePeriodSeconds": rng.choice((30, 45, 60)), "containers": containers}
    if rng.random() < 0.5:
        pod_spec["topologySpreadConstraints"] = [
            {
                "maxSkew": 1,
                "topologyKey": "topology.kubernetes.io/zone",
                "whenUnsatisfiable": "ScheduleAnyway",
                "labelSelector": {"matchLabels": selector},
            }
        ]
    kind = "StatefulSet" if namespace == "data" else "Deployment"
    workload = {
        "apiVersion": "apps/v1",
        "kind": kind,
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": labels,
            "annotations": {"deployment.kubernetes.io/revision": str(rng.randint(1, 40))},
        },
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": selector},
            "template": {"metadata": {"labels": labels}, "spec": pod_spec},
        },
    }
    if kind == "StatefulSet":
        workload["spec"]["serviceName"] = name
    objects = [workload]
    if namespace != "platform":
        budget = (
            {"minAvailable": "80%"} if rng.random() < 0.5 else {"maxUnavailable": rng.choice((1, 2, "10%"))}
        )
        objects.append(
            {
                "apiVersion": "policy/v1",
                "kind": "PodDisruptionBudget",
                "metadata": {"name": name, "namespace": namespace, "labels": {"team": team}},
                "spec": {**budget, "selector": {"matchLabels": selector}},
            }
        )
    return {"kind": kind, "namespace": namespace, "name": name}, objects


def _standalone_pods(count: int) -> list[dict]:
    """Pods an operator made (owner reference to its custom object), carrying status conditions."""
    pods = []
    for i in range(count):
        pods.append(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    "name": f"runner-{i}",
                    "namespace": "platform",
                    "labels": {"app.kubernetes.io/name": "runner", "team": "infra"},
                    "ownerReferences": [
                        {
                            "apiVersion": "ci.example.com/v1",
                            "kind": "RunnerSet",
                            "name": "runners",
                            "uid": f"7d3c0a1e-0000-4000-8000-{i:012d}",
                            "controller": True,
                        }
                    ],
                },
                "spec": {"containers": [_container("runner", 200, 256)]},
                "status": {
                    "conditions": [
                        {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"},
                    ]
                },
            }
        )
    return pods


def _daemonset() -> dict:
    labels = {"app.kubernetes.io/name": "node-exporter", "app.kubernetes.io/part-of": "platform"}
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "node-exporter", "namespace": "platform", "labels": labels},
        "spec": {
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [_container("node-exporter", 50, 64)]},
            },
        },
    }


def _batch(hour: int, pods: int) -> dict:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": f"report-{hour:03d}",
            "namespace": "batch",
            "labels": {"team": "analytics"},
            "annotations": {"kubetide.io/run-duration": "25m"},
        },
        "spec": {
            "parallelism": pods,
            "completions": pods,
            "template": {
                "metadata": {"labels": {"app.kubernetes.io/name": "report", "team": "analytics"}},
                "spec": {"restartPolicy": "Never", "containers": [_container("report", 500, 1024)]},
            },
        },
    }


def scenario(nodes: int, pods: int, hours: float, seed: int = 30) -> dict:
    rng = random.Random(seed)
    services = [(ns, i) for ns, (_, count, _, _) in NAMESPACES.items() for i in range(count)]
    # Uneven sizes (a few large services, many small), summing to about `pods`.
    weights = [rng.uniform(0.3, 3.0) for _ in services]
    total = sum(weights)
    phases = {svc: rng.uniform(-0.02, 0.02) for svc in services}
    amplitudes = {svc: rng.uniform(0.3, 0.5) for svc in services}

    def factor(svc: tuple[str, int], t: float) -> float:
        day = ((t + START) % 86400) / 86400
        return 1 + amplitudes[svc] * math.sin(2 * math.pi * (day - 0.25 + phases[svc]))

    # `base` is the daily mean; the replicas at t=0 sum to about `pods`.
    base = {
        svc: max(2, round(pods * w / total / factor(svc, 0)))
        for svc, w in zip(services, weights, strict=True)
    }
    objects: list[dict] = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns, "labels": {"team": team}}}
        for ns, (team, *_) in NAMESPACES.items()
    ]
    objects.append({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "batch"}})
    objects.append(_daemonset())
    objects.extend(_standalone_pods(4))
    refs = {}
    for svc in services:
        ref, objs = _service(rng, svc[0], svc[1], max(1, round(base[svc] * factor(svc, 0))))
        refs[svc] = ref
        objects.extend(objs)

    duration = hours * 3600
    events: list[dict] = []
    t = STEP
    while t < duration:
        for svc in services:
            replicas = max(1, round(base[svc] * factor(svc, t)))
            events.append({"at": f"{t:.0f}s", "scale": {**refs[svc], "replicas": replicas}})
        t += STEP
    for hour in range(0, int(hours), 2):
        events.append({"at": f"{hour * 3600 + 2400}s", "apply": [_batch(hour, max(10, pods // 40))]})
    events.sort(key=lambda e: float(e["at"].removesuffix("s")))
    per_zone = nodes // len(ZONES)
    groups = [
        {
            "name": zone,
            "minSize": max(1, per_zone // 10),
            "maxSize": per_zone * 3 // 2,
            "initialSize": per_zone,
            "price": 0.384,
            "provisioningDelay": {"min": "45s", "max": "120s"},
            "readyDelay": "25s",
            "template": {
                "metadata": {
                    "labels": {
                        "topology.kubernetes.io/zone": zone,
                        "node.kubernetes.io/instance-type": "m6i.2xlarge",
                        "kubernetes.io/os": "linux",
                    }
                },
                "status": {"allocatable": {"cpu": "7910m", "memory": "31Gi", "pods": "110"}},
            },
        }
        for zone in ZONES
    ]
    return {
        "apiVersion": "kubetide.io/v1alpha1",
        "kind": "Scenario",
        "metadata": {
            "name": f"zonal-day-{nodes}",
            "description": "two zonal groups, realistic metadata, a daily load curve",
        },
        "spec": {
            "duration": f"{duration:.0f}s",
            "seed": seed,
            "autoscaler": {"scan-interval": "10s"},
            "nodeGroups": groups,
            "objects": objects,
            "events": events,
        },
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.zonal_day", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--nodes", type=int, default=300)
    parser.add_argument("--pods", type=int, default=3000)
    parser.add_argument("--hours", type=float, default=6.0)
    parser.add_argument("--seed", type=int, default=30)
    args = parser.parse_args(argv)
    yaml.safe_dump(scenario(args.nodes, args.pods, args.hours, args.seed), sys.stdout, sort_keys=False)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
