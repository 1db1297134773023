"""One loop's decision, as a value: what `kubetide run` and `simulate` carry out and `plan` prints.

`decide(state, inputs)` takes the loop's steps in the cluster-state-registry design's order and
returns a LoopDecision; it calls no port that writes. Both drivers use it:

- `Autoscaler.run_once` (autoscaler/loop.py) runs `observe` (the registry's steps), carries out
  a halt or drives the deletions in progress (which only a healthy cluster gets), gathers the
  inputs from its ClusterView, runs `decide` from there, then carries the decision out through
  ClusterActions and the CloudProvider;
- `kubetide plan` gathers the inputs from a dump, decides with a fresh LoopState (no deletions
  in progress offline), and prints.

So plan cannot skip a step the loop takes (it once left out UC6's holds and
enforce-node-group-min-size, and said "would delete" of a node the loop holds).

    registry update -> unhealthy? halt -> unregistered instances to delete -> group sizes to fix
    (then halt) -> scale-up (pod-driven, then enforce-node-group-min-size) -> pending pods that fit
    existing nodes bound for scale-down -> scale-down plan -> UC6 holds -> parallelism budgets

The decision assumes the scale-ups it chooses happen: a loop that scales up starts no deletion,
whatever scale-down-delay-after-add is (the Cluster Autoscaler's RunOnce returns after a
scale-up, "No scale down in this iteration"; the planner still runs, so candidates keep their
timers and `plan` shows them), and that delay pauses the loops after it. The driver tells the
planner of the ones that did (`Planner.note_scale_up`), which is what later loops' pauses count
from.
"""

from __future__ import annotations

import enum
import random
from collections.abc import Collection
from dataclasses import dataclass, field, replace

from kubetide.autoscaler.clusterstate import ClusterStateRegistry
from kubetide.autoscaler.clusterstate.records import SizeFix, UnregisteredInstance
from kubetide.autoscaler.events import Event
from kubetide.autoscaler.inputs import LoopInputs
from kubetide.autoscaler.options import AutoscalerOptions
from kubetide.autoscaler.ports import CloudProvider
from kubetide.autoscaler.scaledown import NodeReason
from kubetide.autoscaler.scaledown.actuation import NodeBasis, basis_of
from kubetide.autoscaler.scaledown.planning import (
    BEING_DELETED,
    BudgetDecision,
    Planner,
    ScaleDownPlan,
    ScaleDownSchedule,
    ScheduleMemo,
    crop,
    plan_schedule,
)
from kubetide.autoscaler.scaleup.expanders import ExpanderService
from kubetide.autoscaler.scaleup.orchestrator import (
    Increase,
    ScaleUp,
    ScaleUpPlan,
    min_size_increases,
)
from kubetide.clock import Timer, timed
from kubetide.scheduling import PredicateChecker
from kubetide.snapshot import ClusterSnapshot


class Halt(enum.Enum):
    """Why a loop stopped before scale-up and scale-down."""

    CLUSTER_UNHEALTHY = "ClusterUnhealthy"  # UC8: too many unready nodes
    NODE_GROUP_SIZES_FIXED = "NodeGroupSizesFixed"  # UC4: the next loop starts from fixed targets


@dataclass(slots=True)
class LoopDecision:
    """Everything one loop decided, before anything is carried out."""

    now: float
    halted: Halt | None = None
    halt_message: str = ""
    events: list[Event] = field(default_factory=list)  # the registry's, this loop
    unregistered: dict[str, list[UnregisteredInstance]] = field(default_factory=dict)  # group ->
    size_fixes: list[SizeFix] = field(default_factory=list)
    scale_up: ScaleUpPlan | None = None
    increases: list[Increase] = field(default_factory=list)  # pod-driven, then min-size ones
    min_size_groups: list[str] = field(default_factory=list)  # groups raised to their min size
    bound: dict[str, str] = field(default_factory=dict)  # pending pod key -> the node it fits now
    scale_down: ScaleDownPlan | None = None
    held: list[str] = field(default_factory=list)  # UC6: unready nodes kept until their pods go
    budget: BudgetDecision | None = None  # which removable nodes start now
    basis: dict[str, NodeBasis] = field(default_factory=dict)  # what was seen of each of them
    cooldown_expired: bool = False  # plan only: this loop's scale-up pause taken as run out
    # Seconds (by the Timer) of its steps, under CA's function_duration_seconds labels (scaleUp
    # for its plan, findUnneeded, and scale-up's own): for the metrics, never a decision's input.
    durations: dict[str, float] = field(default_factory=dict)

    @property
    def to_delete(self) -> list[str]:
        """The nodes whose deletion starts now: empty ones, then drains."""
        if self.budget is None:
            return []
        return [*self.budget.empty, *self.budget.drain]


