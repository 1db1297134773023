import json

import pytest
from tiny_scenario import TINY_SCENARIO

from kubetide.cli import main as cli_main


@pytest.fixture
def kubetide(monkeypatch):
    # Only this command: other commands' modules are not this test's business.
    monkeypatch.setattr(cli_main, "COMMANDS", ("simulate",))
    return cli_main.main


def test_json_prints_summary_and_writes_every_file(kubetide, tmp_path, capsys):
    scenario = tmp_path / "tiny.yaml"
    scenario.write_text(TINY_SCENARIO)
    out = tmp_path / "out"
    assert kubetide(["simulate", str(scenario), "--out", str(out), "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed == json.loads((out / "summary.json").read_text())
    assert printed["scenario"] == "tiny" and printed["seed"] == 4 and printed["simulated_seconds"] == 1200
    for key in ("nodes", "node_hours", "cost", "pods", "scale_up", "scale_down", "evictions", "invariants"):
        assert key in printed
    # 12 pods of 500m need 3 nodes of 2 cpu: the autoscaler adds exactly one, and everything runs.
    assert printed["nodes"]["initial"] == 2 and printed["scale_up"]["nodes_added"] == 1
    assert printed["pods"]["pending_at_end"] == 0
    assert 2 * 0.5 / 3 < printed["cost"] < 3 * 0.5 / 3
    rows = (out / "timeline.csv").read_text().splitlines()
    assert rows[0].startswith("time,timestamp,general_total,general_ready,general_unready,general_upcoming,")
    assert len(rows) == 1 + 121  # one row per 10s loop, t=0 to t=20m
    events = [json.loads(line) for line in (out / "events.jsonl").read_text().splitlines()]
    assert any(e["reason"] == "Scaled" for e in events)
    html = (out / "report.html").read_text()
    assert html.startswith("<!DOCTYPE html>") and "plotly" in html and "tiny" in html


def test_seed_flag_and_human_summary(kubetide, tmp_path, capsys):
    scenario = tmp_path / "tiny.yaml"
    scenario.write_text(TINY_SCENARIO)
    out = tmp_path / "out"
    assert (
        kubetide(
            ["simulate", str(scenario), "--out", str(out), "--seed", "11", "--no-report", "--duration", "5m"]
        )
        == 0
    )
    text = capsys.readouterr().out
    assert "tiny" in text and "invariant pods_lost" in text and "seed 11" in text
    summary = json.loads((out / "summary.json").read_text())
    assert summary["seed"] == 11 and summary["simulated_seconds"] == 300
    assert not (out / "report.html").exists()


def test_without_a_scenario_runs_the_bundled_demo(kubetide, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert kubetide(["simulate", "--json", "--duration", "20m", "--no-report"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["scenario"] == "demo"
    assert (tmp_path / "kubetide-out" / "demo" / "summary.json").exists()


def test_a_bad_duration_flag_is_a_user_error(kubetide, tmp_path, capsys):
    scenario = tmp_path / "tiny.yaml"
    scenario.write_text(TINY_SCENARIO)
    assert kubetide(["simulate", str(scenario), "--duration", "soon"]) == 2
    assert capsys.readouterr().err.startswith("kubetide: error: --duration: invalid duration")
