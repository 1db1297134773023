"""A model of Cluster Autoscaler 1.30's binpacking placement, as the reference describes it, for
the estimator's tests (imported by name: this directory has no __init__.py).

Only what the random cases use: cpu / memory / pod-count requests and required pod
anti-affinity with the hostname topology key, on an empty cluster (no existing nodes), so the
node list CA rotates over is exactly the estimate's new nodes, in creation order.

CA 1.30, per the reference:
- groups in decreasing cpu_req/alloc + mem_req/alloc, the requests summed over the regular
  containers only (init containers and overhead ignored); equal scores keep their input order
  (CA's sort is not stable; any order is one CA could take);
- per group, each pod tries the nodes already added, starting after the node that took the last
  pod so placed (one rotating index kept across groups: next fit); the first pod that fits none
  of them sends the rest of the group to new nodes: each tries only the last added node, and a
  fresh node is added when it does not fit (the estimate stops if that last node is still empty).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from kubetide.autoscaler.scaleup.equivalence import PodGroup
from kubetide.model import Pod
from kubetide.model.node import HOSTNAME_LABEL


@dataclasses.dataclass
class _Node:
    free: dict[str, int]
    pods: list[Pod] = dataclasses.field(default_factory=list)


def container_score(pod: Pod, alloc: dict[str, int]) -> float:
    score = 0.0
    for resource in ("cpu", "memory"):
        requested = sum(c.requests.get(resource, 0) for c in pod.containers)
        if alloc.get(resource, 0) > 0:
            score += requested / alloc[resource]
    return score


def _repels(pod: Pod, other: Pod) -> bool:
    return any(
        term.topology_key == HOSTNAME_LABEL and term.label_selector.matches(other.labels)
        for term in pod.affinity.anti_required
    )


def fits(pod: Pod, node: _Node) -> bool:
    if any(node.free.get(resource, 0) < amount for resource, amount in pod.requests.items()):
        return False
    return not any(_repels(pod, other) or _repels(other, pod) for other in node.pods)


def ca130_node_count(groups: Sequence[PodGroup], alloc: dict[str, int]) -> int:
    """How many template nodes CA 1.30's estimator adds for these groups (every pod fits an empty
    template node on its own, as the orchestrator guarantees before estimating)."""
    ordered = sorted(groups, key=lambda g: -container_score(g.exemplar, alloc))
    nodes: list[_Node] = []
    rotating = 0
    last_added: _Node | None = None

    def place(pod: Pod, node: _Node) -> None:
        for resource, amount in pod.requests.items():
            node.free[resource] = node.free.get(resource, 0) - amount
        node.pods.append(pod)

    for group in ordered:
        pods = group.pods
        k = 0
        while k < len(pods) and nodes:
            count = len(nodes)
            taken = next((i for i in range(count) if fits(pods[k], nodes[(rotating + i) % count])), None)
            if taken is None:
                break
            place(pods[k], nodes[(rotating + taken) % count])
            rotating = (rotating + taken + 1) % count
            k += 1
        for pod in pods[k:]:
            if last_added is not None and fits(pod, last_added):
                place(pod, last_added)
                continue
            if last_added is not None and not last_added.pods:
                break
            last_added = _Node(dict(alloc))
            nodes.append(last_added)
            assert fits(pod, last_added), "every pod fits an empty template node"
            place(pod, last_added)
    return len(nodes)


def resource_lower_bound(groups: Sequence[PodGroup], alloc: dict[str, int]) -> int:
    """No placement can use fewer nodes: total requests over one node's allocatable, per resource."""
    bound = 0
    for resource, available in alloc.items():
        total = sum(g.exemplar.requests.get(resource, 0) * len(g.pods) for g in groups)
        if available > 0:
            bound = max(bound, -(-total // available))
    return bound
