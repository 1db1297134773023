"""`kubetide plan CLUSTER.yaml [--node-groups GROUPS.yaml] [--set flag=value ...] [--usage USAGE.yaml] [--json]`: one
autoscaler loop, offline, on a cluster dump: what would the autoscaler do now, and why? Above all:
why is this node not scaled down?

CLUSTER.yaml is a dump such as `kubectl get nodes,pods,pdb,deploy,rs,sts,ds,jobs,cm -A -o yaml`
prints. Node groups come from GROUPS.yaml or from the nodes' group labels (kubetide.cloud.static).
The loop's steps, on one snapshot with one PredicateChecker:

1. Bound pods go into the snapshot. Pending pods are those without spec.nodeName that have not
   finished. The scheduler marks the ones it gave up on PodScheduled=False/Unschedulable, which is
   what scale-up reacts to; a pending pod with no PodScheduled condition (not tried yet, or a
   hand-written dump) is treated as unschedulable too, and filter-out-schedulable then places it
   on an existing node when one can take it, exactly as the scheduler's first try would, so only
   pods that fit nowhere ask for a node. Pods whose PodScheduled condition says anything else
   (SchedulingGated, ...) are not the autoscaler's business and are left alone.
2. The cluster state registry takes in the nodes (upcoming = nodes registered but not started;
   an unhealthy cluster is reported: the real loop would stop there).
3. `ScaleUp.plan` with the flags, the workloads (DaemonSets shrink templates) and the priority
   expander's ConfigMap (cluster-autoscaler-priority-expander in --set namespace=..., kube-system by
   default, as CA reads it from its --namespace) when the dump has it.
   Pending pods it placed on existing nodes are bound there before scale-down, as the Cluster
   Autoscaler's snapshot carries them: the scheduler will put them there.
4. `Planner(options, timers_expired=...).update`: with timers expired (the default) a node that
   is removable now counts as unneeded for long enough, and the scale-down-delay-after-add that
   this loop's own scale-up would start counts as run out too; `--no-expire-timers` keeps both
   (a fresh autoscaler: every timer starts now, so nothing is deleted). The parallelism budgets
   (`budgets.crop`, counting nodes already tainted ToBeDeleted as deletions in progress) decide
   what `to_delete` lists.

`--usage USAGE.yaml` gives the planner a usage source, as `kubetide run --usage-metrics-interval`
does on a live cluster: PodMetrics and NodeMetrics (what `kubectl get --raw
/apis/metrics.k8s.io/v1beta1/pods` returns) and crane's NodeQOS and AvoidanceAction objects.
Scale-down then refuses destinations their moved pods' usage would push over a watermark
(NoPlaceToMovePodsBelowQOSWatermark); the sample is the only one, so it is also the peak.

`now` is the newest timestamp the dump's objects carry (kubetide.cli.now): the dump was taken no
earlier, and a given file always gives the same plan. Ages are lower bounds, so time-dependent
rules (a kube-system pod blocks while younger than an hour, new-pod-scale-up-delay) read the dump
as if taken at that moment; `--now` sets another time.

`--json` prints a PlanResult (docs/json-output.md, docs/schemas/plan.schema.json): the scale-up
and scale-down decisions with the same "why" text the table shows; warnings go to stderr.
"""

from __future__ import annotations

import argparse
import dataclasses
import difflib
import time
from collections.abc import Collection, Iterable, Sequence
from typing import TYPE_CHECKING

from kubetide.autoscaler.options import AutoscalerOptions
from kubetide.autoscaler.scaledown import NodeReason, PodReason
from kubetide.cli.json_output import add_json_argument, document, rfc3339
from kubetide.cli.now import add_now_argument, parse_now, resolve_now
from kubetide.cli.output import console, line_width, print_json, text_table, warn, wrap
from kubetide.durations import format_duration, parse_duration
from kubetide.errors import ManifestError, UserError

