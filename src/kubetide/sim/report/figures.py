"""report.html's figures, as plotly graph objects over a run's `SimulationResult`.

One run (`build_figure`): panels on one time axis (nodes per group, pending and running pods,
utilisation, drains and evictions, cost), the scenario's events as labelled vertical lines across
all of them, the autoscaler's scale-ups, scale-downs and failed scale-ups as markers, and the
periods when the autoscaler halted (cluster unhealthy) or held scale-up back (node group backoff)
shaded. The plots are one declarative table: `_PANELS` and `_SERIES` / `_GROUP_SERIES` (panel,
timeline column or a percentage of another, legend group, line, fill; per node group in the
group's colour), drawn by one loop. Count axes tick at integers. The node QoS agent's panel
(`build_qos_figure`) is built the same way.

Several runs of one scenario (`simulate --compare`): `build_comparison_figure` overlays them, one
trace per run and panel, each run's halted and backed-off periods shaded in its colour, and
`build_qos_comparison_figure` the agent's series.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np
import plotly.graph_objects as go

from kubetide.sim.report.plotting import (
    TEMPLATE,
    Drawing,
    Grid,
    Panel,
    colour,
    period_rect,
    series,
    stacked,
    time_axis,
)
from kubetide.sim.report.qos import watermarks
from kubetide.sim.report.why import (
    FITS_NO_GROUP,
    SCALE_UP_BLOCKED,
    THRESHOLD_COLOUR,
    add_unremovable,
    draws_threshold,
    has_decisions,
    lowest_utilization,
    threshold_label,
    threshold_percent,
    unremovable_reasons,
)
from kubetide.sim.runtime.decisions import LOWEST_UTILIZATION
from kubetide.sim.runtime.simulation import SimulationResult
from kubetide.sim.spec.qos import QosSettings

_EVENT_COLOURS = {"fault": "#dc2626", "scale": "#2563eb", "apply": "#16a34a", "delete": "#6b7280"}
_AUTOSCALER_MARKS = {
    "ScaledUpGroup": ("triangle-up", "#16a34a", "scale-up"),
    "ScaleUpFailed": ("x", "#dc2626", "scale-up failed (instances)"),
    "FailedToScaleUpGroup": ("x", "#b91c1c", "scale-up request failed"),
    "ScaleUpTimedOut": ("x-open", "#dc2626", "scale-up timed out"),
    "ScaleDown": ("triangle-down", "#ea580c", "scale-down (drain)"),
    "ScaleDownEmpty": ("triangle-down", "#f59e0b", "scale-down (empty)"),
    "ScaleDownFailed": ("x", "#7c2d12", "scale-down failed"),
}
# Periods shaded across every panel: (reason, what in the message marks it or "", fill, text
# colour, label). ClusterUnhealthy is the loop halting; NotTriggerScaleUp naming a backoff is
# scale-up held back.
PERIODS = (
    ("ClusterUnhealthy", "", "rgba(220,38,38,0.10)", "#b91c1c", "autoscaler halted: cluster unhealthy"),
    (
        "NotTriggerScaleUp",
        "backoff",
        "rgba(245,158,11,0.14)",
        "#b45309",
        "scale-up held back: node group backoff",
    ),
)


@dataclass(frozen=True)
class _Series:
    """One line of a panel: a timeline column, or `column` as a percentage of `per`.

    In a group's series, `{group}` in `column` and `name` is the node group's name and the
    colour is the group's. `legend` is the legend group, `legend_title` its heading (given on the
    group's first series only). `only_if_any`: drawn only when the column is not all zeros.
    """

    panel: int
    column: str
    name: str
    legend: str
    line: Mapping[str, Any]
    per: str | None = None
    legend_title: str | None = None
    stack: str | None = None
    fill: str | None = None
    fill_colour: str | None = None
    hover: str | None = None
    secondary_y: bool = False
    only_if_any: bool = False


_PANELS = (
    Panel("Nodes per group (ready, with unready and upcoming)", 0.22, "nodes", counts=True),
    Panel("Pods (pending: dotted, those no node group can take)", 0.16, "pods", counts=True),
    Panel(
        "Utilisation (requests / allocatable; dotted: the least utilised node)", 0.15, "%", y_range=(0, 105)
    ),
    Panel("Nodes kept, by the autoscaler's reason", 0.17, "nodes", counts=True),
    Panel("Drains and deletions", 0.15, "nodes", secondary_y_title="evictions", counts=True),
    Panel("Cumulative cost", 0.15, "$"),
)
_UNREMOVABLE_ROW = 3  # 0-based, as `_Series.panel`

# Per node group, block by block: every group's ready nodes (stacked), then each group's unready
# and upcoming nodes side by side. `line` has no colour here: the group's is added.
_GROUP_SERIES: tuple[tuple[_Series, ...], ...] = (
    (
        _Series(
            0,
            "{group}_ready",
            "{group} ready",
            "nodes",
            {"width": 0.5, "shape": "hv"},
            legend_title="Nodes",
            stack="ready",
        ),
    ),
    (
        _Series(
            0,
            "{group}_unready",
            "{group} unready",
            "nodes",
            {"dash": "dot", "width": 1.5, "shape": "hv"},
            only_if_any=True,
        ),
        _Series(
            0,
            "{group}_upcoming",
            "{group} upcoming",
            "nodes",
            {"dash": "dash", "width": 1.5, "shape": "hv"},
            only_if_any=True,
        ),
    ),
)

_SERIES = (
    _Series(
        1,
        "pending_pods",
        "pending",
        "pods",
        {"color": "#dc2626", "width": 1.5, "shape": "hv"},
        legend_title="Pods",
        fill="tozeroy",
        fill_colour="rgba(220,38,38,0.15)",
    ),
    _Series(
        1,
        FITS_NO_GROUP,
        "pending: fits no node group",
        "pods",
        {"color": "#7f1d1d", "width": 1.5, "dash": "dot", "shape": "hv"},
        only_if_any=True,
    ),
    _Series(
        1,
        SCALE_UP_BLOCKED,
        "pending: scale-up blocked (limits, backoff)",
        "pods",
        {"color": "#ea580c", "width": 1.5, "dash": "dashdot", "shape": "hv"},
        only_if_any=True,
    ),
    _Series(1, "running_pods", "running", "pods", {"color": "#0f766e", "width": 1.5, "shape": "hv"}),
    _Series(
        2,
        "cpu_requested",
        "cpu",
        "util",
        {"color": "#2563eb", "width": 1.8},
        per="cpu_allocatable",
        legend_title="Utilisation",
    ),
    _Series(
        2,
        "memory_requested_gib",
        "memory",
        "util",
        {"color": "#9333ea", "width": 1.8},
        per="memory_allocatable_gib",
    ),
    _Series(
        2,
        LOWEST_UTILIZATION,
        "least utilised node",
        "util",
        {"color": "#0f172a", "width": 1.2, "dash": "dot", "shape": "hv"},
        only_if_any=True,
    ),
    _Series(
        4,
        "drains_in_progress",
        "drains in progress",
        "drain",
        {"color": "#ea580c", "width": 1.8, "shape": "hv"},
        legend_title="Scale-down",
    ),
    _Series(
        4,
        "nodes_being_deleted",
        "nodes being deleted",
        "drain",
        {"color": "#6b7280", "width": 1.5, "dash": "dot", "shape": "hv"},
    ),
    _Series(
        4,
        "evictions_total",
        "evictions (cumulative)",
        "drain",
        {"color": "#0891b2", "width": 1.2},
        secondary_y=True,
    ),
    _Series(
        5,
        "cost",
        "cost",
        "cost",
        {"color": "#15803d", "width": 1.8},
        legend_title="Cost",
        fill="tozeroy",
        fill_colour="rgba(21,128,61,0.12)",
        hover="%{y:$.2f}<extra></extra>",
    ),
)


def _values(timeline: Sequence[Mapping[str, Any]], column: str, per: str | None) -> list[Any]:
    if per is None:
        return [row.get(column, 0) for row in timeline]
    return [round(100 * row[column] / row[per], 2) if row.get(per) else None for row in timeline]


def _times(result: SimulationResult, scale: float) -> np.ndarray:
    return series(round(row["time"] / scale, 5) for row in result.timeline)


def periods(
    events: Iterable[Mapping[str, Any]], reason: str, marker: str, step: float
) -> list[tuple[float, float]]:
    """[start, end) seconds covered by events of `reason` (whose message contains `marker`), each
    lasting `step` (one autoscaler loop); touching or overlapping ones are merged."""
    merged: list[list[float]] = []
    for event in events:
        if event["reason"] != reason or marker not in event["message"]:
            continue
        start = event["time"]
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], start + step)
        else:
            merged.append([start, start + step])
    return [(start, end) for start, end in merged]


# -- one run ------------------------------------------------------------------------------------


def build_figure(result: SimulationResult) -> go.Figure:
    """The run's figure: every panel of `_PANELS` on one time axis."""
    timeline = result.timeline
    duration = result.scenario.duration
    scale, axis_title = time_axis(duration)
    x = _times(result, scale)
    drawing = Drawing()

    def add(line_series: _Series, column: str, name: str, line: Mapping[str, Any]) -> None:
        y = _values(timeline, column, line_series.per)
        if line_series.only_if_any and not any(y):
            return
        drawing.add(
            line_series.panel + 1,
            line_series.secondary_y,
            x=x,
            y=series(y),
            name=name,
            mode="lines",
            line=dict(line),
            legendgroup=line_series.legend,
            legendgrouptitle={"text": line_series.legend_title} if line_series.legend_title else None,
            stackgroup=line_series.stack,
            fill=line_series.fill,
            fillcolor=line_series.fill_colour,
            hovertemplate=line_series.hover,
        )

    for block in _GROUP_SERIES:
        for index, group in enumerate(g.name for g in result.scenario.groups):
            for group_series in block:
                column = group_series.column.format(group=group)
                name = group_series.name.format(group=group)
                add(group_series, column, name, {"color": colour(index), **group_series.line})
    for line_series in _SERIES:
        add(line_series, line_series.column, line_series.name, line_series.line)

    # The autoscaler's decisions, as markers along the top of the node plot.
    top = max((row.get("nodes_total", 0) + row.get("nodes_upcoming", 0) for row in timeline), default=1) or 1
    for reason, (symbol, marker_colour, label) in _AUTOSCALER_MARKS.items():
        chosen = [e for e in result.events if e["reason"] == reason]
        if chosen:
            drawing.add(
                1,
                x=series(e["time"] / scale for e in chosen),
                y=series([top * 1.06] * len(chosen)),
                mode="markers",
                name=label,
                marker={"symbol": symbol, "color": marker_colour, "size": 9},
                legendgroup="decisions",
                legendgrouptitle={"text": "Autoscaler"},
                text=[e["message"] for e in chosen],
                hovertemplate="%{text}<extra></extra>",
            )
    # Stacked ready nodes: the axis reaches their total.
    nodes_total = max((row.get("nodes_total", 0) for row in timeline), default=0)
    drawing.peaks[(1, False)] = max(drawing.peaks.get((1, False), 0.0), nodes_total)
    add_unremovable(drawing, _UNREMOVABLE_ROW + 1, x, timeline, unremovable_reasons([result]), stack="kept")
    _shade_periods(drawing, result, scale)
    _mark_scenario_events(drawing, result, scale)
    grid = stacked(
        _PANELS,
        duration=duration,
        scale=scale,
        axis_title=axis_title,
        height=1800,
        top_margin=140 if result.markers else 70,  # room for the scenario events' labels
    )
    if draws_threshold(result):
        drawing.hline(grid, 3, threshold_percent(result), threshold_label(result), THRESHOLD_COLOUR)
    return drawing.draw(grid)


