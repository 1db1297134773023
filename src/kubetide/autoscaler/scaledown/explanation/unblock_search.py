"""Finding what would unblock each unremovable node, by asking the planner itself.

For a node the planner left out, `find_unblocks` proposes the change its reason and blocking
pods call for (unblock_answer.py's kinds), applies it to the loop's inputs in a fork of the snapshot
(pods, PodDisruptionBudgets, flags, nodes and node groups as the change says), runs a fresh
planner with its timers run out, and looks at the node again. A change that does not suffice is
kept and the next one is proposed from the node's new reason, for at most `MAX_ROUNDS` rounds.
Where there are alternatives (surge before evict or a bigger budget; which node group grows),
each is simulated in turn and the first that makes the node removable is taken; for a single
replica behind its budget the surge is tried first. A group's min size is not stepped down: the
largest value that gets the node past the group's minimum is found by planning with candidate
values (a binary search: removability only grows as the minimum falls).

A node that is unneeded and only waits, for a budget used up for now (by drains under way, or
pods not Ready yet) or for a timer, is not blocked: its answer is "waiting", with no change, and
an answer whose changes leave the node waiting stops there. A utilization threshold more than
`THRESHOLD_STEP` above the one in effect is not suggested: such a node is in use.

Every answer is therefore a planner run, never a guess: `limit` bounds how many nodes are looked
at per call and `budget` the work (by the caller's Timer) spent on them (the rest get no answer;
offline callers pass a work-driven Timer, so the same input gets the same answers on any machine,
`kubetide run` the wall clock), and the loop only asks when --annotate-scale-down-blockers is
on. On a work-driven Timer a check is charged what it does: the planner's reading per node it
considers, and a unit per pod its simulated removals were given (a node of 40 pods simulated
costs forty times a node replayed), per pod and node of a refusal (`_spend`). A run is narrowed to what the change can affect (narrow.py): the search without changes is
recorded once, a search with changes skips to the first node the change alters (visiting only the
removals kept before it; an earlier check's search may take it further) and stops at the node's
verdict; the same change set asked twice is answered once; and the planners of
the checks share their per-node facts (eligibility, drains: planner.NodeFacts), so each reads
again only the nodes its change touched.

A node added by a change carries scale-down-disabled in the simulation: a real new node is not
removed for scale-down-delay-after-add and scale-down-unneeded-time, which is the window in
which the blocked node's pods move to it. Tests that apply the change do the same.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, fields, replace

from kubetide.autoscaler.inputs import LoopInputs
from kubetide.autoscaler.options import AutoscalerOptions, parse_flag
from kubetide.autoscaler.ports import CloudProvider, Instance, NodeGroup, TemplateError
from kubetide.autoscaler.scaledown.explanation.narrow import Decided, Recording, Replay
from kubetide.autoscaler.scaledown.explanation.nowhere import refusal
from kubetide.autoscaler.scaledown.planning.candidates import (
    Checked,
    Removal,
    SimulateRemoval,
    simulate_removal,
)
from kubetide.autoscaler.scaledown.planning.drainability import (
    DO_NOT_DISRUPT,
    SAFE_TO_EVICT,
    SAFE_TO_EVICT_LOCAL_VOLUMES,
    BlockingPod,
    DrainRules,
    NodeDrain,
)
from kubetide.autoscaler.scaledown.planning.eligibility import SCALE_DOWN_DISABLED_ANNOTATION, is_gpu_resource
from kubetide.autoscaler.scaledown.planning.plan import (
    BEING_DELETED,
    REMOVABLE,
    UNREMOVABLE,
    NodeStatus,
    ScaleDownPlan,
)
from kubetide.autoscaler.scaledown.planning.planner import NodeFacts, Planner
from kubetide.autoscaler.scaledown.planning.surge import SURGE_ANNOTATION
from kubetide.autoscaler.scaledown.planning.update import Received, Update
from kubetide.autoscaler.scaledown.reasons import NodeReason, PodReason
from kubetide.autoscaler.scaledown.unblock_answer import (
    MAX_ROUNDS,
    SURGE_FLAG,
    THRESHOLD_FLAGS,
    Change,
    ChangeKind,
    Unblock,
    change_rank,
    unblock_text,
)
from kubetide.clock import Timer, spend
from kubetide.durations import format_duration, rfc3339
from kubetide.model import Node, Pod, PodDisruptionBudget
from kubetide.model.disruption import do_not_disrupt_until
from kubetide.scheduling.checker import PredicateChecker
from kubetide.snapshot import Memo

# Nodes answered per call, and the seconds (by the caller's Timer: work offline, the clock in
# `kubetide run`) spent on them: each answer costs a few planner runs, and on a large cluster a
# planner run costs a loop.
UNBLOCK_LIMIT = 50
UNBLOCK_BUDGET = 10.0
# How long the loop keeps an answer while the node stays blocked the same way (seconds).
UNBLOCK_REFRESH = 1800.0
# Node groups tried for a pod that fits nowhere.
GROUPS_TRIED = 3
NEW_NODE_PREFIX = "kubetide-unblock-"
# The most a utilization threshold is suggested above the one in effect: a node busier than that
# is needed, and a threshold near 1 would keep every busy node a candidate.
THRESHOLD_STEP = 0.1


def find_unblocks(
    inputs: LoopInputs,
    options: AutoscalerOptions,
    cloud: CloudProvider,
    *,
    plan: ScaleDownPlan,
    checker: PredicateChecker,
    timer: Timer,
    nodes: Collection[str] | None = None,
    limit: int = UNBLOCK_LIMIT,
    budget: float = UNBLOCK_BUDGET,
    narrow: bool = True,
    recording: Recording | None = None,
) -> dict[str, Unblock]:
    """An `Unblock` for each node `plan` finds unremovable (only those in `nodes`, if given; at
    most `limit` of them searched with the planner, in the plan's order, each started within
    `budget` seconds of the timer; the others are answered "not computed"; a node that waits or
    that no change can unblock is answered without a search and counts for neither). `inputs`
    are the planner's (its snapshot with the pods the scheduler will bind, left as found);
    `checker` must observe that snapshot. `narrow`
    False runs the whole planner for every change, each from nothing (the narrowed runs'
    reference, for tests).
    `recording`: the search of a fresh planner with expired timers on these inputs, if the caller
    ran one (`kubetide plan`'s loop), so that it is not run again; it is used only if it started
    from the same options, budgets, nodes and nodes being deleted (narrow.py checks)."""
    search = _Search(inputs, options, cloud, checker, timer, plan, narrow=narrow, recording=recording)
    answers: dict[str, Unblock] = {}
    deadline = timer() + budget
    searched = 0  # nodes whose answer ran the planner: the ones `limit` counts
    for name, status in plan.nodes.items():
        if not _answered(status) or (nodes is not None and name not in nodes):
            continue
        settled = search.settled(status)  # a wait, a node of no group: no planner run
        if settled is not None:
            answers[name] = settled
        elif searched >= limit or timer() > deadline:
            answers[name] = Unblock(name, text=NOT_COMPUTED)
        else:
            before = search.plans
            answers[name] = search.unblock(status)
            searched += search.plans > before
    return answers


NOT_COMPUTED = (
    f"not computed: the answers' budget (at most {UNBLOCK_LIMIT} nodes, plan --unblock-budget) ran out"
    " first; ask about this node alone (plan --node NAME)"
)


class UnblockMemo:
    """The loop's answers, kept per node while its reason, blocking pods and utilization (to two
    decimals) stay the same, and for at most `refresh` seconds (the rest of the cluster moves
    too): each answer costs a few planner runs, and a blocked node is usually blocked the same
    way loop after loop. `per_loop` bounds the new answers a loop
    computes, so a cluster that turns blocked at once is answered over a few loops."""

    def __init__(self, refresh: float, per_loop: int = 2):
        self.refresh, self.per_loop = refresh, per_loop
        self._kept: dict[str, tuple[tuple[object, ...], float, Unblock]] = {}

    def due(self, plan: ScaleDownPlan, now: float, only: Collection[str] | None = None) -> list[str]:
        """Unremovable nodes (of `only`, if given) whose answer is missing, outdated or too old,
        at most `per_loop`. The others get their kept answer."""
        due: list[str] = []
        kept: dict[str, tuple[tuple[object, ...], float, Unblock]] = {}
        for name, status in plan.nodes.items():
            if not _answered(status) or (only is not None and name not in only):
                continue
            entry = self._kept.get(name)
            if entry is not None and entry[0] == _signature(status) and now < entry[1] + self.refresh:
                status.unblock = entry[2]
                kept[name] = entry
            elif len(due) < self.per_loop:
                due.append(name)
        self._kept = kept  # nodes no longer unremovable are forgotten
        return due

    def store(self, plan: ScaleDownPlan, answers: Mapping[str, Unblock], now: float) -> None:
        for name, answer in answers.items():
            status = plan.nodes[name]
            status.unblock = answer
            if answer.text != NOT_COMPUTED:  # asked again next loop
                self._kept[name] = (_signature(status), now, answer)


def _signature(status: NodeStatus) -> tuple[object, ...]:
    util = None if status.utilization is None else round(status.utilization, 2)
    return (status.blocked_by, tuple((b.pod.uid, b.reason) for b in status.blockers), status.unplaced, util)


@dataclass(frozen=True, slots=True)
class _Outcome:
    removable: bool
    status: NodeStatus | None
    back: str = ""  # a waiting node: when its budget comes back (`_budget_back`)


def _outcome(
    name: str, plan: ScaleDownPlan, pdbs: Sequence[PodDisruptionBudget], *, decided: bool
) -> _Outcome:
    """Node `name`'s verdict in `plan`: a whole one (removable: a candidate), or one left at the
    node's verdict (`decided`: its status says)."""
    status = plan.nodes.get(name)
    removable = status is not None and status.status == REMOVABLE if decided else name in plan.candidate_set
    back = _budget_back(status, plan, pdbs) if status is not None and _waits(status) else ""
    return _Outcome(removable, status, back)


