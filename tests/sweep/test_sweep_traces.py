"""`kubetide sweep --trace`: every setting on every replica-trace alternative, each run equal to
`kubetide simulate` on the scenario with that trace file, the spread taken over traces and seeds."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
import yaml

from kubetide.cli.main import main
from kubetide.cli.sweep import run_sweep
from kubetide.sim.spec.scenario import load_scenario
from kubetide.sweep.engines import DaskEngine
from kubetide.sweep.grid import build_settings, parse_grid, scenario_setting
from kubetide.sweep.results import RunStore
from kubetide.sweep.traces import parse_trace_alternatives, scenario_variants

SMALL = Path(__file__).parent / "small.yaml"
# Two nights for the same Deployment: a short burst, and a long high plateau.
NIGHTS = {
    "burst.csv": "time,replicas\n0,6\n5m,40\n15m,8\n",
    "plateau.csv": "time,replicas\n0,6\n3m,30\n30m,10\n",
}


def _traced_scenario(directory: Path, traces: list[dict] | None = None) -> Path:
    """tests/sweep/small.yaml with its scale events replaced by a trace (burst.csv by default)."""
    document = yaml.safe_load(SMALL.read_text())
    del document["spec"]["events"]
    document["spec"]["traces"] = traces or [{"namespace": "shop", "name": "web", "file": "burst.csv"}]
    for name, text in NIGHTS.items():
        (directory / name).write_text(text)
    path = directory / "traced.yaml"
    path.write_text(yaml.safe_dump(document))
    return path


def _without_wall(text: bytes) -> dict:
    summary = json.loads(text)
    summary.pop("wall_seconds")
    return summary


@pytest.fixture(scope="module")
def traced_sweep(tmp_path_factory) -> tuple[Path, Path, dict]:
    directory = tmp_path_factory.mktemp("traced")
    scenario = _traced_scenario(directory)
    out = directory / "out"
    args = ["sweep", str(scenario), "--grid", "scale-down-unneeded-time=2m,5m", "--seed-list", "1,2"]
    args += ["--trace", str(directory / "burst.csv"), str(directory / "plateau.csv")]
    assert main([*args, "--out", str(out), "--json", "--workers", "2"]) == 0
    return directory, out, json.loads((out / "sweep.json").read_text())


def test_every_setting_runs_on_every_trace_and_seed(traced_sweep):
    directory, out, sweep = traced_sweep
    assert [t["trace"] for t in sweep["traces"]] == [
        str(directory / "burst.csv"),
        str(directory / "plateau.csv"),
    ]
    assert sweep["timing"]["runs"] == 2 * 2 * 2
    assert all(row["runs"] == 4 for row in sweep["settings"])
    with (out / "summary.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == 8
    assert {r["trace"] for r in rows} == {t["id"] for t in sweep["traces"]}
    # The two nights differ, so the spread over them is real: they cost different node-hours.
    by_trace: dict[str, list[float]] = {}
    for row in rows:
        by_trace.setdefault(row["trace"], []).append(float(row["node_hours"]))
    assert len({tuple(sorted(v)) for v in by_trace.values()}) == 2


def test_a_run_on_a_trace_is_the_simulation_of_the_scenario_with_that_file(traced_sweep, tmp_path, capsys):
    _, out, sweep = traced_sweep
    plateau = next(t for t in sweep["traces"] if t["trace"].endswith("plateau.csv"))
    alone = _traced_scenario(tmp_path, [{"namespace": "shop", "name": "web", "file": "plateau.csv"}])
    document = yaml.safe_load(alone.read_text())
    document["spec"]["autoscaler"]["scale-down-unneeded-time"] = "2m"
    alone.write_text(yaml.safe_dump(document))
    setting = next(row for row in sweep["settings"] if row["flags"] == {"scale-down-unneeded-time": "2m"})
    simulated_out = tmp_path / "alone"
    assert (
        main(["simulate", str(alone), "--seed", "2", "--out", str(simulated_out), "--json", "--no-report"])
        == 0
    )
    capsys.readouterr()
    swept = out / "runs" / setting["id"] / f"trace-{plateau['id']}" / "seed-2" / "summary.json"
    assert _without_wall((simulated_out / "summary.json").read_bytes()) == _without_wall(swept.read_bytes())


def test_dask_runs_the_same_trace_alternatives(traced_sweep, tmp_path):
    directory, out, _ = traced_sweep
    path = directory / "traced.yaml"
    scenario = load_scenario(path)
    grid = parse_grid(["scale-down-unneeded-time=2m,5m"])
    settings, own = scenario_setting(build_settings(grid, scenario.options), scenario.options)
    document = yaml.safe_load(path.read_text())
    alternatives = parse_trace_alternatives([str(directory / "plateau.csv")], document, str(path))
    scenarios = scenario_variants(document, str(path), directory, scenario, alternatives)
    dask_out = tmp_path / "dask"
    engine = DaskEngine(workers=1, local_processes=False)
    run_sweep(scenario, grid, settings, own, [1], RunStore(dask_out), engine, scenarios=scenarios)
    for summary in sorted((dask_out / "runs").rglob("summary.json")):
        local = out / summary.relative_to(dask_out)
        assert _without_wall(summary.read_bytes()) == _without_wall(local.read_bytes()), local


def test_a_changed_trace_file_is_a_new_alternative_not_a_stored_run(tmp_path):
    path = _traced_scenario(tmp_path)
    document = yaml.safe_load(path.read_text())
    before = parse_trace_alternatives([str(tmp_path / "burst.csv")], document, str(path))[0].id
    (tmp_path / "burst.csv").write_text(NIGHTS["burst.csv"] + "35m,2\n")
    after = parse_trace_alternatives([str(tmp_path / "burst.csv")], document, str(path))[0].id
    assert before != after


def test_named_alternatives_pick_their_trace_when_the_scenario_has_several(tmp_path):
    traces = [
        {"namespace": "shop", "name": "web", "file": "burst.csv"},
        {"namespace": "shop", "name": "api", "file": "burst.csv"},
    ]
    path = _traced_scenario(tmp_path, traces)
    chosen = parse_trace_alternatives(
        [f"shop/api={tmp_path / 'plateau.csv'}", f"web={tmp_path / 'plateau.csv'}"],
        yaml.safe_load(path.read_text()),
        str(path),
    )
    assert [a.index for a in chosen] == [1, 0]


@pytest.mark.parametrize(
    ("traces", "value", "message"),
    [
        (None, "missing.csv", "--trace missing.csv: no such file"),
        (
            [{"namespace": "shop", "name": "web", "file": "burst.csv"}, {"name": "api", "file": "burst.csv"}],
            "plateau.csv",
            "the scenario has 2 traces (shop/web, default/api); use NAME=CSV",
        ),
        (None, "db=plateau.csv", "no trace of the scenario is for 'db'"),
        ([], "plateau.csv", "has no spec.traces"),
    ],
)
def test_bad_trace_alternatives_are_one_line_before_any_run(
    tmp_path, capsys, monkeypatch, traces, value, message
):
    path = _traced_scenario(tmp_path, traces)
    if traces == []:
        document = yaml.safe_load(path.read_text())
        document["spec"]["traces"] = []
        document["spec"]["events"] = [
            {"at": "5m", "scale": {"kind": "Deployment", "namespace": "shop", "name": "web", "replicas": 9}}
        ]
        path.write_text(yaml.safe_dump(document))
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "out"
    assert main(["sweep", str(path), "--trace", value, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err
    assert not out.exists()
