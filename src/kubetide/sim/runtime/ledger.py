"""The disruption ledger: what the autoscaler's scale-down cost the workloads, per workload and in total.

One definition, measured here from the simulator's world events and read by summary.json's
`disruption`, `simulate --compare` (each setting's metrics), sweeps and report.html:

- `evictions`: the autoscaler's accepted evictions of the workload's pods (the QoS agent's apart).
- `restarts`: rollout restarts the autoscaler asked for (surge-before-evict), each replacing the
  Deployment's pods; `deleted_with_node`: pods that went down with a node the autoscaler deleted.
- `below_pdb_minimum_seconds`: time a PodDisruptionBudget's healthy pods (Ready, not terminating)
  were fewer than its desired healthy (minAvailable, or the expected pods less maxUnavailable),
  counted from the moment the autoscaler displaced one of its pods until the budget is back at its
  minimum and the displaced pods are gone. A budget already short before (pods still starting)
  counts only once the autoscaler takes a pod from it. The total counts each budget once; a
  workload's row counts the budgets whose time its displaced pods opened.
- `below_desired_pod_seconds`: ready-pod-seconds short of the workload's desired replicas (a
  Job's parallelism) while a disruption the autoscaler caused is open: from the displacement (an
  eviction, a node deletion, a rollout restart) until its displaced pods are gone and the
  workload has as many healthy pods as it wants. A bare pod has no desired count (nothing
  replaces it): its evictions count, its absence does not.
- `budget_wait_seconds`: time the workload's pods on draining nodes waited for budget (from a
  refused eviction, HTTP 429, until the pod is evicted, gone, or its node is no longer being
  drained); the total, `budget_wait_node_seconds`, is the time nodes spent waiting, each node
  counted once however many of its pods wait.
- `churned_nodes`: nodes the autoscaler removed within 30 minutes of their joining the cluster.
- `last_removal_seconds`: from the scenario's last load change to the last node removal after it
  (null when no node is removed after it). A load change is a scenario event that changes what
  runs (`scale`, `apply`, `delete`) or an HorizontalPodAutoscaler's change of its target's
  replicas (which follows the usage profiles); without any, the run's start.

Deterministic (simulated time only) and cheap: every world event returns at once unless a
disruption is open, and an open one costs a dictionary lookup and O(controllers) per pod change.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from kubetide.autoscaler.ports import CHURN_SECONDS, TO_BE_DELETED_TAINT
from kubetide.model import Node, Pod
from kubetide.sim.runtime.disruption import Budgets, BudgetState, healthy
from kubetide.sim.runtime.engine import Engine
from kubetide.sim.runtime.job import Jobs
from kubetide.sim.runtime.world import World, WorldObserver


@dataclass(frozen=True, slots=True)
class WorkloadDisruption:
    """One workload's row of the ledger (`Kind/namespace/name`; `Pod/...` for a bare pod)."""

    workload: str
    evictions: int = 0
    restarts: int = 0
    deleted_with_node: int = 0
    below_pdb_minimum_seconds: float = 0.0
    below_desired_pod_seconds: float = 0.0
    budget_wait_seconds: float = 0.0


@dataclass(frozen=True, slots=True)
class DisruptionLedger:
    """The ledger's totals and its rows, worst first (summary.json's `disruption`)."""

    evictions: int
    restarts: int
    deleted_with_node: int
    below_pdb_minimum_seconds: float
    below_desired_pod_seconds: float
    budget_wait_node_seconds: float
    churned_nodes: int
    last_load_change_at: float
    last_removal_seconds: float | None
    worst: str | None  # the workload with the most below-desired pod-seconds, then PDB seconds
    workloads: tuple[WorkloadDisruption, ...]

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["workloads"] = [asdict(row) for row in self.workloads]
        return data


@dataclass(slots=True)
class _Row:
    evictions: int = 0
    restarts: int = 0
    deleted_with_node: int = 0
    below_pdb_minimum_seconds: float = 0.0
    below_desired_pod_seconds: float = 0.0
    budget_wait_seconds: float = 0.0


@dataclass(slots=True)
class _Open:
    """A disruption in progress: the displaced pods still present, and the shortfall held since."""

    since: float
    shortfall: int = 0
    healthy: int = 0  # a workload's healthy pods, kept from pod events while open
    displaced: set[str] = field(default_factory=set)
    workloads: set[str] = field(default_factory=set)  # for a budget: whose displacements opened it


