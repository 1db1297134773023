"""The console summary of `kubetide simulate`: counters that mean what they say, the unready-node
scenarios' headline measures when they happened, and times as offset and RFC 3339."""

import csv
import json
from pathlib import Path

import pytest

from kubetide.cli import main as cli_main
from kubetide.cli.simulate_summary import summary_rows

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.fixture
def kubetide(monkeypatch):
    monkeypatch.setattr(cli_main, "COMMANDS", ("simulate",))
    return cli_main.main


def simulate(kubetide, capsys, scenario: str, out: Path) -> tuple[str, dict]:
    assert kubetide(["simulate", str(EXAMPLES / scenario), "--out", str(out), "--no-report"]) == 0
    text = capsys.readouterr().out
    return text, json.loads((out / "summary.json").read_text())


QUIET_LEDGER = {
    "below_pdb_minimum_seconds": 0.0,
    "below_desired_pod_seconds": 0.0,
    "budget_wait_node_seconds": 0.0,
    "churned_nodes": 0,
    "last_removal_seconds": None,
    "worst": None,
}


def row(text: str, label: str) -> str:
    """The value printed beside `label` in the summary table."""
    line = next(line for line in text.splitlines() if line.startswith(label))
    return line.removeprefix(label).strip()


def test_uc4_stockout_counts_the_nodes_that_came_up_apart_from_the_failed_requests(
    kubetide, capsys, tmp_path
):
    text, summary = simulate(kubetide, capsys, "unready/uc4-stockout.yaml", tmp_path)
    up = summary["scale_up"]
    events = [json.loads(line) for line in (tmp_path / "events.jsonl").read_text().splitlines()]
    registered = sum(1 for e in events if e["reason"] == "RegisteredNode")
    stocked_out = sum(1 for e in events if e["reason"] == "InstanceCreationFailed")
    assert up["nodes_added"] == registered and up["nodes_failed"] == stocked_out > 0
    assert row(text, "nodes requested -> came up") == f"{registered + stocked_out} -> {registered}"
    assert row(text, "nodes that failed to come up") == str(stocked_out)
    # The stockout's headline measures: backoff per group, target size fixes.
    backoff = row(text, "scale-up backoff")
    assert "spot 15m" in backoff and "on-demand 5m" in backoff
    assert row(text, "target size fixes") == "spot 2"
    assert "loops halted" not in text  # zero: not shown


def test_uc8_zone_outage_shows_halted_loops_and_unhealthy_time(kubetide, capsys, tmp_path):
    text, summary = simulate(kubetide, capsys, "unready/uc8-zone-outage.yaml", tmp_path)
    health = summary["cluster_health"]
    assert health["halted_loops"] > 0
    assert row(text, "loops halted: cluster unhealthy") == f"{health['halted_loops']:,}"
    assert row(text, "cluster unhealthy for") == "20m" and health["unhealthy_seconds"] == 1200
    # Removal times: offset and the wall time it stands for.
    first = summary["scale_down"]["first_removal_at"]
    assert row(text, "first node removal").startswith(f"+{int(first // 60)}m")
    assert "(2026-01-01T00:" in row(text, "first node removal")
    assert "nodes that failed to come up" not in text


def test_timeline_and_events_carry_rfc3339_beside_the_offset(kubetide, capsys, tmp_path):
    text, summary = simulate(kubetide, capsys, "unready/uc4-stockout.yaml", tmp_path)
    assert summary["start"] == "2026-01-01T00:00:00Z"
    assert "simulated start: 2026-01-01T00:00:00Z (the simulator's fixed start" in text
    with (tmp_path / "timeline.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    assert list(rows[0])[:2] == ["time", "timestamp"]
    assert rows[1]["time"] == "10.0" and rows[1]["timestamp"] == "2026-01-01T00:00:10Z"
    first = json.loads((tmp_path / "events.jsonl").read_text().splitlines()[0])
    assert list(first)[:2] == ["time", "timestamp"]
    assert first["time"] == 120.0 and first["timestamp"] == "2026-01-01T00:02:00Z"


@pytest.mark.parametrize(
    ("health", "groups", "shown"),
    [
        ({"halted_loops": 0, "unhealthy_seconds": 0.0}, {"g": {"backoff_seconds": 0.0}}, set()),
        ({"halted_loops": 3, "unhealthy_seconds": 30.0}, {}, {"loops halted: cluster unhealthy"}),
        ({}, {"g": {"backoff_seconds": 300.0}}, {"scale-up backoff"}),
    ],
)
def test_headline_rows_appear_only_when_non_zero(health, groups, shown):
    summary = {
        "start": "2026-01-01T00:00:00Z",
        "nodes": {"initial": 1, "final": 1, "peak": 1},
        "node_hours": 1.0,
        "cost": 1.0,
        "pods": {
            "max_pending": 0,
            "pending_at_end": 0,
            "pending_pod_seconds": 0.0,
            "pending_seconds_p99": 0.0,
        },
        "scale_up": {
            "events": 0,
            "nodes_requested": 0,
            "nodes_added": 0,
            "nodes_failed": 0,
            "nodes_coming_up_at_end": 0,
        },
        "scale_down": {
            "nodes_removed": 0,
            "empty_removed": 0,
            "drained_removed": 0,
            "max_concurrent_drains": 0,
            "first_removal_at": None,
            "last_removal_at": None,
        },
        "evictions": 0,
        "evictions_refused": 0,
        "disruption": QUIET_LEDGER,
        "cluster_health": health,
        "node_groups": groups,
    }
    labels = {label for label, _ in summary_rows(summary)}
    optional = {"loops halted: cluster unhealthy", "cluster unhealthy for", "scale-up backoff"}
    assert labels & optional == (
        shown | ({"cluster unhealthy for"} if health.get("unhealthy_seconds") else set())
    )


def test_the_disruption_ledger_rows_name_the_worst_workload_only_when_one_was_disrupted(
    kubetide, capsys, tmp_path
):
    args = ["simulate", str(EXAMPLES / "pdb-paced-drain.yaml"), "--out", str(tmp_path), "--no-report"]
    assert kubetide([*args, "--no-compare"]) == 0
    text, summary = capsys.readouterr().out, json.loads((tmp_path / "summary.json").read_text())
    ledger = summary["disruption"]
    assert ledger["worst"] == "Deployment/prod/api"
    assert row(text, "most disrupted workload") == ledger["worst"]
    assert row(text, "time below a PDB's minimum") == "0s"
    assert row(text, "pod-seconds below desired replicas") == f"{ledger['below_desired_pod_seconds']:,.0f}"
    quiet = {**summary, "disruption": QUIET_LEDGER}
    labels = {label for label, _ in summary_rows(quiet)}
    assert "most disrupted workload" not in labels and "node time waiting for budget" not in labels
