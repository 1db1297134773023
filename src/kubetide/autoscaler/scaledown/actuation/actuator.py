"""The parallel-drain design's StartDeletion, and the drains it starts.

`start` picks what the budgets allow from the planner's removable nodes, taints all of them with
ToBeDeletedByClusterAutoscaler in one go (rolling every taint back if one fails, so no node is
left half-chosen) and opens one `NodeDeletion` per node. Each deletion is a small state machine
that the loop advances with `tick` on every pass; there are no threads, so the simulator's
discrete-event clock and a real controller drive it the same way, and a deletion is always in a
well-defined phase:

  TAINTED   wait node-delete-delay-after-taint, then re-check the node's pods with the drain
            rules (a pod that now blocks aborts the deletion);
  EVICTING  evict the pods, retrying every 10 s (a PDB's 429 is a retry; a 404 means the pod is
            gone already) until the eviction deadline: max-pod-eviction-time per PDB budget wave
            the node's pods need (PdbTracker.waves), so a node drained pod by pod as its budgets allow
            (CA's "risky" node) is not abandoned while it progresses, and a stuck one still is;
            DaemonSet pods are evicted too when the daemonset-eviction-for-empty-nodes /
            -occupied-nodes flag says so, best effort; kubetide's own pacing on top: no pod of
            a recovering workload (evictions.py: a pod an earlier drain displaced is not Ready
            again) is evicted while a PDB covers it or it belongs to an OrderedReady
            StatefulSet, and such a StatefulSet loses one pod per wave across all drains (its
            controller recreates one ordinal at a time), so a node with several of its pods
            gets one wave each; while a pod with one possible destination (soledestination.py)
            is to be evicted or its replacement has no node yet, no drain evicts a pod that
            could take that node instead (one more wave for a drain started meanwhile);
  WAITING   wait for the evicted pods to disappear, up to the longest grace period
            (min(pod's, max-graceful-termination-sec)) + 30 s;
  DELAYED   hold while a running pod annotated safe-to-evict "on-completion" is on the node: it
            is never evicted, it is waited for until the drain's deadline (the later of the
            eviction deadline and WAITING's), then the deletion fails (oncompletion.py); then
            hold while the node carries delay-deletion.cluster-autoscaler.kubernetes.io/*
            annotations, up to node-deletion-delay-timeout;
  DELETING  wait for the node group's batch (node-deletion-batcher-interval, counted from the
            first node of the group ready to go; 0: at once), then delete the batch through the
            node group in one call.

Timing follows the Cluster Autoscaler, whose deletions run in goroutines rather than in its loop:
`next_wakeup()` is the earliest time a deletion has something to do (the end of the taint delay,
an eviction retry, a deadline, a batch), and the caller drives `tick` then too, not only once per
scan-interval, so an empty node goes node-delete-delay-after-taint after its taint.

Any failure aborts the node: its taint is removed and a ScaleDownFailed event names the cause.
As in CA, only a failure to start deletions (a taint that could not be written) pauses
scale-down for scale-down-delay-after-failure; a drain that fails later does not, so one stuck
node does not hold back every other one. scale-down-delay-after-delete counts from when
deletions start (the taints), as CA counts it. Evictions are recorded in the planner's
recent_evictions.
"""

from __future__ import annotations

import contextlib
import enum
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from kubetide.autoscaler.events import Event, StatusObject
from kubetide.autoscaler.options import AutoscalerOptions
from kubetide.autoscaler.ports import (
    TO_BE_DELETED_TAINT,
    ActionError,
    CloudProvider,
    ClusterActions,
    EvictionOutcome,
    NodeGroup,
)
from kubetide.autoscaler.scaledown.actuation.soledestination import competing, sole_destinations
from kubetide.autoscaler.scaledown.actuation.staleness import Stale
from kubetide.autoscaler.scaledown.planning.budgets import BudgetDecision, crop
from kubetide.autoscaler.scaledown.planning.drainability import (
    DrainContext,
    DrainRules,
    drain_node,
    index_workloads,
)
from kubetide.autoscaler.scaledown.planning.estimate import EVICTION_RETRY_INTERVAL
from kubetide.autoscaler.scaledown.planning.evictions import OwnerKey, owner_key
from kubetide.autoscaler.scaledown.planning.oncompletion import running_on_completion
from kubetide.autoscaler.scaledown.planning.pdb import PdbTracker
from kubetide.autoscaler.scaledown.planning.plan import ScaleDownPlan
from kubetide.autoscaler.scaledown.planning.surge import Surge
from kubetide.autoscaler.scaledown.planning.update import pod_order, size_class
from kubetide.model import Node, Pod, PodDisruptionBudget, Taint, Workload
from kubetide.model.workloads import rolling_out
from kubetide.scheduling.checker import PredicateChecker
from kubetide.snapshot import ClusterSnapshot

