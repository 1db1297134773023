"""The simulated API server's state: nodes, pods, workloads, PDBs, config maps.

Bound pods live in one persistent `ClusterSnapshot`, changed incrementally as the cluster changes
and never rebuilt; the autoscaler reads that same snapshot through `ClusterView.snapshot()` (and
forks/reverts it). Unbound pods wait in `pending`, in creation order.

Components do not poll: they subscribe a `WorldObserver` and hear about every change, the way
controllers watch the real API server through informers. Every change goes through a method here,
so the snapshot, the owner index and the observers never disagree.
"""

from __future__ import annotations

from collections.abc import Iterator

from kubetide.model import ConfigMap, Node, Pod, PodDisruptionBudget, PriorityClass, Workload
from kubetide.model.node import HOSTNAME_LABEL
from kubetide.sim.runtime.evolve import evolve
from kubetide.snapshot import ClusterSnapshot


class WorldObserver:
    """Hears about changes. Override only what you need: only overridden methods are called."""

    def pod_added(self, pod: Pod) -> None:
        """A pod was created (pending, or already bound when it carries a nodeName)."""

    def pod_bound(self, pod: Pod) -> None:
        """A pending pod was bound to `pod.node_name`."""

    def pod_updated(self, old: Pod, new: Pod) -> None:
        """Status or metadata changed (phase, readiness, deletionTimestamp, PodScheduled)."""

    def pod_removed(self, pod: Pod) -> None:
        """The pod object is gone from the API server."""

    def node_added(self, node: Node) -> None: ...

    def node_updated(self, old: Node, new: Node) -> None: ...

    def node_removed(self, node: Node) -> None:
        """The node object is gone (its pods were removed just before, each with pod_removed)."""


_HOOKS = (
    "pod_added",
    "pod_bound",
    "pod_updated",
    "pod_removed",
    "node_added",
    "node_updated",
    "node_removed",
)


def _active(pod: Pod) -> bool:
    return pod.meta.deletion_timestamp is None and pod.phase not in ("Succeeded", "Failed")


def _ready_active(pod: Pod) -> bool:
    return pod.ready and _active(pod)


