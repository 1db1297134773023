"""The parallel-drain headline in small (issue 7 item 6): the benchmark's cluster at 40 nodes,
max-drain-parallelism 1 vs 10 (benchmarks/bench_drain.py runs the 1000-node version).

The PDBs here allow half of each Deployment to be disrupted, so every removable node fits in one
candidate set and the comparison is about draining, not about PDB budgets pacing the candidate
set (the benchmark's 10% PDBs do that; see BENCHMARKS.md).
"""

from __future__ import annotations

import sys
from functools import cache
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks import bench_drain

from kubetide.sim import Simulation, load_scenario
from kubetide.sim.report.html import render

NODES = 40
ZERO = {"pdb_violations": 0, "pods_lost": 0, "nodes_deleted_with_pods": 0}


@cache
def drain(parallelism: int) -> bench_drain.DrainRun:
    return bench_drain.run(NODES, parallelism, max_hours=3, max_unavailable="50%")


def test_both_runs_remove_non_empty_nodes_and_keep_every_invariant():
    for parallelism in (1, 10):
        r = drain(parallelism)
        assert r.invariants == ZERO, f"parallelism {parallelism}: {r.invariants}"
        assert r.removed >= NODES // 4, f"parallelism {parallelism}: only {r.removed} removed"
        assert r.drained == r.removed  # all of them had pods to move
        assert r.first_unneeded is not None and r.first_unneeded >= bench_drain.DROP_AT
    assert abs(drain(1).removed - drain(10).removed) <= 2


def test_parallel_drain_finishes_clearly_sooner():
    one, ten = drain(1), drain(10)
    assert one.max_concurrent_drains == 1
    assert ten.max_concurrent_drains > 1
    # The drain phase is the first wave of removals. A node that becomes unneeded only once the
    # drains have moved pods around starts its scale-down-unneeded-time then and goes in a later
    # wave whatever the parallelism; the first wave must still hold all but two removals (the
    # tolerance above), as destinations may be candidates too and the waves differ a little.
    (one_start, one_end, one_count), (ten_start, ten_end, ten_count) = one.waves()[0], ten.waves()[0]
    assert one_count >= one.removed - 2 and ten_count >= ten.removed - 2
    # Sequential drains each wait at least the pods' grace period.
    one_phase, ten_phase = one_end - one_start, ten_end - ten_start
    assert one_phase >= (one_count - 1) * bench_drain.GRACE
    assert ten_phase * 5 <= one_phase, f"drain phase {ten_phase:g}s at 10 vs {one_phase:g}s at 1"
    # End to end (first node unneeded -> end of the drain phase), the fixed
    # scale-down-unneeded-time wait is the same for both; parallel is still clearly sooner.
    assert ten_end - ten.first_unneeded < one_end - one.first_unneeded - one_phase / 2


def test_the_nightly_example_drains_in_parallel():
    # What report.html's "Drains and deletions" panel plots: drains_in_progress per loop.
    scenario = load_scenario(Path(__file__).resolve().parents[2] / "examples" / "nightly-scale-down.yaml")
    result = Simulation(scenario.with_duration(50 * 60)).run()
    peak = max(row["drains_in_progress"] for row in result.timeline)
    assert 1 < peak <= scenario.options.max_drain_parallelism
    assert result.summary["scale_down"]["max_concurrent_drains"] == peak
    assert result.summary["invariants"] == ZERO
    assert "drains in progress" in render(result)
