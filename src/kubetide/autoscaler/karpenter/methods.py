"""Karpenter's disruption methods, tried in its order each loop: emptiness, drift, multi-node
consolidation, single-node consolidation (pkg/controllers/disruption/, v1.14). The first method
that returns a command wins the loop.

Each method is one small object implementing the scale-down planner's `DisruptionMethod`
(scaledown/planning/methods.py) as `DisruptionMethod[Inputs, Command]`, tried in order by the same
`try_in_order`: `propose(Inputs)` reads the loop's `Context` and the candidates and gives a
`Command` (nodes to remove and the instance types to launch in their place) or None. Karpenter's
rule that the first command wins is each method's own: it proposes nothing once an earlier one
did (`inputs.earlier`). `compute(ctx, candidates)` is the method's decision itself (Karpenter's
ComputeCommand). The methods read the snapshot (and leave it as found) and decide; the controller
(controller.py) validates and carries the command out.

Multi-node and single-node consolidation keep Karpenter's "consolidated" mark (state.py,
`ctx.consolidation`): given candidates, a method that finds nothing to do, with no candidate held
back by a budget, marks the cluster state it saw, and while that state holds it returns nothing at
once. With no candidates at all it is not asked (Karpenter's controller moves to the next method)
and marks nothing. Emptiness keeps no mark that could ever hold: its candidates are empty nodes,
each of which it deletes or a budget holds back.

A NodePool under the Balanced consolidation policy (`ctx.balanced`: its total cost and disruption)
takes a consolidation move only when its Balanced score (autoscaler/consolidation.py) reaches
1/k: single-node consolidation skips its candidates whose best case, a full delete, cannot pass,
and a move from several pools needs every Balanced source pool's approval (`balanced_refusal`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Container, Mapping, Sequence
from dataclasses import dataclass, field

from kubetide.autoscaler.consolidation import BALANCED_K, balanced_approves, balanced_score, reschedule_cost
from kubetide.autoscaler.karpenter.nodepools import DEFAULT_POOL, Budgets, spot_replacements
from kubetide.autoscaler.karpenter.scheduling import InstanceType, NodeClaim, SharedSimulation
from kubetide.autoscaler.karpenter.state import ConsolidationState
from kubetide.autoscaler.scaledown.planning import DisruptionMethod, try_in_order
from kubetide.model import Node, Pod
from kubetide.scheduling import PredicateChecker
from kubetide.snapshot import ClusterSnapshot

# Karpenter's disruption reasons (the budgets' `reasons`, the metrics' `reason` label)
EMPTY, DRIFTED, UNDERUTILIZED = "Empty", "Drifted", "Underutilized"
# multinodeconsolidation.go: at most this many candidates in one command
MAX_MULTI_NODE_CANDIDATES = 100
# consolidationPolicy values (a NodePool's, or the karpenter-consolidation-policy flag's)
WHEN_EMPTY, WHEN_UNDERUTILIZED, BALANCED = "WhenEmpty", "WhenEmptyOrUnderutilized", "Balanced"


@dataclass(frozen=True, slots=True)
class Candidate:
    node: Node
    group_id: str
    price: float
    pods: tuple[Pod, ...]  # the pods that would move (DaemonSet, mirror and finished pods aside)
    savings_ratio: float
    disruption_cost: float
    consolidatable: bool  # past consolidateAfter, under a policy that consolidates it
    drifted: bool = False
    pool: str = DEFAULT_POOL  # its NodePool (nodepools.py)

    @property
    def name(self) -> str:
        return self.node.name

    @property
    def empty(self) -> bool:
        return not self.pods

    @property
    def disruption(self) -> float:
        """What moving its pods disrupts (the Balanced score's): 1 + their positive eviction costs."""
        return reschedule_cost(self.pods)


@dataclass(frozen=True, slots=True)
class PoolTotals:
    """A NodePool's cost per hour and disruption summed over all its nodes, candidates or not:
    the Balanced score's denominators."""

    cost: float
    disruption: float


@dataclass(frozen=True, slots=True)
class Command:
    """Remove `candidates`, launching `replacements` first (one instance type each)."""

    method: str  # emptiness | drift | multi-node | single-node
    reason: str  # Empty | Drifted | Underutilized
    candidates: tuple[Candidate, ...]
    replacements: tuple[InstanceType, ...] = ()

    @property
    def decision(self) -> str:
        return "replace" if self.replacements else "delete"

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.candidates)

    @property
    def savings(self) -> float:
        return sum(c.price for c in self.candidates) - sum(r.price for r in self.replacements)