class LoopState:
    """What the loop keeps between iterations: the registry, scale-up's expander state and the
    scale-down planner. `kubetide plan` starts from a fresh one; `timers_expired` is its switch
    (unneeded timers and this loop's scale-up pause taken as run out)."""

    def __init__(
        self,
        options: AutoscalerOptions,
        *,
        timer: Timer,
        seed: int | random.Random = 0,
        timers_expired: bool = False,
        expander_service: ExpanderService | None = None,
    ):
        self.options = options
        self.timer = timer
        self.registry = ClusterStateRegistry(options)
        self.scale_up = ScaleUp(options, seed=seed, timer=timer, expander_service=expander_service)
        self.planner = Planner(options, timers_expired=timers_expired, timer=timer)
        self.schedule_memo = ScheduleMemo()  # the drains' schedule, kept between loops (estimate.py)


def observe(state: LoopState, snapshot: ClusterSnapshot, cloud: CloudProvider, now: float) -> LoopDecision:
    """The loop's first steps: the registry takes in the nodes, then halts (an unhealthy cluster,
    group sizes to fix) and unregistered instances to delete. The run loop carries these out
    and drives the deletions in progress before `decide` goes on from here."""
    registry = state.registry
    decision = LoopDecision(now)
    registry.update(list(snapshot.nodes()), cloud, now)
    decision.events = registry.take_events()
    if not registry.is_cluster_healthy():
        counts = registry.node_counts()
        decision.halted = Halt.CLUSTER_UNHEALTHY
        decision.halt_message = (
            f"cluster unhealthy: {counts.unready} of {counts.registered} registered nodes are unready"
        )
        return decision
    decision.unregistered = registry.unregistered_nodes_to_delete(now)
    decision.size_fixes = registry.size_fixes(now)
    if decision.size_fixes:
        # The seed's algorithm: after fixing sizes, the rest of the iteration is skipped so that
        # the next one starts from the corrected targets.
        decision.halted = Halt.NODE_GROUP_SIZES_FIXED
        decision.halt_message = "fixed node group sizes"
    return decision


def decide(
    state: LoopState,
    inputs: LoopInputs,
    *,
    cloud: CloudProvider,
    checker: PredicateChecker,
    observed: LoopDecision | None = None,
    past_halt: bool = False,
) -> LoopDecision:
    """The whole loop's decision on `inputs.snapshot` (left as found): `observe`'s steps (unless
    the caller ran them: `observed`), then scale-up and scale-down. `past_halt` (plan's) goes on
    after an unhealthy cluster's halt to show what the loop would do otherwise; the decision
    still says it halted."""
    decision = observed if observed is not None else observe(state, inputs.snapshot, cloud, inputs.now)
    if decision.halted is Halt.NODE_GROUP_SIZES_FIXED or (decision.halted is not None and not past_halt):
        return decision
    with timed(decision.durations, "scaleUp", state.timer):
        _decide_scale_up(state, inputs, cloud, checker, decision)
    if decision.scale_up is not None:
        decision.durations.update(decision.scale_up.durations)
    if state.options.scale_down_enabled:
        with timed(decision.durations, "findUnneeded", state.timer):
            _decide_scale_down(state, inputs, cloud, checker, decision)
    return decision


def _decide_scale_up(
    state: LoopState,
    inputs: LoopInputs,
    cloud: CloudProvider,
    checker: PredicateChecker,
    decision: LoopDecision,
) -> None:
    registry, now = state.registry, inputs.now
    groups = cloud.node_groups()

    def backed_off(group_id: str) -> bool:
        return registry.is_backed_off(group_id, now)

    plan = state.scale_up.plan(
        inputs,
        node_groups=groups,
        upcoming=registry.upcoming_nodes(),
        backed_off=backed_off,
        healthy=registry.is_node_group_healthy,
        never_ready=registry.never_ready_nodes,
        checker=checker,
    )
    decision.scale_up = plan
    decision.increases = list(plan.increases)
    if state.options.enforce_node_group_min_size:
        planned = {i.group_id for i in plan.increases}
        for increase in min_size_increases(
            groups,
            backed_off=backed_off,
            healthy=registry.is_node_group_healthy,
            never_ready=registry.never_ready_nodes,
        ):
            if increase.group_id not in planned:
                decision.increases.append(increase)
                decision.min_size_groups.append(increase.group_id)


