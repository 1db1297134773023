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
from kubetide.cli.json_output import add_json_argument
from kubetide.cli.now import add_now_argument, parse_now, resolve_now
from kubetide.cli.output import print_json, warn
from kubetide.durations import parse_duration
from kubetide.errors import ManifestError, UserError

# The loop, the snapshot, the scheduler and the model are imported by the functions using them:
# `kubetide plan --help` and a usage error need none of them (tests/cli/test_startup.py).
if TYPE_CHECKING:
    from kubetide.autoscaler.ports import UsageSample
    from kubetide.autoscaler.scaledown.planning import ScaleDownPlan
    from kubetide.cli.plan_words import PlanResult
    from kubetide.cloud.static import StaticCloud
    from kubetide.model import ConfigMap, Manifests, Pod
    from kubetide.snapshot import ClusterSnapshot

CLUSTER_DUMP = "a cluster dump (kubectl get nodes,pods,... -o yaml)"
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
        "considers and per pod a check's simulation places, never by the clock, so a loaded machine "
        "gives the same answers as an idle one",
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
    from kubetide.cli.plan_tables import print_human
    from kubetide.cli.plan_words import plan_json

    explain = _chosen_nodes(args.explain_nodes, result.scale_down, source)  # checked with --json too
    if result.unhealthy and args.json:
        warn([result.unhealthy])
    if args.json:
        print_json(plan_json(result, cloud, snapshot, now, now_source, untried), args.json)
        return 0
    print_human(
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
    if options.policy == "karpenter":
        raise UserError(
            "--set policy=karpenter: plan shows kubetide's decisions; Karpenter's run in kubetide simulate"
        )
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
    from kubetide.autoscaler.explain import UnblockRequest, bind_scheduled, explain
    from kubetide.autoscaler.scaledown.explanation import Recording
    from kubetide.autoscaler.scaledown.planning import crop
    from kubetide.autoscaler.scaleup.expanders import PRIORITY_CONFIGMAP
    from kubetide.cli.plan_words import PlanResult
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
        # What would unblock each unremovable node: the planner again, on the cluster as the
        # scheduler leaves it, with each suggested change applied (explain.py, explanation/unblock_search.py).
        request = (
            UnblockRequest(nodes=unblock_nodes, budget=unblock_budget, recording=recording)
            if unblock
            else None
        )
        explanation = explain(
            decision, inputs, options=options, cloud=cloud, checker=checker, timer=timer, unblock=request
        )
    if decision.scale_down is not None:
        explanation.attach(decision.scale_down)
    # The tables show the cluster as the scheduler will leave it: the pending pods that fit bound.
    bind_scheduled(decision, inputs)
    budget = decision.budget or crop([], [], options)
    return PlanResult(decision, budget, options=options)


def _configmap(configmaps: Iterable[ConfigMap], namespace: str, name: str) -> ConfigMap | None:
    for cm in configmaps:
        if cm.meta.namespace == namespace and cm.meta.name == name:
            return cm
    return None