class _Search:
    def __init__(
        self,
        inputs: LoopInputs,
        options: AutoscalerOptions,
        cloud: CloudProvider,
        checker: PredicateChecker,
        timer: Timer,
        plan: ScaleDownPlan,
        *,
        narrow: bool = True,
        recording: Recording | None = None,
    ):
        self.inputs, self.options, self.cloud = inputs, options, cloud
        self.checker, self.timer = checker, timer
        self.being_deleted = {n for n, s in plan.nodes.items() if s.status == BEING_DELETED}
        self._baseline: ScaleDownPlan | None = None
        self.narrow = narrow
        # The baseline's search (or the caller's of the same inputs), replayed by narrowed runs.
        self._recording = recording if narrow else None
        self._traces: list[Recording] = []  # the narrowed checks' searches (narrow.Replay.trace)
        self._outcomes: dict[tuple[str, tuple[tuple[str, str, str], ...]], _Outcome] = {}
        self._plan_seen = plan
        self._refusals: dict[str, str] = {}  # pod key -> why it fits on no other node
        self._backs: dict[str, str] = {}  # budget key -> when it comes back, in the loop's plan
        self._facts: dict[tuple[tuple[str, str], ...], NodeFacts] = {}  # by changed flags
        self._drains: dict[tuple[tuple[str, str], ...], Memo[str, NodeDrain]] = {}  # by changed drain rules
        self._checked: dict[
            tuple[tuple[str, str], ...], Memo[str, Checked]
        ] = {}  # by changed flags but thresholds
        self._templates: dict[str, Node | None] = {}  # group id -> its template, asked once
        self.plans = 0  # planner runs so far
        self.placed = 0  # pods placed by their simulated removals and refusals (`_spend`)

    # -- one node -------------------------------------------------------------------------------
    def settled(self, status: NodeStatus, plan: ScaleDownPlan | None = None) -> Unblock | None:
        """The answer when no change is needed or possible (`_no_change`), the time a waiting
        node's budget comes back read off `plan` (the loop's by default)."""
        plan = plan or self._plan_seen
        if status.reason is NodeReason.BLOCKED_BY_ON_COMPLETION_POD:
            drain = plan.drains.get(status.name) if plan is not None else None
            if drain is not None and drain.on_completion:
                return Unblock(status.name, text=_on_completion_words(drain.on_completion), waiting=True)
        back = ""
        if _waits(status):
            blocking = status.blocking_pod
            if plan is not self._plan_seen or blocking is None:
                back = _budget_back(status, plan, self.inputs.pdbs)
            else:  # the loop's plan, asked for each node waiting: once per budget
                if blocking.pdb not in self._backs:
                    self._backs[blocking.pdb] = _budget_back(status, plan, self.inputs.pdbs)
                back = self._backs[blocking.pdb]
        return _no_change(status, back)

    def unblock(self, status: NodeStatus) -> Unblock:
        name = status.name
        settled = self.settled(status)
        if settled is not None:
            return settled
        # The loop's own status may be a remembered one (RecentlyUnremovable) or a timer's: start
        # from what a fresh planner says now.
        if status.reason in _FRESH_LOOK:
            baseline = self.baseline()
            fresh = baseline.nodes.get(name)
            if fresh is None or fresh.status != UNREMOVABLE:
                return Unblock(name, text=f"{status.reason}: {status.detail}" if status.detail else "")
            status = fresh
            settled = self.settled(status, baseline)
            if settled is not None:
                return settled
        changes: tuple[Change, ...] = ()
        for _ in range(MAX_ROUNDS):
            alternatives = self.propose(status, changes)
            if not alternatives:
                break
            first: tuple[tuple[Change, ...], _Outcome] | None = None  # the next round goes on from it
            waits: tuple[Change, ...] | None = None
            for alternative in alternatives:
                trial = self._merged((*changes, *alternative))
                outcome = self.replan(name, trial)
                if outcome.removable:
                    return self._answer(name, trial, waiting=False)
                if waits is None and _waits(outcome.status):
                    waits = trial
                first = first or (trial, outcome)
            if waits is not None:  # unneeded with these changes: it then only waits
                return self._answer(name, waits, waiting=True)
            assert first is not None
            changes, outcome = first
            if outcome.status is None or outcome.status.status != UNREMOVABLE:
                break
            status = outcome.status
        if not changes:
            refused = self.refusal(status) if status.reason is NodeReason.NO_PLACE_TO_MOVE_PODS else ""
            return Unblock(name, text=_nothing_to_change(status) + (f": {refused}" if refused else ""))
        ordered = _ordered(changes)
        return Unblock(name, ordered, False, f"{unblock_text(ordered, False)} (then {_reason_words(status)})")

    def _answer(self, name: str, changes: tuple[Change, ...], *, waiting: bool) -> Unblock:
        """The verified answer: the smallest of `changes` that still works, each minimum size at
        the largest value that works, in `change_rank` order. A waiting answer's changes may
        come out removing the node (dropping a budget's change lets surge-before-evict, among
        the changes, replace the pods it held): then that is the answer."""

        def works(trial: tuple[Change, ...]) -> bool:
            outcome = self.replan(name, trial)
            return outcome.removable or (waiting and _waits(outcome.status))

        ordered = _ordered(self._tuned(self._smallest(changes, works), works))
        outcome = self.replan(name, ordered) if waiting else None
        if outcome is None or outcome.removable:
            return Unblock(name, ordered, True, unblock_text(ordered, True))
        assert outcome.status is not None  # it waits
        wait = _waiting_words(outcome.status, outcome.back)
        return Unblock(name, ordered, False, f"{unblock_text(ordered, True)}; then {wait}", waiting=True)

    def _merged(self, changes: tuple[Change, ...]) -> tuple[Change, ...]:
        """Each object or flag changed once, where it was first changed: changes to the same
        budget added up into one; a later value of a flag, a minimum size or a count of new
        nodes replaces the earlier one (it was proposed from the state the earlier left)."""
        more: dict[str, int] = {}
        latest: dict[tuple[ChangeKind, str], Change] = {}
        for c in changes:
            if c.kind is ChangeKind.PDB:
                more[c.target] = more.get(c.target, 0) + int(c.value)
            else:
                latest[(c.kind, c.target)] = c
        by_key = {pdb.key: pdb for pdb in self.inputs.pdbs}
        merged: list[Change] = []
        for c in changes:
            if c.kind is not ChangeKind.PDB:
                if (c.kind, c.target) in latest:
                    merged.append(latest.pop((c.kind, c.target)))
            elif c.target in more:
                merged.append(_pdb_change(by_key[c.target], more.pop(c.target)))
        return tuple(merged)

    def _smallest(
        self, changes: tuple[Change, ...], works: Callable[[tuple[Change, ...]], bool]
    ) -> tuple[Change, ...]:
        """Drop the changes the others made unnecessary (a new node raises its group above its
        min size, ...): each is simulated without it."""
        kept = changes
        for change in changes:
            trial = tuple(c for c in kept if c is not change)
            if trial and works(trial):
                kept = trial
        return kept

    def _tuned(
        self, changes: tuple[Change, ...], works: Callable[[tuple[Change, ...]], bool]
    ) -> tuple[Change, ...]:
        """Each minimum size raised to the largest value that still works with the others."""
        tuned = changes
        for i, c in enumerate(changes):
            group = self._group_by_id(c.target) if c.kind is ChangeKind.NODE_GROUP_MIN_SIZE else None
            if group is None:
                continue
            others = tuned

            def ok(v: int, i: int = i, group: NodeGroup = group, others: tuple[Change, ...] = others) -> bool:
                return works(_replaced(others, i, _min_size_change(group, v)))

            best = _largest(int(c.value), group.min_size - 1, ok)
            if best is not None:
                tuned = _replaced(tuned, i, _min_size_change(group, best))
        return tuned

    # -- what to change -----------------------------------------------------------------------------
    def propose(self, status: NodeStatus, done: tuple[Change, ...]) -> list[tuple[Change, ...]]:
        """Alternative change sets for the node's current reason, best first."""
        reason = status.reason
        if reason is NodeReason.BLOCKED_BY_POD:
            return self._for_pods(status, done)
        if reason is NodeReason.NOT_UNDERUTILIZED and status.utilization is not None:
            change = _threshold(status)
            # A busy node is needed, not blocked: no threshold more than `THRESHOLD_STEP` above the
            # one in effect is suggested, nor 1 (every node short of full a candidate), and a
            # threshold already tried is not tried again. Only freeing requests would help.
            threshold = _threshold_in(status.detail)
            if threshold is None:
                threshold = _option_threshold(self.options, change.target)
            new = float(change.value)
            if (
                new >= 1.0
                or new > threshold + THRESHOLD_STEP + 1e-9
                or any(c.target == change.target and c.value == change.value for c in done)
            ):
                return []
            return [(change,)]
        if reason in (NodeReason.NO_PLACE_TO_MOVE_PODS, NodeReason.NO_PLACE_TO_MOVE_PODS_BELOW_QOS_WATERMARK):
            return [(c,) for c in self._new_nodes(status, done)]
        if reason is NodeReason.SCALE_DOWN_DISABLED_ANNOTATION:
            return [
                (
                    Change(
                        ChangeKind.NODE_ANNOTATION,
                        f"Node {status.name}",
                        f"remove {SCALE_DOWN_DISABLED_ANNOTATION}",
                        f'node {status.name} is annotated {SCALE_DOWN_DISABLED_ANNOTATION}: "true": remove it',
                        target=status.name,
                    ),
                )
            ]
        if reason is NodeReason.NODE_GROUP_MIN_SIZE_REACHED:
            return self._min_size(status, done)
        if reason is NodeReason.MINIMAL_RESOURCE_LIMIT_EXCEEDED:
            return [
                (
                    _flag(
                        self.options,
                        "cores-total",
                        f"0:{self.options.cores_total.max}",
                        "the cluster's minimum cores",
                    ),
                    _flag(
                        self.options,
                        "memory-total",
                        f"0:{self.options.memory_total.max}",
                        "the cluster's minimum memory",
                    ),
                )
            ]
        if reason is NodeReason.NOT_UNNEEDED_OTHER_REASON and "scale-down-unready-enabled" in status.detail:
            return [
                (
                    _flag(
                        self.options,
                        "scale-down-unready-enabled",
                        "true",
                        "unready nodes are not scaled down",
                    ),
                )
            ]
        return []

    def _min_size(self, status: NodeStatus, done: tuple[Change, ...]) -> list[tuple[Change, ...]]:
        """The largest min size of the node's group that gets it past the group's minimum,
        found by planning with candidates (removability only grows as the minimum falls): not a
        step down, which on a group whose other nodes take the room first is never enough."""
        group = self._group_of(status.name)
        if group is None:
            return []
        current = next(
            (
                int(c.value)
                for c in reversed(done)
                if c.kind is ChangeKind.NODE_GROUP_MIN_SIZE and c.target == group.id
            ),
            group.min_size,
        )

        def past(v: int) -> bool:
            outcome = self.replan(status.name, self._merged((*done, _min_size_change(group, v))))
            after = outcome.status
            return (
                outcome.removable
                or _waits(after)
                or (after is not None and after.reason is not NodeReason.NODE_GROUP_MIN_SIZE_REACHED)
            )

        best = _largest(0, current - 1, past)
        return [] if best is None else [(_min_size_change(group, best),)]

    def _for_pods(self, status: NodeStatus, done: tuple[Change, ...]) -> list[tuple[Change, ...]]:
        blockers = status.blockers or ((status.blocking_pod,) if status.blocking_pod is not None else ())
        by_rule = [b for b in blockers if b.reason is not PodReason.NOT_ENOUGH_PDB]
        by_budget = [b for b in blockers if b.reason is PodReason.NOT_ENOUGH_PDB]
        pod_changes: list[Change] = []
        for blocker in by_rule:
            change = _pod_change(blocker, self.options, self.inputs)
            if change is not None and change not in pod_changes:
                pod_changes.append(change)
        if not by_budget:
            return [tuple(pod_changes)] if pod_changes else []
        budget_changes = self._budgets(by_budget, done)
        alternatives = []
        if budget_changes:
            alternatives.append((*pod_changes, *budget_changes))
        if not self.options.surge_before_evict and not any(c.target == SURGE_FLAG for c in done):
            # A single replica's budget never allows a disruption: a replacement started first
            # is the fix, not a budget that lets the only pod go.
            single = [b.pod for b in by_budget if replicas_of(b.pod, self.inputs) == 1]
            surge = _flag(
                self.options,
                SURGE_FLAG,
                "true",
                "",
                words=(
                    f"single-replica {_names_of(single)}: --{SURGE_FLAG}=true or the Deployment annotation"
                    f' {SURGE_ANNOTATION}: "true" would let it go (a replacement starts first)'
                    if single
                    else f"with --{SURGE_FLAG}=true (or the Deployment annotation {SURGE_ANNOTATION}:"
                    ' "true") it would go: its Deployments start a replacement first'
                ),
            )
            alternatives.insert(0 if single else len(alternatives), (*pod_changes, surge))
        return alternatives

    def _budgets(self, blockers: Sequence[BlockingPod], done: tuple[Change, ...]) -> list[Change]:
        """One change per budget refusing these pods: the disruptions it lacks for the node (it
        needs one left when the node's turn comes, after the drains under way and the
        candidates before it)."""
        left: dict[str, int] = {}
        for b in blockers:
            if b.pdb:
                left[b.pdb] = min(left.get(b.pdb, b.left), b.left)
        by_key = {pdb.key: pdb for pdb in self.inputs.pdbs}
        return [_pdb_change(by_key[key], 1 - n) for key, n in left.items() if key in by_key]

    def _new_nodes(self, status: NodeStatus, done: tuple[Change, ...]) -> list[Change]:
        """One more node of a group, for each group worth trying: the node's own group first."""
        own = self._group_of(status.name)
        groups = [g for g in self.cloud.node_groups() if g is not own and self._template(g) is not None]
        groups.sort(key=lambda g: (g.target_size() >= g.max_size, g.id))
        if own is not None and self._template(own) is not None:
            groups.insert(0, own)
        added = {c.target: int(c.value) for c in done if c.kind is ChangeKind.ADD_NODE}
        pod = status.unplaced or "its pods"
        subject = f"pod {pod}" if status.unplaced else pod
        refused = self.refusal(status) if status.reason is NodeReason.NO_PLACE_TO_MOVE_PODS else ""
        why = f" ({refused})" if refused else ""
        changes = []
        for g in groups[:GROUPS_TRIED]:
            n = added.get(g.id, 0) + 1
            more = "one more node" if n == 1 else f"{n} more nodes"
            changes.append(
                Change(
                    ChangeKind.ADD_NODE,
                    f"node group {g.id}",
                    f"+{n} node" + ("s" if n > 1 else ""),
                    f"{subject} fits on no other node{why}: {more} of group {g.id} would take it",
                    target=g.id,
                    value=str(n),
                )
            )
        return changes

    def _template(self, group: NodeGroup) -> Node | None:
        """The group's template, None when its provider gives none now (scale-up passes such a
        group over and says why; no node of it is proposed here)."""
        if group.id not in self._templates:
            try:
                self._templates[group.id] = group.template_node()
            except TemplateError:
                self._templates[group.id] = None
        return self._templates[group.id]

    def refusal(self, status: NodeStatus) -> str:
        """kube-scheduler's reasons, node by node, for the pod that fits on no other node
        (nowhere.py), on the cluster as the loop's plan leaves it; once per pod."""
        key = status.unplaced
        if not key:
            return ""
        if key not in self._refusals:
            plan = self._plan_seen
            self._refusals[key] = refusal(
                self.inputs.snapshot,
                self.checker,
                key,
                node=status.name,
                gone=[*plan.candidate_set, *self.being_deleted],
                destinations=plan.destinations,
                namespaces=self.inputs.namespaces,
            )
            # It puts the plan's moved pods on their destinations and asks every node.
            self._spend(len(plan.destinations) + len(self.inputs.snapshot))
        return self._refusals[key]

    def _group_by_id(self, group_id: str) -> NodeGroup | None:
        return next((g for g in self.cloud.node_groups() if g.id == group_id), None)

    def _group_of(self, name: str) -> NodeGroup | None:
        snapshot = self.inputs.snapshot
        return self.cloud.node_group_for(snapshot.node(name)) if name in snapshot else None

    # -- simulate ---------------------------------------------------------------------------------
    def _facts_for(self, changes: tuple[Change, ...], *, same_cloud: bool) -> NodeFacts:
        """The per-node facts the planners of these checks share (planner.NodeFacts): one set
        per combination of changed flags (what a node's eligibility and drain read besides the
        node and its pods), so a check reads again only the nodes its changes touched; a
        changed cloud's planner keeps its own eligibility (its entries carry node groups). Checks
        that differ only in utilization thresholds share eligibility too: each node's utilization
        is worked out once, and only its comparison with the threshold redone (candidates.Checked).
        Unnarrowed (the reference) every planner starts from nothing, as a fresh loop would."""
        if not self.narrow:
            return NodeFacts()
        flags = tuple(sorted((c.target, c.value) for c in changes if c.kind is ChangeKind.FLAG))
        shared = self._facts.get(flags)
        if shared is None:
            # A drain reads only the drain rules' flags: checks of other flags (a threshold) share it.
            rules = tuple((flag, value) for flag, value in flags if flag.replace("-", "_") in _DRAIN_RULES)
            drains = self._drains.setdefault(rules, Memo())
            read = tuple((flag, value) for flag, value in flags if flag not in THRESHOLD_FLAGS)
            checked = self._checked.setdefault(read, Memo())
            shared = self._facts[flags] = NodeFacts(checked=checked, drains=drains)
        if same_cloud:
            return shared
        return NodeFacts(shared.homeless, shared.scanned, Memo(), shared.drains)

    def baseline(self) -> ScaleDownPlan:
        if self._baseline is None:
            recording = Recording() if self.narrow else None
            self._baseline = self._plan((), recording or self._counted())
            if recording is not None:
                self._spend(sum(len(step.to_move) for step in recording.steps))
                if not self._baseline.timed_out:
                    self._recording = recording
        return self._baseline

    def replan(self, name: str, changes: tuple[Change, ...]) -> _Outcome:
        """Node `name`'s verdict with `changes` applied: once per change set."""
        # Changes apply in any order: a set asked in another order is the same set.
        key = (name, tuple(sorted((str(c.kind), c.target, c.value) for c in changes)))
        outcome = self._outcomes.get(key)
        if outcome is None:
            outcome = self._outcomes[key] = (
                self._narrowed(name, changes) if self.narrow else self._whole(name, changes)
            )
        return outcome

    def _whole(self, name: str, changes: tuple[Change, ...]) -> _Outcome:
        return _outcome(name, self._plan(changes, self._counted()), self.inputs.pdbs, decided=False)

    def _counted(self) -> SimulateRemoval:
        """`simulate_removal`, each pod it is given spent on the timer."""

        def simulate(u: Update, name: str, drain: NodeDrain, to_move: list[Received]) -> Removal:
            self._spend(len(to_move))
            return simulate_removal(u, name, drain, to_move)

        return simulate

    def _spend(self, placed: int) -> None:
        """A check's work on the timer the answers' budget reads: the planner reads it once per
        node it considers, and a removal simulated costs a pod placement per pod it moves (the
        search's per-node reading under-counts a 40-pod node's simulation tenfold)."""
        self.placed += placed
        spend(self.timer, placed)

    def _narrowed(self, name: str, changes: tuple[Change, ...]) -> _Outcome:
        """The same verdict as `_whole`, replaying the baseline's search where the changes leave
        it alone and stopping at the verdict (narrow.py). A new node changes every simulation's
        starting point, so with one nothing is replayed."""
        if self._recording is None:
            self.baseline()
        replayable = all(c.kind is not ChangeKind.ADD_NODE for c in changes)
        replay = Replay(self._recording, name, replayable=replayable, traces=self._traces)
        try:
            plan = self._plan(changes, replay)
        except Decided as decided:
            return _outcome(name, decided.plan, self.inputs.pdbs, decided=True)
        finally:
            self._spend(replay.placed)
            trace = replay.finished()
            if trace is not None:
                self._traces.append(trace)
        return _outcome(name, plan, self.inputs.pdbs, decided=False)

    def _plan(
        self, changes: tuple[Change, ...], simulate: SimulateRemoval = simulate_removal
    ) -> ScaleDownPlan:
        self.plans += 1
        inputs, snapshot = self.inputs, self.inputs.snapshot
        options, pdbs, cloud = self.options, list(inputs.pdbs), self.cloud
        added: dict[str, NodeGroup] = {}
        min_sizes: dict[str, int] = {}
        snapshot.fork()
        try:
            # In one order whatever the answer's: new nodes join the snapshot in it.
            for c in sorted(changes, key=lambda c: (str(c.kind), c.target)):
                if c.kind is ChangeKind.SAFE_TO_EVICT or c.kind is ChangeKind.LOCAL_VOLUMES:
                    key = SAFE_TO_EVICT if c.kind is ChangeKind.SAFE_TO_EVICT else SAFE_TO_EVICT_LOCAL_VOLUMES
                    if snapshot.has_pod(c.target):
                        snapshot.update_pod(annotated(snapshot.pod(c.target), key, c.value))
                elif c.kind is ChangeKind.PDB:
                    pdbs = [more_disruptions(p, int(c.value)) if p.key == c.target else p for p in pdbs]
                elif c.kind is ChangeKind.FLAG:
                    field = c.target.replace("-", "_")
                    options = options.with_values(**{field: parse_flag(c.target, c.value)})
                elif c.kind is ChangeKind.ADD_NODE:
                    group = next(g for g in cloud.node_groups() if g.id == c.target)
                    template = self._template(group)
                    assert template is not None  # _new_nodes proposes groups with a template only
                    for i in range(int(c.value)):
                        node = new_node(template, f"{NEW_NODE_PREFIX}{group.id}-{i + 1}")
                        snapshot.add_node(node)
                        added[node.name] = group
                elif c.kind is ChangeKind.NODE_GROUP_MIN_SIZE:
                    min_sizes[c.target] = int(c.value)
                elif c.kind is ChangeKind.NODE_ANNOTATION and c.target in snapshot:
                    node = snapshot.node(c.target)
                    annotations = {
                        k: v for k, v in node.meta.annotations.items() if k != SCALE_DOWN_DISABLED_ANNOTATION
                    }
                    snapshot.replace_node(replace(node, meta=replace(node.meta, annotations=annotations)))
            changed_cloud = _ChangedCloud(cloud, added, min_sizes) if added or min_sizes else cloud
            planner = Planner(
                options,
                timers_expired=True,
                timer=self.timer,
                simulate=simulate,
                facts=self._facts_for(changes, same_cloud=changed_cloud is cloud),
                incremental=False,  # one update: nothing of it is replayed (reuse.py)
            )
            return planner.update(
                replace(inputs, pdbs=pdbs, being_deleted=self.being_deleted),
                cloud=changed_cloud,
                checker=self.checker,
            )
        finally:
            snapshot.revert()


