"""How many of the removable nodes may start going now.

Two budgets, both counting the deletions already in progress: max-scale-down-parallelism bounds
all nodes being deleted at once (empty and drained), max-drain-parallelism the drained ones.
Empty nodes go first, since they cost nothing to remove and a long drain should not hold them
back; drains then get what is left of both budgets.

When removable nodes are left out and both budgets are spent, the result is throttled: the
parallel-drain design's ScaleDownThrottled, which the Cluster Autoscaler never emits. A user
watching a slow scale-down then sees that the limit, not the planner, is holding nodes back.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kubetide.autoscaler.options import AutoscalerOptions


@dataclass(frozen=True, slots=True)
class BudgetDecision:
    empty: list[str]  # empty nodes to start deleting now
    drain: list[str]  # nodes to start draining now
    throttled: bool  # removable nodes were left out and no budget is left
    left_out: list[str]  # removable nodes not started this time
    parallelism_left: int  # after this decision
    drain_left: int

    def message(self) -> str:
        return (
            f"{len(self.left_out)} removable node(s) wait: max-scale-down-parallelism and "
            f"max-drain-parallelism are used up by deletions in progress"
        )


def crop(
    empty: Sequence[str],
    drain: Sequence[str],
    options: AutoscalerOptions,
    *,
    empty_in_progress: int = 0,
    drain_in_progress: int = 0,
) -> BudgetDecision:
    parallelism = max(0, options.max_scale_down_parallelism - empty_in_progress - drain_in_progress)
    drain_budget = max(0, options.max_drain_parallelism - drain_in_progress)
    empty_now = list(empty[:parallelism])
    parallelism -= len(empty_now)
    drain_budget = min(parallelism, drain_budget)
    drain_now = list(drain[:drain_budget])
    parallelism -= len(drain_now)
    left_out = [*empty[len(empty_now) :], *drain[len(drain_now) :]]
    drain_left = max(0, min(parallelism, options.max_drain_parallelism - drain_in_progress - len(drain_now)))
    throttled = bool(left_out) and parallelism == 0 and drain_left == 0
    return BudgetDecision(empty_now, drain_now, throttled, left_out, parallelism, drain_left)
