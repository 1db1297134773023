"""Validation before acting: a node whose deletion was decided starts only if the cluster still
looks the way the decision saw it.

Deciding takes time (up to scale-down-simulation-timeout on a large cluster), and a real view
takes in the informers' changes meanwhile. Karpenter re-checks its disruption candidates before
it acts; kubetide does the same just before the actuator taints: for every node about to start,
the basis the decision recorded (`basis_of`, right after deciding) is compared with the cluster
as it is now (`stale_reason`). A node that fails is dropped from this loop with a typed reason
(counted by the metrics and logged by the run loop); the next loop decides again on fresh state.

What is compared, and why each can turn a good decision stale:
- the Node: gone, or its labels or annotations changed (scale-down-disabled, a new group);
- its pods: one arrived or left, or one's annotations or controller changed (safe-to-evict,
  karpenter.sh/do-not-disrupt, a pod orphaned): the drain simulated is not the drain to do;
- the PodDisruptionBudgets of those pods' namespaces: one added, removed or its spec changed
  (status changes, which follow every pod's readiness, are the eviction API's to judge);
- a pending pod nominated to the node (status.nominatedNodeName, e.g. by preemption): the
  scheduler has promised that room to it.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from kubetide.model import Node, Pod, PodDisruptionBudget
from kubetide.snapshot import ClusterSnapshot


class Stale(enum.Enum):
    """Why a decided deletion did not start."""

    NODE_GONE = "NodeGone"
    NODE_CHANGED = "NodeChanged"
    PODS_CHANGED = "PodsChanged"
    PDB_CHANGED = "PodDisruptionBudgetChanged"
    POD_NOMINATED = "PodNominatedToNode"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True, slots=True)
class NodeBasis:
    """What the decision saw of one node."""

    node: Node
    pods: Mapping[str, tuple[object, ...]]  # uid -> the pod's facts that drain rules read
    pdbs: frozenset[tuple[object, ...]]  # the budgets' specs in the namespaces of its pods


def _pod_facts(pod: Pod) -> tuple[object, ...]:
    meta = pod.meta
    return (tuple(sorted(meta.annotations.items())), pod.controller, meta.deletion_timestamp)


def _pdb_specs(pdbs: Iterable[PodDisruptionBudget], namespaces: set[str]) -> frozenset[tuple[object, ...]]:
    return frozenset(
        (p.key, p.selector, p.min_available, p.max_unavailable, p.unhealthy_pod_eviction_policy)
        for p in pdbs
        if p.meta.namespace in namespaces
    )


def basis_of(snapshot: ClusterSnapshot, name: str, pdbs: Sequence[PodDisruptionBudget]) -> NodeBasis:
    pods = snapshot.pods_on(name)
    return NodeBasis(
        snapshot.node(name),
        {uid: _pod_facts(pod) for uid, pod in pods.items()},
        _pdb_specs(pdbs, {pod.namespace for pod in pods.values()}),
    )


def stale_reason(
    basis: NodeBasis,
    snapshot: ClusterSnapshot,
    pending: Sequence[Pod],
    pdbs: Sequence[PodDisruptionBudget],
) -> Stale | None:
    """Why the node's deletion must not start on the decision's grounds, or None."""
    name = basis.node.name
    if name not in snapshot:
        return Stale.NODE_GONE
    node = snapshot.node(name)
    if node.meta.labels != basis.node.meta.labels or node.meta.annotations != basis.node.meta.annotations:
        return Stale.NODE_CHANGED
    pods = snapshot.pods_on(name)
    if pods.keys() != basis.pods.keys() or any(_pod_facts(p) != basis.pods[uid] for uid, p in pods.items()):
        return Stale.PODS_CHANGED
    if _pdb_specs(pdbs, {pod.namespace for pod in pods.values()}) != basis.pdbs:
        return Stale.PDB_CHANGED
    if any(pod.nominated_node_name == name for pod in pending):
        return Stale.POD_NOMINATED
    return None
