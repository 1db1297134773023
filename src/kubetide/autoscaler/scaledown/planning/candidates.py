"""Steps 3 and 4 of UpdateUnneededNodes: which nodes are eligible, and the candidate search.

Eligibility (the design's GetScaleDownCandidates) gives every node a status; the eligible ones
come back with their drains. Per-node answers without a per-loop flag are kept in a Memo under
the node's stamp and node group, so a quiet cluster costs a lookup per node.

The candidate_set is then built greedily within scale-down-simulation-timeout (but never fewer
than MIN_CONSIDERED_PER_LOOP nodes, however short the timeout) over the eligible nodes in a stable
order (nodes to resume after a restart, empty nodes, nodes already unneeded
oldest first, then the rest by utilization): per node, fork, move every pod, its own and those
earlier steps put there (hint, then the round-robin search skipping candidates, deleted nodes and
the node itself), commit on success, revert and record the reason on failure (the
non_candidate_set). Commits accumulate, so the set is removable together; a pod moves on as often
as its destinations become candidates, which stays within the one greedy pass. Before a node is
simulated, room.py checks that its pods' total requests fit in the free room of all the other
nodes together: a node failing that would fail the simulation, and is reported without one.
With a usage guard the moves are guarded (usage.py): NoPlaceToMovePodsBelowQOSWatermark when a
pod fits somewhere by requests but only where it would cross a QoS watermark.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from kubetide.autoscaler.ports import NodeGroup
from kubetide.autoscaler.scaledown.planning.drainability import (
    BlockingPod,
    KeptDrains,
    NodeDrain,
    drain_node,
    looks_empty,
)
from kubetide.autoscaler.scaledown.planning.eligibility import Eligibility, EligibilityChecker, RemovalLimits
from kubetide.autoscaler.scaledown.planning.estimate import estimate_drain
from kubetide.autoscaler.scaledown.planning.pdb import (
    NodeCharge,
    PdbRefusal,
    PdbTracker,
    Shortfall,
    is_healthy,
)
from kubetide.autoscaler.scaledown.planning.placement import paper_pods
from kubetide.autoscaler.scaledown.planning.plan import BEING_DELETED, REMOVABLE, UNREMOVABLE, NodeStatus
from kubetide.autoscaler.scaledown.planning.room import FreeRoom
from kubetide.autoscaler.scaledown.planning.state import UnneededNodes, Unremovable, UnremovableNodes
from kubetide.autoscaler.scaledown.planning.surge import NoSurge, Surge, plan_surge
from kubetide.autoscaler.scaledown.planning.update import Received, Update, pod_order
from kubetide.autoscaler.scaledown.planning.usage import Refusal
from kubetide.autoscaler.scaledown.planning.whatif import what_if
from kubetide.autoscaler.scaledown.reasons import NodeReason, PodReason
from kubetide.clock import Timer, may_run_out
from kubetide.durations import rfc3339
from kubetide.model import Node, Pod, PodDisruptionBudget
from kubetide.model.quantity import CPU, MEMORY, format_units
from kubetide.snapshot import Memo

# Nodes the search considers per loop before scale-down-simulation-timeout may stop it. CA checks
# its timer before every node, the first included, so a zero timeout there simulates none and
# scale-down silently never happens. One is the least that keeps scale-down going (the first node
# in the search's order, the one closest to removal, keeps its timer and is removed in time) while
# the timeout stays the operator's bound on the loop: at most one node beyond it
# (docs/differences.md).
MIN_CONSIDERED_PER_LOOP = 1


@dataclass(frozen=True, slots=True)
class Checked:
    """A node's eligibility with no per-loop flag set (neither recently unremovable nor being
    deleted), and whether it looks empty. Reused while the node's stamp and its node group (what
    cloud.node_group_for answered, None included) are the same: with no terminating pod on the
    node, nothing in it depends on `now`. An answer the threshold gave is reused under another
    threshold too (the unblock answers' checks share these: explanation/unblock_search.py), only
    the comparison redone."""

    eligibility: Eligibility
    empty: bool  # looks_empty for ineligible nodes; False for eligible ones (their drain says)
    util: float | None  # eligibility.utilization.value, for the status
    # The thresholds (cpu and memory's, the GPU's) it was compared with; None: an earlier check decided.
    thresholds: tuple[float, float] | None
    # The same node's answers under other thresholds, each worked out once (`_at_thresholds`).
    variants: dict[tuple[float, float], Checked] | None = None


@dataclass(slots=True)
class Search:
    """What the candidate search found."""

    candidates: list[str] = field(default_factory=list)  # the candidate_set, in order
    # Candidates a budget lets go only pod by pod, and why.
    risky: dict[str, str] = field(default_factory=dict)
    # Unneeded nodes held back only by budget that other drains or candidates use for now.
    waiting: list[str] = field(default_factory=list)
    # Candidates whose budget-pinned pods leave by their Deployment's rollout, not by eviction.
    surges: dict[str, Surge] = field(default_factory=dict)


class Eligible(NamedTuple):
    """An eligible node with what the candidate search needs of it."""

    node: Node
    eligibility: Eligibility
    group: NodeGroup
    drain: NodeDrain


# -- 3. eligibility -----------------------------------------------------------------------------
def eligible_nodes(
    u: Update,
    unremovable: UnremovableNodes,
    checked: Memo[str, Checked],
    drains: Memo[str, NodeDrain] | None = None,
    kept: KeptDrains | None = None,
) -> list[Eligible]:
    """Status for every node; returns the eligible ones with their drains. `drains`: the drains
    of nodes with nothing received, kept under their stamps, when the caller knows the rest of
    what a drain reads (`now`, the rules, workloads, budgets' selectors) is the same throughout
    (planner.NodeFacts). Else `kept`: those drains kept between a planner's own loops, which
    checks what they read."""
    snapshot, now, options = u.snapshot, u.now, u.options
    checker = EligibilityChecker(options, u.cloud, now)
    thresholds = (options.scale_down_utilization_threshold, options.scale_down_gpu_utilization_threshold)
    eligible: list[Eligible] = []
    node_group_for = u.cloud.node_group_for
    deleted, resume = u.deleted, u.resume
    checked.new_pass()
    if drains is not None:
        drains.new_pass()
    elif kept is not None:
        kept.new_pass(u.ctx)
    statuses = u.plan.nodes
    recent_failures = unremovable.recent(now)
    stamps = snapshot.stamps()
    # The groups the search key asked for, node by node (the update adds and removes no node).
    asked = u.groups if u.groups is not None and len(u.groups) == len(snapshot) else None
    for i, (node, stamp) in enumerate(stamps):
        name = node.meta.name
        old = recent_failures.get(name) if name not in resume else None
        being_deleted = name in deleted
        entry = group = None
        if old is None and not being_deleted:
            # The per-loop flags are off, so the answer depends on the node, its pods and its
            # group only: reuse last loop's when none changed (the group is asked every loop,
            # since a cloud may move a node without changing the Node object).
            group = asked[i] if asked is not None else node_group_for(node)
            entry = _reusable(checked, name, stamp, group, thresholds, checker, u)
        if entry is not None:
            e, empty = entry.eligibility, entry.empty
            if e.reason is not None:
                # The common case on a quiet cluster. Cached answers never carry the reasons
                # of the per-loop flags (being deleted, recently unremovable).
                statuses[name] = NodeStatus(name, UNREMOVABLE, empty, entry.util, e.reason, None, e.detail)
                continue
        else:
            e, empty = _check(u, checker, checked, node, stamp, group, old is not None, being_deleted)
        util = e.utilization.value if e.utilization is not None else None
        if e.reason is not None:
            statuses[name] = _ineligible_status(name, e, empty, util, old, unremovable)
            continue
        assert e.group is not None  # eligibility refuses nodes no group manages
        drain = _drain(u, name, stamp, drains, kept)
        statuses[name] = NodeStatus(name, UNREMOVABLE, drain.empty, util)
        eligible.append(Eligible(node, e, e.group, drain))
    return eligible


def _reusable(
    checked: Memo[str, Checked],
    name: str,
    stamp: int,
    group: NodeGroup | None,
    thresholds: tuple[float, float],
    checker: EligibilityChecker,
    u: Update,
) -> Checked | None:
    """The node's kept answer, if its stamp and group are the same, under these thresholds."""
    entry = checked.get(name, stamp, group)
    if entry is not None and entry.thresholds is not None and entry.thresholds != thresholds:
        entry = checked.put(name, _at_thresholds(entry, thresholds, checker, u), stamp, group)
    return entry


def _check(
    u: Update,
    checker: EligibilityChecker,
    checked: Memo[str, Checked],
    node: Node,
    stamp: int,
    group: NodeGroup | None,
    recent: bool,
    being_deleted: bool,
) -> tuple[Eligibility, bool]:
    """The node's eligibility worked out, and whether it looks empty; kept in `checked` when
    nothing in it depends on this loop (see `Checked`)."""
    snapshot, options = u.snapshot, u.options
    name = node.meta.name
    pods = snapshot.pods_on(name).values()
    slot, index = snapshot.slot_of(name), snapshot.columns.index
    e = checker.check(
        node,
        pods,
        being_deleted=being_deleted,
        recently_unremovable=recent,
        requested=(int(snapshot.used[slot, index[CPU]]), int(snapshot.used[slot, index[MEMORY]])),
    )
    empty = e.reason is not None and looks_empty(pods, options.expendable_pods_priority_cutoff)
    # Only answers without the per-loop flags are kept, and only while no pod is terminating:
    # that is the one way time enters them (long-terminating pods drop out of utilization).
    if (
        not recent
        and not being_deleted
        and e.group is group
        and all(pod.meta.deletion_timestamp is None for pod in pods)
    ):
        util = e.utilization.value if e.utilization is not None else None
        decided = e.reason is None or e.reason is NodeReason.NOT_UNDERUTILIZED
        thresholds = (options.scale_down_utilization_threshold, options.scale_down_gpu_utilization_threshold)
        checked.put(name, Checked(e, empty, util, thresholds if decided else None), stamp, group)
    return e, empty


def _ineligible_status(
    name: str,
    e: Eligibility,
    empty: bool,
    util: float | None,
    old: Unremovable | None,
    unremovable: UnremovableNodes,
) -> NodeStatus:
    if e.reason is NodeReason.CURRENTLY_BEING_DELETED:
        return NodeStatus(name, BEING_DELETED, empty, util, e.reason, detail=e.detail)
    if e.reason is NodeReason.RECENTLY_UNREMOVABLE and old is not None:
        return NodeStatus(
            name,
            UNREMOVABLE,
            empty,
            util,
            e.reason,
            old.blocking_pod,
            blockers=old.blockers,
            unplaced=old.unplaced,
            detail=f"simulation at {rfc3339(old.at)} failed with {old.reason}"
            + (f" ({old.detail})" if old.detail else "")
            + f"; simulated again after {rfc3339(unremovable.recheck_at(name))}",
        )
    return NodeStatus(name, UNREMOVABLE, empty, util, e.reason, detail=e.detail)


def _drain(
    u: Update, name: str, stamp: int, drains: Memo[str, NodeDrain] | None, kept: KeptDrains | None
) -> NodeDrain:
    """An eligible node's drain: kept under its stamp (`drains`), kept between loops (`kept`), or
    worked out. Pods steps 1 and 2 put here (from nodes being deleted, recently evicted) are not
    the node's own: they move on as received pods, and their eviction is already paid."""
    received = {r.pod.uid for r in u.received.get(name, ())}
    pods_here = u.snapshot.pods_on(name).values()
    if received:
        return drain_node([p for p in pods_here if p.uid not in received], u.ctx)
    if drains is not None:
        known = drains.get(name, stamp)
        return known if known is not None else drains.put(name, drain_node(list(pods_here), u.ctx), stamp)
    if kept is not None:
        return kept.drain(name, tuple(pods_here), u.ctx)
    return drain_node(list(pods_here), u.ctx)


def _at_thresholds(
    entry: Checked, thresholds: tuple[float, float], checker: EligibilityChecker, u: Update
) -> Checked:
    """A node's answer the threshold gave, under other thresholds: the comparison redone once
    per thresholds the node meets (its variants), the utilization kept."""
    variants = entry.variants
    if variants is None:
        assert entry.thresholds is not None
        variants = {}
        variants[entry.thresholds] = dataclasses.replace(entry, variants=variants)
    found = variants.get(thresholds)
    if found is None:
        e = entry.eligibility
        assert e.utilization is not None and e.group is not None  # the threshold decided
        e = checker.against_threshold(e.node, e.utilization, e.group)
        if e.reason is None:
            empty = False  # the drain says
        elif entry.eligibility.reason is not None:
            empty = entry.empty
        else:
            empty = looks_empty(
                u.snapshot.pods_on(e.node).values(), u.options.expendable_pods_priority_cutoff
            )
        found = variants[thresholds] = Checked(e, empty, entry.util, thresholds, variants)
    return found


# -- 4. the candidate search --------------------------------------------------------------------
def _order(u: Update, eligible: list[Eligible], unneeded_since: UnneededNodes) -> list[Eligible]:
    slot_of = u.snapshot.slot_of

    def key(item: Eligible) -> tuple[int, float, int]:
        node, e, drain = item.node, item.eligibility, item.drain
        name = node.name
        util = e.utilization.value if e.utilization is not None else 0.0
        if name in u.resume:
            return (0, 0.0, slot_of(name))
        if drain.empty:  # those holding on-completion pods last among them, as CA 1.36 sorts
            return (1, float(bool(drain.on_completion)), slot_of(name))
        if name in unneeded_since:
            return (2, unneeded_since[name], slot_of(name))
        return (3, util, slot_of(name))

    return sorted(eligible, key=key)


@dataclass(slots=True)
class Removal:
    """What simulating one node's removal found (CA's SimulateNodeRemoval)."""

    charge: NodeCharge  # the node's own pods against their budgets
    moved: list[tuple[Received, str]] = field(default_factory=list)  # pod -> its destination
    surge: Surge | None = None  # budget-pinned pods that leave by their Deployment's rollout
    failed: Unremovable | None = None  # the node cannot go
    waiting: PdbRefusal | None = None  # it could, but a budget is used up for now

    @property
    def removable(self) -> bool:
        return self.failed is None and self.waiting is None


def simulate_removal(u: Update, name: str, drain: NodeDrain, to_move: list[Received]) -> Removal:
    """Remove node `name` in the simulated cluster: charge its own pods to their budgets all at once
    (CA's CanRemovePods; budget-pinned pods may leave by a surge instead, surge.py), then move every
    pod to move, its own (`to_move` holds every pod of `drain.movable`) and those earlier removals
    put here, each to its hint or else the first node that takes it. Works on the caller's what-if: the moves and charges stay for the caller to
    keep or revert. `u.skip` must already hold `name`."""
    tracker, now = u.ctx.pdbs, u.now
    # `pod_order` is a total order (it ends with the pod's namespace and name), so the node's
    # own pods in it are those of `to_move` in it: one sort serves both.
    ordered = sorted(to_move, key=lambda r: pod_order(r.pod))
    own_pods = [r.pod for r in ordered if r.source == name]
    removal = Removal(charge=tracker.charge_node(own_pods))
    refusal = removal.charge.refusal
    if refusal is not None and not refusal.waiting:
        # Pinned for good: a Deployment's rollout may still move those pods (surge.py), and then
        # the node's other pods are charged as usual.
        answer = plan_surge(
            own_pods,
            tracker,
            u.ctx.workloads,
            u.options.surge_before_evict,
            u.options.may_restart_deployments,
        )
        if not isinstance(answer, Surge):
            removal.failed = _refused_for_good(now, refusal, drain.movable, tracker, answer)
            return removal
        removal.surge = answer
        removal.charge = tracker.charge_node([p for p in own_pods if p.uid not in answer.pods])
        refusal = removal.charge.refusal
        if refusal is not None and not refusal.waiting:
            removal.failed = _refused_for_good(now, refusal, drain.movable, tracker)
            return removal
    mover = u.mover
    # A node waiting for budget is reverted whatever its pods find: the pods whose fit reads
    # nothing they change but requests are placed on paper (placement.py: the same answers, no
    # snapshot changes); the others are moved.
    paper = _on_paper(u, to_move) if refusal is not None else None
    added: dict[str, dict[str, int]] = {}
    hints: list[str | None]
    if name in u.old_hints or len(own_pods) < len(ordered):
        hints = [_hint(u.old_hints, name, r) for r in ordered]
    else:
        hints = [None] * len(ordered)  # no hint for any own pod, and no pod received
    i = 0
    while i < len(ordered):
        r, hint = ordered[i], hints[i]
        pod, own = r.pod, r.source == name
        on_paper = paper is not None and pod.uid in paper
        if on_paper and hint is None:
            # Most pods of a trial on paper land on the pointer's node: the run of them without
            # a hint goes there together, and the first it cannot take is moved below.
            assert paper is not None
            end = i + 1
            while end < len(ordered) and hints[end] is None and ordered[end].pod.uid in paper:
                end += 1
            placed = mover.fill_on_paper([x.pod for x in ordered[i:end]], u.skip, added)
            if placed:
                filled = mover.pointer_node()
                removal.moved.extend((x, filled) for x in ordered[i : i + placed])
                i += placed
                continue
        if on_paper:
            dest = mover.move_on_paper(pod, hint, u.skip, added)
        else:
            dest = mover.move(pod.uid, hint, u.skip, guarded=True, added=added)
        if dest is None:
            came_from = "" if own else f" (moved here from {r.source or 'its evicted node'})"
            removal.failed = _no_place(now, pod, came_from, mover.refused)
            return removal
        removal.moved.append((r, dest))
        i += 1
    removal.waiting = refusal  # a budget used up for now: the pods fit, the node waits
    return removal


def _hint(old_hints: Mapping[str, Mapping[str, str]], name: str, r: Received) -> str | None:
    """Where last loop's search put the pod: under node `name` for its own pods, under the node
    it came from for a received one."""
    if r.source == name:
        return old_hints.get(name, {}).get(r.pod.uid)
    return old_hints.get(r.source, {}).get(r.pod.uid) if r.source is not None else None


# What the search calls to simulate one node's removal: `simulate_removal`, or a stand-in with the
# same answers (unblocking's narrowed check replays the answers of a search it recorded).
SimulateRemoval = Callable[[Update, str, NodeDrain, list[Received]], Removal]


@dataclass(frozen=True, slots=True)
class Skip:
    """The nodes a search need not visit: every one before position `first` of its order but
    those in `kept` (their removals are made again), since the search did there exactly what a
    search it stands for did, and nothing of that is read again but the removals kept."""

    first: int = 0
    kept: frozenset[int] = frozenset()


class Resumable:
    """A stand-in for `simulate_removal` that knows a search it stands for (unblocking's narrowed
    check, narrow.py): `start` is told the search's order before the first node and answers which
    nodes it may skip; `searched` is told when the search is over."""

    def __call__(self, u: Update, name: str, drain: NodeDrain, to_move: list[Received]) -> Removal:
        raise NotImplementedError

    def start(self, u: Update, order: Sequence[Eligible]) -> Skip:
        return Skip()

    def searched(self, u: Update) -> None:
        return None


def _on_paper(u: Update, to_move: list[Received]) -> set[str] | None:
    """The UIDs of the pods a trial reverted whatever it finds may place on paper, if any."""
    if not u.on_paper or u.mover.guard is not None:
        return None
    paper = paper_pods([r.pod for r in to_move])
    if paper:
        u.plan.on_paper += 1
    return paper or None


def search_candidates(
    u: Update,
    eligible: list[Eligible],
    unneeded_since: UnneededNodes,
    timer: Timer,
    deadline: float,
    new_unremovable: dict[str, Unremovable],
    limit: int | None = None,
    simulate: SimulateRemoval = simulate_removal,
) -> Search:
    """The greedy candidate search: eligible nodes in order, each removal simulated on a what-if
    kept when it succeeds, so that the candidate_set is removable together. Returns it in the
    order it was built, and the nodes waiting for budget; failures go to `new_unremovable`.
    Once `limit` candidates are found (CA's unneededNodesLimit, limit.py), nodes not already
    unneeded (nor resumed) are not simulated. The `deadline` (scale-down-simulation-timeout) stops
    the search only once MIN_CONSIDERED_PER_LOOP nodes have been considered."""
    found = Search()
    if not eligible:
        return found  # the limits below cost a pass over every node, for nobody
    snapshot, ctx, plan, cloud = u.snapshot, u.ctx, u.plan, u.cloud
    tracker, mover, skip, now = ctx.pdbs, u.mover, u.skip, u.now
    in_progress: dict[str, int] = {}
    for name in u.deleted:
        group = cloud.node_group_for(snapshot.node(name))
        if group is not None:
            in_progress[group.id] = in_progress.get(group.id, 0) + 1
    limits = RemovalLimits(u.options, cloud.node_groups(), snapshot.nodes(), u.deleted, in_progress)
    room = FreeRoom(snapshot, skip)
    considered = 0
    order = _order(u, eligible, unneeded_since)
    # Skipped nodes read no timer: only when no deadline of this search could have stopped them.
    skipped = (
        simulate.start(u, order)
        if isinstance(simulate, Resumable) and not may_run_out(timer, len(order) + 1, deadline)
        else Skip()
    )
    for position, (node, _, group, drain) in enumerate(order):
        if position < skipped.first and position not in skipped.kept:
            continue
        name = node.name
        # The timer is read for every node (a work-driven Timer counts the readings).
        if plan.timed_out or (timer() > deadline and considered >= MIN_CONSIDERED_PER_LOOP):
            plan.timed_out = True
            u.mark(
                node,
                drain.empty,
                NodeReason.NOT_UNNEEDED_OTHER_REASON,
                detail="not simulated: scale-down-simulation-timeout reached",
            )
            continue
        if (
            limit is not None
            and len(found.candidates) >= limit
            and name not in unneeded_since
            and name not in u.resume
        ):
            u.mark(node, drain.empty, NodeReason.NOT_UNNEEDED_OTHER_REASON, detail=_cut_off(limit))
            continue
        considered += 1
        reason = limits.check(node, group)
        if reason is not None:
            u.mark(node, drain.empty, reason)
            continue
        if drain.blocking is not None:
            blockers = blockers_of(u, name, drain)
            new_unremovable[name] = Unremovable(
                now, NodeReason.BLOCKED_BY_POD, blockers[0], blockers=blockers
            )
            u.mark(node, False, NodeReason.BLOCKED_BY_POD, blockers[0], blockers=blockers)
            continue
        # The node's own pods and those the simulation put here (a destination is a candidate
        # when they all fit elsewhere, as in CA), in one order. Received pods were charged to
        # their PDBs when they left their own node: moving them on is not another eviction.
        to_move = [Received(pod, name) for pod in drain.movable] + u.received.get(name, [])
        need = room.need(to_move)
        short = room.short(name, need)
        if short is not None:
            # Cannot fit by requests anywhere: the simulation would fail, so it is not run. A
            # budget that refuses the node for good says so first.
            refused = _pdb_block(now, drain.movable, tracker) or Unremovable(
                now,
                NodeReason.NO_PLACE_TO_MOVE_PODS,
                None,
                _too_big(name, to_move, *short),
                unplaced=min(to_move, key=lambda r: pod_order(r.pod)).pod.key,
            )
            if refused.blocking_pod is not None:
                refused = _with_blockers(refused, blockers_of(u, name, drain))
            new_unremovable[name] = refused
            u.mark(
                node,
                drain.empty,
                refused.reason,
                refused.blocking_pod,
                refused.detail,
                refused.blockers,
                refused.unplaced,
            )
            continue
        free_before = room.free(name)
        plan.simulated += 1
        skip.add(name)
        with what_if(snapshot, tracker, mover.guard) as trial:
            removal = simulate(u, name, drain, to_move)
            if removal.removable:
                trial.keep()
        if not removal.removable:
            skip.discard(name)
            _not_a_candidate(u, node, drain, removal, found, new_unremovable)
            continue
        limits.take(node, group)
        room.take(free_before, need)
        _take_candidate(u, node, drain, removal, found)
    if isinstance(simulate, Resumable):
        simulate.searched(u)
    return found


def _cut_off(limit: int) -> str:
    return (
        f"not simulated: {limit} unneeded node(s) found already this loop, as many as "
        "max-scale-down-parallelism can delete in scale-down-unneeded-time (CA's limit)"
    )


def _not_a_candidate(
    u: Update,
    node: Node,
    drain: NodeDrain,
    removal: Removal,
    found: Search,
    new_unremovable: dict[str, Unremovable],
) -> None:
    name = node.name
    if removal.failed is not None:
        failed = removal.failed
        if failed.blocking_pod is not None:  # a budget refused it: name every pod it refuses
            failed = _with_blockers(failed, blockers_of(u, name, drain))
        new_unremovable[name] = failed
        u.mark(
            node,
            drain.empty,
            failed.reason,
            failed.blocking_pod,
            failed.detail,
            failed.blockers,
            failed.unplaced,
        )
        return
    # Unneeded, but the budget is used up for now by other drains or pods not Ready yet: the
    # node keeps its unneeded time and goes as soon as the budget is back (kubetide's own; as
    # CA, it is a non-candidate until the recheck time).
    refusal = removal.waiting
    assert refusal is not None
    # Not every pod of the budget: the budget is what waits, and it comes back by itself (listing
    # them all cost a tenth of the update on 2 000 nodes waiting for budget).
    blocking = BlockingPod(refusal.pod, PodReason.NOT_ENOUGH_PDB, refusal.pdb.key, refusal.left)
    blockers = (blocking,)
    keeps_timer = u.options.scale_down_budget_wait_keeps_unneeded_time
    detail = _waiting(refusal, keeps_timer)
    if keeps_timer:
        found.waiting.append(name)
    else:
        new_unremovable[name] = Unremovable(u.now, NodeReason.BLOCKED_BY_POD, blocking, detail, blockers)
    u.mark(node, drain.empty, NodeReason.BLOCKED_BY_POD, blocking, detail, blockers)


def _take_candidate(u: Update, node: Node, drain: NodeDrain, removal: Removal, found: Search) -> None:
    """The node joins the candidate_set: its pods' destinations become next loop's hints."""
    name, plan, surge = node.name, u.plan, removal.surge
    found.candidates.append(name)
    plan.drains[name] = drain
    u.received.pop(name, None)
    u.new_hints[name] = {}
    for r, dest in removal.moved:
        _record_move(u, r, dest)
    status = plan.nodes[name]
    status.status = REMOVABLE
    status.empty = drain.empty
    evicted = [p for p in drain.movable if surge is None or p.uid not in surge.pods]
    waves = u.ctx.pdbs.waves(evicted)
    if drain.movable:
        # A surge is a wave of its own: the replacements become available before the pods go.
        status.estimate = estimate_drain(drain.movable, waves + (surge is not None), u.options)
    if removal.charge.risky:
        status.detail = found.risky[name] = _risky(removal.charge.shortfalls, waves)
    if surge is not None:
        found.surges[name] = surge
        status.detail = "; ".join(part for part in (surge.words(), status.detail) if part)


def blockers_of(u: Update, name: str, drain: NodeDrain) -> tuple[BlockingPod, ...]:
    """Every pod that forbids the node's drain now, in CA's order: the node's pod order, each pod
    named by its first refusing rule, the drainability rules before its budget (CA's PDB rule is
    the last of its drainability rules). Budgets are read as they stand after the drains under
    way and the candidates before this node, and nothing is charged."""
    tracker = u.ctx.pdbs
    refused: list[BlockingPod] = []
    # Pods of one workload share their budgets and usually their health: one answer each (a node
    # waiting for budget asks this for every one of its pods, every loop).
    answers: dict[tuple[tuple[int, ...], bool], tuple[str, int] | None] = {}
    for pod in drain.movable:
        key = (tracker.matching(pod), is_healthy(pod))
        if not key[0]:
            continue
        if key in answers:
            answer = answers[key]
        else:
            refusal = tracker.refuses(pod)
            answer = answers[key] = None if refusal is None else (refusal[0].key, refusal[1])
        if answer is not None:
            refused.append(BlockingPod(pod, PodReason.NOT_ENOUGH_PDB, *answer))
    if not refused:
        return tuple(drain.blockers)
    if not drain.blockers:
        return tuple(refused)
    position = {uid: i for i, uid in enumerate(u.snapshot.pods_on(name))}
    return tuple(sorted([*drain.blockers, *refused], key=lambda b: position.get(b.pod.uid, len(position))))


def _with_blockers(failed: Unremovable, blockers: tuple[BlockingPod, ...]) -> Unremovable:
    """A budget refusal naming every pod the budgets refuse; the first in CA's order leads."""
    if not blockers:
        return failed
    return dataclasses.replace(failed, blocking_pod=blockers[0], blockers=blockers)


def _pdb_block(now: float, movable: Sequence[Pod], tracker: PdbTracker) -> Unremovable | None:
    """The refusal for good a drain of these pods would meet from their budgets, if any (the
    budgets are left as found)."""
    with what_if(tracker):
        refusal = tracker.charge_node(sorted(movable, key=pod_order)).refusal
    if refusal is None or refusal.waiting:
        return None
    return _refused_for_good(now, refusal, movable, tracker)


def _too_big(name: str, to_move: list[Received], resource: str, need: int, free: int) -> str:
    pods = [
        r.pod.key + ("" if r.source == name else f" (moved here from {r.source or 'its evicted node'})")
        for r in sorted(to_move, key=lambda r: pod_order(r.pod))
    ]
    shown = ", ".join(pods[:3]) + (f" and {len(pods) - 3} more" if len(pods) > 3 else "")
    return (
        f"no nodes can take pods {shown}: they request {format_units(resource, need)} {resource},"
        f" more than the {format_units(resource, free)} all other nodes have free together"
    )


def _no_place(now: float, pod: Pod, came_from: str, refused: Refusal | None) -> Unremovable:
    if refused is None:
        return Unremovable(
            now,
            NodeReason.NO_PLACE_TO_MOVE_PODS,
            None,
            f"no node can take pod {pod.key}{came_from}",
            unplaced=pod.key,
        )
    c = refused.ceiling
    return Unremovable(
        now,
        NodeReason.NO_PLACE_TO_MOVE_PODS_BELOW_QOS_WATERMARK,
        None,
        f"pod {pod.key}{came_from} fits only on nodes its usage would push over a QoS watermark,"
        f" e.g. {refused.node}: {c.resource} usage {format_units(c.resource, refused.projected)}"
        f" > {format_units(c.resource, c.amount)} ({c.source})",
        unplaced=pod.key,
    )


def _record_move(u: Update, r: Received, dest: str) -> None:
    """Where a pod ends up, under the node it really leaves (its hint for the next loop)."""
    u.receive(dest, r.pod, r.source)
    if r.source is None:
        u.plan.injected[r.pod.key] = dest
        return
    u.plan.destinations[r.pod.key] = dest
    u.new_hints.setdefault(r.source, {})[r.pod.uid] = dest


def _refused_for_good(
    now: float,
    refusal: PdbRefusal,
    movable: Sequence[Pod],
    tracker: PdbTracker,
    no_surge: NoSurge | None = None,
) -> Unremovable:
    pdb = refusal.pdb
    surge = f"; {no_surge.why}" if no_surge is not None else ""
    return Unremovable(
        now,
        NodeReason.BLOCKED_BY_POD,
        BlockingPod(refusal.pod, PodReason.NOT_ENOUGH_PDB),
        f"PodDisruptionBudget {pdb.key} allows no disruption even with all its pods healthy"
        f" ({_budget_words(pdb)}): {_covered(_pods_of(pdb, movable, tracker))} cannot be evicted" + surge,
    )


def _waiting(refusal: PdbRefusal, keeps_timer: bool) -> str:
    head = (
        f"waiting for budget: PodDisruptionBudget {refusal.pdb.key} has"
        f" {_disruptions(max(refusal.left, 0))} left after the drains under way and the candidates"
        " before this node"
    )
    if keeps_timer:
        return (
            head
            + "; its pods fit elsewhere, so it keeps its unneeded time and is drained as soon as the budget is back"
        )
    return head + (
        " (scale-down-budget-wait-keeps-unneeded-time=false: a non-candidate until"
        " unremovable-node-recheck-timeout, its unneeded time restarted, as in CA)"
    )


def _risky(shortfalls: Sequence[Shortfall], waves: int) -> str:
    words = "; ".join(
        f"PodDisruptionBudget {s.pdb.key} has {_disruptions(s.left)} left for its {s.pods} pods here"
        for s in shortfalls
    )
    return (
        f"risky: {words}, so it is drained pod by pod in {waves} waves"
        f" (eviction deadline {waves} x max-pod-eviction-time)"
    )


def _covered(n: int) -> str:
    return "the node's pod it covers" if n == 1 else f"the node's {n} pods it covers"


def _disruptions(n: int) -> str:
    return f"{n} disruption" if n == 1 else f"{n} disruptions"


def _budget_words(pdb: PodDisruptionBudget) -> str:
    if pdb.max_unavailable is not None:
        return f"maxUnavailable {pdb.max_unavailable}"
    if pdb.min_available is not None:
        return f"minAvailable {pdb.min_available}"
    return "no minAvailable or maxUnavailable"


def _pods_of(pdb: PodDisruptionBudget, movable: Sequence[Pod], tracker: PdbTracker) -> int:
    index = next(i for i, candidate in enumerate(tracker.pdbs) if candidate is pdb)
    return sum(1 for pod in movable if index in tracker.matching(pod))
