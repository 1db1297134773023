"""Random valid scenarios (issue 13, item 3), the suite's small budget: every fault type and
autoscaler restarts, invariants zero, the same results under two hash seeds, no leaked
ToBeDeleted taint, every pending pod at the end explained.

The long budget is `python -m benchmarks.fuzz_scenarios` (docs/fuzzing.md)."""

import pytest
from benchmarks import fuzz_scenarios

SCENARIOS = 6
# Drawn from a pool, because what one seed draws differs between hypothesis releases: the six are
# chosen greedily, each adding the most fault types not yet covered (the same six every run on
# one release).
POOL, SEED = 60, 1


def fault_types(scenario: dict) -> set[str]:
    return {e["fault"]["type"] for e in scenario["spec"]["events"] if "fault" in e}


@pytest.fixture(scope="module")
def scenarios():
    pool = fuzz_scenarios.generate(POOL, SEED)
    chosen: list[dict] = []
    covered: set[str] = set()
    for _ in range(SCENARIOS):
        best = max(pool, key=lambda s: len(fault_types(s) - covered))
        pool.remove(best)
        chosen.append(best)
        covered |= fault_types(best)
    return chosen


def test_the_budget_covers_every_fault_type_and_a_restart(scenarios):
    assert set().union(*map(fault_types, scenarios)) == set(fuzz_scenarios.FAULTS)


@pytest.mark.parametrize("index", range(SCENARIOS))
def test_a_random_scenario_keeps_every_property(scenarios, index, tmp_path):
    first, second = fuzz_scenarios.run_twice(scenarios[index], tmp_path)
    assert fuzz_scenarios.problems(first, second) == []


def test_the_checks_notice_what_they_look_for():
    clean = {
        "summary": {"invariants": {"pods_lost": 0}, "nodes": 3},
        "events": [],
        "leaked_taints": [],
        "unexplained_pending": [],
    }
    assert fuzz_scenarios.problems(clean, clean) == []
    broken = {
        **clean,
        "summary": {"invariants": {"pods_lost": 1}, "nodes": 4},
        "leaked_taints": ["n1 tainted 900s ago (bound 300s)"],
        "unexplained_pending": ["default/web-1"],
    }
    found = fuzz_scenarios.problems(broken, clean)
    assert [p.split(" ")[0] for p in found] == ["invariants", "runs", "leaked", "pending"]
