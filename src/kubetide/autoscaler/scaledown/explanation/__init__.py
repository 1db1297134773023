"""Scale-down explanation: what keeps each unremovable node, and what change would unblock it.

`unblock_search`: finding each node's answer (scaledown/unblock_answer.py's value) by running the
planner on the inputs with a change applied, narrowed to the nodes the change can affect
(`narrow`); `nowhere`: why a pod fits on no other node, in kube-scheduler's words; `blockers`:
the one line for the node annotation and the status.

Code outside scaledown/ imports these names only, never the modules.
"""

from kubetide.autoscaler.scaledown.explanation.blockers import (
    annotation_changes,
    blocking_pods_text,
    single_replica_hold,
    single_replica_words,
)
from kubetide.autoscaler.scaledown.explanation.narrow import Recording
from kubetide.autoscaler.scaledown.explanation.unblock_search import (
    NOT_COMPUTED,
    UNBLOCK_BUDGET,
    UNBLOCK_LIMIT,
    UNBLOCK_REFRESH,
    UnblockMemo,
    find_unblocks,
)
from kubetide.autoscaler.scaledown.unblock_answer import BLOCKER_ANNOTATION, Unblock

__all__ = [
    "BLOCKER_ANNOTATION",
    "NOT_COMPUTED",
    "UNBLOCK_BUDGET",
    "UNBLOCK_LIMIT",
    "UNBLOCK_REFRESH",
    "Recording",
    "Unblock",
    "UnblockMemo",
    "annotation_changes",
    "blocking_pods_text",
    "find_unblocks",
    "single_replica_hold",
    "single_replica_words",
]