def _shade_periods(drawing: Drawing, result: SimulationResult, scale: float) -> None:
    """The halted and backed-off periods, shaded and labelled across every panel."""
    step = result.scenario.options.scan_interval
    for reason, marker, fill, text_colour, label in PERIODS:
        for start, end in periods(result.events, reason, marker, step):
            drawing.shapes.append(
                period_rect(start, end, scale, fillcolor=fill, line={"width": 0}, name=label)
            )
            drawing.annotations.append(
                {
                    "x": start / scale,
                    "xref": "x",
                    "xanchor": "left",
                    "y": 1.0,
                    "yref": "paper",
                    "yanchor": "top",
                    "text": html.escape(label),
                    "showarrow": False,
                    "font": {"size": 10, "color": text_colour},
                }
            )


def _mark_scenario_events(drawing: Drawing, result: SimulationResult, scale: float) -> None:
    """One dashed line and one label per moment of scenario events (same-time events share it)."""
    moments: dict[float, list[dict[str, Any]]] = {}
    for marker in result.markers:
        moments.setdefault(marker["time"], []).append(marker)
    for moment, markers in moments.items():
        kinds = [m["kind"] for m in markers]
        line_colour = _EVENT_COLOURS.get("fault" if "fault" in kinds else kinds[0], "#6b7280")
        drawing.shapes.append(
            {
                "type": "line",
                "xref": "x",
                "yref": "paper",
                "x0": moment / scale,
                "x1": moment / scale,
                "y0": 0,
                "y1": 1,
                "line": {"width": 1, "dash": "dash", "color": line_colour},
                "opacity": 0.6,
            }
        )
        drawing.annotations.append(
            {
                "x": moment / scale,
                "xref": "x",
                "y": 1.03,
                "yref": "paper",
                "yanchor": "bottom",
                "text": "<br>".join(html.escape(m["label"]) for m in markers),
                "showarrow": False,
                "textangle": -25,
                "font": {"size": 10, "color": line_colour},
                "xanchor": "left",
            }
        )