# The loop, the snapshot, the scheduler and the model are imported by the functions using them:
# `kubetide plan --help` and a usage error need none of them (tests/cli/test_startup.py).
if TYPE_CHECKING:
    from kubetide.autoscaler.decision import LoopDecision
    from kubetide.autoscaler.ports import UsageSample
    from kubetide.autoscaler.scaledown.planning import BudgetDecision, NodeStatus, ScaleDownPlan
    from kubetide.autoscaler.scaleup.orchestrator import ScaleUpPlan
    from kubetide.cloud.static import StaticCloud, StaticNodeGroup
    from kubetide.model import ConfigMap, Manifests, Pod
    from kubetide.snapshot import ClusterSnapshot

CLUSTER_DUMP = "a cluster dump (kubectl get nodes,pods,... -o yaml)"
SHOWN_PODS = 5  # pod names listed per line before "and N more"
# autoscaler/scaledown/explanation/unblock_search.py's UNBLOCK_BUDGET, written out so that --help, which shows it,
# imports no planner; tests/cli/test_startup.py holds the two equal.
UNBLOCK_BUDGET = 10.0


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "plan",
        help="one offline autoscaler loop on a cluster dump: what would scale up or down, and why",
        description=__doc__.split("\n\n")[0].replace("`", ""),
    )
    parser.add_argument(
        "files", metavar="CLUSTER.yaml", nargs="*", help="a cluster dump (kubectl -o yaml); - for stdin"
    )
    parser.add_argument(
        "--kubeconfig",
        metavar="PATH",
        help="explain the live cluster instead of a dump (read-only: nothing is written)",
    )
    parser.add_argument("--context", metavar="NAME", help="with --kubeconfig: the context to use")
    parser.add_argument(
        "--node-groups",
        metavar="GROUPS.yaml",
        help="node groups (the scenario's nodeGroups schema; - for stdin); default: inferred from node labels",
    )
    parser.add_argument(
        "--set",
        metavar="FLAG=VALUE",
        action="append",
        default=[],
        dest="flags",
        help="an autoscaler flag, Cluster Autoscaler syntax (e.g. scale-down-utilization-threshold=0.6); repeatable",
    )
    parser.add_argument(
        "--no-expire-timers",
        action="store_true",
        help="keep scale-down timers running (unneeded time, delay after add): nothing is deleted yet",
    )
    add_now_argument(parser)
    parser.add_argument(
        "--node",
        metavar="NAME",
        action="append",
        default=[],
        dest="explain_nodes",
        help="explain this node in full (its pods, requests, what blocks it) instead of the table; repeatable",
    )
    parser.add_argument(
        "--usage",
        metavar="USAGE.yaml",
        action="append",
        default=[],
        help="real usage and QoS watermarks: PodMetrics / NodeMetrics (metrics.k8s.io) and crane's NodeQOS / "
        "AvoidanceAction objects; scale-down then keeps destinations under their watermarks; repeatable",
    )
    parser.add_argument(
        "--unblock-budget",
        metavar="DURATION",
        type=_unblock_budget,
        default=UNBLOCK_BUDGET,
        help=f"work spent finding what would unblock each unremovable node (default {UNBLOCK_BUDGET:g}s, "
        "at most 50 nodes; 0 answers none): counted as the simulator counts it, 100us per node a planner "
        "considers, never by the clock, so a loaded machine gives the same answers as an idle one",
    )
    add_json_argument(parser, "a PlanResult")
    parser.set_defaults(run=run)