DELAY_DELETION_PREFIX = "delay-deletion.cluster-autoscaler.kubernetes.io/"
POD_EVICTION_HEADROOM = 30.0  # extra wait after the longest grace period


class Phase(enum.Enum):
    TAINTED = "tainted"
    EVICTING = "evicting"
    WAITING = "waiting"
    DELAYED = "delayed"
    DELETING = "deleting"


def to_be_deleted_taint(now: float) -> Taint:
    return Taint(TO_BE_DELETED_TAINT, str(int(now)), "NoSchedule", time_added=now)


def has_delay_deletion(node: Node) -> bool:
    return any(key.startswith(DELAY_DELETION_PREFIX) for key in node.annotations)


def eviction_time(
    pods: Sequence[Pod], pdbs: Sequence[PodDisruptionBudget], options: AutoscalerOptions
) -> float:
    """How long evicting `pods` (one node's) may take: max-pod-eviction-time per PDB budget wave."""
    return PdbTracker(pdbs, ()).waves(pods) * options.max_pod_eviction_time


def resume_deadline(
    tainted_at: float, pods: Sequence[Pod], pdbs: Sequence[PodDisruptionBudget], options: AutoscalerOptions
) -> float:
    """When the evictions of a drain a previous run started must be over, counted from the time
    in its ToBeDeleted taint (never from a restart's clock): the taint delay, then
    max-pod-eviction-time per budget wave the node's remaining pods need."""
    return tainted_at + options.node_delete_delay_after_taint + eviction_time(pods, pdbs, options)


@dataclass(slots=True)
class NodeDeletion:
    node: str
    group: NodeGroup
    empty: bool  # chosen as an empty node (no drain)
    tainted_at: float
    phase: Phase = Phase.TAINTED
    pending: dict[str, Pod] = field(default_factory=dict)  # to evict (retried)
    daemonset: dict[str, Pod] = field(default_factory=dict)  # to evict, best effort
    evicted: dict[str, Pod] = field(default_factory=dict)  # evicted, waiting to disappear
    eviction_started: float = 0.0
    eviction_deadline: float = 0.0  # eviction_started + max-pod-eviction-time per budget wave
    waves: int = 1
    resumed: bool = False  # taken over from a previous run: deadlines count from the taint
    surge: Surge | None = None  # Deployments to restart first: their pinned pods are not evicted
    surged: dict[str, Pod] = field(default_factory=dict)  # leaving by their rollout, watched
    restarted: set[tuple[str, str]] = field(default_factory=set)  # Deployments this deletion restarted
    next_attempt: float = 0.0
    wait_until: float = 0.0
    delay_started: float | None = None
    # While on-completion pods on the node are left to finish: the deadline they have.
    finishing_until: float | None = None
    # Its pods with one possible destination (soledestination.py): UID -> that node, found when
    # its evictions are due.
    sole: dict[str, str] | None = None

    @property
    def drain(self) -> bool:
        return not self.empty


@dataclass(slots=True)
class StartResult:
    budget: BudgetDecision | None = None
    started_empty: list[str] = field(default_factory=list)
    started_drain: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)  # node -> why (taint failures)
    throttled: bool = False
    stale: dict[str, Stale] = field(default_factory=dict)  # decided, not started: the cluster moved


@dataclass(slots=True)
class TickResult:
    deleted: list[str] = field(default_factory=list)
    deleted_drained: set[str] = field(default_factory=set)  # of `deleted`, those drained (not empty)
    failed: dict[str, str] = field(default_factory=dict)
    evicted: list[str] = field(default_factory=list)  # pod keys
    refused: list[str] = field(default_factory=list)  # pod keys whose eviction a PDB refused (429)