# -- the changes ------------------------------------------------------------------------------------

# The flags a node's drain reads (drainability.DrainRules).
_DRAIN_RULES = frozenset(f.name for f in fields(DrainRules))

# A remembered failure: a fresh planner looks at the node as it is now.
_FRESH_LOOK = {NodeReason.RECENTLY_UNREMOVABLE}


def _answered(status: NodeStatus) -> bool:
    """Whether the node gets an answer: unremovable, or unneeded but left to its running
    on-completion pods (oncompletion.py: it waits, and the answer says until when)."""
    return status.status == UNREMOVABLE or status.reason is NodeReason.BLOCKED_BY_ON_COMPLETION_POD


def _no_change(status: NodeStatus, back: str = "") -> Unblock | None:
    """The answer for a node that no change to the cluster unblocks: it waits (its budget back
    as `back` says), or cannot go."""
    name, reason = status.name, status.reason
    if reason is NodeReason.NOT_AUTOSCALED:
        return Unblock(
            name, text="not in any autoscaled node group: add it to one (GROUPS.yaml, or the cloud's group)"
        )
    if reason in (NodeReason.NOT_UNNEEDED_LONG_ENOUGH, NodeReason.NOT_UNREADY_LONG_ENOUGH):
        return Unblock(
            name,
            text=f"waiting, not blocked: unneeded, it goes when its timer runs out ({status.detail})",
            waiting=True,
        )
    if _waits(status):
        return Unblock(name, text=f"{_waiting_words(status, back)}; nothing to change", waiting=True)
    if reason is NodeReason.NOT_UNNEEDED_OTHER_REASON and "scale-down-unready-enabled" not in status.detail:
        return Unblock(
            name, text=f"nothing to change: {status.detail}" if status.detail else "nothing to change"
        )
    return None


