"""The report's disruption section: summary.json's `disruption` ledger (sim/runtime/ledger.py),
per workload and per run, with the worst workload named.

Two bar panels, one bar per workload and run: ready-pod-seconds below the workload's desired
replicas while the autoscaler's disruption was open, and seconds below a PodDisruptionBudget's
minimum. A table beside gives each run's totals and its worst workload.
"""

from __future__ import annotations

import html
from collections.abc import Sequence

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from kubetide.durations import format_duration
from kubetide.sim.report.plotting import TEMPLATE, colour, plot_div
from kubetide.sim.runtime.simulation import SimulationResult

# (key, heading, is a duration): the totals table's rows.
TOTALS = (
    ("evictions", "evictions", False),
    ("restarts", "rollout restarts", False),
    ("deleted_with_node", "pods deleted with their node", False),
    ("below_pdb_minimum_seconds", "below a PDB's minimum", True),
    ("below_desired_pod_seconds", "pod-seconds below desired replicas", False),
    ("budget_wait_node_seconds", "node time waiting for budget", True),
    ("churned_nodes", "nodes removed within 30m of joining", False),
    ("last_removal_seconds", "last removal after the last load change", True),
)
_PANELS = (
    ("below_desired_pod_seconds", "pod-seconds below desired replicas"),
    ("below_pdb_minimum_seconds", "seconds below the PDB's minimum"),
)


def disruption_section(runs: Sequence[tuple[str, SimulationResult]]) -> str:
    ledgers: list[tuple[str, dict]] = [(name, result.summary["disruption"]) for name, result in runs]
    head = "<tr><th></th>" + "".join(f"<th>{html.escape(name)}</th>" for name, _ in ledgers) + "</tr>"
    rows = []
    for key, heading, duration in TOTALS:
        cells = "".join(f"<td>{html.escape(_value(ledger[key], duration))}</td>" for _, ledger in ledgers)
        rows.append(f"<tr><th>{html.escape(heading)}</th>{cells}</tr>")
    worst = "".join(
        f'<td class="{"bad" if ledger["worst"] else "good"}">{html.escape(ledger["worst"] or "none")}</td>'
        for _, ledger in ledgers
    )
    rows.append(f"<tr><th>worst workload</th>{worst}</tr>")
    table = f'<table class="compare">{head}{"".join(rows)}</table>'
    workloads = sorted({row["workload"] for _, ledger in ledgers for row in ledger["workloads"]})
    figure = "" if not workloads else plot_div(_figure(ledgers, workloads), "disruption-bars")
    note = (
        "Measured by the simulator from what happened to the pods (docs/simulate.md, the disruption "
        "ledger): time counts from the autoscaler's eviction, node deletion or rollout restart until "
        "the displaced pods are gone and the workload (or budget) is back where it should be. The worst "
        "workload has the most pod-seconds below its desired replicas, then the most time below its "
        "PDB's minimum."
    )
    return (
        f'<section id="disruption"><h2>Disruption by workload</h2>{table}{figure}'
        f'<p class="note">{html.escape(note)}</p></section>'
    )


def _value(value: float | int | None, duration: bool) -> str:
    if value is None:
        return "none"
    if duration:
        return format_duration(round(value) if value >= 1 else value)
    return f"{value:,.0f}" if isinstance(value, float) else f"{value:,}"


def _figure(ledgers: Sequence[tuple[str, dict]], workloads: list[str]) -> go.Figure:
    figure = make_subplots(
        rows=len(_PANELS), cols=1, shared_xaxes=True, subplot_titles=[title for _, title in _PANELS]
    )
    for index, (name, ledger) in enumerate(ledgers):
        rows = {row["workload"]: row for row in ledger["workloads"]}
        for panel, (key, _) in enumerate(_PANELS, 1):
            figure.add_trace(
                go.Bar(
                    x=workloads,
                    y=[rows[w][key] if w in rows else 0 for w in workloads],
                    name=name,
                    legendgroup=f"disruption-{name}",
                    showlegend=panel == 1 and len(ledgers) > 1,
                    marker_color=colour(index),
                ),
                row=panel,
                col=1,
            )
    figure.update_yaxes(rangemode="nonnegative")  # an all-zero panel reads 0 to 1, not -1 to 1
    figure.update_layout(
        template=TEMPLATE, barmode="group", height=420, margin={"t": 40, "b": 40, "l": 60, "r": 20}
    )
    return figure
