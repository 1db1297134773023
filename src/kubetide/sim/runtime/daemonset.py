"""DaemonSet controller: one pod on every node the pod can run on, new nodes included.

Whether a node should run a daemon pod is decided as the DaemonSet controller does, minus
resources: the pod's nodeSelector and required node affinity must match the node's labels, and the
node's NoSchedule/NoExecute taints must be tolerated (the pod's own tolerations plus those the
controller adds to every daemon pod). The pod is created bound to its node, so it never waits in
the scheduler. Daemon pods are not re-created on a node once it stops qualifying (a
ToBeDeletedByClusterAutoscaler taint, for instance), and are removed with their node.
"""

from __future__ import annotations

import dataclasses

from kubetide.model import Node, Pod, Taint, Toleration, Workload
from kubetide.sim.runtime.controller import Controller
from kubetide.sim.runtime.engine import Engine, Timer
from kubetide.sim.runtime.kubelet import Kubelets
from kubetide.sim.runtime.world import World
from kubetide.sim.spec.scenario import ClusterSpec

# Added by the DaemonSet controller to every daemon pod (pkg/controller/daemon/util).
DAEMON_TOLERATIONS = (
    Toleration("node.kubernetes.io/not-ready", "Exists", "", "NoExecute"),
    Toleration("node.kubernetes.io/unreachable", "Exists", "", "NoExecute"),
    Toleration("node.kubernetes.io/disk-pressure", "Exists", "", "NoSchedule"),
    Toleration("node.kubernetes.io/memory-pressure", "Exists", "", "NoSchedule"),
    Toleration("node.kubernetes.io/pid-pressure", "Exists", "", "NoSchedule"),
    Toleration("node.kubernetes.io/unschedulable", "Exists", "", "NoSchedule"),
)


class DaemonSets(Controller):
    kind = "DaemonSet"

    def __init__(self, engine: Engine, world: World, cluster: ClusterSpec, kubelets: Kubelets):
        super().__init__(engine, world, cluster, kubelets)
        self._placed: dict[str, dict[str, str]] = {}  # DaemonSet UID -> node -> pod UID
        self._dirty_nodes: dict[str, None] = {}
        self._node_timer: Timer | None = None

    def apply(self, workload: Workload) -> None:
        # The DaemonSet controller adds its default tolerations to every pod it creates.
        prototype = workload.template.prototype
        tolerations = (
            *prototype.tolerations,
            *(t for t in DAEMON_TOLERATIONS if t not in prototype.tolerations),
        )
        template = dataclasses.replace(
            workload.template, prototype=dataclasses.replace(prototype, tolerations=tolerations)
        )
        super().apply(dataclasses.replace(workload, template=template))

    def _daemonsets(self) -> list[Workload]:
        return [w for w in self.world.workloads.values() if w.kind == "DaemonSet"]

    # -- watches -----------------------------------------------------------------------------
    # New and changed nodes are checked on their own (not by rescanning every node for every
    # DaemonSet), so a node joining a thousand-node cluster costs one check per DaemonSet.
    def node_added(self, node: Node) -> None:
        self._node_dirty(node.name)

    def node_updated(self, old: Node, new: Node) -> None:
        if old.taints != new.taints or old.labels != new.labels:
            self._node_dirty(new.name)

    def node_removed(self, node: Node) -> None:
        self._dirty_nodes.pop(node.name, None)

    def pod_added(self, pod: Pod) -> None:
        ref = pod.meta.controller
        if ref is not None and ref.kind == "DaemonSet":
            self._placed.setdefault(ref.uid, {})[pod.node_name] = pod.uid

    def pod_removed(self, pod: Pod) -> None:
        ref = pod.meta.controller
        if ref is not None and ref.kind == "DaemonSet":
            placed = self._placed.get(ref.uid)
            if placed is not None and placed.get(pod.node_name) == pod.uid:
                del placed[pod.node_name]
            if pod.node_name in self.world.snapshot:
                self._node_dirty(pod.node_name)

    def pod_updated(self, old: Pod, new: Pod) -> None:
        pass

    def _node_dirty(self, name: str) -> None:
        self._dirty_nodes[name] = None
        if self._node_timer is None or not self._node_timer.active:
            self._node_timer = self.engine.after(
                self.cluster.controllerDelay.draw(self.rng), self._sync_nodes
            )

    def flush(self) -> bool:
        synced = super().flush()
        if not self._dirty_nodes:
            return synced
        if self._node_timer is not None:
            self._node_timer.cancel()
        self._sync_nodes()
        return True

    def _sync_nodes(self) -> None:
        self._node_timer = None
        dirty, self._dirty_nodes = self._dirty_nodes, {}
        daemonsets = self._daemonsets()
        for name in dirty:
            node = self.world.node(name)
            if node is not None:
                for ds in daemonsets:
                    self._ensure(ds, node)

    # -- reconcile ---------------------------------------------------------------------------
    def sync(self, ds: Workload) -> None:
        for node in list(self.world.nodes()):
            self._ensure(ds, node)

    def _ensure(self, ds: Workload, node: Node) -> None:
        placed = self._placed.get(ds.meta.uid)
        if placed is not None and node.name in placed:
            return
        if should_run(ds.template.prototype, node):
            self.create_pod(ds, self.generate_name(ds.name), node_name=node.name)


def should_run(pod: Pod, node: Node) -> bool:
    """Selector, required node affinity and taints (resources are not considered)."""
    labels = node.labels
    for key, value in pod.node_selector.items():
        if labels.get(key) != value:
            return False
    terms = pod.affinity.node_required
    if terms is not None:
        fields = {"metadata.name": node.name}
        if not any(
            all(r.matches(labels) for r in term.match_expressions)
            and all(r.matches(fields) for r in term.match_fields)
            for term in terms
        ):
            return False
    return all(
        _tolerated(taint, pod.tolerations) for taint in node.taints if taint.effect != "PreferNoSchedule"
    )


def _tolerated(taint: Taint, tolerations: tuple[Toleration, ...]) -> bool:
    return any(t.tolerates(taint) for t in tolerations)
