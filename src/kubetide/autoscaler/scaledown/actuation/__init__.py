"""Scale-down actuation: taking the planned nodes away safely.

`actuator`: the parallel-drain design's StartDeletion (taints, drains as per-node state machines
driven by the loop), after `staleness` has checked that each node still looks the way the
decision saw it; `softtaint`: DeletionCandidate taints; `restart`: resuming or releasing nodes
left tainted by a previous run, and taking back its replacements in flight.

Code outside scaledown/ imports these names only, never the modules.
"""

from kubetide.autoscaler.scaledown.actuation.actuator import DELAY_DELETION_PREFIX, Actuator, StartResult
from kubetide.autoscaler.scaledown.actuation.restart import ReplacementRecords, recover, release_orphans
from kubetide.autoscaler.scaledown.actuation.softtaint import SoftTaintMemo, update_soft_taints
from kubetide.autoscaler.scaledown.actuation.staleness import NodeBasis, Stale, basis_of, stale_reason

__all__ = [
    "DELAY_DELETION_PREFIX",
    "Actuator",
    "NodeBasis",
    "ReplacementRecords",
    "SoftTaintMemo",
    "Stale",
    "StartResult",
    "basis_of",
    "recover",
    "release_orphans",
    "stale_reason",
    "update_soft_taints",
]
