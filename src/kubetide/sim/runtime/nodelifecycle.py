"""The node lifecycle controller: NotReady taints, pods marked not ready, taint-based eviction.

When a node turns NotReady, the controller taints it `node.kubernetes.io/not-ready` with effects
NoSchedule and NoExecute and marks its pods not Ready. Every pod carries a toleration for the
NoExecute taint (the DefaultTolerationSeconds admission plugin adds one of 300 s to pods that have
none; DaemonSet pods tolerate it forever), so each pod is deleted when its toleration runs out,
unless the node recovers first. The deleted pods stay Terminating on the dead node (its kubelet
cannot finish them) while their controllers create replacements elsewhere.
"""

from __future__ import annotations

import dataclasses

from kubetide.model import Node, Pod, Taint
from kubetide.sim.runtime.engine import Engine
from kubetide.sim.runtime.events import EventLog
from kubetide.sim.runtime.evolve import evolve
from kubetide.sim.runtime.kubelet import Kubelets
from kubetide.sim.runtime.world import World, WorldObserver

NOT_READY_TAINT = "node.kubernetes.io/not-ready"


class NodeLifecycle(WorldObserver):
    def __init__(
        self, engine: Engine, world: World, kubelets: Kubelets, log: EventLog, default_toleration: int
    ):
        self.engine = engine
        self.world = world
        self.kubelets = kubelets
        self.log = log
        self.default_toleration = default_toleration
        self._outage: dict[str, int] = {}  # node -> outage number, so stale timers do nothing
        self.evictions = 0
        world.subscribe(self)

    def set_ready(self, name: str, ready: bool) -> None:
        """The kubelet's Ready condition changed (faults, registration)."""
        node = self.world.node(name)
        if node is None or node.ready == ready:
            return
        now = self.engine.now()
        if ready:
            taints = tuple(t for t in node.taints if t.key != NOT_READY_TAINT)
        else:
            taints = (
                *node.taints,
                Taint(NOT_READY_TAINT, "", "NoSchedule", now),
                Taint(NOT_READY_TAINT, "", "NoExecute", now),
            )
        self.world.update_node(dataclasses.replace(node, ready=ready, ready_transition=now, taints=taints))

    def node_updated(self, old: Node, new: Node) -> None:
        if old.ready and not new.ready:
            self._went_down(new)

    def _went_down(self, node: Node) -> None:
        outage = self._outage.get(node.name, 0) + 1
        self._outage[node.name] = outage
        self.log.record("Node", node.name, "Warning", "NodeNotReady", "Node is not ready", "node-controller")
        now = self.engine.now()
        for pod in list(self.world.snapshot.pods_on(node.name).values()):
            if pod.ready:
                self.world.update_pod(evolve(pod, ready=False, ready_transition=now))
            if pod.is_terminating:
                continue
            seconds = self._toleration_seconds(pod)
            if seconds is not None:
                self.engine.after(seconds, self._evict, pod.uid, node.name, outage)

    def _toleration_seconds(self, pod: Pod) -> float | None:
        """How long the pod tolerates the NoExecute not-ready taint (None: forever)."""
        taint = Taint(NOT_READY_TAINT, "", "NoExecute")
        matching = [t for t in pod.tolerations if t.tolerates(taint)]
        if not matching:
            return float(self.default_toleration)
        if any(t.toleration_seconds is None for t in matching):
            return None
        return float(max(0, min(t.toleration_seconds or 0 for t in matching)))

    def _evict(self, uid: str, node_name: str, outage: int) -> None:
        node = self.world.node(node_name)
        if node is None or node.ready or self._outage.get(node_name) != outage:
            return
        pod = self.world.pod(uid)
        if pod is None or pod.node_name != node_name or pod.is_terminating:
            return
        self.evictions += 1
        self.log.record(
            "Pod",
            pod.key,
            "Normal",
            "TaintManagerEviction",
            f"Marking for deletion Pod {pod.key}",
            "node-controller",
        )
        self.kubelets.delete(pod)

    def node_removed(self, node: Node) -> None:
        self._outage.pop(node.name, None)
