"""Equivalence classes: pods the scheduler cannot tell apart share every cached answer.

Three levels:

All three are keyed on the pod's shape (model/shape.py), computed once when the pod was parsed.

- `StaticClass`: what decides node-static feasibility (node name, node selector, node affinity,
  tolerations: the shape's `nodes`). Its per-slot results (NodeUnschedulable, NodeName, TaintToleration, NodeAffinity,
  plus the static score inputs) are computed once per node and caught up lazily from the index's
  node log when nodes appear or change.
- `FitGroup`: a static class plus requests and host ports: everything the filters read that does
  not depend on other pods' labels. Its base mask (valid, node-static, ports, resources) is
  shared per snapshot version, and so is "fits nowhere", by every class in it: pods differing
  only in labels (StatefulSet or Job pods) do not each pay for the vectorised fit.
- `PodClass`: everything any filter or score reads (the whole shape, node name, and namespace and
  labels unless the shape is label-free). Pods of one ReplicaSet normally share one class, so
  registration of matchers, the per-version pre-filter state and the "fits nowhere" memo are
  per class, not per pod.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from kubetide.model.node import Node
from kubetide.model.pod import HostPort, Pod, TopologySpreadConstraint
from kubetide.model.quantity import CPU, EPHEMERAL_STORAGE, MEMORY, PODS
from kubetide.model.shape import Resources
from kubetide.scheduling import reasons as R
from kubetide.scheduling.index import AntiEntry, PodSet, Topology
from kubetide.scheduling.terms import (
    first_untolerated_taint,
    intolerable_prefer_no_schedule,
    node_affinity_matches,
    preferred_affinity_weight,
    unschedulable_blocks,
)

# NodeResourcesFit reports the pod count first, then cpu, memory, storage, then the rest.
_RESOURCE_ORDER = {PODS: 0, CPU: 1, MEMORY: 2, EPHEMERAL_STORAGE: 3}


def _items(mapping: dict[Any, Any]) -> tuple[Any, ...]:
    return tuple(sorted(mapping.items())) if mapping else ()


def static_key(pod: Pod) -> tuple[Any, ...]:
    """Node name and node terms: what a StaticClass's per-node results depend on."""
    return (pod.node_name, pod.shape.nodes)


def fit_key(pod: Pod) -> tuple[Any, ...]:
    """A static key plus requests and host ports: what a FitGroup's base mask depends on."""
    shape = pod.shape
    return (pod.node_name, shape.nodes, shape.requests, shape.host_ports)


def label_free(pod: Pod) -> bool:
    """No constraint of the pod's own reads its namespace or labels.

    Then only bound pods' anti-affinity (checked per label set, not per class) can tell apart two
    such pods with different labels, so the class leaves labels out: StatefulSet or indexed-Job
    pods with unique labels share one class.
    """
    return pod.shape.label_free


def class_key(pod: Pod) -> tuple[Any, ...]:
    """The pod's shape and node name, plus its namespace and labels unless it is label-free."""
    shape = pod.shape
    if shape.label_free:
        return (pod.node_name, shape, None, None)
    return (pod.node_name, shape, pod.namespace, _items(pod.labels))


def pinned_names(pod: Pod) -> frozenset[str] | None:
    """The only node names a pod's required node affinity can match, when every term pins names
    with `matchFields metadata.name In` (DaemonSet pods); None otherwise."""
    terms = pod.affinity.node_required
    if not terms:
        return None
    names: set[str] = set()
    for term in terms:
        lists = [set(r.values) for r in term.match_fields if r.key == "metadata.name" and r.operator == "In"]
        if not lists:
            return None
        names |= set.intersection(*lists)
    return frozenset(names)


class StaticClass:
    """Per-slot node-static results for one static key (arrays indexed by snapshot slot).

    For a pod pinned to named nodes only those nodes are evaluated up front; the others are
    marked `lazy` (infeasible, reason not yet worked out) and evaluated if someone asks why.
    """

    __slots__ = (
        "aff_ok",
        "any_prefer_taints",
        "lazy",
        "ok",
        "pinned",
        "pod",
        "pos",
        "prefer_taints",
        "preferred",
        "reason",
        "taint_ok",
    )

    def __init__(self, pod: Pod, capacity: int):
        self.pod = pod
        self.pinned = pinned_names(pod)
        self.lazy = np.zeros(capacity, dtype=bool)
        self.ok = np.zeros(capacity, dtype=bool)
        self.aff_ok = np.zeros(capacity, dtype=bool)
        self.taint_ok = np.zeros(capacity, dtype=bool)
        self.preferred = np.zeros(capacity, dtype=np.int64)
        self.prefer_taints = np.zeros(capacity, dtype=np.int64)
        self.reason: list[tuple[str, str] | None] = [None] * capacity
        self.any_prefer_taints = False  # ever seen a node with an untolerated PreferNoSchedule taint
        self.pos = -1  # absolute position in the index's node log caught up to; -1: never

    def grow(self, capacity: int) -> None:
        extra = capacity - len(self.ok)
        if extra <= 0:
            return
        for name in ("ok", "aff_ok", "taint_ok", "preferred", "prefer_taints", "lazy"):
            array = getattr(self, name)
            setattr(self, name, np.concatenate([array, np.zeros(extra, dtype=array.dtype)]))
        self.reason.extend([None] * extra)

    def defer(self, slots: list[int]) -> None:
        """Mark slots as infeasible-for-now; `compute` fills them in on demand."""
        self.ok[slots] = False
        self.aff_ok[slots] = False
        self.taint_ok[slots] = False
        self.preferred[slots] = 0
        self.prefer_taints[slots] = 0
        self.lazy[slots] = True

    def compute(self, slot: int, node: Node) -> None:
        self.lazy[slot] = False
        pod = self.pod
        reason: tuple[str, str] | None = None
        if unschedulable_blocks(pod, node):
            reason = (R.NODE_UNSCHEDULABLE, R.UNSCHEDULABLE)
        elif pod.node_name and pod.node_name != node.name:
            reason = (R.NODE_NAME, R.NODE_NAME_MISMATCH)
        taint = first_untolerated_taint(pod.tolerations, node.taints)
        if taint is not None and reason is None:
            reason = (R.TAINT_TOLERATION, R.untolerated_taint(taint))
        affinity = node_affinity_matches(pod, node)
        if not affinity and reason is None:
            reason = (R.NODE_AFFINITY, R.NODE_AFFINITY_MISMATCH)
        self.ok[slot] = reason is None
        self.reason[slot] = reason
        self.taint_ok[slot] = taint is None
        self.aff_ok[slot] = affinity
        self.preferred[slot] = preferred_affinity_weight(pod, node) if pod.affinity.node_preferred else 0
        prefer = intolerable_prefer_no_schedule(pod, node) if node.taints else 0
        self.prefer_taints[slot] = prefer
        if prefer:
            self.any_prefer_taints = True


