"""RunOnce: one autoscaler loop. The decision is decision.py's (the step order the
cluster-state-registry design gives, shared with `kubetide plan`); this module carries it out:

    observe (registry) -> halt (unhealthy: cancel deletions) | remove unregistered instances ->
    fix group sizes (halt) | drive deletions in progress (first loop: recover a previous run's)
    -> decide (scale-up, scale-down) -> increases -> start the deletions the budgets allow (none
    in a loop that scaled up: "No scale down in this iteration") -> soft taints -> status

Between loops, `drive_deletions()` advances only the deletions in progress, at the time
`next_wakeup()` names: the Cluster Autoscaler runs each deletion in a goroutine on its own timers
(an empty node goes node-delete-delay-after-taint after its taint, not at the next loop), and the
simulator and `kubetide run` call it then.

Everything reaches the world through the ports (Clock, ClusterView, ClusterActions,
CloudProvider), so this exact code runs in the simulator and against a real cluster. The loop
keeps one PredicateChecker attached to the view's snapshot across loops: its indexes follow the
snapshot incrementally, and rebuilding them every loop would cost more than the loop itself.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from kubetide.autoscaler.clusterstate import (
    ScaleDownSummary,
    ScaleUpSummary,
    StatusBuilder,
)
from kubetide.autoscaler.decision import Halt, LoopDecision, LoopInputs, LoopState, decide, observe
from kubetide.autoscaler.events import Event, StatusObject
from kubetide.autoscaler.explain import Explanation, UnblockRequest, explain
from kubetide.autoscaler.options import AutoscalerOptions
from kubetide.autoscaler.ports import (
    ActionError,
    CloudProvider,
    ClusterActions,
    ClusterView,
    NodeGroup,
    UsageSource,
)
from kubetide.autoscaler.scaledown.actuation import (
    Actuator,
    ReplacementRecords,
    SoftTaintMemo,
    Stale,
    StartResult,
    recover,
    release_orphans,
    stale_reason,
    update_soft_taints,
)
from kubetide.autoscaler.scaledown.explanation import (
    BLOCKER_ANNOTATION,
    UNBLOCK_REFRESH,
    UnblockMemo,
    annotation_changes,
    blocking_pods_text,
    single_replica_hold,
    single_replica_words,
)
from kubetide.autoscaler.scaledown.planning import (
    SCALED_UP_THIS_LOOP,
    BlockingPod,
    PendingReplacement,
    ScaleDownPlan,
)
from kubetide.autoscaler.scaleup.expanders import PRIORITY_CONFIGMAP, ExpanderService
from kubetide.autoscaler.scaleup.orchestrator import ScaleUpPlan
from kubetide.autoscaler.scaleup.skips import SkipReason
from kubetide.autoscaler.status import DrainStatus, ProviderFailure, UnremovableNode, WaitingNode
from kubetide.clock import Clock, Timer, timed
from kubetide.model import Node, PodDisruptionBudget, Workload
from kubetide.scheduling import PredicateChecker
from kubetide.snapshot import ClusterSnapshot


@dataclass(slots=True)
class LoopResult:
    """What one loop did: its decision, and what carrying it out gave."""

    now: float
    decision: LoopDecision | None = None
    explanation: Explanation | None = None  # the decision's (explain.py), when it planned scale-down
    halted: str | None = None  # why the loop stopped early, if it did
    scaled_up: dict[str, int] = field(default_factory=dict)  # group -> nodes added
    started: StartResult | None = None
    deleted: list[str] = field(default_factory=list)
    deleted_drained: set[str] = field(default_factory=set)  # of `deleted`, those drained (not empty)
    evicted: list[str] = field(default_factory=list)
    refused_evictions: list[str] = field(default_factory=list)  # refused by a PDB (429), retried
    failed_deletions: dict[str, str] = field(default_factory=dict)
    # Node -> why a single replica's budget holds it and what would drain it (blockers.py), for
    # the nodes said this loop (at most once per SINGLE_REPLICA_EVENT_INTERVAL each).
    single_replica_holds: dict[str, str] = field(default_factory=dict)
    # Seconds (by the Timer) each step took, under CA's function_duration_seconds labels
    # (updateClusterState, scaleUp, findUnneeded, scaleDown, ...): measurements for the metrics,
    # never an input to a decision.
    durations: dict[str, float] = field(default_factory=dict)

    @property
    def scale_up(self) -> ScaleUpPlan | None:
        return self.decision.scale_up if self.decision is not None else None

    @property
    def scale_down(self) -> ScaleDownPlan | None:
        return self.decision.scale_down if self.decision is not None else None

    @property
    def scale_down_skipped(self) -> str | None:
        """Why scale-down started nothing in a loop that scaled up (the Cluster Autoscaler's "No
        scale down in this iteration"), for the status message and the log; None otherwise."""
        decision = self.decision
        if decision is None or decision.scale_down is None or not decision.increases:
            return None
        return None if decision.cooldown_expired else SCALED_UP_THIS_LOOP


class Autoscaler:
    """The autoscaler. `run_once()` is one loop; the caller runs it every scan-interval."""

    def __init__(
        self,
        options: AutoscalerOptions,
        clock: Clock,
        view: ClusterView,
        actions: ClusterActions,
        cloud: CloudProvider,
        *,
        seed: int | random.Random = 0,
        timer: Timer,
        usage: UsageSource | None = None,
        timers_expired: bool = False,
        expander_service: ExpanderService | None = None,
    ):
        self.options = options
        self.usage = usage  # real usage for scale-down's QoS watermark guard, when there is a source
        self.clock = clock
        self.view = view
        self.actions = actions
        self.cloud = cloud
        # expander_service: the grpc expander's; whoever made it closes it.
        self.state = LoopState(
            options, timer=timer, seed=seed, timers_expired=timers_expired, expander_service=expander_service
        )
        self.registry = self.state.registry
        self.planner = self.state.planner
        self.actuator = Actuator(options, actions, cloud, self.planner)
        self.status = StatusBuilder()
        self.status_object = StatusObject.of(options)  # where cluster-wide events go
        self.timer = timer
        self._checker: PredicateChecker | None = None
        self._checked_snapshot: ClusterSnapshot | None = None
        self._recovered = False
        # The replacements in flight, recorded on their nodes for a restarted process (restart.py).
        self._replacement_records = ReplacementRecords()
        # Skips the soft-taint pass while nodes and the candidate set stay as a quiet pass left
        # them (a walk over every node's taints each loop otherwise).
        self._soft_taints = SoftTaintMemo()
        # What would unblock each blocked node, kept while it stays blocked the same way.
        self._unblocks = UnblockMemo(UNBLOCK_REFRESH)
        # Node -> when its single-replica hold was last said in an Event and the log.
        self._single_replica_said: dict[str, float] = {}

    def close(self) -> None:
        if self._checker is not None:
            self._checker.close()
            self._checker = None

    # -- the loop ------------------------------------------------------------------------------
    def run_once(self) -> LoopResult:
        """Observe, drive the deletions in progress, decide (decision.py), carry it out."""
        now = self.clock.now()
        result = LoopResult(now)
        snapshot = self.view.snapshot()
        with timed(result.durations, "updateClusterState", self.timer):
            observed = observe(self.state, snapshot, self.cloud, now)
        result.decision = observed
        self._emit(observed.events)
        if observed.halted is Halt.CLUSTER_UNHEALTHY:
            self._halt_unhealthy(snapshot, observed, now, result)
            return result
        self._remove_unregistered(observed, now)
        if observed.halted is Halt.NODE_GROUP_SIZES_FIXED:
            self._fix_node_group_sizes(observed, now)
            result.halted = observed.halt_message
            self._write_status(now)
            return result
        pdbs = self.view.pdbs()
        workloads = self.view.workloads()
        if self.options.scale_down_enabled:
            self._drive_deletions_in_progress(snapshot, pdbs, workloads, now, result)
        usage = self.usage.sample() if self.usage is not None and self.options.scale_down_enabled else None
        inputs = LoopInputs(
            now,
            snapshot,
            pending=self.view.pending_pods(),
            pdbs=pdbs,
            workloads=workloads,
            # CA reads it from its --namespace, beside the status ConfigMap.
            priorities=self.view.configmap(self.options.namespace, PRIORITY_CONFIGMAP),
            usage=usage,
            being_deleted=self.actuator.being_deleted(),
            deletions_in_progress=self.actuator.in_progress(),
        )
        decision = decide(
            self.state, inputs, cloud=self.cloud, checker=self._checker_for(snapshot), observed=observed
        )
        result.durations.update(decision.durations)  # scaleUp (its plan) and findUnneeded, ...
        held: dict[str, BlockingPod] = {}
        if decision.scale_down is not None:
            held = {
                name: blocker
                for name, status in decision.scale_down.nodes.items()
                if (blocker := single_replica_hold(status, inputs, self.options)) is not None
            }
            result.explanation = self._explain(inputs, decision, result, held)
        with timed(result.durations, "scaleUp", self.timer):
            self._scale_up(decision, now, result)
        if decision.scale_down is not None:
            with timed(result.durations, "scaleDown", self.timer):
                self._scale_down(snapshot, decision, now, result)
            if self.options.annotate_scale_down_blockers:
                # After the actuator has started its nodes: their validation compares annotations.
                self._annotate_blockers(decision.scale_down, snapshot.nodes())
            self._say_single_replica_holds(decision.scale_down, held, now, result)
        self._write_status(now, result=result, message=result.scale_down_skipped or "")
        return result

    def next_wakeup(self) -> float | None:
        """When a deletion in progress next has something to do (the actuator's timers), or None.
        The caller runs `drive_deletions()` then when it comes before the next loop."""
        return self.actuator.next_wakeup()

    def drive_deletions(self) -> LoopResult:
        """Advance the deletions in progress only (no planning, no scale-up, no status): what
        CA's deletion goroutines do between loops. Deletions started by this process only: a
        previous run's are taken over by the first loop's recover()."""
        now = self.clock.now()
        result = LoopResult(now)
        if not self.actuator.deletions:
            return result
        snapshot = self.view.snapshot()
        with timed(result.durations, "scaleDown:nodeDeletion", self.timer):
            tick = self.actuator.tick(
                snapshot,
                now,
                pdbs=self.view.pdbs(),
                workloads=self.view.workloads(),
                checker=self._checker_for(snapshot),
            )
        result.deleted, result.evicted, result.failed_deletions = tick.deleted, tick.evicted, tick.failed
        result.deleted_drained = tick.deleted_drained
        result.refused_evictions = tick.refused
        return result

    # -- carrying the decision out -------------------------------------------------------------
    def _drive_deletions_in_progress(
        self,
        snapshot: ClusterSnapshot,
        pdbs: Sequence[PodDisruptionBudget],
        workloads: Sequence[Workload],
        now: float,
        result: LoopResult,
    ) -> None:
        """Before deciding: on the first loop, resume or release what a previous run left tainted
        (restart safety); then advance the deletions in progress, as `drive_deletions` does
        between loops, so the decision sees the cluster they leave."""
        if not self._recovered:
            recover(
                self.planner,
                self.actuator,
                snapshot,
                cloud=self.cloud,
                now=now,
                pdbs=pdbs,
                workloads=workloads,
                records=self._replacement_records,
            )
            self._recovered = True
        with timed(result.durations, "scaleDown:nodeDeletion", self.timer):
            tick = self.actuator.tick(
                snapshot, now, pdbs=pdbs, workloads=workloads, checker=self._checker_for(snapshot)
            )
        result.deleted, result.evicted, result.failed_deletions = tick.deleted, tick.evicted, tick.failed
        result.deleted_drained = tick.deleted_drained
        result.refused_evictions = tick.refused

    def _halt_unhealthy(
        self, snapshot: ClusterSnapshot, decision: LoopDecision, now: float, result: LoopResult
    ) -> None:
        """UC8: a broken cluster is not made worse. Unneeded timers restart once it recovers, and
        deletions in progress are cancelled: their nodes are capacity again rather than cordoned
        for the whole halt (nothing drives them while the loop is halted), and so are nodes a
        previous run left tainted."""
        self.planner.clear()
        self._replacement_records.sync(self.actions, self.planner.replacing, snapshot)
        why = f"scale-down cancelled: {decision.halt_message}"
        result.failed_deletions.update(self.actuator.cancel_all(now, why))
        release_orphans(self.actuator, snapshot, cloud=self.cloud, why=why, now=now)
        self.actions.emit_event(Event.cluster_unhealthy(self.status_object, decision.halt_message, now))
        result.halted = decision.halt_message
        self._write_status(now, message=decision.halt_message)

    def _remove_unregistered(self, decision: LoopDecision, now: float) -> None:
        """UC5: instances that never registered as nodes are deleted, group by group."""
        for group_id, instances in decision.unregistered.items():
            group = self._group(group_id)
            if group is None:
                continue
            ids = [u.instance_id for u in instances]
            try:
                group.delete_nodes([u.node for u in instances])
            except ActionError as exc:
                self.actions.emit_event(
                    Event.delete_unregistered_failed(self.status_object, group_id, str(exc), now)
                )
                continue
            for instance_id in ids:
                self.actions.emit_event(
                    Event.delete_unregistered(self.status_object, instance_id, group_id, now)
                )
            self.registry.record_unregistered_removed(group_id, ids, now)

    def _fix_node_group_sizes(self, decision: LoopDecision, now: float) -> None:
        """UC4: a group that has been missing requested nodes for too long shrinks to what exists."""
        for fix in decision.size_fixes:
            group = self._group(fix.group_id)
            if group is None:
                continue
            try:
                group.decrease_target_size(fix.delta)
            except ActionError as exc:
                self.actions.emit_event(Event.fix_node_group_size_failed(self.status_object, str(exc), now))
                continue
            self.registry.record_target_size_fixed(fix.group_id, fix.decrease, now)

    def _scale_up(self, decision: LoopDecision, now: float, result: LoopResult) -> None:
        registry, plan = self.registry, decision.scale_up
        assert plan is not None  # a loop that did not halt decided scale-up
        succeeded: set[str] = set()
        for increase in decision.increases:
            group = self._group(increase.group_id)
            if group is None:
                continue
            try:
                group.increase_size(increase.delta)
            except ActionError as exc:
                registry.register_failed_scale_up(increase.group_id, "CloudProviderError", now, str(exc))
                self.actions.emit_event(
                    Event.failed_to_scale_up_group(self.status_object, increase.group_id, str(exc), now)
                )
                continue
            registry.register_scale_up(increase.group_id, increase.delta, now)
            succeeded.add(increase.group_id)
            result.scaled_up[increase.group_id] = increase.delta
        for event in plan.events_after(succeeded):
            self.actions.emit_event(event)
        if succeeded:
            self.planner.note_scale_up(now)

    def _scale_down(
        self, snapshot: ClusterSnapshot, decision: LoopDecision, now: float, result: LoopResult
    ) -> None:
        plan = decision.scale_down
        assert plan is not None
        stale: dict[str, Stale] = {}
        if decision.basis:
            # Validation before acting: the cluster as it is now, not as it was when deciding.
            self.view.refresh()
            pending, pdbs = self.view.pending_pods(), self.view.pdbs()
            for name, basis in decision.basis.items():
                reason = stale_reason(basis, snapshot, pending, pdbs)
                if reason is not None:
                    stale[name] = reason
        with timed(result.durations, "scaleDown:nodeDeletion", self.timer):
            result.started = self.actuator.start(plan, snapshot, now, budget=decision.budget, stale=stale)
        self._launch_replacements(snapshot, plan, now, result)
        self._replacement_records.sync(self.actions, self.planner.replacing, snapshot)
        with timed(result.durations, "scaleDown:softTaintUnneeded", self.timer):
            update_soft_taints(
                self.actions,
                list(snapshot.nodes()),
                plan.candidate_set,
                now,
                self.options,
                timer=self.timer,
                memo=self._soft_taints,
            )

    def _launch_replacements(
        self, snapshot: ClusterSnapshot, plan: ScaleDownPlan, now: float, result: LoopResult
    ) -> None:
        """kubetide's cheaper-group replacement: the new node first (a scale-up the registry
        tracks like any other, without scale-down-delay-after-add: it is part of a scale-down);
        the planner drains the nodes it stands in for once it is Ready."""
        for replacement in plan.replacements:
            group = self._group(replacement.group_id)
            if group is None:
                continue
            before = frozenset(
                node.name
                for node in snapshot.nodes()
                if (owner := self.cloud.node_group_for(node)) is not None and owner.id == group.id
            )
            try:
                group.increase_size(1)
            except ActionError as exc:
                self.registry.register_failed_scale_up(group.id, "CloudProviderError", now, str(exc))
                self.actions.emit_event(
                    Event.failed_to_scale_up_group(self.status_object, group.id, str(exc), now)
                )
                continue
            self.registry.register_scale_up(group.id, 1, now)
            result.scaled_up[group.id] = result.scaled_up.get(group.id, 0) + 1
            self.planner.note_replacement(replacement.nodes, PendingReplacement(group.id, now, before))
            for name in replacement.nodes:
                self.actions.emit_event(Event.node_replacing(name, group.id, now))

    def _explain(
        self, inputs: LoopInputs, decision: LoopDecision, result: LoopResult, held: Collection[str]
    ) -> Explanation:
        """The decision's explanation (explain.py): its drain estimates for the status and, with
        --annotate-scale-down-blockers, what would unblock each unremovable node: kept answers
        (UnblockMemo), and new ones for the nodes it says are due, into the plan's statuses.
        Without the flag, only the nodes a single replica's budget holds (`held`, blockers.py)
        are answered."""
        checker = self._checker_for(inputs.snapshot)
        if not self.options.annotate_scale_down_blockers and not held:
            return explain(
                decision, inputs, options=self.options, cloud=self.cloud, checker=checker, timer=self.timer
            )
        plan = decision.scale_down
        assert plan is not None
        with timed(result.durations, "scaleDown:unblock", self.timer):
            only = None if self.options.annotate_scale_down_blockers else held
            due = self._unblocks.due(plan, inputs.now, only)
            explanation = explain(
                decision,
                inputs,
                options=self.options,
                cloud=self.cloud,
                checker=checker,
                timer=self.timer,
                unblock=UnblockRequest(nodes=due) if due else None,
            )
        self._unblocks.store(plan, explanation.unblocks, inputs.now)
        return explanation

    def _say_single_replica_holds(
        self, plan: ScaleDownPlan, held: Mapping[str, BlockingPod], now: float, result: LoopResult
    ) -> None:
        """An Event on each node a single replica's budget holds, and a line in the log, at most
        once per SINGLE_REPLICA_EVENT_INTERVAL per node (the status ConfigMap says it every loop)."""
        said = {name: at for name, at in self._single_replica_said.items() if name in held}
        for name, blocker in held.items():
            words = single_replica_words(plan.nodes[name], blocker)
            if words is None or now < said.get(name, -math.inf) + SINGLE_REPLICA_EVENT_INTERVAL:
                continue
            said[name] = now
            result.single_replica_holds[name] = words
            self.actions.emit_event(Event.single_replica_held(name, words, now))
        self._single_replica_said = said

    def _annotate_blockers(self, plan: ScaleDownPlan, nodes: Iterable[Node]) -> None:
        """kubetide.io/scale-down-blocker on each blocked node, off the others (blockers.py)."""
        for name, value in annotation_changes(plan, nodes).items():
            try:
                self.actions.annotate_node(name, BLOCKER_ANNOTATION, value)
            except ActionError:
                continue  # a report, not an action: the next loop sees the node unchanged and retries

    def _write_status(self, now: float, *, result: LoopResult | None = None, message: str = "") -> None:
        scale_up = ScaleUpSummary()
        scale_down = ScaleDownSummary()
        if result is not None and result.scale_up is not None:
            plan = result.scale_up
            needing = len(plan.pending) - len(plan.schedulable)
            scale_up = ScaleUpSummary(
                evaluated=True,
                pods_needing_nodes=max(0, needing),
                backed_off=bool(needing)
                and not plan.increases
                and any(skip.reason is SkipReason.BACKED_OFF for skip in plan.skipped_groups.values()),
                provider_failures={
                    group_id: ProviderFailure(name, skip.error_code, skip.detail)
                    for group_id, skip in plan.skipped_groups.items()
                    if (name := skip.provider_name) is not None
                },
            )
        if result is not None and result.scale_down is not None and result.explanation is not None:
            scale_down = _scale_down_summary(result.scale_down, result.explanation, self._candidates_by_group)
        self.actions.write_status(
            self.status.build(self.registry, now, scale_up=scale_up, scale_down=scale_down, message=message)
        )

    # -- helpers -------------------------------------------------------------------------------
    def _checker_for(self, snapshot: ClusterSnapshot) -> PredicateChecker:
        if self._checker is None or self._checked_snapshot is not snapshot:
            self.close()
            self._checker = PredicateChecker(snapshot)
            self._checked_snapshot = snapshot
        return self._checker

    def _group(self, group_id: str) -> NodeGroup | None:
        for group in self.cloud.node_groups():
            if group.id == group_id:
                return group
        return None

    def _candidates_by_group(self, names: Iterable[str]) -> dict[str, list[str]]:
        snapshot = self.view.snapshot()
        result: dict[str, list[str]] = {}
        for name in names:
            if name not in snapshot:
                continue
            group = self.cloud.node_group_for(snapshot.node(name))
            if group is not None:
                result.setdefault(group.id, []).append(name)
        return result

    def _emit(self, events: Iterable[Event]) -> None:
        for event in events:
            self.actions.emit_event(event)


def _scale_down_summary(
    plan: ScaleDownPlan, explanation: Explanation, by_group: Callable[[Iterable[str]], dict[str, list[str]]]
) -> ScaleDownSummary:
    """What the status says of scale-down: candidates per group, the drains they need (estimated
    time, budget waves, why risky) and the nodes waiting for budget."""
    scheduled = plan.schedule.drains if plan.schedule is not None else {}

    def seconds(name: str) -> int | None:
        return round(scheduled[name].seconds) if name in scheduled else None

    drains = tuple(
        DrainStatus(name, seconds(name) or round(estimate.seconds), estimate.waves, plan.risky.get(name, ""))
        for name in plan.candidate_set
        if (estimate := explanation.estimates.get(name)) is not None
    )
    waiting = tuple(
        WaitingNode(name, plan.nodes[name].detail, seconds(name)) for name in plan.waiting_for_budget
    )
    unremovable = tuple(
        UnremovableNode(
            s.name,
            str(s.reason),
            blocking_pods_text(s),
            s.unblock.text if s.unblock is not None else "",
        )
        for s in plan.nodes.values()
        if s.blocking_pod is not None or (s.unblock is not None and s.unblock.changes)
    )[:UNREMOVABLE_IN_STATUS]
    total = round(plan.schedule.seconds_to_last_removal) if plan.schedule is not None and scheduled else None
    return ScaleDownSummary(
        by_group(plan.candidate_set),
        drains,
        waiting,
        unremovable=unremovable,
        estimated_seconds_to_last_removal=total,
    )


# A node held by a single replica's budget is said again (Event, log line) after this many seconds.
SINGLE_REPLICA_EVENT_INTERVAL = 600.0
# Unremovable nodes the status lists (the ConfigMap must stay far below the API's 1 MiB).
UNREMOVABLE_IN_STATUS = 50