# -- the node QoS agent (spec.qos) ---------------------------------------------------------------

_QOS_PANELS = (
    Panel("Hottest node: usage / capacity", 0.5, "%"),
    Panel(
        "Nodes over a watermark, and the agent's actions",
        0.5,
        "nodes",
        secondary_y_title="actions",
        counts=True,
    ),
)
_QOS_RESOURCE_COLOURS = {"cpu": "#2563eb", "memory": "#9333ea"}
_WATERMARK_COLOUR = "#dc2626"


def _draw_watermarks(
    drawing: Drawing, grid: Grid, settings: QosSettings, row: int, resource: str | None = None
) -> None:
    """A dashed line across panel `row` at each utilization watermark (of `resource`'s rules
    only, if given), labelled with its NodeQOS rule."""
    for watched, percent, label in watermarks(settings.config):
        if resource is not None and watched != resource:
            continue
        drawing.hline(grid, row, percent, label, _WATERMARK_COLOUR)


def build_qos_figure(result: SimulationResult) -> go.Figure:
    """The QoS agent's figure: the hottest node's usage against the watermarks, and the nodes
    over a watermark with the agent's cumulative actions."""
    timeline = result.timeline
    settings = result.scenario.qos
    assert settings is not None, "a QoS figure of a run without spec.qos"
    duration = result.scenario.duration
    scale, axis_title = time_axis(duration)
    x = _times(result, scale)
    drawing = Drawing()
    for resource in settings.resources:
        drawing.add(
            1,
            x=x,
            y=series(row.get(f"qos_peak_{resource}_pct") for row in timeline),
            name=f"{resource} (hottest node)",
            mode="lines",
            line={"color": _QOS_RESOURCE_COLOURS.get(resource, "#0891b2"), "width": 1.6, "shape": "hv"},
        )
    drawing.add(
        2,
        x=x,
        y=series(row.get("qos_nodes_over_watermark", 0) for row in timeline),
        name="nodes over a watermark",
        mode="lines",
        fill="tozeroy",
        fillcolor="rgba(220,38,38,0.15)",
        line={"color": _WATERMARK_COLOUR, "width": 1.5, "shape": "hv"},
    )
    for column, name, line_colour in (
        ("qos_evictions_total", "evictions (cumulative)", "#ea580c"),
        ("qos_throttles_total", "throttles (cumulative)", "#0891b2"),
    ):
        values = [row.get(column, 0) for row in timeline]
        if any(values):
            drawing.add(
                2,
                secondary_y=True,
                x=x,
                y=series(values),
                name=name,
                mode="lines",
                line={"color": line_colour, "width": 1.4, "shape": "hv"},
            )
    grid = stacked(
        _QOS_PANELS,
        duration=duration,
        scale=scale,
        axis_title=axis_title,
        height=520,
        top_margin=60,
        spacing=0.12,
    )
    _draw_watermarks(drawing, grid, settings, row=1)
    return drawing.draw(grid)


