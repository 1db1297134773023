"""Scenarios at the simulator's limits (issue 36), for measuring them with `/usr/bin/time -v`.

`python -m benchmarks.limit_scenarios KIND [N] > scenario.yaml`, KIND one of:

- `restarts N`: one Deployment of 10 pods restarted (`kubectl rollout restart`) N times, every
  120 s, each rollout done before the next; the run ends 10 minutes after the last.
- `pods`: one Deployment scaled to the pods and replicas limits at 1 minute, on one node group
  (16 cpu, 110 pods a node) up to the nodes limit; 30 minutes.
- `all`: every size limit at once for 30 minutes: the node-groups limit (5 nodes each at the
  start: the nodes limit), the pods limit (a Deployment that fills the nodes to 94%) and the
  events limit (scale events 0.174 s apart on a second Deployment).
- `recorded`: what a run records at its limits: the node-groups limit of groups, a timeline just
  under the timeline-cells limit (3 h 26 min at 10 s loops), and 395 pods no node group can take,
  each a NotTriggerScaleUp at every loop (just under the recorded-events limit).
"""

from __future__ import annotations

import argparse
import sys

import yaml

from kubetide.sim.spec.limits import DEFAULT_LIMITS, timeline_columns

SCAN_INTERVAL = 10


def _group(name: str, max_size: int, initial: int) -> dict:
    return {
        "name": name,
        "maxSize": max_size,
        "initialSize": initial,
        "price": 0.5,
        "template": {"status": {"allocatable": {"cpu": "16", "memory": "64Gi", "pods": "110"}}},
    }


def _deployment(name: str, replicas: int, cpu: str = "100m") -> dict:
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]},
            },
        },
    }


def _scenario(name: str, seconds: float, groups: list[dict], objects: list[dict], events: list[dict]) -> dict:
    return {
        "apiVersion": "kubetide.io/v1alpha1",
        "kind": "Scenario",
        "metadata": {"name": name},
        "spec": {
            "duration": f"{seconds:g}s",
            "autoscaler": {"scan-interval": f"{SCAN_INTERVAL}s"},
            "nodeGroups": groups,
            "objects": objects,
            "events": events,
        },
    }


def restarts(count: int) -> dict:
    events = [{"at": f"{60 + 120 * i}s", "restart": {"name": "web"}} for i in range(count)]
    return _scenario(
        f"restarts-{count}", 60 + 120 * count + 600, [_group("g", 20, 2)], [_deployment("web", 10)], events
    )


def pods() -> dict:
    limits = DEFAULT_LIMITS
    events = [{"at": "1m", "scale": {"kind": "Deployment", "name": "web", "replicas": limits.pods}}]
    return _scenario("pods-limit", 1800, [_group("g", limits.nodes, 1)], [_deployment("web", 1)], events)


def all_limits() -> dict:
    limits = DEFAULT_LIMITS
    per_group = limits.nodes // limits.node_groups
    groups = [_group(f"g{i}", per_group, per_group) for i in range(limits.node_groups)]
    objects = [_deployment("web", limits.pods - 2, cpu="1500m"), _deployment("tick", 1, cpu="10m")]
    events = [
        {
            "at": f"{60 + i * 0.174:.2f}s",
            "scale": {"kind": "Deployment", "name": "tick", "replicas": 1 + i % 2},
        }
        for i in range(limits.events)
    ]
    return _scenario("all-limits", 1800, groups, objects, events)


def recorded() -> dict:
    limits = DEFAULT_LIMITS
    loops = limits.timeline_cells // timeline_columns(limits.node_groups)
    groups = [_group(f"g{i}", 5, 0) for i in range(limits.node_groups)]
    # 395 pods: at most 490,195 NotTriggerScaleUp (one each a loop), the rest for the run's others
    unfit = 395
    objects = [_deployment("web", 1000), _deployment("huge", unfit, cpu="100")]
    return _scenario("recorded-limits", (loops - 1) * SCAN_INTERVAL, groups, objects, [])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.limit_scenarios", description=__doc__.splitlines()[0]
    )
    parser.add_argument("kind", choices=("restarts", "pods", "all", "recorded"))
    parser.add_argument("count", type=int, nargs="?", default=1000, help="restarts (default 1000)")
    args = parser.parse_args(argv)
    builders = {
        "restarts": lambda: restarts(args.count),
        "pods": pods,
        "all": all_limits,
        "recorded": recorded,
    }
    yaml.safe_dump(builders[args.kind](), sys.stdout, sort_keys=False)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