def _waits(status: NodeStatus | None) -> bool:
    """Unneeded, its pods fit elsewhere, and only a budget used up for now holds it: by drains
    under way or pods not Ready yet (candidates.py's words)."""
    return status is not None and status.detail.startswith("waiting for budget")


def _waiting_words(status: NodeStatus, back: str) -> str:
    blocking = status.blocking_pod
    pdb = f"PodDisruptionBudget {blocking.pdb}" if blocking is not None and blocking.pdb else "the PDB"
    when = back or "(its pods' replacements become Ready, the drains under way end)"
    return f"waiting, not blocked: drained when {pdb} allows a disruption again {when}"


def _budget_back(status: NodeStatus, plan: ScaleDownPlan, pdbs: Sequence[PodDisruptionBudget]) -> str:
    """About when the budget a waiting node needs comes back, if a drain of `plan` before it
    uses that budget: its first wave's estimate (eviction to the replacements Ready), the
    soonest of them. '' otherwise (pods not Ready yet use it: no estimate)."""
    blocking = status.blocking_pod
    pdb = next((p for p in pdbs if blocking is not None and p.key == blocking.pdb), None)
    if pdb is None:
        return ""
    waves = [
        estimate.wave_seconds
        for name, drain in plan.drains.items()
        if (estimate := plan.nodes[name].estimate) is not None and any(pdb.matches(p) for p in drain.movable)
    ]
    if not waves:
        return ""
    return f"(in about {format_duration(round(min(waves)))}: the drain before it frees one, by its estimate)"


