"""The sweep's console at 100 columns: the table fits with every cell whole, the scenario's own
setting shows the values it runs with, the lines under the table name settings by their row, the
Pareto line is sweep.json's front (front.py, as in report.html), and a tie is said rather than listed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kubetide.cli.main import main

SMALL = Path(__file__).resolve().parents[1] / "sweep" / "small.yaml"


def _sweep(capsys, out: Path, *grid: str, seeds: str = "1", scenario: Path = SMALL) -> tuple[str, str, dict]:
    argv = ["sweep", str(scenario), *grid, "--seed-list", seeds, "--workers", "1", "--out", str(out)]
    code = main(argv)
    stdout, stderr = capsys.readouterr()
    assert code == 0, stderr
    return stdout, stderr, json.loads((out / "sweep.json").read_text())


def _pareto_line(stdout: str) -> str:
    return next(line for line in stdout.splitlines() if "Pareto front" in line)


def _rows(sweep: dict) -> dict[str, int]:
    return {row["id"]: number for number, row in enumerate(sweep["settings"], start=1)}


def test_the_pareto_line_is_sweep_jsons_front_by_row(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")
    # (1m,20m put all three rows on the front once a node exactly at the utilization threshold
    # became underutilized, as in CA 1.35 on)
    stdout, _, sweep = _sweep(capsys, tmp_path, "--grid", "scale-down-unneeded-time=1m,10m")
    words = {"cost": "cost", "pending_pod_seconds": "pending pod-seconds", "evictions": "evictions"}
    metrics = [words[key] for key in sweep["pareto_front_metrics"]]
    assert len(metrics) >= 2  # this grid trades cost against evictions at least
    over = ", ".join(metrics[:-1]) + " and " + metrics[-1]
    rows = _rows(sweep)
    front = sorted(rows[i] for i in sweep["pareto_front"])
    assert 1 < len(front) < len(rows)
    # the scenario's 5m is not in the grid: the sweep ran it as the baseline, and says so
    assert len(sweep["settings"]) == 3 and rows[sweep["scenario_setting"]] == 1
    assert "* row 1: the scenario's own setting (not in the grid: run as the baseline)" in stdout
    assert _pareto_line(stdout) == f"Pareto front ({over}): rows " + ", ".join(map(str, front))
    assert len(front) == 2  # two rows in a row are listed, not a range


def _listed_rows(text: str) -> list[int]:
    """`1-9, 12` -> [1, ..., 9, 12]"""
    numbers: list[int] = []
    for part in text.split(", "):
        first, _, last = part.partition("-")
        numbers += range(int(first), int(last or first) + 1)
    return numbers


GRID = (
    "--grid",
    "scale-down-unneeded-time=1m,10m",
    "--grid",
    "max-drain-parallelism=1,5",
    "--grid",
    "scale-down-utilization-threshold=0.5,0.7",
    "--grid",
    "scale-down-delay-after-add=1m,5m",
)
# small.yaml's own values of GRID's flags: spec.autoscaler's, else kubetide's defaults
OWN = ["5m", "10", "0.5", "5m"]


@pytest.mark.parametrize("flag_count", [1, 2, 3, 4])
def test_every_line_fits_100_columns_whole_with_1_to_4_differing_flags(
    capsys, tmp_path, monkeypatch, flag_count
):
    """Issue 27: at 100 columns with three flags, cells were cut to `$0.…` and `(2.…`; the
    baseline read `scenario's` in every flag column; the Pareto line took four lines."""
    monkeypatch.setenv("COLUMNS", "100")
    stdout, _, sweep = _sweep(capsys, tmp_path, *GRID[: 2 * flag_count], seeds="1,2")
    lines = stdout.splitlines()
    assert max(len(line) for line in lines) <= 100, stdout
    assert "…" not in stdout and "scenario's " not in stdout.replace("the scenario's own setting", "")
    assert len(sweep["settings"]) == 2**flag_count + 1
    header = next(line for line in lines if line.lstrip().startswith("#"))
    table = lines[lines.index(header) + 1 :]
    baseline = next(line for line in table if line.lstrip().startswith("1*"))
    # the baseline runs the scenario's values, said as such
    assert baseline.split()[1 : flag_count + 1] == OWN[:flag_count]
    assert "* row 1: the scenario's own setting (not in the grid: run as the baseline)" in lines
    # every setting has its row, numbered, with its values (separate columns or side by side)
    for number, row in enumerate(sweep["settings"][1:], start=2):
        line = next(line for line in table if line.split()[:1] == [str(number)])
        assert line.split()[1 : flag_count + 1] == list(row["flags"].values())
    rows = _rows(sweep)
    front = sorted(rows[i] for i in sweep["pareto_front"])
    if sweep["pareto_front_metrics"]:
        named = _pareto_line(stdout).partition("): ")[2]
        assert named.startswith("row " if len(front) == 1 else "rows ")
        assert _listed_rows(named.partition(" ")[2]) == front
    assert sum("Pareto front" in line for line in lines) == 1
    assert lines[lines.index(_pareto_line(stdout)) + 1].startswith(("row ", "wrote "))  # one line


def test_a_compare_sweep_shows_each_entrys_values_and_adds_no_baseline(capsys, tmp_path, monkeypatch):
    """spec.compare entries setting different flags: each row shows the scenario's value of the
    flags its entry leaves alone; the empty entry is the scenario's own setting, not an added one."""
    monkeypatch.setenv("COLUMNS", "100")
    scenario = tmp_path / "compare.yaml"
    scenario.write_text(
        SMALL.read_text().replace(
            "  nodeGroups:",
            "  compare:\n"
            "    - name: own\n"
            "    - name: quick\n"
            "      autoscaler: {scale-down-unneeded-time: 1m}\n"
            "    - name: random\n"
            "      autoscaler: {expander: random}\n"
            "  nodeGroups:",
            1,
        )
    )
    stdout, _, sweep = _sweep(capsys, tmp_path / "out", scenario=scenario)
    assert [row["flags"] for row in sweep["settings"]] == [
        {},
        {"scale-down-unneeded-time": "1m"},
        {"expander": "random"},
    ]
    lines = stdout.splitlines()
    header = next(line for line in lines if line.lstrip().startswith("#"))
    assert header.split()[:3] == ["#", "unneeded-time", "expander"]
    table = lines[lines.index(header) + 1 :]
    assert [line.split()[:3] for line in table[:3]] == [
        ["1*", "5m", "least-waste"],
        ["2", "1m", "least-waste"],
        ["3", "5m", "random"],
    ]
    assert "* row 1: the scenario's own setting" in lines  # one of the entries: nothing added


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


def test_a_sweep_of_one_setting_says_it_above_the_table_and_names_no_front(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")
    stdout, _, sweep = _sweep(capsys, tmp_path, "--grid", "scale-down-unneeded-time=5m", seeds="1,2")
    lines = stdout.splitlines()
    assert len(sweep["settings"]) == 1
    assert "setting: scale-down-unneeded-time=5m" in lines
    assert "each cell: the median over the seeds, the 10th-90th percentile under it" in lines  # it fits
    header = next(line for line in lines if line.lstrip().startswith("#"))
    assert header.split()[:2] == ["#", "cost"]
    assert "* row 1: the scenario's own setting" in lines
    assert "Pareto" not in stdout  # one setting: nothing to trade off
    assert max(len(line) for line in lines) <= 100


def test_rows_in_a_row_are_a_range():
    from kubetide.cli.sweep import _row_ranges

    assert _row_ranges([1, 2, 3, 4, 5, 6, 7, 8, 9]) == "1-9"
    assert _row_ranges([1, 3, 4, 6, 7, 8, 12]) == "1, 3, 4, 6-8, 12"
    assert _row_ranges([5]) == "5"
