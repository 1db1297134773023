"""pdbs_remaining_disruptions: how many more pods each PodDisruptionBudget lets scale-down disrupt.

Computed at the start of every planner update, then consumed as the drain simulation moves pods,
across candidate nodes: two nodes whose pods share a budget of one cannot both become candidates.

Healthy and unhealthy pods are accounted for as the parallel-drain design says. A budget's quota
of unavailable pods is spent by the unhealthy (not Ready) pods first, once, at the start: that is
exactly what `disruptionsAllowed = currentHealthy - desiredHealthy` expresses, whether we read it
from the PDB's status or compute it from the pods. Moving an unhealthy pod then costs nothing more,
since evicting it does not lower the healthy count; moving a healthy pod costs one. (The Cluster
Autoscaler charges every moved pod, so unhealthy pods are counted twice and nodes are kept for
nothing; kubetide closes that gap.) An unhealthy pod may still be refused, as the eviction API
refuses it: when the budget is already violated and its unhealthyPodEvictionPolicy is
IfHealthyBudget.

A node is charged as the Cluster Autoscaler charges it (core/scaledown/pdb, CanRemovePods then
RemovePods): it is refused only when a matching budget has fewer than 1 disruption left; otherwise
all its pods are charged, and when a budget had fewer disruptions left than the node's pods of it
the node is *risky*: it can only be drained pod by pod, as the budget comes back, so it is ordered
after the others and given one eviction deadline per budget wave (`waves`). A refusal says whether
the budget comes back by itself (`waiting`): a budget that allows at least one disruption when all
its pods are healthy is only used up for now, by other drains or by pods not yet Ready; one that
allows none (a single replica with minAvailable 1) never lets the pod go by eviction.

A pod of a *recovering* workload (evictions.py: a pod of it a drain displaced is not Ready again
yet) is refused by each budget covering it, as waiting: the missing pod is used budget, unavailable
in the budget's own count, even where the budget would let this pod go (it is the starting
replacement itself, not Ready so not charged). Its node waits and keeps its timer.

Forks work like the snapshot's: `fork()` marks, `revert()` restores the counters changed since the
mark, `commit()` keeps them. A failed node simulation therefore leaves the budgets untouched.
"""

from __future__ import annotations

import math
from collections.abc import Container, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from kubetide.model import LabelSelector, Pod, PodDisruptionBudget, Workload

# Controllers whose `replicas` tell the disruption controller how many pods to expect.
_SCALABLE = ("ReplicaSet", "StatefulSet", "Deployment", "ReplicationController")


@dataclass(frozen=True, slots=True)
class PdbRefusal:
    """A budget with no disruption left for one of a node's pods."""

    pdb: PodDisruptionBudget
    pod: Pod
    # The budget allows a disruption once its pods are all healthy again: it is used up only for
    # now (by other drains, or pods not Ready yet), and the node waits for it.
    waiting: bool
    left: int  # disruptions it had left (below zero once earlier nodes were charged past it)


@dataclass(frozen=True, slots=True)
class Shortfall:
    """A budget with at least one disruption left, but fewer than the node's pods of it."""

    pdb: PodDisruptionBudget
    pods: int  # the node's healthy pods it selects
    left: int  # disruptions it had left before the node was charged


class NodeCharge(NamedTuple):
    refusal: PdbRefusal | None  # nothing was charged
    shortfalls: tuple[Shortfall, ...] = ()  # non-empty: the node is risky

    @property
    def risky(self) -> bool:
        return bool(self.shortfalls)


def is_healthy(pod: Pod) -> bool:
    """The disruption controller's notion: Ready and not being deleted."""
    return pod.ready and not pod.is_terminating


