"""report.html: one self-contained page with the run's plots and its summary.

Plots are plotly figures sharing one time axis (nodes per group, pending and running pods,
utilisation, drains and evictions, cost), with the scenario's events drawn as labelled vertical
lines across all of them and the autoscaler's scale-ups and scale-downs as markers. plotly.js is
inlined once, so the page works offline and can be mailed around.
"""

from __future__ import annotations

import html
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kubetide.durations import format_duration

_PALETTE = ["#2563eb", "#16a34a", "#9333ea", "#ea580c", "#0891b2", "#db2777", "#65a30d", "#ca8a04"]
_EVENT_COLOURS = {"fault": "#dc2626", "scale": "#2563eb", "apply": "#16a34a", "delete": "#6b7280"}
_AUTOSCALER_MARKS = {
    "ScaledUpGroup": ("triangle-up", "#16a34a", "scale-up"),
    "ScaleDown": ("triangle-down", "#ea580c", "scale-down (drain)"),
    "ScaleDownEmpty": ("triangle-down", "#f59e0b", "scale-down (empty)"),
    "ScaleDownFailed": ("x", "#dc2626", "scale-down failed"),
}


def _time_axis(duration: float) -> tuple[float, str]:
    if duration <= 2 * 3600:
        return 60.0, "minutes since start"
    return 3600.0, "hours since start"


