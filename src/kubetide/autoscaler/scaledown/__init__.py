"""Scale-down with parallel drain: which nodes can go together, and taking them away safely.

- `drainability`: which pods a drain moves, skips, or is blocked by (CA's rules, in order);
- `eligibility`: which nodes are considered at all; node group and cluster minimums;
- `pdb`: PodDisruptionBudget remaining disruptions, consumed across candidates;
- `planner`: the parallel-drain design's UpdateUnneededNodes, step by step in the design's
  names: `revalidate` (the deleted set), `evictions` (recent evictions), `candidates`
  (eligibility and the candidate search), `timers` (unneeded times and pauses), over the
  update's working state in `update`; `placement` moves one pod; `plan`: the result,
  explainable per node and as `kubetide plan` JSON;
- `budgets`, `actuator`: the design's StartDeletion (parallelism budgets, taints, drains as
  per-node state machines driven by the loop); `softtaint`: DeletionCandidate taints;
  `restart`: resuming or releasing nodes left tainted by a previous run.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kubetide.lazy import lazy_exports

if TYPE_CHECKING:
    from kubetide.autoscaler.scaledown.actuation.actuator import Actuator, StartResult, TickResult
    from kubetide.autoscaler.scaledown.actuation.restart import RecoveryReport, recover, release_orphans
    from kubetide.autoscaler.scaledown.actuation.softtaint import SoftTaintResult, update_soft_taints
    from kubetide.autoscaler.scaledown.planning.budgets import BudgetDecision, crop
    from kubetide.autoscaler.scaledown.planning.plan import NodeStatus, ScaleDownPlan
    from kubetide.autoscaler.scaledown.planning.planner import Planner
    from kubetide.autoscaler.scaledown.reasons import NodeReason, PodReason
else:
    # Each name's module is imported when the name is first read (kubetide.lazy says why).
    __getattr__ = lazy_exports(
        __name__,
        {
            "kubetide.autoscaler.scaledown.actuation.actuator": ("Actuator", "StartResult", "TickResult"),
            "kubetide.autoscaler.scaledown.planning.budgets": ("BudgetDecision", "crop"),
            "kubetide.autoscaler.scaledown.planning.plan": ("NodeStatus", "ScaleDownPlan"),
            "kubetide.autoscaler.scaledown.planning.planner": ("Planner",),
            "kubetide.autoscaler.scaledown.reasons": ("NodeReason", "PodReason"),
            "kubetide.autoscaler.scaledown.actuation.restart": (
                "RecoveryReport",
                "recover",
                "release_orphans",
            ),
            "kubetide.autoscaler.scaledown.actuation.softtaint": ("SoftTaintResult", "update_soft_taints"),
        },
    )

__all__ = [
    "Actuator",
    "BudgetDecision",
    "NodeReason",
    "NodeStatus",
    "Planner",
    "PodReason",
    "RecoveryReport",
    "ScaleDownPlan",
    "SoftTaintResult",
    "StartResult",
    "TickResult",
    "crop",
    "recover",
    "release_orphans",
    "update_soft_taints",
]
