"""The API resources kubetide watches, and how each becomes a kubetide model object.

API objects are parsed by the same parsers that read `kubectl get -o yaml` dumps, straight from
the API server's JSON: one object model for files, the simulator and real clusters.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kubetide.model.loader import PARSERS
from kubetide.model.reader import Reader
from kubetide.model.workloads import parse_workload


@dataclass(frozen=True, slots=True)
class Resource:
    kind: str
    group_version: str  # "v1" for the core group, else "apps/v1", ...
    plural: str
    namespaced: bool
    namespace: str = ""  # watch one namespace only (the autoscaler's ConfigMaps)

    @property
    def list_path(self) -> str:
        base = "/api/v1" if self.group_version == "v1" else f"/apis/{self.group_version}"
        if self.namespace:
            return f"{base}/namespaces/{self.namespace}/{self.plural}"
        return f"{base}/{self.plural}"

    def object_path(self, namespace: str, name: str) -> str:
        base = "/api/v1" if self.group_version == "v1" else f"/apis/{self.group_version}"
        if self.namespaced:
            return f"{base}/namespaces/{namespace}/{self.plural}/{name}"
        return f"{base}/{self.plural}/{name}"


NODES = Resource("Node", "v1", "nodes", namespaced=False)
PODS = Resource("Pod", "v1", "pods", namespaced=True)
PDBS = Resource("PodDisruptionBudget", "policy/v1", "poddisruptionbudgets", namespaced=True)
PRIORITY_CLASSES = Resource("PriorityClass", "scheduling.k8s.io/v1", "priorityclasses", namespaced=False)
WORKLOADS = (
    Resource("Deployment", "apps/v1", "deployments", namespaced=True),
    Resource("ReplicaSet", "apps/v1", "replicasets", namespaced=True),
    Resource("StatefulSet", "apps/v1", "statefulsets", namespaced=True),
    Resource("DaemonSet", "apps/v1", "daemonsets", namespaced=True),
    Resource("Job", "batch/v1", "jobs", namespaced=True),
    Resource("ReplicationController", "v1", "replicationcontrollers", namespaced=True),
)
NAMESPACES = Resource("Namespace", "v1", "namespaces", namespaced=False)
HPAS = Resource("HorizontalPodAutoscaler", "autoscaling/v2", "horizontalpodautoscalers", namespaced=True)
CRONJOBS = Resource("CronJob", "batch/v1", "cronjobs", namespaced=True)


def configmaps_in(namespace: str) -> Resource:
    return Resource("ConfigMap", "v1", "configmaps", namespaced=True, namespace=namespace)


def object_key(obj: dict) -> str:
    meta = obj.get("metadata") or {}
    namespace = meta.get("namespace") or ""
    return f"{namespace}/{meta.get('name', '')}" if namespace else str(meta.get("name", ""))


def parser_for(kind: str, source: str) -> Callable[[dict], Any]:
    """raw API object -> model object; a ManifestError names the object and field."""
    if kind == "ReplicationController":
        return lambda obj: _parse_replication_controller(obj, source)
    parse = PARSERS[kind]

    def parse_object(obj: dict) -> Any:
        return parse(Reader({"kind": kind, **obj}, source, f"{kind} {object_key(obj)}"))

    return parse_object


def _parse_replication_controller(obj: dict, source: str) -> Any:
    # A ReplicationController is a ReplicaSet with an equality-only selector written as a plain
    # map; the model has one Workload shape for both, so read it as one and keep its kind.
    spec = dict(obj.get("spec") or {})
    selector = spec.get("selector")
    if isinstance(selector, dict) and "matchLabels" not in selector:
        spec["selector"] = {"matchLabels": selector}
    reader = Reader({**obj, "spec": spec}, source, f"ReplicationController {object_key(obj)}")
    return dataclasses.replace(parse_workload(reader, "ReplicaSet"), kind="ReplicationController")