@dataclass
class Context:
    """What a method reads: the cluster (its snapshot and a checker attached to it), the
    NodePools' instance types (in pool weight order), the budgets left per pool and reason (a
    plain `{reason: nodes}` is the default pool's), the nodes pods may not move to, and the
    NodeClaims in flight."""

    snapshot: ClusterSnapshot
    checker: PredicateChecker
    types: Sequence[InstanceType]
    budgets: Budgets | Mapping[str, int]
    not_destinations: Container[str]
    inflight: Sequence[NodeClaim] = ()
    # pods that need room before any candidate's: pending ones and those of nodes being disrupted
    reserved: Sequence[Pod] = ()
    # why a candidate could not go (for Karpenter's Unconsolidatable / DisruptionBlocked events)
    blocked: dict[str, str] = field(default_factory=dict)
    # pool -> the capacity it may still launch (pools without limits are not in it)
    pool_limits: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    spot_to_spot: bool = False  # Karpenter's SpotToSpotConsolidation feature gate
    # the NodePools under the Balanced policy, with their totals
    balanced: Mapping[str, PoolTotals] = field(default_factory=dict)
    # Balanced moves scored: (approved | rejected, pool) -> how many
    # (karpenter_consolidation_moves_total{decision, nodepool})
    balanced_moves: Counter[tuple[str, str]] = field(default_factory=Counter)
    # the cluster's consolidation state (state.py), kept across loops; None: always compute
    consolidation: ConsolidationState | None = None

    @property
    def pool_budgets(self) -> Budgets:
        return Budgets.of(self.budgets)

    def is_consolidated(self, method: str) -> bool:
        """The method found nothing to do and the cluster has not changed since (IsConsolidated)."""
        return self.consolidation is not None and self.consolidation.is_consolidated(method)

    def found_nothing(self, method: str, held_back: bool) -> None:
        """The method found nothing to do: unless a budget held a candidate back, it is not tried
        again until the cluster changes (markConsolidated)."""
        if self.consolidation is not None and not held_back:
            self.consolidation.mark_consolidated(method)


@dataclass(frozen=True, slots=True)
class Inputs:
    """What a method reads: the loop's context, the candidates, and what the methods before it
    proposed."""

    ctx: Context
    candidates: Sequence[Candidate]
    earlier: tuple[Command, ...] = ()


class Method(ABC):
    """One of Karpenter's methods: a `DisruptionMethod[Inputs, Command]`."""

    name: str  # emptiness | drift | multi-node | single-node
    reason: str  # the disruption reason its commands carry

    def propose(self, inputs: Inputs) -> Command | None:
        """`compute`'s command, unless an earlier method proposed one: that one wins the loop."""
        return None if inputs.earlier else self.compute(inputs.ctx, inputs.candidates)

    @abstractmethod
    def compute(self, ctx: Context, candidates: Sequence[Candidate]) -> Command | None:
        """The command this method would give now, or None (marking in `ctx` what held back)."""


def by_savings(candidates: Sequence[Candidate]) -> list[Candidate]:
    """Highest savings per unit of disruption first; node name breaks ties, so runs repeat."""
    return sorted(candidates, key=lambda c: (-c.savings_ratio, c.name))


def shared_simulation(ctx: Context) -> SharedSimulation:
    """The scheduling simulation a method's candidates are tried on, one after another: the
    cluster but the nodes pods may not move to, with the reserved pods placed first."""
    return SharedSimulation(
        ctx.snapshot,
        ctx.checker,
        ctx.types,
        skip=ctx.not_destinations,
        existing_claims=ctx.inflight,
        reserved=ctx.reserved,
        pool_limits=ctx.pool_limits,
    )


