"""DeletionCandidateOfClusterAutoscaler: a PreferNoSchedule hint on nodes that are unneeded.

New pods then prefer other nodes, so unneeded nodes stay drainable instead of filling up again.
The taint goes on nodes in the candidate set and comes off every other node (nodes being deleted
keep what they have: their NoSchedule taint matters more). Each loop does at most
max-bulk-soft-taint-count changes and stops once max-bulk-soft-taint-time is spent, removals
first, so a large scale-down never stalls the loop on API calls; the rest waits for the next loop.
The time budget reads the caller's Timer around each change: it bounds work, it decides nothing.
"""

from __future__ import annotations

import operator
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field

from kubetide.autoscaler.options import AutoscalerOptions
from kubetide.autoscaler.ports import (
    DELETION_CANDIDATE_TAINT,
    TO_BE_DELETED_TAINT,
    ActionError,
    ClusterActions,
)
from kubetide.clock import Timer
from kubetide.model import Node, Taint


def deletion_candidate_taint(now: float) -> Taint:
    return Taint(DELETION_CANDIDATE_TAINT, str(int(now)), "PreferNoSchedule", time_added=now)


@dataclass(slots=True)
class SoftTaintResult:
    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    skipped: int = 0  # changes left for a later loop by the budgets
    errors: dict[str, str] = field(default_factory=dict)


class SoftTaintMemo:
    """The inputs of the last call that found nothing to do.

    Node objects are immutable, so the same node objects (the same taints) and the same unneeded
    set mean the pass would find nothing to do again: the loop skips it on a quiet cluster. Any
    taint change replaces the node object, so a call that did something is never skipped next.
    """

    def __init__(self) -> None:
        self._nodes: Sequence[Node] = ()
        self._unneeded: frozenset[str] | None = None

    def settled(self, nodes: Sequence[Node], unneeded: Collection[str]) -> bool:
        return (
            self._unneeded is not None
            and len(nodes) == len(self._nodes)
            and all(map(operator.is_, nodes, self._nodes))
            and frozenset(unneeded) == self._unneeded
        )

    def remember(self, nodes: Sequence[Node], unneeded: Collection[str], result: SoftTaintResult) -> None:
        quiet = not (result.added or result.removed or result.skipped or result.errors)
        self._nodes, self._unneeded = (tuple(nodes), frozenset(unneeded)) if quiet else ((), None)


def update_soft_taints(
    actions: ClusterActions,
    nodes: Iterable[Node],
    unneeded: Collection[str],
    now: float,
    options: AutoscalerOptions,
    *,
    timer: Timer,
    max_count: int | None = None,
    max_time: float | None = None,
    memo: SoftTaintMemo | None = None,
) -> SoftTaintResult:
    """`memo` (kept by the caller across loops) skips the pass when nothing changed since a call
    that had nothing to do; the result is the same empty one either way."""
    if memo is not None:
        nodes = nodes if isinstance(nodes, Sequence) else list(nodes)
        if memo.settled(nodes, unneeded):
            return SoftTaintResult()
        result = _update_soft_taints(actions, nodes, unneeded, now, options, timer, max_count, max_time)
        memo.remember(nodes, unneeded, result)
        return result
    return _update_soft_taints(actions, nodes, unneeded, now, options, timer, max_count, max_time)


def _update_soft_taints(
    actions: ClusterActions,
    nodes: Iterable[Node],
    unneeded: Collection[str],
    now: float,
    options: AutoscalerOptions,
    timer: Timer,
    max_count: int | None,
    max_time: float | None,
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