def _nothing_to_change(status: NodeStatus) -> str:
    if status.reason is NodeReason.NOT_UNDERUTILIZED and status.utilization is not None:
        # No utilization in the words: the busy nodes of a plan share one answer (and one line).
        threshold = _threshold_in(status.detail)
        above = f"the threshold {threshold:g}" if threshold is not None else "its threshold"
        return (
            f"in use, not blocked: more than {THRESHOLD_STEP:g} above {above}; no threshold suggested"
            " (freeing its pods' requests would let it go)"
        )
    return f"no change found that kubetide can simulate ({_reason_words(status)})"


def _ordered(changes: tuple[Change, ...]) -> tuple[Change, ...]:
    return tuple(sorted(changes, key=change_rank))


def _largest(low: int, high: int, ok: Callable[[int], bool]) -> int | None:
    """The largest value in [low, high] for which `ok` holds, `ok` holding for every value below
    one that it holds for; None if it holds for none. Each value is one planner run."""
    if high < low or not ok(low):
        return None
    while low < high:
        middle = (low + high + 1) // 2
        if ok(middle):
            low = middle
        else:
            high = middle - 1
    return low


def _min_size_change(group: NodeGroup, value: int) -> Change:
    return Change(
        ChangeKind.NODE_GROUP_MIN_SIZE,
        f"node group {group.id}",
        f"minSize: {value}",
        f"node group {group.id} is at its min size {group.min_size}: lower it to {value}"
        + ("" if value + 1 >= group.min_size else f" ({value + 1} is not enough)"),
        target=group.id,
        value=str(value),
    )


