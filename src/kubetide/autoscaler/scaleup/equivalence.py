"""Pod equivalence groups: pods the scheduler cannot tell apart.

The estimator does its expensive work once per group (one real filter check, one resource
vector) and then packs the members with arithmetic, so grouping is what makes a 50 000-pod
burst cheap. Two pods are equivalent when everything a filter reads is equal: namespace,
effective requests, node selector and affinity, tolerations, topology spread, host ports,
priority and labels (labels matter because *other* pods' affinity terms select on them).

Two per-pod labels are left out of the comparison, `statefulset.kubernetes.io/pod-name` and
`apps.kubernetes.io/pod-index`: every StatefulSet pod carries a unique value, and keeping them
would make each such pod a group of one. A selector on those labels (rare: it pins one replica)
could then see the group's first member where it should see another; that only changes which
member of an identical group is placed first.

Pods stamped from one template share their spec objects (requests dict, affinity, tolerations),
so the spec part of the fingerprint is computed once per template, keyed by object identity.
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
    affinity = pod.affinity
    if affinity.pod_required or affinity.anti_required:
        return True
    if any(c.when_unsatisfiable == "DoNotSchedule" for c in pod.topology_spread):
        return True
    return bool(pod.host_ports)


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


def _spec_fingerprint(pod: Pod) -> tuple[Any, ...]:
    return (
        pod.namespace,
        tuple(sorted(pod.requests.items())),
        tuple(sorted(pod.node_selector.items())),
        pod.affinity,
        pod.tolerations,
        pod.topology_spread,
        pod.host_ports,
        pod.priority,
        pod.scheduler_name,
    )


def _label_fingerprint(labels: dict[str, str]) -> tuple[tuple[str, str], ...]:
    if not labels:
        return ()
    items = sorted(labels.items())
    if PER_POD_LABELS.isdisjoint(labels):
        return tuple(items)
    return tuple(item for item in items if item[0] not in PER_POD_LABELS)


def group_pods(pods: Iterable[Pod]) -> list[PodGroup]:
    """Equivalence groups in order of first appearance (deterministic for a given input)."""
    # Spec fingerprints are interned to small integers so the per-pod key hashes cheaply. The
    # identity cache is only valid while the pods are alive, which they are for this call.
    by_identity: dict[tuple[Any, ...], int] = {}
    by_spec: dict[tuple[Any, ...], int] = {}
    groups: dict[tuple[Any, ...], PodGroup] = {}
    for pod in pods:
        ident = (
            id(pod.requests),
            id(pod.node_selector),
            id(pod.affinity),
            id(pod.tolerations),
            id(pod.topology_spread),
            id(pod.containers),
            id(pod.init_containers),
            pod.meta.namespace,
            pod.priority,
            pod.scheduler_name,
        )
        spec = by_identity.get(ident)
        if spec is None:
            spec = by_identity[ident] = by_spec.setdefault(_spec_fingerprint(pod), len(by_spec))
        key = (spec, _label_fingerprint(pod.meta.labels))
        group = groups.get(key)
        if group is None:
            group = groups[key] = PodGroup(key, [], has_inter_pod_constraints(pod))
        group.pods.append(pod)
    return list(groups.values())
