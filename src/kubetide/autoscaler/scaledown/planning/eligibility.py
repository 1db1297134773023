"""Which nodes may be considered for removal at all, before any drain is simulated.

Per node (`check`), in the Cluster Autoscaler's order: recently unremovable, being deleted, the
scale-down-disabled annotation, node group membership, utilization (UnexpectedError when it
cannot be computed), unready nodes when scale-down-unready-enabled is off, and the utilization
threshold (which unready nodes must pass too, as in CA). A node exactly at the threshold is
underutilized, as since CA 1.35 (CA 1.30 kept it: `>=` there, `>` now). The limits that depend on which other nodes go too (node group min size minus the
deletions in progress, the cluster's minimum cores and memory) live in `RemovalLimits`, which the
planner consumes as it adds candidates, so a candidate set never takes a group below its minimum.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable
from dataclasses import dataclass

from kubetide.autoscaler.options import AutoscalerOptions
from kubetide.autoscaler.ports import CloudProvider, InstanceState, NodeGroup
from kubetide.autoscaler.scaledown.planning.drainability import is_long_terminating
from kubetide.autoscaler.scaledown.reasons import NodeReason
from kubetide.model import Node, Pod
from kubetide.model.quantity import CPU, MEMORY

SCALE_DOWN_DISABLED_ANNOTATION = "cluster-autoscaler.kubernetes.io/scale-down-disabled"
GIB = 2**30


def is_gpu_resource(name: str) -> bool:
    return name == "nvidia.com/gpu" or name.endswith("/gpu")


def gpu_resource(node: Node) -> str | None:
    """The GPU resource a node offers, if any: GPU nodes are judged by GPU utilization alone."""
    for name, amount in node.allocatable.items():
        if amount > 0 and is_gpu_resource(name):
            return name
    return None


@dataclass(frozen=True, slots=True)
class Utilization:
    cpu: float
    memory: float
    value: float  # what the threshold is compared with: max(cpu, memory), or the GPU's
    resource: str  # which resource gave `value`

    def to_json(self) -> float:
        return round(self.value, 4)


def utilization(
    node: Node,
    pods: Iterable[Pod],
    *,
    ignore_daemonsets: bool = False,
    ignore_mirror: bool = False,
    now: float = 0.0,
) -> Utilization:
    """Requests over allocatable, as CA computes it; raises ValueError when allocatable is zero.

    Pods about to vanish (terminating past their grace period) do not count; DaemonSet and mirror
    pods are left out when the ignore-* flags ask for it.
    """
    gpu = gpu_resource(node)
    wanted = (CPU, MEMORY) if gpu is None else (CPU, MEMORY, gpu)
    requested = dict.fromkeys(wanted, 0)
    for pod in pods:
        if ignore_daemonsets and pod.is_daemonset:
            continue
        if ignore_mirror and pod.is_mirror:
            continue
        if is_long_terminating(pod, now):
            continue
        for r in wanted:
            requested[r] += pod.requests.get(r, 0)
    shares = {}
    for r in wanted:
        alloc = node.allocatable.get(r, 0)
        if alloc <= 0:
            raise ValueError(f"node {node.name} has no allocatable {r}")
        shares[r] = requested[r] / alloc
    if gpu is not None:
        return Utilization(shares[CPU], shares[MEMORY], shares[gpu], gpu)
    resource = CPU if shares[CPU] >= shares[MEMORY] else MEMORY
    return Utilization(shares[CPU], shares[MEMORY], shares[resource], resource)


def _upper_bound(node: Node, requested: tuple[int, int]) -> Utilization | None:
    """Utilization from total requests, for nodes judged by cpu and memory (None otherwise)."""
    if gpu_resource(node) is not None:
        return None
    cpu_alloc, memory_alloc = node.allocatable.get(CPU, 0), node.allocatable.get(MEMORY, 0)
    if cpu_alloc <= 0 or memory_alloc <= 0:
        return None
    cpu, memory = requested[0] / cpu_alloc, requested[1] / memory_alloc
    return Utilization(cpu, memory, max(cpu, memory), CPU if cpu >= memory else MEMORY)


@dataclass(frozen=True, slots=True)
class Eligibility:
    node: str
    reason: NodeReason | None  # None: eligible
    utilization: Utilization | None
    group: NodeGroup | None
    detail: str = ""

    @property
    def eligible(self) -> bool:
        return self.reason is None


class EligibilityChecker:
    """The per-node checks, with the flags and the cloud provider they need."""

    def __init__(self, options: AutoscalerOptions, cloud: CloudProvider, now: float):
        self.options = options
        self.cloud = cloud
        self.now = now

    def check(
        self,
        node: Node,
        pods: Iterable[Pod],
        *,
        being_deleted: bool = False,
        recently_unremovable: bool = False,
        requested: tuple[int, int] | None = None,
    ) -> Eligibility:
        """`requested`: the node's (cpu, memory) requests as the snapshot's arrays hold them, all
        pods counted. For a Ready non-GPU node with the ignore-* flags off and no long-terminating
        pod, that is the exact figure, so when it is above the threshold the per-pod sum
        is skipped: the common case in a busy cluster. (With a long-terminating pod it only
        overstates the figure, which proves nothing about the threshold.) With `requested`,
        `pods` must be a collection: it may be read twice."""
        o = self.options
        if (
            requested is not None
            and node.ready
            and not o.ignore_daemonsets_utilization
            and not o.ignore_mirror_pods_utilization
            and not recently_unremovable
            and not being_deleted
        ):
            bound = _upper_bound(node, requested)
            if (
                bound is not None
                and bound.value > o.scale_down_utilization_threshold
                and not any(is_long_terminating(pod, self.now) for pod in pods)
            ):
                group = self.cloud.node_group_for(node)
                if group is not None and node.annotations.get(SCALE_DOWN_DISABLED_ANNOTATION) != "true":
                    return self.against_threshold(node.name, bound, group)
        try:
            util: Utilization | None = utilization(
                node,
                pods,
                ignore_daemonsets=o.ignore_daemonsets_utilization,
                ignore_mirror=o.ignore_mirror_pods_utilization,
                now=self.now,
            )
            error = ""
        except ValueError as exc:
            util, error = None, str(exc)
        group = self.cloud.node_group_for(node)
        name = node.name

        def no(reason: NodeReason, detail: str = "") -> Eligibility:
            return Eligibility(name, reason, util, group, detail)

        if recently_unremovable:
            return no(NodeReason.RECENTLY_UNREMOVABLE)
        if being_deleted:
            return no(NodeReason.CURRENTLY_BEING_DELETED)
        if node.annotations.get(SCALE_DOWN_DISABLED_ANNOTATION) == "true":
            return no(NodeReason.SCALE_DOWN_DISABLED_ANNOTATION)
        if group is None:
            return no(NodeReason.NOT_AUTOSCALED, "not in any autoscaled node group")
        if util is None:
            return no(NodeReason.UNEXPECTED_ERROR, error)
        if not node.ready and not o.scale_down_unready_enabled:
            return no(NodeReason.NOT_UNNEEDED_OTHER_REASON, "unready and scale-down-unready-enabled is off")
        return self.against_threshold(name, util, group)

    def against_threshold(self, name: str, util: Utilization, group: NodeGroup) -> Eligibility:
        """The last check alone, for a node that passed every other: its utilization against
        the threshold (the GPU's for a GPU node). The only check that reads the thresholds, so a
        node's answer under other thresholds (the unblock answers' checks) is redone by it alone."""
        o = self.options
        threshold = (
            o.scale_down_gpu_utilization_threshold
            if is_gpu_resource(util.resource)
            else o.scale_down_utilization_threshold
        )
        if util.value > threshold:
            detail = f"{util.resource} utilization {util.value:.2f} >= threshold {threshold:g}"
            return Eligibility(name, NodeReason.NOT_UNDERUTILIZED, util, group, detail)
        return Eligibility(name, None, util, group)


def node_cores_and_memory(node: Node) -> tuple[int, int]:
    """Whole cores (rounded up, as CA counts them) and bytes of memory a node brings."""
    amounts = node.capacity or node.allocatable
    return math.ceil(amounts.get(CPU, 0) / 1000), amounts.get(MEMORY, 0)


class RemovalLimits:
    """Node group minimum sizes and cluster minimum cores/memory, consumed candidate by candidate.

    A group may lose `target_size - deletions in progress - min_size` more nodes, as in CA, where
    each deletion counts once: `NodeGroup.target_size()` already drops when a deletion is handed
    to the cloud (the port's contract), so the deletions in progress subtracted here are those the
    cloud has not been asked for yet: nodes being deleted whose instance the group does not report
    DELETING (tainted, draining, waiting for their batch). The cluster may lose cores and memory
    down to cores-total / memory-total min. Nodes already being deleted are not counted in the
    totals (CA does the same).
    """

    def __init__(
        self,
        options: AutoscalerOptions,
        groups: Iterable[NodeGroup],
        nodes: Iterable[Node],
        being_deleted: Collection[str],
        deletions_by_group: dict[str, int],
    ):
        nodes = list(nodes)
        self.group_left: dict[str, int] = {}
        provider_ids: set[str] | None = None
        for group in groups:
            in_progress = deletions_by_group.get(group.id, 0)
            if in_progress:
                if provider_ids is None:
                    provider_ids = {n.provider_id for n in nodes if n.name in being_deleted and n.provider_id}
                # Already out of the target: counting them again is the double count of issue 24.
                requested = sum(
                    1
                    for instance in group.instances()
                    if instance.state is InstanceState.DELETING and instance.id in provider_ids
                )
                in_progress = max(0, in_progress - requested)
            self.group_left[group.id] = group.target_size() - in_progress - group.min_size
        cores = memory = 0
        for node in nodes:
            if node.name in being_deleted:
                continue
            c, m = node_cores_and_memory(node)
            cores += c
            memory += m
        self.cores_left = cores - options.cores_total.min
        self.memory_left = memory - options.memory_total.min * GIB

    def check(self, node: Node, group: NodeGroup) -> NodeReason | None:
        if self.group_left.get(group.id, 0) <= 0:
            return NodeReason.NODE_GROUP_MIN_SIZE_REACHED
        cores, memory = node_cores_and_memory(node)
        if cores > self.cores_left or memory > self.memory_left:
            return NodeReason.MINIMAL_RESOURCE_LIMIT_EXCEEDED
        return None

    def take(self, node: Node, group: NodeGroup) -> None:
        cores, memory = node_cores_and_memory(node)
        self.group_left[group.id] = self.group_left.get(group.id, 0) - 1
        self.cores_left -= cores
        self.memory_left -= memory
