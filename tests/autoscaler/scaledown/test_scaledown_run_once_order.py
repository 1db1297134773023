"""Issue 42 item 4, on the planner: a loop that scales up removes nothing, whatever
scale-down-delay-after-add is; and scale-down-simulation-timeout, however short, still lets the
search consider MIN_CONSIDERED_PER_LOOP nodes a loop, so scale-down keeps going."""

from __future__ import annotations

import pytest
from scaledown_fakes import cloud_for, node, pod, snapshot_of, workload

from kubetide.autoscaler.inputs import LoopInputs
from kubetide.autoscaler.options import AutoscalerOptions
from kubetide.autoscaler.scaledown.planning.candidates import MIN_CONSIDERED_PER_LOOP
from kubetide.autoscaler.scaledown.planning.eligibility import SCALE_DOWN_DISABLED_ANNOTATION
from kubetide.autoscaler.scaledown.planning.planner import Planner
from kubetide.autoscaler.scaledown.planning.timers import SCALED_UP_THIS_LOOP
from kubetide.autoscaler.scaledown.reasons import NodeReason
from kubetide.clock import WorkTimer

RS = [workload("ReplicaSet", "rs", 100)]
BUSY = {SCALE_DOWN_DISABLED_ANNOTATION: "true"}  # a destination that is never a candidate
UNNEEDED = 600.0


def update(planner, nodes, pods, now, *, scaling_up=False):
    inputs = LoopInputs(now, snapshot_of(nodes, pods), workloads=RS)
    return planner.update(inputs, cloud=cloud_for(*[n.name for n in nodes]), scaling_up=scaling_up)


# (delay-after-add, this loop scales up, a scale-up 5 s ago) -> the pause, None when the node goes
PAUSES = [
    (0.0, True, False, SCALED_UP_THIS_LOOP),
    (0.0, False, False, None),
    (0.0, False, True, None),  # the loop after a scale-up: a zero delay has run out
    (600.0, True, False, "scale-down-delay-after-add (10m)"),
    (600.0, False, True, "scale-down-delay-after-add (10m)"),
    (600.0, False, False, None),
    (1.0, True, False, "scale-down-delay-after-add (1s)"),
]


@pytest.mark.parametrize(("delay", "scaling_up", "recent", "paused"), PAUSES)
def test_a_loop_that_scales_up_removes_nothing_whatever_the_delay(delay, scaling_up, recent, paused):
    options = AutoscalerOptions().with_values(
        scale_down_delay_after_add=delay, scale_down_unneeded_time=UNNEEDED
    )
    planner = Planner(options, timer=WorkTimer(1e-3))
    nodes = [node("a"), node("d", annotations=BUSY)]
    pods = [pod("pa", "a", 300), pod("pd", "d", 100)]
    update(planner, nodes, pods, 0.0)  # a becomes unneeded
    now = UNNEEDED + 100
    if recent:
        planner.note_scale_up(now - 5)
    plan = update(planner, nodes, pods, now, scaling_up=scaling_up)
    assert plan.candidate_set == ["a"]  # still planned: a keeps its unneeded time
    if paused is None:
        assert plan.cooldown is None and plan.drain_to_delete == ["a"]
        return
    assert plan.cooldown is not None and plan.cooldown.startswith(paused)
    assert plan.removable_now() == []
    assert plan.nodes["a"].reason is NodeReason.NOT_UNNEEDED_OTHER_REASON
    assert paused in plan.nodes["a"].detail
    # The next loop without a scale-up: a goes as soon as no pause holds it.
    later = now + max(delay, 1.0)
    assert update(planner, nodes, pods, later).drain_to_delete == ["a"]


def test_plan_with_timers_taken_as_run_out_shows_the_deletions_of_a_scale_up_loop():
    options = AutoscalerOptions().with_values(scale_down_delay_after_add=0.0)
    planner = Planner(options, timer=WorkTimer(1e-3), timers_expired=True)
    plan = update(
        planner, [node("a"), node("d", annotations=BUSY)], [pod("pa", "a", 300)], 0.0, scaling_up=True
    )
    assert plan.cooldown is None and plan.drain_to_delete == ["a"]


@pytest.mark.parametrize("timeout", [0.0, 1e-9, 0.5])
def test_a_timeout_shorter_than_one_node_still_considers_the_minimum(timeout):
    # One timer reading per node considered, 1 s each: these timeouts run out before the first.
    options = AutoscalerOptions().with_values(
        scale_down_simulation_timeout=timeout, scale_down_unneeded_time=UNNEEDED
    )
    planner = Planner(options, timer=WorkTimer(1))
    nodes = [node(f"n{i}") for i in range(4)]  # empty: each one removable
    plan = update(planner, nodes, [], 0.0)
    assert plan.timed_out
    assert len(plan.candidate_set) == MIN_CONSIDERED_PER_LOOP >= 1
    skipped = [s for s in plan.nodes.values() if "timeout" in s.detail]
    assert len(skipped) == len(nodes) - MIN_CONSIDERED_PER_LOOP
    # Loop after loop the same first node is considered, keeps its unneeded time, and goes.
    (first,) = plan.candidate_set
    for now in (10.0, UNNEEDED - 10):
        assert update(planner, nodes, [], now).candidate_set == [first]
    assert update(planner, nodes, [], UNNEEDED).empty_to_delete == [first]


def test_a_timeout_the_search_fits_in_is_not_changed_by_the_minimum():
    # 2.5 s, one 1 s reading per node: the third reading is past it, so two nodes are considered,
    # as before the minimum existed.
    options = AutoscalerOptions().with_values(scale_down_simulation_timeout=2.5)
    planner = Planner(options, timer=WorkTimer(1), timers_expired=True)
    plan = update(planner, [node(f"n{i}") for i in range(5)], [], 0.0)
    assert plan.timed_out and len(plan.candidate_set) == 2 > MIN_CONSIDERED_PER_LOOP
