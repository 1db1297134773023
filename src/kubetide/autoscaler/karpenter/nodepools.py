"""Karpenter's NodePools in the simulator: which instance types each may launch, its limits, its
weight, and its disruption settings (a scenario's `spec.nodePools`; sim/spec/nodepools.py reads it).

- A NodePool's `requirements` (node selector requirements, model/selectors.py) choose the node
  groups it may launch: a group belongs to every pool whose requirements its template's labels
  satisfy. Without `spec.nodePools` there is one pool, `default`, that may launch every group.
- Provisioning (scheduling.py) opens a new NodeClaim in the pool of the highest `weight` (name
  breaking ties) that has an instance type for the pod within the pool's remaining `limits`; the
  claim's capacity is taken off what is left at once (the most of each resource over its options,
  as Karpenter's scheduler subtracts), so a pool at its limit launches nothing more and the pods
  go to the next pool by weight.
- Each pool has its own disruption settings (consolidationPolicy, consolidateAfter, budgets,
  terminationGracePeriod); a field a pool leaves out is the karpenter-* flag's value, so `--set`
  still reaches pools that do not set it. Budgets are counted per pool (`Budgets`).
- Spot-to-spot consolidation (`spot_replacements`), behind Karpenter's SpotToSpotConsolidation
  feature gate (the karpenter-spot-to-spot-consolidation flag, off by default).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar

from kubetide.model.nodepool import Budget, NodePoolSettings
from kubetide.model.selectors import Requirement

DEFAULT_POOL = "default"
CAPACITY_TYPE_LABEL = "karpenter.sh/capacity-type"
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
SPOT = "spot"
ON_DEMAND = "on-demand"
# consolidation.go MinInstanceTypesForSpotToSpotConsolidation: a single spot node is replaced by
# a cheaper spot node only when at least this many cheaper instance types could be launched, and
# the launch is held to the 15 cheapest (no "walking down the price ladder", spot-consolidation.md)
MIN_SPOT_TO_SPOT_TYPES = 15


@dataclass(frozen=True, slots=True)
class NodePool:
    """One NodePool. A disruption field left None takes the karpenter-* flag's value."""

    name: str = DEFAULT_POOL
    weight: int = 0
    requirements: tuple[Requirement, ...] = ()
    limits: tuple[tuple[str, int], ...] = ()  # resource -> the most capacity its nodes may have
    consolidation_policy: str | None = None
    consolidate_after: float | None = None
    budgets: tuple[Budget, ...] | None = None
    termination_grace_period: float | None = None

    def admits(self, labels: Mapping[str, str]) -> bool:
        """A node (or a group's template) with these labels may be this pool's."""
        return all(r.matches(labels) for r in self.requirements)

    def settings(self, flags: NodePoolSettings) -> NodePoolSettings:
        """The pool's disruption settings, the flags' where it gives none."""
        return NodePoolSettings(
            consolidation_policy=_either(self.consolidation_policy, flags.consolidation_policy),
            consolidate_after=_either(self.consolidate_after, flags.consolidate_after),
            budgets=_either(self.budgets, flags.budgets),
            termination_grace_period=_either(self.termination_grace_period, flags.termination_grace_period),
        )


T = TypeVar("T")


def _either(own: T | None, flag: T) -> T:
    return flag if own is None else own


def by_weight(pools: Sequence[NodePool]) -> list[NodePool]:
    """The order provisioning tries pools in: highest weight first, then by name."""
    return sorted(pools, key=lambda p: (-p.weight, p.name))


def pool_for(labels: Mapping[str, str], pools: Sequence[NodePool]) -> NodePool | None:
    """The pool a node that no launch recorded belongs to (adopted, or launched before a restart):
    the first of `pools` (in weight order) whose requirements its labels meet."""
    return next((p for p in pools if p.admits(labels)), None)


class Offering(Protocol):
    """What the pools read of an instance type (scheduling.py's InstanceType)."""

    @property
    def group_id(self) -> str: ...
    @property
    def price(self) -> float: ...
    @property
    def pool(self) -> str: ...
    @property
    def capacity(self) -> dict[str, int]: ...
    @property
    def capacity_type(self) -> str: ...
    @property
    def instance_type(self) -> str: ...


OfferingT = TypeVar("OfferingT", bound=Offering)


# -- limits ----------------------------------------------------------------------------------------
def remaining(pool: NodePool, capacities: Sequence[Mapping[str, int]]) -> dict[str, int]:
    """What a pool with limits may still launch, given its nodes' (and in-flight NodeClaims')
    capacities."""
    left = dict(pool.limits)
    for capacity in capacities:
        for resource in left:
            left[resource] -= capacity.get(resource, 0)
    return left


def _fits(capacity: Mapping[str, int], left: Mapping[str, int]) -> bool:
    return all(capacity.get(resource, 0) <= amount for resource, amount in left.items())


