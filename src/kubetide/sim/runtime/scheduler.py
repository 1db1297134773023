"""kube-scheduler: binds pending pods with the scheduling package's filters and scoring.

Event-driven and batched, so a quiet cluster costs nothing: a new pod, or a change that can make
room (a pod leaving a node, a node added, turning Ready or losing a taint), schedules a pass at
most once per `schedulerInterval`. Like kube-scheduler's queues, pods that fit nowhere are parked
as unschedulable (PodScheduled=False, reason Unschedulable, plus a FailedScheduling event with the
"0/N nodes are available: ..." message) and only retried after such a change, or every 5 minutes
(podMaxInUnschedulablePodsDuration). Each pass takes pods by priority, then creation time, and
binds each to `PredicateChecker.best_node`, kube-scheduler's choice with its scoring. A pod that
fits nowhere may preempt lower-priority pods (preemption.py); it binds to its nominated node first
once the victims are gone.
"""

from __future__ import annotations

import math

from kubetide.model import Node, Pod
from kubetide.scheduling import PredicateChecker, queue_order
from kubetide.sim.runtime.disruption import Budgets
from kubetide.sim.runtime.engine import Engine, Timer
from kubetide.sim.runtime.events import EventLog
from kubetide.sim.runtime.evolve import evolve
from kubetide.sim.runtime.kubelet import Kubelets
from kubetide.sim.runtime.preemption import Preemption
from kubetide.sim.runtime.world import World, WorldObserver

UNSCHEDULABLE_FLUSH = 300.0
DEFAULT_SCHEDULER = "default-scheduler"


class Scheduler(WorldObserver):
    def __init__(
        self,
        engine: Engine,
        world: World,
        log: EventLog,
        interval: float,
        namespaces=None,
        *,
        kubelets: Kubelets,
        budgets: Budgets,
    ):
        self.engine = engine
        self.world = world
        self.log = log
        self.interval = interval
        self.checker = PredicateChecker(world.snapshot, namespaces)
        self.preemption = Preemption(world, self.checker, kubelets, budgets, log)
        self.active: dict[str, None] = {}
        self.unschedulable: dict[str, None] = {}
        self._timer: Timer | None = None
        self._flush: Timer | None = None
        self._last_run = -math.inf
        self.passes = 0
        self.bound = 0
        self.attempts = 0
        world.subscribe(self)

    # -- watches -------------------------------------------------------------------------------
    def pod_added(self, pod: Pod) -> None:
        if not pod.node_name and pod.scheduler_name == DEFAULT_SCHEDULER:
            self.active[pod.uid] = None
            self.kick()

    def pod_removed(self, pod: Pod) -> None:
        if pod.node_name:
            self.move_all()
        else:
            self.active.pop(pod.uid, None)
            self.unschedulable.pop(pod.uid, None)

    def node_added(self, node: Node) -> None:
        self.move_all()

    def node_updated(self, old: Node, new: Node) -> None:
        if (
            (new.ready and not old.ready)
            or new.taints != old.taints
            or new.labels != old.labels
            or new.allocatable != old.allocatable
            or new.unschedulable != old.unschedulable
        ):
            self.move_all()

    def move_all(self) -> None:
        """Something changed that may let parked pods fit: retry them all."""
        if self.unschedulable:
            self.active.update(self.unschedulable)
            self.unschedulable.clear()
            self.kick()

    def kick(self) -> None:
        if self.active and (self._timer is None or not self._timer.active):
            self._timer = self.engine.at(max(self.engine.now(), self._last_run + self.interval), self.run)

    def cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    # -- a scheduling pass ---------------------------------------------------------------------
    def run(self) -> None:
        self._timer = None
        now = self.engine.now()
        self._last_run = now
        self.passes += 1
        pending = self.world.pending
        pods = [pending[uid] for uid in self.active if uid in pending]
        self.active.clear()
        pods.sort(key=queue_order)
        explained: dict[tuple, str] = {}
        no_victims: set[tuple] = set()  # owners whose pods found nothing to preempt this pass
        checker = self.checker
        preemption = self.preemption
        for pod in pods:
            if pod.uid not in pending:
                continue
            self.attempts += 1
            node = self._nominated_node(pod)
            if node is None:
                node = checker.best_node(pod)
            if node is not None:
                self.world.bind(pod, node, now)
                self.bound += 1
                continue
            self.unschedulable[pod.uid] = None
            owner = pod.meta.controller
            key = (owner.uid,) if owner is not None else (pod.uid,)
            if key not in no_victims and preemption.may_preempt(pod):
                if preemption.waiting(pod) or preemption.preempt(pod) is not None:
                    if pod.scheduled_reason == "Unschedulable":
                        self.world.update_pod(evolve(pod, scheduled_status="", scheduled_reason=""))
                    continue
                no_victims.add(key)
            if pod.scheduled_reason != "Unschedulable":
                message = explained.get(key)
                if message is None:
                    message = explained[key] = checker.explain(pod)
                self.world.update_pod(
                    evolve(
                        pod,
                        scheduled_status="False",
                        scheduled_reason="Unschedulable",
                        scheduled_transition=now,
                    )
                )
                self.log.record("Pod", pod.key, "Warning", "FailedScheduling", message, "default-scheduler")
        if self.unschedulable and (self._flush is None or not self._flush.active):
            self._flush = self.engine.after(UNSCHEDULABLE_FLUSH, self._flush_unschedulable)
        self.kick()

    def _nominated_node(self, pod: Pod) -> str | None:
        """The node this pod preempted for, if it fits there now (tried before any other)."""
        node = self.preemption.nominated.get(pod.uid)
        if node is None or node not in self.world.snapshot or self.checker.fits(pod, node) is not None:
            return None
        return node

    def _flush_unschedulable(self) -> None:
        self._flush = None
        self.move_all()

    def close(self) -> None:
        self.checker.close()
