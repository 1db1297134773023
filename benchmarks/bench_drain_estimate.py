"""Drain time you can plan on (issue 37 item 5): `python -m benchmarks.bench_drain_estimate`.

The PodDisruptionBudget-paced scale-down of examples/pdb-paced-drain.yaml (30 nodes, 90 replicas
of 1 CPU scaled to 30 behind a maxUnavailable 1 budget; the replicas past 30 started at 1m so that
their readiness history is real) with slow pod starts: the cluster's
podStartupDelay drawn from 15-30 s, 30-60 s and 45-90 s, three seeds each (about 13 drains a run,
100+ in all). Two errors of the schedule on paper (estimate.schedule_drains) against what the
simulator then does:

1. per drain: the estimated_drain_seconds of the loop that started it, against the time from its
   ToBeDeleted taint to its last evicted pod gone;
2. per scale-down: estimated_seconds_to_last_removal of the first loop that plans the scale-down
   (its candidates and the nodes waiting for budget), against the time from that loop to the last
   drained node empty.

Reported: |error| / actual at the median, the 90th percentile and the worst, and the CPU seconds.
"""

from __future__ import annotations

import copy
import statistics
import time
from pathlib import Path

import yaml

from benchmarks.drain_watch import DrainWatch, run_watched
from kubetide.autoscaler.scaledown.planning import ScaleDownPlan
from kubetide.sim import Simulation
from kubetide.sim.spec.scenario import parse_scenario

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
STARTS = (("15s", "30s"), ("30s", "60s"), ("45s", "90s"))
SEEDS = (3, 11, 17)
DROP_AT = 20 * 60.0  # the example's load drop


class Watch(DrainWatch):
    """Each drain's estimate on the schedule when it starts and the moment its node is empty; the
    first plan's total."""

    def __init__(self, sim: Simulation):
        super().__init__(sim)
        self.planned_at: float | None = None
        self.planned_total: float | None = None

    def observe(self, plan: ScaleDownPlan) -> bool:
        schedule = plan.schedule
        if schedule is None:
            return False
        after_drop = plan.now >= self.sim.engine.start + DROP_AT
        if (
            after_drop
            and self.planned_at is None
            and any(not plan.nodes[n].empty for n in schedule.drains if n in plan.nodes)
        ):
            self.planned_at, self.planned_total = plan.now, schedule.seconds_to_last_removal
        return True

    def estimate(self, plan: ScaleDownPlan, name: str) -> float | None:
        assert plan.schedule is not None  # observed first
        scheduled = plan.schedule.drains.get(name)
        return scheduled.seconds if scheduled else None


def run(data: dict) -> Watch:
    scenario = parse_scenario(data, "bench-drain-estimate.yaml", EXAMPLES)
    sim = Simulation(scenario, autoscaler_name="kubetide")
    watch = Watch(sim)
    run_watched(sim, watch)
    return watch


def distribution(errors: list[float]) -> str:
    p90 = statistics.quantiles(errors, n=10)[-1] if len(errors) > 1 else errors[0]
    return f"median {statistics.median(errors):.0%}, p90 {p90:.0%}, worst {max(errors):.0%}"


def main() -> None:
    base = yaml.safe_load((EXAMPLES / "pdb-paced-drain.yaml").read_text())
    per_drain: list[float] = []
    totals: list[float] = []
    unestimated = 0
    started = time.process_time()
    for low, high in STARTS:
        for seed in SEEDS:
            data = copy.deepcopy(base)
            spec = data["spec"]
            spec.pop("compare", None)
            spec.update(seed=seed, duration="90m", cluster={"podStartupDelay": {"min": low, "max": high}})
            # Pods of the cluster's t=0 start at once: the service grows to its 90 replicas at 1m
            # instead, so that their readiness history shows the slow starts.
            spec["objects"][0]["spec"]["replicas"] = 30
            spec["events"].insert(0, {"at": "1m", "scale": {**spec["events"][0]["scale"], "replicas": 90}})
            watch = run(data)
            done = [d for d in watch.drains.values() if d.empty_at is not None]
            unestimated += sum(1 for d in done if d.estimate is None)
            errors = [
                abs(d.estimate - a) / a for d in done if d.estimate and (a := d.empty_at - d.tainted_at) > 0
            ]
            per_drain += errors
            last = max((d.empty_at for d in done), default=None)
            line = f"starts {low}-{high}, seed {seed}: {len(done)} drains"
            if errors:
                line += f", per drain {distribution(errors)}"
            if watch.planned_at is not None and watch.planned_total and last is not None:
                actual = last - watch.planned_at
                totals.append(abs(watch.planned_total - actual) / actual)
                line += f"; whole scale-down estimated {watch.planned_total:.0f} s, took {actual:.0f} s"
            print(line)
    print(
        f"per drain ({len(per_drain)} drains, {unestimated} without an estimate): {distribution(per_drain)}"
    )
    print(f"whole scale-down ({len(totals)} runs): {distribution(totals)}")
    print(f"cpu {time.process_time() - started:.1f} s")


if __name__ == "__main__":
    main()
