"""Issue 38 items 1 and 2: the `policy` setting, Karpenter's budgets, and the three policies on
one cluster whose load falls to a quarter while smaller, cheaper nodes exist."""

from __future__ import annotations

import calendar
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest

from kubetide.autoscaler.options import AutoscalerOptions, parse_options
from kubetide.errors import ManifestError
from kubetide.model.nodepool import NodePoolSettings, parse_budgets
from kubetide.sim import Simulation, load_scenario
from kubetide.sweep.compare import Variant, parse_compare
from kubetide.sweep.grid import Setting

ROOT = Path(__file__).resolve().parents[3]
QUARTER = ROOT / "examples" / "comparison" / "quarter-load.yaml"
POLICIES = ("kubetide", "cluster-autoscaler", "karpenter")


# -- the setting -----------------------------------------------------------------------------------
def test_policy_defaults_to_kubetide_and_takes_the_three_names():
    assert AutoscalerOptions().policy == "kubetide"
    for policy in POLICIES:
        assert parse_options({"policy": policy}, "s.yaml").policy == policy


def test_an_unknown_policy_is_refused_with_the_list():
    with pytest.raises(ManifestError) as error:
        parse_options({"policy": "karpentr"}, "s.yaml")
    assert "spec.autoscaler.policy" in str(error.value)
    assert "kubetide, cluster-autoscaler, karpenter" in str(error.value)


def test_cluster_autoscaler_policy_sets_cas_defaults_unless_given_beside_it():
    ca = parse_options({"policy": "cluster-autoscaler"}, "s.yaml")
    assert (
        ca.max_drain_parallelism,
        ca.scale_down_budget_wait_keeps_unneeded_time,
        ca.surge_before_evict,
    ) == (
        1,
        False,
        False,
    )
    tuned = parse_options({"policy": "cluster-autoscaler", "max-drain-parallelism": 4}, "s.yaml")
    assert tuned.max_drain_parallelism == 4
    kubetide = parse_options({"policy": "kubetide"}, "s.yaml")
    assert kubetide.max_drain_parallelism == AutoscalerOptions().max_drain_parallelism == 10


def test_compare_and_set_choose_a_policy_like_any_flag():
    variants = parse_compare(
        ["karpenter:policy=karpenter", "ca:policy=cluster-autoscaler"], AutoscalerOptions()
    )
    scenario = load_scenario(QUARTER)
    assert [v.apply(scenario).options.policy for v in variants] == ["karpenter", "cluster-autoscaler"]
    assert Variant("x", Setting((("policy", "karpenter"),))).apply(scenario).options.policy == "karpenter"


def test_simulate_refuses_an_unknown_policy_in_one_line():
    result = subprocess.run(
        [sys.executable, "-m", "kubetide", "simulate", str(QUARTER), "--set", "policy=nope"],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "policy" in lines[0] and "karpenter" in lines[0], result.stderr


# -- budgets -------------------------------------------------------------------------------------------
MONDAY_10 = float(calendar.timegm((2026, 1, 5, 10, 0, 0)))
MONDAY_18 = float(calendar.timegm((2026, 1, 5, 18, 0, 0)))


@pytest.mark.parametrize(
    ("text", "reason", "total", "now", "allowed"),
    [
        ("10%", "Underutilized", 25, MONDAY_10, 3),  # percentages round up
        ("10%", "Empty", 0, MONDAY_10, 0),
        ("5", "Drifted", 100, MONDAY_10, 5),
        # the most restrictive active budget matching the reason wins
        ("10%;0:Underutilized@0 9 * * 1-5/8h", "Underutilized", 40, MONDAY_10, 0),
        ("10%;0:Underutilized@0 9 * * 1-5/8h", "Empty", 40, MONDAY_10, 4),
        ("10%;0:Underutilized@0 9 * * 1-5/8h", "Underutilized", 40, MONDAY_18, 4),
        ("50%;2:Empty+Drifted", "Drifted", 40, MONDAY_10, 2),
    ],
)
def test_budgets(text, reason, total, now, allowed):
    settings = NodePoolSettings(budgets=parse_budgets(text))
    assert settings.allowed_disruptions(reason, total, now) == allowed


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("", "at least one budget"),
        ("ten", "count or a percentage"),
        ("120%", "count or a percentage"),
        ("1:Idle", "reasons are"),
        ("1@0 9 * * *", "needs its duration"),
        ("1@0 9 * *x/1h", "expected 5 fields"),
        ("1@0 9 * * mon-xyz/1h", "not a valid cron"),
        ("1@0 9 * * */0s", "positive"),
    ],
)
def test_bad_budgets_are_refused_naming_the_flag(text, said):
    with pytest.raises(ManifestError) as error:
        parse_options({"karpenter-budgets": text}, "s.yaml")
    assert "karpenter-budgets" in str(error.value) and said in str(error.value)