def _replaced(changes: tuple[Change, ...], i: int, change: Change) -> tuple[Change, ...]:
    return (*changes[:i], change, *changes[i + 1 :])


def _option_threshold(options: AutoscalerOptions, flag: str) -> float:
    return float(getattr(options, flag.replace("-", "_")))


def _names_of(pods: Sequence[Pod]) -> str:
    return ", ".join(f"pod {p.key}" for p in pods)


def _reason_words(status: NodeStatus) -> str:
    blocking = status.blocking_pod
    pod = f" by {blocking.pod.key} ({blocking.reason})" if blocking is not None else ""
    return f"{status.reason}{pod}" + (f": {status.detail}" if status.detail else "")


def _pod_change(blocker: BlockingPod, options: AutoscalerOptions, inputs: LoopInputs) -> Change | None:
    pod, reason = blocker.pod, blocker.reason
    subject = f"Pod {pod.key}"
    safe = f'{SAFE_TO_EVICT}: "true"'
    if reason is PodReason.NOT_REPLICATED:
        text = f"pod {pod.key} is bare: give it a controller or annotate {safe}"
    elif reason is PodReason.NOT_SAFE_TO_EVICT_ANNOTATION and pod.annotations.get(SAFE_TO_EVICT) != "false":
        # Karpenter's do-not-disrupt, honoured like safe-to-evict "false"; safe-to-evict "true"
        # is looked at first, so it lets the pod go either way
        text = _do_not_disrupt_words(pod, safe)
    elif reason is PodReason.NOT_SAFE_TO_EVICT_ANNOTATION:
        text = f'pod {pod.key} is annotated {SAFE_TO_EVICT}: "false": make it "true" if it may move'
    elif reason is PodReason.UNMOVABLE_KUBE_SYSTEM_POD:
        text = f"kube-system pod {pod.key} has no PodDisruptionBudget: give it one or annotate {safe}"
    elif reason is PodReason.LOCAL_STORAGE_REQUESTED:
        local = ",".join(v.name for v in pod.volumes if v.is_local_storage)
        return Change(
            ChangeKind.LOCAL_VOLUMES,
            subject,
            f'{SAFE_TO_EVICT_LOCAL_VOLUMES}: "{local}"',
            f'pod {pod.key} uses local storage: annotate {SAFE_TO_EVICT_LOCAL_VOLUMES}: "{local}" if its data may go',
            target=pod.uid,
            value=local,
        )
    elif reason is PodReason.MIN_REPLICAS_REACHED:
        replicas = replicas_of(pod, inputs)
        return _flag(
            options,
            "min-replica-count",
            str(replicas if replicas is not None else 0),
            f"pod {pod.key}'s ReplicaSet has fewer replicas than min-replica-count {options.min_replica_count}",
        )
    elif reason is PodReason.CONTROLLER_NOT_FOUND:
        ref = pod.controller
        owner = f"{ref.kind} {ref.name}" if ref is not None else "its controller"
        return _flag(
            options,
            "skip-nodes-with-custom-controller-pods",
            "false",
            f"pod {pod.key}'s controller {owner} does not exist",
        )
    else:
        return None
    return Change(ChangeKind.SAFE_TO_EVICT, subject, safe, text, target=pod.uid, value="true")