class PdbTracker:
    """Remaining disruptions per PDB, with undo-log forks."""

    def __init__(
        self,
        pdbs: Sequence[PodDisruptionBudget],
        pods: Iterable[Pod],
        workloads: Mapping[tuple[str, str, str], Workload] | None = None,
        recovering: Container[tuple[str, str, str]] = frozenset(),
    ):
        self.pdbs: list[PodDisruptionBudget] = list(pdbs)
        self.recovering = recovering  # (kind, namespace, name) of workloads short of a Ready pod
        # namespace -> (index, selector) of the budgets there that select pods
        self._by_namespace: dict[str, list[tuple[int, LabelSelector]]] = {}
        for i, pdb in enumerate(self.pdbs):
            if pdb.selector is not None:
                self._by_namespace.setdefault(pdb.meta.namespace, []).append((i, pdb.selector))
        self._match_cache: dict[tuple[Any, ...], tuple[int, ...]] = {}
        self._matches_of: dict[str, tuple[int, ...]] = {}
        healthy = [0] * len(self.pdbs)
        matched = [0] * len(self.pdbs)
        owners: list[set[tuple[str, str]]] = [set() for _ in self.pdbs]
        # The pods are only needed for budgets without a status (hand-written manifests); a real
        # cluster's and the simulator's PDBs carry disruptionsAllowed, and scanning every pod
        # against every budget each loop was the planner's largest cost.
        if self._by_namespace and any(pdb.disruptions_allowed is None for pdb in self.pdbs):
            for pod in pods:
                for i in self.matching(pod):
                    matched[i] += 1
                    if is_healthy(pod):
                        healthy[i] += 1
                    ref = pod.controller
                    owners[i].add((ref.kind, ref.name) if ref else ("", pod.name))
        self.remaining: list[int] = [
            _initial_remaining(pdb, healthy[i], matched[i], owners[i], workloads)
            for i, pdb in enumerate(self.pdbs)
        ]
        self.initial: tuple[int, ...] = tuple(self.remaining)
        # Disruptions each budget allows when every pod it expects is healthy.
        self.full: tuple[int, ...] = tuple(
            _full_budget(pdb, matched[i], owners[i], workloads, self.remaining[i])
            for i, pdb in enumerate(self.pdbs)
        )
        self._log: list[tuple[int, int]] = []
        self._marks: list[int] = []

    # -- matching ------------------------------------------------------------------------------
    def matching(self, pod: Pod) -> tuple[int, ...]:
        """Indexes of the PDBs selecting this pod (cached per namespace and label set)."""
        if not self._by_namespace:
            return ()
        cached = self._matches_of.get(pod.uid)
        if cached is not None:
            return cached
        candidates = self._by_namespace.get(pod.namespace)
        if not candidates:
            result: tuple[int, ...] = ()
        else:
            key = (pod.namespace, tuple(sorted(pod.labels.items())))
            matched = self._match_cache.get(key)
            if matched is None:
                matched = self._match_cache[key] = tuple(
                    i for i, selector in candidates if selector.matches(pod.labels)
                )
            result = matched
        self._matches_of[pod.uid] = result
        return result

    def has_pdb(self, pod: Pod) -> bool:
        return bool(self.matching(pod))

    # -- decisions -----------------------------------------------------------------------------
    def force_consume(self, pod: Pod) -> None:
        """Charge without asking: for pods of nodes already being drained, which will go anyway."""
        if is_healthy(pod):
            for i in self.matching(pod):
                self._set(i, self.remaining[i] - 1)

    def charge_node(self, pods: Iterable[Pod]) -> NodeCharge:
        """Charge a node's pods to their budgets as CA does; all or nothing.

        Refused when a matching budget has fewer than 1 disruption left for a healthy pod (or, for
        an unhealthy one, when the eviction API would refuse it, see `_allows`). Otherwise every
        healthy pod is charged, which may take a budget below zero: later nodes with pods of it are
        then refused this loop. Budgets left with fewer disruptions than the node's pods of them are
        returned as shortfalls (the node is risky).
        """
        if not self._by_namespace:
            return _NOTHING_CHARGED
        counts: dict[int, int] = {}
        for pod in pods:
            healthy = is_healthy(pod)
            recovering = self._recovering(pod)
            for i in self.matching(pod):
                if recovering:
                    return NodeCharge(PdbRefusal(self.pdbs[i], pod, True, min(0, self.remaining[i])))
                if not self._allows(i, healthy):
                    return NodeCharge(PdbRefusal(self.pdbs[i], pod, self.full[i] >= 1, self.remaining[i]))
                if healthy:
                    counts[i] = counts.get(i, 0) + 1
        shortfalls = tuple(
            Shortfall(self.pdbs[i], n, self.remaining[i]) for i, n in counts.items() if n > self.remaining[i]
        )
        for i, n in counts.items():
            self._set(i, self.remaining[i] - n)
        return NodeCharge(None, shortfalls)

    def refuses(self, pod: Pod) -> tuple[PodDisruptionBudget, int] | None:
        """The first budget that would refuse this pod's eviction now (CA's per-pod PDB rule, with
        kubetide's healthy/unhealthy accounting) and the disruptions it has left, or None.
        Charges nothing."""
        healthy = is_healthy(pod)
        recovering = self._recovering(pod)
        for i in self.matching(pod):
            if recovering:
                return self.pdbs[i], min(0, self.remaining[i])
            if not self._allows(i, healthy):
                return self.pdbs[i], self.remaining[i]
        return None

    def _recovering(self, pod: Pod) -> bool:
        ref = pod.controller
        return ref is not None and (ref.kind, pod.namespace, ref.name) in self.recovering

    def waves(self, pods: Iterable[Pod]) -> int:
        """How many budget waves evicting these pods takes at best: a budget that allows f
        disruptions when its pods are healthy lets f of them go, then waits for their replacements
        to become Ready. 1 for pods no budget selects."""
        counts: dict[int, int] = {}
        for pod in pods:
            if is_healthy(pod):
                for i in self.matching(pod):
                    counts[i] = counts.get(i, 0) + 1
        return max((math.ceil(n / max(1, self.full[i])) for i, n in counts.items()), default=1)

    def _allows(self, i: int, healthy: bool) -> bool:
        if healthy:
            return self.remaining[i] >= 1
        pdb = self.pdbs[i]
        return pdb.unhealthy_pod_eviction_policy == "AlwaysAllow" or self.remaining[i] >= 0

    # -- transactions --------------------------------------------------------------------------
    def _set(self, i: int, value: int) -> None:
        if self._marks:
            self._log.append((i, self.remaining[i]))
        self.remaining[i] = value

    def fork(self) -> None:
        self._marks.append(len(self._log))

    def revert(self) -> None:
        mark = self._marks.pop()
        while len(self._log) > mark:
            i, value = self._log.pop()
            self.remaining[i] = value

    def commit(self) -> None:
        self._marks.pop()
        if not self._marks:
            self._log.clear()

    # -- reporting -----------------------------------------------------------------------------
    def by_key(self) -> dict[str, int]:
        """Remaining disruptions by PDB `namespace/name`."""
        return {pdb.key: self.remaining[i] for i, pdb in enumerate(self.pdbs)}


