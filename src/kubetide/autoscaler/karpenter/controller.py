"""Karpenter as an autoscaler behind kubetide's ports (`policy: karpenter`): the scenario's
NodePools (one, `default`, without `spec.nodePools`), whose instance types are the node groups
their requirements select (nodepools.py).

Each `run_once` (every scan-interval, 10 s by default: Karpenter's disruption polling period):

1. observe: NodeClaims launched earlier that are now initialized (Ready) or failed; when each
   node's pods last changed (consolidateAfter);
2. provisioning: unschedulable pods are batched (closed after 1 s without a new pod, or 10 s
   after the first) and scheduled on the cluster, the NodeClaims in flight and new NodeClaims,
   each launched as its cheapest instance type (scheduling.py);
3. orchestration (Karpenter's queue.go): a command's candidates are tainted
   `karpenter.sh/disrupted:NoSchedule`, its replacements launched, and once every replacement
   is initialized the candidates are terminated: their pods evicted (the Eviction API honours
   PDBs; a refusal is retried), the node deleted when no pod but DaemonSet and mirror pods is
   left, or at once when terminationGracePeriod has passed. Replacements not initialized within
   the command timeout (10 min) roll the command back (the taints are taken off);
4. disruption: a command decided earlier is validated 15 s later (candidates still candidates
   within budget, the same decision on the cluster as it is then; an emptiness command keeps
   the still-empty subset) and queued, or abandoned; otherwise the methods are tried in order
   (methods.py) and the first command waits for its validation. A consolidation method that
   found nothing is not tried again until Karpenter's cluster state changes (state.py; the
   changes are taken in at step 1).

Decisions read the Clock only; every write goes through ClusterActions and the cloud ports.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections import Counter
from collections.abc import Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kubetide.autoscaler.consolidation import eviction_cost, reschedule_cost
from kubetide.autoscaler.events import Event, EventType
from kubetide.autoscaler.karpenter.cost import lifetime_remaining
from kubetide.autoscaler.karpenter.methods import (
    BALANCED,
    DRIFTED,
    EMPTY,
    UNDERUTILIZED,
    WHEN_EMPTY,
    Candidate,
    Command,
    Context,
    MultiNodeConsolidation,
    PoolTotals,
    SingleNodeConsolidation,
    balanced_refusal,
    consolidate,
    first_command,
)
from kubetide.autoscaler.karpenter.nodepools import Budgets, NodePool, by_weight, pool_for, remaining
from kubetide.autoscaler.karpenter.scheduling import InstanceType, NodeClaim, simulate
from kubetide.autoscaler.karpenter.state import ConsolidationState
from kubetide.autoscaler.options import AutoscalerOptions
from kubetide.autoscaler.ports import (
    ActionError,
    CloudProvider,
    ClusterActions,
    ClusterView,
    EvictionOutcome,
    InstanceState,
    NodeGroup,
    ProviderError,
)
from kubetide.autoscaler.scaledown.planning import PdbTracker
from kubetide.autoscaler.scaleup.template import GroupTemplate, build_template, daemonsets_of, sanitize_taints
from kubetide.clock import Clock
from kubetide.model import Node, Pod, Taint
from kubetide.model.disruption import DO_NOT_DISRUPT, do_not_disrupt
from kubetide.model.node import HOSTNAME_LABEL
from kubetide.model.nodepool import NodePoolSettings, parse_budgets
from kubetide.scheduling import PredicateChecker
from kubetide.snapshot import ClusterSnapshot

DISRUPTED_TAINT = "karpenter.sh/disrupted"
BATCH_IDLE = 1.0  # BATCH_IDLE_DURATION
BATCH_MAX = 10.0  # BATCH_MAX_DURATION
VALIDATION_DELAY = 15.0  # consolidation.go commandValidationDelay
COMMAND_TIMEOUT = 600.0  # queue.go: clamp(80 ms x commands, 10 min, 1 h); a few commands at once
UNAVAILABLE_TTL = 180.0  # the unavailable-offerings cache: an instance type that failed to launch
REGISTRATION_TIMEOUT = 900.0  # liveness.go: a NodeClaim whose node has not registered by then is deleted
EVICTION_RETRY = 10.0  # how soon a terminating node tries its refused evictions again
# the methods that keep a "consolidated" mark (state.py)
MARKED_METHODS = (MultiNodeConsolidation.name, SingleNodeConsolidation.name)


def settings_of(options: AutoscalerOptions) -> NodePoolSettings:
    return NodePoolSettings(
        consolidation_policy=options.karpenter_consolidation_policy,
        consolidate_after=options.karpenter_consolidate_after,
        budgets=parse_budgets(options.karpenter_budgets),
        termination_grace_period=options.karpenter_termination_grace_period,
    )


def reschedulable(pods: Sequence[Pod]) -> tuple[Pod, ...]:
    """The pods a disruption moves: not DaemonSet, mirror, finished or already leaving."""
    return tuple(p for p in pods if not (p.is_daemonset or p.is_mirror or p.is_terminal or p.is_terminating))


def awaiting_a_home(pods: Sequence[Pod]) -> tuple[Pod, ...]:
    """The pods of a node being disrupted that will want room elsewhere (Karpenter's
    pod.IsReschedulable): the reschedulable ones, and StatefulSet pods already terminating, whose
    replacement (the same name) is created only once they are gone: until then no pending pod
    stands for it, and a simulation that forgot it would give its room away."""
    return tuple(
        p
        for p in pods
        if not (p.is_daemonset or p.is_mirror or p.is_terminal)
        and (not p.is_terminating or (p.controller is not None and p.controller.kind == "StatefulSet"))
    )


def pdb_kind(pod: Pod) -> tuple[object, ...]:
    """What a budget's answer for a pod's eviction depends on: which budgets select it (its
    namespace and labels) and whether it is healthy (Ready, not terminating)."""
    return (pod.namespace, frozenset(pod.labels.items()), pod.ready, pod.is_terminating)


def blocked_by_pdb(pdbs: PdbTracker, pod: Pod) -> bool:
    """Karpenter's candidate rule for a pod's budgets (pdb.Limits.CanEvictPods): a budget with no
    disruption allowed blocks the node, whether the pod is Ready or not, unless the budget's
    unhealthyPodEvictionPolicy is AlwaysAllow and the pod is not Ready. Stricter than the
    Eviction API for a pod still starting: the API lets it go without asking its budget, and
    taking starting pods (replacements of pods evicted earlier) away keeps the budget short."""
    for i in pdbs.matching(pod):
        if not pod.ready and pdbs.pdbs[i].unhealthy_pod_eviction_policy == "AlwaysAllow":
            continue
        if pdbs.remaining[i] <= 0:
            return True
    return False


def _forget_all_but(cache: MutableMapping[str, Any], nodes: set[str]) -> None:
    """Drop a per-node cache's entries of nodes that are gone."""
    for name in cache.keys() - nodes:
        del cache[name]