def _flag(options: AutoscalerOptions, name: str, value: str, why: str, *, words: str = "") -> Change:
    return Change(
        ChangeKind.FLAG,
        f"flag {name}",
        f"{name}={value}",
        words or f"{why}: --{name}={value} would let it go",
        target=name,
        value=value,
    )


def _threshold(status: NodeStatus) -> Change:
    """The smallest threshold, at two decimals, at or above the node's utilization: a node exactly
    at the threshold is underutilized (CA 1.35 on, as the planner reads it)."""
    util = status.utilization or 0.0
    resource = status.detail.split(" ", 1)[0] if status.detail else "cpu"
    flag = (
        "scale-down-gpu-utilization-threshold"
        if is_gpu_resource(resource)
        else "scale-down-utilization-threshold"
    )
    threshold = _threshold_in(status.detail)
    new = min(1.0, round(math.ceil(util * 100 - 1e-9) / 100, 2))
    shown = f"{util:.2f}" if float(f"{util:.2f}") <= new else f"{util:.3f}"  # never "0.65 ... threshold 0.64"
    above = "" if threshold is None else f": {util - threshold:.2f} above the threshold {threshold:g}"
    return Change(
        ChangeKind.FLAG,
        f"flag {flag}",
        f"{flag}={new:g}",
        f"utilization {shown}{above} ({flag}={new:g} would let it go, or free that much of its requests)",
        target=flag,
        value=f"{new:g}",
    )


def _threshold_in(detail: str) -> float | None:
    _, _, tail = detail.partition("threshold ")
    try:
        return float(tail.split()[0]) if tail else None
    except ValueError:
        return None


