"""`kubetide qos NODE_STATE.yaml [--nodeqos NODEQOS.yaml ...] [--json]`: what the node QoS agent
would do on this node right now, and why.

The node-state file holds one Node, its pods, their usage as metrics-server objects (PodMetrics,
optionally NodeMetrics, as `kubectl get --raw /apis/metrics.k8s.io/v1beta1/...` prints them) and,
here or in --nodeqos files, the NodeQOS, AvoidanceAction and PodQOS objects. The node's usage is its own
measurement, which counts what runs outside pods (the kubelet, the runtime, system daemons): its
NodeMetrics, else the kubelet's summary (`--summary`, as `kubectl get --raw
/api/v1/nodes/NODE/proxy/stats/summary` prints it, which also gives the usage of pods without
PodMetrics). Only without either is it the sum of its pods' usage, and the report says so.
Every threshold counts as reached after this one sample.
A pod already throttled by the agent carries its quota in the annotation
`qos.kubetide.io/cpu-quota` (e.g. "800m"), so restores can be shown too. Evictions a
PodDisruptionBudget in the files would refuse (status.disruptionsAllowed) are shown as refused.
"""

from __future__ import annotations

import argparse
import json
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from kubetide.cli.json_output import add_json_argument, document
from kubetide.cli.now import add_now_argument, parse_now, resolve_now
from kubetide.cli.output import console, line_width, print_json, warn, wrap
from kubetide.cli.progress import Display
from kubetide.durations import rfc3339
from kubetide.errors import UserError
from kubetide.model.quantity import CPU, MEMORY, QuantityError, format_quantity, format_units, parse_resource

# The QoS agent (whose package registers its kinds with the loader when imported), the model's
# loader and the kubelet-summary reader are imported by the functions using them: `qos --help`
# needs none of them.
if TYPE_CHECKING:
    from kubetide.agent.usage import Usage
    from kubetide.model import Manifests, Node, Pod, PodDisruptionBudget, Taint
    from kubetide.qos import (
        MetricRegistry,
        NodeMetrics,
        NodeState,
        PodMetrics,
        PodState,
        QosConfig,
        RoundResult,
    )
    from kubetide.qos.executor import Decision, Execution

QUOTA_ANNOTATION = "qos.kubetide.io/cpu-quota"


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "qos",
        help="show what the node QoS agent would throttle or evict on a node now",
        description=__doc__.split("\n\n")[0].replace("`", ""),
    )
    parser.add_argument(
        "state", metavar="NODE_STATE.yaml", help="the node, its pods and their metrics; - for stdin"
    )
    parser.add_argument(
        "--nodeqos",
        metavar="NODEQOS.yaml",
        action="append",
        default=[],
        help="NodeQOS, AvoidanceAction and PodQOS objects (repeatable; - for stdin)",
    )
    parser.add_argument(
        "--summary",
        metavar="SUMMARY.json",
        help="the kubelet's /stats/summary for the node: its own usage when there is no NodeMetrics",
    )
    add_now_argument(parser)
    add_json_argument(parser, "a QOSResult")
    parser.add_argument(
        "--no-precise",
        dest="precise",
        action="store_false",
        help="crane's old behaviour: act on every candidate pod (for comparison)",
    )
    parser.add_argument(
        "--execute-excess",
        metavar="PERCENT",
        type=_percent,
        default=10,
        help="how far past the watermark to act (default 10)",
    )
    parser.set_defaults(run=run)


