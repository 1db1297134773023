"""The scale-down planner: the parallel-drain design's UpdateUnneededNodes, run every loop.

State kept between loops (the design's names):
- deleted_set: passed in each loop (the actuator's deletions in progress, plus nodes carrying
  ToBeDeletedByClusterAutoscaler that nobody resumes);
- candidate_set with the time each node entered it (`unneeded_since`), reset when it leaves;
- non_candidate_set: nodes whose drain simulation failed, with when and why; they are simulated
  again only after unremovable-node-recheck-timeout (`unremovable`);
- pod_destination_hints: source node -> pod UID -> destination (`hints`);
- recent_evictions (evictions.py); pdbs_remaining_disruptions (pdb.py) is rebuilt each update.

One update, on a fork of the snapshot that is reverted at the end (the caller gets it back as it
was). Expendable pods leave the simulated cluster first: they block nothing and are never moved,
and the scheduler would preempt them, so their capacity counts as free. Pending pods nominated to a
node (status.nominatedNodeName, e.g. by preemption) are put there, as CA's snapshot does: the
scheduler has promised them that room, so they count in the node's utilization, move with its
drain and take room on destinations. Then the design's steps,
one module each, sharing the update's working state (update.py):
1. deleted_set.py: the pods still on nodes being deleted must fit elsewhere;
2. evictions.py: recently evicted pods still short of a replacement are placed back the same way
   (if either fails, no new candidates this loop);
3. candidates.py: every node's eligibility;
4. candidates.py: the candidate search, within scale-down-simulation-timeout and CA's limit on
   how many unneeded nodes are worth finding (limit.py);
5. timers.py: timers and pauses decide which candidates are removable now, and the disruption
   methods (methods.py), tried in order, propose which of them go: CA's empty-node deletion, then
   its underutilised-node removal, unless the planner is given others.
Budgets (budgets.py) then crop what the actuator starts.

Steps 1-4 are skipped when nothing they read changed since the last update (reuse.py): their
outcome is replayed, and step 5 runs on it with this loop's `now`. On a cluster that did not change
between two loops, an update then costs a pass over the nodes' change stamps. `incremental=False`
always recomputes (the property tests compare the two).

With a usage sample (the UsageSource port) and scale-down-respect-qos-watermarks, the candidate
search also keeps every destination's projected usage under its QoS watermarks (usage.py); the
usage peaks it counts are kept between loops over scale-down-usage-window.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field

from kubetide.autoscaler.inputs import LoopInputs
from kubetide.autoscaler.options import AutoscalerOptions
from kubetide.autoscaler.ports import TO_BE_DELETED_TAINT, CloudProvider
from kubetide.autoscaler.scaledown.planning.candidates import (
    Checked,
    Search,
    SimulateRemoval,
    eligible_nodes,
    search_candidates,
    simulate_removal,
)
from kubetide.autoscaler.scaledown.planning.deleted_set import revalidate_deleted
from kubetide.autoscaler.scaledown.planning.drainability import (
    DrainContext,
    DrainRules,
    KeptDrains,
    NodeDrain,
    index_workloads,
    is_expendable,
)
from kubetide.autoscaler.scaledown.planning.evictions import (
    OwnerKey,
    RecentEvictions,
    inject_recent_evictions,
)
from kubetide.autoscaler.scaledown.planning.limit import UnneededLimit
from kubetide.autoscaler.scaledown.planning.methods import Command, DisruptionMethod, MethodInputs
from kubetide.autoscaler.scaledown.planning.pdb import PdbTracker
from kubetide.autoscaler.scaledown.planning.placement import PodMover, Standins
from kubetide.autoscaler.scaledown.planning.plan import UNREMOVABLE, ScaleDownPlan
from kubetide.autoscaler.scaledown.planning.replacement import KUBETIDE_METHODS, PendingReplacement
from kubetide.autoscaler.scaledown.planning.reuse import (
    SearchKey,
    SearchRecord,
    frozen_mapping,
    group_facts,
    time_edges,
)
from kubetide.autoscaler.scaledown.planning.state import UnneededNodes, Unremovable, UnremovableNodes
from kubetide.autoscaler.scaledown.planning.timers import cooldown, decide_removals
from kubetide.autoscaler.scaledown.planning.update import Update
from kubetide.autoscaler.scaledown.planning.usage import UsageGuard, UsageHistory
from kubetide.autoscaler.scaledown.reasons import NodeReason
from kubetide.autoscaler.scaleup.template import daemonsets_of
from kubetide.clock import Timer
from kubetide.model import Pod, Workload
from kubetide.scheduling.checker import PredicateChecker
from kubetide.snapshot import ClusterSnapshot, Memo


@dataclass(frozen=True, slots=True)
class _Scanned:
    """A node's facts read before the planner's fork, valid while its snapshot stamp holds."""

    tainted: bool  # carries ToBeDeletedByClusterAutoscaler
    expendable: tuple[Pod, ...]  # in the node's pod order
    time_edges: tuple[float, ...]  # when a verdict on one of its pods flips with time (reuse.py)


# What `_scan` finds: tainted nodes, expendable pods, every node's stamp, the pods' time edges.
_ScanResult = tuple[list[str], list[Pod], tuple[int, ...], list[float]]


@dataclass(frozen=True, slots=True)
class NodeFacts:
    """What a planner memoizes per node under the snapshot's change stamps (a stamp is issued
    once per process, and a revert gives back the stamps of the content it restores).

    A planner makes its own; `explanation.find_unblocks` shares one among the fresh planners that
    check its changes (same `now`, flags, workloads and budgets' selectors; only the changed
    nodes' stamps differ), so each check reads again only the nodes its change touched.
    `checked` is shared only among planners asking the same cloud (its entries carry the node
    group object). `drains` (each eligible node's `drain_node`) is kept only when shared: a
    drain reads `now`, which moves between a planner's own loops."""

    homeless: Memo[str, Pod] = field(default_factory=Memo)
    scanned: Memo[str, _Scanned] = field(default_factory=Memo)
    checked: Memo[str, Checked] = field(default_factory=Memo)
    drains: Memo[str, NodeDrain] | None = None


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
        incremental: bool = True,
        simulate: SimulateRemoval = simulate_removal,
        on_paper: bool = True,
        facts: NodeFacts | None = None,
        methods: Sequence[DisruptionMethod[MethodInputs, Command]] = KUBETIDE_METHODS,
    ):
        self.options = options
        self.simulate = simulate  # one node's removal (unblocking's narrowed check replays some)
        self.methods = tuple(methods)  # what removes the candidates that may go now, in order
        self.timers_expired = timers_expired
        self.timer = timer
        self.rules = DrainRules.from_options(options)
        self.unneeded_since = UnneededNodes()
        self.unremovable = UnremovableNodes(options.unremovable_node_recheck_timeout)
        self.hints: dict[str, dict[str, str]] = {}
        self.recent_evictions = RecentEvictions(options.recent_evictions_ttl)
        self.usage_history = UsageHistory(options.scale_down_usage_window)
        self.last_scale_up = -math.inf
        self.last_deletion = -math.inf
        self.last_failure = -math.inf
        # Nodes a launched replacement stands in for (replacement.py), until they are gone.
        self.replacing: dict[str, PendingReplacement] = {}
        # Since when each node has been removable but for room (NoPlaceToMovePods), or (with
        # consolidation onto cheaper groups) above the utilization threshold at an unchanged
        # utilization: a node may be replaced, or consolidated away, once that lasted
        # scale-down-unneeded-time, as a candidate may be removed.
        self.replaceable_since: dict[str, float] = {}
        self._busy_utilization: dict[str, float | None] = {}  # of the busy ones, as last seen
        self.last_plan: ScaleDownPlan | None = (
            None  # the latest update's, for observers (the simulator's tests, benchmarks)
        )
        facts = facts if facts is not None else NodeFacts()
        # Pods bound to no node and their stand-ins, reused across loops (see placement).
        self._standins = Standins(facts.homeless)
        # Per-node facts under the snapshot's change stamps, so a loop over a quiet cluster
        # costs a lookup per node instead of a pass over every pod (see `_scan`, candidates).
        # Both depend on the options, so they are dropped if the options object is replaced.
        self._cached_options = options
        self._scanned: Memo[str, _Scanned] = facts.scanned
        # The snapshot, its version and what `_scan` found there: a loop over a snapshot that did
        # not change at all reads none of its nodes.
        self._last_scan: tuple[ClusterSnapshot, int, _ScanResult] | None = None
        self._checked: Memo[str, Checked] = facts.checked
        self._drains = facts.drains
        # Else the eligible nodes' drains kept between this planner's loops, checked against
        # what they read (`now` moves between them); only for incremental updates.
        self._kept_drains = KeptDrains() if facts.drains is None and incremental else None
        self.incremental = incremental
        self.on_paper = on_paper  # nodes waiting for budget are tried on paper (candidates.py)
        self._last_search: SearchRecord | None = None
        self.reused = 0  # updates whose steps 1-4 were replayed (reuse.py)
        # The shortest interval between updates, for CA's limit on the unneeded set (limit.py).
        self._limit = UnneededLimit()

    # -- what the loop and the actuator tell the planner ---------------------------------------
    def note_scale_up(self, now: float) -> None:
        self.last_scale_up = max(self.last_scale_up, now)

    def note_deletion(self, now: float) -> None:
        self.last_deletion = max(self.last_deletion, now)

    def note_failure(self, now: float) -> None:
        self.last_failure = max(self.last_failure, now)

    def note_replacement(self, nodes: Sequence[str], pending: PendingReplacement) -> None:
        """The loop launched a replacement for `nodes`: they are drained once it is Ready."""
        for name in nodes:
            self.replacing[name] = pending

    def record_eviction(self, pod: Pod, now: float) -> None:
        self.recent_evictions.record(pod, now)

    def recovering(
        self, snapshot: ClusterSnapshot, workloads: Mapping[tuple[str, str, str], Workload] | None
    ) -> frozenset[OwnerKey]:
        return self.recent_evictions.recovering(snapshot, workloads)

    def unplaced(
        self, snapshot: ClusterSnapshot, workloads: Mapping[tuple[str, str, str], Workload] | None
    ) -> frozenset[OwnerKey]:
        return self.recent_evictions.unplaced(snapshot, workloads)

    def clear(self) -> None:
        """Forget unneeded nodes (the cluster is unhealthy; CA clears them too), and the nodes
        that might be replaced or are being replaced: their timers restart too."""
        self.unneeded_since.clear()
        self.hints.clear()
        self.replaceable_since.clear()
        self._busy_utilization.clear()
        self.replacing.clear()

    # -- the update ------------------------------------------------------------------------------
    def update(
        self,
        inputs: LoopInputs,
        *,
        cloud: CloudProvider,
        resume: Collection[str] = (),
        checker: PredicateChecker | None = None,
        scaling_up: bool = False,
    ) -> ScaleDownPlan:
        """One loop's planning on `inputs` (its snapshot, now, PDBs, workloads, nodes being
        deleted, pending pods, namespaces and usage sample). Unknown controllers
        (`inputs.controllers` None) keep rule 3 of drainability silent, and recent evictions are
        injected without the owner check.

        `resume` names nodes tainted ToBeDeletedByClusterAutoscaler before a restart whose fate is
        to be decided: they are simulated first with their timers taken as run out; other
        tainted nodes not in `being_deleted` are treated as being deleted by someone.
        `checker` may be shared with the caller (it must observe the snapshot); otherwise one is
        made for this update and closed at the end. Pending pods nominated to a node of the
        snapshot count on it. With a usage sample, destinations stay under their QoS watermarks
        (see usage.py). `scaling_up`:
        this loop scales up, so it starts no deletion, whatever scale-down-delay-after-add is
        (CA's RunOnce ends after a scale-up), and that delay pauses scale-down from now (unless
        timers are taken as expired); later loops count from `note_scale_up`, which the driver
        calls for the scale-ups that happened.
        """
        o = self.options
        snapshot, now, pdbs, usage = inputs.snapshot, inputs.now, inputs.pdbs, inputs.usage
        # The caller's checker, if any, is the one the disruption methods may place pods with
        # (one the update makes for itself may read namespaces, which theirs never did).
        shared_checker = checker
        workloads, namespaces = inputs.controllers, inputs.namespaces
        deadline = self.timer() + o.scale_down_simulation_timeout
        self._limit.observe(now)
        limit = self._limit.limit(
            o.max_scale_down_parallelism, o.scale_down_unneeded_time, len(self.unneeded_since)
        )
        if self.timers_expired:
            # `kubetide plan` answers for every node; CA's limit only paces a loop that runs again.
            limit = len(snapshot)
        self.unremovable.recheck_timeout = o.unremovable_node_recheck_timeout
        if self._cached_options is not o:
            self._cached_options = o
            self._scanned.clear()
            self._checked.clear()
            if self._drains is not None:
                self._drains.clear()
            self._last_search = self._last_scan = None
        resume_set = {n for n in resume if n in snapshot}
        deleted = {n for n in inputs.being_deleted if n in snapshot} - resume_set
        tainted, expendable, stamps, edges = self._scan(snapshot)
        deleted.update(name for name in tainted if name not in resume_set)
        self.recent_evictions.expire(now)
        plan = ScaleDownPlan(now=now)
        if not o.scale_down_respect_qos_watermarks:
            usage = None
        # Whether the search's fork holds the same pods where the snapshot does (no expendable
        # pod taken out, no nominated pod put in, no deleted node's pods moved): busy nodes are
        # consolidated only then, so a replayed loop, which has no fork, decides alike; and never
        # under the QoS guard, whose watermarks the replacement's placement does not check.
        busy_may_go = (
            usage is None
            and not expendable
            and not deleted
            and not any(p.nominated_node_name for p in inputs.pending)
        )
        if usage is not None:
            self.usage_history.window = o.scale_down_usage_window
            self.usage_history.observe(now, usage, snapshot.pods())
        key = None

        def finish(found: Search, failures: dict[str, Unremovable]) -> None:
            self._after_search(
                plan,
                inputs,
                cloud,
                resume_set,
                found,
                failures,
                scaling_up,
                deleted,
                busy_may_go,
                shared_checker,
            )

        if self.incremental and usage is None:
            key = self._key(inputs, cloud, stamps, edges, deleted, resume_set, limit)
            last = self._last_search
            if last is not None and last.key == key:
                self.reused += 1
                found, failures = last.replay(plan)
                self.hints = last.hints
                finish(found, failures)
                self.last_plan = plan
                return plan
        index = index_workloads(workloads) if workloads is not None else None

        depth = snapshot.depth
        snapshot.fork()
        own_checker = checker is None
        try:
            for pod in expendable:
                snapshot.remove_pod(pod.uid)
            _add_nominated(snapshot, inputs.pending, o.expendable_pods_priority_cutoff)
            if checker is None:
                checker = PredicateChecker(snapshot, namespaces)
            recovering = self.recent_evictions.recovering(snapshot, index)
            tracker = PdbTracker(pdbs, snapshot.pods(), index, recovering)
            ctx = DrainContext(self.rules, tracker, now, index)
            self._standins.new_pass()
            guard = UsageGuard(snapshot, usage, self.usage_history) if usage is not None else None
            mover = PodMover(snapshot, checker, self._standins, guard)
            u = Update(o, snapshot, cloud, now, deleted, resume_set, ctx, mover, plan, self.hints)
            u.on_paper = self.on_paper
            u.groups = key.groups if key is not None else None
            found, failures = self._search(u, deadline, limit)
            plan.pdb_remaining = tracker.by_key()
            self.hints = u.new_hints
            self._last_search = (
                SearchRecord.of(key, plan, found, failures, u.new_hints)
                if key is not None and not plan.timed_out
                else None
            )
            # The timers change `snapshot` nowhere: they read its nodes' readiness, which the
            # fork leaves as found.
            finish(found, failures)
        finally:
            if own_checker and checker is not None:
                checker.close()  # before the revert: nobody needs its indexes to follow
            while snapshot.depth > depth:  # an error inside a node's simulation leaves its fork open
                snapshot.revert()
        self.last_plan = plan
        return plan

    def _key(
        self,
        inputs: LoopInputs,
        cloud: CloudProvider,
        stamps: tuple[int, ...],
        edges: list[float],
        deleted: set[str],
        resume: set[str],
        limit: int,
    ) -> SearchKey:
        """What steps 1-4 of this update read (reuse.py)."""
        now, snapshot = inputs.now, inputs.snapshot
        sizes, instances = group_facts(cloud, deleted)
        node_group_for = cloud.node_group_for
        workloads, namespaces = inputs.controllers, inputs.namespaces
        nominated = tuple(p for p in inputs.pending if p.nominated_node_name)
        unremovable = self.unremovable
        # Pods the update puts into its fork have ages too (an evicted pod may be terminating).
        outside = [*nominated, *(e.pod for e in self.recent_evictions.by_uid.values())]
        return SearchKey(
            stamps=stamps,
            groups=tuple(node_group_for(node) for node in snapshot.nodes()),
            group_sizes=sizes,
            instances=instances,
            time_flips=tuple(now > edge for edge in [*edges, *time_edges(outside, self._system_timeout())]),
            deleted=frozenset(deleted),
            resume=frozenset(resume),
            pdbs=tuple(inputs.pdbs),
            workloads=tuple(workloads) if workloads is not None else None,
            namespaces=frozen_mapping(namespaces) if namespaces is not None else None,
            nominated=nominated,
            recent_evictions=tuple(self.recent_evictions.by_uid.items()),
            hints=frozen_mapping(self.hints),
            unneeded_since=tuple(self.unneeded_since.items()),
            limit=limit,
            unremovable=tuple(unremovable.recent(now).items()),
        )

    def _search(self, u: Update, deadline: float, limit: int) -> tuple[Search, dict[str, Unremovable]]:
        """Steps 1-4 on the forked snapshot: the candidate search and its failures."""
        plan = u.plan
        failure = revalidate_deleted(u)
        if failure is None:
            failure = inject_recent_evictions(u, self.recent_evictions)
        plan.validation_failure = failure

        eligible = eligible_nodes(u, self.unremovable, self._checked, self._drains, self._kept_drains)
        found = Search()
        new_unremovable: dict[str, Unremovable] = {}
        if failure is None:
            found = search_candidates(
                u, eligible, self.unneeded_since, self.timer, deadline, new_unremovable, limit, self.simulate
            )
        else:
            for node, _, _, drain in eligible:
                u.mark(node, drain.empty, NodeReason.NOT_UNNEEDED_OTHER_REASON, detail=failure)

        plan.candidate_set = found.candidates
        plan.waiting_for_budget = found.waiting
        plan.surges = found.surges
        plan.risky = found.risky
        return found, new_unremovable

    def _after_search(
        self,
        plan: ScaleDownPlan,
        inputs: LoopInputs,
        cloud: CloudProvider,
        resume: set[str],
        found: Search,
        failures: dict[str, Unremovable],
        scaling_up: bool,
        deleted: Collection[str],
        busy_may_go: bool = True,
        checker: PredicateChecker | None = None,
    ) -> None:
        """The state the search leaves for next loop, then step 5 (timers)."""
        now, snapshot = plan.now, inputs.snapshot
        replaceable = self._replaceable(plan, busy_may_go)
        # A replaced node is forgotten once it is gone or its deletion started; its replacement
        # when it did not join within max-node-provision-time (the node stays).
        self.replacing = {
            name: pending
            for name, pending in self.replacing.items()
            if name in snapshot
            and name not in deleted
            and now - pending.launched_at < self.options.max_node_provision_time
        }
        arrivals = {id(p): p.arrival(snapshot, cloud) for p in self.replacing.values()}
        replaced = [name for name, p in self.replacing.items() if (a := arrivals[id(p)]) is not None and a[1]]
        # A replacement that registered is kept from CA's methods while the nodes it stands in
        # for wait (it joins empty, and unready at first: with no unneeded or unready time it
        # would go before they are drained).
        arrived = {a[0] for a in arrivals.values() if a is not None}
        self.unremovable.renew(failures, now=now, exists=snapshot.__contains__, candidates=found.candidates)
        # Nodes waiting for budget keep their time too (kubetide's own: CA drops them to the
        # non-candidate set and restarts their timer, so PDB-paced drains wait 15 min a node).
        self.unneeded_since.renew([*found.candidates, *found.waiting], now)
        last_scale_up = self.last_scale_up
        scaling_up = scaling_up and not self.timers_expired
        if scaling_up:
            last_scale_up = max(last_scale_up, now)
        paused = cooldown(
            self.options, now, last_scale_up, self.last_deletion, self.last_failure, scaling_up=scaling_up
        )
        decide_removals(
            plan,
            snapshot,
            cloud,
            resume,
            self.options,
            self.unneeded_since,
            paused,
            self.timers_expired,
            self.methods,
            pdbs=inputs.pdbs,
            daemonsets=daemonsets_of(inputs.workloads or ()),
            controllers=inputs.controllers,
            replacing=self.replacing.keys(),
            replaced=replaced,
            being_deleted=deleted,
            arrived=arrived,
            replaceable=replaceable,
            checker=checker,
        )

    def _replaceable(self, plan: ScaleDownPlan, busy_may_go: bool) -> frozenset[str]:
        """The nodes a replacement may stand in for now (replacement.py): removable but for room
        (NoPlaceToMovePods), or busy at an unchanged utilization, for scale-down-unneeded-time;
        the state of their waits is kept for the next loop."""
        now = plan.now
        room_bound = [
            name
            for name, status in plan.nodes.items()
            if status.status == UNREMOVABLE and status.blocked_by is NodeReason.NO_PLACE_TO_MOVE_PODS
        ]
        last = self._busy_utilization  # a busy node that became room-bound starts its wait now
        since = {name: now if name in last else self.replaceable_since.get(name, now) for name in room_bound}
        if self.options.consolidate_onto_cheaper_groups and self.options.consolidate_busy_nodes:
            # Busy nodes (above the utilization threshold) may be consolidated too, once their
            # utilization stayed the same for the unneeded time: a pod added or removed restarts
            # the wait, as Karpenter's consolidateAfter does.
            busy = {
                name: status.utilization
                for name, status in plan.nodes.items()
                if status.status == UNREMOVABLE and status.blocked_by is NodeReason.NOT_UNDERUTILIZED
            }
            for name, util in busy.items():
                kept = self.replaceable_since.get(name) if last.get(name, -1.0) == util else None
                since[name] = now if kept is None else kept
            self._busy_utilization = busy
        self.replaceable_since = since
        unneeded_time = self.options.scale_down_unneeded_time
        # A busy node waits, too, while recently evicted pods are injected into the fork.
        busy_ready = busy_may_go and not plan.injected
        return frozenset(
            name
            for name, at in since.items()
            if (self.timers_expired or now >= at + unneeded_time)
            and (busy_ready or name not in self._busy_utilization)
        )

    def _system_timeout(self) -> float | None:
        """How long a kube-system pod blocks its node's drain, if it does (drain rule 8)."""
        o = self.options
        return o.blocking_system_pod_distruption_timeout if o.skip_nodes_with_system_pods else None

    def _scan(self, snapshot: ClusterSnapshot) -> _ScanResult:
        """Nodes tainted ToBeDeleted, the expendable pods in `snapshot.pods()` order, every
        node's stamp and the pods' time edges (reuse.py), from per-node entries that are
        recomputed only for nodes whose stamp changed."""
        last = self._last_scan
        if last is not None and last[0] is snapshot and last[1] == snapshot.version:
            return last[2]  # no node and no pod changed since
        cutoff = self.options.expendable_pods_priority_cutoff
        system_timeout = self._system_timeout()
        memo = self._scanned
        memo.new_pass()
        tainted: list[str] = []
        expendable: list[Pod] = []
        stamps: list[int] = []
        edges: list[float] = []
        for name, stamp, pods in snapshot.pods_by_node():
            stamps.append(stamp)
            entry = memo.get(name, stamp)
            if entry is None:
                entry = memo.put(
                    name,
                    _Scanned(
                        snapshot.node(name).has_taint(TO_BE_DELETED_TAINT),
                        tuple(pod for pod in pods.values() if is_expendable(pod, cutoff)),
                        time_edges(pods.values(), system_timeout),
                    ),
                    stamp,
                )
            if entry.tainted:
                tainted.append(name)
            if entry.expendable:
                expendable.extend(entry.expendable)
            if entry.time_edges:
                edges.extend(entry.time_edges)
        scanned = (tainted, expendable, tuple(stamps), edges)
        self._last_scan = (snapshot, snapshot.version, scanned)
        return scanned


def _add_nominated(snapshot: ClusterSnapshot, pending: Sequence[Pod], cutoff: int) -> None:
    """Pending pods on the nodes they are nominated to (CA's addPreemptingPodsToSnapshot): not
    expendable ones, not those already in the snapshot (a caller may have bound them), only to
    nodes the snapshot has; no fit check, the scheduler's nomination is taken as given."""
    for pod in pending:
        node = pod.nominated_node_name
        if node and node in snapshot and not is_expendable(pod, cutoff) and not snapshot.has_pod(pod.uid):
            snapshot.bind(pod, node)
