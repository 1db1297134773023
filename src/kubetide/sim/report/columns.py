"""The rows of `simulate --compare`'s table, shared by the console, report.html and compare.json,
and how their values are written."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubetide.durations import format_duration

# The rows of the console table and compare.json's `metrics`: (key, heading, path in summary.json).
# Each setting's metrics also carry summary.json's whole `disruption` ledger (runtime/ledger.py).
METRICS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("cost", "cost ($)", ("cost",)),
    ("node_hours", "node-hours", ("node_hours",)),
    ("nodes_final", "nodes final", ("nodes", "final")),
    ("last_removal_seconds", "last removal", ("disruption", "last_removal_seconds")),
    ("pending_pod_seconds", "pending pod-seconds", ("pods", "pending_pod_seconds")),
    ("pending_seconds_p99", "pending p99", ("pods", "pending_seconds_p99")),
    ("max_pending", "max pending", ("pods", "max_pending")),
    ("evictions", "drain evictions", ("evictions",)),  # the autoscaler's; the QoS agent's apart
    ("drains", "drains", ("scale_down", "drained_removed")),
    ("below_pdb_minimum_seconds", "below PDB minimum", ("disruption", "below_pdb_minimum_seconds")),
    ("below_desired_pod_seconds", "below desired pod-s", ("disruption", "below_desired_pod_seconds")),
    ("budget_wait_node_seconds", "waits for budget", ("disruption", "budget_wait_node_seconds")),
)

# The rows a comparison of policies adds (compare.json's `policy`, sweep/compare.py policy_metrics).
POLICY_ROWS: tuple[tuple[str, str], ...] = (
    ("autoscaler", "autoscaler"),
    ("pending_seconds_p50", "pending p50"),
    ("churned_nodes", "nodes churned (<30m)"),
    ("converge_seconds", "converged after last change"),
)


def format_flags(entry: Mapping[str, Any], separator: str = " ") -> str:
    """A compare.json setting's flags (and QoS mode) as the console and the report show them."""
    flags = [f"{name}={value}" for name, value in entry["flags"].items()]
    if "qos_precise" in entry:
        flags.append(f"qos.precise={'true' if entry['qos_precise'] else 'false'}")
    return separator.join(flags) or "(no flag changed)"


# Metrics that are durations: shown as one (`14m50s`), never as a bare count of seconds.
_DURATIONS = {
    "last_removal_seconds",
    "pending_seconds_p99",
    "below_pdb_minimum_seconds",
    "budget_wait_node_seconds",
    "pending_seconds_p50",
    "converge_seconds",
}


def format_metric(key: str, value: Any) -> str:
    """A compare.json metric as the console and the report show it."""
    if value is None:
        return "none"  # e.g. last_removal_seconds: no node removed after the last load change
    if isinstance(value, str):
        return value
    if key in _DURATIONS:
        return format_duration(round(value) if value >= 1 else value)
    if key == "cost":
        return f"${value:,.2f}"
    if key == "node_hours":
        return f"{value:,.1f}"
    if isinstance(value, float):
        return f"{value:,.0f}"
    return f"{value:,}"
