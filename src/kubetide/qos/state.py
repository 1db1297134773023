"""What the agent sees of one node at one instant: the node, its pods, their usage and throttling.

The decision core is pure: it takes a `NodeState` and never asks anything else. The simulator
builds one per node every collect interval from its usage profiles; `kubetide qos` builds one from
a node-state file with metrics-server objects (`metrics.k8s.io/v1beta1` PodMetrics/NodeMetrics,
parsed here); a real node agent would build it from the kubelet and the cgroups.

Usage is in exact integers like everything else: cpu in millicores, memory in bytes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from kubetide.model import Node, Pod
from kubetide.model.meta import parse_meta
from kubetide.model.quantity import CPU, MEMORY
from kubetide.model.reader import Reader
from kubetide.qos.manifest import required_str

METRICS_API = "metrics.k8s.io/v1beta1"
# Pods at or above system-cluster-critical are never throttled, restored or evicted.
CRITICAL_PRIORITY = 2_000_000_000


@dataclass(frozen=True, slots=True)
class PodState:
    """One pod on the node.

    `usage` is None when the pod has no metrics (the agent then cannot quantify what acting on it
    releases). `cpu_quota` is the CFS quota the agent has set on the pod, in millicores, or None
    when the pod is not throttled (its own limit, if any, applies). Quotas are per pod: a real
    agent splits one across the containers in proportion to their limits.
    """

    pod: Pod
    usage: Mapping[str, int] | None = None
    cpu_quota: int | None = None

    @property
    def key(self) -> str:
        return self.pod.key

    def used(self, resource: str) -> int | None:
        """The pod's usage of one resource, None when unknown."""
        if self.usage is None:
            return None
        return self.usage.get(resource, 0)

    @property
    def critical(self) -> bool:
        return self.pod.priority >= CRITICAL_PRIORITY


POD_SUM = "sum of its pods"  # the node's usage when nothing measured the node itself


@dataclass(frozen=True, slots=True)
class NodeState:
    """One node at one instant.

    `usage` is the node's own measurement, which includes what runs outside pods (the kubelet,
    the container runtime, system daemons): /proc on the node, the kubelet's summary API or
    NodeMetrics, named by `usage_source`. When it is None, or lacks a resource, the node's usage
    of that resource falls back to the sum of its pods' known usage, which misses all of that
    (a node using 3800m whose pods sum to 2500m); `source_of` says which it was, so reports
    can say so.
    """

    node: Node
    pods: Sequence[PodState] = ()
    usage: Mapping[str, int] | None = None
    usage_source: str = "the node"  # what measured `usage`: "NodeMetrics", "/proc", ...

    def measured(self, resource: str) -> bool:
        """Whether the node's own measurement covers `resource` (no fallback to its pods)."""
        return self.usage is not None and resource in self.usage

    def source_of(self, resource: str) -> str:
        """Where the node's usage of `resource` comes from: `usage_source`, or POD_SUM."""
        return self.usage_source if self.measured(resource) else POD_SUM

    @property
    def name(self) -> str:
        return self.node.name

    def capacity(self, resource: str) -> int:
        """What utilization percentages are of: the node's capacity (allocatable when absent)."""
        return self.node.capacity.get(resource) or self.node.allocatable.get(resource, 0)

    def used(self, resource: str) -> int | None:
        """The node's usage of one resource; None when nothing measures it."""
        if self.usage is not None and resource in self.usage:
            return self.usage[resource]
        known = [p.usage[resource] for p in self.pods if p.usage is not None and resource in p.usage]
        if not known and not any(p.usage is not None for p in self.pods):
            return None
        return sum(known)


# -- metrics-server objects -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PodMetrics:
    """A metrics-server PodMetrics: per-container usage, summed into the pod's usage."""

    namespace: str
    name: str
    usage: dict[str, int]
    containers: dict[str, dict[str, int]] = field(default_factory=dict)
    timestamp: float | None = None

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True, slots=True)
class NodeMetrics:
    name: str
    usage: dict[str, int]
    timestamp: float | None = None


def _check_api_version(reader: Reader) -> None:
    version = reader.str("apiVersion", default=METRICS_API)
    if version != METRICS_API:
        raise reader.error(f'expected "{METRICS_API}", got "{version}"', "apiVersion")


def parse_pod_metrics(reader: Reader) -> PodMetrics:
    _check_api_version(reader)
    meta = parse_meta(reader, "PodMetrics", namespaced=True)
    total: dict[str, int] = {}
    containers: dict[str, dict[str, int]] = {}
    for container in reader.items("containers"):
        name = required_str(container, "name")
        if name in containers:
            raise container.error(f'duplicate container "{name}"', "name")
        usage = container.resources("usage")
        containers[name] = usage
        for resource, amount in usage.items():
            total[resource] = total.get(resource, 0) + amount
    for resource in (CPU, MEMORY):
        total.setdefault(resource, 0)
    return PodMetrics(meta.namespace, meta.name, total, containers, reader.timestamp("timestamp"))


def parse_node_metrics(reader: Reader) -> NodeMetrics:
    _check_api_version(reader)
    meta = parse_meta(reader, "NodeMetrics", namespaced=False)
    if not reader.has("usage"):
        raise reader.error("required field is missing", "usage")
    return NodeMetrics(meta.name, reader.resources("usage"), reader.timestamp("timestamp"))


def parse_empty_list(reader: Reader) -> tuple[()]:
    """`kind: PodMetricsList` without `items` (the loader flattens lists that have them)."""
    return ()