@dataclass(slots=True)
class _Clock:
    """Time during which a count of waiting things was above zero."""

    waiting: int = 0
    since: float = 0.0


class Ledger(WorldObserver):
    """Subscribed after Budgets, so a budget's healthy count is current when a pod event gets here."""

    def __init__(self, engine: Engine, world: World, budgets: Budgets, jobs: Jobs):
        self.engine = engine
        self.jobs = jobs
        self.world = world
        self.budgets = budgets
        self.rows: dict[str, _Row] = {}
        self._top: dict[str, str] = {}  # controller UID -> its workload key
        self._workloads: dict[str, _Open] = {}  # workload key -> its open disruption
        self._budgets: dict[str, _Open] = {}  # PDB key -> its open disruption
        self._budget_seconds: dict[str, float] = {}
        self._refused: dict[str, tuple[str, str]] = {}  # pod UID -> (node, workload) waiting for budget
        self._node_waits: dict[str, _Clock] = {}
        self._workload_waits: dict[str, _Clock] = {}
        self._node_wait_seconds = 0.0
        self._joined: dict[str, float] = {}  # node -> when it joined (nodes of the set-up aside)
        self._churned: set[str] = set()
        self.last_load_change_at = 0.0
        self.last_removal_at: float | None = None
        world.subscribe(self)

    def start(self) -> None:
        """Measurement starts now: the set-up's nodes did not join during the run."""
        self._joined.clear()

    # -- who a pod belongs to ------------------------------------------------------------------
    def workload_of(self, pod: Pod) -> str | None:
        """The pod's workload key (a Deployment's ReplicaSets count as the Deployment), None for
        DaemonSet and mirror pods."""
        if pod.is_daemonset or pod.is_mirror:
            return None
        ref = pod.meta.controller
        if ref is None:
            return f"Pod/{pod.namespace}/{pod.name}"
        key = self._top.get(ref.uid, "")
        if key == "":
            key = f"{ref.kind}/{pod.namespace}/{ref.name}"
            workload = self.world.workloads.get(key)
            owner = workload.meta.controller if workload is not None else None
            if ref.kind == "ReplicaSet" and owner is not None and owner.kind == "Deployment":
                key = f"Deployment/{pod.namespace}/{owner.name}"
            self._top[ref.uid] = key
        return key

    def _row(self, key: str) -> _Row:
        row = self.rows.get(key)
        if row is None:
            row = self.rows[key] = _Row()
        return row

    # -- what the autoscaler did ---------------------------------------------------------------
    def evicted(self, pod: Pod) -> None:
        """The autoscaler's eviction of `pod` was accepted (before the pod changes)."""
        key = self.workload_of(pod)
        if key is None:
            return
        self._row(key).evictions += 1
        self._resolve_wait(pod.uid)
        self._displaced(key, pod)

    def deleted_with_node(self, pod: Pod) -> None:
        """`pod` goes down with a node the autoscaler deleted."""
        key = self.workload_of(pod)
        if key is None:
            return
        self._row(key).deleted_with_node += 1
        self._displaced(key, pod)

    def restarted(self, key: str) -> None:
        """The autoscaler asked for a rollout restart of Deployment `key` (ns/name)."""
        key = f"Deployment/{key}"
        self._row(key).restarts += 1
        for pod in self._pods(key):
            if not pod.is_terminating and not pod.is_terminal:
                self._displaced(key, pod)

    def refused(self, pod: Pod) -> None:
        """An eviction of `pod` by the autoscaler was refused by a PDB (HTTP 429)."""
        key = self.workload_of(pod)
        if key is None or pod.uid in self._refused or not pod.node_name:
            return
        self._refused[pod.uid] = (pod.node_name, key)
        self._tick(self._node_waits, pod.node_name, +1)
        self._tick(self._workload_waits, key, +1)

    def removing(self, node: Node) -> None:
        """The autoscaler deletes `node` (counted once per node, however it is deleted)."""
        now = self.engine.elapsed()
        self.last_removal_at = now
        joined = self._joined.get(node.name)
        if joined is not None and now - joined <= CHURN_SECONDS:
            self._churned.add(node.name)

    def load_changed(self) -> None:
        """What runs changed: a scale, apply or delete scenario event, or an HPA's write."""
        self.last_load_change_at = self.engine.elapsed()

    # -- open disruptions ----------------------------------------------------------------------
    def _displaced(self, key: str, pod: Pod) -> None:
        now = self.engine.now()
        if key.startswith("Pod/"):
            pass  # a bare pod: nothing replaces it, no desired count
        else:
            entry = self._workloads.get(key)
            if entry is None:
                entry = self._workloads[key] = _Open(now)
                entry.healthy = self._healthy_pods(key)
                entry.shortfall = self._shortfall(key, entry.healthy)
            entry.displaced.add(pod.uid)
        for state in self.budgets.budgets_of(pod):
            budget = self._budgets.get(state.pdb.key)
            if budget is None:
                budget = self._budgets[state.pdb.key] = _Open(now, self._budget_shortfall(state))
            budget.displaced.add(pod.uid)
            budget.workloads.add(key)

    def _shortfall(self, key: str, healthy_pods: int) -> int:
        workload = self.world.workloads.get(key)
        if workload is None:
            return 0
        if workload.kind != "Job":
            want = workload.replicas or 0
        elif key in self.jobs.completed_jobs:
            want = 0
        else:  # as the Job controller: its parallelism, at most the completions still to come
            _, succeeded = self.jobs.status(workload)
            want = workload.parallelism or 0
            if workload.completions is not None:
                want = min(want, workload.completions - succeeded)
        return max(0, want - healthy_pods)

    def _healthy_pods(self, key: str) -> int:
        return sum(1 for pod in self._pods(key) if healthy(pod))

    def _pods(self, key: str) -> list[Pod]:
        """The workload's pods (a Deployment's: those of its ReplicaSets)."""
        workload = self.world.workloads.get(key)
        if workload is None:
            return []
        if workload.kind != "Deployment":
            return self.world.pods_of(workload.meta.uid)
        pods: list[Pod] = []
        for rs in self.world.workloads.values():
            owner = rs.meta.controller
            if rs.kind == "ReplicaSet" and owner is not None and owner.uid == workload.meta.uid:
                pods += self.world.pods_of(rs.meta.uid)
        return pods

    def _budget_shortfall(self, state: BudgetState) -> int:
        status = self.budgets.status(state)
        return 1 if status.current_healthy < status.desired_healthy else 0

    def _update(self, pod: Pod, change: int, gone: bool) -> None:
        """`pod` changed, its workload's healthy pods by `change`; `gone`: the pod was removed."""
        now = self.engine.now()
        key = self.workload_of(pod)
        entry = self._workloads.get(key) if key is not None else None
        if entry is not None and key is not None:
            self._row(key).below_desired_pod_seconds += entry.shortfall * (now - entry.since)
            entry.since = now
            entry.healthy += change
            if gone:
                entry.displaced.discard(pod.uid)
            entry.shortfall = self._shortfall(key, entry.healthy)
            if not entry.shortfall and not entry.displaced:
                del self._workloads[key]
        if not self._budgets:
            return
        if gone:  # Budgets has already forgotten the pod: every open budget looks again
            for pdb in list(self._budgets):
                state = self.budgets.states.get(pdb)
                if state is None:
                    del self._budgets[pdb]  # the PDB was deleted
                else:
                    self._update_budget(state, pod.uid, now)
        else:
            for state in self.budgets.budgets_of(pod):
                self._update_budget(state, None, now)

    def _update_budget(self, state: BudgetState, gone: str | None, now: float) -> None:
        budget = self._budgets.get(state.pdb.key)
        if budget is None:
            return
        held = budget.shortfall * (now - budget.since)
        if held:
            self._budget_seconds[state.pdb.key] = self._budget_seconds.get(state.pdb.key, 0.0) + held
            for key in budget.workloads:
                self._row(key).below_pdb_minimum_seconds += held
        budget.since = now
        if gone is not None:
            budget.displaced.discard(gone)
        budget.shortfall = self._budget_shortfall(state)
        if not budget.shortfall and not budget.displaced:
            del self._budgets[state.pdb.key]

    # -- waiting for budget --------------------------------------------------------------------
    def _tick(self, clocks: dict[str, _Clock], key: str, delta: int) -> None:
        clock = clocks.get(key)
        if clock is None:
            clock = clocks[key] = _Clock()
        now = self.engine.now()
        if clock.waiting:
            held = now - clock.since
            if clocks is self._node_waits:
                self._node_wait_seconds += held
            else:
                self._row(key).budget_wait_seconds += held
        clock.since = now
        clock.waiting += delta
        if not clock.waiting:
            del clocks[key]

    def _resolve_wait(self, uid: str) -> None:
        waiting = self._refused.pop(uid, None)
        if waiting is not None:
            self._tick(self._node_waits, waiting[0], -1)
            self._tick(self._workload_waits, waiting[1], -1)

    # -- world events ----------------------------------------------------------------------------
    def pod_added(self, pod: Pod) -> None:
        if self._workloads:  # a new pod (a replacement, a scale-up) may change what is wanted
            self._update(pod, healthy(pod), gone=False)

    def pod_updated(self, old: Pod, new: Pod) -> None:
        if self._workloads or self._budgets:
            change = healthy(new) - healthy(old)
            if change:
                self._update(new, change, gone=False)

    def pod_removed(self, pod: Pod) -> None:
        if self._refused:
            self._resolve_wait(pod.uid)
        if self._workloads or self._budgets:
            self._update(pod, -healthy(pod), gone=True)

    def node_added(self, node: Node) -> None:
        self._joined[node.name] = self.engine.elapsed()

    def node_updated(self, old: Node, new: Node) -> None:
        if self._refused and old.has_taint(TO_BE_DELETED_TAINT) and not new.has_taint(TO_BE_DELETED_TAINT):
            for uid in [uid for uid, (name, _) in self._refused.items() if name == new.name]:
                self._resolve_wait(uid)  # the drain was given up: its pods wait no more

    def node_removed(self, node: Node) -> None:
        self._joined.pop(node.name, None)

    # -- the result ------------------------------------------------------------------------------
    def result(self) -> DisruptionLedger:
        """The ledger at the end of the run (disruptions still open count up to now)."""
        now = self.engine.now()
        for key, entry in self._workloads.items():
            self._row(key).below_desired_pod_seconds += entry.shortfall * (now - entry.since)
            entry.since = now
        for pdb, budget in self._budgets.items():
            held = budget.shortfall * (now - budget.since)
            budget.since = now
            self._budget_seconds[pdb] = self._budget_seconds.get(pdb, 0.0) + held
            for key in budget.workloads:
                self._row(key).below_pdb_minimum_seconds += held
        for clocks in (self._node_waits, self._workload_waits):
            for key, clock in list(clocks.items()):
                waiting = clock.waiting
                self._tick(clocks, key, 0)
                if waiting:
                    clocks[key] = _Clock(waiting, now)
        rows = tuple(
            sorted(
                (
                    WorkloadDisruption(
                        key,
                        row.evictions,
                        row.restarts,
                        row.deleted_with_node,
                        round(row.below_pdb_minimum_seconds, 3),
                        round(row.below_desired_pod_seconds, 3),
                        round(row.budget_wait_seconds, 3),
                    )
                    for key, row in self.rows.items()
                ),
                key=_severity,
            )
        )
        worst = rows[0] if rows else None
        removal = self.last_removal_at
        return DisruptionLedger(
            evictions=sum(r.evictions for r in rows),
            restarts=sum(r.restarts for r in rows),
            deleted_with_node=sum(r.deleted_with_node for r in rows),
            below_pdb_minimum_seconds=round(float(sum(self._budget_seconds.values())), 3),
            below_desired_pod_seconds=round(float(sum(r.below_desired_pod_seconds for r in rows)), 3),
            budget_wait_node_seconds=round(self._node_wait_seconds, 3),
            churned_nodes=len(self._churned),
            last_load_change_at=round(self.last_load_change_at, 3),
            last_removal_seconds=(
                None
                if removal is None or removal < self.last_load_change_at
                else round(removal - self.last_load_change_at, 3)
            ),
            worst=worst.workload if worst is not None and min(_severity(worst)[:4]) < 0 else None,
            workloads=rows,
        )


def _severity(row: WorkloadDisruption) -> tuple[float, float, float, int, str]:
    """Worst first: below-desired pod-seconds, then PDB seconds, budget waits, displaced pods."""
    return (
        -row.below_desired_pod_seconds,
        -row.below_pdb_minimum_seconds,
        -row.budget_wait_seconds,
        -(row.evictions + row.deleted_with_node + row.restarts),
        row.workload,
    )