# -- several runs of one scenario (simulate --compare) -------------------------------------------

Runs = Sequence[tuple[str, SimulationResult]]  # (setting name, its run)

_MAX_GROUP_PANELS = 6  # more node groups than this: their totals only


def build_cost_disruption_figure(settings: Sequence[Mapping[str, Any]]) -> go.Figure:
    """A comparison's settings as points: the disruption they caused (pod-seconds below the
    workloads' desired replicas, the ledger's) across, their cost up; the lower left is better.
    The hover adds evictions, nodes churned and the policy when compared."""
    figure = go.Figure()
    for index, entry in enumerate(settings):
        metrics = entry["metrics"]
        policy = entry.get("policy", {})
        hover = (
            f"{html.escape(entry['name'])}<br>cost ${metrics['cost']:,.2f}"
            f"<br>below desired {metrics['below_desired_pod_seconds']:,.0f} pod-s"
            f"<br>evictions {metrics['evictions']:,}"
        )
        if policy:
            hover += (
                f"<br>autoscaler {html.escape(policy['autoscaler'])}<br>churned {policy['churned_nodes']}"
            )
        figure.add_trace(
            go.Scatter(
                x=[metrics["below_desired_pod_seconds"]],
                y=[metrics["cost"]],
                mode="markers+text",
                text=[entry["name"]],
                textposition="top center",
                name=entry["name"],
                marker={"size": 12, "color": colour(index)},
                hovertemplate=hover + "<extra></extra>",
            )
        )
    figure.update_layout(
        template=TEMPLATE,
        height=380,
        title="Cost against disruption (lower left is better)",
        xaxis_title="pod-seconds below desired replicas",
        yaxis_title="cost ($)",
        showlegend=False,
    )
    return figure


