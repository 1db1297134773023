"""PodDisruptionBudget-paced scale-down (issue 24): `python -m benchmarks.bench_pdb_drain`.

Two measurements, in the simulator with kubetide's autoscaler:

1. Time from the load drop to the last node removal when every drain is paced by a
   `maxUnavailable: 1` budget: examples/pdb-paced-drain.yaml (30 nodes, 90 replicas of 1 CPU scaled
   to 30) and the same cluster ten times larger (300 nodes). Targets: 20 and 60 simulated minutes.
   The lower bound the budget allows is printed beside it: scale-down-unneeded-time, then the
   budget's one disruption at a time (each drained pod waits for the previous replacement to be
   Ready, about `wave` seconds), so at least unneeded time + (pods drained - 1) x wave.
2. The drain-time estimate `plan` gives (estimate.py) against what the simulator then does: for
   every drain, the estimate the planner made in the loop that started it, and the time from its
   ToBeDeleted taint to the moment its last evicted pod was gone. Target: within 25% for 90% of
   drains. Scenarios: the two above, a node of two pods of a maxUnavailable 1 budget (risky, two
   waves) and examples/nightly-scale-down.yaml (budgets of 5%, StatefulSets, local storage).
"""

from __future__ import annotations

import argparse
import copy
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from benchmarks.drain_watch import Drain, DrainWatch, run_watched
from kubetide.sim import Simulation
from kubetide.sim.spec.scenario import parse_scenario

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
DROP_AT = 20 * 60.0  # the pdb-paced-drain example's load drop
TARGETS = {"pdb-paced-drain": 20 * 60.0, "pdb-paced-drain-300": 60 * 60.0}


@dataclass
class Run:
    name: str
    removed: int = 0
    last_removal: float | None = None
    pdb_violations: int = 0
    drains: list[Drain] = field(default_factory=list)
    pods_drained: int = 0
    cpu: float = 0.0


def simulate(name: str, data: dict) -> Run:
    scenario = parse_scenario(data, f"{name}.yaml", EXAMPLES)
    sim = Simulation(scenario, autoscaler_name="kubetide")
    watch = DrainWatch(sim)
    started = time.process_time()
    run_watched(sim, watch)
    c = sim.metrics.c
    last = None if c.last_removal_at is None else c.last_removal_at
    drains = list(watch.drains.values())
    return Run(
        name,
        removed=c.nodes_removed,
        last_removal=last,
        pdb_violations=c.pdb_violations,
        drains=drains,
        pods_drained=c.evictions,
        cpu=time.process_time() - started,
    )


def scenarios(nightly: bool) -> dict[str, dict]:
    base = yaml.safe_load((EXAMPLES / "pdb-paced-drain.yaml").read_text())
    large = copy.deepcopy(base)
    large["metadata"]["name"] = "pdb-paced-drain-300"
    large["spec"]["duration"] = "4h"
    large["spec"]["nodeGroups"][0].update(initialSize=300, maxSize=600)
    large["spec"]["objects"][0]["spec"]["replicas"] = 900
    large["spec"]["events"][0]["scale"]["replicas"] = 300
    pair = copy.deepcopy(base)
    pair["metadata"]["name"] = "two-pods-per-node"
    pair["spec"]["nodeGroups"][0]["initialSize"] = 8
    api = pair["spec"]["objects"][0]["spec"]
    api["replicas"] = 16
    api["template"]["spec"]["containers"][0]["resources"]["requests"] = {"cpu": "300m", "memory": "1Gi"}
    pair["spec"]["events"] = []
    chosen = {"pdb-paced-drain": base, "pdb-paced-drain-300": large, "two-pods-per-node": pair}
    if nightly:
        chosen["nightly-scale-down"] = yaml.safe_load((EXAMPLES / "nightly-scale-down.yaml").read_text())
    return chosen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-nightly", action="store_true", help="leave out the 120-node nightly example")
    args = parser.parse_args()
    errors: list[float] = []
    for name, data in scenarios(not args.no_nightly).items():
        run = simulate(name, data)
        drop = DROP_AT if name.startswith("pdb-paced") else 0.0
        after = None if run.last_removal is None else (run.last_removal - drop) / 60
        wave = statistics.median([d.actual for d in run.drains if d.actual is not None] or [0.0])
        target = TARGETS.get(name)
        line = (
            f"{name}: {run.removed} nodes removed, last {after:.1f} min after the drop"
            if after is not None
            else f"{name}: nothing removed"
        )
        if target is not None:
            line += f" (target {target / 60:.0f} min)"
        print(line)
        if name.startswith("pdb-paced") and run.drains:
            unneeded = float(data["spec"]["autoscaler"]["scale-down-unneeded-time"].rstrip("m")) * 60
            bound = unneeded + (len(run.drains) - 1) * wave
            print(
                f"  lower bound the budget allows: about {bound / 60:.1f} min "
                f"({len(run.drains)} drains one at a time, median drain {wave:.0f} s)"
            )
        print(f"  pdb violations {run.pdb_violations}, cpu {run.cpu:.1f} s")
        measured = [(d.estimate, d.actual) for d in run.drains if d.estimate and d.actual]
        rel = [abs(e - a) / a for e, a in measured]
        errors += rel
        if rel:
            within = sum(1 for r in rel if r <= 0.25) / len(rel)
            print(
                f"  drain estimates: {len(rel)} drains, median |error| {statistics.median(rel):.0%},"
                f" within 25%: {within:.0%}, worst {max(rel):.0%}"
            )
    if errors:
        within = sum(1 for r in errors if r <= 0.25) / len(errors)
        deciles = statistics.quantiles(errors, n=10) if len(errors) > 1 else errors
        print(
            f"all drains: {len(errors)}, within 25%: {within:.0%} (target 90%),"
            f" median |error| {statistics.median(errors):.0%}, 90th percentile {deciles[-1]:.0%}"
        )


if __name__ == "__main__":
    main()