_NOTHING_CHARGED = NodeCharge(None)


def _full_budget(
    pdb: PodDisruptionBudget,
    matched: int,
    owners: set[tuple[str, str]],
    workloads: Mapping[tuple[str, str, str], Workload] | None,
    remaining: int,
) -> int:
    """Disruptions the budget allows with all its expected pods healthy: from the status when it
    has one, else as the disruption controller would compute it; never below what it allows now."""
    if pdb.expected_pods is not None and pdb.desired_healthy is not None:
        full = pdb.expected_pods - pdb.desired_healthy
    elif pdb.disruptions_allowed is not None:
        return remaining
    else:
        expected = _expected_pods(pdb, matched, owners, workloads)
        full = expected - pdb.desired_healthy_for(expected)
    return max(full, remaining)


def _initial_remaining(
    pdb: PodDisruptionBudget,
    healthy: int,
    matched: int,
    owners: set[tuple[str, str]],
    workloads: Mapping[tuple[str, str, str], Workload] | None,
) -> int:
    if pdb.disruptions_allowed is not None:
        allowed = pdb.disruptions_allowed
        # The status clamps at zero; keep a violated budget negative so unhealthy pods are refused
        # as the eviction API would refuse them.
        if allowed == 0 and pdb.current_healthy is not None and pdb.desired_healthy is not None:
            allowed = min(0, pdb.current_healthy - pdb.desired_healthy)
        return allowed
    expected = _expected_pods(pdb, matched, owners, workloads)
    return healthy - pdb.desired_healthy_for(expected)


def _expected_pods(
    pdb: PodDisruptionBudget,
    matched: int,
    owners: set[tuple[str, str]],
    workloads: Mapping[tuple[str, str, str], Workload] | None,
) -> int:
    """How many pods the budget expects, as the disruption controller counts them.

    An integer minAvailable counts the pods that exist; maxUnavailable and percentages use the
    scale of the pods' controllers. When a controller is unknown we fall back to the pod count.
    """
    if pdb.max_unavailable is None and not isinstance(pdb.min_available, str):
        return matched
    if not workloads:
        return matched
    total = 0
    for kind, name in owners:
        workload = workloads.get((kind, pdb.meta.namespace, name)) if kind in _SCALABLE else None
        if workload is None or workload.replicas is None:
            return matched
        total += workload.replicas
    return total