class World:
    def __init__(self) -> None:
        self.snapshot = ClusterSnapshot()
        self.pending: dict[str, Pod] = {}
        self.owned: dict[str, dict[str, Pod]] = {}  # controller UID -> its live pods, by UID
        # controller UID -> how many of its pods are active (neither terminating nor finished),
        # what replica counts compare against
        self.active: dict[str, int] = {}
        # controller UID -> how many of its active pods are Ready: a Deployment's ready and
        # (without minReadySeconds) available counts, without a pass over its pods per sync
        self.ready: dict[str, int] = {}
        self.workloads: dict[str, Workload] = {}  # "Kind/namespace/name"
        self.pdbs: dict[str, PodDisruptionBudget] = {}  # "namespace/name"
        self.configmaps: dict[tuple[str, str], ConfigMap] = {}
        self.autoscaler_status = None  # the latest status document the autoscaler wrote
        self.priority_classes: dict[str, PriorityClass] = {}
        self._hooks: dict[str, list] = {name: [] for name in _HOOKS}
        self._uids = 0

    # -- observers ---------------------------------------------------------------------------
    def subscribe(self, observer: WorldObserver) -> None:
        for name in _HOOKS:
            if getattr(type(observer), name) is not getattr(WorldObserver, name):
                self._hooks[name].append(getattr(observer, name))

    # -- identity ----------------------------------------------------------------------------
    def new_uid(self) -> str:
        """A UUID-shaped UID that depends only on how many objects were created before."""
        self._uids += 1
        n = self._uids
        return f"{n >> 16 & 0xFFFFFFFF:08x}-{n & 0xFFFF:04x}-4000-8000-{n:012x}"

    # -- reading -----------------------------------------------------------------------------
    def pod(self, uid: str) -> Pod | None:
        pod = self.pending.get(uid)
        if pod is not None:
            return pod
        snapshot = self.snapshot
        return snapshot.pod(uid) if snapshot.has_pod(uid) else None

    def pods(self) -> Iterator[Pod]:
        yield from self.snapshot.pods()
        yield from self.pending.values()

    def pods_of(self, controller_uid: str) -> list[Pod]:
        owned = self.owned.get(controller_uid)
        return list(owned.values()) if owned else []

    def owners(self, pod: Pod) -> list[tuple[str, str]]:
        """(kind, name) of the pod's controller and of that controller's own controller (a
        ReplicaSet's Deployment): the keys a workload's usage profile may be given under."""
        ref = pod.meta.controller
        if ref is None:
            return []
        owners = [(ref.kind, ref.name)]
        workload = self.workloads.get(f"{ref.kind}/{pod.namespace}/{ref.name}")
        parent = workload.meta.controller if workload is not None else None
        if parent is not None:
            owners.append((parent.kind, parent.name))
        return owners

    def node(self, name: str) -> Node | None:
        return self.snapshot.node(name) if name in self.snapshot else None

    def nodes(self) -> Iterator[Node]:
        return self.snapshot.nodes()

    # -- pods --------------------------------------------------------------------------------
    def add_pod(self, pod: Pod) -> None:
        ref = pod.meta.controller
        if ref is not None:
            self.owned.setdefault(ref.uid, {})[pod.uid] = pod
            if _active(pod):
                self.active[ref.uid] = self.active.get(ref.uid, 0) + 1
            if _ready_active(pod):
                self.ready[ref.uid] = self.ready.get(ref.uid, 0) + 1
        if pod.node_name:
            self.snapshot.add_pod(pod, pod.node_name)
        else:
            self.pending[pod.uid] = pod
        for hook in self._hooks["pod_added"]:
            hook(pod)

    def bind(self, pod: Pod, node_name: str, now: float) -> Pod:
        """Bind a pending pod (the scheduler's Binding call). Returns the bound pod."""
        del self.pending[pod.uid]
        bound = evolve(
            pod, node_name=node_name, scheduled_status="True", scheduled_reason="", scheduled_transition=now
        )
        self.snapshot.add_pod(bound, node_name)
        self._own(bound)
        for hook in self._hooks["pod_bound"]:
            hook(bound)
        return bound

    def adopt_binding(self, pod: Pod, node_name: str, now: float) -> Pod:
        """Record a binding the scheduling code already made in the snapshot (with `pod` as given)."""
        del self.pending[pod.uid]
        bound = evolve(
            pod, node_name=node_name, scheduled_status="True", scheduled_reason="", scheduled_transition=now
        )
        self.snapshot.update_pod(bound)
        self._own(bound)
        for hook in self._hooks["pod_bound"]:
            hook(bound)
        return bound

    def update_pod(self, new: Pod) -> None:
        uid = new.uid
        old = self.pending.get(uid)
        if old is not None:
            self.pending[uid] = new
        else:
            old = self.snapshot.pod(uid)
            self.snapshot.update_pod(new)
        self._own(new)
        ref = new.meta.controller
        if ref is not None:
            was, now = _active(old), _active(new)
            if was != now:
                self.active[ref.uid] = self.active.get(ref.uid, 0) + (1 if now else -1)
            was, now = _ready_active(old), _ready_active(new)
            if was != now:
                self.ready[ref.uid] = self.ready.get(ref.uid, 0) + (1 if now else -1)
        for hook in self._hooks["pod_updated"]:
            hook(old, new)

    def remove_pod(self, uid: str) -> Pod | None:
        pod = self.pending.pop(uid, None)
        if pod is None:
            if not self.snapshot.has_pod(uid):
                return None
            pod = self.snapshot.remove_pod(uid)
        ref = pod.meta.controller
        if ref is not None:
            owned = self.owned.get(ref.uid)
            if owned is not None:
                owned.pop(uid, None)
                if not owned:
                    del self.owned[ref.uid]
            if _active(pod):
                self.active[ref.uid] -= 1
            if _ready_active(pod):
                self.ready[ref.uid] -= 1
        for hook in self._hooks["pod_removed"]:
            hook(pod)
        return pod

    def _own(self, pod: Pod) -> None:
        ref = pod.meta.controller
        if ref is not None:
            owned = self.owned.get(ref.uid)
            if owned is not None and pod.uid in owned:
                owned[pod.uid] = pod

    # -- nodes -------------------------------------------------------------------------------
    def add_node(self, node: Node) -> None:
        if HOSTNAME_LABEL not in node.labels:
            node.labels[HOSTNAME_LABEL] = node.name
        self.snapshot.add_node(node)
        for hook in self._hooks["node_added"]:
            hook(node)

    def update_node(self, new: Node) -> None:
        old = self.snapshot.node(new.name)
        self.snapshot.replace_node(new)
        for hook in self._hooks["node_updated"]:
            hook(old, new)

    def remove_node(self, name: str) -> list[Pod]:
        """Remove a node and (as pod GC does) every pod still bound to it. Returns those pods."""
        if name not in self.snapshot:
            return []
        node = self.snapshot.node(name)
        pods = list(self.snapshot.pods_on(name).values())
        for pod in pods:
            self.remove_pod(pod.uid)
        self.snapshot.remove_node(name)
        for hook in self._hooks["node_removed"]:
            hook(node)
        return pods
