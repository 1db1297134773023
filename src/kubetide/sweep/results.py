"""A sweep's runs on disk, and what is decided from them: per-setting spreads, the settings better
than the scenario's own everywhere (the Pareto front is front.py's).

Each run's summary.json is stored as runs/<setting id>/seed-<n>/summary.json, or
runs/<setting id>/trace-<trace id>/seed-<n>/summary.json on a --trace alternative (written to a
temporary name and renamed, so an interrupted sweep never leaves half a file), and a run already
stored is not run again. The aggregates read only the stored summaries, so they are the same
whichever engine produced them.
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from kubetide.errors import UserError
from kubetide.sweep.engines import Outcome, Task
from kubetide.sweep.grid import Setting

# (key, heading): lower is better for every one of them.
METRICS = (
    ("cost", "cost ($)"),
    ("node_hours", "node-hours"),
    ("pending_pod_seconds", "pending pod-s"),
    ("max_pending", "max pending"),
    ("evictions", "evictions"),
    ("drain_makespan", "drain makespan (s)"),
    ("below_pdb_minimum_seconds", "below PDB minimum (s)"),  # the disruption ledger's totals
    ("below_desired_pod_seconds", "below desired pod-s"),
)
FINGERPRINT_FILE = "scenario.sha256"


def run_metrics(summary: Mapping[str, Any]) -> dict[str, float]:
    """The compared figures of one run, the disruption ledger's totals among them (runtime/ledger.py).
    summary.json has no drain makespan: it is derived as the
    time from the first to the last node removal (0 when fewer than two nodes were removed)."""
    down = summary["scale_down"]
    first, last = down["first_removal_at"], down["last_removal_at"]
    return {
        "cost": summary["cost"],
        "node_hours": summary["node_hours"],
        "pending_pod_seconds": summary["pods"]["pending_pod_seconds"],
        "max_pending": summary["pods"]["max_pending"],
        "evictions": summary["evictions"],
        "drain_makespan": 0.0 if first is None or last is None else round(last - first, 3),
        "below_pdb_minimum_seconds": summary["disruption"]["below_pdb_minimum_seconds"],
        "below_desired_pod_seconds": summary["disruption"]["below_desired_pod_seconds"],
    }


class RunStore:
    def __init__(self, out_dir: Path):
        self.out_dir = out_dir

    def claim(self, fingerprint: str) -> None:
        """Refuse an --out that holds a sweep of another scenario (its runs would be reused)."""
        self.out_dir.mkdir(parents=True, exist_ok=True)
        path = self.out_dir / FINGERPRINT_FILE
        if path.exists() and path.read_text(encoding="utf-8").strip() != fingerprint:
            raise UserError(
                f"--out {self.out_dir}: holds a sweep of another scenario or --duration; choose another --out"
            )
        path.write_text(fingerprint + "\n", encoding="utf-8")

    def path(self, task: Task) -> Path:
        setting_dir = self.out_dir / "runs" / task.setting.id
        if task.trace:
            setting_dir = setting_dir / f"trace-{task.trace}"
        return setting_dir / f"seed-{task.seed}" / "summary.json"

    def load(self, task: Task) -> dict[str, Any] | None:
        path = self.path(task)
        if not path.exists():
            return None
        summary: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
        # A run stored by a kubetide without the disruption ledger is run again, not read as zero.
        return summary if "disruption" in summary else None

    def save(self, task: Task, summary_text: str) -> None:
        path = self.path(task)
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(".json.partial")
        partial.write_text(summary_text, encoding="utf-8")
        os.replace(partial, path)


def fingerprint(scenario_bytes: bytes, duration: float) -> str:
    return hashlib.sha256(scenario_bytes + f"\nduration={duration!r}".encode()).hexdigest()


@dataclass
class Failure:
    setting: Setting
    seed: int
    trace: str
    error: str


@dataclass
class SweepRuns:
    summaries: dict[Task, dict[str, Any]] = field(default_factory=dict)
    failures: list[Failure] = field(default_factory=list)
    reused: int = 0
    run_seconds: float = 0.0  # the simulations' own wall time (summary wall_seconds), this sweep's runs


def execute(
    scenarios: dict,
    tasks: Sequence[Task],
    store: RunStore,
    engine,
    on_outcome: Callable[[Outcome], None] | None = None,
) -> SweepRuns:
    """Run the tasks not stored yet (scenarios: trace id -> scenario); store each result as it arrives."""
    runs = SweepRuns()
    pending = []
    for task in tasks:
        stored = store.load(task)
        if stored is None:
            pending.append(task)
        else:
            runs.summaries[task] = stored
            runs.reused += 1
    for outcome in engine.run(scenarios, pending):
        if outcome.summary_text is not None:
            store.save(outcome.task, outcome.summary_text)
            summary = json.loads(outcome.summary_text)
            runs.summaries[outcome.task] = summary
            runs.run_seconds += summary["wall_seconds"]
        else:
            task = outcome.task
            runs.failures.append(Failure(task.setting, task.seed, task.trace, outcome.error or "?"))
        if on_outcome is not None:
            on_outcome(outcome)
    return runs


def _spread(values: list[float]) -> dict[str, float]:
    p10, median, p90 = np.percentile(np.asarray(values, dtype=float), [10, 50, 90])
    return {"p10": round(float(p10), 4), "median": round(float(median), 4), "p90": round(float(p90), 4)}


def aggregate(
    settings: Sequence[Setting],
    seeds: Sequence[int],
    summaries: dict[Task, dict[str, Any]],
    traces: Sequence[str] = ("",),
) -> list[dict[str, Any]]:
    """Per setting: the spread of each metric over its seeds and traces, and every invariant break."""
    rows = []
    for setting in settings:
        tasks = [Task(setting, seed, trace) for trace in traces for seed in seeds]
        done = [(task, summaries[task]) for task in tasks if task in summaries]
        metrics = [run_metrics(s) for _, s in done]
        breaks = [
            {
                "seed": task.seed,
                **({"trace": task.trace} if task.trace else {}),
                "invariant": name,
                "count": count,
            }
            for task, summary in done
            for name, count in summary["invariants"].items()
            if count
        ]
        rows.append(
            {
                "id": setting.id,
                "label": setting.label,
                "flags": dict(setting.flags),
                "runs": len(done),
                "metrics": {key: _spread([m[key] for m in metrics]) for key, _ in METRICS} if done else {},
                "invariant_breaks": breaks,
            }
        )
    return rows


def _medians(row: dict[str, Any]) -> list[float]:
    return [row["metrics"][key]["median"] for key, _ in METRICS]


def better_everywhere(rows: list[dict[str, Any]], own_id: str) -> list[str]:
    """Settings whose medians are no worse than the scenario's own on every metric and better on
    at least one."""
    own = next((r for r in rows if r["id"] == own_id and r["runs"]), None)
    if own is None:
        return []
    base = _medians(own)
    found = []
    for row in rows:
        if row["id"] == own_id or not row["runs"]:
            continue
        medians = _medians(row)
        if all(m <= b for m, b in zip(medians, base)) and any(m < b for m, b in zip(medians, base)):
            found.append(row["id"])
    return found


def write_summary_csv(
    path: Path,
    grid_flags: Iterable[str],
    settings: Sequence[Setting],
    seeds: Sequence[int],
    runs: SweepRuns,
    traces: Sequence[str] = ("",),
) -> None:
    """One row per run; a `trace` column only when the sweep has --trace alternatives."""
    flags = list(grid_flags)
    with_traces = list(traces) != [""]
    invariants: list[str] = []
    for stored in runs.summaries.values():
        invariants += [name for name in stored["invariants"] if name not in invariants]
    columns = ["setting", *flags, *(["trace"] if with_traces else []), "seed", *(key for key, _ in METRICS)]
    columns += invariants
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(columns)
        for setting in settings:
            values = dict(setting.flags)
            for trace in traces:
                for seed in seeds:
                    summary = runs.summaries.get(Task(setting, seed, trace))
                    if summary is None:
                        continue
                    metrics = run_metrics(summary)
                    writer.writerow(
                        [
                            setting.id,
                            *(values.get(flag, "") for flag in flags),
                            *([trace] if with_traces else []),
                            seed,
                            *(metrics[key] for key, _ in METRICS),
                            *(summary["invariants"].get(name, 0) for name in invariants),
                        ]
                    )
