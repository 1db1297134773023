"""A cheaper-group replacement in flight survives an autoscaler restart (issue 38 item 3).

On the quarter-load cluster kubetide launches a small node to stand in for a large one. The
process restarts while that node is still provisioning: the new process must take the
replacement back from the record on the large node (scaledown/actuation/restart.py), launch no
second one, keep the new node from being removed as empty, and drain the large node once it is
Ready, ending as the uninterrupted run ends."""

from __future__ import annotations

from pathlib import Path

import yaml

from kubetide.sim import Simulation, load_scenario

ROOT = Path(__file__).resolve().parents[2]
QUARTER = ROOT / "examples" / "comparison" / "quarter-load.yaml"
LAUNCHED = "launched a node of"
TAKEN_BACK = "taken back after a restart"


def run(tmp: Path, restart_at: float | None = None):
    """The quarter-load cluster under kubetide's policy for an hour, with a restart at
    `restart_at` seconds when given."""
    spec = yaml.safe_load(QUARTER.read_text())
    spec["spec"].pop("compare")
    spec["spec"]["duration"] = "1h"
    if restart_at is not None:
        spec["spec"]["events"].append({"at": f"{restart_at:g}s", "fault": {"type": "autoscalerRestart"}})
    path = tmp / "scenario.yaml"
    path.write_text(yaml.safe_dump(spec))
    return Simulation(load_scenario(path)).run()


def replacing(result, prefix: str) -> list[dict]:
    return [
        e for e in result.events if e["reason"] == "ScaleDownReplacing" and e["message"].startswith(prefix)
    ]


def small_nodes(result) -> list[str]:
    return [e["object"] for e in result.events if e["reason"] == "RegisteredNode" and "small-" in e["object"]]


def test_a_restart_while_the_replacement_provisions_neither_launches_another_nor_forgets_the_drain(tmp_path):
    plain = run(tmp_path)
    launched = replacing(plain, LAUNCHED)
    assert launched, "the uninterrupted run replaces a node"

    # The small node takes 1m20s to be Ready: restart 30 s after it was asked for.
    restarted = run(tmp_path, launched[0]["time"] + 30)
    summary = restarted.summary
    assert summary["autoscaler_restarts"] == 1
    assert len(replacing(restarted, LAUNCHED)) == len(launched)  # no second launch
    taken_back = replacing(restarted, TAKEN_BACK)
    assert [e["object"] for e in taken_back] == [launched[0]["object"]]
    replaced = launched[0]["object"].removeprefix("Node/")
    removed = [
        e for e in restarted.events if e["object"] == f"Node/{replaced}" and e["reason"] == "ScaleDown"
    ]
    assert removed, "the replaced node is drained and removed by the restarted process"
    final = {g: summary["groups"][g]["final"] for g in ("large", "small")}
    assert (
        final
        == {g: plain.summary["groups"][g]["final"] for g in ("large", "small")}
        == {"large": 1, "small": 1}
    )
    assert small_nodes(restarted) == small_nodes(plain) and len(small_nodes(plain)) == 1
    assert summary["invariants"] == {"pdb_violations": 0, "pods_lost": 0, "nodes_deleted_with_pods": 0}
