"""Choosing among feasible nodes: a documented subset of kube-scheduler's default scoring.

Each plugin scores every node 0..100 and the total is the weighted sum, with kube-scheduler's
default weights and integer arithmetic:

| plugin                                  | weight | what it prefers                                 |
| --------------------------------------- | ------ | ----------------------------------------------- |
| NodeResourcesFit (LeastAllocated)       | 1      | most free cpu and memory after placing the pod  |
| NodeResourcesBalancedAllocation         | 1      | cpu and memory used in equal proportion         |
| TaintToleration                         | 3      | fewest untolerated PreferNoSchedule taints      |
| NodeAffinity (preferred terms)          | 2      | highest sum of matching preferred-term weights  |
| PodTopologySpread (ScheduleAnyway)      | 2      | the least crowded domains                       |

Not modelled: InterPodAffinity preferred terms, ImageLocality, the system default spread
constraints kube-scheduler adds to pods without any, and the "non-zero" request defaults
(100m / 200Mi) it substitutes for pods that request nothing. Ties go to the lowest slot, where
kube-scheduler picks at random.
"""

from __future__ import annotations

import math

import numpy as np

from kubetide.model.node import HOSTNAME_LABEL
from kubetide.model.quantity import CPU, MEMORY
from kubetide.scheduling.classes import PodClass, SpreadRule, StaticClass
from kubetide.snapshot import ClusterSnapshot

MAX_SCORE = 100
WEIGHTS = {
    "NodeResourcesFit": 1,
    "NodeResourcesBalancedAllocation": 1,
    "TaintToleration": 3,
    "NodeAffinity": 2,
    "PodTopologySpread": 2,
}


def resource_scores(
    alloc: np.ndarray, used: np.ndarray, cpu: int, memory: int, index: dict[str, int]
) -> np.ndarray:
    """NodeResourcesFit (LeastAllocated) + NodeResourcesBalancedAllocation, for the given rows.

    These depend only on a node's own allocatable and requested amounts, so the checker keeps
    them per fit group and recomputes only the rows of nodes that changed.
    """
    least = np.zeros(len(alloc), dtype=np.int64)
    fractions = []
    for col, amount in ((index[CPU], cpu), (index[MEMORY], memory)):
        capacity = alloc[:, col]
        requested = used[:, col] + amount
        has = capacity > 0
        safe = np.where(has, capacity, 1)
        least += np.where(has & (requested <= capacity), (capacity - requested) * MAX_SCORE // safe, 0)
        fractions.append((has, np.minimum(requested / safe, 1.0)))
    total = least // 2 * WEIGHTS["NodeResourcesFit"]
    (has_cpu, f_cpu), (has_mem, f_mem) = fractions
    std = np.where(has_cpu & has_mem, np.abs(f_cpu - f_mem) / 2, 0.0)
    total += ((1 - std) * MAX_SCORE).astype(np.int64) * WEIGHTS["NodeResourcesBalancedAllocation"]
    return total


def score_nodes(
    snapshot: ClusterSnapshot, cls: PodClass, static: StaticClass, feasible: np.ndarray, base: np.ndarray
) -> np.ndarray:
    """Total score per slot (meaningful on feasible slots only); `base` is resource_scores.

    Plugins whose score is the same on every node (no PreferNoSchedule taints, no preferred
    terms) are left out: a constant does not change the choice.
    """
    cap = len(feasible)
    total = base[:cap]
    extra = False
    if static.any_prefer_taints:
        taints = static.prefer_taints[:cap]
        worst = int(taints[feasible].max())
        if worst:
            total = total + (MAX_SCORE - taints * MAX_SCORE // worst) * WEIGHTS["TaintToleration"]
            extra = True
    if cls.pod.affinity.node_preferred:
        preferred = static.preferred[:cap]
        best = int(preferred[feasible].max())
        if best:
            total = total + preferred * MAX_SCORE // best * WEIGHTS["NodeAffinity"]
            extra = True
    if cls.resolved is not None and cls.resolved.soft:
        spread = _spread_score(snapshot, cls.resolved.soft, static, feasible)
        total = total + spread * WEIGHTS["PodTopologySpread"]
        extra = True
    return total if extra else total.copy()


def _spread_score(
    snapshot: ClusterSnapshot, rules: list[SpreadRule], static: StaticClass, feasible: np.ndarray
) -> np.ndarray:
    """PodTopologySpread scoring for ScheduleAnyway constraints, as kube-scheduler computes it.

    Each node scores sum(count_in_domain * log(domains + 2) + maxSkew - 1) over the constraints
    (for the hostname key: the node's own matching pods), rounded; then scores are flipped so
    the least crowded node gets 100. Feasible nodes lacking a key score 0.
    """
    cap = len(feasible)
    valid = snapshot.valid[:cap]
    has_all = valid.copy()
    for rule in rules:
        has_all &= rule.topology.dom[:cap] >= 0
    scored = feasible & has_all
    raw = np.zeros(cap, dtype=np.float64)
    for rule in rules:
        dom = rule.topology.dom[:cap]
        per_slot = rule.pods.per_slot[:cap]
        if rule.topology.key == HOSTNAME_LABEL:
            count = per_slot
            size = int(scored.sum())
        else:
            n = rule.topology.size
            present = np.bincount(dom[scored], minlength=n) > 0
            size = int(present.sum())
            eligible = has_all.copy()
            if rule.honor_affinity:
                eligible &= static.aff_ok[:cap]
            if rule.honor_taints:
                eligible &= static.taint_ok[:cap]
            counts = np.bincount(dom[eligible], weights=per_slot[eligible], minlength=n)
            counts = np.append(np.where(present, counts, 0), 0)
            count = counts[dom]
        raw += count * math.log(size + 2) + (rule.max_skew - 1)
    score = np.floor(raw + 0.5).astype(np.int64)  # Go's math.Round: halves away from zero
    if not scored.any():
        return np.zeros(cap, dtype=np.int64)
    low, high = int(score[scored].min()), int(score[scored].max())
    if high == 0:
        return np.where(scored, MAX_SCORE, 0)
    return np.where(scored, MAX_SCORE * (high + low - score) // high, 0)
