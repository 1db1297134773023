"""Sweep benchmark: `python -m benchmarks.bench_sweep [--runs N] [--engines serial,local,dask]`.

A sweep of a 100-node cluster (10 Deployments of 280 pods behind PDBs on 16-cpu nodes, 3 h: the
load rises 30% at 30 min and falls 40% below the start at 1h30m) over 2 x 2 settings of
scale-down-unneeded-time and expander, N/4 seeds each (default N = 200). The same runs on one
process (in-process, no pool), on the local process pool over every core, and on a Dask
LocalCluster with a worker per core. Per engine: wall time, speed-up over one process, and the
engine's overhead per run: wall x workers minus the simulations' own time, over the runs.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from kubetide.cli.sweep import run_sweep
from kubetide.sim.spec.scenario import parse_scenario
from kubetide.sweep.engines import DaskEngine, LocalEngine
from kubetide.sweep.grid import build_settings, scenario_setting
from kubetide.sweep.results import RunStore

DEPLOYMENTS = 10
REPLICAS = 280
GRID = {"scale-down-unneeded-time": ["5m", "10m"], "expander": ["least-waste", "random"]}


def scenario_data() -> dict:
    objects: list[dict] = []
    events: list[dict] = []
    for index in range(DEPLOYMENTS):
        name = f"svc-{index}"
        labels = {"app": name}
        cpu = ("250m", "500m", "750m")[index % 3]
        objects.append(
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
                            "containers": [
                                {"name": "app", "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}}}
                            ]
                        },
                    },
                },
            }
        )
        objects.append(
            {
                "apiVersion": "policy/v1",
                "kind": "PodDisruptionBudget",
                "metadata": {"name": name, "namespace": "prod"},
                "spec": {"maxUnavailable": "10%", "selector": {"matchLabels": labels}},
            }
        )
        for at, factor in (("30m", 1.3), ("1h30m", 0.6)):
            replicas = round(REPLICAS * factor)
            events.append(
                {
                    "at": at,
                    "scale": {"kind": "Deployment", "namespace": "prod", "name": name, "replicas": replicas},
                }
            )
    return {
        "apiVersion": "kubetide.io/v1alpha1",
        "kind": "Scenario",
        "metadata": {"name": "bench-sweep-100-nodes"},
        "spec": {
            "duration": "3h",
            "seed": 1,
            "autoscaler": {
                "scan-interval": "10s",
                "scale-down-unneeded-time": "10m",
                "expander": "least-waste",
            },
            "nodeGroups": [
                {
                    "name": "general",
                    "minSize": 10,
                    "maxSize": 200,
                    "initialSize": 100,
                    "price": 0.77,
                    "provisioningDelay": {"min": "60s", "max": "150s"},
                    "readyDelay": "20s",
                    "template": {"status": {"allocatable": {"cpu": "16", "memory": "64Gi", "pods": "110"}}},
                }
            ],
            "objects": objects,
            "events": sorted(events, key=lambda e: e["at"] != "30m"),
        },
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.bench_sweep", description=__doc__.splitlines()[0]
    )
    parser.add_argument(
        "--runs", type=int, default=200, help="runs per engine (a multiple of 4; default 200)"
    )
    parser.add_argument("--engines", default="serial,local,dask", help="which engines, in order")
    args = parser.parse_args(argv)
    scenario = parse_scenario(scenario_data(), "bench_sweep.py", Path("."))
    settings, own = scenario_setting(build_settings(GRID, scenario.options), scenario.options)
    seeds = list(range(1, max(1, args.runs // len(settings)) + 1))
    cores = os.cpu_count() or 1
    engines = {"serial": LocalEngine(1), "local": LocalEngine(cores), "dask": DaskEngine(workers=cores)}
    console = Console(highlight=False)
    console.print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}; {cores} cores")
    table = Table("engine", "workers", "runs", "wall (s)", "speed-up", "mean run (s)", "overhead per run")
    serial_wall = None
    for name in args.engines.split(","):
        engine = engines[name]
        with tempfile.TemporaryDirectory() as out:
            started = time.perf_counter()
            sweep = run_sweep(scenario, GRID, settings, own, seeds, RunStore(Path(out)), engine)
            wall = time.perf_counter() - started
        timing = sweep["timing"]
        runs = timing["runs"]
        mean_run = timing["run_seconds"] / runs
        overhead = (wall * engine.workers - timing["run_seconds"]) / runs
        serial_wall = serial_wall or (wall if name == "serial" else None)
        speedup = f"{serial_wall / wall:.2f}x" if serial_wall else "-"
        table.add_row(
            name,
            str(engine.workers),
            str(runs),
            f"{wall:.1f}",
            speedup,
            f"{mean_run:.2f}",
            f"{overhead:.3f} s ({100 * overhead / mean_run:.1f}%)",
        )
        console.print(f"{name}: done; load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    console.print(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