def build_comparison_figure(runs: Runs) -> go.Figure:
    """Every run overlaid on one time axis, one colour and legend entry per run (clicking it hides
    the run everywhere): nodes (in all and per node group, on axes fitted to the data), pending
    pods with those no node group can take, cluster utilisation and the least utilised node
    against each setting's scale-down-utilization-threshold, per run the nodes kept by reason,
    drains, evictions and cost. The scenario's events are marked across every panel; each run's
    halted and backed-off periods are shaded in its colour (backoff with a dotted edge)."""
    first = runs[0][1]
    layout = _ComparisonLayout.of(runs)
    panels = layout.panels
    duration = first.scenario.duration
    scale, axis_title = time_axis(duration)
    drawing = Drawing()
    for index, (name, result) in enumerate(runs):
        _draw_run(drawing, layout, index, name, result, scale)
    _mark_scenario_events(drawing, first, scale)
    grid = stacked(
        panels,
        duration=duration,
        scale=scale,
        axis_title=axis_title,
        height=int(sum(p.height for p in panels) * 420) + 200,
        top_margin=140 if first.markers else 60,  # room for the events' labels
        spacing=0.16 / len(panels),
    )
    grid.layout["legend"] = {"title": {"text": "Setting"}, "font": {"size": 12}, "groupclick": "toggleitem"}
    _draw_thresholds(drawing, grid, runs, layout.utilisation_row)
    return drawing.draw(grid)


@dataclass
class _ComparisonLayout:
    """The comparison's panels, top to bottom, and the rows a run's lines go to."""

    panels: list[Panel]
    groups: list[str]  # the node groups with a panel each (none for one group, or too many)
    utilisation_row: int
    kept_rows: dict[str, int]  # run -> its panel of nodes kept, by reason
    reasons: list[str]

    @classmethod
    def of(cls, runs: Runs) -> _ComparisonLayout:
        results = [result for _, result in runs]
        explained = any(has_decisions(result) for result in results)
        groups = [g.name for g in results[0].scenario.groups]
        if not 1 < len(groups) <= _MAX_GROUP_PANELS:
            groups = []
        reasons = unremovable_reasons(results) if explained else []
        panels = [Panel("Nodes (registered)", 0.6, "nodes", counts=True, from_zero=False)]
        panels += [Panel(f"Nodes: {group}", 0.45, "nodes", counts=True, from_zero=False) for group in groups]
        pending_title = "Pending pods (dotted: those no node group can take)" if explained else "Pending pods"
        panels.append(Panel(pending_title, 0.5, "pods", counts=True))
        utilisation_row = len(panels) + 1
        panels.append(
            Panel(
                "Utilisation: cpu requests / allocatable (dotted: the least utilised node)"
                if explained
                else "Utilisation: cpu requests / allocatable",
                0.5,
                "%",
                from_zero=False,
            )
        )
        kept_rows = {}
        if reasons:
            for name, _ in runs:
                kept_rows[name] = len(panels) + 1
                panels.append(
                    Panel(f"Nodes kept, by the autoscaler's reason: {name}", 0.5, "nodes", counts=True)
                )
        panels += [
            Panel("Drains in progress", 0.35, "nodes", counts=True),
            Panel("Evictions (cumulative)", 0.4, "evictions", counts=True),
            Panel("Cumulative cost", 0.45, "$"),
        ]
        return cls(panels, groups, utilisation_row, kept_rows, reasons)