@dataclass(frozen=True)
class _Panel:
    """One row of the figure."""

    title: str
    height: float  # share of the figure
    y_title: str
    y_range: tuple[float, float] | None = None
    secondary_y_title: str | None = None  # a second y axis, for series with secondary_y


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
    _Panel("Nodes per group (ready, with unready and upcoming)", 0.26, "nodes"),
    _Panel("Pods", 0.2, "pods"),
    _Panel("Utilisation (requests / allocatable)", 0.18, "%", y_range=(0, 105)),
    _Panel("Drains and deletions", 0.18, "nodes", secondary_y_title="evictions"),
    _Panel("Cumulative cost", 0.18, "$"),
)

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
        3,
        "drains_in_progress",
        "drains in progress",
        "drain",
        {"color": "#ea580c", "width": 1.8, "shape": "hv"},
        legend_title="Scale-down",
    ),
    _Series(
        3,
        "nodes_being_deleted",
        "nodes being deleted",
        "drain",
        {"color": "#6b7280", "width": 1.5, "dash": "dot", "shape": "hv"},
    ),
    _Series(
        3,
        "evictions_total",
        "evictions (cumulative)",
        "drain",
        {"color": "#0891b2", "width": 1.2},
        secondary_y=True,
    ),
    _Series(
        4,
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


def _values(timeline: list[dict[str, Any]], column: str, per: str | None) -> list[Any]:
    if per is None:
        return [row.get(column, 0) for row in timeline]
    return [round(100 * row[column] / row[per], 2) if row.get(per) else None for row in timeline]


def _scatter(
    series: _Series, x: list[float], y: list[Any], name: str, line: Mapping[str, Any]
) -> dict[str, Any]:
    """go.Scatter's arguments for a series."""
    optional = {
        "stackgroup": series.stack,
        "fill": series.fill,
        "fillcolor": series.fill_colour,
        "legendgrouptitle_text": series.legend_title,
        "hovertemplate": series.hover,
    }
    return {
        "x": x,
        "y": y,
        "name": name,
        "mode": "lines",
        "line": dict(line),
        "legendgroup": series.legend,
        **{key: value for key, value in optional.items() if value is not None},
    }


def build_figure(result: Any) -> Any:
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    timeline = result.timeline
    scale, axis_title = _time_axis(result.scenario.duration)
    x = [row["time"] / scale for row in timeline]
    groups = [g.name for g in result.scenario.groups]
    fig = make_subplots(
        rows=len(_PANELS),
        cols=1,
        shared_xaxes=True,
        vertical_spacing=0.045,
        subplot_titles=tuple(p.title for p in _PANELS),
        row_heights=[p.height for p in _PANELS],
        specs=[[{"secondary_y": True} if p.secondary_y_title else {}] for p in _PANELS],
    )

    def add(series: _Series, column: str, name: str, line: Mapping[str, Any]) -> None:
        y = _values(timeline, column, series.per)
        if series.only_if_any and not any(y):
            return
        extra = {"secondary_y": True} if series.secondary_y else {}
        fig.add_trace(go.Scatter(**_scatter(series, x, y, name, line)), row=series.panel + 1, col=1, **extra)

    for block in _GROUP_SERIES:
        for index, group in enumerate(groups):
            colour = _PALETTE[index % len(_PALETTE)]
            for series in block:
                column, name = series.column.format(group=group), series.name.format(group=group)
                add(series, column, name, {"color": colour, **series.line})
    for series in _SERIES:
        add(series, series.column, series.name, series.line)

    # The autoscaler's decisions, as markers along the top of the node plot.
    top = max((row.get("nodes_total", 0) + row.get("nodes_upcoming", 0) for row in timeline), default=1) or 1
    for reason, (symbol, colour, label) in _AUTOSCALER_MARKS.items():
        times = [e["time"] / scale for e in result.events if e["reason"] == reason]
        if times:
            fig.add_trace(
                go.Scatter(
                    x=times,
                    y=[top * 1.06] * len(times),
                    mode="markers",
                    name=label,
                    marker={"symbol": symbol, "color": colour, "size": 9},
                    legendgroup="decisions",
                    legendgrouptitle_text="Autoscaler",
                    text=[e["message"] for e in result.events if e["reason"] == reason],
                    hovertemplate="%{text}<extra></extra>",
                ),
                row=1,
                col=1,
            )

    # Scenario events: one dashed line and one label per moment (events at the same time share it).
    moments: dict[float, list[dict]] = {}
    for marker in result.markers:
        moments.setdefault(marker["time"], []).append(marker)
    for moment, markers in moments.items():
        kinds = [m["kind"] for m in markers]
        colour = _EVENT_COLOURS.get("fault" if "fault" in kinds else kinds[0], "#6b7280")
        fig.add_vline(x=moment / scale, line_width=1, line_dash="dash", line_color=colour, opacity=0.6)
        fig.add_annotation(
            x=moment / scale,
            y=1.03,
            yref="paper",
            yanchor="bottom",
            text="<br>".join(html.escape(m["label"]) for m in markers),
            showarrow=False,
            textangle=-25,
            font={"size": 10, "color": colour},
            xanchor="left",
        )

    fig.update_layout(
        template="plotly_white",
        height=1560,
        margin={"l": 70, "r": 30, "t": 140, "b": 50},
        hovermode="x unified",
        legend={"groupclick": "toggleitem", "tracegroupgap": 18, "font": {"size": 11}},
        font={"family": "Inter, -apple-system, Segoe UI, Helvetica, Arial, sans-serif", "size": 12},
    )
    fig.update_xaxes(showgrid=True, gridcolor="#eef0f3", range=[0, result.scenario.duration / scale])
    fig.update_xaxes(title_text=axis_title, row=len(_PANELS), col=1)
    fig.update_yaxes(showgrid=True, gridcolor="#eef0f3", rangemode="tozero")
    for row, panel in enumerate(_PANELS, start=1):
        extra = {"range": list(panel.y_range)} if panel.y_range is not None else {}
        fig.update_yaxes(title_text=panel.y_title, row=row, col=1, **extra)
    for row, panel in enumerate(_PANELS, start=1):
        if panel.secondary_y_title is not None:
            fig.update_yaxes(
                title_text=panel.secondary_y_title, row=row, col=1, secondary_y=True, showgrid=False
            )
    return fig


def _cards(summary: dict) -> str:
    inv = summary["invariants"]
    broken = sum(inv.values())
    cards = [
        ("Cost", f"${summary['cost']:,.2f}", f"{summary['node_hours']:,.1f} node-hours"),
        (
            "Nodes",
            f"{summary['nodes']['initial']} → {summary['nodes']['final']}",
            f"peak {summary['nodes']['peak']}",
        ),
        (
            "Pending",
            f"{summary['pods']['max_pending']:,} max",
            f"{summary['pods']['pending_pod_seconds'] / 3600:,.1f} pod-hours waiting",
        ),
        (
            "Scale-up",
            f"+{summary['scale_up']['nodes_added']}" if summary["scale_up"]["nodes_added"] else "0",
            f"{summary['scale_up']['events']} scale-up decisions",
        ),
        (
            "Scale-down",
            f"\u2212{summary['scale_down']['nodes_removed']}"
            if summary["scale_down"]["nodes_removed"]
            else "0",
            f"{summary['scale_down']['drained_removed']} drained, {summary['scale_down']['empty_removed']} empty",
        ),
        (
            "Evictions",
            f"{summary['evictions']:,}",
            f"{summary.get('evictions_refused', 0):,} refused by PDBs (429)",
        ),
        (
            "Invariants",
            "all held" if not broken else f"{broken} broken",
            ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in inv.items()),
        ),
    ]
    qos = summary.get("qos")
    if qos is not None:
        over = qos["seconds_over_watermark"] / 60
        cards.insert(
            -1,
            (
                "QoS agent",
                f"{qos['evictions']:,} evictions",
                f"{qos['throttles']:,} throttles, {over:,.1f} node-min over",
            ),
        )
    parts = []
    for title, value, note in cards:
        bad = title == "Invariants" and broken
        good = title == "Invariants" and not broken
        cls = " bad" if bad else (" good" if good else "")
        parts.append(
            f'<div class="card{cls}"><div class="t">{html.escape(title)}</div>'
            f'<div class="v">{html.escape(value)}</div><div class="n">{html.escape(note)}</div></div>'
        )
    return "\n".join(parts)


