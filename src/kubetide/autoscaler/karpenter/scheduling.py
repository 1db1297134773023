"""Karpenter's scheduling simulation: where would these pods go, and which new nodes would it take?

One function serves provisioning (pending pods) and disruption (the pods of the candidates, with
the candidates left out), as Karpenter's provisioner.Schedule serves both. Pods go largest first
(cpu, then memory). Each pod tries the existing nodes (the project's PredicateChecker, kube-
scheduler's filters, on the snapshot as earlier pods left it), then the NodeClaims this run has
opened, then a new NodeClaim. A NodeClaim keeps every instance type (node group) that can still
hold all its pods; it is launched as the cheapest of them.

A pod fits an instance type when the checker accepts it on an empty copy of the group's template
(DaemonSet overhead taken off, scaleup/template.py) and the NodeClaim's pods' requests sum within
that type's allocatable. Inter-pod terms between pods of the same new NodeClaim are not checked
(docs/differences.md).
"""

from __future__ import annotations

from collections.abc import Collection, Container, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kubetide.autoscaler.karpenter.nodepools import (
    DEFAULT_POOL,
    INSTANCE_TYPE_LABEL,
    capacity_type,
    first_pool,
)
from kubetide.autoscaler.scaledown.planning import homeless
from kubetide.autoscaler.scaleup.template import GroupTemplate
from kubetide.model import Pod
from kubetide.scheduling import PredicateChecker
from kubetide.snapshot import ClusterSnapshot


@dataclass(frozen=True, slots=True)
class InstanceType:
    """One node group as one of a NodePool's instance types (a group in several pools is one
    InstanceType in each)."""

    group_id: str
    price: float
    template: GroupTemplate
    headroom: int  # nodes the group may still add (max size - target)
    pool: str = DEFAULT_POOL

    @property
    def allocatable(self) -> dict[str, int]:
        return self.template.node.allocatable

    @property
    def capacity(self) -> dict[str, int]:
        """What a node of this type counts towards its pool's limits."""
        return self.template.raw.capacity

    @property
    def capacity_type(self) -> str:
        return capacity_type(self.template.node.labels)

    @property
    def instance_type(self) -> str:
        return self.template.node.labels.get(INSTANCE_TYPE_LABEL, self.group_id)


@dataclass(slots=True)
class NodeClaim:
    """A node to launch: the instance types still possible and the pods it would take."""

    options: list[InstanceType]
    pods: list[Pod] = field(default_factory=list)
    requests: dict[str, int] = field(default_factory=dict)

    def cheapest(self) -> InstanceType:
        return min(self.options, key=lambda t: (t.price, t.group_id))

    def add(self, pod: Pod, options: list[InstanceType]) -> None:
        self.options = options
        self.pods.append(pod)
        for resource, amount in pod.requests.items():
            self.requests[resource] = self.requests.get(resource, 0) + amount


@dataclass(frozen=True, slots=True)
class Outcome:
    destinations: dict[str, str]  # pod UID -> existing node
    claims: tuple[NodeClaim, ...]
    unschedulable: tuple[Pod, ...]


def pod_order(pod: Pod) -> tuple[int, int, str]:
    """Largest first, as Karpenter's scheduling queue orders pods (cpu, then memory)."""
    return (-pod.requests.get("cpu", 0), -pod.requests.get("memory", 0), pod.uid)


def _within(requests: dict[str, int], pod: Pod, allocatable: dict[str, int]) -> bool:
    return all(requests.get(r, 0) + amount <= allocatable.get(r, 0) for r, amount in pod.requests.items())


def _shape_key(pod: Pod) -> tuple[Any, ...]:
    return (pod.shape, pod.meta.namespace, tuple(pod.meta.labels.items()))