def _unblock_budget(text: str) -> float:
    try:
        seconds = parse_duration(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    if seconds < 0:
        raise argparse.ArgumentTypeError(f"must not be negative, got {text!r}")
    return seconds


def run(args) -> int:
    from kubetide.cli.inputs import CLUSTER_KINDS, load_manifests, read_node_groups, source_name
    from kubetide.cloud.static import StaticCloud
    from kubetide.snapshot import snapshot_from_dump

    options = parse_set_flags(args.flags)
    parse_now(args.now)  # a bad --now fails before any file is read
    usage_objects = _read_usage(args.usage) if args.usage else None  # small: read first
    definitions = read_node_groups(args.node_groups) if args.node_groups else None
    if args.kubeconfig and args.files:
        raise UserError("plan: give a cluster dump (CLUSTER.yaml) or --kubeconfig, not both")
    if args.kubeconfig:
        manifests, source = _read_live_cluster(args.kubeconfig, args.context)
    elif args.files:
        source = ", ".join(map(source_name, args.files))
        manifests = load_manifests("plan", (args.files, CLUSTER_KINDS, CLUSTER_DUMP))
    else:
        raise UserError("plan: give a cluster dump (CLUSTER.yaml ...) or --kubeconfig PATH")
    warn(manifests.warnings)
    cloud = StaticCloud.from_nodes(manifests.nodes, definitions)
    warn(cloud.warnings)
    if args.kubeconfig and args.now is None:
        now, now_source = time.time(), "wall clock: a live cluster"
    else:
        now, now_source = resolve_now(args.now, manifests)

    snapshot, pending, messages = snapshot_from_dump(manifests.nodes, manifests.pods, source)
    warn(messages)
    usage = _usage_sample(snapshot, usage_objects) if usage_objects is not None else None
    if usage is not None:
        warn(usage.warnings)
    pending, untried = mark_untried(pending)
    missing = missing_controller_kinds(manifests, snapshot)
    if missing:
        warn(
            [
                f"{source}: pods are owned by {', '.join(missing)} objects the dump does not contain: "
                "scale-down's controller checks (ControllerNotFound, MinReplicasReached) are off"
            ]
        )

    result = plan_loop(
        options,
        snapshot,
        cloud,
        pending,
        manifests,
        now,
        expire_timers=not args.no_expire_timers,
        controllers_known=not missing,
        usage=usage,
        unblock_nodes=args.explain_nodes or None,
        unblock_budget=args.unblock_budget,
    )
    explain = _chosen_nodes(args.explain_nodes, result.scale_down, source)  # checked with --json too
    if result.unhealthy and args.json:
        warn([result.unhealthy])
    if args.json:
        print_json(plan_json(result, cloud, snapshot, now, now_source, untried), args.json)
        return 0
    _print_human(
        result,
        cloud,
        snapshot,
        now,
        now_source,
        untried,
        expire_timers=not args.no_expire_timers,
        explain=explain,
    )
    return 0


# -- inputs -------------------------------------------------------------------------------------


def _read_live_cluster(kubeconfig: str, context: str | None) -> tuple[Manifests, str]:
    from kubetide.kube.client import connect
    from kubetide.kube.dump import read_cluster

    client = connect(kubeconfig, context)
    try:
        return read_cluster(client), client.server
    finally:
        client.close()


USAGE_KINDS = frozenset({"PodMetrics", "NodeMetrics", "NodeQOS", "AvoidanceAction"})
USAGE_OBJECTS = "usage and QoS objects (PodMetrics, NodeMetrics, NodeQOS, AvoidanceAction)"


def _read_usage(paths: Sequence[str]) -> Manifests:
    import kubetide.qos  # noqa: F401 - teaches the loader the metrics and crane kinds
    from kubetide.cli.inputs import load_manifests

    manifests = load_manifests("plan --usage", (paths, USAGE_KINDS, USAGE_OBJECTS))
    warn(manifests.warnings)
    return manifests


def _usage_sample(snapshot: ClusterSnapshot, objects: Manifests) -> UsageSample:
    from kubetide.kube.usage import usage_sample

    def of(kind: str) -> list:
        return objects.other.get(kind, [])

    return usage_sample(snapshot, of("NodeQOS"), of("AvoidanceAction"), of("PodMetrics"), of("NodeMetrics"))


def _chosen_nodes(names: Sequence[str], plan: ScaleDownPlan, source: str) -> list[str]:
    """--node names, each checked against the dump's nodes (one line naming it when unknown)."""
    for name in names:
        if name not in plan.nodes:
            close = difflib.get_close_matches(name, list(plan.nodes), n=1)
            hint = f" (did you mean {close[0]}?)" if close else ""
            raise UserError(f"--node {name}: {source} has no node {name!r}{hint}")
    return list(dict.fromkeys(names))


def parse_set_flags(items: Sequence[str]) -> AutoscalerOptions:
    """`--set flag=value` items into options; bad ones are one-line UserErrors naming the flag."""
    from kubetide.autoscaler.options import parse_options

    mapping: dict[str, str] = {}
    for item in items:
        name, sep, value = item.partition("=")
        name = name.strip()
        if not sep or not name:
            raise UserError(f"--set {item}: expected FLAG=VALUE (e.g. --set scale-down-unneeded-time=5m)")
        mapping[name] = value.strip()
    warnings: list[str] = []
    try:
        options = parse_options(mapping, "--set", field="", warnings=warnings)
    except ManifestError as exc:
        raise UserError(f"--set {exc.field}: {exc.message}") from None
    warn(f"--set {w}" for w in warnings)
    return options


def mark_untried(pending: Iterable[Pod]) -> tuple[list[Pod], list[str]]:
    """Pending pods with no PodScheduled condition become PodScheduled=False/Unschedulable."""
    result, untried = [], []
    for pod in pending:
        if not pod.scheduled_status:
            pod = dataclasses.replace(pod, scheduled_status="False", scheduled_reason="Unschedulable")
            untried.append(pod.key)
        result.append(pod)
    return result, untried


def missing_controller_kinds(manifests: Manifests, snapshot: ClusterSnapshot) -> list[str]:
    """Controller kinds bound pods name that the dump lacks: then the controllers are unknown.

    Drainability rule 3 takes a controller missing from the list as gone (ControllerNotFound); a
    dump without any ReplicaSet would block every node that way. With controllers unknown, rule 3
    stays silent, as the Cluster Autoscaler without listers.
    """
    from kubetide.autoscaler.scaledown.planning import REPLICATED_KINDS

    present = {w.kind for w in manifests.workloads}
    referenced = {
        ref.kind
        for pod in snapshot.pods()
        if (ref := pod.controller) is not None and ref.kind in REPLICATED_KINDS
    }
    return sorted(referenced - present)


# -- the loop -------------------------------------------------------------------------------------


@dataclasses.dataclass
class PlanResult:
    """The loop's decision (autoscaler/decision.py) as plan shows it."""

    decision: LoopDecision
    budget: BudgetDecision
    options: AutoscalerOptions = dataclasses.field(default_factory=AutoscalerOptions)

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


def plan_loop(
    options: AutoscalerOptions,
    snapshot: ClusterSnapshot,
    cloud: StaticCloud,
    pending: Sequence[Pod],
    manifests: Manifests,
    now: float,
    *,
    expire_timers: bool = True,
    controllers_known: bool = True,
    usage: UsageSample | None = None,
    unblock_budget: float = UNBLOCK_BUDGET,
    unblock_nodes: Collection[str] | None = None,
) -> PlanResult:
    """The loop's decision (decide, with a fresh LoopState) on `snapshot`, which is left with the
    pending pods that fit existing nodes bound there, as the scheduler would place them."""
    from kubetide.autoscaler.decision import LoopInputs, LoopState, decide
    from kubetide.autoscaler.scaledown.explanation import Recording, find_unblocks
    from kubetide.autoscaler.scaledown.planning import crop
    from kubetide.autoscaler.scaleup.expanders import PRIORITY_CONFIGMAP
    from kubetide.clock import work_timer
    from kubetide.grpcexpander import expander_service
    from kubetide.scheduling import PredicateChecker

    namespaces = {ns.name: ns.labels for ns in manifests.namespaces}
    # Offline, every time budget (scale-down-simulation-timeout, --unblock-budget, ...) is counted
    # in work as the simulator counts it, never by the machine's clock: the same input gives the
    # same plan and the same answers on a loaded machine and an idle one.
    timer = work_timer()
    state = LoopState(
        options,
        timer=timer,
        timers_expired=expire_timers,
        expander_service=expander_service(options),
    )
    # The loop's search, recorded: with timers expired it is the one the unblock answers start
    # from (unblock_search.find_unblocks), which then need not run it again.
    unblock = unblock_budget > 0
    recording = Recording() if unblock and expire_timers else None
    if recording is not None:
        state.planner.simulate = recording
    inputs = LoopInputs(
        now,
        snapshot,
        pending=pending,
        pdbs=manifests.pdbs,
        workloads=manifests.workloads,
        controllers_known=controllers_known,
        namespaces=namespaces,
        priorities=_configmap(manifests.configmaps, options.namespace, PRIORITY_CONFIGMAP),
        usage=usage,
    )
    with PredicateChecker(snapshot, namespaces) as checker:
        decision = decide(state, inputs, cloud=cloud, checker=checker, past_halt=True)
        if decision.bound:  # a pod's key is built on each read: only when some are to be bound
            by_key = {p.key: p for p in pending}
            for key, node in decision.bound.items():
                snapshot.bind(by_key[key], node)
        if unblock and decision.scale_down is not None:
            # What would unblock each unremovable node: the planner again, on the cluster as the
            # scheduler leaves it, with each suggested change applied (explanation/unblock_search.py).
            plan = decision.scale_down
            answers = find_unblocks(
                inputs,
                options,
                cloud,
                plan=plan,
                checker=checker,
                timer=timer,
                budget=unblock_budget,
                nodes=unblock_nodes,
                recording=recording,
            )
            for name, answer in answers.items():
                plan.nodes[name].unblock = answer
    budget = decision.budget or crop([], [], options)
    return PlanResult(decision, budget, options=options)


def _configmap(configmaps: Iterable[ConfigMap], namespace: str, name: str) -> ConfigMap | None:
    for cm in configmaps:
        if cm.meta.namespace == namespace and cm.meta.name == name:
            return cm
    return None


# -- --json -------------------------------------------------------------------------------------------


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


# -- human output -------------------------------------------------------------------------------------

# Why a pod blocks its node, in words, with the flag that would change the answer.
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


def _names(keys: Sequence[str], limit: int = SHOWN_PODS) -> str:
    shown = ", ".join(keys[:limit])
    return shown + (f" and {len(keys) - limit} more" if len(keys) > limit else "")


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def scale_up_lines(result: PlanResult, untried: Sequence[str] = ()) -> list[str]:
    """The scale-up half in a few lines: what grows, for whom, and why the others get nothing."""
    plan, expander = result.scale_up, result.options.expander
    min_size = [i for i in result.decision.increases if i.group_id in result.decision.min_size_groups]
    lines = [
        f"growing {i.group_id} by {_plural(i.delta, 'node')} to its min size {i.new_size}"
        " (enforce-node-group-min-size)"
        for i in min_size
    ]
    if not plan.pending and not plan.schedulable and not plan.not_helped:
        return [*lines, "no unschedulable pods: nothing to scale up"]
    if plan.schedulable:
        fit = [f"{key} on {node}" for key, node in plan.schedulable.items()]
        lines.append(f"{_plural(len(fit), 'pending pod')} fit existing or upcoming nodes: {_names(fit)}")
    if untried:
        lines.append(
            f"({_plural(len(untried), 'pending pod')} without a PodScheduled condition taken as "
            f"unschedulable: {_names(list(untried))})"
        )
    if plan.pending:
        head = f"{_plural(len(plan.pending), 'pod')} need a new node"
        if plan.increases:
            grow = ", ".join(
                f"{i.group_id} by {_plural(i.delta, 'node')} to {i.new_size} (max {i.max_size})"
                for i in plan.increases
            )
            helped = list(plan.increases[0].pods)
            lines.append(
                f"{head}; growing {grow}, chosen by {','.join(expander)}, "
                f"for {_plural(len(helped), 'pod')}: {_names(helped)}"
            )
        else:
            lines.append(f"{head}; no node group can take them: no scale-up")
    if plan.chosen is not None:
        for option in plan.options:
            if option.group_id != plan.chosen.group_id:
                lines.append(
                    f"  other option: {option.group_id} +{_plural(option.node_count, 'node')} "
                    f"for {_plural(len(option.pods), 'pod')}"
                )
    for group_id, skip in plan.skipped_groups.items():
        lines.append(f"  node group {group_id} skipped: {skip}")
    by_reason: dict[str, list[str]] = {}
    for key, reason in plan.not_helped.items():
        by_reason.setdefault(reason, []).append(key)
    for reason, keys in by_reason.items():
        lines.append(f"  not helped: {_names(keys)}: {reason}")
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


def deletion_lines(budget: BudgetDecision, plan: ScaleDownPlan) -> list[str]:
    if not budget.empty and not budget.drain:
        removable = plan.removable_now()
        return [
            "would delete: nothing"
            + (
                ""
                if removable or not plan.candidate_set
                else " (candidates are waiting, see the reasons above)"
            )
        ]
    chosen = set(budget.drain)
    lines = [
        "would delete: "
        + ", ".join([*(f"{n} (empty)" for n in budget.empty), *(f"{n} (drain)" for n in budget.drain)])
    ]
    drained = {
        pod.key for name in chosen if (drain := plan.drains.get(name)) is not None for pod in drain.movable
    }
    moving = [f"{pod} -> {node}" for pod, node in plan.destinations.items() if pod in drained]
    if moving:
        lines.append(f"  pods move: {_names(moving, 8)}")
    return lines


def summary_lines(result: PlanResult) -> list[str]:
    """The counts first: nodes by status, unremovable ones by reason, and the scale-up decision."""
    from kubetide.autoscaler.scaledown.planning import BEING_DELETED, REMOVABLE, UNREMOVABLE

    sd = result.scale_down
    statuses = list(sd.nodes.values())
    removable = [s for s in statuses if s.status == REMOVABLE]
    deleting = sum(1 for s in statuses if s.status == BEING_DELETED)
    unremovable = [s for s in statuses if s.status == UNREMOVABLE]
    chosen = len(result.budget.empty) + len(result.budget.drain)
    head = (
        f"{_plural(len(statuses), 'node')}: {len(removable)} removable "
        f"({sum(1 for s in removable if s.empty)} empty), {len(unremovable)} unremovable"
        + (f", {deleting} being deleted" if deleting else "")
        + f"; would delete {chosen}"
    )
    lines = [head]
    by_reason: dict[str, list[NodeStatus]] = {}
    for status in unremovable:
        by_reason.setdefault(str(status.reason) if status.reason is not None else "-", []).append(status)
    if by_reason:
        parts = []
        for reason, nodes in sorted(by_reason.items(), key=lambda item: (-len(item[1]), item[0])):
            pods: dict[str, int] = {}
            for status in nodes:
                if status.blocking_pod is not None:
                    key = str(status.blocking_pod.reason)
                    pods[key] = pods.get(key, 0) + 1
            detail = ", ".join(
                f"{k} {n}" for k, n in sorted(pods.items(), key=lambda item: (-item[1], item[0]))
            )
            parts.append(f"{reason} {len(nodes)}" + (f" ({detail})" if detail else ""))
        lines.append("unremovable by reason: " + ", ".join(parts))
    paced = [
        f"{len(sd.risky)} risky (drained pod by pod as their PDBs allow)" if sd.risky else "",
        f"{len(sd.waiting_for_budget)} waiting for PDB budget (unneeded timers kept)"
        if sd.waiting_for_budget
        else "",
        f"{len(sd.surges)} moved by surge before evict (Deployments restarted first)" if sd.surges else "",
    ]
    if any(paced):
        lines.append("PodDisruptionBudget-paced: " + ", ".join(part for part in paced if part))
    up = result.scale_up
    grows = ", ".join(f"{i.group_id} +{i.delta}" for i in result.decision.increases) or "no node group grows"
    lines.append(
        f"scale-up: {grows}; {_plural(len(up.pending), 'pending pod')} need a new node, "
        f"{len(up.schedulable)} fit existing nodes, {len(up.not_helped)} not helped"
    )
    return lines


def _print_human(
    result: PlanResult,
    cloud: StaticCloud,
    snapshot: ClusterSnapshot,
    now: float,
    now_source: str,
    untried: Sequence[str],
    *,
    expire_timers: bool,
    explain: Sequence[str] = (),
) -> None:
    from rich.markup import escape

    from kubetide.cloud.static import GROUPS_YAML

    out = console()
    width = line_width(out)

    def say(text: str = "", indent: str = "") -> None:
        for line in wrap(text, width, indent=indent, more=indent + "    "):
            out.print(escape(line), soft_wrap=True)

    def bold(text: str) -> None:
        out.print(f"[bold]{escape(text)}[/bold]", soft_wrap=True)

    say(
        f"{_plural(len(snapshot), 'node')}, {_plural(snapshot.pod_count(), 'bound pod')}; "
        f"now = {rfc3339(now)} ({now_source})"
    )
    bold("Summary")
    for line in summary_lines(result):
        say(line, indent="  ")
    say()
    unmanaged = [n.name for n in snapshot.nodes() if cloud.node_group_for(n) is None]
    for g in cloud.node_groups():
        say(
            f"node group {g.id}: {_plural(g.target_size(), 'node')}, min {g.min_size}, max {g.max_size} "
            f"({'from ' + g.origin if g.origin != GROUPS_YAML else g.origin})"
        )
    if unmanaged:
        say(f"not autoscaled: {_names(unmanaged)}")
    if result.unhealthy:
        say(f"warning: {result.unhealthy}")

    say()
    bold("Scale-up")
    for line in scale_up_lines(result, untried):
        say(line.lstrip(), indent=line[: len(line) - len(line.lstrip())])

    sd = result.scale_down
    say()
    timers = "timers taken as expired" if expire_timers else "timers running: --no-expire-timers"
    bold(f"Scale-down ({timers})")
    if result.bound_for_scale_down:
        say(
            f"{_plural(len(result.bound_for_scale_down), 'pending pod')} counted on the nodes they fit "
            "(the scheduler will bind them there)"
        )
    if sd.validation_failure:
        say(f"note: no new candidates: {sd.validation_failure}")
    if sd.cooldown:
        options = result.options
        if options.scale_down_enabled:  # a fresh planner: only this loop's scale-up pauses it
            wait = format_duration(options.scale_down_delay_after_add)
            say(f"note: scale-down paused: this scale-up starts scale-down-delay-after-add ({wait})")
        else:
            say(f"note: scale-down paused: {sd.cooldown}")
    if sd.timed_out:
        say("note: scale-down-simulation-timeout reached; the remaining nodes were not simulated")
    if result.cooldown_expired and not sd.cooldown:
        say(
            "note: after this scale-up the autoscaler waits scale-down-delay-after-add before deleting; "
            "taken as run out"
        )
    if explain:
        for name in explain:
            for text, indent in node_explanation(name, result, cloud, snapshot):
                say(text, indent=indent)
    elif sd.nodes:
        header, *rows = _node_table(sd, cloud, snapshot, result.options, width)
        bold(header)
        for line in rows:
            out.print(escape(line), soft_wrap=True)
    else:
        say("no nodes in the dump")
    for line in deletion_lines(result.budget, sd):
        say(line.lstrip(), indent=line[: len(line) - len(line.lstrip())])
    if sd.schedule is not None and (total := sd.schedule.words()):
        say(total)
    if not explain:
        for line in unblock_lines(sd):
            say(line.lstrip(), indent=line[: len(line) - len(line.lstrip())])
    if held := result.decision.held:
        one = len(held) == 1
        say(
            f"held: {_names(held)}: unready in a group at its target size, {'it goes' if one else 'they go'}"
            f" once the node controller has removed {'its' if one else 'their'} pods (UC6)"
        )
    if result.budget.left_out:
        say(
            f"waiting for the parallelism budgets: {_names(result.budget.left_out)}"
            + (" (ScaleDownThrottled)" if result.budget.throttled else "")
        )


def why_text(status: NodeStatus, group: StaticNodeGroup | None, options: AutoscalerOptions) -> str:
    """The node's answer in words, naming the blocking pod first when a pod decided it."""
    detail = node_detail(status, group, options)
    if status.blocking_pod is None:
        return detail
    pod = f"{status.blocking_pod.pod.key} ({status.blocking_pod.reason}){status.more_blockers()}"
    return f"blocked by {pod}" + (f": {detail}" if detail else "")


def unblock_lines(plan: ScaleDownPlan) -> list[str]:
    """What would make each unremovable node removable, found by the planner: the nodes with the
    same answer on one line ("7 nodes (...): ..."), so that the section fits a screen, and the
    most actionable answers first (`Unblock.rank`: a verified fix, the blocking pod's before a
    budget's or a group's before a flag's; then waits), in the plan's order within a rank."""
    nodes: dict[str, list[str]] = {}
    ranks: dict[str, tuple[int, int]] = {}
    for name, status in plan.nodes.items():
        answer = status.unblock
        if answer is None or not answer.text:
            continue
        text = answer.text + (" [not enough]" if answer.needs_more else "")
        nodes.setdefault(text, []).append(name)
        ranks[text] = min(ranks.get(text, answer.rank), answer.rank)
    lines = [
        f"  {names[0] if len(names) == 1 else f'{len(names)} nodes ({_names(names)})'}: {text}"
        for text, names in sorted(nodes.items(), key=lambda item: ranks[item[0]])
    ]
    if not lines:
        return []
    return ["What would unblock them (each change checked by running the planner again with it):", *lines]


def _node_table(
    plan: ScaleDownPlan,
    cloud: StaticCloud,
    snapshot: ClusterSnapshot,
    options: AutoscalerOptions,
    width: int,
) -> list[str]:
    from kubetide.autoscaler.scaledown.planning import REMOVABLE

    rows = []
    for name, status in plan.nodes.items():
        group = cloud.node_group_for(snapshot.node(name)) if name in snapshot else None
        util = "-" if status.utilization is None else f"{status.utilization:.0%}"
        state = status.status + (" (empty)" if status.empty and status.status == REMOVABLE else "")
        rows.append(
            (
                name,
                group.id if group is not None else "-",
                util,
                state,
                str(status.reason) if status.reason is not None else "-",
                why_text(status, group, options),
            )
        )
    return text_table(("node", "group", "util", "status", "reason", "why"), rows, width)


def node_explanation(
    name: str, result: PlanResult, cloud: StaticCloud, snapshot: ClusterSnapshot
) -> list[tuple[str, str]]:
    """`--node NAME`: everything the loop decided about one node, as (text, indent) lines."""
    from kubetide.autoscaler.scaledown.planning import REMOVABLE
    from kubetide.model.quantity import CPU, MEMORY, format_units

    sd = result.scale_down
    status = sd.nodes[name]
    node = snapshot.node(name) if name in snapshot else None
    group = cloud.node_group_for(node) if node is not None else None
    state = status.status + (" (empty)" if status.empty and status.status == REMOVABLE else "")
    reason = f": {status.reason}" if status.reason is not None else ""
    lines = [(f"node {name}: {state}{reason}", "")]
    if group is not None:
        lines.append(
            (
                f"node group: {group.id} ({group.target_size()} nodes, min {group.min_size}, max {group.max_size})",
                "  ",
            )
        )
    else:
        lines.append(("node group: none (not autoscaled)", "  "))
    if node is not None:
        allocatable = snapshot.allocatable(name)
        requested = snapshot.requested(name)
        shares = [
            f"{resource} {format_units(resource, requested.get(resource, 0))} of {format_units(resource, amount)}"
            for resource, amount in allocatable.items()
            if resource in (CPU, MEMORY)
        ]
        util = "-" if status.utilization is None else f"{status.utilization:.0%}"
        lines.append((f"utilization: {util} (requests: {', '.join(shares)})", "  "))
    lines.append((f"why: {why_text(status, group, result.options) or '-'}", "  "))
    if status.unblock is not None and status.unblock.text:
        more = " [not enough]" if status.unblock.needs_more else ""
        lines.append((f"what would unblock it: {status.unblock.text}{more}", "  "))
    deleted = "empty" if name in result.budget.empty else "drain" if name in result.budget.drain else None
    if deleted is not None:
        lines.append((f"would delete it now ({deleted})", "  "))
    elif name in result.budget.left_out:
        lines.append(("removable, but waiting for the parallelism budgets", "  "))
    pods = sorted(snapshot.pods_on(name).values(), key=lambda p: p.key) if node is not None else []
    lines.append((f"pods ({len(pods)}):", "  "))
    blocking = {b.pod.key: b for b in status.blockers}
    for pod in pods:
        if pod.key in blocking:
            fate = f"blocks the drain ({blocking[pod.key].reason})"
        elif pod.is_daemonset or pod.is_mirror:
            fate = "DaemonSet pod: not moved" if pod.is_daemonset else "mirror pod: not moved"
        elif pod.key in sd.destinations:
            fate = f"would move to {sd.destinations[pod.key]}"
        else:
            fate = ""
        lines.append((pod.key + (f": {fate}" if fate else ""), "    "))
    return lines
