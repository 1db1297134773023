"""Equivalence classes: pods the scheduler cannot tell apart share every cached answer.

Two levels:

- `StaticClass`: what decides node-static feasibility (node name, node selector, node affinity,
  tolerations). Its per-slot results (NodeUnschedulable, NodeName, TaintToleration, NodeAffinity,
  plus the static score inputs) are computed once per node and caught up lazily from the index's
  node log when nodes appear or change.
- `PodClass`: everything any filter or score reads (namespace, labels, requests, host ports,
  affinity, spread, and the static class). Pods of one ReplicaSet normally share one class, so
  registration of matchers, the per-version pre-filter state and the "fits nowhere" memo are
  per class, not per pod.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kubetide.model.node import Node
from kubetide.model.pod import Pod, TopologySpreadConstraint
from kubetide.model.quantity import CPU, EPHEMERAL_STORAGE, MEMORY, PODS
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


def _items(mapping: dict) -> tuple:
    return tuple(sorted(mapping.items())) if mapping else ()


def static_key(pod: Pod) -> tuple:
    affinity = pod.affinity
    return (
        pod.node_name,
        _items(pod.node_selector),
        affinity.node_required,
        affinity.node_preferred,
        pod.tolerations,
    )


def class_key(pod: Pod) -> tuple:
    return (
        pod.namespace,
        _items(pod.labels),
        _items(pod.requests),
        pod.host_ports,
        pod.node_name,
        _items(pod.node_selector),
        pod.affinity,
        pod.tolerations,
        pod.topology_spread,
    )


class StaticClass:
    """Per-slot node-static results for one static key (arrays indexed by snapshot slot)."""

    __slots__ = ("aff_ok", "ok", "pod", "pos", "prefer_taints", "preferred", "reason", "taint_ok")

    def __init__(self, pod: Pod, capacity: int):
        self.pod = pod
        self.ok = np.zeros(capacity, dtype=bool)
        self.aff_ok = np.zeros(capacity, dtype=bool)
        self.taint_ok = np.zeros(capacity, dtype=bool)
        self.preferred = np.zeros(capacity, dtype=np.int64)
        self.prefer_taints = np.zeros(capacity, dtype=np.int64)
        self.reason: list[tuple[str, str] | None] = [None] * capacity
        self.pos = -1  # absolute position in the index's node log caught up to; -1: never

    def grow(self, capacity: int) -> None:
        extra = capacity - len(self.ok)
        if extra <= 0:
            return
        for name in ("ok", "aff_ok", "taint_ok", "preferred", "prefer_taints"):
            array = getattr(self, name)
            setattr(self, name, np.concatenate([array, np.zeros(extra, dtype=array.dtype)]))
        self.reason.extend([None] * extra)

    def compute(self, slot: int, node: Node) -> None:
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
        self.prefer_taints[slot] = intolerable_prefer_no_schedule(pod, node) if node.taints else 0


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
    """What kube-scheduler's PreFilter computes, for one class at one snapshot version.

    Count arrays carry a trailing zero so that indexing with domain -1 (node lacks the key)
    reads 0.
    """

    spread: list[tuple[SpreadRule, np.ndarray, int]]
    affinity: list[tuple[Topology, np.ndarray]]
    affinity_exists: bool  # some pod matches all affinity terms on a node with the keys
    anti: list[tuple[Topology, np.ndarray]]
    existing: list[tuple[Topology, np.ndarray]]


class PodClass:
    __slots__ = (
        "anti_match",
        "anti_seen",
        "dynamic",
        "need",
        "none_at",
        "pod",
        "ports",
        "resolved",
        "state",
        "state_version",
        "static",
    )

    def __init__(self, pod: Pod, static: StaticClass):
        self.pod = pod
        self.static = static
        self.need = tuple(
            sorted(
                ((r, a) for r, a in pod.requests.items() if a > 0),
                key=lambda item: (_RESOURCE_ORDER.get(item[0], 4), item[0]),
            )
        )
        self.ports = pod.host_ports
        affinity = pod.affinity
        hard = any(c.when_unsatisfiable == "DoNotSchedule" for c in pod.topology_spread)
        self.dynamic = bool(self.ports or hard or affinity.pod_required or affinity.anti_required)
        self.resolved: Resolved | None = None
        self.state: State | None = None
        self.state_version = -1
        self.none_at = -1  # index version at which no node fitted
        self.anti_seen = 0
        self.anti_match: list[AntiEntry] = []