def _table(summary: dict) -> str:
    rows = []

    def walk(prefix: str, value: Any) -> None:
        if isinstance(value, dict):
            for key, inner in value.items():
                walk(f"{prefix}.{key}" if prefix else str(key), inner)
        else:
            shown = "—" if value is None else (f"{value:,}" if isinstance(value, int) else str(value))
            rows.append(f"<tr><th>{html.escape(prefix)}</th><td>{html.escape(shown)}</td></tr>")

    for key, value in summary.items():
        if key in ("events", "downscale", "qos"):  # qos: its own panel
            continue
        walk(key, value)
    return "\n".join(rows)


def _event_table(events: list[dict], limit: int = 400) -> str:
    interesting = [
        e
        for e in events
        if e["source"] in ("cluster-autoscaler", "scenario", "simulator", "qos-agent")
        or e["reason"] in ("InstanceCreationFailed", "CloudError", "NodeNotReady")
    ]
    rows = []
    for e in interesting[:limit]:
        cls = ' class="warn"' if e["type"] == "Warning" else ""
        rows.append(
            f"<tr{cls}><td>{html.escape(format_duration(e['time']))}</td><td>{html.escape(e['source'])}</td>"
            f"<td>{html.escape(e['reason'])}</td><td>{html.escape(e['object'])}</td>"
            f"<td>{html.escape(e['message'])}</td></tr>"
        )
    more = len(interesting) - limit
    if more > 0:
        rows.append(f'<tr><td colspan="5">… {more} more in events.jsonl</td></tr>')
    if not rows:
        rows.append('<tr><td colspan="5">no autoscaler decisions or scenario events</td></tr>')
    return "\n".join(rows)


