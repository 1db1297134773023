"""The node QoS agent's part of the reports: one run's counts beside what the cluster paid
(compare.json's settings[].qos), the counts table and the watermark lines of report.html."""

from __future__ import annotations

import html
from typing import Any

from kubetide.qos import QosConfig

# What compare.json's settings[].qos shows for each mode, besides the agent's own counts.
COUNT_KEYS = (
    "throttles",
    "restores",
    "evictions",
    "over_evictions",
    "seconds_over_watermark",
    "evictions_refused",
    "nodes_over_watermark_at_end",
    "scheduling_disabled",
)


# -- precise vs all (sweep/compare.py runs both modes) ---------------------------------------


def mode_counts(summary: dict) -> dict[str, Any]:
    """One run's column of the QoS comparison: the agent's counts and what the cluster paid."""
    counts: dict[str, Any] = {key: summary["qos"][key] for key in COUNT_KEYS}
    counts["nodes_added"] = summary["scale_up"]["nodes_added"]
    counts["nodes_removed"] = summary["scale_down"]["nodes_removed"]
    counts["cost"] = summary["cost"]
    counts["pending_pod_seconds"] = summary["pods"]["pending_pod_seconds"]
    guard = summary["qos"].get("scale_down_guard")
    if guard is not None:  # scale-down on: did its QoS guard keep the agent's evictions down?
        counts["respect_qos_watermarks"] = guard["respect_qos_watermarks"]
        counts["evictions_per_spike"] = guard["evictions_per_spike"]
    return counts


# -- report.html ------------------------------------------------------------------------------

_ROWS = (
    ("evictions", "evictions"),
    ("over_evictions", "over-evictions (beyond the fewest that closed the gap)"),
    ("evictions_refused", "evictions refused (PodDisruptionBudgets)"),
    ("throttles", "throttles"),
    ("restores", "restores"),
    ("seconds_over_watermark", "node-seconds over a watermark"),
    ("nodes_over_watermark_at_end", "nodes over a watermark at the end"),
    ("scheduling_disabled", "times a node's scheduling was disabled"),
    ("nodes_added", "nodes added by scale-up"),
    ("nodes_removed", "nodes removed by scale-down"),
    ("respect_qos_watermarks", "scale-down keeps destinations under the watermarks"),
    ("evictions_per_spike", "agent evictions per usage spike"),
    ("cost", "cost"),
    ("pending_pod_seconds", "pending pod-seconds"),
)


def _cell(key: str, value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if key == "cost":
        return f"${value:,.2f}"
    if key == "evictions_per_spike":
        return f"{value:,.2f}"
    if isinstance(value, float):
        return f"{value:,.0f}"
    return f"{value:,}"


def counts_table(columns: list[tuple[str, dict[str, Any]]]) -> str:
    """The agent's counts, one column per (heading, counts); rows no column has are left out."""
    head = "<tr><th></th>" + "".join(f"<th>{html.escape(heading)}</th>" for heading, _ in columns) + "</tr>"
    rows = [
        f"<tr><th>{html.escape(label)}</th>"
        + "".join(f"<td>{html.escape(_cell(key, counts.get(key)))}</td>" for _, counts in columns)
        + "</tr>"
        for key, label in _ROWS
        if any(key in counts for _, counts in columns)
    ]
    return f'<table class="summary qos">{head}{"".join(rows)}</table>'


def mode_heading(precise: bool) -> str:
    return "precise" if precise else "all candidates (crane's old mode)"


def watermarks(config: QosConfig) -> list[tuple[str, float, str]]:
    """(resource, percent, label) of every non-Preview utilization rule, for report.html's plots."""
    marks = []
    for qos in config.nodeqos:
        for rule in qos.rules:
            metric = config.registry[rule.metric]
            if metric.percent and not rule.preview:
                marks.append(
                    (metric.resource, float(rule.watermark), f"{qos.name}/{rule.name} {rule.watermark}%")
                )
    return marks