def _decide_scale_down(
    state: LoopState,
    inputs: LoopInputs,
    cloud: CloudProvider,
    checker: PredicateChecker,
    decision: LoopDecision,
) -> None:
    """Plan on the cluster as the scheduler will leave it: pending pods that filter-out-schedulable
    placed on existing nodes are bound there first (CA's snapshot carries them), in a fork."""
    snapshot, planner, registry = inputs.snapshot, state.planner, state.registry
    scale_up = decision.scale_up
    by_key = {pod.key: pod for pod in inputs.pending}
    snapshot.fork()
    try:
        for key, node in scale_up.schedulable.items() if scale_up is not None else ():
            pod = by_key.get(key)
            if pod is not None and node in snapshot and not snapshot.has_pod(pod.uid):
                snapshot.bind(pod, node)
                decision.bound[key] = node
        scaling_up = bool(decision.increases)
        decision.cooldown_expired = scaling_up and planner.timers_expired
        being_deleted = {*inputs.being_deleted, *registry.being_deleted_nodes()}
        plan = planner.update(
            replace(inputs, being_deleted=being_deleted), cloud=cloud, checker=checker, scaling_up=scaling_up
        )
    finally:
        snapshot.revert()
    decision.held = hold_unready_drains(plan, registry.unready_nodes_at_target())
    plan.schedule = drain_schedule(plan, planner, inputs, state.options, state.schedule_memo, decision.held)
    decision.scale_down = plan
    in_progress = inputs.deletions_in_progress
    if in_progress is None:
        deleting = [s for s in plan.nodes.values() if s.status == BEING_DELETED]
        empty = sum(1 for s in deleting if s.empty)
        in_progress = (empty, len(deleting) - empty)
    empty_in_progress, drain_in_progress = in_progress
    if plan.empty_to_delete or plan.drain_to_delete:
        decision.budget = crop(
            plan.empty_to_delete,
            plan.drain_to_delete,
            state.options,
            empty_in_progress=empty_in_progress,
            drain_in_progress=drain_in_progress,
        )
        decision.basis = {name: basis_of(snapshot, name, inputs.pdbs) for name in decision.to_delete}


def drain_schedule(
    plan: ScaleDownPlan,
    planner: Planner,
    inputs: LoopInputs,
    options: AutoscalerOptions,
    memo: ScheduleMemo | None,
    held: Collection[str] = (),
) -> ScaleDownSchedule:
    """The plan's drains on paper (estimate.py): its candidates that drain, but those `held`,
    each from when its unneeded timer lets it go."""
    snapshot, now = inputs.snapshot, inputs.now
    return plan_schedule(
        [n for n in plan.candidate_set if n in plan.drains and n not in held],
        plan.waiting_for_budget,
        plan.drains,
        {name: surge.pods for name, surge in plan.surges.items()},
        snapshot,
        inputs.pdbs,
        inputs.workloads,
        options,
        now,
        lambda name: _removable_at(planner, snapshot, name, now, planner.options),
        memo,
    )


def _removable_at(
    planner: Planner, snapshot: ClusterSnapshot, name: str, now: float, options: AutoscalerOptions
) -> float:
    """When an unneeded node's timer lets it go (now with the timers taken as run out)."""
    if planner.timers_expired or name not in snapshot or name not in planner.unneeded_since:
        return now
    return planner.unneeded_since.removable_at(name, ready=snapshot.node(name).ready, options=options)


def hold_unready_drains(plan: ScaleDownPlan, unready_at_target: set[str]) -> list[str]:
    """UC6: an unready node of a group at its target size leaves only once the node controller
    has removed its pods (the registry design). Its drain would evict pods its dead kubelet
    cannot stop, so a node still holding pods that need a home is held, not drained; once they
    are gone it is empty and may go. Returns the held nodes."""
    held = [name for name in plan.drain_to_delete if name in unready_at_target]
    for name in held:
        plan.drain_to_delete.remove(name)
        status = plan.nodes[name]
        status.reason = NodeReason.NOT_UNNEEDED_OTHER_REASON
        status.detail = "unready: waiting for the node controller to remove its pods (UC6)"
        status.estimate = None  # it is not drained
    return held


__all__ = [
    "Halt",
    "LoopDecision",
    "LoopInputs",
    "LoopState",
    "decide",
    "hold_unready_drains",
    "observe",
]
