"""balance-similar-node-groups: spread one scale-up over groups of the same machine shape.

Groups that differ only by zone (one group per zone is the usual way to run a multi-zone pool)
should grow together, or zone-spread workloads and zone failures hit an uneven cluster. Two
groups are similar when their template nodes

- carry the same labels, ignoring the ones that name the zone, region, host or the group itself
  (the provider's node-pool labels and kubetide's own `kubetide.io/node-group`);
- have allocatable cpu and memory within 5% of each other (the larger minus the smaller is at most
  5% of the larger), and exactly the same amount of every other resource (GPUs, pods, ...);
- have the same taints.

The Cluster Autoscaler also compares capacity and free resources of a running node; a template has
neither beyond allocatable, so we stop there. Its flags apply: `balancing-ignore-label` adds labels
to ignore, `max-allocatable-difference-ratio` replaces the 5%, and `balancing-label`, when given,
makes the listed labels the whole comparison (each present on both, with equal values).

The split fills the smallest group first, one node at a time, so sizes end up as even as the
groups' max sizes allow; what no group can take is dropped (reported by the caller).
"""

from __future__ import annotations

import heapq
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from kubetide.model import Node
from kubetide.model.node import HOSTNAME_LABEL, REGION_LABEL, ZONE_LABEL
from kubetide.model.quantity import CPU, MEMORY

IGNORED_LABELS = frozenset(
    {
        HOSTNAME_LABEL,
        ZONE_LABEL,
        REGION_LABEL,
        "failure-domain.beta.kubernetes.io/zone",
        "failure-domain.beta.kubernetes.io/region",
        "topology.ebs.csi.aws.com/zone",
        "topology.gke.io/zone",
        "topology.disk.csi.azure.com/zone",
        "beta.kubernetes.io/fluentd-ds-ready",
        "kops.k8s.io/instancegroup",
        # Per-group names: different by definition between two groups.
        "kubetide.io/node-group",
        "eks.amazonaws.com/nodegroup",
        "alpha.eksctl.io/nodegroup-name",
        "cloud.google.com/gke-nodepool",
        "kubernetes.azure.com/agentpool",
        "agentpool",
        "karpenter.sh/nodepool",
    }
)
TOLERANCE = 0.05


def _within(a: int, b: int, ratio: float) -> bool:
    larger, smaller = max(a, b), min(a, b)
    return larger - smaller <= larger * ratio


def similar(
    a: Node,
    b: Node,
    *,
    ignore_labels: Collection[str] = (),
    only_labels: Sequence[str] = (),
    tolerance: float = TOLERANCE,
) -> bool:
    """Whether two template nodes describe the same kind of machine."""
    if only_labels:
        return all(k in a.labels and k in b.labels and a.labels[k] == b.labels[k] for k in only_labels)
    la = {k: v for k, v in a.labels.items() if k not in IGNORED_LABELS and k not in ignore_labels}
    lb = {k: v for k, v in b.labels.items() if k not in IGNORED_LABELS and k not in ignore_labels}
    if la != lb:
        return False
    if {(t.key, t.value, t.effect) for t in a.taints} != {(t.key, t.value, t.effect) for t in b.taints}:
        return False
    ra = {k: v for k, v in a.allocatable.items() if v}
    rb = {k: v for k, v in b.allocatable.items() if v}
    if ra.keys() != rb.keys():
        return False
    for resource, amount in ra.items():
        if resource in (CPU, MEMORY):
            if not _within(amount, rb[resource], tolerance):
                return False
        elif amount != rb[resource]:
            return False
    return True


@dataclass(frozen=True, slots=True)
class BalanceTarget:
    group_id: str
    current_size: int  # target size now
    max_size: int


def split(total: int, targets: Sequence[BalanceTarget]) -> dict[str, int]:
    """Distribute `total` new nodes, smallest group first; ties go to the earlier target.

    Returns group id -> delta for groups that grow. The sum may be below `total` when every
    group reaches its max size.
    """
    heap = [(t.current_size, i) for i, t in enumerate(targets) if t.current_size < t.max_size]
    heapq.heapify(heap)
    deltas: dict[str, int] = {}
    left = total
    while left > 0 and heap:
        size, i = heapq.heappop(heap)
        target = targets[i]
        deltas[target.group_id] = deltas.get(target.group_id, 0) + 1
        left -= 1
        if size + 1 < target.max_size:
            heapq.heappush(heap, (size + 1, i))
    return deltas