def _draw_run(
    drawing: Drawing, layout: _ComparisonLayout, index: int, name: str, result: SimulationResult, scale: float
) -> None:
    """One run's lines on every panel, and its halted and backed-off periods."""
    timeline = result.timeline
    x = _times(result, scale)
    line = partial(_run_line, drawing, x, name, index)
    row = 1
    line(row, series(r.get("nodes_total", 0) for r in timeline))
    for group in layout.groups:
        row += 1
        line(row, series(r.get(f"{group}_total", 0) for r in timeline))
    row += 1
    line(row, series(r.get("pending_pods", 0) for r in timeline))
    if has_decisions(result):
        line(row, series(r.get(FITS_NO_GROUP) for r in timeline), "dot", label=" (fits no node group)")
    row += 1
    line(row, series(_values(timeline, "cpu_requested", "cpu_allocatable")), shape="linear", label=" cpu")
    if has_decisions(result):
        line(row, lowest_utilization(timeline), "dot", label=" (least utilised node)")
    if name in layout.kept_rows:
        add_unremovable(
            drawing,
            layout.kept_rows[name],
            x,
            timeline,
            layout.reasons,
            stack=f"kept-{name}",
            show_legend=index == 0,
        )
    row = len(layout.panels) - 2
    line(row, series(r.get("drains_in_progress", 0) for r in timeline))
    line(row + 1, series(r.get("evictions_total", 0) for r in timeline))
    line(row + 2, series(r.get("cost", 0) for r in timeline), shape="linear")
    _shade_run_periods(drawing, name, result, scale, colour(index))


def _draw_thresholds(drawing: Drawing, grid: Grid, runs: Runs, utilisation_row: int) -> None:
    """Each scaling-down run's scale-down-utilization-threshold on the utilisation panel: one
    line for all when every run scales down at the same threshold."""
    scaling_down = [(i, name, r) for i, (name, r) in enumerate(runs) if draws_threshold(r)]
    thresholds = {threshold_percent(result) for _, _, result in scaling_down}
    for index, name, result in scaling_down:
        if len(thresholds) == 1 and len(scaling_down) == len(runs):  # one line says it for all
            drawing.hline(
                grid, utilisation_row, threshold_percent(result), threshold_label(result), THRESHOLD_COLOUR
            )
            break
        drawing.hline(
            grid, utilisation_row, threshold_percent(result), threshold_label(result, name), colour(index)
        )


def _run_line(
    drawing: Drawing,
    x: np.ndarray,
    name: str,
    index: int,
    row: int,
    y: Any,
    dash: str | None = None,
    shape: str = "hv",
    label: str = "",
) -> None:
    """One run's line on panel `row`, in its colour and legend group (`dash`ed for a part of it)."""
    drawing.add(
        row,
        x=x,
        y=y,
        name=name,
        legendgroup=name,
        showlegend=row == 1 and dash is None,
        legendrank=index,  # the settings first, then the reasons
        mode="lines",
        line={"color": colour(index), "width": 1.6, "shape": shape, **({"dash": dash} if dash else {})},
        hovertemplate=f"{html.escape(name)}{html.escape(label)}: %{{y}}<extra></extra>",
    )


def _shade_run_periods(
    drawing: Drawing, name: str, result: SimulationResult, scale: float, run_colour: str
) -> None:
    """A run's halted and backed-off periods, shaded in its colour (backoff with a dotted edge)."""
    step = result.scenario.options.scan_interval
    for reason, marker, *_ in PERIODS:
        for start, end in periods(result.events, reason, marker, step):
            drawing.shapes.append(
                period_rect(
                    start,
                    end,
                    scale,
                    fillcolor=run_colour,
                    opacity=0.1,
                    line={"width": 1, "dash": "dot", "color": run_colour} if marker else {"width": 0},
                    legendgroup=name,
                    name=f"{name}: {reason}",
                )
            )


