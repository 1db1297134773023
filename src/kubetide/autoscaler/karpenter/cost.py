"""What disrupting a node costs and saves, as Karpenter ranks candidates
(pkg/utils/disruption/disruption.go, pkg/controllers/disruption/types.go):

- a pod's eviction cost and the reschedule cost below are autoscaler/consolidation.py's, shared
  with kubetide's own consolidation;
- a node's disruption cost: the sum of its pods' eviction costs, times the fraction of its
  lifetime (expireAfter, 720h by default) still ahead, so nodes near expiry are cheap to disrupt;
- the reschedule cost: 1 + the positive eviction costs of the pods that would move;
- the savings ratio that orders candidates: the node's price over its reschedule cost.
"""

from __future__ import annotations

from collections.abc import Iterable

from kubetide.autoscaler.consolidation import eviction_cost, reschedule_cost
from kubetide.model import Pod

EXPIRE_AFTER = 720 * 3600.0  # Karpenter's default expireAfter


def lifetime_remaining(age: float, expire_after: float = EXPIRE_AFTER) -> float:
    if expire_after <= 0:
        return 1.0
    return max(0.0, min(1.0, 1.0 - age / expire_after))


def disruption_cost(pods: Iterable[Pod], age: float) -> float:
    return sum(eviction_cost(p) for p in pods) * lifetime_remaining(age)


def savings_ratio(price: float, pods: Iterable[Pod]) -> float:
    return price / reschedule_cost(pods)
