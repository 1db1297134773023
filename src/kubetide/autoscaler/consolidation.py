"""What a consolidation move costs in disruption and whether its saving pays for it, shared by the
policies that replace nodes with cheaper ones (kubetide's cheaper-group replacement,
scaledown/planning/replacement.py; Karpenter's arm, autoscaler/karpenter/).

Karpenter's terms (pkg/utils/disruption/disruption.go, balanced.go, v1.14):

- a pod's eviction cost: 1 + pod-deletion-cost / 2^27 + priority / 2^25, clamped to [-10, 10];
- a node's disruption (its reschedule cost): 1 + the positive eviction costs of its pods that move;
- the Balanced policy's score of a move: (savings / pool's total cost) / (move's disruption /
  pool's total disruption), the totals over every node of the pool, candidates or not. The move
  is approved when the score is at least 1/k, with k = 2 (Karpenter's `BalancedK`): a move is
  worth its disruption when it saves at least half the pool's cost share it disrupts.
"""

from __future__ import annotations

from collections.abc import Iterable

from kubetide.model import Pod
from kubetide.workloads.cost import deletion_cost

BALANCED_K = 2.0


def eviction_cost(pod: Pod) -> float:
    cost = 1.0 + deletion_cost(pod.meta.annotations) / 2**27 + pod.priority / 2**25
    return max(-10.0, min(10.0, cost))


def reschedule_cost(pods: Iterable[Pod]) -> float:
    """A node's disruption: 1 for the node, plus its moving pods' positive eviction costs."""
    return 1.0 + sum(max(0.0, eviction_cost(p)) for p in pods)


def balanced_score(savings: float, pool_cost: float, disruption: float, pool_disruption: float) -> float:
    """The Balanced score of a move saving `savings` per hour at `disruption`, in a pool costing
    `pool_cost` per hour whose nodes' disruptions add up to `pool_disruption`. A move that
    disrupts nothing (or a pool without cost) scores by its saving alone."""
    if savings <= 0 or pool_cost <= 0:
        return 0.0
    if disruption <= 0 or pool_disruption <= 0:
        return float("inf")
    return (savings / pool_cost) / (disruption / pool_disruption)


def balanced_approves(score: float, k: float = BALANCED_K) -> bool:
    return score >= 1.0 / k
