"""Every Scenario in examples/ (and the bundled demo) loads, runs, and keeps the invariants.

Runs are shortened so the suite stays fast; they use the default autoscaler (kubetide's own once it
is installed), so this is also the autoscaler's end-to-end check on the scenarios users read.
"""

from importlib import resources
from pathlib import Path

import pytest
import yaml

from kubetide.sim import NoAutoscaler, Simulation, load_scenario

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SHORTENED = 45 * 60


def scenario_files():
    files = []
    for path in sorted(EXAMPLES.rglob("*.yaml")):
        try:
            docs = list(yaml.safe_load_all(path.read_text()))
        except yaml.YAMLError:
            continue
        if len(docs) == 1 and isinstance(docs[0], dict) and docs[0].get("kind") == "Scenario":
            files.append(path)
    return files


def test_the_examples_are_found():
    names = {p.name for p in scenario_files()}
    assert {"morning-burst.yaml", "nightly-scale-down.yaml", "unready-nodes.yaml"} <= names


@pytest.mark.parametrize("path", scenario_files(), ids=lambda p: p.name)
def test_example_runs_with_invariants_held(path):
    scenario = load_scenario(path)
    assert path.read_text().startswith("#"), "each example starts with a comment header"
    result = Simulation(scenario.with_duration(min(scenario.duration, SHORTENED))).run()
    assert result.summary["invariants"] == {"pdb_violations": 0, "pods_lost": 0, "nodes_deleted_with_pods": 0}
    assert result.timeline and not result.warnings
    assert_counters_consistent(result)


def assert_counters_consistent(result):
    """The summary's counters agree with each other and with the timeline."""
    pods, up = result.summary["pods"], result.summary["scale_up"]
    # Pending: the peak and the pod-seconds measure the same count (pods pending for no time at
    # all, created and bound in one instant, count in neither).
    assert (pods["max_pending"] > 0) == (pods["pending_pod_seconds"] > 0)
    assert pods["pending_pod_seconds"] <= pods["max_pending"] * result.summary["simulated_seconds"]
    assert max(row["pending_pods"] for row in result.timeline) <= pods["max_pending"]
    # Every requested node came up, failed, or was still coming up at the end.
    assert up["nodes_requested"] == up["nodes_added"] + up["nodes_failed"] + up["nodes_coming_up_at_end"]
    assert up["nodes_requested"] >= up["events"]


def test_the_bundled_demo_runs():
    with resources.as_file(resources.files("kubetide").joinpath("data/scenarios/demo.yaml")) as path:
        scenario = load_scenario(path)
    result = Simulation(scenario.with_duration(SHORTENED)).run()
    assert result.summary["invariants"] == {"pdb_violations": 0, "pods_lost": 0, "nodes_deleted_with_pods": 0}


def test_zone_rebalancing_depends_on_the_workload_ranking():
    zones = {}
    for logarithmic in (True, False):
        scenario = load_scenario(EXAMPLES / "zone-rebalancing.yaml")
        scenario.logarithmic_ranking = logarithmic
        # No autoscaler: node removals would blur what the controller's ranking did.
        result = Simulation(scenario, autoscaler_factory=NoAutoscaler).run()
        zones[logarithmic] = result.summary["pods"]["by_zone_at_end"]
    assert zones[True] == {"zone-a": 20, "zone-b": 20, "zone-c": 20}
    assert zones[False] == {"zone-a": 30, "zone-b": 30, "zone-c": 0}  # newest-first undoes the recovery