def simulate(
    snapshot: ClusterSnapshot,
    checker: PredicateChecker,
    types: Sequence[InstanceType],
    pods: Iterable[Pod],
    *,
    skip: Container[str] = frozenset(),
    existing_claims: Sequence[NodeClaim] = (),
    reserved: Sequence[Pod] = (),
    pool_limits: Mapping[str, Mapping[str, int]] = {},
) -> Outcome:
    """Schedule `pods` (bound ones are moved, pending ones bound) on the snapshot's nodes but
    those in `skip`, then on `existing_claims` (in-flight NodeClaims, kept as they are; a pod one
    of them was launched for waits for it, as Karpenter's nomination) and new NodeClaims.
    `reserved` pods (pending ones, pods of nodes being disrupted) go first and take room on the
    existing nodes and in-flight NodeClaims only; where they end up is not reported. The
    snapshot is left as found. A new NodeClaim is opened in the first pool (`types` come in pool
    weight order) with a type for the pod within `pool_limits` (pool -> the capacity it may still
    launch; a pool not in it has no limits)."""
    with SharedSimulation(
        snapshot,
        checker,
        types,
        skip=skip,
        existing_claims=existing_claims,
        reserved=reserved,
        pool_limits=pool_limits,
    ) as sim:
        return sim.schedule(pods)


