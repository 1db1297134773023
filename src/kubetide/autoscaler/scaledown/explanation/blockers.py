"""The one line that says what keeps a node from being scaled down, for the node annotation
(`kubetide.io/scale-down-blocker`, --annotate-scale-down-blockers) and the status document.

A node is *blocked* when the plan finds it unremovable for a reason other than a running timer:
a candidate waiting out scale-down-unneeded-time or a pause is on its way out, a node being
deleted is going, a node of no node group is not the autoscaler's, and one annotated
scale-down-disabled says so itself. The line names the reason, the first blocking pod as the Cluster Autoscaler
orders them with "+N more", and what would unblock it when the planner found that
(explanation/unblock_search.py), else the planner's detail.

A single-replica pod behind a budget is a block of its own kind: the budget never allows its
only pod to go, and nothing changes by waiting. Without --surge-before-evict such a node is said
to the operator outside --annotate-scale-down-blockers too (`single_replica_hold`): the loop asks
unblock_search.py for its answer, which suggests the surge first, and says it in the status
ConfigMap, in an Event on the node and in the --v=0 log.
"""

from __future__ import annotations

from collections.abc import Iterable

from kubetide.autoscaler.inputs import LoopInputs
from kubetide.autoscaler.options import AutoscalerOptions
from kubetide.autoscaler.scaledown.explanation.unblock_search import replicas_of
from kubetide.autoscaler.scaledown.planning.drainability import BlockingPod
from kubetide.autoscaler.scaledown.planning.plan import UNREMOVABLE, NodeStatus, ScaleDownPlan
from kubetide.autoscaler.scaledown.reasons import NodeReason, PodReason
from kubetide.autoscaler.scaledown.unblock_answer import BLOCKER_ANNOTATION, SURGE_FLAG
from kubetide.model import Node

# Annotation values are small by convention; a line longer than this is cut with an ellipsis.
MAX_LINE = 512
# Not blocks: a running timer (the node is on its way out), a node no group manages (not the
# autoscaler's to annotate: CA leaves such nodes alone too), and a node its operator annotated
# scale-down-disabled (their own choice, already written on the node).
_NOT_BLOCKED = {
    NodeReason.NOT_UNNEEDED_LONG_ENOUGH,
    NodeReason.NOT_UNREADY_LONG_ENOUGH,
    NodeReason.NOT_AUTOSCALED,
    NodeReason.SCALE_DOWN_DISABLED_ANNOTATION,
}


def blocking_pods_text(status: NodeStatus) -> str:
    """'ns/pod (Reason) +N more', or '' when no pod blocks the node."""
    first = status.blocking_pod
    if first is None:
        return ""
    return f"{first.pod.key} ({first.reason}){status.more_blockers()}"


def blocker_line(status: NodeStatus, plan: ScaleDownPlan) -> str | None:
    """The node's one line, or None when nothing blocks it."""
    reason = status.blocked_by
    if status.status != UNREMOVABLE or reason is None or reason in _NOT_BLOCKED:
        return None
    if status.name in plan.candidate_set:  # unneeded, held only by a pause
        return None
    line = str(reason)
    pods = blocking_pods_text(status)
    if pods:
        line += f" by {pods}"
    answer = status.unblock
    if answer is not None and answer.text:
        line += f"; to unblock: {answer.text}" + (" [not enough]" if answer.needs_more else "")
    elif status.detail:
        line += f": {status.detail}"
    return line if len(line) <= MAX_LINE else line[: MAX_LINE - 3] + "..."


def single_replica_hold(
    status: NodeStatus, inputs: LoopInputs, options: AutoscalerOptions
) -> BlockingPod | None:
    """The first pod of a single-replica workload whose budget refuses its eviction on this
    unremovable node, when surge-before-evict is off; None otherwise."""
    if options.surge_before_evict or status.status != UNREMOVABLE:
        return None
    blockers = status.blockers or ((status.blocking_pod,) if status.blocking_pod is not None else ())
    for blocker in blockers:
        if blocker.reason is PodReason.NOT_ENOUGH_PDB and replicas_of(blocker.pod, inputs) == 1:
            return blocker
    return None


def single_replica_words(status: NodeStatus, blocker: BlockingPod) -> str | None:
    """Why the node stays and what would drain it, in one line: its budget allows no disruption
    and the answer unblock_search.py found (which names the surge). None while that answer is not
    known yet or does not go through the surge (the planner found it would not help)."""
    answer = status.unblock
    if answer is None or not any(change.target == SURGE_FLAG for change in answer.changes):
        return None
    budget = f"PodDisruptionBudget {blocker.pdb}" if blocker.pdb else "its PodDisruptionBudget"
    return (
        f"{budget} allows no disruption of single-replica pod {blocker.pod.key}; to drain the node"
        f" without downtime: {answer.text}"
    )


def annotation_changes(plan: ScaleDownPlan, nodes: Iterable[Node]) -> dict[str, str | None]:
    """Node name -> the annotation value to write (None: remove it), for the nodes whose
    annotation is not what the plan says. Read from the nodes themselves, so a restarted
    process neither rewrites what is there nor leaves stale lines behind."""
    changes: dict[str, str | None] = {}
    for node in nodes:
        status = plan.nodes.get(node.name)
        want = blocker_line(status, plan) if status is not None else None
        if node.meta.annotations.get(BLOCKER_ANNOTATION) != want:
            changes[node.name] = want
    return changes