def consolidate(
    ctx: Context,
    candidates: Sequence[Candidate],
    *,
    same_type_filter: bool,
    simulation: SharedSimulation | None = None,
    explain: bool = False,
) -> tuple[str, tuple[InstanceType, ...]] | str:
    """computeConsolidation: ("delete", ()) or ("replace", (type,)), or why not (a str).

    The candidates' pods are scheduled on the rest of the cluster (not on nodes being disrupted,
    nor on nodes still inside consolidateAfter) and on new NodeClaims, after the pods already
    waiting for room (pending ones, those of nodes being disrupted) took theirs. Any pod left over: no;
    no NodeClaim: delete; more than one: no (Karpenter never splits one node into several);
    one: replace with its cheapest instance type strictly cheaper than the candidates together
    (and, for several candidates, cheaper than any candidate of a type the replacement could
    be: otherwise deleting those alone would do). A method trying several candidates passes
    its `simulation` (shared_simulation) so that the reserved pods are placed once."""
    if simulation is None:
        with shared_simulation(ctx) as own:
            return consolidate(
                ctx, candidates, same_type_filter=same_type_filter, simulation=own, explain=explain
            )
    price = sum(c.price for c in candidates)
    # Only an outcome with every pod placed and at most one new NodeClaim can pass (none when no
    # instance type is strictly cheaper than the candidates): unless the reason is to be shown
    # (`explain`), the simulation stops at the first pod that settles it otherwise, and the
    # reason given can be another true one.
    outcome = simulation.schedule(
        [p for c in candidates for p in c.pods],
        without={c.name for c in candidates},
        max_new_claims=None if explain else 0 if all(t.price >= price for t in ctx.types) else 1,
    )
    if outcome.unschedulable:
        pod = outcome.unschedulable[0]
        return f"pod {pod.key} would not schedule"
    if not outcome.claims:
        return ("delete", ())
    if len(outcome.claims) > 1:
        return f"can't remove without creating {len(outcome.claims)} candidates"
    claim = outcome.claims[0]
    spot = spot_replacements(
        [c.node.labels for c in candidates], claim.options, price, enabled=ctx.spot_to_spot
    )
    if isinstance(spot, str):
        return spot
    options = spot
    if same_type_filter:
        options = filter_out_same_type(candidates, options)
    if not options:
        return "can't replace with a cheaper node"
    return ("replace", (min(options, key=lambda t: (t.price, t.group_id)),))


def balanced_refusal(
    ctx: Context, candidates: Sequence[Candidate], replacements: Sequence[InstanceType] = ()
) -> str | None:
    """Why a Balanced source pool refuses the move of `candidates` onto `replacements`, or None
    when every one approves (counting each pool's decision in `ctx.balanced_moves`). The move's
    net saving is attributed to each source pool by its share of the candidates' cost, and
    scored against the disruption of that pool's candidates."""
    price = sum(c.price for c in candidates)
    savings = price - sum(r.price for r in replacements)
    refusal = None
    for pool in dict.fromkeys(c.pool for c in candidates):
        totals = ctx.balanced.get(pool)
        if totals is None:
            continue
        own = [c for c in candidates if c.pool == pool]
        share = sum(c.price for c in own) / price if price > 0 else 0.0
        score = balanced_score(
            savings * share, totals.cost, sum(c.disruption for c in own), totals.disruption
        )
        approved = balanced_approves(score)
        ctx.balanced_moves[("approved" if approved else "rejected", pool)] += 1
        if not approved and refusal is None:
            refusal = f"NodePool {pool}: score {score:.2f} < threshold {1 / BALANCED_K:.2f} (Balanced)"
    return refusal


def filter_out_same_type(candidates: Sequence[Candidate], options: list[InstanceType]) -> list[InstanceType]:
    """Karpenter's filterOutSameInstanceType: when the replacement could be of a type some
    candidates already are, keep only options cheaper than the cheapest such candidate
    ("[2 x 2xl, small] -> 1 of {small, xl, 2xl}" is better done by deleting the 2xl's)."""
    types = {o.group_id for o in options}
    same = [c.price for c in candidates if c.group_id in types]
    if not same:
        return options
    ceiling = min(same)
    return [o for o in options if o.price < ceiling]


class Emptiness(Method):
    """Every empty, consolidatable node within the Empty budget, in one command."""

    name, reason = "emptiness", EMPTY

    def compute(self, ctx: Context, candidates: Sequence[Candidate]) -> Command | None:
        empty = by_savings([c for c in candidates if c.empty and c.consolidatable])
        chosen = ctx.pool_budgets.within(empty, EMPTY)
        held = {c.name for c in chosen}
        for c in (c for c in empty if c.name not in held):
            ctx.blocked[c.name] = "disruption budget for Empty reached"
        return Command(self.name, self.reason, tuple(chosen)) if chosen else None