def _pdb_change(pdb: PodDisruptionBudget, more: int) -> Change:
    spec = _spec_after(pdb, more)
    plural = "disruption" if more == 1 else "disruptions"
    return Change(
        ChangeKind.PDB,
        f"PodDisruptionBudget {pdb.key}",
        spec,
        f"PodDisruptionBudget {pdb.key} needs {more} more {plural} ({spec})",
        target=pdb.key,
        value=str(more),
    )


def _spec_after(pdb: PodDisruptionBudget, more: int) -> str:
    if isinstance(pdb.max_unavailable, int):
        return f"maxUnavailable {pdb.max_unavailable + more}"
    if isinstance(pdb.min_available, int):
        return f"minAvailable {max(0, pdb.min_available - more)}"
    if pdb.max_unavailable is not None:
        return f"maxUnavailable: {more} more than {pdb.max_unavailable} allows now"
    if pdb.min_available is not None:
        return f"minAvailable: {more} fewer than {pdb.min_available} requires now"
    return f"{more} more allowed"


def more_disruptions(pdb: PodDisruptionBudget, more: int) -> PodDisruptionBudget:
    """The budget with `more` disruptions allowed: its spec and the status the disruption
    controller would then write."""
    max_unavailable, min_available = pdb.max_unavailable, pdb.min_available
    if isinstance(max_unavailable, int):
        max_unavailable += more
    elif isinstance(min_available, int):
        min_available = max(0, min_available - more)
    return replace(
        pdb,
        max_unavailable=max_unavailable,
        min_available=min_available,
        disruptions_allowed=None if pdb.disruptions_allowed is None else pdb.disruptions_allowed + more,
        desired_healthy=None if pdb.desired_healthy is None else max(0, pdb.desired_healthy - more),
    )


def annotated(pod: Pod, key: str, value: str) -> Pod:
    meta = replace(pod.meta, annotations={**pod.meta.annotations, key: value})
    return replace(pod, meta=meta, parsed_shape=pod.shape)


def new_node(template: Node, name: str) -> Node:
    """A new node of a group, kept from scale-down as a new node is (see the module's note)."""
    labels = {**template.meta.labels, "kubernetes.io/hostname": name}
    annotations = {**template.meta.annotations, SCALE_DOWN_DISABLED_ANNOTATION: "true"}
    return replace(
        template, meta=replace(template.meta, name=name, uid=name, labels=labels, annotations=annotations)
    )


def replicas_of(pod: Pod, inputs: LoopInputs) -> int | None:
    """The replicas of the workload that controls `pod`, if the inputs know it."""
    ref = pod.controller
    workload = None if ref is None else inputs.workload(ref.kind, pod.namespace, ref.name)
    return None if workload is None else workload.replicas


class _ChangedGroup:
    """A node group with nodes added by changes, or a lower min size."""

    def __init__(self, group: NodeGroup, added: int, min_size: int | None):
        self._group, self._added, self._min = group, added, min_size

    @property
    def id(self) -> str:
        return self._group.id

    @property
    def min_size(self) -> int:
        return self._group.min_size if self._min is None else self._min

    @property
    def max_size(self) -> int:
        return max(self._group.max_size, self._group.target_size() + self._added)

    def target_size(self) -> int:
        return self._group.target_size() + self._added

    def increase_size(self, delta: int) -> None:
        raise NotImplementedError("a what-if group is never resized")

    def decrease_target_size(self, delta: int) -> None:
        raise NotImplementedError("a what-if group is never resized")

    def delete_nodes(self, nodes: Sequence[Node]) -> None:
        raise NotImplementedError("a what-if group deletes nothing")

    def instances(self) -> Sequence[Instance]:
        return self._group.instances()

    def template_node(self) -> Node | None:
        return self._group.template_node()

    def price_per_hour(self) -> float | None:
        return self._group.price_per_hour()


class _ChangedCloud:
    """The cloud as the changes leave it: added nodes belong to their groups."""

    def __init__(self, cloud: CloudProvider, added: Mapping[str, NodeGroup], min_sizes: Mapping[str, int]):
        self._cloud = cloud
        self._added = dict(added)
        counts: dict[str, int] = {}
        for group in added.values():
            counts[group.id] = counts.get(group.id, 0) + 1
        self._groups = {
            g.id: _ChangedGroup(g, counts.get(g.id, 0), min_sizes.get(g.id)) for g in cloud.node_groups()
        }

    def node_groups(self) -> Sequence[NodeGroup]:
        return list(self._groups.values())

    def node_group_for(self, node: Node) -> NodeGroup | None:
        group = self._added.get(node.name) or self._cloud.node_group_for(node)
        return None if group is None else self._groups.get(group.id)


def _on_completion_words(pods: Sequence[Pod]) -> str:
    """A node left to its running safe-to-evict "on-completion" pods (oncompletion.py): when each
    completes at the latest, where its spec.activeDeadlineSeconds says (from its start)."""
    said = []
    for pod in pods:
        deadline, start = pod.active_deadline_seconds, pod.start_time
        if deadline is not None and start is not None:
            said.append(
                f"pod {pod.key} completes at {rfc3339(start + deadline)} at the latest"
                f" (activeDeadlineSeconds {deadline} from its start)"
            )
        else:
            said.append(f"pod {pod.key} completes when it is done (no activeDeadlineSeconds: no time known)")
    return (
        f'waiting, not blocked: left to finish ({SAFE_TO_EVICT}: "on-completion"): {"; ".join(said)};'
        f' the node goes once they have completed, or sooner with {SAFE_TO_EVICT}: "true"'
    )


def _do_not_disrupt_words(pod: Pod, safe: str) -> str:
    """Karpenter's do-not-disrupt as the pod carries it: for ever ("true", or a duration not yet
    started), or until its start time plus the duration (model/disruption.py)."""
    value = pod.annotations.get(DO_NOT_DISRUPT, "")
    until = do_not_disrupt_until(pod)
    if until is None or math.isinf(until):
        return f'pod {pod.key} is annotated {DO_NOT_DISRUPT}: "{value}": remove it or annotate {safe} if it may move'
    return (
        f'pod {pod.key} is protected until {rfc3339(until)} ({DO_NOT_DISRUPT}: "{value}" from its start):'
        f" it goes after that, or sooner with the annotation removed or {safe}"
    )
