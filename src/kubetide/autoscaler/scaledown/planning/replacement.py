"""kubetide's own disruption method: consolidation onto a cheaper node group.

The Cluster Autoscaler only removes a node whose pods fit on the other nodes and that is below
the utilization threshold; when load falls and a cheaper group exists, it keeps nodes that one
cheaper node could stand in for (two large nodes each half used, where one large and one small
would do), and nodes a little above the threshold whose pods the others could take together
(quarter-load x20 ends with 35 nodes 5 or 6 of 8 cores used, where 23 hold the pods).
Karpenter replaces or removes them; this method does too, within the Cluster Autoscaler's safety:

- the nodes to replace are those the candidate search has found removable but for room
  (NoPlaceToMovePods: every drain rule held, budgets included) for scale-down-unneeded-time, as
  a candidate waits that long before it goes (the planner's `replaceable_since`, restarted with
  the other timers when the cluster is unhealthy), and the busy ones (NotUnderutilized) whose
  utilization stayed the same that long (a pod added or removed restarts the wait, as
  Karpenter's consolidateAfter), which CA's drain rules let go (the search never simulates
  them), while the cluster is settled (no candidate waiting, no pod terminating, no node being
  deleted, no recently evicted pod injected: the planner's `_replaceable`); lowest utilization
  first, after the candidates the other methods remove, within the
  node groups' minimum sizes and the cluster's minimum cores and memory; not an unready one
  (its drain waits for the node controller, UC6);
- their pods, with those of every node leaving (candidates, nodes being deleted), must all fit
  on the nodes that stay, with no new node (they are removed) or with one new node of a
  cheaper group (its template net of DaemonSets), as the scheduler's filters say: no pod is
  left without a home;
- their PodDisruptionBudgets must not refuse them (the tracker's all-or-nothing charge, as for a
  candidate): a budget with fewer disruptions left than their pods lets the drain go pod by pod,
  as CA drains a risky node, since the Eviction API never takes a budget below its minimum; one
  with none left, or pinned for good, refuses: a budget's minimum is never traded for money;
- the new node is of a group none of them is of (Karpenter's filterOutSameInstanceType: a
  node of their own group is never cheaper than they are; two half-used nodes of a group become
  one only by CA's own removal), strictly cheaper than they are together;
- the saving must clear Karpenter's Balanced score (autoscaler/consolidation.py) against the
  nodes that stay (a removal of nodes like the others scores about 1, so it passes);
- one replacement at a time, and none while scale-down is paused.

A removal is a plain command, drained as CA's are. A replacement's command carries it
(`Command.replacements`): the loop launches it first, and the nodes are drained only once a new
Ready node of that group has joined (`inputs.replaced`, this method's second answer, a plain
removal then). Of the prefixes of the nodes in order (up to MAX_REPLACED), the one whose removal
or replacement saves most is proposed, as Karpenter's multi-node consolidation looks for the
longest prefix.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from kubetide.autoscaler.consolidation import balanced_approves, balanced_score, reschedule_cost
from kubetide.autoscaler.ports import CloudProvider, NodeGroup, ProviderError
from kubetide.autoscaler.scaledown.planning.drainability import (
    DrainContext,
    DrainRules,
    drain_node,
    index_workloads,
)
from kubetide.autoscaler.scaledown.planning.eligibility import RemovalLimits
from kubetide.autoscaler.scaledown.planning.methods import (
    CA_METHODS,
    Command,
    DisruptionMethod,
    MethodInputs,
)
from kubetide.autoscaler.scaledown.planning.pdb import PdbTracker
from kubetide.autoscaler.scaledown.planning.placement import homeless
from kubetide.autoscaler.scaledown.reasons import NodeReason
from kubetide.autoscaler.scaleup.template import build_template
from kubetide.model import Node, Pod
from kubetide.model.quantity import CPU, MEMORY
from kubetide.scheduling import PredicateChecker
from kubetide.snapshot import ClusterSnapshot

MAX_REPLACED = 10  # nodes one replacement may stand in for


@dataclass(frozen=True, slots=True)
class PendingReplacement:
    """A replacement the loop launched: one node of `group_id`, asked for at `launched_at`, when
    the group's nodes were `before`."""

    group_id: str
    launched_at: float
    before: frozenset[str]

    def arrival(self, snapshot: ClusterSnapshot, cloud: CloudProvider) -> tuple[str, bool] | None:
        """The node of the group that was not there at the launch (a Ready one first) and whether
        it is Ready, if one has registered."""
        found: tuple[str, bool] | None = None
        for node in snapshot.nodes():
            if node.name not in self.before:
                group = cloud.node_group_for(node)
                if group is not None and group.id == self.group_id:
                    if node.ready:
                        return node.name, True
                    found = found or (node.name, False)
        return found


