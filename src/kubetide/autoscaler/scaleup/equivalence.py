"""Pod equivalence groups: pods the scheduler cannot tell apart.

The estimator does its expensive work once per group (one real filter check, one resource
vector) and then packs the members with arithmetic, so grouping is what makes a 50 000-pod
burst cheap. Two pods are equivalent when everything a filter reads is equal: their shape
(model/shape.py: effective requests, node selector and affinity, tolerations, topology spread,
host ports), namespace and labels (labels matter because *other* pods' affinity terms select on
them), plus priority and schedulerName: a group is placed as one, at one queue position.

Two per-pod labels are left out of the comparison, `statefulset.kubernetes.io/pod-name` and
`apps.kubernetes.io/pod-index`: every StatefulSet pod carries a unique value, and keeping them
would make each such pod a group of one. A selector on those labels (rare: it pins one replica)
could then see the group's first member where it should see another; that only changes which
member of an identical group is placed first.

The shape was computed once when the pod was parsed and hashes in constant time, so grouping
costs a dict lookup per pod, whichever parser read it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from kubetide.model import Pod

PER_POD_LABELS = frozenset({"statefulset.kubernetes.io/pod-name", "apps.kubernetes.io/pod-index"})


def has_inter_pod_constraints(pod: Pod) -> bool:
    """Whether where this pod may go depends on which other pods sit where.

    Required pod (anti-)affinity, DoNotSchedule topology spread and host ports do; preferred
    terms and ScheduleAnyway spread only score, and the autoscaler simulates filters only.
    """
    return pod.shape.inter_pod


@dataclass(slots=True)
class PodGroup:
    """Equivalent pods, in the order they were given. `exemplar` stands for all of them."""

    key: tuple[Any, ...]
    pods: list[Pod] = field(default_factory=list)
    inter_pod: bool = False

    @property
    def exemplar(self) -> Pod:
        return self.pods[0]

    def __len__(self) -> int:
        return len(self.pods)


def _label_fingerprint(labels: dict[str, str]) -> tuple[tuple[str, str], ...]:
    if not labels:
        return ()
    items = sorted(labels.items())
    if PER_POD_LABELS.isdisjoint(labels):
        return tuple(items)
    return tuple(item for item in items if item[0] not in PER_POD_LABELS)


def group_pods(pods: Iterable[Pod]) -> list[PodGroup]:
    """Equivalence groups in order of first appearance (deterministic for a given input)."""
    groups: dict[tuple[Any, ...], PodGroup] = {}
    for pod in pods:
        meta = pod.meta
        key = (pod.shape, meta.namespace, pod.priority, pod.scheduler_name, _label_fingerprint(meta.labels))
        group = groups.get(key)
        if group is None:
            group = groups[key] = PodGroup(key, [], pod.shape.inter_pod)
        group.pods.append(pod)
    return list(groups.values())
