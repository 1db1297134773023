"""The nodes still unremovable when a run ends, and what would unblock each: summary.json's
`scale_down.unremovable_at_end` and the report's table.

Asked once, on the cluster as the run leaves it, as `kubetide plan` would ask it of a real cluster:
a fresh loop decision (timers taken as run out, so nodes merely waiting out
scale-down-unneeded-time are not listed), the pending pods that fit bound where the scheduler
would put them, then `explain` (autoscaler/explain.py) for the blocked nodes. Asking it in every loop
(--annotate-scale-down-blockers) costs about twelve times a loop; asking it once costs a few
planner runs per blocked node (each a whole planner update), so only `END_OF_RUN_LIMIT` blocked
nodes are answered, the most actionable (a blocking pod a user can annotate before a budget, a
group's size, room elsewhere or a busy node; a node only waiting for its budget last), listed by
their answers' rank, within `END_OF_RUN_BUDGET` of the simulator's work
timer (so the same run gives the same answers); `kubetide plan` on the final cluster answers the
rest.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubetide.autoscaler.decision import LoopState, decide
from kubetide.autoscaler.explain import UnblockRequest, explain
from kubetide.autoscaler.inputs import LoopInputs
from kubetide.autoscaler.options import AutoscalerOptions
from kubetide.autoscaler.ports import CloudProvider, ClusterView, UsageSource
from kubetide.autoscaler.scaledown import NodeReason, PodReason
from kubetide.autoscaler.scaledown.explanation import NOT_COMPUTED
from kubetide.autoscaler.scaledown.planning import UNREMOVABLE, NodeStatus, ScaleDownPlan
from kubetide.autoscaler.scaleup.expanders import PRIORITY_CONFIGMAP
from kubetide.clock import Timer
from kubetide.scheduling.checker import PredicateChecker

# On their way out, not blocked: a running timer.
_WAITING = frozenset({NodeReason.NOT_UNNEEDED_LONG_ENOUGH, NodeReason.NOT_UNREADY_LONG_ENOUGH})
# Every simulate, compared setting and sweep run pays for these answers once, so they are kept to
# what a reader takes in: the most actionable nodes, within a small budget of the work
# timer (the full caps tripled a 300-node run's CPU; `kubetide plan` on the final cluster answers
# every node).
END_OF_RUN_LIMIT = 3
END_OF_RUN_BUDGET = 2.0
_NOT_COMPUTED_HERE = "not computed: the answers' budget ran out first"


def unremovable_at_end(
    options: AutoscalerOptions,
    view: ClusterView,
    cloud: CloudProvider,
    now: float,
    *,
    timer: Timer,
    usage: UsageSource | None = None,
    namespaces: Mapping[str, Mapping[str, str]] | None = None,
) -> dict[str, Any] | None:
    """{count, by_reason, nodes: [{node, group, reason, utilization, blocking_pods, unblock}]}
    for the nodes a fresh plan finds unremovable (at most `END_OF_RUN_LIMIT` listed, the
    most actionable first), or None when scale-down is off or the loop would not get that far."""
    if not options.scale_down_enabled:
        return None
    snapshot = view.snapshot()
    inputs = LoopInputs(
        now,
        snapshot,
        pending=view.pending_pods(),
        pdbs=view.pdbs(),
        workloads=view.workloads(),
        namespaces=namespaces,
        priorities=view.configmap(options.namespace, PRIORITY_CONFIGMAP),
        usage=usage.sample() if usage is not None else None,
    )
    state = LoopState(options, timer=timer, timers_expired=True)
    with PredicateChecker(snapshot, namespaces) as checker:
        decision = decide(state, inputs, cloud=cloud, checker=checker, past_halt=True)
        plan = decision.scale_down
        if plan is None:
            return None
        blocked = [s for s in plan.nodes.values() if _blocked(s, plan)]
        # The most actionable first: answered, then ordered by their answers.
        listed = sorted(blocked, key=_actionable)[:END_OF_RUN_LIMIT]
        request = UnblockRequest(
            nodes={s.name for s in listed}, limit=END_OF_RUN_LIMIT, budget=END_OF_RUN_BUDGET
        )
        explain(
            decision, inputs, options=options, cloud=cloud, checker=checker, timer=timer, unblock=request
        ).attach(plan)
    listed.sort(key=lambda s: (s.unblock.rank if s.unblock is not None else _UNANSWERED, _actionable(s)))
    groups = {s.name: _group_of(cloud, snapshot, s.name) for s in listed}
    by_reason: dict[str, int] = {}
    for s in blocked:
        by_reason[_reason(s)] = by_reason.get(_reason(s), 0) + 1
    return {
        "count": len(blocked),
        "by_reason": dict(sorted(by_reason.items())),
        "nodes": [_row(s, groups[s.name]) for s in listed],
    }


def _blocked(status: NodeStatus, plan: ScaleDownPlan) -> bool:
    return (
        status.status == UNREMOVABLE
        and status.reason not in _WAITING
        and status.name not in plan.candidate_set
    )


# A node's place among those listed before its answer is known, by what holds it: a pod a user
# can annotate, then a budget, a group's size or a node's annotation, then room elsewhere, then
# its utilization, and last a node only waiting for its budget (it goes by itself).
_BY_REASON = {
    NodeReason.BLOCKED_BY_POD: 1,
    NodeReason.NODE_GROUP_MIN_SIZE_REACHED: 1,
    NodeReason.SCALE_DOWN_DISABLED_ANNOTATION: 1,
    NodeReason.NO_PLACE_TO_MOVE_PODS: 2,
    NodeReason.NOT_UNDERUTILIZED: 3,
}
_UNANSWERED = (9, 9)


def _actionable(status: NodeStatus) -> int:
    if status.detail.startswith("waiting for budget"):
        return 4
    if any(b.reason is not PodReason.NOT_ENOUGH_PDB for b in status.blockers):
        return 0
    return _BY_REASON.get(status.reason, 2) if status.reason is not None else 2


def _reason(status: NodeStatus) -> str:
    return str(status.blocked_by)


def _group_of(cloud: CloudProvider, snapshot: Any, name: str) -> str | None:
    group = cloud.node_group_for(snapshot.node(name)) if name in snapshot else None
    return None if group is None else group.id


def _row(status: NodeStatus, group: str | None) -> dict[str, Any]:
    unblock = status.unblock
    answer = None if unblock is None else unblock.to_json()
    if answer is not None and answer["text"] == NOT_COMPUTED:  # its advice is plan's
        answer["text"] = _NOT_COMPUTED_HERE
    return {
        "node": status.name,
        "group": group,
        "reason": _reason(status),
        "utilization": None if status.utilization is None else round(status.utilization, 4),
        "blocking_pods": [b.to_json() for b in status.blockers],
        "detail": status.detail,
        "unblock": answer,
    }
