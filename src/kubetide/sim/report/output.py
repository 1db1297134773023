"""Writing a run's files: summary.json, timeline.csv, events.jsonl and report.html.

Simulated time is seconds since the start (`time`); timeline.csv and events.jsonl carry the wall
time it stands for beside it (`timestamp`, RFC 3339), from summary.json's `start`.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

from kubetide import API_VERSION
from kubetide.durations import rfc3339
from kubetide.model.reader import parse_time
from kubetide.sim.runtime.simulation import SimulationResult


def default_out_dir(scenario_name: str) -> Path:
    return Path("kubetide-out") / scenario_name


def summary_json(summary: dict) -> str:
    """The exact bytes of summary.json (key order as built, so runs compare byte for byte): a
    SimulationSummary document (docs/json-output.md)."""
    return json.dumps({"apiVersion": API_VERSION, "kind": "SimulationSummary", **summary}, indent=2) + "\n"


def with_timestamp(entry: dict[str, Any], start: float) -> dict[str, Any]:
    """`entry` with `timestamp` (start + its `time`, RFC 3339) right after `time`."""
    stamped: dict[str, Any] = {}
    for key, value in entry.items():
        stamped[key] = value
        if key == "time":
            stamped["timestamp"] = rfc3339(start + value)
    return stamped


def timeline_columns(rows: list[dict[str, Any]]) -> list[str]:
    """timeline.csv's header: every row's columns in order of first appearance. Rows may gain
    columns as a run goes (`unremovable_<Reason>` from the first node given that reason, see
    sim/runtime/decisions.py); a row without one writes 0 there."""
    return list(dict.fromkeys(column for row in rows for column in row))


def write_outputs(result: SimulationResult, out_dir: str | Path, *, report: bool = True) -> dict[str, Path]:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {
        "summary": out / "summary.json",
        "timeline": out / "timeline.csv",
        "events": out / "events.jsonl",
    }
    start = parse_time(result.summary["start"])
    paths["summary"].write_text(summary_json(result.summary), encoding="utf-8")
    with paths["timeline"].open("w", newline="", encoding="utf-8") as handle:
        if result.timeline:
            rows = [with_timestamp(row, start) for row in result.timeline]
            writer = csv.DictWriter(handle, fieldnames=timeline_columns(rows), restval=0, lineterminator="\n")
            writer.writeheader()
            writer.writerows(rows)
    with paths["events"].open("w", encoding="utf-8") as handle:
        for entry in result.events:
            handle.write(json.dumps(with_timestamp(entry, start)) + "\n")
    if result.status_yaml is not None:
        paths["status"] = out / "status.yaml"
        paths["status"].write_text(result.status_yaml, encoding="utf-8")
    if report:
        from kubetide.sim.report.html import render

        paths["report"] = out / "report.html"
        paths["report"].write_text(render(result), encoding="utf-8")
    return paths
