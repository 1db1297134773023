"""Builders for scheduling tests: nodes and pods from short YAML snippets."""

from __future__ import annotations

import itertools
import textwrap

import yaml

from kubetide.model import Manifests, Node, Pod, load_documents
from kubetide.scheduling import PredicateChecker
from kubetide.snapshot import ClusterSnapshot

_seq = itertools.count()


def load(text: str) -> Manifests:
    docs = [d for d in yaml.safe_load_all(textwrap.dedent(text)) if d is not None]
    return load_documents(docs, "test.yaml")


def node(
    name: str,
    cpu: str = "4",
    memory: str = "8Gi",
    pods: int = 110,
    labels: dict | None = None,
    taints: list | None = None,
    unschedulable: bool = False,
    **extra: str,
) -> Node:
    doc = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels or {}},
        "spec": {"taints": taints or [], "unschedulable": unschedulable},
        "status": {"allocatable": {"cpu": cpu, "memory": memory, "pods": str(pods), **extra}},
    }
    return load_documents([doc], "test.yaml").nodes[0]


def pod(
    name: str | None = None,
    cpu: str | None = "100m",
    memory: str | None = None,
    namespace: str = "default",
    labels: dict | None = None,
    spec: str | dict | None = None,
    requests: dict | None = None,
    ports: list | None = None,
    priority: int | None = None,
    created: str | None = None,
    deleting: bool = False,
) -> Pod:
    """A pod; `spec` (YAML text or dict) is merged into spec (containers excepted)."""
    name = name or f"pod-{next(_seq)}"
    req = dict(requests or {})
    if cpu is not None:
        req.setdefault("cpu", cpu)
    if memory is not None:
        req.setdefault("memory", memory)
    container = {"name": "c", "resources": {"requests": req}}
    if ports:
        container["ports"] = ports
    body = {"containers": [container]}
    if isinstance(spec, str):
        spec = yaml.safe_load(textwrap.dedent(spec))
    body.update(spec or {})
    if priority is not None:
        body["priority"] = priority
    meta = {"name": name, "namespace": namespace, "labels": labels or {}}
    if created:
        meta["creationTimestamp"] = created
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    doc = {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": body}
    return load_documents([doc], "test.yaml").pods[0]


def cluster(nodes, bound=(), namespaces=None) -> tuple[ClusterSnapshot, PredicateChecker]:
    """A snapshot with `bound` = [(pod, node name)] and a checker on it."""
    snapshot = ClusterSnapshot(nodes)
    for p, n in bound:
        snapshot.add_pod(p, n)
    return snapshot, PredicateChecker(snapshot, namespaces)


def zones(count_per_zone: int = 1, zone_names=("a", "b", "c"), **kw) -> list[Node]:
    """Nodes n-<zone>-<i> labelled with topology.kubernetes.io/zone and hostname."""
    result = []
    for z in zone_names:
        for i in range(count_per_zone):
            name = f"n-{z}-{i}"
            labels = {"topology.kubernetes.io/zone": z, "kubernetes.io/hostname": name}
            result.append(node(name, labels=labels, **kw))
    return result


def feasible(checker: PredicateChecker, p: Pod) -> list[str]:
    return [n.name for n in checker.snapshot.nodes() if checker.fits(p, n.name) is None]


def reason(checker: PredicateChecker, p: Pod, node_name: str) -> str | None:
    unfit = checker.fits(p, node_name)
    return None if unfit is None else unfit.reason