class DeletionListener(Protocol):
    """What the actuator tells the planner (recent_evictions and the scale-down-delay-after-*
    pauses); `Planner` implements it."""

    def record_eviction(self, pod: Pod, now: float) -> None: ...

    def note_deletion(self, now: float) -> None: ...

    def note_failure(self, now: float) -> None: ...

    def recovering(
        self, snapshot: ClusterSnapshot, workloads: Mapping[tuple[str, str, str], Workload] | None
    ) -> frozenset[tuple[str, str, str]]: ...

    def unplaced(
        self, snapshot: ClusterSnapshot, workloads: Mapping[tuple[str, str, str], Workload] | None
    ) -> frozenset[tuple[str, str, str]]: ...


class Actuator:
    """Starts and drives node deletions. `planner`, when given, hears about evictions, deletions
    and failures."""

    def __init__(
        self,
        options: AutoscalerOptions,
        actions: ClusterActions,
        cloud: CloudProvider,
        planner: DeletionListener | None = None,
    ):
        self.options = options
        self.actions = actions
        self.cloud = cloud
        self.planner = planner
        self.rules = DrainRules.from_options(options)
        self.deletions: dict[str, NodeDeletion] = {}
        # node-deletion-batcher-interval: group id -> when its batch goes (from its first node)
        self.batches: dict[str, float] = {}
        # Pods with one possible destination, evicted, whose replacement has no node yet: UID ->
        # (owner, that node), kept across ticks (soledestination.py).
        self.awaited: dict[str, tuple[OwnerKey, str]] = {}

    # -- state the planner and budgets read -----------------------------------------------------
    def being_deleted(self) -> set[str]:
        return set(self.deletions)

    def in_progress(self) -> tuple[int, int]:
        """(empty, drain) deletions in progress."""
        empty = sum(1 for d in self.deletions.values() if d.empty)
        return empty, len(self.deletions) - empty

    def budget(self, plan: ScaleDownPlan) -> BudgetDecision:
        empty, drain = self.in_progress()
        return crop(
            plan.empty_to_delete,
            plan.drain_to_delete,
            self.options,
            empty_in_progress=empty,
            drain_in_progress=drain,
        )

    # -- StartDeletion ---------------------------------------------------------------------------
    def start(
        self,
        plan: ScaleDownPlan,
        snapshot: ClusterSnapshot,
        now: float,
        *,
        budget: BudgetDecision | None = None,
        stale: Mapping[str, Stale] | None = None,
    ) -> StartResult:
        """Taint and track the removable nodes `budget` lets start (the loop's decision; by
        default the parallelism budgets over the deletions in progress), except those the
        validation found `stale` (staleness.py), which are left for the next loop."""
        result = StartResult(stale=dict(stale or {}))
        if not plan.empty_to_delete and not plan.drain_to_delete:
            return result
        decision = budget if budget is not None else self.budget(plan)
        result.budget = decision
        if decision.throttled:
            result.throttled = True
            self._emit(Event.scale_down_throttled(StatusObject.of(self.options), decision.message(), now))
        chosen = [
            (name, empty)
            for names, empty in ((decision.empty, True), (decision.drain, False))
            for name in names
            if name in snapshot and name not in self.deletions and name not in result.stale
        ]
        groups: dict[str, NodeGroup] = {}
        for name, _ in chosen:
            group = self.cloud.node_group_for(snapshot.node(name))
            if group is None:  # the planner never chooses such nodes; a changed cloud could
                result.failed[name] = "no node group"
                continue
            groups[name] = group
        chosen = [(name, empty) for name, empty in chosen if name in groups]
        tainted: list[str] = []
        for name, _ in chosen:
            try:
                self.actions.add_taint(name, to_be_deleted_taint(now))
            except ActionError as exc:
                # All or nothing: a node left tainted but not deleted is the leak CA users report.
                for done in tainted:
                    self._untaint(done)
                result.failed[name] = f"could not taint: {exc}"
                self._emit(
                    Event.scale_down_failed(
                        name, f"failed to mark the node as toBeDeleted/unschedulable: {exc}", now
                    )
                )
                self._note_failure(now)
                return result
            tainted.append(name)
        for name, empty in chosen:
            self.deletions[name] = NodeDeletion(name, groups[name], empty, now, surge=plan.surges.get(name))
            (result.started_empty if empty else result.started_drain).append(name)
            self._emit(Event.node_marked_for_deletion(name, now))
        if chosen and self.planner is not None:
            # CA's scale-down-delay-after-delete counts from the loop that started deletions.
            self.planner.note_deletion(now)
        return result

    def resume(
        self, node: str, group: NodeGroup, *, empty: bool, tainted_at: float, surge: Surge | None = None
    ) -> None:
        """Take over a deletion a previous run started (restart safety): it continues from the
        re-check, the taint delay and the eviction deadline counted from when the node was
        tainted (`resume_deadline`), never from the restart."""
        self.deletions[node] = NodeDeletion(node, group, empty, tainted_at, resumed=True, surge=surge)

    def cancel_all(self, now: float, why: str) -> dict[str, str]:
        """Abort every deletion in progress: untaint, ScaleDownFailed, planner told. For a loop
        that halts (cluster unhealthy): a drain decided before the trouble must neither stay
        frozen with its node cordoned for the whole halt nor be finished on stale grounds.
        Nodes already handed to the cloud are not tracked here and are not affected."""
        result = TickResult()
        for d in list(self.deletions.values()):
            self._fail(d, why, now, result)
        return result.failed

    # -- driving the deletions ---------------------------------------------------------------------
    def tick(
        self,
        snapshot: ClusterSnapshot,
        now: float,
        *,
        pdbs: Sequence[PodDisruptionBudget] = (),
        workloads: Sequence[Workload] | None = None,
        checker: PredicateChecker | None = None,
    ) -> TickResult:
        """Advance every deletion as far as `now` allows. `snapshot` is the cluster as it is now
        (pods still there, node annotations); it is only read. `checker`: one the caller keeps
        observing `snapshot` (else one is made when a drain's pods are placed and closed after)."""
        result = TickResult()
        ready: dict[str, list[NodeDeletion]] = {}
        index = index_workloads(workloads) if workloads is not None else None
        ctx = DrainContext(self.rules, PdbTracker(pdbs, ()), now, index)
        pacing = _Pacing(frozenset(), index)
        if self.planner is not None and self.deletions:
            pacing = _Pacing(self.planner.recovering(snapshot, index), index, awaited=self.awaited)
            self._keep_room(snapshot, now, self.planner.unplaced(snapshot, index), pacing, checker)
        for d in list(self.deletions.values()):
            if d.node not in snapshot:
                # Gone already (deleted by someone, or its instance vanished): nothing left to do.
                del self.deletions[d.node]
                result.deleted.append(d.node)
                continue
            failure = self._advance(d, snapshot, now, ctx, result, pacing)
            if failure is not None:
                self._fail(d, failure, now, result)
            elif d.phase is Phase.DELETING:
                ready.setdefault(d.group.id, []).append(d)
        for group_id, batch in ready.items():
            # CA's NodeDeletionBatcher: the first node of a group ready to go opens the group's
            # batch, and every node of the group ready before the interval ends goes with it.
            due = self.batches.setdefault(group_id, now + self.options.node_deletion_batcher_interval)
            if now >= due:
                del self.batches[group_id]
                self._delete(batch, snapshot, now, result)
        for group_id in [g for g in self.batches if g not in ready]:
            del self.batches[group_id]  # its nodes failed or vanished meanwhile
        return result

    def _keep_room(
        self,
        snapshot: ClusterSnapshot,
        now: float,
        unplaced: frozenset[OwnerKey],
        pacing: _Pacing,
        shared: PredicateChecker | None = None,
    ) -> None:
        """The room of the pods with one destination (soledestination.py), into `pacing`: finds
        them for every drain whose evictions are due, all before any of them evicts (a drain must
        not go ahead of another's such pod because it came first in this tick), then the pods
        that could take their nodes."""
        for uid in [uid for uid, (key, _) in self.awaited.items() if key not in unplaced]:
            del self.awaited[uid]  # its replacement has a node (or is not wanted any more)
        deletions = [d for d in self.deletions.values() if d.node in snapshot]
        due = self._due_for_room(deletions, now)
        if not due and not any(d.sole for d in deletions) and not self.awaited:
            return
        # A checker built here indexes every pod of the cluster: the loop's own is kept instead.
        checker = shared if shared is not None else PredicateChecker(snapshot)
        try:
            for d in due:
                d.sole = sole_destinations(checker, _to_evict(snapshot, d), self.deletions)
            self._hold_room(checker, snapshot, deletions, unplaced, pacing)
        finally:
            if checker is not shared:
                checker.close()

    def _due_for_room(self, deletions: list[NodeDeletion], now: float) -> list[NodeDeletion]:
        """The drains whose evictions are due and whose pods with one destination are not yet
        found."""
        delay = self.options.node_delete_delay_after_taint
        return [
            d
            for d in deletions
            if d.sole is None
            and (d.phase is Phase.EVICTING or (d.phase is Phase.TAINTED and now >= d.tainted_at + delay))
        ]

    def _hold_room(
        self,
        checker: PredicateChecker,
        snapshot: ClusterSnapshot,
        deletions: list[NodeDeletion],
        unplaced: frozenset[OwnerKey],
        pacing: _Pacing,
    ) -> None:
        """Into `pacing`: the pods waiting for their one destination, whether other pods still
        wait for a home, and the pods that could take the reserved nodes."""
        to_evict = {
            uid: (pod, d.sole.get(uid) if d.sole else None)
            for d in deletions
            if d.sole is not None
            for pod in _to_evict(snapshot, d)
            if (uid := pod.uid) not in d.evicted
        }
        waiting = {uid: dest for uid, (_, dest) in to_evict.items() if dest is not None}
        reserved = {*waiting.values(), *(dest for _, dest in self.awaited.values())}
        if not reserved:
            return
        own = {key for key, _ in self.awaited.values()}
        own.update(key for uid in waiting if (key := owner_key(to_evict[uid][0])) is not None)
        pacing.sole = waiting
        pacing.busy = bool(unplaced - own)
        pacing.held = frozenset(
            competing(checker, (pod for pod, dest in to_evict.values() if dest is None), reserved)
        )

    def next_wakeup(self) -> float | None:
        """The earliest time a deletion in progress has something to do (its taint delay ends, an
        eviction is retried, a deadline passes, its batch goes), or None when none is in
        progress. The caller drives `tick` at that time rather than at the next loop, as CA's
        deletion goroutines act on their own timers. Pods that disappear wake nobody: a
        deletion waiting for them is looked at again at its deadline or at the next loop."""
        o = self.options
        times: list[float] = []
        for d in self.deletions.values():
            if d.phase is Phase.TAINTED:
                times.append(d.tainted_at + o.node_delete_delay_after_taint)
            elif d.phase is Phase.EVICTING:
                times.append(min(d.next_attempt, d.eviction_deadline) if d.pending else d.next_attempt)
            elif d.phase is Phase.WAITING:
                times.append(d.wait_until)
            elif d.phase is Phase.DELAYED and d.finishing_until is not None:
                times.append(d.finishing_until)
            elif d.phase is Phase.DELAYED and d.delay_started is not None:
                times.append(d.delay_started + o.node_deletion_delay_timeout)
            elif d.phase is Phase.DELETING:
                times.append(self.batches.get(d.group.id, d.tainted_at))
        return min(times, default=None)

    def _advance(
        self,
        d: NodeDeletion,
        snapshot: ClusterSnapshot,
        now: float,
        ctx: DrainContext,
        result: TickResult,
        pacing: _Pacing,
    ) -> str | None:
        """Take a deletion through as many phases as it can go now: a failure's message, else None.
        Each step either moves the deletion to its next phase, leaves it where it is to wait, or
        fails it."""
        while True:
            phase = d.phase
            if phase is Phase.TAINTED:
                failure = self._start_evicting(d, snapshot, now, ctx, pacing)
            elif phase is Phase.EVICTING:
                failure = self._evict(d, snapshot, now, ctx, result, pacing)
            elif phase is Phase.WAITING:
                failure = self._wait_for_evicted(d, snapshot, now)
            elif phase is Phase.DELAYED:
                failure = self._wait_for_delays(d, snapshot, now, ctx)
            else:
                return None  # DELETING: its batch deletes it
            if failure is not None or d.phase is phase:
                return failure

    def _start_evicting(
        self, d: NodeDeletion, snapshot: ClusterSnapshot, now: float, ctx: DrainContext, pacing: _Pacing
    ) -> str | None:
        """Once the taint delay has passed: what the drain evicts, and its deadline."""
        o = self.options
        if now < d.tainted_at + o.node_delete_delay_after_taint:
            return None
        drain = drain_node(list(snapshot.pods_on(d.node).values()), ctx)
        if drain.blocking is not None:
            return f"pod {drain.blocking.pod.key} blocks the drain ({drain.blocking.reason})"
        # An "empty" node that gained pods meanwhile is drained rather than deleted under them.
        d.pending = {p.uid: p for p in drain.movable}
        if d.surge is not None:
            d.surged = {uid: d.pending.pop(uid) for uid in d.surge.pods if uid in d.pending}
        evict_ds = (
            o.daemonset_eviction_for_empty_nodes if d.empty else o.daemonset_eviction_for_occupied_nodes
        )
        d.daemonset = {p.uid: p for p in drain.daemonset} if evict_ds else {}
        d.phase = Phase.EVICTING
        # A resumed drain's evictions started (in the previous run) when its taint delay ended.
        d.eviction_started = min(now, d.tainted_at + o.node_delete_delay_after_taint) if d.resumed else now
        d.next_attempt = now
        # A surge is one more wave: the replacements become available, then the pods go.
        d.waves = max(ctx.pdbs.waves(d.pending.values()), pacing.waves(d.pending.values())) + (
            1 if d.surged else 0
        )
        d.eviction_deadline = d.eviction_started + d.waves * o.max_pod_eviction_time
        return None

    def _evict(
        self,
        d: NodeDeletion,
        snapshot: ClusterSnapshot,
        now: float,
        ctx: DrainContext,
        result: TickResult,
        pacing: _Pacing,
    ) -> str | None:
        """One round of surges and evictions, when due; WAITING once every pod has been evicted."""
        if now < d.next_attempt and not (d.pending and now >= d.eviction_deadline):
            return None
        if (d.pending or d.surged) and now >= d.eviction_deadline:
            return self._eviction_timed_out(d)
        failure = self._surge_round(d, snapshot, now, ctx)
        if failure is not None:
            return failure
        self._evict_round(d, snapshot, now, result, pacing, ctx.pdbs)
        if d.pending or d.surged:
            d.next_attempt = now + EVICTION_RETRY_INTERVAL
            return None
        d.daemonset.clear()  # best effort only: what was refused goes with the node
        grace = max((self._grace(p) for p in d.evicted.values()), default=0)
        d.wait_until = now + grace + POD_EVICTION_HEADROOM
        d.phase = Phase.WAITING
        return None

    def _eviction_timed_out(self, d: NodeDeletion) -> str:
        o = self.options
        keys = ", ".join(sorted(p.key for p in [*d.pending.values(), *d.surged.values()]))
        budget = f"max-pod-eviction-time ({o.max_pod_eviction_time:g}s)"
        if d.waves > 1:
            budget = f"{d.waves} PDB budget waves x {budget}"
        return f"could not evict {keys} within {budget}"

    @staticmethod
    def _wait_for_evicted(d: NodeDeletion, snapshot: ClusterSnapshot, now: float) -> str | None:
        """The evicted pods leave the node within their grace period; DELAYED once they have."""
        left = [p for uid, p in d.evicted.items() if snapshot.node_of(uid) == d.node]
        if not left:
            d.phase = Phase.DELAYED
            return None
        if now < d.wait_until:
            return None
        keys = ", ".join(sorted(p.key for p in left))
        return f"pods {keys} still on the node after their grace period + {POD_EVICTION_HEADROOM:g}s"

    def _wait_for_delays(
        self, d: NodeDeletion, snapshot: ClusterSnapshot, now: float, ctx: DrainContext
    ) -> str | None:
        """Pods left to finish (safe-to-evict: on-completion) and delay-deletion annotations are
        waited for, each up to its deadline; DELETING after."""
        finishing = running_on_completion(snapshot.pods_on(d.node).values(), ctx)
        if finishing:
            d.finishing_until = max(d.eviction_deadline, d.wait_until)
            if now < d.finishing_until:
                return None
            keys = ", ".join(sorted(p.key for p in finishing))
            return (
                f"{keys} (safe-to-evict: on-completion) still running at the drain's deadline:"
                " left to finish, never evicted"
            )
        d.finishing_until = None
        timeout = self.options.node_deletion_delay_timeout
        if timeout > 0 and has_delay_deletion(snapshot.node(d.node)):
            if d.delay_started is None:
                d.delay_started = now
            if now < d.delay_started + timeout:
                return None
            # Timed out: CA goes ahead (with a warning), and so do we.
            self._emit(Event.delay_deletion_timed_out(d.node, timeout, now))
        d.phase = Phase.DELETING
        return None

    def _evict_round(
        self,
        d: NodeDeletion,
        snapshot: ClusterSnapshot,
        now: float,
        result: TickResult,
        pacing: _Pacing,
        pdbs: PdbTracker,
    ) -> None:
        # The drain's first round evicts, of each priority, only its largest pods: their
        # replacements are then older than the others' and the scheduler, which takes pods by
        # priority then age, places them first, as the planner's simulation did (pod_order).
        first_round = not d.evicted
        largest: dict[int, tuple[int, int, int]] = {}  # priority -> size class evicted this round
        for pods, required in ((d.pending, True), (d.daemonset, False)):
            for uid, pod in sorted(pods.items(), key=lambda item: pod_order(item[1])):
                if snapshot.node_of(uid) != d.node:
                    del pods[uid]  # already gone
                    continue
                if not pacing.may_evict(pod, pdbs, required=required):
                    continue  # retried in 10 s, within the drain's deadline
                if required and first_round and largest.get(pod.priority, size_class(pod)) < size_class(pod):
                    continue  # smaller than a pod of its priority evicted now: next round
                outcome = self.actions.evict(pod, self._grace(pod))
                if outcome is EvictionOutcome.EVICTED:
                    pacing.evicted(pod, required=required)
                    if required:
                        largest.setdefault(pod.priority, size_class(pod))
                    del pods[uid]
                    if required:
                        d.evicted[uid] = pod
                        if self.planner is not None:
                            self.planner.record_eviction(pod, now)
                    result.evicted.append(pod.key)
                    self._emit(Event.pod_evicted_for_scale_down(pod.key, now))
                elif outcome is EvictionOutcome.NOT_FOUND:
                    del pods[uid]
                elif outcome is EvictionOutcome.BLOCKED_BY_PDB:
                    result.refused.append(pod.key)
                # BLOCKED_BY_PDB and FAILED stay pending: retried in 10 s.

    def _surge_round(
        self, d: NodeDeletion, snapshot: ClusterSnapshot, now: float, ctx: DrainContext
    ) -> str | None:
        """Surge before evict: restart each Deployment once, replacement first, and watch its
        pinned pods leave. A Deployment already rolling out (by anyone, or for another node) is
        waited for, not restarted again."""
        for uid in [uid for uid in d.surged if snapshot.node_of(uid) != d.node]:
            del d.surged[uid]
        if d.surge is None or not d.surged:
            return None
        in_flight = {key for other in self.deletions.values() for key in other.restarted}
        for namespace, name in d.surge.deployments:
            key = (namespace, name)
            if key in in_flight:
                continue
            deployment = ctx.workloads.get(("Deployment", namespace, name)) if ctx.workloads else None
            if deployment is not None and rolling_out(deployment):
                continue  # someone's rollout is under way: it replaces the pods as well
            try:
                self.actions.restart_deployment(namespace, name, now)
            except ActionError as exc:
                return f"could not restart Deployment {namespace}/{name} to surge its pods: {exc}"
            d.restarted.add(key)
            in_flight.add(key)
            keys = sorted(p.key for p in d.surged.values() if p.namespace == namespace)
            pods = ", ".join(keys) + (" leaves" if len(keys) == 1 else " leave")
            self._emit(
                Event.surge_before_evict(
                    f"{namespace}/{name}",
                    f"restarted (rollout restart) so that {pods} node {d.node} for scale-down, replacement"
                    " available first: its PodDisruptionBudget allows no eviction",
                    now,
                )
            )
        return None

    def _grace(self, pod: Pod) -> int:
        return min(pod.termination_grace_period, self.options.max_graceful_termination_sec)

    def _delete(
        self, batch: list[NodeDeletion], snapshot: ClusterSnapshot, now: float, result: TickResult
    ) -> None:
        group = batch[0].group
        try:
            group.delete_nodes([snapshot.node(d.node) for d in batch])
        except ActionError as exc:
            for d in batch:
                self._fail(d, f"the cloud provider refused to delete it: {exc}", now, result)
            return
        for d in batch:
            del self.deletions[d.node]
            result.deleted.append(d.node)
            if d.drain:
                result.deleted_drained.add(d.node)
            # CA says it twice: on the node, and (ScaleDownEmpty or ScaleDown) on the status
            # ConfigMap, where `kubectl describe` of the status shows every removal.
            self._emit(Event.node_removed(d.node, now))
            self._emit(Event.node_removed_summary(StatusObject.of(self.options), d.node, not d.empty, now))

    def _fail(self, d: NodeDeletion, why: str, now: float, result: TickResult) -> None:
        """A deletion that failed after it started. As in CA, this does not arm
        scale-down-delay-after-failure (only a failure to start deletions does)."""
        self.deletions.pop(d.node, None)
        self._untaint(d.node)
        result.failed[d.node] = why
        self._emit(Event.scale_down_failed(d.node, why, now))

    def _untaint(self, node: str) -> None:
        # If this fails too, restart safety catches it: tainted nodes are resumed or untainted.
        with contextlib.suppress(ActionError):
            self.actions.remove_taint(node, TO_BE_DELETED_TAINT)

    def _note_failure(self, now: float) -> None:
        if self.planner is not None:
            self.planner.note_failure(now)

    def _emit(self, event: Event) -> None:
        self.actions.emit_event(event)


