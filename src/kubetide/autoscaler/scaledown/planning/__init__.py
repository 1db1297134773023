"""Scale-down planning: which nodes can go together, and why the others cannot.

The parallel-drain design's UpdateUnneededNodes (`planner`, one module per step: `deleted_set`,
`evictions`, `candidates`, `timers`, over the update's working state in `update`), what it
simulates a drain with (`drainability`, `eligibility`, `pdb`, `placement`, `whatif`, `room`,
`usage`, `surge`, `oncompletion`), what it keeps between loops (`state`, `reuse`, `limit`), and
what it decides: the `plan`, each node's drain `estimate`, the disruption `methods` that propose
which removable candidates go (CA's empty-node deletion and underutilised-node removal, tried in
order, then kubetide's `replacement` onto a cheaper group; another list plugs in through
`Planner(methods=...)`), and the `budgets` that crop it.

Code outside scaledown/ imports these names only, never the modules (Karpenter's policy,
autoscaler/karpenter/, charges PodDisruptionBudgets with `PdbTracker` and asks the scheduler
about pods with `homeless` stand-ins, as the planner does).
"""

from kubetide.autoscaler.scaledown.planning.budgets import BudgetDecision, crop
from kubetide.autoscaler.scaledown.planning.drainability import (
    DO_NOT_DISRUPT,
    REPLICATED_KINDS,
    SAFE_TO_EVICT,
    SAFE_TO_EVICT_LOCAL_VOLUMES,
    BlockingPod,
)
from kubetide.autoscaler.scaledown.planning.eligibility import SCALE_DOWN_DISABLED_ANNOTATION, gpu_resource
from kubetide.autoscaler.scaledown.planning.estimate import (
    EVICTION_RETRY_INTERVAL,
    DrainEstimate,
    ReadinessHistory,
    ScaleDownSchedule,
    ScheduleMemo,
    drain_estimates,
    plan_schedule,
)
from kubetide.autoscaler.scaledown.planning.methods import (
    CA_METHODS,
    Command,
    DisruptionMethod,
    EmptyNodeDeletion,
    MethodInputs,
    UnderutilizedNodeRemoval,
    ca_method_name,
    propose_in_order,
    try_in_order,
)
from kubetide.autoscaler.scaledown.planning.pdb import PdbTracker
from kubetide.autoscaler.scaledown.planning.placement import homeless
from kubetide.autoscaler.scaledown.planning.plan import (
    BEING_DELETED,
    REMOVABLE,
    UNREMOVABLE,
    NodeStatus,
    Replacement,
    ScaleDownPlan,
)
from kubetide.autoscaler.scaledown.planning.planner import Planner
from kubetide.autoscaler.scaledown.planning.replacement import (
    KUBETIDE_METHODS,
    CheaperGroupReplacement,
    PendingReplacement,
)
from kubetide.autoscaler.scaledown.planning.surge import SURGE_ANNOTATION
from kubetide.autoscaler.scaledown.planning.timers import SCALED_UP_THIS_LOOP

__all__ = [
    "BEING_DELETED",
    "CA_METHODS",
    "DO_NOT_DISRUPT",
    "EVICTION_RETRY_INTERVAL",
    "KUBETIDE_METHODS",
    "REMOVABLE",
    "REPLICATED_KINDS",
    "SAFE_TO_EVICT",
    "SAFE_TO_EVICT_LOCAL_VOLUMES",
    "SCALED_UP_THIS_LOOP",
    "SCALE_DOWN_DISABLED_ANNOTATION",
    "SURGE_ANNOTATION",
    "UNREMOVABLE",
    "BlockingPod",
    "BudgetDecision",
    "CheaperGroupReplacement",
    "Command",
    "DisruptionMethod",
    "DrainEstimate",
    "EmptyNodeDeletion",
    "MethodInputs",
    "NodeStatus",
    "PdbTracker",
    "PendingReplacement",
    "Planner",
    "ReadinessHistory",
    "Replacement",
    "ScaleDownPlan",
    "ScaleDownSchedule",
    "ScheduleMemo",
    "UnderutilizedNodeRemoval",
    "ca_method_name",
    "crop",
    "drain_estimates",
    "gpu_resource",
    "homeless",
    "plan_schedule",
    "propose_in_order",
    "try_in_order",
]