@dataclass(slots=True)
class SpreadRule:
    """One topology spread constraint, resolved against its pod."""

    constraint: TopologySpreadConstraint
    topology: Topology
    pods: PodSet
    self_match: int
    honor_affinity: bool
    honor_taints: bool

    @property
    def max_skew(self) -> int:
        return self.constraint.max_skew


@dataclass(slots=True)
class Resolved:
    """A class's matchers, registered with the index on first use."""

    spread: list[SpreadRule]
    soft: list[SpreadRule]
    affinity_topologies: list[Topology]
    affinity_pods: PodSet | None
    affinity_self: bool
    anti: list[tuple[Topology, PodSet]]


@dataclass(slots=True)
class State:
    """What kube-scheduler's PreFilter computes from the pod's own terms, for one class at one
    snapshot version (bound pods' anti-affinity is per label set: see AntiProfile).

    Count arrays carry a trailing zero so that indexing with domain -1 (node lacks the key)
    reads 0.
    """

    spread: list[tuple[SpreadRule, np.ndarray, int]]
    affinity: list[tuple[Topology, np.ndarray]]
    affinity_exists: bool  # some pod matches all affinity terms on a node with the keys
    affinity_self: bool  # the pod matches its own affinity terms (Resolved.affinity_self)
    anti: list[tuple[Topology, np.ndarray]]


class AntiProfile:
    """Which bound pods' anti-affinity terms select pods of one (namespace, labels)."""

    __slots__ = ("labels", "matched", "namespace", "seen")

    def __init__(self, namespace: str, labels: dict[str, str]):
        self.namespace = namespace
        self.labels = labels
        self.seen = 0  # entries of the index's append-only list already tested
        self.matched: list[AntiEntry] = []


class FitGroup:
    """Pods alike in everything but labels and pod (anti-)affinity/spread.

    Holds, per slot, the base mask (valid, node-static, host ports, resources) and the resource
    scores, kept current by recomputing only the slots the index logged as touched since.
    """

    __slots__ = ("cpu", "fit", "fit_pos", "mask", "memory", "need", "none_at", "ports", "pos", "static")

    def __init__(self, static: StaticClass, requests: Resources, ports: tuple[HostPort, ...]):
        self.static = static
        self.need = tuple(
            sorted(
                ((r, a) for r, a in requests.items if a > 0),
                key=lambda item: (_RESOURCE_ORDER.get(item[0], 4), item[0]),
            )
        )
        amounts = requests.amounts
        self.cpu = amounts.get(CPU, 0)
        self.memory = amounts.get(MEMORY, 0)
        self.ports = ports
        self.mask = np.zeros(0, dtype=bool)
        self.fit = np.zeros(0, dtype=np.int64)
        self.pos = -1  # absolute position in the index's touched log; -1: never computed
        self.fit_pos = -1  # the same for `fit`, which only best_node needs
        self.none_at = -1  # index version at which the base mask was empty


class PodClass:
    __slots__ = (
        "dynamic",
        "group",
        "label_free",
        "need",
        "none_at",
        "pod",
        "ports",
        "profile",
        "resolved",
        "state",
        "state_version",
        "static",
    )

    def __init__(self, pod: Pod, group: FitGroup):
        self.pod = pod  # the first pod seen: stands for the class (its labels only if not label_free)
        self.group = group
        self.static = group.static
        self.need = group.need
        self.ports = group.ports
        self.label_free = label_free(pod)
        self.profile = None if self.label_free else AntiProfile(pod.namespace, pod.labels)
        # The per-class pre-filter state is needed only for the pod's own pod-level terms.
        affinity = pod.affinity
        hard = any(c.when_unsatisfiable == "DoNotSchedule" for c in pod.topology_spread)
        self.dynamic = bool(hard or affinity.pod_required or affinity.anti_required)
        self.resolved: Resolved | None = None
        self.state: State | None = None
        self.state_version = -1
        self.none_at = -1  # index version at which no node passed every filter
