"""Scale-down with parallel drain: which nodes can go together, and taking them away safely.

Three sub-packages, each with a small public face (its `__init__`), which is all that code outside
scaledown/ imports (an import-linter contract says so):
- `planning`: the parallel-drain design's UpdateUnneededNodes and the plan it produces;
- `actuation`: its StartDeletion, soft taints, restart safety;
- `explanation`: what would unblock each unremovable node, and the blocker line.
Explanation and actuation build on planning; planning imports neither. Two modules stay here,
below all three since the plan carries their values: `reasons` (the names scale-down gives its
decisions, re-exported below) and `unblock_answer` (what would unblock a node, as a value).
"""

from kubetide.autoscaler.scaledown.reasons import NodeReason, PodReason

__all__ = ["NodeReason", "PodReason"]
