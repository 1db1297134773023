"""What the simulation measures: cost, pending pods, scale-ups and -downs, and the invariants.

Everything here is measured by the simulator from what happened to the cluster, independently of
what the autoscaler believes or reports:

- `pdb_violations`: each time an autoscaler action (an eviction or a node deletion) left a
  PodDisruptionBudget with fewer healthy pods than it requires.
- `pods_lost`: each pod of a controller that the autoscaler evicted or whose node it deleted, and
  that no replacement made good within 5 minutes: a pod of the controller turning Ready (Running,
  for a Job) repays the oldest such debt, and a debt still open at its deadline counts only while
  the controller still wants the pod: fewer Ready pods (Running, for a Job) than its desired
  replicas (parallelism) now, by more than its other open debts for pods that were serving when
  removed (a later removal of a Ready pod, still within its own 5 minutes, answers for its own
  part of the shortfall; evicting a replacement still starting does not). A StatefulSet's
  replacement takes its pod's name, so it cannot exist before the evicted pod is gone: its
  5 minutes start when the pod does (a grace period of 10 minutes is not a lost pod). A pod whose controller
  scaled down meanwhile wanted no replacement and is not lost; a controller that stays short is,
  even when the evicted pod's own replacement was deleted. Pods bound to a NotReady node are not
  counted short: a node failure, not the autoscaler, holds them back.
- `nodes_deleted_with_pods`: node deletions by the autoscaler while pods other than DaemonSet and
  mirror pods were still bound (pods already terminating on a NotReady node are not counted:
  the node failure, not the autoscaler, lost them). Checked when the autoscaler asks the cloud,
  and again when the cloud removes the Node: pods that were scheduled onto a node the cloud was
  already terminating (for instance because its ToBeDeleted taint was taken off) vanish with it.

Gauges (pending pods, running pods, registered nodes per group) are kept incrementally from world
events, so a timeline row costs O(node groups), not O(pods).

Counters that mean what they say:

- Scale-up: `nodes_requested` is what the autoscaler asked the cloud for; each requested node then
  ends up in exactly one of `nodes_added` (its Node registered and turned Ready: it came up),
  `nodes_failed` (the cloud refused it, or it was removed before it came up: the autoscaler gave
  up on it) or `nodes_coming_up_at_end` (still provisioning when the run ended).
- Pending pods: `max_pending` is the most pods pending at once for a positive stretch of
  simulated time, and `pending_pod_seconds` integrates the same count over time, so one is zero
  exactly when the other is. A pod created and bound in the same instant (the scheduler's
  same-tick pass after a drain) waited for nothing and counts in neither. timeline.csv samples
  the count after each autoscaler loop (`pending_pods`); summing it over the loop interval
  approximates `pending_pod_seconds`, which is exact. `pending_seconds_p99` is the 99th
  percentile of how long each pod waited from creation to binding (pods still pending at the end
  count their wait so far; pods deleted while pending do not count).

What scale-down cost the workloads (evictions, time below a PDB's minimum or a workload's desired
replicas, waits for budget, churn) is the disruption ledger's (ledger.py), fed from here.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from kubetide.autoscaler.ports import TO_BE_DELETED_TAINT, InstanceState
from kubetide.model import Node, Pod
from kubetide.sim.runtime.cloud import SimCloud, SimInstance
from kubetide.sim.runtime.disruption import Budgets, healthy
from kubetide.sim.runtime.engine import Engine
from kubetide.sim.runtime.events import EventLog
from kubetide.sim.runtime.ledger import Ledger
from kubetide.sim.runtime.world import World, WorldObserver
from kubetide.sim.spec.scenario import NODE_GROUP_LABEL

LOST_AFTER = 300.0


@dataclass
class GroupGauges:
    registered: int = 0
    ready: int = 0


@dataclass
class Counters:
    scale_up_events: int = 0
    nodes_requested: int = 0
    nodes_added: int = 0  # requested nodes that came up (registered and Ready)
    nodes_failed: int = 0  # requested nodes that never came up (refused, or removed before Ready)
    nodes_removed: int = 0
    empty_removed: int = 0
    drained_removed: int = 0
    max_concurrent_drains: int = 0
    first_removal_at: float | None = None
    last_removal_at: float | None = None
    evictions: int = 0
    evictions_refused: int = 0
    pdb_violations: int = 0
    pods_lost: int = 0
    nodes_deleted_with_pods: int = 0
    autoscaler_loops: int = 0
    autoscaler_restarts: int = 0
    action_errors: int = 0
    max_pending: int = 0
    pending_pod_seconds: float = 0.0
    peak_nodes: int = 0
    node_seconds: dict[str, float] = field(default_factory=dict)


class Metrics(WorldObserver):
    def __init__(
        self, engine: Engine, world: World, cloud: SimCloud, budgets: Budgets, log: EventLog, ledger: Ledger
    ):
        self.engine = engine
        self.ledger = ledger
        self.world = world
        self.cloud = cloud
        self.budgets = budgets
        self.log = log
        self.c = Counters(node_seconds={name: 0.0 for name in cloud.groups})
        self.groups = {name: GroupGauges() for name in cloud.groups}
        self.unmanaged = GroupGauges()
        self.running = 0
        self._pending = 0
        self._pending_since = engine.now()
        self._pending_from: dict[str, float] = {}  # pending pod UID -> when it was created
        self._pending_waits: list[float] = []  # each bound pod's wait
        self._billing: dict[str, float] = {}  # instance id -> billing start
        # Per group: instances being billed and the sum of their start times, so the cost so far
        # is O(groups): closed seconds + open * now - sum(starts).
        self._open = {name: [0, 0.0] for name in cloud.groups}
        self._evicted_from: dict[str, int] = {}  # node -> pods the autoscaler evicted from it
        # Nodes the autoscaler deleted -> UIDs of the pods already charged to that deletion, and
        # the nodes already counted in nodes_deleted_with_pods (each node counts once).
        self._charged: dict[str, set[str]] = {}
        self._with_pods: set[str] = set()
        # controller UID -> owed replacements: (deadline, whether the removed pod was serving)
        self._debts: dict[str, deque[tuple[float, bool]]] = {}
        # evicted StatefulSet pods still terminating -> whether they were serving when evicted:
        # their debts start when they are gone (pod_removed)
        self._owed_when_gone: dict[str, bool] = {}
        self._coming_up: dict[str, str] = {}  # node name -> group, requested nodes not up yet
        self.timeline: list[dict[str, float | int]] = []
        world.subscribe(self)
        hooks = cloud.hooks
        hooks.instance_started.append(self._billing_start)
        hooks.instance_ended.append(self._billing_end)
        hooks.scaled_up.append(self._scaled_up)
        hooks.deleting_nodes.append(self._deleting_nodes)
        hooks.terminating.append(self._terminating)

    # -- reset after the initial state is built ----------------------------------------------
    def start(self) -> None:
        """Forget the set-up (the t=0 scheduling pass): measurement starts now."""
        self.c.max_pending = 0  # the set-up's pending pods count once time passes with them
        self.c.pending_pod_seconds = 0.0
        self._pending_since = self.engine.now()
        self._pending_waits.clear()
        self._pending_from = dict.fromkeys(self._pending_from, self._pending_since)
        self.ledger.start()
        self.c.peak_nodes = len(self.world.snapshot)
        self.initial_nodes = len(self.world.snapshot)

    # -- pending / running gauges ------------------------------------------------------------
    def _set_pending(self, delta: int) -> None:
        self._close_pending_stretch()
        self._pending += delta

    def _close_pending_stretch(self) -> None:
        """Account for the time the current pending count was held, if any time passed."""
        now = self.engine.now()
        if now > self._pending_since:
            self.c.pending_pod_seconds += self._pending * (now - self._pending_since)
            if self._pending > self.c.max_pending:
                self.c.max_pending = self._pending
            self._pending_since = now

    def pod_added(self, pod: Pod) -> None:
        if not pod.node_name:
            self._set_pending(1)
            self._pending_from[pod.uid] = self.engine.now()
        elif pod.phase == "Running":
            self.running += 1

    def pod_bound(self, pod: Pod) -> None:
        self._set_pending(-1)
        created = self._pending_from.pop(pod.uid, None)
        if created is not None:
            self._pending_waits.append(self.engine.now() - created)

    def pod_updated(self, old: Pod, new: Pod) -> None:
        was = old.phase == "Running" and bool(old.node_name)
        now_running = new.phase == "Running" and bool(new.node_name)
        if was != now_running:
            self.running += 1 if now_running else -1
        if _serving(new) and not _serving(old):
            self._replacement_ready(new)

    def pod_removed(self, pod: Pod) -> None:
        serving = self._owed_when_gone.pop(pod.uid, None)
        if serving is not None:
            self._open_debt(pod, serving)
        if not pod.node_name:
            self._set_pending(-1)
            self._pending_from.pop(pod.uid, None)
        elif pod.phase == "Running":
            self.running -= 1

    def node_added(self, node: Node) -> None:
        gauges = self._gauges(node)
        gauges.registered += 1
        gauges.ready += node.ready
        size = len(self.world.snapshot)
        if size > self.c.peak_nodes:
            self.c.peak_nodes = size

    def node_updated(self, old: Node, new: Node) -> None:
        if old.ready != new.ready:
            self._gauges(new).ready += 1 if new.ready else -1
            if new.ready and self._coming_up.pop(new.name, None) is not None:
                self.c.nodes_added += 1

    def node_removed(self, node: Node) -> None:
        gauges = self._gauges(node)
        gauges.registered -= 1
        gauges.ready -= node.ready
        self._evicted_from.pop(node.name, None)
        self._charged.pop(node.name, None)
        self._with_pods.discard(node.name)
        if self._coming_up.pop(node.name, None) is not None:
            self.c.nodes_failed += 1  # registered, removed before it was ever Ready

    def _gauges(self, node: Node) -> GroupGauges:
        return self.groups.get(node.labels.get(NODE_GROUP_LABEL, ""), self.unmanaged)

    # -- cloud -------------------------------------------------------------------------------
    def _billing_start(self, instance: SimInstance) -> None:
        now = self.engine.elapsed()
        self._billing[instance.id] = now
        entry = self._open[instance.group]
        entry[0] += 1
        entry[1] += now

    def _billing_end(self, instance: SimInstance) -> None:
        started = self._billing.pop(instance.id, None)
        if started is not None:
            self.c.node_seconds[instance.group] += self.engine.elapsed() - started
            entry = self._open[instance.group]
            entry[0] -= 1
            entry[1] -= started

    def node_seconds(self) -> dict[str, float]:
        now = self.engine.elapsed()
        return {
            name: closed + self._open[name][0] * now - self._open[name][1]
            for name, closed in self.c.node_seconds.items()
        }

    def cost(self) -> float:
        seconds = self.node_seconds()
        return sum(seconds[name] / 3600 * group.config.price for name, group in self.cloud.groups.items())

    def _scaled_up(self, group: str, delta: int) -> None:
        """The cloud took an increase: the group's newest `delta` instances are the requested ones
        (a stockout marks them with an error at once)."""
        self.c.scale_up_events += 1
        self.c.nodes_requested += delta
        for instance in self.cloud.groups[group].sim_instances()[-delta:]:
            if instance.error is not None:
                self.c.nodes_failed += 1
            else:
                self._coming_up[instance.node_name] = group

    def scale_up_counts(self) -> dict[str, int]:
        """Requested nodes by outcome; requested = added + failed + coming up at the end. An
        instance dropped before it registered has no Node to watch: it is found missing here."""
        coming_up = failed = 0
        for name, group in self._coming_up.items():
            if self.cloud.groups[group].instance_of(name) is None:
                failed += 1
            else:
                coming_up += 1
        return {
            "events": self.c.scale_up_events,
            "nodes_requested": self.c.nodes_requested,
            "nodes_added": self.c.nodes_added,
            "nodes_failed": self.c.nodes_failed + failed,
            "nodes_coming_up_at_end": coming_up,
        }

    # -- autoscaler actions and the invariants -------------------------------------------------
    def evicted(self, pod: Pod) -> None:
        """The autoscaler's eviction of `pod` was accepted (called before the pod changes)."""
        self.c.evictions += 1
        self.ledger.evicted(pod)
        if pod.node_name:
            self._evicted_from[pod.node_name] = self._evicted_from.get(pod.node_name, 0) + 1
        if healthy(pod):
            self._check_budgets([pod])
        ref = pod.meta.controller
        if ref is not None and ref.kind == "StatefulSet":
            self._owed_when_gone[pod.uid] = _serving(pod)  # terminating from now; see pod_removed
        else:
            self._owe_replacement(pod)
        drains = self.drains_in_progress()
        if drains > self.c.max_concurrent_drains:
            self.c.max_concurrent_drains = drains

    def _deleting_nodes(self, group: str, nodes: Sequence[Node]) -> None:
        now = self.engine.elapsed()
        snapshot = self.world.snapshot
        for node in nodes:
            self.c.nodes_removed += 1
            self.ledger.removing(node)
            if self._evicted_from.get(node.name):
                self.c.drained_removed += 1
            else:
                self.c.empty_removed += 1
            if self.c.first_removal_at is None:
                self.c.first_removal_at = now
            self.c.last_removal_at = now
            pods = list(snapshot.pods_on(node.name).values())
            stranded = _stranded(node, pods)
            self._charged[node.name] = {p.uid for p in stranded}
            if stranded:
                self._deleted_with_pods(node, stranded, "node deleted with {n} pods still bound")
            self._check_budgets([p for p in pods if healthy(p)])
            # Replacements are owed when the pods actually go, with the Node (_terminating).

    def _deleted_with_pods(self, node: Node, pods: list[Pod], what: str) -> None:
        """Count the nodes_deleted_with_pods invariant once per node, with an event naming pods."""
        self._with_pods.add(node.name)
        self.c.nodes_deleted_with_pods += 1
        self.log.record(
            "Node",
            node.name,
            "Warning",
            "InvariantViolated",
            what.format(n=len(pods)) + ": " + ", ".join(p.key for p in pods[:5]),
            "simulator",
            invariant="nodes_deleted_with_pods",
        )

    def _terminating(self, group: str, node: Node) -> None:
        """The cloud removes a Node the autoscaler deleted, with the pods still bound to it: each
        is owed a replacement from now, and pods bound since the deletion break the invariant."""
        charged = self._charged.get(node.name)
        if charged is None:
            return  # not the autoscaler's deletion
        pods = list(self.world.snapshot.pods_on(node.name).values())
        stranded = _stranded(node, pods)
        for pod in stranded:
            if not pod.is_terminating:
                self._owe_replacement(pod)
                self.ledger.deleted_with_node(pod)
        new = [p for p in stranded if p.uid not in charged]
        if not new:
            return
        charged.update(p.uid for p in new)
        if node.name not in self._with_pods:
            self._deleted_with_pods(
                node, new, "node removed by the cloud with {n} pods bound after its deletion"
            )
        self._check_budgets([p for p in new if healthy(p)])

    def deleted_node_object(self, node: Node) -> None:
        """The autoscaler deleted a Node object directly (ClusterActions.delete_node_object)."""
        group = node.labels.get(NODE_GROUP_LABEL, "")
        self._deleting_nodes(group, [node])
        self._terminating(group, node)  # the Node goes at once
        self.c.nodes_removed -= 1  # counted as a removal only when the cloud deletes it
        if self._evicted_from.get(node.name):
            self.c.drained_removed -= 1
        else:
            self.c.empty_removed -= 1

    def _check_budgets(self, leaving: list[Pod]) -> None:
        """Would these healthy pods leaving take any budget below what it requires?"""
        if not leaving:
            return
        losses: dict[str, int] = {}
        states = {}
        for pod in leaving:
            for state in self.budgets.budgets_of(pod):
                losses[state.pdb.key] = losses.get(state.pdb.key, 0) + 1
                states[state.pdb.key] = state
        for key, lost in losses.items():
            status = self.budgets.status(states[key])
            if status.current_healthy - lost < status.desired_healthy:
                self.c.pdb_violations += 1
                self.log.record(
                    "PodDisruptionBudget",
                    key,
                    "Warning",
                    "InvariantViolated",
                    f"{status.current_healthy - lost} healthy pods left, {status.desired_healthy} required",
                    "simulator",
                    invariant="pdb_violations",
                )

    def _owe_replacement(self, pod: Pod) -> None:
        ref = pod.meta.controller
        if ref is None or ref.kind == "DaemonSet" or pod.is_mirror:
            return
        self._open_debt(pod, _serving(pod))

    def _open_debt(self, pod: Pod, serving: bool) -> None:
        ref = pod.meta.controller
        if ref is None:
            return
        deadline = self.engine.now() + LOST_AFTER
        self._debts.setdefault(ref.uid, deque()).append((deadline, serving))
        self.engine.at(deadline, self._check_debt, ref.uid, ref.kind, f"{pod.namespace}/{ref.name}", pod.key)

    def _replacement_ready(self, pod: Pod) -> None:
        ref = pod.meta.controller
        if ref is None:
            return
        debts = self._debts.get(ref.uid)
        if debts:
            debts.popleft()
            if not debts:
                del self._debts[ref.uid]

    def _check_debt(self, owner_uid: str, kind: str, owner_key: str, pod_key: str) -> None:
        debts = self._debts.get(owner_uid)
        now = self.engine.now()
        if not debts or debts[0][0] > now:
            return  # already repaid by a replacement that turned Ready
        debts.popleft()
        # The controller's other open debts for pods that were serving when removed (due now as
        # well and judged after this one, or later removals still within their window) account
        # for that much of its shortfall first. A removed pod that was not serving yet (a starting
        # replacement) took nothing from the Ready count: the shortfall stays this debt's.
        others = sum(1 for _, serving in debts if serving)
        if not debts:
            del self._debts[owner_uid]
        if self._shortfall(owner_uid, kind, owner_key) > others:
            self.c.pods_lost += 1
            self.log.record(
                "Pod",
                pod_key,
                "Warning",
                "InvariantViolated",
                f"no Ready replacement {LOST_AFTER:g}s after the autoscaler removed it, and"
                f" {kind} {owner_key} is still short of its desired replicas",
                "simulator",
                invariant="pods_lost",
            )

    def _shortfall(self, owner_uid: str, kind: str, owner_key: str) -> int:
        """How many pods the controller wants now beyond those serving (Ready; Running, for a Job)
        and those a node failure holds back: a pod on a NotReady node is not Ready because of the
        node, which a fault, not the autoscaler, took out (the replacement the autoscaler's drain
        asked for may be that pod)."""
        workload = self.world.workloads.get(f"{kind}/{owner_key}")
        if workload is None:
            return 0
        serving = sum(1 for p in self.world.pods_of(owner_uid) if _serving(p) or self._on_failed_node(p))
        desired = workload.parallelism if kind == "Job" else workload.replicas
        return (desired or 0) - serving

    def _on_failed_node(self, pod: Pod) -> bool:
        if not pod.node_name or pod.is_terminal:
            return False
        node = self.world.node(pod.node_name)
        return node is not None and not node.ready

    # -- sampled state -----------------------------------------------------------------------
    def drains_in_progress(self) -> int:
        count = 0
        snapshot = self.world.snapshot
        for name in self._evicted_from:
            if name not in snapshot:
                continue
            if not snapshot.node(name).has_taint(TO_BE_DELETED_TAINT):
                continue
            group = self.cloud.groups.get(snapshot.node(name).labels.get(NODE_GROUP_LABEL, ""))
            instance = group.instance_of(name) if group is not None else None
            if instance is None or instance.state is not InstanceState.DELETING:
                count += 1
        return count

    def sample(self) -> dict[str, float | int]:
        """One timeline row (called after each autoscaler loop)."""
        snapshot = self.world.snapshot
        columns = snapshot.columns.index
        alloc = snapshot.alloc
        used = snapshot.used
        cpu, memory = columns["cpu"], columns["memory"]
        row: dict[str, float | int] = {"time": round(self.engine.elapsed(), 3)}
        total = ready = upcoming = deleting = 0
        for name, group in self.cloud.groups.items():
            gauges = self.groups[name]
            group_deleting = group.deleting
            group_upcoming = max(0, group.target_size() - (gauges.registered - group_deleting))
            row[f"{name}_total"] = gauges.registered
            row[f"{name}_ready"] = gauges.ready
            row[f"{name}_unready"] = gauges.registered - gauges.ready
            row[f"{name}_upcoming"] = group_upcoming
            total += gauges.registered
            ready += gauges.ready
            upcoming += group_upcoming
            deleting += group_deleting
        row["nodes_total"] = total + self.unmanaged.registered
        row["nodes_ready"] = ready + self.unmanaged.ready
        row["nodes_unready"] = row["nodes_total"] - row["nodes_ready"]
        row["nodes_upcoming"] = upcoming
        row["pending_pods"] = self._pending
        row["running_pods"] = self.running
        row["cpu_requested"] = int(np.sum(used[:, cpu])) / 1000
        row["cpu_allocatable"] = int(np.sum(alloc[:, cpu])) / 1000
        row["memory_requested_gib"] = round(int(np.sum(used[:, memory])) / 2**30, 3)
        row["memory_allocatable_gib"] = round(int(np.sum(alloc[:, memory])) / 2**30, 3)
        drains = self.drains_in_progress()
        if drains > self.c.max_concurrent_drains:
            self.c.max_concurrent_drains = drains
        row["drains_in_progress"] = drains
        row["nodes_being_deleted"] = deleting
        row["evictions_total"] = self.c.evictions
        row["cost"] = round(self.cost(), 4)
        self.timeline.append(row)
        return row

    def pending_pod_seconds(self) -> float:
        self._close_pending_stretch()
        return self.c.pending_pod_seconds

    def pending_seconds_p99(self) -> float:
        return self.pending_seconds_percentile(99)

    def pending_seconds_percentile(self, q: float) -> float:
        """The q-th percentile of each pod's wait from creation to binding (still pending: so far)."""
        now = self.engine.now()
        waits = self._pending_waits + [now - created for created in self._pending_from.values()]
        return round(float(np.percentile(waits, q)), 3) if waits else 0.0

    def max_pending(self) -> int:
        self._close_pending_stretch()
        return self.c.max_pending


def _stranded(node: Node, pods: list[Pod]) -> list[Pod]:
    """Pods a node deletion would take down with it (DaemonSet, mirror and finished pods aside,
    and pods already terminating on a NotReady node, which the node failure lost)."""
    return [
        p
        for p in pods
        if not p.is_daemonset
        and not p.is_mirror
        and not p.is_terminal
        and not (p.is_terminating and not node.ready)
    ]


def _serving(pod: Pod) -> bool:
    """A pod that makes good a removed one: bound and Ready (a Job's pods: Running), not leaving."""
    if not pod.node_name or pod.is_terminating or pod.phase != "Running":
        return False
    ref = pod.meta.controller
    return pod.ready or (ref is not None and ref.kind == "Job")