def _percent(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole percentage, got {text!r}") from None
    if not 0 <= value < 100:
        raise argparse.ArgumentTypeError(f"must be between 0 and 99, got {value}")
    return value


# -- building the node state ------------------------------------------------------------------


class _DryRun:
    """The QosActuator for a what-if: nothing changes; PDBs with a known status refuse evictions
    beyond their disruptionsAllowed."""

    def __init__(self, pdbs: list[PodDisruptionBudget]):
        self.allowed = {pdb.key: pdb.disruptions_allowed for pdb in pdbs}
        self.pdbs = pdbs

    def throttle(self, pod: Pod, quota_millicores: int) -> None:
        pass

    def restore(self, pod: Pod, quota_millicores: int | None) -> None:
        pass

    def taint_node(self, node: Node, taint: Taint) -> None:
        pass

    def untaint_node(self, node: Node, taint: Taint) -> None:
        pass

    def evict(self, pod: Pod, grace_seconds: int) -> bool:
        remaining = {
            p.key: left for p in self.pdbs if p.matches(pod) and (left := self.allowed[p.key]) is not None
        }
        if any(left <= 0 for left in remaining.values()):
            return False
        for key, left in remaining.items():
            self.allowed[key] = left - 1
        return True


def _load(args) -> tuple[Manifests, list[str]]:
    import kubetide.qos  # noqa: F401 - teaches the loader the metrics and crane kinds
    from kubetide.cli.inputs import CLUSTER_KINDS, QOS_KINDS, load_manifests, source_name

    state_kinds = CLUSTER_KINDS | QOS_KINDS | {"PodMetrics", "NodeMetrics"}
    manifests = load_manifests(
        "qos",
        ([args.state], state_kinds, "a node-state file (a Node, its pods and their metrics)"),
        (args.nodeqos, QOS_KINDS, "NodeQOS, AvoidanceAction or PodQOS objects"),
    )
    return manifests, [source_name(p) for p in [args.state, *args.nodeqos]]


def _node(manifests: Manifests, source: str) -> Node:
    if not manifests.nodes:
        raise UserError(f"{source}: no Node (the node-state file needs exactly one)")
    if len(manifests.nodes) > 1:
        names = ", ".join(n.name for n in manifests.nodes)
        raise UserError(f"{source}: more than one Node ({names}); the node-state file describes one node")
    return manifests.nodes[0]


def _quota(pod: Pod, source: str) -> int | None:
    text = pod.annotations.get(QUOTA_ANNOTATION)
    if text is None:
        return None
    try:
        quota = parse_resource(CPU, text)
    except QuantityError as exc:
        raise UserError(f"{source}: Pod {pod.key}: metadata.annotations.{QUOTA_ANNOTATION}: {exc}") from None
    if quota <= 0:
        raise UserError(
            f"{source}: Pod {pod.key}: metadata.annotations.{QUOTA_ANNOTATION}: must be positive, got {text!r}"
        )
    return quota


def read_summary(path: str) -> tuple[Usage, str]:
    """The kubelet's summary (JSON) as usage, and the node it is of. One-line errors."""
    from kubetide.agent.usage import parse_summary
    from kubetide.cli.inputs import read_input, source_name

    source = source_name(path)
    try:
        document = json.loads(read_input(path))
    except ValueError as exc:
        raise UserError(f"{source}: not JSON ({exc})") from None
    node = document.get("node") if isinstance(document, dict) else None
    if not isinstance(node, dict) or not isinstance(document.get("pods", []), list):
        raise UserError(
            f"{source}: not a kubelet summary (a JSON object with node and pods, as "
            "kubectl get --raw /api/v1/nodes/NODE/proxy/stats/summary prints it)"
        )
    return parse_summary(document), str(node.get("nodeName", ""))


def build_state(
    manifests: Manifests, source: str, summary: tuple[Usage, str] | None = None, summary_source: str = ""
) -> tuple[NodeState, list[str], str]:
    """The node's state from the files, with warnings and where the node usage comes from."""
    from kubetide.qos import NodeState, PodState

    node = _node(manifests, source)
    if summary is not None and summary[1] and summary[1] != node.name:
        raise UserError(f"{summary_source}: node.nodeName: the summary is of {summary[1]}, not {node.name}")
    summary_pods = summary[0].pods if summary is not None else {}
    warnings: list[str] = []
    metrics: dict[str, PodMetrics] = {}
    for pm in manifests.other.get("PodMetrics", []):
        if pm.key in metrics:
            raise UserError(f"{source}: two PodMetrics for pod {pm.key}")
        metrics[pm.key] = pm
    pods: list[PodState] = []
    for pod in manifests.pods:
        if pod.node_name and pod.node_name != node.name:
            warnings.append(f"{source}: pod {pod.key} is bound to {pod.node_name}, not {node.name}: ignored")
            continue
        if pod.is_terminal:
            continue
        pm = metrics.pop(pod.key, None)
        usage = pm.usage if pm is not None else summary_pods.get(pod.uid)
        if usage is None:
            warnings.append(
                f"{source}: pod {pod.key} has no PodMetrics: the agent counts it as using nothing "
                "(last of its class and priority)"
            )
        pods.append(PodState(pod, usage, _quota(pod, source)))
    for key in metrics:
        warnings.append(f"{source}: PodMetrics for {key}, which is not a pod on {node.name}: ignored")
    node_metrics: list[NodeMetrics] = [
        nm for nm in manifests.other.get("NodeMetrics", []) if nm.name == node.name
    ]
    for nm in manifests.other.get("NodeMetrics", []):
        if nm.name != node.name:
            warnings.append(f"{source}: NodeMetrics for {nm.name}, not {node.name}: ignored")
    if len(node_metrics) > 1:
        raise UserError(f"{source}: more than one NodeMetrics for node {node.name}")
    if node_metrics:
        state = NodeState(node, tuple(pods), node_metrics[0].usage, "NodeMetrics")
    elif summary is not None and summary[0].node:
        state = NodeState(node, tuple(pods), summary[0].node, "the kubelet summary")
    else:
        state = NodeState(node, tuple(pods))
    return state, warnings, usage_origin(state)


def usage_origin(state: NodeState) -> str:
    """Where the node's cpu and memory usage come from, in words."""
    sources = {resource: state.source_of(resource) for resource in (CPU, MEMORY)}
    if len(set(sources.values())) == 1:
        return _origin_words(sources[CPU])
    return ", ".join(f"{resource} from {_origin_words(where)}" for resource, where in sources.items())


def _origin_words(where: str) -> str:
    from kubetide.qos.state import POD_SUM

    return "the sum of its pods' usage" if where == POD_SUM else where


def fallback_note(state: NodeState) -> str | None:
    """What the report says when the node's usage had to fall back to its pods' sum."""
    missing = [resource for resource in (CPU, MEMORY) if not state.measured(resource)]
    if not missing:
        return None
    return (
        f"no node measurement of {' and '.join(missing)} (neither NodeMetrics nor --summary has it): the node's "
        "usage is the sum of its pods', which leaves out what runs outside pods (the kubelet, the "
        "container runtime, system daemons) and pods without metrics"
    )


# -- running ----------------------------------------------------------------------------------


def run(args) -> int:
    from kubetide.cli.inputs import source_name

    parse_now(args.now)  # a bad --now fails before any file is read
    # A node with thousands of pods takes seconds to read: a spinner says so on a terminal (not with --json).
    with Display(not args.json) as display:
        display.stage(f"loading {source_name(args.state)}")
        return _run(args, display)


def _run(args, display: Display) -> int:
    """One dry-run round of the agent; the display is taken off the terminal before the answer."""
    from kubetide.cli.inputs import source_name
    from kubetide.qos import AgentOptions, QosAgent, QosConfig

    manifests, paths = _load(args)
    warn(manifests.warnings)
    config = QosConfig.from_manifests(manifests)
    if not config.nodeqos:
        raise UserError(f"{', '.join(paths)}: no NodeQOS (put it in the node-state file or pass --nodeqos)")
    summary = read_summary(args.summary) if args.summary else None
    summary_source = source_name(args.summary) if args.summary else ""
    state, warnings, origin = build_state(manifests, source_name(args.state), summary, summary_source)
    warn(config.warnings)
    warn(warnings)
    agent = QosAgent(
        config,
        AgentOptions(precise=args.precise, execute_excess_percent=args.execute_excess, one_sample=True),
    )
    now, now_source = resolve_now(args.now, manifests)
    display.stage(f"one round of the QoS agent on {state.node.name}")
    result = agent.step(state, _DryRun(manifests.pdbs), now=now)
    display.close()
    if args.json:
        print_json(to_json(result, config.registry, state), args.json)
    else:
        render(result, state, config, origin, args, now_source=now_source)
    return 0


def to_json(result: RoundResult, registry: MetricRegistry, state: NodeState) -> dict:
    """The QOSResult document; gaps and releases are quantities of their metric's resource."""
    from kubetide.qos.config import ACTION_KINDS
    from kubetide.qos.executor import DONE, gap_units

    def amount(metric: str, units: int | None) -> str | None:
        return None if units is None else format_quantity(registry[metric].resource, units)

    gaps = {
        kind: {metric: amount(metric, gap_units(gap)) for metric, gap in result.gaps[kind].items()}
        for kind in ACTION_KINDS
        if result.gaps.get(kind)
    }
    actions = [
        {"pod": d.pod, "action": d.action, "metric": d.metric, "released": amount(d.metric, d.released)}
        for d in result.decisions
        if d.outcome == DONE
    ]
    sources = {resource: state.source_of(resource) for resource in (CPU, MEMORY)}
    result_json: dict[str, Any] = {"gaps": gaps, "actions": actions, "node_usage_source": sources}
    if result.execution.scheduling is not None:
        result_json["scheduling"] = result.execution.scheduling.kind
    return document("QOSResult", result_json)


# -- the readable report ----------------------------------------------------------------------


def _percent_text(value: Fraction) -> str:
    return f"{float(value):.1f}%"


def _usage_line(state: NodeState, resource: str) -> str:
    used = state.used(resource)
    capacity = state.capacity(resource)
    if used is None:
        return f"{resource} unknown"
    share = f" ({_percent_text(Fraction(used * 100, capacity))})" if capacity else ""
    return f"{resource} {format_units(resource, used)} of {format_units(resource, capacity)}{share}"


def render(
    result: RoundResult, state: NodeState, config: QosConfig, origin: str, args, *, now_source: str
) -> None:
    out = console()
    registry = config.registry
    out.print(
        f"[bold]Node {state.name}[/bold]: {_usage_line(state, CPU)}, {_usage_line(state, MEMORY)}; "
        f"usage from {origin}, at {rfc3339(result.now)} ({now_source})"
    )
    note = fallback_note(state)
    if note is not None:
        out.print(f"[bold]Fallback[/bold]: {note}.")
    selected = config.for_node(state.node)
    if not selected:
        out.print("No NodeQOS selects this node: the agent does nothing here.")
        return
    out.print()
    out.print("[bold]Rules[/bold] (every threshold counts as reached in this one sample)")
    for qos in selected:
        for rule in qos.rules:
            metric = registry[rule.metric]
            value = result.values.get(rule.metric)

            def show(amount: Fraction, metric=metric) -> str:
                return _percent_text(amount) if metric.percent else metric.format(amount)

            if value is None:
                compared = f"unknown (watermark {show(rule.watermark)})"
            else:
                relation = "over" if value > rule.watermark else "within"
                compared = f"{show(value)} {relation} {show(rule.watermark)}"
            preview = " (Preview)" if rule.preview else ""
            _item(out, f"  {qos.name}/{rule.name}: {rule.metric} {compared} -> {rule.action_name}{preview}")
    names = {qos.name for qos in selected}
    for skipped in config.skipped:
        if skipped.nodeqos in names:
            _item(out, f"  {skipped.nodeqos}/{skipped.rule}: skipped, unknown metric {skipped.metric}")
    _render_execution(out, "", result.execution, state, registry, args)
    if result.preview.gaps or result.preview.scheduling is not None:
        _render_execution(out, "Preview: ", result.preview, state, registry, args)


def _item(out, text: str) -> None:
    """An indented line of the listing, wrapped between words with its continuation indented
    under it (no markup: names and amounts only)."""
    for line in wrap(text, line_width(out), more="      "):
        out.print(line, soft_wrap=True, markup=False)


def _render_execution(out, prefix: str, execution: Execution, state: NodeState, registry, args) -> None:
    out.print()
    _render_scheduling(out, prefix, execution)
    if not execution.gaps:
        if execution.scheduling is None:
            out.print(f"[bold]{prefix}Nothing to do[/bold]: no rule in force has a gap to close.")
        return
    _render_gaps(out, prefix, execution, registry, args)
    pods = {p.key: p for p in state.pods}
    title = "actions it would take, not carried out" if prefix else "Actions, in execution order"
    out.print(f"[bold]{prefix}{title}[/bold]")
    if not execution.decisions:
        out.print("  none")
    for index, d in enumerate(execution.decisions, start=1):
        p = pods[d.pod].pod
        parts = _decision_parts(d, pods[d.pod], registry[d.metric])
        _item(
            out, f"  {index}. {d.action} {d.pod} (priority {p.priority}, {p.qos_class}): " + ", ".join(parts)
        )
    _render_gaps_after(out, execution, registry)
    _render_untouched(out, execution, state)


def _render_scheduling(out, prefix: str, execution: Execution) -> None:
    from kubetide.qos.executor import DISABLE_SCHEDULING, SCHEDULING_TAINT

    change = execution.scheduling
    if change is None:
        return
    taint = f"{SCHEDULING_TAINT.key}:{SCHEDULING_TAINT.effect}"
    if change.kind == DISABLE_SCHEDULING:
        out.print(
            f"[bold]{prefix}Disable scheduling[/bold]: taint the node {taint} ({', '.join(change.rules)})"
        )
    else:
        out.print(f"[bold]{prefix}Restore scheduling[/bold]: remove the taint {taint}")


def _render_gaps(out, prefix: str, execution: Execution, registry, args) -> None:
    from kubetide.qos.config import ACTION_KINDS

    margin = f" (+{args.execute_excess}% execute excess on avoidance)" if args.execute_excess else ""
    out.print(f"[bold]{prefix}Gaps[/bold]{margin}")
    for kind in ACTION_KINDS:
        for name, gap in execution.gaps.get(kind, {}).items():
            amount = "unknown (usage missing)" if gap is None else registry[name].format(gap)
            _item(out, f"  {kind} on {name}: {amount}")


def _decision_parts(d: Decision, pod: PodState, metric) -> list[str]:
    """What one action does: the quota it sets, what it releases or takes, the gap it closes."""
    from kubetide.qos.executor import REFUSED

    parts = []
    if d.kind != "Evict":
        before = pod.cpu_quota
        after = f"{d.quota}m" if d.quota is not None else "none"
        parts.append(f"quota {'none' if before is None else f'{before}m'} -> {after}")
    if d.outcome == REFUSED:
        parts.append("refused by a PodDisruptionBudget, nothing released")
    else:
        word = "takes" if d.kind == "ThrottleUp" else "releases"
        parts.append(f"{word} {metric.format(d.released)} of {d.metric}")
        if d.gap_before is not None and d.gap_before <= 0:
            parts.append("gap already closed")
        elif d.gap_before is not None and d.released is not None:
            after_gap = d.gap_before - d.released
            closed = " (closed)" if after_gap <= 0 else ""
            parts.append(f"gap {metric.format(d.gap_before)} -> {metric.format(max(after_gap, 0))}{closed}")
    if not d.precise:
        parts.append(d.reason)
    return parts


def _render_gaps_after(out, execution: Execution, registry) -> None:
    """Each gap no action worked on, and why; each one still open after acting."""
    from kubetide.qos.config import ACTION_KINDS

    for kind in ACTION_KINDS:
        for name, open_gap in execution.gaps.get(kind, {}).items():
            acted = any(d.kind == kind for d in execution.decisions)
            left = execution.remaining.get(kind, {}).get(name)
            if not acted and open_gap is not None:
                why = "closed by the evictions" if left is not None and left <= 0 else "no pod could take it"
                if kind == "ThrottleUp" and name not in execution.remaining.get(kind, {}):
                    why = "held: an avoidance gap on the same resource is open"
                _item(out, f"  {kind} on {name}: nothing to do ({why})")
            elif left is not None and left > 0 and acted:
                _item(out, f"  {kind} on {name}: {registry[name].format(left)} still open after acting")


def _render_untouched(out, execution: Execution, state: NodeState) -> None:
    acted_on = {d.pod for d in execution.decisions}
    untouched = [p for p in state.pods if p.key not in acted_on]
    if not untouched:
        return
    out.print("[bold]Untouched[/bold]")
    restoring_only = set(execution.gaps) == {"ThrottleUp"}
    for pod_state in untouched:
        default = "not throttled" if restoring_only else "not needed: the gaps closed without it"
        why = execution.skipped.get(pod_state.key, default)
        pod = pod_state.pod
        _item(out, f"  {pod_state.key} (priority {pod.priority}, {pod.qos_class}): {why}")
