"""ReplicaSet downscale ranking (KEP-2185 LogarithmicScaleDown), as kube-controller-manager does it.

- `ranking.py`: the deletion order (`rank`, `rank_pods_for_deletion`, `pods_to_delete`);
- `explain.py`: why a pod goes before another, in words (`explain_columns.py`: for every deleted
  pod at once);
- `cost.py`: the pod-deletion-cost annotation; `timebuckets.py`: nanoseconds and age buckets;
- `metrics.py`: the sorting_deletion_age_ratio histogram;
- `owners.py`: a workload's pods and related pods in loaded manifests (for the CLI).

Nothing here reads the wall clock: every function takes `now` (Unix seconds).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kubetide.lazy import lazy_exports

if TYPE_CHECKING:
    from kubetide.workloads.cost import DELETION_COST_ANNOTATION, deletion_cost, parse_deletion_cost
    from kubetide.workloads.explain import Reason, deletion_reasons, explain_order, explain_ranking, reason
    from kubetide.workloads.metrics import DeletionAgeRatio
    from kubetide.workloads.ranking import (
        Ranking,
        is_active,
        pods_per_node,
        pods_to_delete,
        rank,
        rank_pods_for_deletion,
    )
    from kubetide.workloads.timebuckets import age_bucket, to_ns
else:
    # Each name's module is imported when the name is first read (kubetide.lazy says why).
    __getattr__ = lazy_exports(
        __name__,
        {
            "kubetide.workloads.cost": ("DELETION_COST_ANNOTATION", "deletion_cost", "parse_deletion_cost"),
            "kubetide.workloads.explain": (
                "Reason",
                "deletion_reasons",
                "explain_order",
                "explain_ranking",
                "reason",
            ),
            "kubetide.workloads.metrics": ("DeletionAgeRatio",),
            "kubetide.workloads.ranking": (
                "Ranking",
                "is_active",
                "pods_per_node",
                "pods_to_delete",
                "rank",
                "rank_pods_for_deletion",
            ),
            "kubetide.workloads.timebuckets": ("age_bucket", "to_ns"),
        },
    )

__all__ = [
    "DELETION_COST_ANNOTATION",
    "DeletionAgeRatio",
    "Ranking",
    "Reason",
    "age_bucket",
    "deletion_cost",
    "deletion_reasons",
    "explain_order",
    "explain_ranking",
    "is_active",
    "parse_deletion_cost",
    "pods_per_node",
    "pods_to_delete",
    "rank",
    "rank_pods_for_deletion",
    "reason",
    "to_ns",
]
