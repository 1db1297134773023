"""The sweep's console lines under the table: the Pareto line is sweep.json's front (front.py, as in
report.html), the scenario's own setting is named as such, and a tie is said rather than listed."""

from __future__ import annotations

import json
from pathlib import Path

from kubetide.cli.main import main

SMALL = Path(__file__).resolve().parents[1] / "sweep" / "small.yaml"


def _sweep(capsys, out: Path, *grid: str) -> tuple[str, str, dict]:
    argv = ["sweep", str(SMALL), *grid, "--seed-list", "1", "--workers", "1", "--out", str(out)]
    code = main(argv)
    stdout, stderr = capsys.readouterr()
    assert code == 0, stderr
    return stdout, stderr, json.loads((out / "sweep.json").read_text())


def _pareto_line(stdout: str) -> str:
    return next(line for line in stdout.splitlines() if "Pareto front" in line)


def test_the_pareto_line_is_sweep_jsons_front_over_the_metrics_that_vary(capsys, tmp_path):
    stdout, _, sweep = _sweep(capsys, tmp_path, "--grid", "scale-down-unneeded-time=1m,20m")
    words = {"cost": "cost", "pending_pod_seconds": "pending pod-seconds", "evictions": "evictions"}
    metrics = [words[key] for key in sweep["pareto_front_metrics"]]
    assert len(metrics) >= 2  # this grid trades cost against evictions at least
    over = ", ".join(metrics[:-1]) + " and " + metrics[-1]
    labels = {
        row["id"]: "unneeded-time=" + row["flags"].get("scale-down-unneeded-time", "")
        for row in sweep["settings"]
    }
    # the scenario's 5m is not in the grid: the sweep ran it as the baseline, and says so
    own = sweep["scenario_setting"]
    labels[own] = "the scenario's own setting"
    assert len(sweep["settings"]) == 3
    assert "* the scenario's own setting (not in the grid: run as the baseline)" in stdout
    assert _pareto_line(stdout) == f"Pareto front ({over}): " + "; ".join(
        labels[i] for i in sweep["pareto_front"]
    )
    assert "scenario's;" not in stdout and "=scenario's" not in _pareto_line(stdout)


def test_settings_that_tie_everywhere_have_no_front_to_name(capsys, tmp_path):
    """Issue 27's `--grid startup-taint=a,b`: no node carries either taint, so every setting ties;
    the scenario's own (no startup taint: no grid value can say that) was added as the baseline, and
    the Pareto line listed all three, the added one by a name no one gave it."""
    stdout, _, sweep = _sweep(capsys, tmp_path, "--grid", "startup-taint=a,b")
    assert len(sweep["settings"]) == 3 and sweep["pareto_front_metrics"] == []
    assert _pareto_line(stdout) == (
        "No Pareto front: every setting has the same cost, pending pod-seconds and evictions"
    )
    assert "(scenario's own)" not in stdout
