"""Parallel drain headline (issue 7 item 6): `python -m benchmarks.bench_drain [--nodes N]
[--parallelism 1,10,50]`.

The parallel-drain design's motivating case, in the simulator with kubetide's autoscaler: a
1000-node cluster whose load drops so that about 300 non-empty nodes become removable, drained
with max-drain-parallelism 1, 10 and 50 (max-scale-down-parallelism follows it). Measured: the
time from the first node becoming unneeded (the first loop after the drop whose candidate set is
not empty) to the last removal, the nodes removed, and the simulator's invariants. Target: at
least 10x faster at 10 than at 1, every invariant zero in every run.

The cluster (scaled by --nodes): nodes of 4 CPUs / 16 GiB, a DaemonSet on each; 20 Deployments
of 250m-1 CPU pods filling about 75% of the cluster (2.9 of 3.9 CPUs per node), 16 of them behind PodDisruptionBudgets
(maxUnavailable 10%), graceful termination 30 s; two Deployments whose pods use an emptyDir
(local storage: their nodes are not removable) and one annotated safe-to-evict=false. At 10m
every Deployment drops to 65% of its replicas. The autoscaler runs every 10 s with CA's defaults
(no busy-node consolidation) except scale-down-utilization-threshold 0.6 (nodes end up around 55% used, so the
removable ones are the ones the others can absorb). The run goes on until nothing has been
removed for two scale-down-unneeded-times and no deletion is in progress.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.table import Table

from benchmarks.clusters import node_agent_daemonset
from kubetide.autoscaler.loop import Autoscaler
from kubetide.clock import work_timer
from kubetide.sim import Simulation
from kubetide.sim.spec.scenario import parse_scenario

NODES = 1000
PARALLELISM = (1, 10, 50)
TARGET_SPEEDUP = 10.0
DROP_AT = 600.0
DROP_TO = 0.65
MAX_UNAVAILABLE = "10%"
DEPLOYMENTS = 20
SHAPES = (("250m", "512Mi"), ("500m", "1Gi"), ("1", "2Gi"))
# CPU per node each shape of Deployment asks for at the start (2.9 of the 3.9 CPUs left after the
# DaemonSet), split evenly over the Deployments of that shape.
CPU_PER_NODE = (0.9, 1.0, 1.0)
GRACE = 30
CHUNK = 600.0  # simulate this much at a time while watching for the end


def _deployment(
    name: str, replicas: int, cpu: str, memory: str, *, pdb: str | None, extra: dict | None = None
):
    labels = {"app": name}
    spec: dict = {
        "terminationGracePeriodSeconds": GRACE,
        "containers": [{"name": "app", "resources": {"requests": {"cpu": cpu, "memory": memory}}}],
    }
    meta: dict = {"labels": labels}
    if extra:
        spec.update(extra.get("spec", {}))
        meta.update(extra.get("metadata", {}))
    objects = [
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": name, "namespace": "prod"},
            "spec": {
                "replicas": replicas,
                "selector": {"matchLabels": labels},
                "template": {"metadata": meta, "spec": spec},
            },
        }
    ]
    if pdb:
        objects.append(
            {
                "apiVersion": "policy/v1",
                "kind": "PodDisruptionBudget",
                "metadata": {"name": name, "namespace": "prod"},
                "spec": {"maxUnavailable": pdb, "selector": {"matchLabels": labels}},
            }
        )
    return objects


def workloads(nodes: int) -> list[tuple[str, int, str, str, bool, dict | None]]:
    """(name, replicas, cpu, memory, pdb, extra) per Deployment."""
    out = []
    counts = [sum(1 for i in range(DEPLOYMENTS) if i % 3 == s) for s in range(3)]
    for index in range(DEPLOYMENTS):
        shape = index % 3
        cpu, memory = SHAPES[shape]
        cores = float(cpu[:-1]) / 1000 if cpu.endswith("m") else float(cpu)
        replicas = max(1, round(nodes * CPU_PER_NODE[shape] / (counts[shape] * cores)))
        out.append((f"svc-{index:02d}", replicas, cpu, memory, index % 5 != 4, None))
    local = {"spec": {"volumes": [{"name": "scratch", "emptyDir": {}}]}}
    for index in range(2):
        out.append((f"cache-{index}", max(1, nodes // 20), "250m", "512Mi", False, local))
    pinned = {"metadata": {"annotations": {"cluster-autoscaler.kubernetes.io/safe-to-evict": "false"}}}
    out.append(("ledger", max(1, nodes // 40), "250m", "512Mi", True, pinned))
    return out


def scenario_data(
    nodes: int, parallelism: int, duration: float, max_unavailable: str = MAX_UNAVAILABLE
) -> dict:
    objects: list[dict] = [
        node_agent_daemonset(),
    ]
    events = []
    for name, replicas, cpu, memory, pdb, extra in workloads(nodes):
        objects.extend(
            _deployment(name, replicas, cpu, memory, pdb=max_unavailable if pdb else None, extra=extra)
        )
        if name.startswith("svc-"):
            events.append(
                {
                    "at": f"{DROP_AT:.0f}s",
                    "scale": {
                        "kind": "Deployment",
                        "namespace": "prod",
                        "name": name,
                        "replicas": round(replicas * DROP_TO),
                    },
                }
            )
    return {
        "apiVersion": "kubetide.io/v1alpha1",
        "kind": "Scenario",
        "metadata": {"name": f"bench-drain-{nodes}"},
        "spec": {
            "duration": f"{duration:.0f}s",
            "seed": 1,
            "autoscaler": {
                "scan-interval": "10s",
                "scale-down-utilization-threshold": 0.6,
                "max-drain-parallelism": parallelism,
                "max-scale-down-parallelism": parallelism,
                # The removals CA's rule makes, drained in parallel or not: kubetide's busy-node
                # consolidation would add removals of its own to the waves compared.
                "consolidate-busy-nodes": False,
            },
            "nodeGroups": [
                {
                    "name": "general",
                    "minSize": max(1, nodes // 10),
                    "maxSize": nodes,
                    "initialSize": nodes,
                    "price": 0.19,
                    "deletionDelay": "30s",
                    "template": {"status": {"allocatable": {"cpu": "4", "memory": "16Gi", "pods": "110"}}},
                }
            ],
            "objects": objects,
            "events": events,
        },
    }


@dataclass
class DrainRun:
    parallelism: int
    nodes: int
    first_unneeded: float | None  # seconds since the start
    first_removal: float | None
    last_removal: float | None
    removed: int
    drained: int
    empty: int
    max_concurrent_drains: int
    evictions: int
    evictions_refused: int
    invariants: dict
    simulated: float
    wall: float
    removals: list[tuple[float, int]]  # (time, nodes) per DeleteNodes call

    def waves(self, gap: float = 120.0) -> list[tuple[float, float, int]]:
        """Removals grouped into waves separated by more than `gap` seconds: (start, end, nodes)."""
        out: list[list] = []
        for at, count in self.removals:
            if out and at - out[-1][1] <= gap:
                out[-1][1] = at
                out[-1][2] += count
            else:
                out.append([at, at, count])
        return [(a, b, n) for a, b, n in out]

    @property
    def seconds(self) -> float | None:
        """First node unneeded -> last removal."""
        if self.first_unneeded is None or self.last_removal is None:
            return None
        return self.last_removal - self.first_unneeded


def run(
    nodes: int, parallelism: int, *, max_hours: float = 24.0, max_unavailable: str = MAX_UNAVAILABLE
) -> DrainRun:
    """Simulate until the scale-down is over (or `max_hours`); return the measurements."""
    data = scenario_data(nodes, parallelism, max_hours * 3600, max_unavailable)
    scenario = parse_scenario(data, "bench_drain.py", Path("."))
    first_unneeded: list[float] = []
    holder: dict = {}

    def factory(options, clock, view, actions, cloud):
        inner = Autoscaler(options, clock, view, actions, cloud, seed=scenario.seed, timer=work_timer())
        holder["autoscaler"] = inner

        class Watched:
            def run_once(self):
                result = inner.run_once()
                now = clock.now() - start[0]
                if not first_unneeded and now >= DROP_AT and inner.planner.unneeded_since:
                    first_unneeded.append(now)
                return result

            def __getattr__(self, attribute):
                # summary(), and the deletions driven between loops (next_wakeup, drive_deletions)
                return getattr(inner, attribute)

        return Watched()

    start = [0.0]
    sim = Simulation(scenario, autoscaler_factory=factory, autoscaler_name="kubetide")
    started = time.perf_counter()
    sim.setup()
    start[0] = sim.engine.start
    quiet = 2 * scenario.options.scale_down_unneeded_time
    end = sim.engine.start + scenario.duration
    while sim.engine.now() < end:
        sim.engine.run_until(min(end, sim.engine.now() + CHUNK))
        c = sim.metrics.c
        elapsed = sim.engine.now() - sim.engine.start
        last = c.last_removal_at if c.last_removal_at is not None else DROP_AT
        busy = bool(holder["autoscaler"].actuator.deletions) or any(
            g.deleting for g in sim.cloud.groups.values()
        )
        if elapsed > DROP_AT + quiet and elapsed - last > quiet and not busy:
            break
    sim.scheduler.close()
    wall = time.perf_counter() - started
    c = sim.metrics.c
    return DrainRun(
        parallelism=parallelism,
        nodes=nodes,
        first_unneeded=first_unneeded[0] if first_unneeded else None,
        first_removal=c.first_removal_at,
        last_removal=c.last_removal_at,
        removed=c.nodes_removed,
        drained=c.drained_removed,
        empty=c.empty_removed,
        max_concurrent_drains=c.max_concurrent_drains,
        evictions=c.evictions,
        evictions_refused=c.evictions_refused,
        invariants={
            "pdb_violations": c.pdb_violations,
            "pods_lost": c.pods_lost,
            "nodes_deleted_with_pods": c.nodes_deleted_with_pods,
        },
        simulated=sim.engine.now() - sim.engine.start,
        wall=wall,
        removals=[
            (e["time"], e["message"].split(";")[0].count(",") + 1)
            for e in sim.log.entries
            if e["reason"] == "DeleteNodes"
        ],
    )


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    seconds = round(seconds)
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}h{minutes:02d}m{secs:02d}s" if hours else f"{minutes}m{secs:02d}s"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.bench_drain", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--nodes", type=int, default=NODES, help=f"cluster size (default {NODES})")
    parser.add_argument(
        "--parallelism",
        default=",".join(map(str, PARALLELISM)),
        help="comma-separated max-drain-parallelism values (default 1,10,50)",
    )
    args = parser.parse_args(argv)
    values = [int(v) for v in args.parallelism.split(",") if v]
    console = Console(highlight=False, width=150)
    runs = []
    for parallelism in values:
        runs.append(run(args.nodes, parallelism))
        r = runs[-1]
        console.print(
            f"parallelism {parallelism}: {_duration(r.seconds)}, {r.removed} removed, wall {r.wall:.1f} s"
        )
    table = Table(
        title=f"parallel drain: {args.nodes} nodes, load drops to {DROP_TO:.0%} at {DROP_AT:g}s", box=None
    )
    for column in (
        "max-drain-parallelism",
        "unneeded -> last removal",
        "first removal -> last",
        "removed (drained/empty)",
        "max concurrent drains",
        "evictions (refused)",
        "invariants",
        "wall",
    ):
        table.add_column(column, justify="right")
    for r in runs:
        table.add_row(
            str(r.parallelism),
            _duration(r.seconds),
            _duration(None if r.first_removal is None else r.last_removal - r.first_removal),
            f"{r.removed} ({r.drained}/{r.empty})",
            str(r.max_concurrent_drains),
            f"{r.evictions} ({r.evictions_refused})",
            "zero" if not any(r.invariants.values()) else str(r.invariants),
            f"{r.wall:.1f} s",
        )
    console.print(table)
    for r in runs:
        waves = ", ".join(
            f"{_duration(a)}-{_duration(b)}: {n}" if b > a else f"{_duration(a)}: {n}"
            for a, b, n in r.waves()
        )
        console.print(f"removal waves at {r.parallelism} (time since start: nodes): {waves}")
    by = {r.parallelism: r for r in runs}
    if 1 in by and 10 in by and by[1].seconds and by[10].seconds:
        speedup = by[1].seconds / by[10].seconds
        clean = all(not any(r.invariants.values()) for r in runs)
        verdict = "met" if speedup >= TARGET_SPEEDUP and clean else "MISSED"
        console.print(
            f"speed-up 10 vs 1: {speedup:.1f}x (target {TARGET_SPEEDUP:g}x, invariants zero: {clean}): {verdict}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
