"""kubetide's own disruption method: consolidation onto a cheaper node group.

The Cluster Autoscaler only removes a node whose pods fit on the other nodes; when load falls and
a cheaper group exists, it keeps nodes that one cheaper node could stand in for (two large nodes
each half used, where one large and one small would do). Karpenter replaces them; this method
does too, within the Cluster Autoscaler's safety:

- the nodes to replace are those the candidate search found removable but for room
  (NoPlaceToMovePods: every drain rule held, budgets included), lowest utilization first, after
  the candidates the other methods remove; a node younger than scale-down-unneeded-time is not
  replaced (a replacement is not itself replaced at once: no churn), nor an unready one (its
  drain waits for the node controller, UC6);
- their pods, with those of every node leaving (candidates, nodes being deleted), must all fit
  on the nodes that stay plus one new node of a cheaper group (its template net of DaemonSets),
  as the scheduler's filters say: no pod is left without a home;
- their PodDisruptionBudgets must not refuse them (the tracker's all-or-nothing charge, as for a
  candidate): a budget with fewer disruptions left than their pods lets the drain go pod by pod,
  as CA drains a risky node, since the Eviction API never takes a budget below its minimum; one
  with none left, or pinned for good, refuses: a budget's minimum is never traded for money;
- the saving must clear Karpenter's Balanced score (autoscaler/consolidation.py) against the
  nodes that stay;
- one replacement at a time, and none while scale-down is paused.

The command carries the replacement (`Command.replacements`): the loop launches it first, and the
nodes are drained only once a new Ready node of that group has joined (`inputs.replaced`, this
method's second answer, a plain removal then). The largest set of such nodes (up to
MAX_REPLACED) that one node can stand in for is proposed, as Karpenter's multi-node
consolidation looks for the longest prefix.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kubetide.autoscaler.consolidation import balanced_approves, balanced_score, reschedule_cost
from kubetide.autoscaler.ports import CloudProvider, NodeGroup, ProviderError
from kubetide.autoscaler.scaledown.planning.methods import (
    CA_METHODS,
    Command,
    DisruptionMethod,
    MethodInputs,
)
from kubetide.autoscaler.scaledown.planning.pdb import PdbTracker
from kubetide.autoscaler.scaledown.planning.placement import homeless
from kubetide.autoscaler.scaledown.planning.plan import UNREMOVABLE
from kubetide.autoscaler.scaledown.reasons import NodeReason
from kubetide.autoscaler.scaleup.template import build_template
from kubetide.model import Pod
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


def moving_pods(snapshot: ClusterSnapshot, name: str) -> tuple[Pod, ...]:
    """The pods a drain of `name` moves: not DaemonSet, mirror, finished or already leaving."""
    return tuple(
        p
        for p in snapshot.pods_on(name).values()
        if not (p.is_daemonset or p.is_mirror or p.is_terminal or p.is_terminating)
    )


def _price(group: NodeGroup | None) -> float | None:
    """The group's price per hour, None when unknown. A provider that looks no price up says 0
    (AWS, Cluster API): such a group is never a replacement's, nor replaced."""
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

    def propose(self, inputs: MethodInputs) -> Command | None:
        if not inputs.options.consolidate_onto_cheaper_groups:
            return None
        claimed = inputs.claimed()
        replaced = [n for n in inputs.replaced if n not in claimed]
        if replaced:
            # Their pods must fit on what stays now that the replacement is there; if the
            # cluster changed meanwhile, they wait (and are forgotten at the provision timeout).
            # (Candidates stay: the replacement itself is one, empty as it joins.)
            going = _leaving(inputs, claimed, candidates=False)
            if inputs.plan.cooldown is None and self._fits(inputs, None, replaced, going):
                return Command(self.name, tuple(replaced))
            return None
        if inputs.replacing or inputs.plan.cooldown is not None:
            return None
        return self._new_replacement(inputs, claimed)

    def _new_replacement(self, inputs: MethodInputs, claimed: frozenset[str]) -> Command | None:
        plan, snapshot, cloud = inputs.plan, inputs.snapshot, inputs.cloud
        leaving = _leaving(inputs, claimed)
        staying: list[_Priced] = []
        victims: list[tuple[float, _Priced]] = []
        for node in snapshot.nodes():
            if node.name in leaving:
                continue
            group = cloud.node_group_for(node)
            price = _price(group)
            if group is None or price is None:
                continue
            priced = _Priced(node.name, group.id, price, moving_pods(snapshot, node.name))
            staying.append(priced)
            status = plan.nodes.get(node.name)
            joined = node.meta.creation_timestamp
            settled = joined is None or plan.now - joined >= inputs.options.scale_down_unneeded_time
            if (
                settled
                and node.ready  # an unready node's pods wait for the node controller (UC6)
                and status is not None
                and status.status == UNREMOVABLE
                and status.blocked_by is NodeReason.NO_PLACE_TO_MOVE_PODS
                and priced.pods
            ):
                victims.append((status.utilization or 0.0, priced))
        if not victims:
            return None
        victims.sort(key=lambda v: (v[0], v[1].name))
        ranked = [v for _, v in victims][:MAX_REPLACED]
        pool_cost = sum(p.price for p in staying)
        pool_disruption = sum(reschedule_cost(p.pods) for p in staying)
        tracker = PdbTracker(inputs.pdbs, snapshot.pods())
        best: Command | None = None
        # The longest prefix that works; a longer one saves more (each node has a price).
        for size in range(1, len(ranked) + 1):
            chosen = ranked[:size]
            tracker.fork()
            charge = tracker.charge_node([p for v in chosen for p in v.pods])
            tracker.revert()
            if charge.refusal is not None:
                break  # a budget refuses them now: its minimum is never traded for money
            found = self._replacement(inputs, chosen, leaving, pool_cost, pool_disruption)
            if found is not None:
                best = Command(self.name, tuple(v.name for v in chosen), (found,))
        return best

    def _replacement(
        self,
        inputs: MethodInputs,
        chosen: Sequence[_Priced],
        leaving: set[str],
        pool_cost: float,
        pool_disruption: float,
    ) -> str | None:
        """The cheapest group one node of which, with the nodes staying, takes every pod of the
        nodes leaving and of `chosen`, and whose saving the Balanced score approves; or None."""
        price = sum(v.price for v in chosen)
        groups = [g for g in inputs.cloud.node_groups() if g.target_size() < g.max_size]
        options = sorted(
            ((p, g) for g in groups if (p := _price(g)) is not None and p < price),
            key=lambda pg: (pg[0], pg[1].id),
        )
        disruption = sum(reschedule_cost(v.pods) for v in chosen)
        for new_price, group in options:
            score = balanced_score(price - new_price, pool_cost, disruption, pool_disruption)
            if not balanced_approves(score):
                return None  # dearer options save less still
            if self._fits(inputs, group, [v.name for v in chosen], leaving):
                return group.id
        return None

    def _fits(
        self, inputs: MethodInputs, group: NodeGroup | None, chosen: Sequence[str], leaving: set[str]
    ) -> bool:
        """Every pod of the nodes leaving and of `chosen` fits on the nodes staying, plus one new
        node of `group` when given (its template net of DaemonSets)."""
        snapshot = inputs.snapshot
        raw = None
        if group is not None:
            try:
                raw = group.template_node()
            except ProviderError:
                return False
            if raw is None:
                return False
        gone = leaving | set(chosen)
        to_move = [p for name in sorted(gone) if name in snapshot for p in moving_pods(snapshot, name)]
        snapshot.fork()
        checker = PredicateChecker(snapshot)
        try:
            if group is not None and raw is not None:
                template = build_template(group.id, raw, inputs.daemonsets, snapshot, checker, inputs.options)
                snapshot.add_node(template.copy("replacement"))
            for pod in to_move:
                dest = checker.find_node(homeless(pod), skip=gone)
                if dest is None:
                    return False
                snapshot.move_pod(pod.uid, dest)
            return True
        finally:
            checker.close()
            snapshot.revert()


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
