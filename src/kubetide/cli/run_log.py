"""What `kubetide run` says at --v=0 about a loop (or the deletions driven between loops): one
line per action, with its counts and reasons and the same facts as structured fields, so that an
operator can reconstruct every scale-up and every node's removal from the log alone.

    Scale-up: setting group small size to 8 instead of 0 (max: 12) for 30 pods
    No scale down in this iteration: this loop scaled up
    Scale-down: marked node n-3 toBeDeleted (drain, underutilized, utilization 0.25)
    Scale-down: 2 pods evicted: shop/web-1, shop/web-2
    Scale-down: node n-3 removed (underutilized)
    Scale-down: abandoned node n-4: pods shop/db-0 still on the node after ...   (warning)
    Loop halted: cluster unhealthy: 4 of 6 registered nodes are unready          (warning)
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from kubetide.autoscaler.scaledown.planning import EVICTION_RETRY_INTERVAL, ca_method_name

# Pod names listed in an eviction line at most; the count is always whole.
MAX_PODS_NAMED = 10


@dataclass(frozen=True, slots=True)
class LogLine:
    level: int
    message: str
    fields: dict[str, Any] = field(default_factory=dict)


def loop_lines(result, reasons: dict[str, str]) -> list[LogLine]:
    """The actions of one LoopResult. `reasons`: node -> CA's scale-down reason (empty,
    underutilized, unready) of each deletion started or finished, as the metrics label it."""
    lines: list[LogLine] = []
    if result.halted:
        level = logging.INFO if result.halted == "fixed node group sizes" else logging.WARNING
        lines.append(LogLine(level, f"Loop halted: {result.halted}", {"halted": result.halted}))
    lines += _scale_up(result)
    if result.scale_down_skipped:
        # The Cluster Autoscaler's RunOnce ends after a scale-up: scale-down waits for the next loop.
        lines.append(LogLine(logging.INFO, result.scale_down_skipped, {"scale_down": "skipped"}))
    lines += _started(result, reasons)
    lines += deletion_lines(result, reasons)
    for node, words in sorted(result.single_replica_holds.items()):
        lines.append(
            LogLine(
                logging.INFO,
                f"Scale-down: node {node} stays: {words}",
                {"node": node, "held_by": "single-replica"},
            )
        )
    return lines


def _scale_up(result) -> list[LogLine]:
    lines = []
    plan = result.scale_up
    planned = {i.group_id: i for i in plan.increases} if plan is not None else {}
    for group_id, delta in sorted(result.scaled_up.items()):
        increase = planned.get(group_id)
        if increase is None:  # enforce-node-group-min-size: no pods asked for it
            lines.append(
                LogLine(
                    logging.INFO,
                    f"Scale-up: group {group_id} +{delta} to its minimum size",
                    {"node_group": group_id, "delta": delta, "reason": "min-size"},
                )
            )
            continue
        lines.append(
            LogLine(
                logging.INFO,
                f"Scale-up: setting group {group_id} size to {increase.new_size} instead of "
                f"{increase.current} (max: {increase.max_size}) for {len(increase.pods)} pods",
                {
                    "node_group": group_id,
                    "from": increase.current,
                    "to": increase.new_size,
                    "max": increase.max_size,
                    "pods": len(increase.pods),
                },
            )
        )
    return lines


def _started(result, reasons: dict[str, str]) -> list[LogLine]:
    started = result.started
    if started is None:
        return []
    lines = []
    plan = result.scale_down
    for name, empty in [(n, True) for n in started.started_empty] + [
        (n, False) for n in started.started_drain
    ]:
        status = plan.nodes.get(name) if plan is not None else None
        utilization = None if status is None or status.utilization is None else round(status.utilization, 2)
        reason = reasons.get(name, ca_method_name(empty=empty))
        kind = "empty" if empty else "drain"
        detail = f"{kind}, {reason}" + ("" if utilization is None else f", utilization {utilization:g}")
        lines.append(
            LogLine(
                logging.INFO,
                f"Scale-down: marked node {name} toBeDeleted ({detail})",
                {"node": name, "drain": not empty, "reason": reason, "utilization": utilization},
            )
        )
    for name, stale in sorted(started.stale.items()):
        # Validation before acting: the cluster changed since the decision (kept for the next loop).
        lines.append(
            LogLine(
                logging.INFO,
                f"Scale-down: node {name} not started: the cluster changed since the decision ({stale})",
                {"node": name, "stale": str(stale)},
            )
        )
    for name, why in sorted(started.failed.items()):
        lines.append(
            LogLine(
                logging.WARNING, f"Scale-down: node {name} not started: {why}", {"node": name, "error": why}
            )
        )
    if started.throttled and started.budget is not None:
        message = started.budget.message()
        lines.append(LogLine(logging.INFO, f"Scale-down: throttled: {message}", {"throttled": message}))
    return lines


def deletion_lines(result, reasons: dict[str, str]) -> list[LogLine]:
    """What the deletions in progress did: by a loop or between loops."""
    lines = []
    if result.evicted:
        named = ", ".join(result.evicted[:MAX_PODS_NAMED])
        more = (
            f" and {len(result.evicted) - MAX_PODS_NAMED} more"
            if len(result.evicted) > MAX_PODS_NAMED
            else ""
        )
        lines.append(
            LogLine(
                logging.INFO,
                f"Scale-down: {len(result.evicted)} pods evicted: {named}{more}",
                {"evicted": len(result.evicted)},
            )
        )
    if result.refused_evictions:
        lines.append(
            LogLine(
                logging.INFO,
                f"Scale-down: {len(result.refused_evictions)} evictions refused by PodDisruptionBudgets (429),"
                f" retried in {EVICTION_RETRY_INTERVAL:g}s",
                {"refused": len(result.refused_evictions)},
            )
        )
    for name in result.deleted:
        reason = reasons.get(name) or ca_method_name(empty=name not in result.deleted_drained)
        lines.append(
            LogLine(
                logging.INFO, f"Scale-down: node {name} removed ({reason})", {"node": name, "reason": reason}
            )
        )
    for name, why in sorted(result.failed_deletions.items()):
        lines.append(
            LogLine(
                logging.WARNING, f"Scale-down: abandoned node {name}: {why}", {"node": name, "error": why}
            )
        )
    return lines