@dataclass(frozen=True, slots=True)
class NodePods:
    """A node's pods as a disruption candidate sees them."""

    moving: tuple[Pod, ...]  # reschedulable: what a disruption moves
    annotated: tuple[Pod, ...]  # those of them with a do-not-disrupt annotation
    kinds: tuple[tuple[tuple[object, ...], Pod], ...]  # one of them per pdb_kind
    reschedule_cost: float
    eviction_cost: float  # the sum of the moving pods' eviction costs

    @classmethod
    def of(cls, pods: Mapping[str, Pod]) -> NodePods:
        moving = reschedulable(list(pods.values()))
        kinds: dict[tuple[object, ...], Pod] = {}
        for pod in moving:
            kinds.setdefault(pdb_kind(pod), pod)
        return cls(
            moving,
            tuple(p for p in moving if DO_NOT_DISRUPT in p.meta.annotations),
            tuple(kinds.items()),
            reschedule_cost(moving),
            sum(eviction_cost(p) for p in moving),
        )


@dataclass(slots=True)
class Launched:
    """A NodeClaim in flight: the instance asked of a group, and the pods it was launched for."""

    claim: NodeClaim
    group_id: str
    instance_id: str
    launched_at: float


@dataclass(slots=True)
class Orchestration:
    command: Command
    started: float
    replacements: list[str] = field(default_factory=list)  # instance ids
    terminating: bool = False


@dataclass(slots=True)
class Termination:
    node: str
    group_id: str
    started: float
    next_eviction: float = 0.0
    deleted: bool = False  # the cloud is deleting it: held (tainted) until the Node is gone