@dataclass(frozen=True, slots=True)
class _Priced:
    name: str
    group_id: str
    price: float
    pods: tuple[Pod, ...]  # those that move
    disruption: float  # their reschedule cost


def moving_pods(snapshot: ClusterSnapshot, name: str) -> tuple[Pod, ...]:
    """The pods a drain of `name` moves: not DaemonSet, mirror, finished or already leaving."""
    return tuple(
        p
        for p in snapshot.pods_on(name).values()
        if not (p.is_daemonset or p.is_mirror or p.is_terminal or p.is_terminating)
    )


def _price(group: NodeGroup | None) -> float | None:
    """The group's price per hour, None when unknown (an instance type the AWS or Cluster API
    provider's bundled table lacks) or 0 (free: nothing to save): such a group is never a
    replacement's, nor replaced."""
    if group is None:
        return None
    try:
        price = group.price_per_hour()
    except ProviderError:
        return None
    return price if price is not None and price > 0 else None


class CheaperGroupReplacement:
    """Replace nodes by one node of a cheaper group (see the module's docstring)."""

    name = "replace"

    def __init__(self) -> None:
        # Each node's moving pods and disruption, under its snapshot stamp (stamps are issued
        # once per process, so planners may share the method): a quiet node costs a lookup.
        self._facts: dict[str, tuple[int, _Priced]] = {}

    def propose(self, inputs: MethodInputs) -> Command | None:
        if not inputs.options.consolidate_onto_cheaper_groups:
            return None
        claimed = inputs.claimed()
        replaced = [n for n in inputs.replaced if n not in claimed]
        if replaced:
            # Their pods must fit on what stays now that the replacement is there; if the
            # cluster changed meanwhile, they wait (and are forgotten at the provision timeout).
            # (Candidates stay: the replacement itself is one, empty as it joins.)
            if inputs.plan.cooldown is not None:
                return None
            with _Trials(inputs, _leaving(inputs, claimed, candidates=False)) as trials:
                return Command(self.name, tuple(replaced)) if trials.fit(None, replaced) else None
        if inputs.replacing or inputs.plan.cooldown is not None:
            return None
        return self._new_replacement(inputs, claimed)

    def _new_replacement(self, inputs: MethodInputs, claimed: frozenset[str]) -> Command | None:
        leaving = _leaving(inputs, claimed)
        # The nodes that may be replaced first, from the plan alone: most loops have none.
        candidates = _replaceable(inputs, leaving)
        if not candidates:
            return None
        groups = _launchable(inputs.cloud)
        staying = self._staying(inputs.snapshot, inputs.cloud, leaving)
        ranked = _within_rules(inputs, leaving, [staying[n] for _, n in candidates if n in staying])
        if not ranked:
            return None
        pool = (sum(p.price for p in staying.values()), sum(p.disruption for p in staying.values()))
        tracker = PdbTracker(inputs.pdbs, inputs.snapshot.pods())
        plan = inputs.plan
        best: tuple[float, Command] | None = None
        with _Trials(inputs, leaving) as trials:
            # The prefix that saves most: their removal when the nodes staying take their pods,
            # else one node of the cheapest group that pays.
            for size in range(1, len(ranked) + 1):
                chosen = ranked[:size]
                tracker.fork()
                charge = tracker.charge_node([p for v in chosen for p in v.pods])
                tracker.revert()
                if charge.refusal is not None:
                    break  # a budget refuses them now: its minimum is never traded for money
                # Only busy nodes may go with no new node: the search found the others' pods
                # a place nowhere (a replayed loop, with no fork, could think otherwise).
                removable = all(plan.nodes[v.name].blocked_by is NodeReason.NOT_UNDERUTILIZED for v in chosen)
                found = _cheapest_that_pays(chosen, groups, pool, trials, removable=removable)
                if found is not None and (best is None or found[0] > best[0]):
                    group = () if found[1] is None else (found[1],)
                    best = (found[0], Command(self.name, tuple(v.name for v in chosen), group))
        return best[1] if best is not None else None

    def _staying(
        self, snapshot: ClusterSnapshot, cloud: CloudProvider, leaving: set[str]
    ) -> dict[str, _Priced]:
        """Every priced node not leaving, with its moving pods and disruption (from `_facts`
        while its stamp holds)."""
        staying: dict[str, _Priced] = {}
        facts: dict[str, tuple[int, _Priced]] = {}
        for node, stamp in snapshot.stamps():
            if node.name in leaving:
                continue
            group = cloud.node_group_for(node)
            price = _price(group)
            if group is None or price is None:
                continue
            hit = self._facts.get(node.name)
            if hit is None or hit[0] != stamp or hit[1].group_id != group.id or hit[1].price != price:
                pods = moving_pods(snapshot, node.name)
                hit = (stamp, _Priced(node.name, group.id, price, pods, reschedule_cost(pods)))
            facts[node.name] = hit
            staying[node.name] = hit[1]
        self._facts = facts  # only the nodes there are now
        return staying


