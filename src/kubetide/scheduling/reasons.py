"""kube-scheduler's plugin names, its failure messages, and its one-line summary.

The texts are kube-scheduler's own, so a reason kubetide prints can be compared with a pod's
PodScheduled condition message character for character.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from kubetide.model.node import Taint
from kubetide.model.quantity import PODS

NODE_UNSCHEDULABLE = "NodeUnschedulable"
NODE_NAME = "NodeName"
TAINT_TOLERATION = "TaintToleration"
NODE_AFFINITY = "NodeAffinity"
NODE_PORTS = "NodePorts"
NODE_RESOURCES_FIT = "NodeResourcesFit"
POD_TOPOLOGY_SPREAD = "PodTopologySpread"
INTER_POD_AFFINITY = "InterPodAffinity"


UNSCHEDULABLE = "node(s) were unschedulable"
NODE_NAME_MISMATCH = "node(s) didn't match the requested node name"
NODE_AFFINITY_MISMATCH = "node(s) didn't match Pod's node affinity/selector"
PORTS_CONFLICT = "node(s) didn't have free ports for the requested pod ports"
SPREAD_MISMATCH = "node(s) didn't match pod topology spread constraints"
SPREAD_MISSING_LABEL = SPREAD_MISMATCH + " (missing required label)"
AFFINITY_MISMATCH = "node(s) didn't match pod affinity rules"
ANTI_AFFINITY_MISMATCH = "node(s) didn't match pod anti-affinity rules"
EXISTING_ANTI_AFFINITY_MISMATCH = "node(s) didn't satisfy existing pods anti-affinity rules"
TOO_MANY_PODS = "Too many pods"
NO_NODES = "no nodes available to schedule pods"


def insufficient(resource: str) -> str:
    # The pod count has its own wording in NodeResourcesFit.
    return TOO_MANY_PODS if resource == PODS else f"Insufficient {resource}"


def untolerated_taint(taint: Taint) -> str:
    return f"node(s) had untolerated taint {{{taint.key}: {taint.value}}}"


@dataclass(frozen=True, slots=True)
class Unfit:
    """Why one node cannot take a pod: the first filter plugin that said no, and its reasons.

    NodeResourcesFit reports every short resource at once ("Insufficient cpu, Insufficient
    memory"); every other plugin gives one reason.
    """

    plugin: str
    reasons: tuple[str, ...]

    @property
    def reason(self) -> str:
        return ", ".join(self.reasons)


def summarize(counts: Mapping[str, int], total_nodes: int, fitting: int = 0) -> str:
    """kube-scheduler's FitError message: "0/5 nodes are available: 2 ..., 3 Insufficient cpu."

    Like kube-scheduler we sort the rendered "count reason" strings, so the order is by count
    text first (note "10 ..." sorts before "2 ..."). When some nodes fit, the leading figure says
    how many, which kube-scheduler never needs to print.
    """
    if total_nodes == 0:
        return NO_NODES
    head = f"{fitting}/{total_nodes} nodes are available"
    parts = sorted(f"{n} {reason}" for reason, n in counts.items() if n)
    if not parts:
        return head + "."
    return f"{head}: {', '.join(parts)}."
