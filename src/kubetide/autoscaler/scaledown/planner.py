"""The scale-down planner: the parallel-drain design's UpdateUnneededNodes, run every loop.

State kept between loops (the design's names):
- deleted_set: passed in each loop (the actuator's deletions in progress, plus nodes carrying
  ToBeDeletedByClusterAutoscaler that nobody resumes);
- candidate_set with the time each node entered it (`unneeded_since`), reset when it leaves;
- non_candidate_set: nodes whose drain simulation failed, with when and why; they are simulated
  again only after unremovable-node-recheck-timeout (`unremovable`);
- pod_destination_hints: source node -> pod UID -> destination (`hints`);
- recent_evictions (see evictions.py); pdbs_remaining_disruptions is rebuilt each update.

One update, on a fork of the snapshot that is reverted at the end (the caller gets it back as it
was):
1. expendable pods leave the simulated cluster: they block nothing and are never moved, and the
   scheduler would preempt them, so their capacity counts as free;
2. the pods still on nodes being deleted must fit elsewhere (hints first, then search; PDBs are
   charged but not checked). If one does not, no new candidates are added this loop and the
   plan says why: making a shortage worse is the one thing scale-down must not do;
3. recently evicted pods whose owners are still short of replicas are placed back the same way,
   with the same consequence when one does not fit;
4. the candidate_set is built greedily within scale-down-simulation-timeout over the eligible
   nodes in a stable order (nodes to resume after a restart, empty nodes, nodes already unneeded
   oldest first, then the rest by utilization): per node, fork, move every pod (hint, then the
   round-robin search skipping candidates, deleted nodes and the node itself), commit on success,
   revert and record the reason on failure. Commits accumulate, so the set is removable together;
5. timers and pauses decide which candidates are removable now.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from kubetide.autoscaler.options import AutoscalerOptions
from kubetide.autoscaler.ports import TO_BE_DELETED_TAINT, CloudProvider, NodeGroup
from kubetide.autoscaler.scaledown.drainability import (
    BlockingPod,
    DrainContext,
    DrainRules,
    NodeDrain,
    drain_node,
    index_workloads,
    is_expendable,
    looks_empty,
    pods_needing_homes,
)
from kubetide.autoscaler.scaledown.eligibility import Eligibility, EligibilityChecker, RemovalLimits
from kubetide.autoscaler.scaledown.evictions import RecentEvictions
from kubetide.autoscaler.scaledown.pdb import PdbTracker
from kubetide.autoscaler.scaledown.placement import PodMover
from kubetide.autoscaler.scaledown.plan import (
    BEING_DELETED,
    REMOVABLE,
    UNREMOVABLE,
    NodeStatus,
    ScaleDownPlan,
)
from kubetide.autoscaler.scaledown.reasons import NodeReason, PodReason
from kubetide.clock import Timer
from kubetide.durations import format_duration, rfc3339
from kubetide.model import Node, Pod, PodDisruptionBudget, Workload
from kubetide.model.quantity import CPU, MEMORY
from kubetide.scheduling.checker import PredicateChecker
from kubetide.snapshot import ClusterSnapshot, Memo


@dataclass(frozen=True, slots=True)
class _Scanned:
    """A node's facts read before the planner's fork, valid while its snapshot stamp holds."""

    tainted: bool  # carries ToBeDeletedByClusterAutoscaler
    expendable: tuple[Pod, ...]  # in the node's pod order


@dataclass(frozen=True, slots=True)
class _Checked:
    """A node's eligibility with no per-loop flag set (neither recently unremovable nor being
    deleted), and whether it looks empty. Reused while the node's stamp and its node group (what
    cloud.node_group_for answered, None included) are the same: with no terminating pod on the
    node, nothing in it depends on `now`."""

    eligibility: Eligibility
    empty: bool  # looks_empty for ineligible nodes; False for eligible ones (their drain says)
    util: float | None  # eligibility.utilization.value, for the status


@dataclass(frozen=True, slots=True)
class Unremovable:
    """A failed drain simulation, remembered until unremovable-node-recheck-timeout passes."""

    at: float
    reason: NodeReason
    blocking_pod: BlockingPod | None = None
    detail: str = ""


class _Eligible(NamedTuple):
    """An eligible node with what the candidate search needs of it."""

    node: Node
    eligibility: Eligibility
    group: NodeGroup
    drain: NodeDrain


def _pod_order(pod: Pod) -> tuple[int, int, str, str]:
    # Largest first (first-fit decreasing packs better), then by name: the same order every loop.
    requests, meta = pod.requests, pod.meta
    return (-requests.get(CPU, 0), -requests.get(MEMORY, 0), meta.namespace, meta.name)


class Planner:
    """Keeps the scale-down state and updates it once per loop (`update`).

    `timers_expired` is `kubetide plan`'s switch: unneeded/unready timers count as run out, so the
    plan shows what would be deleted rather than what is still waiting. `timer` (the Timer port,
    read once per node considered) measures the simulation *budget* (scale-down-simulation-timeout)
    only; no decision reads it except to stop early, and decisions take time from the `now`
    passed in.
    """

    def __init__(
        self,
        options: AutoscalerOptions,
        *,
        timers_expired: bool = False,
        timer: Timer,
    ):
        self.options = options
        self.timers_expired = timers_expired
        self.timer = timer
        self.rules = DrainRules.from_options(options)
        self.unneeded_since: dict[str, float] = {}
        self.unremovable: dict[str, Unremovable] = {}
        self.hints: dict[str, dict[str, str]] = {}
        self.recent_evictions = RecentEvictions(options.recent_evictions_ttl)
        self.last_scale_up = -math.inf
        self.last_deletion = -math.inf
        self.last_failure = -math.inf
        self.last_plan: ScaleDownPlan | None = None
        # Pod UID -> the same pod bound to no node, reused across loops (see placement).
        self._homeless: Memo[str, Pod] = Memo()
        # Per-node facts under the snapshot's change stamps, so a loop over a quiet cluster
        # costs a lookup per node instead of a pass over every pod (see `_scan`, `statuses`).
        # Both depend on the options, so they are dropped if the options object is replaced.
        self._cached_options = options
        self._scanned: Memo[str, _Scanned] = Memo()
        self._checked: Memo[str, _Checked] = Memo()

    # -- what the loop and the actuator tell the planner ---------------------------------------
    def note_scale_up(self, now: float) -> None:
        self.last_scale_up = max(self.last_scale_up, now)

    def note_deletion(self, now: float) -> None:
        self.last_deletion = max(self.last_deletion, now)

    def note_failure(self, now: float) -> None:
        self.last_failure = max(self.last_failure, now)

    def record_eviction(self, pod: Pod, now: float) -> None:
        self.recent_evictions.record(pod, now)

    def clear(self) -> None:
        """Forget unneeded nodes (the cluster is unhealthy; CA clears them too)."""
        self.unneeded_since.clear()
        self.hints.clear()

    def cooldown(self, now: float) -> str | None:
        o = self.options
        if not o.scale_down_enabled:
            return "scale-down-enabled is false"
        for last, delay, flag in (
            (self.last_scale_up, o.scale_down_delay_after_add, "scale-down-delay-after-add"),
            (self.last_deletion, o.scale_down_delay_after_delete, "scale-down-delay-after-delete"),
            (self.last_failure, o.scale_down_delay_after_failure, "scale-down-delay-after-failure"),
        ):
            if now < last + delay:
                return f"{flag} ({format_duration(delay)}) until {rfc3339(last + delay)}"
        return None

    # -- the update ------------------------------------------------------------------------------
    def update(
        self,
        snapshot: ClusterSnapshot,
        *,
        cloud: CloudProvider,
        now: float,
        pdbs: Sequence[PodDisruptionBudget] = (),
        workloads: Sequence[Workload] | None = None,
        being_deleted: Collection[str] = (),
        resume: Collection[str] = (),
        checker: PredicateChecker | None = None,
        namespaces: Mapping[str, Mapping[str, str]] | None = None,
    ) -> ScaleDownPlan:
        """One loop's planning. `workloads=None` means the controllers are unknown (rule 3 of
        drainability stays silent and recent evictions are injected without the owner check).

        `resume` names nodes tainted ToBeDeletedByClusterAutoscaler before a restart whose fate is
        to be decided: they are simulated first with their timers taken as run out; other
        tainted nodes not in `being_deleted` are treated as being deleted by someone.
        `checker` may be shared with the caller (it must observe `snapshot`); otherwise one is
        made for this update and closed at the end.
        """
        o = self.options
        deadline = self.timer() + o.scale_down_simulation_timeout
        if self._cached_options is not o:
            self._cached_options = o
            self._scanned.clear()
            self._checked.clear()
        resume_set = {n for n in resume if n in snapshot}
        deleted = {n for n in being_deleted if n in snapshot} - resume_set
        tainted, expendable = self._scan(snapshot)
        deleted.update(name for name in tainted if name not in resume_set)
        self.recent_evictions.expire(now)
        index = index_workloads(workloads) if workloads is not None else None
        plan = ScaleDownPlan(now=now)

        depth = snapshot.depth
        snapshot.fork()
        own_checker = checker is None
        try:
            for pod in expendable:
                snapshot.remove_pod(pod.uid)
            if checker is None:
                checker = PredicateChecker(snapshot, namespaces)
            tracker = PdbTracker(pdbs, snapshot.pods(), index)
            ctx = DrainContext(self.rules, tracker, now, index)
            self._homeless.new_pass()
            mover = PodMover(snapshot, checker, self._homeless)
            state = _Update(self, snapshot, cloud, now, deadline, deleted, resume_set, ctx, mover, plan)
            state.run()
            plan.pdb_remaining = tracker.by_key()
        finally:
            if own_checker and checker is not None:
                checker.close()  # before the revert: nobody needs its indexes to follow
            while snapshot.depth > depth:  # an error inside a node's simulation leaves its fork open
                snapshot.revert()
        self.last_plan = plan
        return plan

    def _scan(self, snapshot: ClusterSnapshot) -> tuple[list[str], list[Pod]]:
        """Nodes tainted ToBeDeleted, and the expendable pods in `snapshot.pods()` order, from
        per-node entries that are recomputed only for nodes whose stamp changed."""
        cutoff = self.options.expendable_pods_priority_cutoff
        memo = self._scanned
        memo.new_pass()
        tainted: list[str] = []
        expendable: list[Pod] = []
        for name, stamp, pods in snapshot.pods_by_node():
            entry = memo.get(name, stamp)
            if entry is None:
                entry = memo.put(
                    name,
                    _Scanned(
                        snapshot.node(name).has_taint(TO_BE_DELETED_TAINT),
                        tuple(pod for pod in pods.values() if is_expendable(pod, cutoff)),
                    ),
                    stamp,
                )
            if entry.tainted:
                tainted.append(name)
            if entry.expendable:
                expendable.extend(entry.expendable)
        return tainted, expendable


class _Update:
    """The working state of one update (kept off the Planner so nothing leaks between loops)."""

    def __init__(
        self,
        planner: Planner,
        snapshot: ClusterSnapshot,
        cloud: CloudProvider,
        now: float,
        deadline: float,
        deleted: set[str],
        resume: set[str],
        ctx: DrainContext,
        mover: PodMover,
        plan: ScaleDownPlan,
    ):
        self.p = planner
        self.snapshot = snapshot
        self.cloud = cloud
        self.now = now
        self.deadline = deadline
        self.deleted = deleted
        self.resume = resume
        self.ctx = ctx
        self.mover = mover
        self.plan = plan
        self.skip: set[str] = set(deleted)
        self.new_hints: dict[str, dict[str, str]] = {}
        # Destination node -> whose pods it took (a candidate, a node being deleted, or a
        # recently evicted pod). The design keeps destinations out of the candidate set: their
        # reserved room would otherwise be moved on again.
        self.destination_of: dict[str, str] = {}

    def run(self) -> None:
        p, plan, now = self.p, self.plan, self.now
        failure = self.revalidate_deleted()
        if failure is None:
            failure = self.inject_evictions()
        plan.validation_failure = failure

        eligible = self.statuses()
        candidates: list[str] = []
        new_unremovable: dict[str, Unremovable] = {}
        if failure is None:
            candidates = self.build(eligible, new_unremovable)
        else:
            for node, _, _, drain in eligible:
                self.mark(node, drain.empty, NodeReason.NOT_UNNEEDED_OTHER_REASON, detail=failure)

        # Remembered failures stay until their recheck time; fresh ones replace them.
        recheck = p.options.unremovable_node_recheck_timeout
        kept = {
            name: u
            for name, u in p.unremovable.items()
            if name in self.snapshot and now < u.at + recheck and name not in candidates
        }
        kept.update(new_unremovable)
        p.unremovable = kept
        p.unneeded_since = {name: p.unneeded_since.get(name, now) for name in candidates}
        p.hints = self.new_hints
        plan.candidate_set = candidates
        self.decide_removals()

    # -- 1. nodes already being deleted ---------------------------------------------------------
    def revalidate_deleted(self) -> str | None:
        snapshot, ctx, old_hints = self.snapshot, self.ctx, self.p.hints
        for name in sorted(self.deleted, key=snapshot.slot_of):
            pods = sorted(pods_needing_homes(list(snapshot.pods_on(name).values()), ctx), key=_pod_order)
            hints = old_hints.get(name, {})
            moved: dict[str, str] = {}
            for pod in pods:
                ctx.pdbs.force_consume(pod)
                dest = self.mover.move(pod.uid, hints.get(pod.uid), self.skip)
                if dest is None:
                    return f"pod {pod.key} of node {name} (being deleted) no longer fits on any other node"
                moved[pod.uid] = dest
                self.plan.destinations[pod.key] = dest
                self.destination_of.setdefault(dest, name)
            self.new_hints[name] = moved
        return None

    # -- 2. recent evictions ----------------------------------------------------------------------
    def inject_evictions(self) -> str | None:
        placed, unfit = self.p.recent_evictions.inject(
            self.snapshot, self.mover, self.skip, self.ctx.workloads
        )
        self.plan.injected = placed
        for key, dest in placed.items():
            self.destination_of.setdefault(dest, f"recently evicted pod {key}")
        if unfit is not None:
            return f"recently evicted pod {unfit.key} has no replacement yet and fits on no node"
        return None

    # -- 3. eligibility ---------------------------------------------------------------------------
    def statuses(self) -> list[_Eligible]:
        """Status for every node; returns the eligible ones with their drains."""
        p, snapshot, now = self.p, self.snapshot, self.now
        checker = EligibilityChecker(p.options, self.cloud, now)
        recheck = p.options.unremovable_node_recheck_timeout
        cutoff = p.options.expendable_pods_priority_cutoff
        eligible: list[_Eligible] = []
        cpu_column, memory_column = snapshot.columns.index[CPU], snapshot.columns.index[MEMORY]
        used = snapshot.used
        node_group_for = self.cloud.node_group_for
        deleted, resume, unremovable = self.deleted, self.resume, p.unremovable
        checked = p._checked
        checked.new_pass()
        statuses = self.plan.nodes
        for node, stamp in snapshot.stamps():
            name = node.meta.name
            old = unremovable.get(name)
            recent = old is not None and now < old.at + recheck and name not in resume
            being_deleted = name in deleted
            entry = group = None
            if not recent and not being_deleted:
                # The per-loop flags are off, so the answer depends on the node, its pods and its
                # group only: reuse last loop's when none changed (the group is asked every loop,
                # since a cloud may move a node without changing the Node object).
                group = node_group_for(node)
                entry = checked.get(name, stamp, group)
            if entry is not None:
                e, empty = entry.eligibility, entry.empty
                if e.reason is not None:
                    # The common case on a quiet cluster. Cached answers never carry the reasons
                    # of the per-loop flags (being deleted, recently unremovable).
                    statuses[name] = NodeStatus(
                        name, UNREMOVABLE, empty, entry.util, e.reason, None, e.detail
                    )
                    continue
            else:
                pods = snapshot.pods_on(name).values()
                slot = snapshot.slot_of(name)
                e = checker.check(
                    node,
                    pods,
                    being_deleted=being_deleted,
                    recently_unremovable=recent,
                    requested=(int(used[slot, cpu_column]), int(used[slot, memory_column])),
                )
                empty = e.reason is not None and looks_empty(pods, cutoff)
                # Only answers without the per-loop flags are kept, and only while no pod is
                # terminating: that is the one way time enters them (long-terminating pods drop
                # out of utilization).
                if (
                    not recent
                    and not being_deleted
                    and e.group is group
                    and all(pod.meta.deletion_timestamp is None for pod in pods)
                ):
                    util = e.utilization.value if e.utilization is not None else None
                    checked.put(name, _Checked(e, empty, util), stamp, group)
            util = e.utilization.value if e.utilization is not None else None
            if e.reason is NodeReason.CURRENTLY_BEING_DELETED:
                self.plan.nodes[name] = NodeStatus(
                    name, BEING_DELETED, empty, util, e.reason, detail=e.detail
                )
            elif e.reason is NodeReason.RECENTLY_UNREMOVABLE and old is not None:
                self.plan.nodes[name] = NodeStatus(
                    name,
                    UNREMOVABLE,
                    empty,
                    util,
                    e.reason,
                    old.blocking_pod,
                    f"simulation at {rfc3339(old.at)} failed with {old.reason}"
                    + (f" ({old.detail})" if old.detail else "")
                    + f"; simulated again after {rfc3339(old.at + recheck)}",
                )
            elif e.reason is not None:
                self.plan.nodes[name] = NodeStatus(name, UNREMOVABLE, empty, util, e.reason, detail=e.detail)
            else:
                assert e.group is not None  # eligibility refuses nodes no group manages
                drain = drain_node(list(snapshot.pods_on(name).values()), self.ctx)
                self.plan.nodes[name] = NodeStatus(name, UNREMOVABLE, drain.empty, util)
                eligible.append(_Eligible(node, e, e.group, drain))
        return eligible

    def mark(
        self,
        node: Node,
        empty: bool,
        reason: NodeReason,
        blocking: BlockingPod | None = None,
        detail: str = "",
    ) -> None:
        status = self.plan.nodes[node.name]
        status.status = UNREMOVABLE
        status.empty = empty
        status.reason = reason
        status.blocking_pod = blocking
        status.detail = detail

    # -- 4. the candidate set ---------------------------------------------------------------------
    def order(self, eligible: list[_Eligible]) -> list[_Eligible]:
        since = self.p.unneeded_since
        slot_of = self.snapshot.slot_of

        def key(item: _Eligible) -> tuple[int, float, int]:
            node, e, drain = item.node, item.eligibility, item.drain
            name = node.name
            util = e.utilization.value if e.utilization is not None else 0.0
            if name in self.resume:
                return (0, 0.0, slot_of(name))
            if drain.empty:
                return (1, 0.0, slot_of(name))
            if name in since:
                return (2, since[name], slot_of(name))
            return (3, util, slot_of(name))

        return sorted(eligible, key=key)

    def build(self, eligible: list[_Eligible], new_unremovable: dict[str, Unremovable]) -> list[str]:
        if not eligible:
            return []  # the limits below cost a pass over every node, for nobody
        p, snapshot, ctx, plan = self.p, self.snapshot, self.ctx, self.plan
        tracker, mover, skip, now = ctx.pdbs, self.mover, self.skip, self.now
        in_progress: dict[str, int] = {}
        for name in self.deleted:
            group = self.cloud.node_group_for(snapshot.node(name))
            if group is not None:
                in_progress[group.id] = in_progress.get(group.id, 0) + 1
        limits = RemovalLimits(
            p.options, self.cloud.node_groups(), snapshot.nodes(), self.deleted, in_progress
        )
        old_hints = p.hints
        timer, deadline = p.timer, self.deadline
        destination_of = self.destination_of
        candidates: list[str] = []
        for node, _, group, drain in self.order(eligible):
            name = node.name
            if plan.timed_out or timer() > deadline:
                plan.timed_out = True
                self.mark(
                    node,
                    drain.empty,
                    NodeReason.NOT_UNNEEDED_OTHER_REASON,
                    detail="not simulated: scale-down-simulation-timeout reached",
                )
                continue
            if name in destination_of:
                self.mark(
                    node,
                    drain.empty,
                    NodeReason.NOT_UNNEEDED_OTHER_REASON,
                    detail=f"destination for pods of {destination_of[name]}",
                )
                continue
            reason = limits.check(node, group)
            if reason is not None:
                self.mark(node, drain.empty, reason)
                continue
            if drain.blocking is not None:
                new_unremovable[name] = Unremovable(now, NodeReason.BLOCKED_BY_POD, drain.blocking)
                self.mark(node, False, NodeReason.BLOCKED_BY_POD, drain.blocking)
                continue
            plan.simulated += 1
            snapshot.fork()
            tracker.fork()
            skip.add(name)
            hints = old_hints.get(name, {})
            moved: dict[str, str] = {}
            failed: Unremovable | None = None
            for pod in sorted(drain.movable, key=_pod_order):
                refusing = tracker.consume(pod)
                if refusing is not None:
                    failed = Unremovable(
                        now,
                        NodeReason.BLOCKED_BY_POD,
                        BlockingPod(pod, PodReason.NOT_ENOUGH_PDB),
                        f"PodDisruptionBudget {refusing.key} has no disruptions left for it",
                    )
                    break
                dest = mover.move(pod.uid, hints.get(pod.uid), skip)
                if dest is None:
                    failed = Unremovable(
                        now, NodeReason.NO_PLACE_TO_MOVE_PODS, None, f"no node can take pod {pod.key}"
                    )
                    break
                moved[pod.uid] = dest
            if failed is not None:
                snapshot.revert()
                tracker.revert()
                skip.discard(name)
                new_unremovable[name] = failed
                self.mark(node, drain.empty, failed.reason, failed.blocking_pod, failed.detail)
                continue
            snapshot.commit()
            tracker.commit()
            limits.take(node, group)
            candidates.append(name)
            plan.drains[name] = drain
            self.new_hints[name] = moved
            pods_on_node = {pod.uid: pod for pod in drain.movable}
            for uid, dest in moved.items():
                destination_of.setdefault(dest, name)
                plan.destinations[pods_on_node[uid].key] = dest
            status = plan.nodes[name]
            status.status = REMOVABLE
            status.empty = drain.empty
        return candidates

    # -- 5. timers and pauses -----------------------------------------------------------------------
    def decide_removals(self) -> None:
        p, plan, now, o = self.p, self.plan, self.now, self.p.options
        plan.cooldown = p.cooldown(now)
        for name in plan.candidate_set:
            status = plan.nodes[name]
            node = self.snapshot.node(name)
            since = p.unneeded_since[name]
            wait, reason = (
                (o.scale_down_unneeded_time, NodeReason.NOT_UNNEEDED_LONG_ENOUGH)
                if node.ready
                else (o.scale_down_unready_time, NodeReason.NOT_UNREADY_LONG_ENOUGH)
            )
            expired = p.timers_expired or name in self.resume or now - since >= wait
            if not expired:
                status.reason = reason
                status.detail = f"unneeded since {rfc3339(since)}; removable at {rfc3339(since + wait)}"
                continue
            if plan.cooldown is not None:
                status.reason = NodeReason.NOT_UNNEEDED_OTHER_REASON
                status.detail = f"scale-down paused: {plan.cooldown}"
                continue
            (plan.empty_to_delete if status.empty else plan.drain_to_delete).append(name)
