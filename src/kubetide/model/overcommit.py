"""Nodes whose pods request more than the node can allocate: an over-committed dump.

The API server never admits such a state through the scheduler, but dumps hold it: pods bound by
hand (spec.nodeName), a device plugin that reported fewer GPUs after a restart, allocatable
lowered by a kubelet reconfiguration. Every command still takes the dump as it is (the pods are
there); this says so, since `plan` would otherwise show a node at 200% without a word.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from kubetide.model.node import Node
from kubetide.model.pod import Pod


@dataclass(frozen=True)
class Overcommit:
    node: str
    resource: str  # the resource most over its allocatable on this node
    requested: int
    allocatable: int

    @property
    def percent(self) -> float:
        return 100.0 * self.requested / self.allocatable if self.allocatable else float("inf")


def overcommitted_nodes(
    nodes: Iterable[Node], pods: Iterable[Pod], bound_requests: dict[str, dict[str, int]] | None = None
) -> list[Overcommit]:
    """Per node whose bound, non-terminal pods together request more of a resource than it can
    allocate, that resource (the worst one, by share), in the nodes' order. Only resources the
    node reports in allocatable are compared (`pods` included). `bound_requests`, when given, are
    those pods' requests summed per node already (the loader's Manifests.bound_requests)."""
    requested = bound_requests if bound_requests is not None else bound_totals(pods)
    found = []
    for node in nodes:
        on_node = requested.get(node.name)
        if not on_node:
            continue
        over = [
            Overcommit(node.name, resource, on_node[resource], allocatable)
            for resource, allocatable in node.allocatable.items()
            if on_node.get(resource, 0) > allocatable
        ]
        if over:
            found.append(max(over, key=lambda o: (o.percent, o.resource)))
    return found


def bound_totals(pods: Iterable[Pod]) -> dict[str, dict[str, int]]:
    """The requests of the bound, non-terminal pods, summed per node."""
    requested: dict[str, dict[str, int]] = {}
    for pod in pods:
        if pod.node_name and not pod.is_terminal:
            sums = requested.setdefault(pod.node_name, {})
            for resource, amount in pod.requests.items():
                sums[resource] = sums.get(resource, 0) + amount
    return requested
