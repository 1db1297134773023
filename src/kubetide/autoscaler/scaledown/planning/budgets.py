"""How many of the removable nodes may start going now.

Two budgets, both counting the deletions already in progress: max-scale-down-parallelism bounds
all nodes being deleted at once (empty and drained), max-drain-parallelism the drained ones.
Empty nodes go first, since they cost nothing to remove and a long drain should not hold them
back; drains then get what is left of both budgets.

When removable nodes are left out because a budget is spent, the result is throttled: the
parallel-drain design's ScaleDownThrottled, which the Cluster Autoscaler never emits. That
includes max-drain-parallelism alone holding drains back while max-scale-down-parallelism still
has room (CA's default of 1 concurrent drain does exactly that). A user watching a slow
scale-down then sees that a limit, not the planner, is holding nodes back, and which one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kubetide.autoscaler.options import AutoscalerOptions


@dataclass(frozen=True, slots=True)
class BudgetDecision:
    empty: list[str]  # empty nodes to start deleting now
    drain: list[str]  # nodes to start draining now
    throttled: bool  # removable nodes were left out because a budget is spent
    left_out: list[str]  # removable nodes not started this time
    parallelism_left: int  # after this decision
    drain_left: int
    drain_only: bool = False  # max-drain-parallelism alone held nodes back

    def message(self) -> str:
        if self.drain_only:
            return (
                f"{len(self.left_out)} removable node(s) wait: max-drain-parallelism is used up by "
                "drains in progress (max-scale-down-parallelism has room)"
            )
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
    everything_spent = bool(left_out) and parallelism == 0
    # Drains left out while the overall budget still had room: max-drain-parallelism alone.
    drain_only = len(drain_now) < len(drain) and parallelism > 0
    throttled = everything_spent or drain_only
    return BudgetDecision(empty_now, drain_now, throttled, left_out, parallelism, drain_left, drain_only)