_CSS = """
*{box-sizing:border-box}
body{margin:0;background:#f6f7f9;color:#111827;font:14px/1.5 Inter,-apple-system,'Segoe UI',Helvetica,Arial,sans-serif}
header{background:#0f172a;color:#f8fafc;padding:28px 40px 22px}
header h1{margin:0;font-size:24px;font-weight:650;letter-spacing:-.01em}
header p{margin:6px 0 0;color:#cbd5e1}
header .meta{margin-top:10px;font-size:13px;color:#94a3b8}
header .meta span{margin-right:18px}
main{max-width:1320px;margin:0 auto;padding:24px 32px 48px}
.cards{display:grid;grid-template-columns:repeat(auto-fit,minmax(160px,1fr));gap:12px;margin-bottom:22px}
.card{background:#fff;border:1px solid #e5e7eb;border-radius:10px;padding:14px 16px}
.card .t{font-size:12px;text-transform:uppercase;letter-spacing:.06em;color:#6b7280}
.card .v{font-size:22px;font-weight:650;margin-top:2px}
.card .n{font-size:12px;color:#6b7280}
.card.good{border-color:#86efac;background:#f0fdf4}.card.good .v{color:#15803d}
.card.bad{border-color:#fca5a5;background:#fef2f2}.card.bad .v{color:#b91c1c}
section{background:#fff;border:1px solid #e5e7eb;border-radius:10px;padding:16px 18px;margin-bottom:22px}
section h2{font-size:16px;margin:0 0 10px;font-weight:620}
table{border-collapse:collapse;width:100%;font-size:13px}
th,td{text-align:left;padding:5px 10px;border-bottom:1px solid #f1f5f9;vertical-align:top}
.summary th{font-weight:500;color:#374151;width:40%;font-family:ui-monospace,Menlo,Consolas,monospace;font-size:12px}
.summary td{font-variant-numeric:tabular-nums}
.cols{display:grid;grid-template-columns:minmax(0,1fr) minmax(0,1.6fr);gap:22px}
.events{max-height:520px;overflow:auto}
.events td:first-child{white-space:nowrap;font-variant-numeric:tabular-nums;color:#6b7280}
.events tr.warn td{color:#b91c1c}
footer{color:#9ca3af;font-size:12px;text-align:center;padding-bottom:30px}
"""


def _qos_section(result) -> str:
    """The node QoS agent's panel (sim/qos.py), only for scenarios with spec.qos."""
    if "qos" not in result.summary:
        return ""
    from kubetide.sim.qos import report_section

    return report_section(result)


def render(result) -> str:
    summary = result.summary
    scenario = result.scenario
    figure = build_figure(result)
    plot = figure.to_html(
        full_html=False, include_plotlyjs=True, config={"displaylogo": False, "responsive": True}
    )
    description = html.escape(scenario.description) if scenario.description else ""
    warnings = "".join(f"<li>{html.escape(w)}</li>" for w in result.warnings)
    warning_block = f"<section><h2>Warnings</h2><ul>{warnings}</ul></section>" if warnings else ""
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>kubetide simulate: {html.escape(scenario.name)}</title>
<style>{_CSS}</style></head>
<body>
<header>
<h1>{html.escape(scenario.name)}</h1>
{f"<p>{description}</p>" if description else ""}
<div class="meta"><span>simulated {html.escape(format_duration(scenario.duration))}</span>
<span>seed {summary["seed"]}</span><span>autoscaler: {html.escape(str(summary["autoscaler"]))}</span>
<span>{summary["autoscaler_loops"]:,} loops</span><span>wall time {summary["wall_seconds"]:.1f}s</span></div>
</header>
<main>
<div class="cards">{_cards(summary)}</div>
{warning_block}
<section>{plot}</section>
{_qos_section(result)}
<div class="cols">
<section><h2>Summary</h2><table class="summary">{_table(summary)}</table></section>
<section><h2>Decisions and scenario events</h2><div class="events"><table>
<tr><th>time</th><th>source</th><th>reason</th><th>object</th><th>message</th></tr>
{_event_table(result.events)}
</table></div></section>
</div>
</main>
<footer>generated by kubetide simulate · summary.json, timeline.csv and events.jsonl sit beside this file</footer>
<script type="application/json" id="summary">{html.escape(json.dumps(summary))}</script>
</body></html>
"""
