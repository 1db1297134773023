"""Small builders for the QoS tests: pods parsed from real manifests, node states, configs."""

from __future__ import annotations

import textwrap

import yaml

import kubetide.qos  # noqa: F401  (registers the kinds)
from kubetide.model import Node, Pod, Taint, load_documents
from kubetide.qos import NodeState, PodState, QosConfig

GI = 2**30


def pod(
    name: str,
    *,
    ns: str = "default",
    priority: int = 0,
    cpu: str | None = None,
    cpu_limit: str | None = None,
    memory: str | None = None,
    memory_limit: str | None = None,
    start: str | None = "2024-01-01T00:00:00Z",
    owner: str | None = "ReplicaSet",  # None: a bare pod (never evicted without a PodQOS)
    ext_cpu: int | None = None,
    annotations: dict | None = None,
    deleting: bool = False,
) -> Pod:
    requests, limits = {}, {}
    if cpu is not None:
        requests["cpu"] = cpu
    if cpu_limit is not None:
        limits["cpu"] = cpu_limit
    if memory is not None:
        requests["memory"] = memory
    if memory_limit is not None:
        limits["memory"] = memory_limit
    if ext_cpu is not None:
        requests["gocrane.io/cpu"] = ext_cpu
        limits["gocrane.io/cpu"] = ext_cpu
    meta: dict = {"name": name, "namespace": ns}
    if owner:
        meta["ownerReferences"] = [{"kind": owner, "name": f"{name}-owner", "controller": True}]
    if annotations:
        meta["annotations"] = annotations
    if deleting:
        meta["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    doc = {
        "kind": "Pod",
        "metadata": meta,
        "spec": {
            "nodeName": "n1",
            "priority": priority,
            "containers": [{"name": "c", "resources": {"requests": requests, "limits": limits}}],
        },
        "status": {"phase": "Running", **({"startTime": start} if start else {})},
    }
    return load_documents([doc], "test.yaml").pods[0]


def node_doc(cpu: str = "4", memory: str = "16Gi", labels: dict | None = None, taints=()) -> dict:
    return {
        "kind": "Node",
        "metadata": {"name": "n1", "labels": labels or {}},
        "spec": {"taints": list(taints)},
        "status": {"capacity": {"cpu": cpu, "memory": memory, "pods": "110"}},
    }


def node(cpu: str = "4", memory: str = "16Gi", labels: dict | None = None, taints=()):
    return load_documents([node_doc(cpu, memory, labels, taints)], "test.yaml").nodes[0]


def ps(p: Pod, cpu: int | None = 0, memory: int = 0, quota: int | None = None) -> PodState:
    """A pod with usage (cpu millicores, memory bytes); cpu=None means no metrics at all."""
    usage = None if cpu is None else {"cpu": cpu, "memory": memory}
    return PodState(p, usage, quota)


def state(
    *pods: PodState, cpu: str = "4", memory: str = "16Gi", usage: dict | None = None, labels=None, taints=()
):
    return NodeState(node(cpu, memory, labels, taints), tuple(pods), usage)


def config(text: str, registry=None) -> QosConfig:
    docs = [d for d in yaml.safe_load_all(textwrap.dedent(text)) if d is not None]
    manifests = load_documents(docs, "nodeqos.yaml")
    if registry is None:
        return QosConfig.from_manifests(manifests)
    return QosConfig.from_manifests(manifests, registry)


def rules(*rules: str, actions: str = "") -> QosConfig:
    """A NodeQOS with the given rule lines (flow-style YAML) and the standard actions."""
    body = "\n".join(f"  - {r}" for r in rules)
    return config(
        f"""
kind: NodeQOS
metadata: {{name: q}}
spec:
  rules:
{body}
---
kind: AvoidanceAction
metadata: {{name: evict}}
spec: {{coolDownSeconds: 300, eviction: {{terminationGracePeriodSeconds: 5}}}}
---
kind: AvoidanceAction
metadata: {{name: throttle}}
spec: {{coolDownSeconds: 60, throttle: {{cpuThrottle: {{minCPURatio: 10, stepCPURatio: 20}}}}}}
---
kind: AvoidanceAction
metadata: {{name: both}}
spec: {{coolDownSeconds: 0, eviction: {{}}, throttle: {{cpuThrottle: {{stepCPURatio: 50}}}}}}
{actions}
"""
    )


class Recorder:
    """A QosActuator that remembers what it was asked; evictions of `refuse` are refused."""

    def __init__(self, refuse: tuple[str, ...] = ()):
        self.calls: list[tuple] = []
        self.refuse = set(refuse)

    def throttle(self, pod: Pod, quota_millicores: int) -> None:
        self.calls.append(("throttle", pod.key, quota_millicores))

    def restore(self, pod: Pod, quota_millicores: int | None) -> None:
        self.calls.append(("restore", pod.key, quota_millicores))

    def evict(self, pod: Pod, grace_seconds: int) -> bool:
        self.calls.append(("evict", pod.key, grace_seconds))
        return pod.key not in self.refuse

    def taint_node(self, node: Node, taint: Taint) -> None:
        self.calls.append(("taint", node.name, f"{taint.key}:{taint.effect}"))

    def untaint_node(self, node: Node, taint: Taint) -> None:
        self.calls.append(("untaint", node.name, f"{taint.key}:{taint.effect}"))
