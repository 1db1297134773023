"""The console summary `kubetide simulate` ends with: what happened, in numbers, from summary.json.

Rows that are zero in every ordinary run (halted loops, backoff, failed scale-ups, ...) appear
only when they are not, so a stockout or an unhealthy cluster stands out. Times are shown as the
offset into the simulation and as the RFC 3339 wall time it stands for (summary.json's `start`).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rich.table import Table

from kubetide.cli.output import console
from kubetide.durations import format_duration, rfc3339
from kubetide.model.reader import parse_time


def at(summary: Mapping[str, Any], offset: float) -> str:
    """A simulated moment: `+90s (2026-01-01T00:01:30Z)`."""
    return f"+{format_duration(offset)} ({rfc3339(parse_time(summary['start']) + offset)})"


def summary_rows(summary: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(label, value) rows, in reading order; the invariants last."""
    nodes, pods, up, down = summary["nodes"], summary["pods"], summary["scale_up"], summary["scale_down"]
    rows = [
        ("nodes (initial -> final, peak)", f"{nodes['initial']} -> {nodes['final']}, peak {nodes['peak']}"),
        ("node-hours / cost", f"{summary['node_hours']:,.1f} / ${summary['cost']:,.2f}"),
        ("pending pods (max, at end)", f"{pods['max_pending']:,}, {pods['pending_at_end']:,}"),
        ("pending pod-seconds", f"{pods['pending_pod_seconds']:,.0f}"),
        ("scale-up decisions", f"{up['events']:,}"),
        ("nodes requested -> came up", f"{up['nodes_requested']:,} -> {up['nodes_added']:,}"),
    ]
    if up["nodes_failed"]:
        rows.append(("nodes that failed to come up", f"{up['nodes_failed']:,}"))
    if up["nodes_coming_up_at_end"]:
        rows.append(("nodes still coming up at the end", f"{up['nodes_coming_up_at_end']:,}"))
    rows.append(
        (
            "scale-down (removed: empty + drained)",
            f"{down['nodes_removed']}: {down['empty_removed']} + {down['drained_removed']}",
        )
    )
    if down["first_removal_at"] is not None:
        rows.append(("first node removal", at(summary, down["first_removal_at"])))
        rows.append(("last node removal", at(summary, down["last_removal_at"])))
    rows.append(("max concurrent drains", str(down["max_concurrent_drains"])))
    # The autoscaler's own: the QoS agent's evictions have rows of their own (below).
    rows.append(("evictions by the autoscaler's drains", f"{summary['evictions']:,}"))
    rows.append(("drain evictions refused by a PDB (HTTP 429)", f"{summary['evictions_refused']:,}"))
    rows += _disruption_rows(summary)
    rows += _headline_rows(summary)
    rows += _qos_rows(summary.get("qos"))
    return rows


def _disruption_rows(summary: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The disruption ledger's totals (sim/runtime/ledger.py) and the pods' pending p99."""
    ledger = summary["disruption"]
    last = ledger["last_removal_seconds"]
    rows = [
        ("pending p99 (creation to binding)", format_duration(summary["pods"]["pending_seconds_p99"])),
        ("time below a PDB's minimum", format_duration(round(ledger["below_pdb_minimum_seconds"]))),
        ("pod-seconds below desired replicas", f"{ledger['below_desired_pod_seconds']:,.0f}"),
        ("last removal after the last load change", "none" if last is None else format_duration(last)),
    ]
    if ledger["budget_wait_node_seconds"]:
        rows.append(
            ("node time waiting for budget", format_duration(round(ledger["budget_wait_node_seconds"])))
        )
    if ledger["churned_nodes"]:
        rows.append(("nodes removed within 30m of joining", f"{ledger['churned_nodes']:,}"))
    if ledger["worst"]:
        rows.append(("most disrupted workload", ledger["worst"]))
    return rows


def _headline_rows(summary: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The unready-node scenarios' measures, when they happened at all."""
    rows = []
    health = summary.get("cluster_health") or {}
    if health.get("halted_loops"):
        rows.append(("loops halted: cluster unhealthy", f"{health['halted_loops']:,}"))
    if health.get("unhealthy_seconds"):
        rows.append(("cluster unhealthy for", format_duration(health["unhealthy_seconds"])))
    groups = summary.get("node_groups") or {}
    for label, key, show in (
        ("scale-up backoff", "backoff_seconds", format_duration),
        ("unregistered nodes removed", "unregistered_removed", str),
        ("target size fixes", "target_size_fixes", str),
    ):
        per_group = {name: counts[key] for name, counts in groups.items() if counts.get(key)}
        if per_group:
            rows.append((label, ", ".join(f"{name} {show(value)}" for name, value in per_group.items())))
    for label, key in (
        ("node controller evictions", "node_controller_evictions"),
        ("autoscaler restarts", "autoscaler_restarts"),
        ("faults injected", "faults_injected"),
    ):
        if summary.get(key):
            rows.append((label, f"{summary[key]:,}"))
    return rows


def _qos_rows(qos: Mapping[str, Any] | None) -> list[tuple[str, str]]:
    if qos is None:
        return []
    rows = []
    runs = qos.get("comparison") or {"precise" if qos["precise"] else "all": qos}
    for mode, counts in runs.items():
        rows.append(
            (
                f"QoS agent, {mode} (evictions, throttles, restores)",
                f"{counts['evictions']:,}, {counts['throttles']:,}, {counts['restores']:,}",
            )
        )
        rows.append(
            (f"QoS agent, {mode}: node-seconds over a watermark", f"{counts['seconds_over_watermark']:,.0f}")
        )
    return rows


def _fixed_start(summary: Mapping[str, Any]) -> bool:
    from kubetide.sim.spec.scenario import EPOCH

    return parse_time(summary["start"]) == EPOCH


def print_summary(summary: Mapping[str, Any], paths: Mapping[str, Path]) -> None:
    out = console()
    simulated = summary["simulated_seconds"]
    wall = max(summary["wall_seconds"], 1e-9)
    out.print(
        f"[bold]{summary['scenario']}[/bold]: simulated {format_duration(simulated)} in {wall:.1f}s "
        f"({simulated / wall:,.0f}x real time), seed {summary['seed']}, autoscaler: {summary['autoscaler']}",
    )
    chosen = (
        " (the simulator's fixed start: the scenario's objects carry no times)"
        if _fixed_start(summary)
        else " (the newest time in the scenario's objects, e.g. when its cluster dump was taken)"
    )
    out.print(f"simulated start: {summary['start']}{chosen}; times below are offsets from it")
    if summary["autoscaler"] == "none":
        out.print("[yellow]run without an autoscaler: the cluster runs, but nothing scales[/yellow]")
    table = Table(show_header=True, header_style="bold", box=None, pad_edge=False)
    table.add_column("")
    table.add_column("", justify="right")
    for label, value in summary_rows(summary):
        table.add_row(label, value)
    for name, value in summary["invariants"].items():
        style = "green" if value == 0 else "bold red"
        table.add_row(f"invariant {name}", f"[{style}]{value}[/{style}]")
    files = ", ".join(p.name for p in paths.values())
    out.print(f"wrote {files} to {next(iter(paths.values())).parent}/")
    out.print(table)
