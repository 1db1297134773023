"""ClusterView over a live API server: one ClusterSnapshot kept current from watch events.

Informer threads put changes on a queue; `sync()` applies them in the loop's thread, between
loops, so the autoscaler always sees a snapshot that does not move while it runs, and a loop
costs the changes since the last one, never a rebuild of the cluster.

What goes where, as the Cluster Autoscaler's listers split it:
- a pod bound to a node (spec.nodeName) and not finished (phase neither Succeeded nor Failed)
  is in the snapshot on that node; terminating pods stay there until they are gone, since they
  still hold their node's resources;
- a pod not bound and not finished is pending;
- a bound pod whose node the cache has not seen yet waits, and joins the node when it arrives.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence

from kubetide.kube.client import KubeClient
from kubetide.kube.informer import ADDED, DELETED, Change, InformerGroup
from kubetide.kube.resources import (
    NAMESPACES,
    NODES,
    PDBS,
    PODS,
    PRIORITY_CLASSES,
    WORKLOADS,
    Resource,
    configmaps_in,
)
from kubetide.model import ConfigMap, Node, Pod, PodDisruptionBudget, PriorityClass, Workload
from kubetide.snapshot import ClusterSnapshot


class KubeClusterView:
    """The autoscaler's ClusterView, fed by informers. Call `start()`, `wait_for_sync()`, then
    `sync()` before each loop."""

    def __init__(self, client: KubeClient, *, namespace: str = "kube-system"):
        self.client = client
        # Set by an informer thread when a pod newly becomes unschedulable: the run loop wakes
        # early for it, as the Cluster Autoscaler does for new pending pods.
        self.new_unschedulable = threading.Event()
        resources: list[Resource] = [
            NODES,
            PODS,
            PDBS,
            PRIORITY_CLASSES,
            NAMESPACES,
            *WORKLOADS,
            configmaps_in(namespace),
        ]
        self.informers = InformerGroup()
        for resource in resources:
            self.informers.add(client, resource, on_change=self._watch_pending if resource is PODS else None)
        self._snapshot = ClusterSnapshot()
        self._pods: dict[str, Pod] = {}  # uid -> pod, bound or pending
        self._pending: dict[str, Pod] = {}  # uid -> pod without a node
        self._waiting: dict[str, dict[str, Pod]] = {}  # node name -> bound pods seen before the node
        self._uid_of: dict[str, str] = {}  # pod namespace/name -> uid
        self._pdbs: dict[str, PodDisruptionBudget] = {}
        self._workloads: dict[tuple[str, str], Workload] = {}
        self._configmaps: dict[str, ConfigMap] = {}
        self._priority_classes: dict[str, PriorityClass] = {}
        self.namespace_labels: dict[str, dict[str, str]] = {}
        self.changes_applied = 0

    # -- lifecycle -----------------------------------------------------------------------------
    def start(self) -> None:
        self.informers.start()

    def wait_for_sync(self, timeout: float) -> list[str]:
        """Wait for every informer's first list and apply it; the resources not listed in time
        (with the last error each saw), empty when all are in."""
        missing = self.informers.wait_for_sync(timeout)
        self.sync()
        return missing

    def stop(self) -> None:
        self.informers.stop()

    # -- applying changes ------------------------------------------------------------------------
    def sync(self) -> int:
        """Apply every change queued since the last call; how many there were."""
        count = 0
        # A run of pod deletions (a load drop, a namespace deleted) is taken off the snapshot
        # node by node when the run ends: one index update per node, not one per pod. The run
        # ends before any other change, so every change still sees the ones before it applied.
        removals: dict[str, list[str]] = {}
        for change in self.informers.changes():
            count += 1
            if removals and not (change.kind == "Pod" and change.type == DELETED):
                self._remove_from_nodes(removals)
            self._apply(change, removals)
        if removals:
            self._remove_from_nodes(removals)
        self.changes_applied += count
        return count

    def _remove_from_nodes(self, removals: dict[str, list[str]]) -> None:
        for node_name, uids in removals.items():
            self._snapshot.remove_pods(node_name, uids)
        removals.clear()

    def _apply(self, change: Change, removals: dict[str, list[str]]) -> None:
        kind, obj = change.kind, change.obj
        gone = change.type == DELETED
        if kind == "Pod":
            self._remove_pod(obj, removals) if gone else self._put_pod(obj)
        elif kind == "Node":
            self._remove_node(obj.name) if gone else self._put_node(obj)
        elif kind == "PodDisruptionBudget":
            self._store(self._pdbs, change.key, obj, gone)
        elif kind == "ConfigMap":
            self._store(self._configmaps, change.key, obj, gone)
        elif kind == "PriorityClass":
            self._store(self._priority_classes, change.key, obj, gone)
        elif kind == "Namespace":
            self._store(self.namespace_labels, change.key, obj.labels, gone)
        else:
            self._store(self._workloads, (kind, change.key), obj, gone)

    @staticmethod
    def _store(table: dict, key: object, value: object, gone: bool) -> None:
        if gone:
            table.pop(key, None)
        else:
            table[key] = value

    def _put_node(self, node: Node) -> None:
        snapshot = self._snapshot
        if node.name in snapshot:
            if snapshot.node(node.name) != node:
                snapshot.replace_node(node)
            return
        snapshot.add_node(node)
        for pod in self._waiting.pop(node.name, {}).values():
            snapshot.add_pod(pod, node.name)

    def _remove_node(self, name: str) -> None:
        if name not in self._snapshot:
            return
        # Pods still bound to a deleted node are gone with it for scheduling purposes; they wait
        # (the pod garbage collector deletes them) in case a node of that name comes back.
        waiting = self._waiting.setdefault(name, {})
        for uid in list(self._snapshot.pods_on(name)):
            waiting[uid] = self._snapshot.pod(uid)
        self._snapshot.remove_node(name)

    def _put_pod(self, pod: Pod) -> None:
        old = self._pods.get(pod.uid)
        if old is not None:
            if old == pod:
                return  # only fields kubetide does not read changed (managedFields, heartbeats)
            if old.node_name and old.node_name == pod.node_name and not pod.is_terminal:
                if self._snapshot.has_pod(pod.uid):
                    self._snapshot.update_pod(pod)
                else:
                    self._waiting[pod.node_name][pod.uid] = pod
                self._pods[pod.uid] = pod
                return
            self._unplace(old)
        previous_uid = self._uid_of.get(pod.key)
        if previous_uid is not None and previous_uid != pod.uid:
            # A pod recreated under the same name before its predecessor's delete arrived.
            stale = self._pods.pop(previous_uid, None)
            if stale is not None:
                self._unplace(stale)
        if pod.is_terminal:
            self._pods.pop(pod.uid, None)
            self._uid_of.pop(pod.key, None)
            return
        self._pods[pod.uid] = pod
        self._uid_of[pod.key] = pod.uid
        if not pod.node_name:
            self._pending[pod.uid] = pod
        elif pod.node_name in self._snapshot:
            self._snapshot.add_pod(pod, pod.node_name)
        else:
            self._waiting.setdefault(pod.node_name, {})[pod.uid] = pod

    def _remove_pod(self, pod: Pod, removals: dict[str, list[str]]) -> None:
        uid, key = pod.uid, pod.key
        known = self._pods.pop(uid, None)
        if known is not None:
            self._unplace(known, removals)
        if self._uid_of.get(key) == uid:
            del self._uid_of[key]

    def _unplace(self, pod: Pod, removals: dict[str, list[str]] | None = None) -> None:
        """Take a known pod out of the view; a bound one is left in `removals` under its node,
        when given, for the caller to take off the snapshot with the others."""
        if not pod.node_name:
            self._pending.pop(pod.uid, None)
        elif self._snapshot.has_pod(pod.uid):
            if removals is None:
                self._snapshot.remove_pod(pod.uid)
            else:
                removals.setdefault(pod.node_name, []).append(pod.uid)
        else:
            waiting = self._waiting.get(pod.node_name)
            if waiting is not None:
                waiting.pop(pod.uid, None)
                if not waiting:
                    del self._waiting[pod.node_name]

    def _watch_pending(self, change: Change) -> None:
        """Informer thread: wake the loop when a pod becomes unschedulable."""
        if change.type != DELETED and change.obj.is_unschedulable:
            previous = self._pods.get(change.obj.uid)  # read-only peek; a race only wakes early
            if change.type == ADDED or previous is None or not previous.is_unschedulable:
                self.new_unschedulable.set()

    # -- ClusterView -----------------------------------------------------------------------------
    def snapshot(self) -> ClusterSnapshot:
        return self._snapshot

    def pending_pods(self) -> Sequence[Pod]:
        return list(self._pending.values())

    def refresh(self) -> None:
        self.sync()

    def pdbs(self) -> Sequence[PodDisruptionBudget]:
        return list(self._pdbs.values())

    def workloads(self) -> Sequence[Workload]:
        return list(self._workloads.values())

    def configmap(self, namespace: str, name: str) -> ConfigMap | None:
        return self._configmaps.get(f"{namespace}/{name}")

    def priority_classes(self) -> Iterable[PriorityClass]:
        return self._priority_classes.values()

    def pod_count(self) -> int:
        return len(self._pods)
