"""What the agent watches: its own Node, the pods bound to it, and crane's NodeQOS,
AvoidanceAction and PodQOS objects (ensurance.crane.io/v1alpha1, cluster-scoped).

Each is a kube/informer.py Informer (list, then watch from the list's resourceVersion; re-list
on 410 Gone; unreadable objects skipped with a warning). The Node and the pods are narrowed by a
field selector (metadata.name, spec.nodeName), so a node's agent never lists the cluster's pods:
the informers add the selector to every list and watch.
"""

from __future__ import annotations

from typing import Any

from kubetide.kube.client import KubeClient
from kubetide.kube.informer import DELETED, InformerGroup
from kubetide.kube.resources import NODES, PODS, Resource
from kubetide.qos.manifest import API_VERSION

NODEQOS = Resource("NodeQOS", API_VERSION, "nodeqoss", namespaced=False)
AVOIDANCE_ACTIONS = Resource("AvoidanceAction", API_VERSION, "avoidanceactions", namespaced=False)
PODQOS = Resource("PodQOS", API_VERSION, "podqoss", namespaced=False)
CRANE_RESOURCES = (NODEQOS, AVOIDANCE_ACTIONS, PODQOS)


class NodeWatch:
    """Caches of everything the agent reads, updated from the informers' changes by `refresh`
    (called at the start of each sample, in the agent's thread)."""

    def __init__(self, client: KubeClient, node_name: str):
        self.node_name = node_name
        self.objects: dict[str, dict[str, Any]] = {}  # kind -> key -> model object
        self.generation = 0  # bumps whenever a crane object changes (the config is rebuilt)
        self.group = InformerGroup()
        self.group.add(client, NODES, field_selector=f"metadata.name={node_name}")
        self.group.add(client, PODS, field_selector=f"spec.nodeName={node_name}")
        for resource in CRANE_RESOURCES:
            self.group.add(client, resource)

    def start(self, timeout: float) -> list[str]:
        """Start the informers and wait up to `timeout` seconds for their first lists; returns the
        resources that did not sync, with the last error of each."""
        self.group.start()
        return self.group.wait_for_sync(timeout)

    def stop(self) -> None:
        self.group.stop()

    def refresh(self) -> None:
        for change in self.group.changes():
            by_key = self.objects.setdefault(change.kind, {})
            if change.type == DELETED:
                by_key.pop(change.key, None)
            else:
                by_key[change.key] = change.obj
            if change.kind in {r.kind for r in CRANE_RESOURCES}:
                self.generation += 1

    def of(self, kind: str) -> list[Any]:
        return list(self.objects.get(kind, {}).values())