def build_qos_comparison_figure(runs: Runs) -> go.Figure:
    """The QoS agent's series of every run overlaid (runs of a scenario with spec.qos): the
    hottest node's usage per watched resource against the watermarks, the nodes over a
    watermark, and the agent's cumulative evictions and throttles."""
    settings = runs[0][1].scenario.qos
    assert settings is not None, "a QoS comparison of runs without spec.qos"
    panels = [
        Panel(f"Hottest node: {resource} usage / capacity", 0.3, "%") for resource in settings.resources
    ]
    columns = [f"qos_peak_{resource}_pct" for resource in settings.resources]
    panels.append(Panel("Nodes over a watermark", 0.22, "nodes", counts=True))
    columns.append("qos_nodes_over_watermark")
    for column, title in (
        ("qos_evictions_total", "QoS agent evictions (cumulative)"),
        ("qos_throttles_total", "QoS agent throttles (cumulative)"),
    ):
        if any(row.get(column) for _, result in runs for row in result.timeline):
            panels.append(Panel(title, 0.22, "actions", counts=True))
            columns.append(column)
    grid, drawing, _ = _overlaid(runs, panels, columns, 260 * len(panels) + 120, missing=None)
    for row, resource in enumerate(settings.resources, start=1):
        _draw_watermarks(drawing, grid, settings, row, resource)
    return drawing.draw(grid)


def _overlaid(
    runs: Runs, panels: Sequence[Panel], columns: Sequence[str], height: int, missing: float | None
) -> tuple[Grid, Drawing, float]:
    """(grid, drawing, the time axis's scale): panel i draws timeline column i of every run, in
    the run's colour; a row without the column reads `missing`. The caller adds its shapes, then
    draws."""
    duration = runs[0][1].scenario.duration
    scale, axis_title = time_axis(duration)
    drawing = Drawing()
    for index, (name, result) in enumerate(runs):
        x = _times(result, scale)
        for row, column in enumerate(columns, start=1):
            drawing.add(
                row,
                x=x,
                y=series(r.get(column, missing) for r in result.timeline),
                name=name,
                legendgroup=name,
                showlegend=row == 1,
                mode="lines",
                line={"color": colour(index), "width": 1.6, "shape": "linear" if column == "cost" else "hv"},
                hovertemplate=f"{html.escape(name)}: %{{y}}<extra></extra>",
            )
    grid = stacked(
        panels, duration=duration, scale=scale, axis_title=axis_title, height=height, top_margin=60
    )
    grid.layout["legend"] = {"title": {"text": "Setting"}, "font": {"size": 12}}
    return grid, drawing, scale


# -- HorizontalPodAutoscalers (runtime/hpa.py) ------------------------------------------------------

_BOUND_COLOUR = "#6b7280"


def build_hpa_figure(runs: Runs) -> go.Figure | None:
    """Per HPA, its target's replicas between dashed minReplicas and maxReplicas, and each of
    its metrics' readings against its dashed target; every run overlaid. None without HPAs."""
    hpas = runs[0][1].summary.get("hpa") or {}
    panels: list[Panel] = []
    columns: list[str] = []
    lines: list[list[tuple[float, str]]] = []  # per panel: dashed lines (y, label)
    for key, entry in hpas.items():
        panels.append(Panel(f"HPA {key}: replicas", 0.2, "replicas", counts=True))
        columns.append(f"hpa_{key}_replicas")
        lines.append([(entry["min_replicas"], "minReplicas"), (entry["max_replicas"], "maxReplicas")])
        for resource, target in (entry.get("targets") or {}).items():
            unit = "% of request" if target.endswith("%") else "per pod"
            panels.append(Panel(f"HPA {key}: {resource} ({unit})", 0.2, unit))
            columns.append(f"hpa_{key}_{resource}")
            lines.append([(float(target.rstrip("%")), "target")])
    if not panels:
        return None
    grid, drawing, _ = _overlaid(runs, panels, columns, 200 * len(panels) + 120, missing=None)
    for row, dashed in enumerate(lines, start=1):
        for y, label in dashed:
            drawing.hline(grid, row, y, label, _BOUND_COLOUR)
    return drawing.draw(grid)
