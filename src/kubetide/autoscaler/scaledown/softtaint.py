"""DeletionCandidateOfClusterAutoscaler: a PreferNoSchedule hint on nodes that are unneeded.

New pods then prefer other nodes, so unneeded nodes stay drainable instead of filling up again.
The taint goes on nodes in the candidate set and comes off every other node (nodes being deleted
keep what they have: their NoSchedule taint matters more). Each loop does at most
max-bulk-soft-taint-count changes and stops once max-bulk-soft-taint-time is spent, removals
first, so a large scale-down never stalls the loop on API calls; the rest waits for the next loop.
The time budget reads an injected monotonic timer: it bounds work, it decides nothing.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, field

from kubetide.autoscaler.options import AutoscalerOptions
from kubetide.autoscaler.ports import (
    DELETION_CANDIDATE_TAINT,
    TO_BE_DELETED_TAINT,
    ActionError,
    ClusterActions,
)
from kubetide.model import Node, Taint


def deletion_candidate_taint(now: float) -> Taint:
    return Taint(DELETION_CANDIDATE_TAINT, str(int(now)), "PreferNoSchedule", time_added=now)


@dataclass(slots=True)
class SoftTaintResult:
    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    skipped: int = 0  # changes left for a later loop by the budgets
    errors: dict[str, str] = field(default_factory=dict)


def update_soft_taints(
    actions: ClusterActions,
    nodes: Iterable[Node],
    unneeded: Collection[str],
    now: float,
    options: AutoscalerOptions,
    *,
    timer: Callable[[], float] = time.perf_counter,
    max_count: int | None = None,
    max_time: float | None = None,
) -> SoftTaintResult:
    count_left = options.max_bulk_soft_taint_count if max_count is None else max_count
    time_left = options.max_bulk_soft_taint_time if max_time is None else max_time
    result = SoftTaintResult()
    to_remove, to_add = [], []
    for node in nodes:
        if node.has_taint(TO_BE_DELETED_TAINT):
            continue
        tainted = node.has_taint(DELETION_CANDIDATE_TAINT)
        if node.name in unneeded and not tainted:
            to_add.append(node.name)
        elif node.name not in unneeded and tainted:
            to_remove.append(node.name)
    for name, add in [*((n, False) for n in to_remove), *((n, True) for n in to_add)]:
        if count_left <= 0 or time_left <= 0:
            result.skipped += 1
            continue
        started = timer()
        try:
            if add:
                actions.add_taint(name, deletion_candidate_taint(now))
                result.added.append(name)
            else:
                actions.remove_taint(name, DELETION_CANDIDATE_TAINT)
                result.removed.append(name)
        except ActionError as exc:
            result.errors[name] = str(exc)
        time_left -= timer() - started
        count_left -= 1
    return result
