"""`kubetide plan` bounds its searches by work, not by the clock (issue 39 item 2): the same dump
gives byte-identical `--json` whatever the machine's clock does, with the budgets far too small
for the dump (so that they bind) and with the defaults; and `--unblock-budget` still bounds the
answers, in work."""

from __future__ import annotations

import itertools
import json
import time
from pathlib import Path

import pytest

import kubetide.cli.main as cli_main

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
CLUSTER = str(EXAMPLES / "plan-cluster.yaml")
GROUPS = str(EXAMPLES / "plan-node-groups.yaml")
NOW = "2026-03-10T14:00:00Z"
NOT_COMPUTED = "not computed: the answers' budget"


def plan(capsys, *argv: str) -> str:
    code = cli_main.main(["plan", CLUSTER, "--node-groups", GROUPS, "--now", NOW, "--json", *argv])
    out, err = capsys.readouterr()
    assert code == 0, err
    return out


def racing() -> float:
    """A clock that runs an hour between any two readings: every wall-clock budget is spent."""
    return next(_racing) * 3600.0


_racing = itertools.count()


def frozen() -> float:
    """A clock that never moves: no wall-clock budget is ever spent."""
    return 0.0


@pytest.mark.parametrize(
    "budgets",
    [
        (),
        ("--unblock-budget", "500us"),  # 5 units of work: some nodes are left unanswered
        ("--set", "scale-down-simulation-timeout=0s", "--unblock-budget", "2ms"),
    ],
    ids=["defaults", "tiny unblock budget", "tiny simulation timeout"],
)
def test_the_json_does_not_depend_on_the_machines_clock(monkeypatch, capsys, budgets):
    outputs = []
    for clock in (racing, frozen, time.perf_counter):
        monkeypatch.setattr(time, "perf_counter", clock)
        monkeypatch.setattr(time, "monotonic", clock)
        outputs.append(plan(capsys, *budgets))
    assert outputs[0] == outputs[1] == outputs[2]


def test_the_unblock_budget_bounds_the_answers_in_work(capsys):
    def answered(*argv: str) -> list[bool]:
        nodes = json.loads(plan(capsys, *argv))["scale_down"]["nodes"].values()
        return [NOT_COMPUTED not in n["unblock"]["text"] for n in nodes if n["unblock"] is not None]

    full, tiny = answered(), answered("--unblock-budget", "500us")
    assert all(full)
    # The first node is always answered (the budget is checked before each), not every one.
    assert tiny[0] and not all(tiny)
    assert tiny == answered("--unblock-budget", "500us")
