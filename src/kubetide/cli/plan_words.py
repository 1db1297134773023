"""`kubetide plan`'s result (PlanResult: the loop's decision as plan shows it), in words and as its
JSON document: what both the `--json` document and the tables (plan_tables.py) say of each node
and of scale-up. Nothing here draws: `plan --json` imports no terminal library
(tests/cli/test_startup.py)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kubetide.autoscaler.options import AutoscalerOptions
from kubetide.autoscaler.scaledown import NodeReason, PodReason
from kubetide.cli.json_output import document, rfc3339
from kubetide.durations import format_duration

if TYPE_CHECKING:
    from kubetide.autoscaler.decision import LoopDecision
    from kubetide.autoscaler.scaledown.planning import BudgetDecision, NodeStatus, ScaleDownPlan
    from kubetide.autoscaler.scaleup.orchestrator import ScaleUpPlan
    from kubetide.cloud.static import StaticCloud, StaticNodeGroup
    from kubetide.snapshot import ClusterSnapshot

SHOWN_PODS = 5  # pod names listed per line before "and N more"


@dataclass
class PlanResult:
    """The loop's decision (autoscaler/decision.py) as plan shows it."""

    decision: LoopDecision
    budget: BudgetDecision
    options: AutoscalerOptions = field(default_factory=AutoscalerOptions)

    @property
    def scale_up(self) -> ScaleUpPlan:
        from kubetide.autoscaler.scaleup.orchestrator import ScaleUpPlan

        # plan decides past an unhealthy halt; a size-fix halt (not from a dump) decides none
        return self.decision.scale_up if self.decision.scale_up is not None else ScaleUpPlan()

    @property
    def scale_down(self) -> ScaleDownPlan:
        from kubetide.autoscaler.scaledown.planning import ScaleDownPlan

        if self.decision.scale_down is None:  # scale-down-enabled=false
            return ScaleDownPlan(now=self.decision.now, cooldown="scale-down-enabled is false")
        return self.decision.scale_down

    @property
    def unhealthy(self) -> str | None:
        from kubetide.autoscaler.decision import Halt

        if self.decision.halted is not Halt.CLUSTER_UNHEALTHY:
            return None
        return (
            f"{self.decision.halt_message}; the autoscaler would stop this loop here"
            " (the plan shows what it would do otherwise)"
        )

    @property
    def bound_for_scale_down(self) -> dict[str, str]:
        return self.decision.bound

    @property
    def cooldown_expired(self) -> bool:
        return self.decision.cooldown_expired


def plan_json(
    result: PlanResult,
    cloud: StaticCloud,
    snapshot: ClusterSnapshot,
    now: float,
    now_source: str,
    untried: Sequence[str],
) -> dict:
    """The PlanResult document: the plans' own JSON, with the table's "why" beside each node."""
    scale_down = result.scale_down.to_json(result.budget)
    for name, status in result.scale_down.nodes.items():
        group = cloud.node_group_for(snapshot.node(name)) if name in snapshot else None
        scale_down["nodes"][name].update(
            node_group=group.id if group is not None else None,
            why=node_detail(status, group, result.options),
        )
    scale_up = result.scale_up.to_json()
    scale_up["increases"] = [
        {
            "node_group": i.group_id,
            "delta": i.delta,
            "new_size": i.new_size,
            "reason": "min_size" if i.group_id in result.decision.min_size_groups else "pending_pods",
        }
        for i in result.decision.increases
    ]
    scale_up["why"] = [line.strip() for line in scale_up_lines(result, untried)]
    scale_down["held"] = list(result.decision.held)
    return document(
        "PlanResult",
        {
            "now": rfc3339(now),
            "now_source": now_source,
            "unhealthy": result.unhealthy,
            "scale_up": scale_up,
            "scale_down": scale_down,
        },
    )


POD_REASON_WORDS = {
    PodReason.UNMOVABLE_KUBE_SYSTEM_POD: "a kube-system pod without a PodDisruptionBudget "
    "(skip-nodes-with-system-pods; blocks while the pod is younger than {timeout}:"
    " blocking-system-pod-distruption-timeout)",
    PodReason.LOCAL_STORAGE_REQUESTED: "the pod uses local storage (emptyDir or hostPath) not listed in "
    "cluster-autoscaler.kubernetes.io/safe-to-evict-local-volumes (skip-nodes-with-local-storage)",
    PodReason.NOT_SAFE_TO_EVICT_ANNOTATION: 'the pod is annotated cluster-autoscaler.kubernetes.io/safe-to-evict: "false" '
    '(or karpenter.sh/do-not-disrupt: "true")',
    PodReason.NOT_REPLICATED: "the pod has no controller that would recreate it elsewhere",
    PodReason.NOT_ENOUGH_PDB: "its PodDisruptionBudget allows no more disruptions",
    PodReason.CONTROLLER_NOT_FOUND: "the pod's controller does not exist (skip-nodes-with-custom-controller-pods)",
    PodReason.MIN_REPLICAS_REACHED: "its ReplicaSet has fewer replicas than min-replica-count",
}
_TIMERS = {
    NodeReason.NOT_UNNEEDED_LONG_ENOUGH: "scale-down-unneeded-time",
    NodeReason.NOT_UNREADY_LONG_ENOUGH: "scale-down-unready-time",
}
NODE_REASON_WORDS = {
    NodeReason.SCALE_DOWN_DISABLED_ANNOTATION: 'annotated cluster-autoscaler.kubernetes.io/scale-down-disabled: "true"',
    NodeReason.MINIMAL_RESOURCE_LIMIT_EXCEEDED: "the cluster would go below cores-total / memory-total minimum",
    NodeReason.NO_PLACE_TO_MOVE_PODS_BELOW_QOS_WATERMARK: "kubetide's own reason: with a usage source, "
    "scale-down keeps each destination's usage (its pods at their workloads' peaks over "
    "scale-down-usage-window) at or under the lowest evict or throttle watermark of the NodeQOS "
    "selecting it, so the node QoS agent does not evict the moved pods again at the next spike "
    "(scale-down-respect-qos-watermarks=false packs by requests alone, as the Cluster Autoscaler does)",
}
# Reasons whose words follow the planner's detail: the detail names the pod and node, the words
# say why kubetide refuses where the Cluster Autoscaler would not.
_EXPLAINED_AFTER_DETAIL = {NodeReason.NO_PLACE_TO_MOVE_PODS_BELOW_QOS_WATERMARK}


