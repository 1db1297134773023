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

from kubetide.autoscaler.scaledown.actuator import Actuator, StartResult, TickResult
from kubetide.autoscaler.scaledown.budgets import BudgetDecision, crop
from kubetide.autoscaler.scaledown.plan import NodeStatus, ScaleDownPlan
from kubetide.autoscaler.scaledown.planner import Planner
from kubetide.autoscaler.scaledown.reasons import NodeReason, PodReason
from kubetide.autoscaler.scaledown.restart import RecoveryReport, recover, release_orphans
from kubetide.autoscaler.scaledown.softtaint import SoftTaintResult, update_soft_taints

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
