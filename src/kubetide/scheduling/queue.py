"""Placing pending pods one at a time, in kube-scheduler's queue order."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kubetide.model.pod import Pod
from kubetide.scheduling.checker import PredicateChecker
from kubetide.snapshot import ClusterSnapshot


def queue_order(pod: Pod) -> tuple[Any, ...]:
    """PrioritySort: higher priority first, then older, then by name (pods without a creation
    timestamp count as oldest)."""
    created = pod.meta.creation_timestamp
    return (-pod.priority, created is not None, created or 0.0, pod.name, pod.namespace)


def schedule_pods(
    snapshot: ClusterSnapshot, pods: Iterable[Pod], checker: PredicateChecker
) -> dict[str, str | None]:
    """Place `pods` (not yet bound) with `checker.best_node`, binding each into `snapshot` so later
    pods see it. Returns pod UID -> node name, or None when no node fits."""
    if checker.snapshot is not snapshot:
        raise ValueError("the checker observes a different snapshot")
    placements: dict[str, str | None] = {}
    for pod in sorted(pods, key=queue_order):
        node = checker.best_node(pod)
        if node is not None:
            snapshot.add_pod(pod, node)
        placements[pod.uid] = node
    return placements
