"""What the agent watches: its own Node, the pods bound to it, and crane's NodeQOS,
AvoidanceAction and PodQOS objects (ensurance.crane.io/v1alpha1, cluster-scoped).

Each is a kube/informer.py Informer (list, then watch from the list's resourceVersion; re-list
on 410 Gone; unreadable objects skipped with a warning). The Node and the pods are narrowed by a
field selector (metadata.name, spec.nodeName), so a node's agent never lists the cluster's pods:
the client below adds the selector to every list and watch the informer makes.
"""

from __future__ import annotations

import queue
import time
from collections.abc import Callable, Iterator
from typing import Any

import urllib3

from kubetide.kube.client import KubeClient
from kubetide.kube.informer import DELETED, Change, Informer
from kubetide.kube.resources import NODES, PODS, Resource
from kubetide.qos.manifest import API_VERSION

NODEQOS = Resource("NodeQOS", API_VERSION, "nodeqoss", namespaced=False)
AVOIDANCE_ACTIONS = Resource("AvoidanceAction", API_VERSION, "avoidanceactions", namespaced=False)
PODQOS = Resource("PodQOS", API_VERSION, "podqoss", namespaced=False)
CRANE_RESOURCES = (NODEQOS, AVOIDANCE_ACTIONS, PODQOS)


class FieldSelectedClient(KubeClient):
    """The same connection, with a field selector on every list and watch."""

    def __init__(self, client: KubeClient, field_selector: str):
        self.__dict__.update(client.__dict__)  # share the pool, limiter and credentials
        self.field_selector = field_selector

    def list_pages(self, path: str, *, page_size: int = 500) -> Iterator[dict]:
        query = {"limit": str(page_size), "fieldSelector": self.field_selector}
        while True:
            page = self.request("GET", path, query=query)
            yield page
            token = (page.get("metadata") or {}).get("continue")
            if not token:
                return
            query = {**query, "continue": token}

    def watch(
        self,
        path: str,
        *,
        query: dict[str, str],
        on_open: Callable[[urllib3.BaseHTTPResponse], None] | None = None,
    ) -> Iterator[dict]:
        return super().watch(path, query={**query, "fieldSelector": self.field_selector}, on_open=on_open)


class NodeWatch:
    """Caches of everything the agent reads, updated from the informers' changes by `refresh`
    (called at the start of each sample, in the agent's thread)."""

    def __init__(self, client: KubeClient, node_name: str):
        self.node_name = node_name
        self.changes: queue.SimpleQueue[Change] = queue.SimpleQueue()
        self.objects: dict[str, dict[str, Any]] = {}  # kind -> key -> model object
        self.generation = 0  # bumps whenever a crane object changes (the config is rebuilt)
        node_client = FieldSelectedClient(client, f"metadata.name={node_name}")
        pod_client = FieldSelectedClient(client, f"spec.nodeName={node_name}")
        self.informers = [
            Informer(node_client, NODES, self.changes),
            Informer(pod_client, PODS, self.changes),
            *(Informer(client, r, self.changes) for r in CRANE_RESOURCES),
        ]

    def start(self, timeout: float) -> list[str]:
        """Start the informers and wait up to `timeout` seconds for their first lists; returns the
        resources that did not sync, with the last error of each."""
        for informer in self.informers:
            informer.start()
        deadline = time.monotonic() + timeout
        for informer in self.informers:
            informer.synced.wait(max(0.0, deadline - time.monotonic()))
        return [
            f"{i.resource.plural}: {i.last_error or 'no answer'}"
            for i in self.informers
            if not i.synced.is_set()
        ]

    def stop(self) -> None:
        for informer in self.informers:
            informer.stop()

    def refresh(self) -> None:
        while True:
            try:
                change = self.changes.get_nowait()
            except queue.Empty:
                return
            by_key = self.objects.setdefault(change.kind, {})
            if change.type == DELETED:
                by_key.pop(change.key, None)
            else:
                by_key[change.key] = change.obj
            if change.kind in {r.kind for r in CRANE_RESOURCES}:
                self.generation += 1

    def of(self, kind: str) -> list[Any]:
        return list(self.objects.get(kind, {}).values())