def _replaceable(inputs: MethodInputs, leaving: set[str]) -> list[tuple[float, str]]:
    """(utilization, name) of the Ready nodes that may be replaced, lowest utilization first
    (an unready node's pods wait for the node controller, UC6)."""
    snapshot, nodes = inputs.snapshot, inputs.plan.nodes
    found = [
        (nodes[name].utilization or 0.0, name)
        for name in inputs.replaceable
        if name not in leaving and name in snapshot and snapshot.node(name).ready
    ]
    busy = [(u, name) for u, name in found if nodes[name].blocked_by is NodeReason.NOT_UNDERUTILIZED]
    # Busy nodes wait while the cluster is still shrinking (CA's candidates wait, or pods are
    # terminating: their nodes' utilization still counts them): a node replaced now may be
    # redundant once those are gone (quarter-load: a small node launched at the drop, removed
    # again 12 minutes later).
    if busy and (inputs.plan.candidate_set or any(p.is_terminating for p in snapshot.pods())):
        found = [item for item in found if item not in busy]
    return sorted(found)


def _within_rules(inputs: MethodInputs, leaving: set[str], ordered: Sequence[_Priced]) -> list[_Priced]:
    """The first MAX_REPLACED of `ordered` with pods to move that CA's rules let go: the node
    groups' minimum sizes and the cluster's minimum cores and memory, after the nodes leaving;
    and, for a busy node (above the utilization threshold, which the candidate search does not
    simulate), the drain rules: a pod that blocks a drain, or one left to complete, keeps it."""
    snapshot, cloud, plan = inputs.snapshot, inputs.cloud, inputs.plan
    in_progress: dict[str, int] = {}
    for name in inputs.being_deleted:
        group = cloud.node_group_for(snapshot.node(name)) if name in snapshot else None
        if group is not None:
            in_progress[group.id] = in_progress.get(group.id, 0) + 1
    limits = RemovalLimits(
        inputs.options, cloud.node_groups(), snapshot.nodes(), inputs.being_deleted, in_progress
    )
    for name in sorted(leaving - inputs.being_deleted):
        group = cloud.node_group_for(snapshot.node(name)) if name in snapshot else None
        if group is not None:
            limits.take(snapshot.node(name), group)
    ctx: DrainContext | None = None
    kept: list[_Priced] = []
    for priced in ordered:
        if len(kept) == MAX_REPLACED:
            break
        node, group = snapshot.node(priced.name), cloud.node_group_for(snapshot.node(priced.name))
        if not priced.pods or group is None or limits.check(node, group) is not None:
            continue
        if plan.nodes[priced.name].blocked_by is NodeReason.NOT_UNDERUTILIZED:
            ctx = ctx or _drain_context(inputs)
            drain = drain_node(snapshot.pods_on(priced.name).values(), ctx)
            if drain.blockers or drain.on_completion:
                continue
        limits.take(node, group)
        kept.append(priced)
    return kept


def _drain_context(inputs: MethodInputs) -> DrainContext:
    workloads = index_workloads(inputs.controllers) if inputs.controllers is not None else None
    tracker = PdbTracker(inputs.pdbs, inputs.snapshot.pods(), workloads)
    return DrainContext(DrainRules.from_options(inputs.options), tracker, inputs.plan.now, workloads)


def _launchable(cloud: CloudProvider) -> list[tuple[float, NodeGroup]]:
    """The priced groups that may grow, cheapest first."""
    groups = [
        (price, g)
        for g in cloud.node_groups()
        if g.target_size() < g.max_size and (price := _price(g)) is not None
    ]
    return sorted(groups, key=lambda pg: (pg[0], pg[1].id))


def _cheapest_that_pays(
    chosen: Sequence[_Priced],
    groups: Sequence[tuple[float, NodeGroup]],
    pool: tuple[float, float],
    trials: _Trials,
    *,
    removable: bool,
) -> tuple[float, str | None] | None:
    """(saving per hour, group) of the cheapest way to move every pod of `chosen` whose saving
    clears the Balanced score against the pool's (cost, disruption): no new node (group None)
    when they are `removable` and the nodes staying take them all, else one node of the
    cheapest group (none of `chosen`'s) that does."""
    price = sum(v.price for v in chosen)
    disruption = sum(v.disruption for v in chosen)
    names = [v.name for v in chosen]
    if not balanced_approves(balanced_score(price, pool[0], disruption, pool[1])):
        return None  # even their removal saves too little for what it disrupts
    if removable and trials.fit(None, names):
        return price, None
    own = {v.group_id for v in chosen}
    for new_price, group in groups:
        if new_price >= price:
            return None
        if group.id in own:
            # Karpenter's filterOutSameInstanceType: a node of a group some of them are of is
            # never cheaper than those; removing them would do.
            continue
        if not balanced_approves(balanced_score(price - new_price, pool[0], disruption, pool[1])):
            return None  # dearer groups save less still
        if trials.fit(group, names):
            return price - new_price, group.id
    return None


