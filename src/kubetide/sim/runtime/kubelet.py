"""The kubelets: start bound pods, run Job pods to completion, and terminate pods gracefully.

A bound pod starts after a start-up delay (drawn per pod) and becomes Running and Ready, provided
its node is Ready; on a NotReady node it waits for the node. Deletion is graceful, as in Kubernetes:
the API server sets deletionTimestamp (the moment the grace period ends) and the pod stays bound,
no longer Ready, until the kubelet has given it its terminationGracePeriodSeconds; only then is
the object removed. A kubelet that is down (NotReady node) finishes nothing: its terminating pods
wait until the node recovers or is deleted.
"""

from __future__ import annotations

from kubetide.durations import parse_duration
from kubetide.model import Node, Pod
from kubetide.sim.runtime.engine import Engine, Timer
from kubetide.sim.runtime.evolve import evolve
from kubetide.sim.runtime.world import World, WorldObserver
from kubetide.sim.spec.scenario import RUN_DURATION_ANNOTATION, ClusterSpec


class Kubelets(WorldObserver):
    def __init__(self, engine: Engine, world: World, cluster: ClusterSpec):
        self.engine = engine
        self.world = world
        self.cluster = cluster
        self.rng = engine.rng("kubelet")
        self._timers: dict[str, Timer] = {}  # pod UID -> its next lifecycle step
        self.run_durations: dict[str, float] = {}  # Job UID -> seconds its pods run (from the Job)
        self.completed = 0
        # While the simulation sets up its t=0 state, bound pods start without a delay (queued
        # here and started by `start_queued`, outside the binding's notifications).
        self.instant = False
        self._queued: list[str] = []
        world.subscribe(self)

    # -- starting --------------------------------------------------------------------------
    def pod_bound(self, pod: Pod) -> None:
        self._schedule_start(pod)

    def pod_added(self, pod: Pod) -> None:
        # A new pod is Pending; one adopted at the start (sim/adoption.py) may be Running or
        # terminating already, and gets what its state needs.
        if pod.node_name:
            node = self.world.node(pod.node_name)
            if node is not None and node.ready:
                self._resume(pod, self.engine.now())

    def _schedule_start(self, pod: Pod, delay: float | None = None) -> None:
        node = self.world.node(pod.node_name)
        if node is None or not node.ready:
            return  # started when the node turns Ready (node_updated)
        if self.instant:
            self._queued.append(pod.uid)
            return
        if delay is None:
            delay = self.cluster.podStartupDelay.draw(self.rng)
        self._timers[pod.uid] = self.engine.after(delay, self._start, pod.uid)

    def _start(self, uid: str) -> None:
        self._timers.pop(uid, None)
        pod = self.world.pod(uid)
        if pod is None or not pod.node_name or pod.is_terminating or pod.phase != "Pending":
            return
        node = self.world.node(pod.node_name)
        if node is None or not node.ready:
            return
        now = self.engine.now()
        self.world.update_pod(evolve(pod, phase="Running", ready=True, ready_transition=now, start_time=now))
        ref = pod.meta.controller
        if ref is not None and ref.kind == "Job":
            self._timers[uid] = self.engine.after(self._run_duration(pod), self._complete, uid)

    def start_queued(self) -> bool:
        """Start the pods queued in instant mode. True if there were any."""
        queued, self._queued = self._queued, []
        for uid in queued:
            self._start(uid)
        return bool(queued)

    def _run_duration(self, pod: Pod) -> float:
        text = pod.annotations.get(RUN_DURATION_ANNOTATION)
        if text:
            try:
                return parse_duration(text)
            except ValueError:
                pass
        ref = pod.meta.controller
        if ref is not None and ref.uid in self.run_durations:
            return self.run_durations[ref.uid]
        return self.cluster.jobRunDuration

    def _complete(self, uid: str) -> None:
        self._timers.pop(uid, None)
        pod = self.world.pod(uid)
        if pod is None or pod.is_terminating or pod.phase != "Running":
            return
        node = self.world.node(pod.node_name)
        if node is None or not node.ready:
            return  # finishes when the node is back
        self.completed += 1
        self.world.update_pod(evolve(pod, phase="Succeeded", ready=False))
        # A finished pod no longer holds resources (the scheduler ignores terminal pods); the
        # Job controller has counted it, so it can go.
        self.world.remove_pod(uid)

    # -- deleting --------------------------------------------------------------------------
    def delete(self, pod: Pod, grace: int | None = None) -> None:
        """Graceful deletion (DELETE with gracePeriodSeconds): the pod leaves when its grace ends."""
        if pod.is_terminating:
            return
        if not pod.node_name or pod.is_terminal:
            self.world.remove_pod(pod.uid)
            return
        grace = pod.termination_grace_period if grace is None else max(0, grace)
        now = self.engine.now()
        meta = evolve(pod.meta, deletion_timestamp=now + grace)
        self.world.update_pod(evolve(pod, meta=meta, ready=False))
        timer = self._timers.pop(pod.uid, None)
        if timer is not None:
            timer.cancel()
        node = self.world.node(pod.node_name)
        if node is not None and node.ready:
            self._timers[pod.uid] = self.engine.after(grace, self._finish, pod.uid)

    def _finish(self, uid: str) -> None:
        self._timers.pop(uid, None)
        pod = self.world.pod(uid)
        if pod is None:
            return
        node = self.world.node(pod.node_name)
        if node is not None and not node.ready:
            return  # the kubelet is down; finished when it comes back
        self.world.remove_pod(uid)

    def pod_removed(self, pod: Pod) -> None:
        timer = self._timers.pop(pod.uid, None)
        if timer is not None:
            timer.cancel()

    # -- node readiness ----------------------------------------------------------------------
    def node_updated(self, old: Node, new: Node) -> None:
        if new.ready and not old.ready:
            self._node_back(new)

    def _node_back(self, node: Node) -> None:
        now = self.engine.now()
        for pod in list(self.world.snapshot.pods_on(node.name).values()):
            if pod.phase == "Running" and not pod.is_terminating and not pod.ready:
                pod = evolve(pod, ready=True, ready_transition=now)
                self.world.update_pod(pod)
            self._resume(pod, now)

    def _resume(self, pod: Pod, now: float) -> None:
        """The timer a pod on a Ready node needs in its state, unless it has one: the end of its
        grace period, its start, or (a Job's) its completion."""
        if pod.uid in self._timers:
            return
        if pod.is_terminating:
            remaining = max(0.0, (pod.meta.deletion_timestamp or now) - now)
            self._timers[pod.uid] = self.engine.after(remaining, self._finish, pod.uid)
        elif pod.phase == "Pending":
            self._schedule_start(pod)
        elif pod.phase == "Running":
            ref = pod.meta.controller
            if ref is not None and ref.kind == "Job":
                started = pod.start_time or now
                left = max(0.0, started + self._run_duration(pod) - now)
                self._timers[pod.uid] = self.engine.after(left, self._complete, pod.uid)
