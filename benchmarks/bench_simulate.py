"""Simulator benchmark: `python -m benchmarks.bench_simulate [--hours H] [--profile]`.

A 1000-node, ~30 000-pod cluster simulated for 24 h with the autoscaler running every 10 s
(8 640 loops). Target: at least 1000x real time, i.e. 24 h in under 90 s on the project machine.

The cluster: one node group of 16-cpu/64 GiB nodes (1000 at the start, up to 1400), a DaemonSet
on every node, 20 Deployments of 1 400 pods each behind PodDisruptionBudgets, whose replicas follow
a daily curve (every 15 minutes each moves by a few percent, peaking mid-day at +15%), an hourly
batch Job of 300 pods that runs 20 minutes, and two node failures (NotReady for 10 minutes and for
good). The autoscaler is kubetide's own (kubetide.autoscaler.loop).
The figure is wall time for `Simulation.run()` (set-up at t=0 included), one run; `--profile` adds
a cProfile listing of what dominates.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import math
import pstats
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from benchmarks.clusters import node_agent_daemonset
from kubetide.sim import Simulation
from kubetide.sim.scenario import parse_scenario

TARGET_SECONDS_PER_DAY = 90.0
NODES = 1000
DEPLOYMENTS = 20
REPLICAS = 1400


def _deployment(index: int) -> list[dict]:
    name = f"svc-{index:02d}"
    labels = {"app": name}
    cpu = ("250m", "500m", "750m")[index % 3]
    memory = ("512Mi", "1Gi", "2Gi")[index % 3]
    return [
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": name, "namespace": "prod"},
            "spec": {
                "replicas": REPLICAS,
                "selector": {"matchLabels": labels},
                "template": {
                    "metadata": {"labels": labels},
                    "spec": {
                        "terminationGracePeriodSeconds": 30,
                        "containers": [
                            {"name": "app", "resources": {"requests": {"cpu": cpu, "memory": memory}}}
                        ],
                    },
                },
            },
        },
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": name, "namespace": "prod"},
            "spec": {"maxUnavailable": "10%", "selector": {"matchLabels": labels}},
        },
    ]


def scenario_data(hours: float) -> dict:
    objects: list[dict] = [
        node_agent_daemonset(),
    ]
    for index in range(DEPLOYMENTS):
        objects.extend(_deployment(index))

    events: list[dict] = []
    duration = hours * 3600
    step = 15 * 60
    t = step
    while t < duration:
        day = (t % 86400) / 86400
        factor = 1 + 0.15 * math.sin(2 * math.pi * (day - 0.25))  # +15% at noon, -15% at midnight
        for index in range(DEPLOYMENTS):
            if (t // step + index) % 4 == 0:  # each Deployment moves every hour, staggered
                events.append(
                    {
                        "at": f"{t:.0f}s",
                        "scale": {
                            "kind": "Deployment",
                            "namespace": "prod",
                            "name": f"svc-{index:02d}",
                            "replicas": round(REPLICAS * factor),
                        },
                    }
                )
        t += step
    for hour in range(int(hours)):
        events.append(
            {
                "at": f"{hour * 3600 + 1800}s",
                "apply": [
                    {
                        "apiVersion": "batch/v1",
                        "kind": "Job",
                        "metadata": {
                            "name": f"batch-{hour:02d}",
                            "namespace": "batch",
                            "annotations": {"kubetide.io/run-duration": "20m"},
                        },
                        "spec": {
                            "parallelism": 300,
                            "completions": 300,
                            "template": {
                                "metadata": {"labels": {"app": "batch"}},
                                "spec": {
                                    "restartPolicy": "Never",
                                    "containers": [
                                        {
                                            "name": "b",
                                            "resources": {"requests": {"cpu": "1", "memory": "2Gi"}},
                                        }
                                    ],
                                },
                            },
                        },
                    }
                ],
            }
        )
    if duration > 7 * 3600:
        events.append(
            {
                "at": "3h",
                "fault": {"type": "nodeNotReady", "nodeGroup": "general", "count": 5, "duration": "10m"},
            }
        )
        events.append({"at": "7h", "fault": {"type": "nodeNotReady", "nodeGroup": "general", "count": 2}})
    events.sort(key=lambda e: float(e["at"].rstrip("sh")) * (3600 if e["at"].endswith("h") else 1))
    return {
        "apiVersion": "kubetide.io/v1alpha1",
        "kind": "Scenario",
        "metadata": {"name": "bench-1000-nodes"},
        "spec": {
            "duration": f"{duration:.0f}s",
            "seed": 1,
            "autoscaler": {"scan-interval": "10s"},
            "nodeGroups": [
                {
                    "name": "general",
                    "minSize": 100,
                    "maxSize": 1400,
                    "initialSize": NODES,
                    "price": 0.77,
                    "provisioningDelay": {"min": "60s", "max": "150s"},
                    "readyDelay": "20s",
                    "template": {"status": {"allocatable": {"cpu": "16", "memory": "64Gi", "pods": "110"}}},
                }
            ],
            "objects": objects,
            "events": events,
        },
    }


def run(hours: float, profile: bool) -> tuple[dict, str, str]:
    scenario = parse_scenario(scenario_data(hours), "bench_simulate.py", Path("."))
    simulation = Simulation(scenario)
    name = simulation.autoscaler_name
    profiler = cProfile.Profile() if profile else None
    started = time.perf_counter()
    if profiler is not None:
        profiler.enable()
    result = simulation.run()
    if profiler is not None:
        profiler.disable()
    wall = time.perf_counter() - started
    listing = ""
    if profiler is not None:
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(25)
        listing = out.getvalue()
    summary = dict(result.summary)
    summary["wall_seconds"] = round(wall, 2)
    summary["autoscaler_seconds"] = round(simulation.autoscaler_seconds, 2)
    return summary, name, listing


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.bench_simulate", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--hours", type=float, default=24.0, help="simulated hours (default 24)")
    parser.add_argument("--profile", action="store_true", help="print a cProfile listing (slows the run)")
    args = parser.parse_args(argv)
    summary, name, listing = run(args.hours, args.profile)
    console = Console(highlight=False)
    wall = summary["wall_seconds"]
    per_day = wall * 24 / args.hours
    table = Table(title=f"kubetide simulate: {NODES} nodes, {args.hours:g} h simulated", box=None)
    table.add_column("")
    table.add_column("", justify="right")
    table.add_row("autoscaler", name)
    table.add_row("autoscaler loops", f"{summary['autoscaler_loops']:,}")
    table.add_row("pods running at end", f"{summary['pods']['running_at_end']:,}")
    table.add_row("pods created", f"{summary['pods']['created']:,}")
    table.add_row("scheduler bindings", f"{summary['scheduler']['bindings']:,}")
    table.add_row(
        "nodes initial/peak/final",
        f"{summary['nodes']['initial']}/{summary['nodes']['peak']}/{summary['nodes']['final']}",
    )
    table.add_row("wall time", f"{wall:.1f} s" + (" (profiled)" if args.profile else ""))
    table.add_row("of which in the autoscaler", f"{summary['autoscaler_seconds']:.1f} s")
    table.add_row("speed", f"{summary['simulated_seconds'] / wall:,.0f}x real time")
    if args.hours >= 24:
        verdict = "met" if per_day <= TARGET_SECONDS_PER_DAY else "missed"
        table.add_row("per 24 h", f"{per_day:.1f} s (target {TARGET_SECONDS_PER_DAY:.0f} s: {verdict})")
    else:
        table.add_row("per 24 h", "run --hours 24 for the target (set-up at t=0 dominates short runs)")
    console.print(table)
    if listing:
        console.print(listing)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