def first_pool(options: Sequence[OfferingT], left: dict[str, dict[str, int]]) -> list[OfferingT]:
    """A new NodeClaim's options: those of the first pool (options come in pool weight order)
    with an instance type within its remaining limits (`left`: pool -> what is left, absent for
    a pool without limits). The claim's capacity (the most of each resource over the kept
    options) is taken off the pool's remaining limits."""
    pools = list(dict.fromkeys(o.pool for o in options))
    for pool in pools:
        limit = left.get(pool)
        kept = [o for o in options if o.pool == pool and (limit is None or _fits(o.capacity, limit))]
        if not kept:
            continue
        if limit is not None:
            for resource in limit:
                limit[resource] -= max(o.capacity.get(resource, 0) for o in kept)
        return kept
    return []


# -- budgets ---------------------------------------------------------------------------------------
class PooledCandidate(Protocol):
    @property
    def pool(self) -> str: ...


C = TypeVar("C", bound=PooledCandidate)


class Budgets(Mapping[str, int]):
    """The disruptions each pool has left per reason. As a mapping, the total over the pools
    (a plain `{reason: nodes}` is one `default` pool's)."""

    def __init__(self, by_pool: Mapping[str, Mapping[str, int]]):
        self.by_pool = {pool: dict(left) for pool, left in by_pool.items()}

    @classmethod
    def of(cls, budgets: Mapping[str, int] | Budgets) -> Budgets:
        return budgets if isinstance(budgets, Budgets) else cls({DEFAULT_POOL: budgets})

    def __getitem__(self, reason: str) -> int:
        if not any(reason in left for left in self.by_pool.values()):
            raise KeyError(reason)
        return sum(max(0, left.get(reason, 0)) for left in self.by_pool.values())

    def __iter__(self) -> Iterator[str]:
        return iter(dict.fromkeys(r for left in self.by_pool.values() for r in left))

    def __len__(self) -> int:
        return len(list(iter(self)))

    def left(self, pool: str, reason: str) -> int:
        return self.by_pool.get(pool, {}).get(reason, 0)

    def within(self, candidates: Sequence[C], reason: str) -> list[C]:
        """The candidates, in order, that their pools' budgets for `reason` let go."""
        used: dict[str, int] = {}
        kept = []
        for candidate in candidates:
            if used.get(candidate.pool, 0) < self.left(candidate.pool, reason):
                used[candidate.pool] = used.get(candidate.pool, 0) + 1
                kept.append(candidate)
        return kept


# -- spot-to-spot ------------------------------------------------------------------------------------
def capacity_type(labels: Mapping[str, str]) -> str:
    """A node's or template's karpenter.sh/capacity-type; on-demand when it carries none."""
    return labels.get(CAPACITY_TYPE_LABEL, ON_DEMAND)


def spot_replacements(
    candidate_labels: Sequence[Mapping[str, str]],
    options: Sequence[OfferingT],
    candidates_price: float,
    *,
    enabled: bool,
) -> list[OfferingT] | str:
    """The replacement options once Karpenter's capacity-type rules are applied, or why there is
    no replacement. `options` are the NodeClaim's, not yet filtered by price; what is kept is in
    their order but for spot-to-spot's, cheapest first.

    - All candidates spot and the claim may be spot: spot-to-spot. Off (the feature gate's
      default): no replacement. On: only spot options strictly cheaper than the candidates; a
      single candidate needs at least 15 of them (distinct instance types) and keeps the 15
      cheapest; several candidates need no such flexibility.
    - Otherwise the options strictly cheaper than the candidates, pinned to spot when they hold
      both spot and on-demand (a spot shortage then fails the launch rather than launching a
      dearer on-demand node)."""
    all_spot = bool(candidate_labels) and all(capacity_type(c) == SPOT for c in candidate_labels)
    spot = [o for o in options if o.capacity_type == SPOT] if all_spot else []
    if spot:
        if not enabled:
            return "SpotToSpotConsolidation is disabled, can't replace a spot node with a spot node"
        spot.sort(key=lambda o: (o.price, o.group_id))
        cheaper = [o for o in spot if o.price < candidates_price]
        if not cheaper:
            return "can't replace a spot node with a cheaper spot node"
        if len(candidate_labels) > 1:
            return cheaper
        kinds = list(dict.fromkeys(o.instance_type for o in cheaper))
        if len(kinds) < MIN_SPOT_TO_SPOT_TYPES:
            return (
                f"SpotToSpotConsolidation requires {MIN_SPOT_TO_SPOT_TYPES} cheaper instance type "
                f"options than the current candidate to consolidate, got {len(kinds)}"
            )
        allowed = set(kinds[:MIN_SPOT_TO_SPOT_TYPES])
        return [o for o in cheaper if o.instance_type in allowed]
    cheaper = [o for o in options if o.price < candidates_price]
    pinned = [o for o in cheaper if o.capacity_type == SPOT]
    return pinned if pinned and len(pinned) < len(cheaper) else cheaper