class _Trials:
    """Fit trials on one fork of the snapshot with one PredicateChecker, for one proposal: can
    the pods of the nodes leaving, and of the nodes chosen, all move to the nodes staying plus
    one new node of a group? Each trial forks again and reverts; the group templates (net of
    DaemonSets) are built once."""

    def __init__(self, inputs: MethodInputs, leaving: set[str]):
        self.inputs = inputs
        self.leaving = leaving
        self.snapshot = inputs.snapshot
        self.checker: PredicateChecker | None = None
        self.templates: dict[str, Node | None] = {}
        self.free = _free_room(self.snapshot, leaving)

    def __enter__(self) -> _Trials:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.checker is not None:
            if self.checker is not self.inputs.checker:
                self.checker.close()
            self.snapshot.revert()

    def _template(self, group: NodeGroup) -> Node | None:
        if group.id not in self.templates:
            template = None
            with contextlib.suppress(ProviderError):
                raw = group.template_node()
                if raw is not None:
                    built = build_template(
                        group.id,
                        raw,
                        self.inputs.daemonsets,
                        self.snapshot,
                        self._checker(),
                        self.inputs.options,
                    )
                    template = built.copy("replacement")
            self.templates[group.id] = template
        return self.templates[group.id]

    def _checker(self) -> PredicateChecker:
        if self.checker is None:
            self.snapshot.fork()
            shared = self.inputs.checker
            self.checker = shared if shared is not None else PredicateChecker(self.snapshot)
        return self.checker

    def fit(self, group: NodeGroup | None, chosen: Sequence[str]) -> bool:
        """Every pod of the nodes leaving and of `chosen` fits on the nodes staying, plus one new
        node of `group` when given."""
        snapshot = self.snapshot
        gone = self.leaving | set(chosen)
        to_move = [p for name in sorted(gone) if name in snapshot for p in moving_pods(snapshot, name)]
        new = self._template(group) if group is not None else None
        if group is not None and new is None:
            return False
        # Total requests against total free room first: most trials that fail, fail here.
        room = self.free - sum(
            (self.free_of(name) for name in chosen if name not in self.leaving), np.zeros(2, np.int64)
        )
        if new is not None:
            room = room + np.array([new.allocatable.get(r, 0) for r in (CPU, MEMORY)], np.int64)
        need = np.array([sum(p.requests.get(r, 0) for p in to_move) for r in (CPU, MEMORY)], np.int64)
        if (need > room).any():
            return False
        checker = self._checker()
        snapshot.fork()
        try:
            if new is not None:
                snapshot.add_node(new)
            for pod in to_move:
                dest = checker.find_node(homeless(pod), skip=gone)
                if dest is None:
                    return False
                snapshot.move_pod(pod.uid, dest)
            return True
        finally:
            snapshot.revert()

    def free_of(self, name: str) -> np.ndarray:
        return _free(self.snapshot, self.snapshot.slot_of(name))


def _free(snapshot: ClusterSnapshot, slots: np.ndarray | int) -> np.ndarray:
    """Free cpu and memory (never below zero) of the nodes at `slots`, per node."""
    columns = [snapshot.columns.index[r] for r in (CPU, MEMORY)]
    free: np.ndarray = np.clip(
        snapshot.alloc[slots][..., columns] - snapshot.used[slots][..., columns], 0, None
    )
    return free


def _free_room(snapshot: ClusterSnapshot, leaving: set[str]) -> np.ndarray:
    """Free cpu and memory summed over the nodes not leaving."""
    mask = snapshot.valid.copy()
    for name in leaving:
        if name in snapshot:
            mask[snapshot.slot_of(name)] = False
    total: np.ndarray = _free(snapshot, np.flatnonzero(mask)).sum(axis=0).astype(np.int64)
    return total


def _leaving(inputs: MethodInputs, claimed: frozenset[str], *, candidates: bool = True) -> set[str]:
    """Nodes on their way out: claimed by an earlier method, being deleted, and (unless told
    otherwise) the candidates, which may go once their timers run out."""
    plan = inputs.plan
    return {
        *claimed,
        *(plan.candidate_set if candidates else ()),
        *inputs.being_deleted,
    }


# kubetide's own policy: CA's two methods, then the replacement onto a cheaper group (which the
# cluster-autoscaler policy turns off with consolidate-onto-cheaper-groups=false).
KUBETIDE_METHODS: tuple[DisruptionMethod[MethodInputs, Command], ...] = (
    *CA_METHODS,
    CheaperGroupReplacement(),
)