def _to_evict(snapshot: ClusterSnapshot, d: NodeDeletion) -> list[Pod]:
    """The pods of a drain's node that it evicts and that a controller replaces."""
    return [
        p
        for p in snapshot.pods_on(d.node).values()
        if p.controller is not None and p.controller.kind != "DaemonSet" and p.uid not in d.surged
    ]


class _Pacing:
    """kubetide's drain pacing for one tick: pods of recovering workloads wait (under a PDB, or of
    an OrderedReady StatefulSet), an OrderedReady StatefulSet loses at most one pod a tick, and
    pods that could take the node of a pod with one destination wait (soledestination.py)."""

    __slots__ = ("awaited", "busy", "held", "ordered_taken", "recovering", "sole", "workloads")

    def __init__(
        self,
        recovering: frozenset[OwnerKey],
        workloads: Mapping[OwnerKey, Workload] | None,
        *,
        awaited: dict[str, tuple[OwnerKey, str]] | None = None,
    ):
        self.recovering = recovering
        self.workloads = workloads
        self.ordered_taken: set[OwnerKey] = set()
        # The room of the pods with one destination (Actuator._keep_room):
        self.sole: dict[str, str] = {}  # UID -> node, of those still to evict
        self.held: frozenset[str] = frozenset()  # UIDs of pods that could take one of their nodes
        self.busy = False  # another evicted pod's replacement waits for a node: they wait
        self.awaited = awaited if awaited is not None else {}  # the Actuator's: kept across ticks

    def _ordered(self, key: OwnerKey | None) -> bool:
        if key is None or key[0] != "StatefulSet" or self.workloads is None:
            return False
        sts = self.workloads.get(key)
        return sts is not None and sts.pod_management_policy != "Parallel"

    def may_evict(self, pod: Pod, pdbs: PdbTracker, *, required: bool = True) -> bool:
        if required and (pod.uid in self.held or (pod.uid in self.sole and self.busy)):
            return False
        key = owner_key(pod)
        if key is None:
            return True
        ordered = self._ordered(key)
        if key in self.recovering and (ordered or pdbs.has_pdb(pod)):
            return False
        return not (ordered and key in self.ordered_taken)

    def evicted(self, pod: Pod, *, required: bool = True) -> None:
        key = owner_key(pod)
        dest = self.sole.get(pod.uid) if required else None
        if dest is not None and key is not None:
            self.awaited[pod.uid] = (key, dest)
        if self._ordered(key):
            assert key is not None
            self.ordered_taken.add(key)

    def waves(self, pods: Iterable[Pod]) -> int:
        """One wave per pod of an OrderedReady StatefulSet among `pods` (at least 1), and one more
        while pods of the node wait for the room of a pod with one destination."""
        counts: dict[OwnerKey, int] = {}
        held = False
        for pod in pods:
            key = owner_key(pod)
            held = held or pod.uid in self.held
            if self._ordered(key):
                assert key is not None
                counts[key] = counts.get(key, 0) + 1
        return max(counts.values(), default=1) + (1 if held else 0)