# -- the three policies on the quarter-load cluster ------------------------------------------------------
@cache
def run(policy: str) -> dict:
    scenario = Variant(policy, Setting((("policy", policy),))).apply(load_scenario(QUARTER))
    return Simulation(scenario).run().summary


@pytest.mark.parametrize("policy", POLICIES)
def test_every_arm_keeps_the_invariants_and_reports_the_ledger(policy):
    summary = run(policy)
    assert summary["autoscaler"] == policy
    assert summary["invariants"] == {"pdb_violations": 0, "pods_lost": 0, "nodes_deleted_with_pods": 0}
    assert summary["disruption"]["below_pdb_minimum_seconds"] == 0
    assert summary["pods"]["pending_at_end"] == 0


def test_karpenter_replaces_a_large_node_by_a_small_one_and_ends_cheaper_than_the_cluster_autoscaler():
    ca, karpenter = run("cluster-autoscaler"), run("karpenter")
    # CA's rule keeps two half-used large nodes: neither one's pods fit on the other
    assert (ca["groups"]["large"]["final"], ca["groups"]["small"]["final"]) == (2, 0)
    assert (karpenter["groups"]["large"]["final"], karpenter["groups"]["small"]["final"]) == (1, 1)
    assert karpenter["cost"] < ca["cost"]
    assert karpenter["events"].get("DisruptionLaunching", 0) >= 1


# -- invariants on every arm, on bundled examples with PDBs, surges, zones and faults ---------------------
ARMS_ON = ("pdb-paced-drain", "surge-before-evict", "zone-rebalancing", "unready-nodes")


@pytest.mark.parametrize("example", ARMS_ON)
@pytest.mark.parametrize("policy", ("cluster-autoscaler", "karpenter"))
def test_bundled_examples_keep_the_invariants_under_each_policy(example, policy):
    scenario = load_scenario(ROOT / "examples" / f"{example}.yaml")
    scenario = Variant(policy, Setting((("policy", policy),))).apply(scenario.with_duration(45 * 60))
    summary = Simulation(scenario).run().summary
    assert summary["invariants"] == {"pdb_violations": 0, "pods_lost": 0, "nodes_deleted_with_pods": 0}
    assert summary["disruption"]["below_pdb_minimum_seconds"] == 0


# -- the comparison's own metrics ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("nodes", "last_change", "expected"),
    [
        ([10, 10, 8, 6, 5, 5, 5], 10.0, 30.0),  # from the change at 10 s to the row at 40 s
        ([10, 10, 10], 0.0, 0.0),  # never moved: converged from the start
        ([20, 30, 21, 20, 20], 0.0, 20.0),  # 21 is within 5% of 20
        ([5, 5, 5], 100.0, 0.0),  # settled before the last change: no time after it
    ],
)
def test_converge_seconds(nodes, last_change, expected):
    from kubetide.sim.runtime.simulation import SimulationResult
    from kubetide.sweep.compare import converge_seconds

    timeline = [{"time": 10.0 * i, "nodes_total": n} for i, n in enumerate(nodes)]
    summary = {"disruption": {"last_load_change_at": last_change}}
    result = SimulationResult(scenario=None, summary=summary, timeline=timeline, events=[])
    assert converge_seconds(result) == expected


def test_a_restarted_karpenter_releases_the_nodes_its_lost_commands_tainted():
    """An autoscalerRestart in the middle of the quarter-load consolidation: the new process holds
    no command, so no node stays tainted karpenter.sh/disrupted, and the invariants hold."""
    from kubetide.sim.spec.scenario import load_scenario as load

    text = QUARTER.read_text().replace(
        "  events:\n",
        "  events:\n    - at: 10m40s\n      fault: {type: autoscalerRestart}\n",
        1,
    )
    path = Path(__file__).parent / "_restart.yaml"
    try:
        path.write_text(text)
        scenario = Variant("k", Setting((("policy", "karpenter"),))).apply(load(path))
    finally:
        path.unlink(missing_ok=True)
    sim = Simulation(scenario)
    summary = sim.run().summary
    assert summary["autoscaler_restarts"] == 1
    assert summary["invariants"] == {"pdb_violations": 0, "pods_lost": 0, "nodes_deleted_with_pods": 0}
    assert not [n.name for n in sim.world.snapshot.nodes() if n.has_taint("karpenter.sh/disrupted")]