class SharedSimulation:
    """`simulate` for several sets of pods on one cluster state, as consolidation asks it of
    candidate after candidate: the probes and the reserved pods' places are worked out once and
    kept (in a fork of the snapshot) while `schedule` tries each set in a fork of its own.

    A set whose own nodes are left out (`without`) sees the reserved pods where they would be had
    those nodes been skipped from the start, as long as no reserved pod was placed on one of
    them: first-fit picks the same node when a node it did not pick is taken away. When one
    was, the reserved pods are placed again for that set alone. Use it as a context manager:
    leaving it reverts the snapshot."""

    def __init__(
        self,
        snapshot: ClusterSnapshot,
        checker: PredicateChecker,
        types: Sequence[InstanceType],
        *,
        skip: Container[str] = frozenset(),
        existing_claims: Sequence[NodeClaim] = (),
        reserved: Sequence[Pod] = (),
        pool_limits: Mapping[str, Mapping[str, int]] = {},
    ):
        self.snapshot = snapshot
        self.checker = checker
        self.types = types
        self.skip = skip
        self.existing_claims = existing_claims
        self.reserved = reserved
        self.pool_limits = pool_limits
        # Pods an in-flight NodeClaim was launched for are counted in it already: they wait for it.
        self.nominated = {p.uid for claim in existing_claims for p in claim.pods}
        self._base: _Prepared | None = None

    def __enter__(self) -> SharedSimulation:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._base is not None:
            self._base = None
            self.snapshot.revert()

    def schedule(
        self, pods: Iterable[Pod], *, without: Collection[str] = (), max_new_claims: int | None = None
    ) -> Outcome:
        """Where `pods` would go with the nodes in `without` skipped as well (their pods move).
        `max_new_claims`: the caller can use only an outcome with every pod placed and at most
        that many new NodeClaims, so the first pod that fits nowhere, or that would open one
        NodeClaim more, ends the simulation (the outcome holds it)."""
        if self._base is None:
            self._base = self._prepare(self.skip)
        if not self._base.landed.isdisjoint(without):
            self.close()
            alone = self._prepare(_Union(without, self.skip))
            try:
                return self._place_pods(alone, pods, without, max_new_claims)
            finally:
                self.snapshot.revert()
        return self._place_pods(self._base, pods, without, max_new_claims)

    def _prepare(self, skip: Container[str]) -> _Prepared:
        """Fork, add a probe node per instance type and place the reserved pods."""
        snapshot, checker, types = self.snapshot, self.checker, self.types
        snapshot.fork()
        probes: dict[str, str] = {}
        for index, kind in enumerate(types):
            if kind.group_id in probes:  # the same group in another pool
                continue
            probe = kind.template.copy(f"karpenter-probe-{index}")
            snapshot.add_node(probe)
            probes[kind.group_id] = probe.name
        prepared = _Prepared(
            probes,
            _Skip(skip, set(probes.values())),
            [NodeClaim(list(c.options), list(c.pods), dict(c.requests)) for c in self.existing_claims],
        )
        for pod in sorted(self.reserved, key=pod_order):
            if pod.uid in self.nominated:
                continue
            standin = homeless(pod)
            dest = checker.find_node(standin, skip=prepared.everywhere_but)
            if dest is not None:
                _place(snapshot, pod, dest)
                prepared.landed.add(dest)
                continue
            kinds = self._admitted(prepared.admits, probes, pod, standin)
            for claim in prepared.inflight:
                options = [
                    k for k in claim.options if k in kinds and _within(claim.requests, pod, k.allocatable)
                ]
                if options:
                    claim.add(pod, options)
                    break
        return prepared

    def _admitted(
        self, admits: dict[tuple[Any, str], bool], probes: dict[str, str], pod: Pod, standin: Pod
    ) -> list[InstanceType]:
        """The instance types whose empty node would take `pod` (cached per pod shape)."""
        key = _shape_key(pod)
        result = []
        for kind in self.types:
            verdict = admits.get((key, kind.group_id))
            if verdict is None:
                verdict = admits[(key, kind.group_id)] = (
                    self.checker.fits(standin, probes[kind.group_id]) is None
                )
            if verdict:
                result.append(kind)
        return result

    def _place_pods(
        self,
        prepared: _Prepared,
        pods: Iterable[Pod],
        without: Collection[str],
        max_new_claims: int | None,
    ) -> Outcome:
        snapshot, checker = self.snapshot, self.checker
        left = {pool: dict(limit) for pool, limit in self.pool_limits.items()}
        destinations: dict[str, str] = {}
        claims: list[NodeClaim] = []
        unschedulable: list[Pod] = []
        inflight = [NodeClaim(list(c.options), list(c.pods), dict(c.requests)) for c in prepared.inflight]
        admits = dict(prepared.admits)
        skip = _Skip(_Union(without, prepared.everywhere_but.skip), prepared.everywhere_but.probes)
        snapshot.fork()
        try:
            for pod in sorted(pods, key=pod_order):
                if pod.uid in self.nominated:
                    continue
                standin = homeless(pod)
                dest = checker.find_node(standin, skip=skip)
                if dest is not None:
                    destinations[pod.uid] = dest
                    _place(snapshot, pod, dest)
                    continue
                kinds = self._admitted(admits, prepared.probes, pod, standin)
                for claim in (*inflight, *claims):
                    options = [
                        k for k in claim.options if k in kinds and _within(claim.requests, pod, k.allocatable)
                    ]
                    if options:
                        claim.add(pod, options)
                        break
                else:
                    options = first_pool(
                        [k for k in kinds if k.headroom > 0 and _within({}, pod, k.allocatable)], left
                    )
                    if options:
                        claim = NodeClaim([])
                        claim.add(pod, options)
                        claims.append(claim)
                    else:
                        unschedulable.append(pod)
                        if max_new_claims is not None:
                            break
                    if max_new_claims is not None and len(claims) > max_new_claims:
                        break
        finally:
            snapshot.revert()
        return Outcome(destinations, tuple(claims), tuple(unschedulable))


@dataclass(slots=True)
class _Prepared:
    """A SharedSimulation's fork: the probes, what no pod may go to, the in-flight NodeClaims with the
    reserved pods that waited for them, the nodes the reserved pods took and the admission
    answers found so far."""

    probes: dict[str, str]
    everywhere_but: _Skip
    inflight: list[NodeClaim]
    landed: set[str] = field(default_factory=set)
    admits: dict[tuple[Any, str], bool] = field(default_factory=dict)


def _place(snapshot: ClusterSnapshot, pod: Pod, node: str) -> None:
    if snapshot.has_pod(pod.uid):
        snapshot.move_pod(pod.uid, node)
    else:
        snapshot.bind(pod, node)


class _Skip:
    """Nodes no pod may go to in a simulation: the caller's and the probes."""

    def __init__(self, skip: Container[str], probes: set[str]):
        self.skip = skip
        self.probes = probes

    def __contains__(self, name: object) -> bool:
        return name in self.probes or name in self.skip


class _Union:
    """Either of two sets of node names."""

    def __init__(self, first: Container[str], second: Container[str]):
        self.first = first
        self.second = second

    def __contains__(self, name: object) -> bool:
        return name in self.first or name in self.second
