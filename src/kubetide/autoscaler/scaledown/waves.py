"""How many PodDisruptionBudget waves a node's drain needs.

A node the planner lets through with fewer disruptions left than its pods of a PDB (the Cluster
Autoscaler's "risky" node) is drained as the budget allows: the eviction API refuses (429) what
the budget cannot take now, and the refused pods go once replacements of the evicted ones are
healthy again. Each such round is a wave, and the actuator gives the drain one
max-pod-eviction-time per wave, so a slow drain that progresses is not abandoned.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from kubetide.autoscaler.scaledown.pdb import is_healthy
from kubetide.model import Pod, PodDisruptionBudget


def full_budget(pdb: PodDisruptionBudget) -> int:
    """The disruptions a PDB allows when all its pods are healthy: status.expectedPods -
    status.desiredHealthy when the status has both, else status.disruptionsAllowed; at least 1
    (a budget of 0 still lets one pod go per wave once the workload recovers, and a PDB without
    a status is taken as the slowest budget)."""
    if pdb.expected_pods is not None and pdb.desired_healthy is not None:
        allowed = pdb.expected_pods - pdb.desired_healthy
    else:
        allowed = pdb.disruptions_allowed or 0
    return max(1, allowed)


def waves(pods: Iterable[Pod], pdbs: Sequence[PodDisruptionBudget]) -> int:
    """The number of PDB budget waves needed to evict `pods` (one node's pods): for each PDB
    matching some of the healthy pods, ceil(those pods / the PDB's full budget); the largest of
    these, and at least 1. Unhealthy pods do not count: evicting them spends no budget."""
    healthy = [pod for pod in pods if is_healthy(pod)]
    result = 1
    for pdb in pdbs:
        mine = sum(1 for pod in healthy if pdb.matches(pod))
        if mine:
            result = max(result, math.ceil(mine / full_budget(pdb)))
    return result
