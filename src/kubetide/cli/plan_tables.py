"""`kubetide plan`'s tables: the summary, the node table, `--node NAME`'s full story of a node,
the deletions and the unblock answers, drawn with rich on the terminal."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from kubetide.cli.json_output import rfc3339
from kubetide.cli.output import console, line_width, text_table, wrap
from kubetide.cli.plan_words import names_text, plural, scale_up_lines, why_text
from kubetide.durations import format_duration

if TYPE_CHECKING:
    from kubetide.autoscaler.options import AutoscalerOptions
    from kubetide.autoscaler.scaledown.planning import BudgetDecision, NodeStatus, ScaleDownPlan
    from kubetide.cli.plan_words import PlanResult
    from kubetide.cloud.static import StaticCloud
    from kubetide.snapshot import ClusterSnapshot


def schedule_lines(plan: ScaleDownPlan) -> list[str]:
    """The whole scale-down's time on paper (estimate.py's schedule), when there is one."""
    total = plan.schedule.words() if plan.schedule is not None else ""
    return [total] if total else []


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
        lines.append(f"  pods move: {names_text(moving, 8)}")
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
        f"{plural(len(statuses), 'node')}: {len(removable)} removable "
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
        f"scale-up: {grows}; {plural(len(up.pending), 'pending pod')} need a new node, "
        f"{len(up.schedulable)} fit existing nodes, {len(up.not_helped)} not helped"
    )
    return lines


def print_human(
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
        f"{plural(len(snapshot), 'node')}, {plural(snapshot.pod_count(), 'bound pod')}; "
        f"now = {rfc3339(now)} ({now_source})"
    )
    bold("Summary")
    for line in summary_lines(result):
        say(line, indent="  ")
    say()
    unmanaged = [n.name for n in snapshot.nodes() if cloud.node_group_for(n) is None]
    for g in cloud.node_groups():
        say(
            f"node group {g.id}: {plural(g.target_size(), 'node')}, min {g.min_size}, max {g.max_size} "
            f"({'from ' + g.origin if g.origin != GROUPS_YAML else g.origin})"
        )
    if unmanaged:
        say(f"not autoscaled: {names_text(unmanaged)}")
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
            f"{plural(len(result.bound_for_scale_down), 'pending pod')} counted on the nodes they fit "
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
    for line in [*deletion_lines(result.budget, sd), *schedule_lines(sd)]:
        say(line.lstrip(), indent=line[: len(line) - len(line.lstrip())])
    if not explain:
        for line in unblock_lines(sd):
            say(line.lstrip(), indent=line[: len(line) - len(line.lstrip())])
    if held := result.decision.held:
        one = len(held) == 1
        say(
            f"held: {names_text(held)}: unready in a group at its target size, {'it goes' if one else 'they go'}"
            f" once the node controller has removed {'its' if one else 'their'} pods (UC6)"
        )
    if result.budget.left_out:
        say(
            f"waiting for the parallelism budgets: {names_text(result.budget.left_out)}"
            + (" (ScaleDownThrottled)" if result.budget.throttled else "")
        )


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
        f"  {names[0] if len(names) == 1 else f'{len(names)} nodes ({names_text(names)})'}: {text}"
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