class Drift(Method):
    """Drifted nodes one at a time (empty ones first, then the oldest), each replaced by the
    NodeClaims its pods need; a node whose pods would not all schedule is skipped."""

    name, reason = "drift", DRIFTED

    def compute(self, ctx: Context, candidates: Sequence[Candidate]) -> Command | None:
        if ctx.budgets.get(DRIFTED, 0) <= 0:
            return None
        drifted = sorted(
            (c for c in candidates if c.drifted),
            key=lambda c: (not c.empty, c.node.meta.creation_timestamp or 0.0, c.name),
        )
        with shared_simulation(ctx) as simulation:
            for candidate in drifted:
                if ctx.pool_budgets.left(candidate.pool, DRIFTED) <= 0:
                    continue
                outcome = simulation.schedule(candidate.pods, without={candidate.name})
                if outcome.unschedulable:
                    ctx.blocked[candidate.name] = f"pod {outcome.unschedulable[0].key} would not schedule"
                    continue
                replacements = tuple(claim.cheapest() for claim in outcome.claims)
                return Command(self.name, self.reason, (candidate,), replacements)
        return None


class MultiNodeConsolidation(Method):
    """The largest prefix of the candidates (by savings per disruption, within the Underutilized
    budget, at most 100) that can go at once, found by binary search on its length, deleted or
    replaced by one cheaper node, with every Balanced source pool's approval."""

    name, reason = "multi-node", UNDERUTILIZED

    def compute(self, ctx: Context, candidates: Sequence[Candidate]) -> Command | None:
        ranked = by_savings([c for c in candidates if c.consolidatable and not c.empty])
        if not ranked or ctx.is_consolidated(self.name):
            return None
        eligible = ctx.pool_budgets.within(ranked, UNDERUTILIZED)
        held_back = len(eligible) < len(ranked)
        eligible = eligible[:MAX_MULTI_NODE_CANDIDATES]
        if len(eligible) < 2:
            ctx.found_nothing(self.name, held_back)
            return None
        best: Command | None = None
        low, high = 1, len(eligible) - 1
        with shared_simulation(ctx) as simulation:
            while low <= high:
                mid = (low + high) // 2
                prefix = eligible[: mid + 1]
                result = consolidate(ctx, prefix, same_type_filter=True, simulation=simulation)
                if isinstance(result, tuple) and balanced_refusal(ctx, prefix, result[1]) is None:
                    best = Command(self.name, self.reason, tuple(prefix), result[1])
                    low = mid + 1
                else:
                    high = mid - 1
        if best is None:
            ctx.found_nothing(self.name, held_back)
        return best


class SingleNodeConsolidation(Method):
    """The first candidate (by savings per disruption) that can be deleted, or replaced by one
    strictly cheaper node, and whose pool approves if Balanced: one node per loop."""

    name, reason = "single-node", UNDERUTILIZED

    def compute(self, ctx: Context, candidates: Sequence[Candidate]) -> Command | None:
        ranked = by_savings([c for c in candidates if c.consolidatable and not c.empty])
        if not ranked or ctx.is_consolidated(self.name):
            return None
        if ctx.budgets.get(UNDERUTILIZED, 0) <= 0:
            return None  # every candidate held back by its budget: no mark
        held_back = False
        with shared_simulation(ctx) as simulation:
            for candidate in ranked:
                if ctx.pool_budgets.left(candidate.pool, UNDERUTILIZED) <= 0:
                    held_back = True
                    continue
                if candidate.pool in ctx.balanced and not can_pass_balanced(ctx, candidate):
                    continue
                result = consolidate(ctx, [candidate], same_type_filter=False, simulation=simulation)
                if isinstance(result, tuple):
                    result = balanced_refusal(ctx, [candidate], result[1]) or result
                if isinstance(result, tuple):
                    return Command(self.name, self.reason, (candidate,), result[1])
                ctx.blocked[candidate.name] = result
        ctx.found_nothing(self.name, held_back)
        return None


def can_pass_balanced(ctx: Context, candidate: Candidate) -> bool:
    """Karpenter's CanPassThreshold: the candidate's best case, deleting it outright, reaches its
    Balanced pool's threshold (else the simulation is not worth running)."""
    totals = ctx.balanced[candidate.pool]
    return balanced_approves(
        balanced_score(candidate.price, totals.cost, candidate.disruption, totals.disruption)
    )


def methods() -> tuple[DisruptionMethod[Inputs, Command], ...]:
    """Karpenter's order (controller.go NewMethods; Node Repair and StaticDrift aside)."""
    return (Emptiness(), Drift(), MultiNodeConsolidation(), SingleNodeConsolidation())


def first_command(
    ctx: Context,
    candidates: Sequence[Candidate],
    order: Sequence[DisruptionMethod[Inputs, Command]] | None = None,
) -> Command | None:
    """The first method's command, in `order` (Karpenter's by default)."""
    commands = try_in_order(
        order if order is not None else methods(), lambda earlier: Inputs(ctx, candidates, earlier)
    )
    return commands[0] if commands else None