class Karpenter:
    def __init__(
        self,
        options: AutoscalerOptions,
        clock: Clock,
        view: ClusterView,
        actions: ClusterActions,
        cloud: CloudProvider,
        node_pools: Sequence[NodePool] = (),
    ):
        self.options = options
        self.settings = settings_of(options)  # the flags': every pool's where it sets none
        self.pools = by_weight(node_pools or (NodePool(),))
        self._pool_named = {p.name: p for p in self.pools}
        self._pool_settings = {p.name: p.settings(self.settings) for p in self.pools}
        self._launched_pool: dict[str, str] = {}  # instance id -> the pool it was launched for
        self.clock = clock
        self.view = view
        self.actions = actions
        self.cloud = cloud
        self.launched: dict[str, Launched] = {}  # instance id -> its NodeClaim
        self.orchestrations: list[Orchestration] = []
        self.terminations: dict[str, Termination] = {}
        self.pending_command: tuple[Command, float] | None = None
        self.unavailable: dict[str, float] = {}  # group -> until
        self._batch_start: float | None = None
        self._batch_changed = 0.0
        self._batch_seen: set[str] = set()
        self._pod_events: dict[str, tuple[int, float]] = {}  # node -> (stamp, when its pods last changed)
        self._templates: dict[str, tuple[tuple[str, ...], GroupTemplate]] = {}
        self._checker: PredicateChecker | None = None
        self._checked: ClusterSnapshot | None = None
        self._node_pods_cache: dict[str, tuple[int, NodePods]] = {}  # node -> (its stamp, NodePods)
        self._drift_cache: dict[str, tuple[Node, Node, bool]] = {}  # node -> (it, its template, drifted)
        self._pool_cache: dict[str, tuple[Node, NodePool | None]] = {}  # node -> (it, its pool by labels)
        # Karpenter's cluster state as consolidation sees it, and the methods' marks on it
        self.consolidation = ConsolidationState()
        # karpenter_voluntary_disruption_decisions_total{decision, reason, consolidation_type}
        self.decisions: Counter[tuple[str, str, str]] = Counter()
        # karpenter_consolidation_moves_total{decision, nodepool} (policy Balanced): each move
        # a Balanced pool scored, approved or rejected
        self.balanced_moves: Counter[tuple[str, str]] = Counter()
        self.nodeclaims_created = 0

    # -- the loop ------------------------------------------------------------------------------
    def run_once(self) -> None:
        now = self.clock.now()
        snapshot = self.view.snapshot()
        self._release_stale_taints(snapshot)
        self._observe(snapshot, now)
        self._provision(snapshot, now)
        self._orchestrate(snapshot, now)
        self._disrupt(snapshot, now)

    def drive_deletions(self) -> None:
        """Between loops: a batch that closed, a command due for validation, evictions to retry."""
        now = self.clock.now()
        snapshot = self.view.snapshot()
        self._observe(snapshot, now)
        self._provision(snapshot, now)
        self._orchestrate(snapshot, now)
        if self.pending_command is not None and self.pending_command[1] + VALIDATION_DELAY <= now:
            self._disrupt(snapshot, now)

    def next_wakeup(self) -> float | None:
        times = []
        if self._batch_start is not None:
            times.append(min(self._batch_changed + BATCH_IDLE, self._batch_start + BATCH_MAX))
        if self.pending_command is not None:
            times.append(self.pending_command[1] + VALIDATION_DELAY)
        times += [t.next_eviction for t in self.terminations.values() if not t.deleted]
        return min(times, default=None)

    def close(self) -> None:
        if self._checker is not None:
            self._checker.close()
            self._checker = None

    # -- helpers -------------------------------------------------------------------------------
    def _checker_for(self, snapshot: ClusterSnapshot) -> PredicateChecker:
        if self._checker is None or self._checked is not snapshot:
            self.close()
            self._checker = PredicateChecker(snapshot)
            self._checked = snapshot
        return self._checker

    def _groups(self) -> dict[str, NodeGroup]:
        return {g.id: g for g in self.cloud.node_groups()}

    def _types(self, snapshot: ClusterSnapshot, now: float) -> list[InstanceType]:
        checker = self._checker_for(snapshot)
        daemonsets = daemonsets_of(self.view.workloads())
        keys = tuple(ds.key for ds in daemonsets)
        types = []
        for group in self.cloud.node_groups():
            if self.unavailable.get(group.id, 0.0) > now:
                continue
            # A group without a template or a price offers no instance type (Karpenter launches
            # only what it can price); a provider that cannot say now makes it unavailable a while.
            try:
                price = group.price_per_hour()
                cached = self._templates.get(group.id)
                if cached is None or cached[0] != keys:
                    raw = group.template_node()
                    if raw is None:
                        continue
                    template = build_template(group.id, raw, daemonsets, snapshot, checker, self.options)
                    cached = self._templates[group.id] = (keys, template)
            except ProviderError as exc:
                self.unavailable[group.id] = now + UNAVAILABLE_TTL
                self._emit("NodeGroup", group.id, "InstanceTypeUnavailable", str(exc), now, True)
                continue
            if price is None:
                continue
            headroom = group.max_size - group.target_size()
            types.append(InstanceType(group.id, price, cached[1], headroom))
        # each pool's instance types, the pools by weight (a group in several pools in each)
        return [
            kind if kind.pool == pool.name else dataclasses.replace(kind, pool=pool.name)
            for pool in self.pools
            for kind in types
            if pool.admits(kind.template.raw.labels)
        ]

    def _pool_of(self, node: Node) -> NodePool | None:
        """The pool a node was launched for; one its labels meet when no launch recorded it
        (kept per version of the node)."""
        launched = self._launched_pool.get(node.provider_id or "")
        if launched is not None:
            return self._pool_named[launched]
        cached = self._pool_cache.get(node.name)
        if cached is None or cached[0] is not node:
            cached = self._pool_cache[node.name] = (node, pool_for(node.labels, self.pools))
        return cached[1]

    def _settings_for(self, node: Node) -> NodePoolSettings:
        pool = self._pool_of(node)
        return self.settings if pool is None else self._pool_settings[pool.name]

    def _pool_limits(self, snapshot: ClusterSnapshot) -> dict[str, dict[str, int]]:
        """What each pool with limits may still launch: its limits less the capacity of its nodes
        and of its NodeClaims in flight."""
        limited = [p for p in self.pools if p.limits]
        if not limited:
            return {}
        capacities: dict[str, list[dict[str, int]]] = {p.name: [] for p in limited}
        registered = set()
        for node in snapshot.nodes():
            registered.add(node.provider_id)
            pool = self._pool_of(node) if self.cloud.node_group_for(node) is not None else None
            if pool is not None and pool.name in capacities:
                capacities[pool.name].append(node.capacity)
        for instance_id, launched in self.launched.items():
            kind = launched.claim.options[0]
            if instance_id not in registered and kind.pool in capacities:
                capacities[kind.pool].append(kind.capacity)
        return {p.name: remaining(p, capacities[p.name]) for p in limited}

    def _emit(
        self, kind: str, key: str, reason: str, message: str, now: float, warning: bool = False
    ) -> None:
        self.actions.emit_event(
            Event(kind, key, EventType.WARNING if warning else EventType.NORMAL, reason, message, now)
        )

    def _release_stale_taints(self, snapshot: ClusterSnapshot) -> None:
        """Karpenter's controller takes its disrupted taint off nodes no command holds (a
        restarted process forgot its commands; their nodes must not stay cordoned)."""
        held = self._disrupting()
        stale = [n for n in snapshot.nodes() if n.has_taint(DISRUPTED_TAINT) and n.name not in held]
        if not stale:
            return
        # A node whose instance the cloud is already deleting keeps its taint: it is going.
        deleting = {
            i.id
            for group in self.cloud.node_groups()
            for i in group.instances()
            if i.state is InstanceState.DELETING
        }
        for node in stale:
            if node.provider_id not in deleting:
                self._untaint(node.name)

    # -- 1. observe ----------------------------------------------------------------------------
    def _observe(self, snapshot: ClusterSnapshot, now: float) -> None:
        self.consolidation.observe(
            snapshot, frozenset(p.uid for p in self.view.pending_pods()), self.launched, now
        )
        ready = {n.provider_id for n in snapshot.nodes() if n.ready and n.provider_id}
        registered = {n.provider_id for n in snapshot.nodes() if n.provider_id}
        groups = self._groups()
        for instance_id, launched in list(self.launched.items()):
            if instance_id in ready:
                del self.launched[instance_id]
                continue
            group = groups.get(launched.group_id)
            state = (
                None if group is None else next((i for i in group.instances() if i.id == instance_id), None)
            )
            if state is None or state.error is not None:
                # Launch failed (a stockout): the type is unavailable for a while, the pods go
                # back to provisioning, which picks another type.
                del self.launched[instance_id]
                self.consolidation.mark_unconsolidated(now)  # the NodeClaim is deleted
                self.unavailable[launched.group_id] = now + UNAVAILABLE_TTL
                if group is not None and state is not None and state.state is InstanceState.CREATING:
                    with contextlib.suppress(ActionError):
                        group.decrease_target_size(-1)
                self._emit(
                    "NodeGroup",
                    launched.group_id,
                    "InsufficientCapacityError",
                    "NodeClaim launch failed",
                    now,
                    True,
                )
            elif instance_id not in registered and now - launched.launched_at >= REGISTRATION_TIMEOUT:
                # Karpenter's liveness check deletes a NodeClaim whose node never registered; kept,
                # it would stand as room for consolidation's simulations forever.
                del self.launched[instance_id]
                self.consolidation.mark_unconsolidated(now)  # the NodeClaim is deleted
                if group is not None and state is not None and state.state is InstanceState.CREATING:
                    with contextlib.suppress(ActionError):
                        group.decrease_target_size(-1)
        seen = set()
        for node, stamp in snapshot.stamps():
            seen.add(node.name)
            last = self._pod_events.get(node.name)
            if last is None:
                self._pod_events[node.name] = (stamp, node.ready_transition or now)
            elif last[0] != stamp:
                self._pod_events[node.name] = (stamp, now)
        for name in set(self._pod_events) - seen:
            del self._pod_events[name]
        known = {n.provider_id for n in snapshot.nodes()} | set(self.launched)
        for instance_id in set(self._launched_pool) - known:
            del self._launched_pool[instance_id]

    # -- 2. provisioning -----------------------------------------------------------------------
    def _provision(self, snapshot: ClusterSnapshot, now: float) -> None:
        pending = [p for p in self.view.pending_pods() if p.is_unschedulable]
        uids = {p.uid for p in pending}
        if not uids:
            self._batch_start, self._batch_seen = None, set()
            return
        if uids - self._batch_seen:
            if self._batch_start is None:
                self._batch_start = now
            self._batch_changed = now
            self._batch_seen |= uids
        assert self._batch_start is not None
        if now < min(self._batch_changed + BATCH_IDLE, self._batch_start + BATCH_MAX):
            return
        self._batch_start, self._batch_seen = None, set()
        types = self._types(snapshot, now)
        outcome = simulate(
            snapshot,
            self._checker_for(snapshot),
            types,
            pending,
            skip=self._disrupting(),
            existing_claims=[launched.claim for launched in self.launched.values()],
            pool_limits=self._pool_limits(snapshot),
        )
        room = {t.group_id: t.headroom for t in types}
        for claim in outcome.claims:
            options = [t for t in claim.options if room[t.group_id] > 0]
            if not options:
                continue
            kind = min(options, key=lambda t: (t.price, t.group_id))
            if self._launch(kind, claim, now):
                room[kind.group_id] -= 1

    def _launch(self, kind: InstanceType, claim: NodeClaim, now: float) -> str | None:
        group = self._groups().get(kind.group_id)
        if group is None:
            return None
        before = {i.id for i in group.instances()}
        try:
            group.increase_size(1)
        except ActionError as exc:
            self.unavailable[kind.group_id] = now + UNAVAILABLE_TTL
            self._emit("NodeGroup", kind.group_id, "LaunchFailed", str(exc), now, True)
            return None
        new = [i.id for i in group.instances() if i.id not in before]
        if not new:
            return None
        self.nodeclaims_created += 1
        self.consolidation.mark_unconsolidated(now)  # a NodeClaim is created
        self._launched_pool[new[0]] = kind.pool
        self.launched[new[0]] = Launched(
            NodeClaim([kind], list(claim.pods), dict(claim.requests)), kind.group_id, new[0], now
        )
        return new[0]

    # -- 3. orchestration and termination -------------------------------------------------------
    def _disrupting(self) -> set[str]:
        names = set(self.terminations)
        for orchestration in self.orchestrations:
            names.update(orchestration.command.names)
        return names

    def _orchestrate(self, snapshot: ClusterSnapshot, now: float) -> None:
        ready = {n.provider_id for n in snapshot.nodes() if n.ready and n.provider_id}
        for orchestration in list(self.orchestrations):
            if all(r in ready for r in orchestration.replacements):
                self.orchestrations.remove(orchestration)
                for candidate in orchestration.command.candidates:
                    if candidate.name in snapshot:
                        self.terminations[candidate.name] = Termination(
                            candidate.name, candidate.group_id, now
                        )
                        self._emit(
                            "Node",
                            candidate.name,
                            "DisruptionTerminating",
                            f"Disrupting Node: {orchestration.command.reason}/{orchestration.command.decision.title()}",
                            now,
                        )
            elif now - orchestration.started >= COMMAND_TIMEOUT:
                self.orchestrations.remove(orchestration)
                for name in orchestration.command.names:
                    self._untaint(name)
                self._emit(
                    "Node",
                    orchestration.command.names[0],
                    "DisruptionBlocked",
                    "replacements were not initialized in time; command rolled back",
                    now,
                    True,
                )
        groups = self._groups()
        for name, termination in list(self.terminations.items()):
            if name not in snapshot:
                del self.terminations[name]
                continue
            if termination.deleted or termination.next_eviction > now:
                continue
            left = reschedulable(list(snapshot.pods_on(name).values()))
            leaving = [p for p in snapshot.pods_on(name).values() if p.is_terminating and not p.is_daemonset]
            grace = self._settings_for(snapshot.node(name)).termination_grace_period
            overdue = grace > 0 and now - termination.started >= grace
            if (not left and not leaving) or overdue:
                group = groups.get(termination.group_id)
                try:
                    if group is None:
                        raise ActionError(f"no node group {termination.group_id}")
                    group.delete_nodes([snapshot.node(name)])
                except ActionError as exc:
                    self._emit("Node", name, "FailedDraining", str(exc), now, True)
                    termination.next_eviction = now + EVICTION_RETRY
                    continue
                termination.deleted = True
                continue
            # In the order the API server lists them (namespace, then name): the snapshot's own
            # order moves with the what-ifs run on it, and which of two pods of one budget is
            # evicted first must not.
            for pod in sorted(left, key=lambda p: (p.namespace, p.name)):
                outcome = self.actions.evict(pod, pod.termination_grace_period)
                if outcome is EvictionOutcome.BLOCKED_BY_PDB:
                    self._emit("Pod", pod.key, "FailedDraining", "evicting pod violates a PDB", now, True)
            termination.next_eviction = now + EVICTION_RETRY

    def _untaint(self, name: str) -> None:
        with contextlib.suppress(ActionError):
            self.actions.remove_taint(name, DISRUPTED_TAINT)

    def _queue(self, command: Command, snapshot: ClusterSnapshot, now: float) -> None:
        tainted: list[str] = []
        try:
            for name in command.names:
                self.actions.add_taint(name, Taint(DISRUPTED_TAINT, "", "NoSchedule", now))
                tainted.append(name)
        except ActionError:
            for name in tainted:
                self._untaint(name)
            return
        orchestration = Orchestration(command, now)
        for kind in command.replacements:
            instance = self._launch(kind, NodeClaim([kind]), now)
            if instance is None:
                for name in tainted:
                    self._untaint(name)
                return
            orchestration.replacements.append(instance)
            self._emit(
                "Node",
                command.names[0],
                "DisruptionLaunching",
                f"Launching NodeClaim: {command.reason}/{kind.group_id}",
                now,
            )
        self.orchestrations.append(orchestration)
        consolidation = command.method if command.reason == UNDERUTILIZED else ""
        self.decisions[(command.decision, command.reason, consolidation)] += 1

    # -- 4. disruption -------------------------------------------------------------------------
    def _budgets(self, snapshot: ClusterSnapshot, now: float) -> Budgets:
        """Each pool's budgets over its nodes: Ready ones, and those not Ready or being disrupted,
        which use budget."""
        disrupting = self._disrupting()
        counts = {p.name: [0, 0] for p in self.pools}  # pool -> [ready, busy]
        for node in snapshot.nodes():
            pool = self._pool_of(node) if self.cloud.node_group_for(node) is not None else None
            if pool is not None:
                counts[pool.name][0 if node.ready and node.name not in disrupting else 1] += 1
        return Budgets(
            {
                name: {
                    reason: max(
                        0, self._pool_settings[name].allowed_disruptions(reason, total + busy, now) - busy
                    )
                    for reason in (EMPTY, DRIFTED, UNDERUTILIZED)
                }
                for name, (total, busy) in counts.items()
            }
        )

    def _node_pods(self, node: Node, stamp: int, snapshot: ClusterSnapshot) -> NodePods:
        """What the node's pods say about it as a candidate, worked out again only when they
        change (the snapshot's stamp of the node)."""
        cached = self._node_pods_cache.get(node.name)
        if cached is None or cached[0] != stamp:
            cached = self._node_pods_cache[node.name] = (stamp, NodePods.of(snapshot.pods_on(node.name)))
        return cached[1]

    def _candidates(
        self, snapshot: ClusterSnapshot, now: float, *, empty_or_drifted: bool = False
    ) -> list[Candidate]:
        """The nodes disruption may take (Karpenter's GetCandidates); with `empty_or_drifted`,
        only those that are empty or drifted."""
        disrupting = self._disrupting()
        pdbs = PdbTracker(self.view.pdbs(), snapshot.pods())
        # Whether a pod blocks its node depends on its namespace, labels (which budgets select it)
        # and readiness alone: asked once per kind of pod.
        refused: dict[tuple[object, ...], bool] = {}
        launched_groups = Counter(launched.group_id for launched in self.launched.values())
        terminating_groups = Counter(t.group_id for t in self.terminations.values() if not t.deleted)
        candidates = []
        seen = set()
        for node, stamp in snapshot.stamps():
            seen.add(node.name)
            if node.name in disrupting or not node.ready or node.has_taint(DISRUPTED_TAINT):
                continue
            group = self.cloud.node_group_for(node)
            if group is None:
                continue
            try:  # Karpenter disrupts only nodes it can price
                price = group.price_per_hour()
                template = group.template_node()
            except ProviderError:
                continue
            if price is None:
                continue
            pods = self._node_pods(node, stamp, snapshot)
            drifted = template is not None and self._drifted(node, template)
            if empty_or_drifted and pods.moving and not drifted:
                continue
            pool = self._pool_of(node)
            if pool is None or node.annotations.get(DO_NOT_DISRUPT) == "true":
                continue
            settings = self._pool_settings[pool.name]
            if (
                group.target_size() - terminating_groups[group.id] - launched_groups[group.id]
                <= group.min_size
            ):
                continue
            if any(do_not_disrupt(p, now) for p in pods.annotated):
                continue
            blocked = False
            for key, pod in pods.kinds:
                answer = refused.get(key)
                if answer is None:
                    answer = refused[key] = blocked_by_pdb(pdbs, pod)
                if answer:
                    blocked = True
                    break
            if blocked:
                continue
            moving = pods.moving
            age = now - (node.meta.creation_timestamp or now)
            since = self._pod_events.get(node.name, (0, now))[1]
            consolidatable = now - since >= settings.consolidate_after and (
                not moving or settings.consolidation_policy != WHEN_EMPTY
            )
            candidates.append(
                Candidate(
                    node,
                    group.id,
                    price,
                    moving,
                    price / pods.reschedule_cost,  # cost.savings_ratio, the pods' part kept
                    pods.eviction_cost * lifetime_remaining(age),  # cost.disruption_cost, likewise
                    consolidatable,
                    drifted,
                    pool.name,
                )
            )
        for cache in (self._node_pods_cache, self._drift_cache, self._pool_cache):
            _forget_all_but(cache, seen)
        return candidates

    def _drifted(self, node: Node, template: Node) -> bool:
        """The node no longer matches its NodePool's template: a label it should carry differs,
        or its taints are not the template's (node-state and autoscaler taints aside). Worked out
        again only for a new version of the node or of the template."""
        cached = self._drift_cache.get(node.name)
        if cached is None or cached[0] is not node or cached[1] is not template:
            cached = self._drift_cache[node.name] = (node, template, self._drifts(node, template))
        return cached[2]

    def _drifts(self, node: Node, template: Node) -> bool:
        labels = node.labels
        if any(labels.get(k) != v for k, v in template.labels.items() if k != HOSTNAME_LABEL):
            return True
        own = {(t.key, t.value, t.effect) for t in sanitize_taints(node.taints, self.options)}
        want = {(t.key, t.value, t.effect) for t in sanitize_taints(template.taints, self.options)}
        own.discard((DISRUPTED_TAINT, "", "NoSchedule"))
        return own != want

    def _balanced_totals(self, snapshot: ClusterSnapshot) -> dict[str, PoolTotals]:
        """Each Balanced pool's cost per hour and disruption over all its nodes (that can be
        priced), candidates or not."""
        balanced = {
            p.name for p in self.pools if self._pool_settings[p.name].consolidation_policy == BALANCED
        }
        if not balanced:
            return {}
        cost = dict.fromkeys(balanced, 0.0)
        disruption = dict.fromkeys(balanced, 0.0)
        for node, stamp in snapshot.stamps():
            group = self.cloud.node_group_for(node)
            pool = self._pool_of(node) if group is not None else None
            if group is None or pool is None or pool.name not in balanced:
                continue
            try:
                price = group.price_per_hour()
            except ProviderError:
                continue
            if price is None:
                continue
            cost[pool.name] += price
            disruption[pool.name] += self._node_pods(node, stamp, snapshot).reschedule_cost
        return {name: PoolTotals(cost[name], disruption[name]) for name in balanced}

    def _context(self, snapshot: ClusterSnapshot, now: float) -> Context:
        disrupting = self._disrupting()
        not_destinations = set(disrupting)
        if any(s.consolidate_after > 0 for s in self._pool_settings.values()):
            not_destinations |= {
                n
                for n, (_, since) in self._pod_events.items()
                if now - since < self._settings_for(snapshot.node(n)).consolidate_after
            }
        reserved = [*self.view.pending_pods()]
        for name in disrupting:
            if name in snapshot:
                reserved += awaiting_a_home(list(snapshot.pods_on(name).values()))
        return Context(
            snapshot,
            self._checker_for(snapshot),
            self._types(snapshot, now),
            self._budgets(snapshot, now),
            not_destinations,
            [launched.claim for launched in self.launched.values()],
            reserved=reserved,
            pool_limits=self._pool_limits(snapshot),
            spot_to_spot=self.options.karpenter_spot_to_spot_consolidation,
            balanced=self._balanced_totals(snapshot),
            consolidation=self.consolidation,
        )

    def _disrupt(self, snapshot: ClusterSnapshot, now: float) -> None:
        if self.pending_command is not None:
            command, decided = self.pending_command
            if now < decided + VALIDATION_DELAY:
                return
            self.pending_command = None
            valid = self._validate(command, snapshot, now)
            if valid is not None:
                self._queue(valid, snapshot, now)
            return
        # While both consolidations hold their "consolidated" mark only emptiness and drift can
        # act, and they read only empty and drifted nodes: the others need not be looked at.
        settled = all(self.consolidation.is_consolidated(m) for m in MARKED_METHODS)
        candidates = self._candidates(snapshot, now, empty_or_drifted=settled)
        if not candidates:  # no method has anything to try (nor marks anything)
            return
        ctx = self._context(snapshot, now)
        found = first_command(ctx, candidates)
        self.balanced_moves.update(ctx.balanced_moves)
        if found is not None:
            self.pending_command = (found, now)

    def _validate(self, command: Command, snapshot: ClusterSnapshot, now: float) -> Command | None:
        """The command on the cluster as it is 15 s later, or None (Karpenter's validation)."""
        current = {c.name: c for c in self._candidates(snapshot, now)}
        ctx = self._context(snapshot, now)
        budgets = ctx.pool_budgets
        if command.method == "emptiness":
            empty = [current[n] for n in command.names if n in current and current[n].empty]
            still = budgets.within(empty, command.reason)
            return Command(command.method, command.reason, tuple(still)) if still else None
        if any(n not in current for n in command.names):
            return None
        candidates = [current[n] for n in command.names]
        if len(budgets.within(candidates, command.reason)) < len(candidates):
            return None
        if command.method == "drift":
            outcome = simulate(
                snapshot,
                ctx.checker,
                ctx.types,
                candidates[0].pods,
                skip={*command.names, *self._disrupting()},
                existing_claims=ctx.inflight,
                pool_limits=ctx.pool_limits,
            )
            if outcome.unschedulable or len(outcome.claims) > len(command.replacements):
                return None
            return Command(
                command.method, command.reason, tuple(candidates), tuple(c.cheapest() for c in outcome.claims)
            )
        result = consolidate(ctx, candidates, same_type_filter=len(candidates) > 1, explain=True)
        if isinstance(result, tuple):
            result = balanced_refusal(ctx, candidates, result[1]) or result
            self.balanced_moves.update(ctx.balanced_moves)
        if isinstance(result, str) or len(result[1]) > len(command.replacements):
            self._emit("Node", command.names[0], "Unconsolidatable", f"validation failed: {result}", now)
            return None
        return Command(command.method, command.reason, tuple(candidates), result[1])
