"""Why, loop by loop: timeline columns read from what each autoscaler loop decided.

The gauges in metrics.py say what happened (pods pending, nodes); these say why, from the loop's
own plans, as `kubetide plan` would say them at that moment:

- `pending_*`: the pending pods the loop looked at, by what stands between them and a node:
  `pending_fits_no_group` (every node group's template refuses them on scheduling grounds, so no
  scale-up can ever help; see `DecisionColumns` for groups a loop skipped), `pending_scale_up_blocked` (a group could take them but may not grow:
  max size, cluster limits, backoff), `pending_awaiting_node` (they fit a node that exists, is
  coming up or was just requested) and `pending_not_considered` (younger than
  new-pod-scale-up-delay, or below expendable-pods-priority-cutoff). A loop that halted (cluster
  unhealthy) looked at none: its columns are empty, not zero.
- `unremovable_<Reason>`: nodes the scale-down planner kept, by the Cluster Autoscaler's
  UnremovableReason (a node CA skips as RecentlyUnremovable is counted under the reason it failed
  for, BlockedByPod or NoPlaceToMovePods, as `kubetide plan` names it); a column appears with the first node given that reason (rows before it
  have none: timeline.csv writes 0 there).
- `lowest_node_utilization`: the least utilised node's utilisation (%, the planner's own figure,
  the larger of its cpu and memory requests over allocatable) among the nodes utilisation can
  decide (not those kept whatever their load: not autoscaled, annotated, group at its minimum):
  when it is above scale-down-utilization-threshold, no node is underutilised.

Only kubetide's autoscaler returns the plans these come from; another autoscaler (or none) adds
no columns.
"""

from __future__ import annotations

from typing import Any

from kubetide.autoscaler.loop import LoopResult
from kubetide.autoscaler.scaledown import NodeReason
from kubetide.autoscaler.scaledown.planning import BEING_DELETED

PENDING_CAUSES = (
    "pending_fits_no_group",
    "pending_scale_up_blocked",
    "pending_awaiting_node",
    "pending_not_considered",
)
UNREMOVABLE_PREFIX = "unremovable_"
LOWEST_UTILIZATION = "lowest_node_utilization"
_NOT_TRIGGERED = "pod didn't trigger scale-up"
# Nodes kept whatever their utilisation: left out of the lowest utilisation.
_KEPT_ANYWAY = frozenset(
    {
        NodeReason.NOT_AUTOSCALED,
        NodeReason.SCALE_DOWN_DISABLED_ANNOTATION,
        NodeReason.NODE_GROUP_MIN_SIZE_REACHED,
        NodeReason.MINIMAL_RESOURCE_LIMIT_EXCEEDED,
    }
)


class DecisionColumns:
    """Reads each loop's plans into its timeline row (`columns`).

    A node group skipped for a limit (at max size, backoff) is not tried, so a pod its nodes
    would refuse anyway is only "blocked" in that loop's plan; once a loop with no group skipped
    found that no group's nodes can take a pod, that pod stays counted as fitting no group while
    it is pending (a pod's requirements do not change, nor, in a run, the groups' templates).

    `unfit` names every pod found to fit no group during the run, with the NotTriggerScaleUp
    message of the loop that found it (the groups' reasons), for the reports to name them."""

    def __init__(self) -> None:
        self._fits_no_group: set[str] = set()
        self.unfit: dict[str, str] = {}

    def columns(self, loop: Any) -> dict[str, float | int | None]:
        if isinstance(loop, LoopResult) and loop.scale_up is not None:
            plan = loop.scale_up
            for key in plan.fits_no_group:
                self.unfit.setdefault(key, plan.not_helped[key])
            self._fits_no_group.update(plan.fits_no_group)
            self._fits_no_group.intersection_update(plan.not_helped)
        return decision_columns(loop, self._fits_no_group)


def decision_columns(
    loop: Any, known_unfit: set[str] | frozenset[str] = frozenset()
) -> dict[str, float | int | None]:
    """The columns of one loop's timeline row; {} for anything but kubetide's LoopResult.
    `known_unfit`: pods an earlier loop found no node group can take."""
    if not isinstance(loop, LoopResult):
        return {}
    columns: dict[str, float | int | None] = dict.fromkeys(PENDING_CAUSES)
    columns[LOWEST_UTILIZATION] = None
    scale_up = loop.scale_up
    if scale_up is not None:
        counts = dict.fromkeys(PENDING_CAUSES, 0)
        fits_no_group = set(scale_up.fits_no_group) | (known_unfit & scale_up.not_helped.keys())
        counts["pending_fits_no_group"] = len(fits_no_group)
        counts["pending_awaiting_node"] = len(scale_up.schedulable) + len(scale_up.helped)
        for key, why in scale_up.not_helped.items():
            if key in fits_no_group:
                continue
            if why.startswith(_NOT_TRIGGERED):
                counts["pending_scale_up_blocked"] += 1
            elif why.startswith("not chosen this loop"):
                counts["pending_awaiting_node"] += 1
            else:
                counts["pending_not_considered"] += 1
        columns.update(counts)
    scale_down = loop.scale_down
    if scale_down is not None:
        utilizations = []
        reasons: dict[str, int] = {}
        for status in scale_down.nodes.values():
            if status.status == BEING_DELETED:
                continue
            if status.utilization is not None and status.reason not in _KEPT_ANYWAY:
                utilizations.append(status.utilization)
            # A remembered failure (RecentlyUnremovable) named by what failed, as `kubetide plan`
            # and the at-end table name it: one vocabulary per report.
            reason = status.blocked_by
            if reason is not None:
                column = UNREMOVABLE_PREFIX + str(reason)
                reasons[column] = reasons.get(column, 0) + 1
        if utilizations:
            columns[LOWEST_UTILIZATION] = round(100 * min(utilizations), 2)
        columns.update(sorted(reasons.items()))
    return columns