def names_text(keys: Sequence[str], limit: int = SHOWN_PODS) -> str:
    shown = ", ".join(keys[:limit])
    return shown + (f" and {len(keys) - limit} more" if len(keys) > limit else "")


def plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def scale_up_lines(result: PlanResult, untried: Sequence[str] = ()) -> list[str]:
    """The scale-up half in a few lines: what grows, for whom, and why the others get nothing."""
    plan, expander = result.scale_up, result.options.expander
    min_size = [i for i in result.decision.increases if i.group_id in result.decision.min_size_groups]
    lines = [
        f"growing {i.group_id} by {plural(i.delta, 'node')} to its min size {i.new_size}"
        " (enforce-node-group-min-size)"
        for i in min_size
    ]
    if not plan.pending and not plan.schedulable and not plan.not_helped:
        return [*lines, "no unschedulable pods: nothing to scale up"]
    if plan.schedulable:
        fit = [f"{key} on {node}" for key, node in plan.schedulable.items()]
        lines.append(f"{plural(len(fit), 'pending pod')} fit existing or upcoming nodes: {names_text(fit)}")
    if untried:
        lines.append(
            f"({plural(len(untried), 'pending pod')} without a PodScheduled condition taken as "
            f"unschedulable: {names_text(list(untried))})"
        )
    if plan.pending:
        head = f"{plural(len(plan.pending), 'pod')} need a new node"
        if plan.increases:
            grow = ", ".join(
                f"{i.group_id} by {plural(i.delta, 'node')} to {i.new_size} (max {i.max_size})"
                for i in plan.increases
            )
            helped = list(plan.increases[0].pods)
            lines.append(
                f"{head}; growing {grow}, chosen by {','.join(expander)}, "
                f"for {plural(len(helped), 'pod')}: {names_text(helped)}"
            )
        else:
            lines.append(f"{head}; no node group can take them: no scale-up")
    if plan.chosen is not None:
        for option in plan.options:
            if option.group_id != plan.chosen.group_id:
                lines.append(
                    f"  other option: {option.group_id} +{plural(option.node_count, 'node')} "
                    f"for {plural(len(option.pods), 'pod')}"
                )
    for group_id, skip in plan.skipped_groups.items():
        lines.append(f"  node group {group_id} skipped: {skip}")
    by_reason: dict[str, list[str]] = {}
    for key, reason in plan.not_helped.items():
        by_reason.setdefault(reason, []).append(key)
    for reason, keys in by_reason.items():
        lines.append(f"  not helped: {names_text(keys)}: {reason}")
    return lines


def node_detail(status: NodeStatus, group: StaticNodeGroup | None, options: AutoscalerOptions) -> str:
    """The planner's detail, or the reason in words when the planner left it blank.

    Timer details are rewritten: the planner states them in absolute seconds, while here every
    timer starts with this one loop.
    """
    from kubetide.autoscaler.scaledown.planning import REMOVABLE

    if status.reason in _TIMERS:
        flag = _TIMERS[status.reason]
        wait = format_duration(getattr(options, flag.replace("-", "_")))
        return f"unneeded from now on: removable once it stays so for {flag} ({wait})"
    if status.detail and status.status == REMOVABLE and status.estimate is not None:
        return f"{status.detail}; {status.estimate.words()}"  # a risky node
    if status.detail:
        if status.reason in _EXPLAINED_AFTER_DETAIL:
            return f"{status.detail}. {NODE_REASON_WORDS[status.reason]}"
        return status.detail
    if status.status == REMOVABLE:
        if status.empty:
            return "empty: deleted without a drain"
        estimate = f"; {status.estimate.words()}" if status.estimate is not None else ""
        return "its pods fit on other nodes" + estimate
    if status.blocking_pod is not None:
        timeout = format_duration(options.blocking_system_pod_distruption_timeout)
        return POD_REASON_WORDS.get(status.blocking_pod.reason, "").format(timeout=timeout)
    if status.reason is NodeReason.NODE_GROUP_MIN_SIZE_REACHED and group is not None:
        return f"removing it would take node group {group.id} below its min size {group.min_size}"
    return NODE_REASON_WORDS.get(status.reason, "") if status.reason is not None else ""


def why_text(status: NodeStatus, group: StaticNodeGroup | None, options: AutoscalerOptions) -> str:
    """The node's answer in words, naming the blocking pod first when a pod decided it."""
    detail = node_detail(status, group, options)
    if status.blocking_pod is None:
        return detail
    pod = f"{status.blocking_pod.pod.key} ({status.blocking_pod.reason}){status.more_blockers()}"
    return f"blocked by {pod}" + (f": {detail}" if detail else "")
