"""CA's limit on how many unneeded nodes a loop looks for (unneededNodesLimit, limit.py), and the
planner's search stopping there, except for nodes already unneeded (kubetide keeps their place)."""

import dataclasses
import math

import pytest
from scaledown_fakes import cloud_for, node, pod, snapshot_of, workload

from kubetide.autoscaler.inputs import LoopInputs
from kubetide.autoscaler.options import AutoscalerOptions
from kubetide.autoscaler.scaledown.planning.eligibility import SCALE_DOWN_DISABLED_ANNOTATION
from kubetide.autoscaler.scaledown.planning.limit import UnneededLimit, unneeded_nodes_limit
from kubetide.autoscaler.scaledown.planning.planner import Planner
from kubetide.autoscaler.scaledown.reasons import NodeReason
from kubetide.clock import WorkTimer

MINUTE = 60.0


@pytest.mark.parametrize(
    ("name", "parallelism", "unneeded_time", "unneeded", "interval", "want"),
    [
        # N more than last loop's set, plus a buffer of N.
        ("no unneeded nodes yet", 10, 10 * MINUTE, 0, 10.0, 20),
        ("some unneeded nodes", 10, 10 * MINUTE, 100, 10.0, 120),
        # ... but never more than N per loop over U/I loops, plus the buffer: 10 * 60 + 10.
        ("upper bound", 10, 10 * MINUTE, 1000, 10.0, 610),
        # Before a second update CA takes the interval as U: N * 1 + N.
        ("first update", 10, 10 * MINUTE, 5, math.inf, 20),
        ("interval longer than unneeded time", 10, 10 * MINUTE, 5, 20 * MINUTE, 20),
        ("whole intervals only", 4, 60.0, 100, 25.0, 12),  # 4 * (60 // 25) + 4
        ("zero unneeded time", 3, 0.0, 50, 10.0, 6),
        ("no parallelism", 0, 10 * MINUTE, 50, 10.0, 0),
        ("negative parallelism counts as none", -1, 10 * MINUTE, 50, 10.0, 0),
    ],
)
def test_unneeded_nodes_limit(name, parallelism, unneeded_time, unneeded, interval, want):
    assert unneeded_nodes_limit(parallelism, unneeded_time, unneeded, interval) == want, name


def test_the_shortest_interval_between_updates_is_kept():
    limit = UnneededLimit()
    for now in (100.0, 130.0, 140.0, 140.0, 200.0):  # two updates at one instant are no interval
        limit.observe(now)
    assert limit.shortest_interval == 10.0
    assert limit.limit(2, 10 * MINUTE, 1000) == 2 * 60 + 2


# -- the planner ---------------------------------------------------------------------------------

RS = [workload("ReplicaSet", "rs", 100)]
BIG = node("big", cpu=100_000, annotations={SCALE_DOWN_DISABLED_ANNOTATION: "true"})
SMALL = [node(f"n{i:02d}") for i in range(12)]
PODS = [pod(f"p{i:02d}", f"n{i:02d}", 300) for i in range(12)]
CUT_OFF = "not simulated:"


def update(planner, now):
    s = snapshot_of([*SMALL, BIG], PODS)
    cloud = cloud_for(*[n.name for n in SMALL], "big")
    return planner.update(LoopInputs(now, s, workloads=RS), cloud=cloud)


def cut_off(plan):
    return sorted(
        name
        for name, status in plan.nodes.items()
        if status.reason is NodeReason.NOT_UNNEEDED_OTHER_REASON and status.detail.startswith(CUT_OFF)
    )


def test_the_search_stops_at_the_limit_and_grows_it_loop_by_loop():
    planner = Planner(AutoscalerOptions(max_scale_down_parallelism=2), timer=WorkTimer(1e-3))
    first = update(planner, 0.0)
    # 2 + 2: the other 8 nodes are not simulated this loop.
    assert first.candidate_set == ["n00", "n01", "n02", "n03"]
    assert first.simulated == 4
    assert cut_off(first) == [f"n{i:02d}" for i in range(4, 12)]
    second = update(planner, 10.0)
    # Last loop's 4 first (by their unneeded time), then 4 more.
    assert second.candidate_set == [f"n{i:02d}" for i in range(8)]
    assert cut_off(second) == [f"n{i:02d}" for i in range(8, 12)]
    assert planner.unneeded_since["n00"] == 0.0 and planner.unneeded_since["n07"] == 10.0


def test_nodes_already_unneeded_are_simulated_past_the_limit():
    planner = Planner(AutoscalerOptions(max_scale_down_parallelism=10), timer=WorkTimer(1e-3))
    assert len(update(planner, 0.0).candidate_set) == 12
    # Parallelism 1 and an unneeded time of one loop: CA would look for 1 * 1 + 1 = 2 nodes.
    planner.options = AutoscalerOptions(max_scale_down_parallelism=1, scale_down_unneeded_time=10.0)
    plan = update(planner, 10.0)
    assert plan.candidate_set == [f"n{i:02d}" for i in range(12)]
    assert cut_off(plan) == []
    assert all(planner.unneeded_since[n.name] == 0.0 for n in SMALL)


def test_a_new_node_is_cut_off_once_the_limit_is_reached():
    planner = Planner(AutoscalerOptions(max_scale_down_parallelism=1), timer=WorkTimer(1e-3))
    assert update(planner, 0.0).candidate_set == ["n00", "n01"]
    options = dataclasses.replace(planner.options, scale_down_unneeded_time=10.0)
    planner.options = options
    plan = update(planner, 10.0)  # limit min(2 + 2, 1 * 1 + 1) = 2, both already unneeded
    assert plan.candidate_set == ["n00", "n01"]
    assert cut_off(plan) == [f"n{i:02d}" for i in range(2, 12)]
