"""report.html: one self-contained page with the run's plots and its summary.

Plots share one time axis (nodes per group, pending and running pods, utilisation, drains and
evictions, cost), with the scenario's events drawn as labelled vertical lines across all of them,
the autoscaler's scale-ups, scale-downs and failed scale-ups as markers, and the periods when the
autoscaler halted (cluster unhealthy) or held scale-up back (node group backoff) shaded. Count axes
tick at integers. The events table is aggregated as `kubectl get events` shows them: one row per
(source, type, reason, object) with its count, first and last seen, and the latest message.

The figure is built as plain plotly.js JSON (`{"data": [...], "layout": {...}}`) rather than
through plotly's Python graph objects: their validation and deep copies of every point took most of
the time spent writing a report. plotly.js is inlined once, so the page works offline and can be
mailed around. `render_comparison` draws several runs of one scenario (simulate --compare)
overlaid on the same axes, one trace per setting.
"""

from __future__ import annotations

import html
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from kubetide.durations import format_duration, rfc3339

_PALETTE = ["#2563eb", "#16a34a", "#9333ea", "#ea580c", "#0891b2", "#db2777", "#65a30d", "#ca8a04"]
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
_PERIODS = (
    ("ClusterUnhealthy", "", "rgba(220,38,38,0.10)", "#b91c1c", "autoscaler halted: cluster unhealthy"),
    (
        "NotTriggerScaleUp",
        "backoff",
        "rgba(245,158,11,0.14)",
        "#b45309",
        "scale-up held back: node group backoff",
    ),
)
# Events the table shows: the autoscaler's, the scenario's and the simulator's, and the cloud's
# and node controller's failures (the rest, e.g. every binding, stays in events.jsonl).
_TABLE_SOURCES = ("cluster-autoscaler", "scenario", "simulator", "qos-agent")
_TABLE_REASONS = ("InstanceCreationFailed", "CloudError", "NodeNotReady")


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
    counts: bool = False  # the y axes count things: ticks at integers only


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
    _Panel("Nodes per group (ready, with unready and upcoming)", 0.26, "nodes", counts=True),
    _Panel("Pods", 0.2, "pods", counts=True),
    _Panel("Utilisation (requests / allocatable)", 0.18, "%", y_range=(0, 105)),
    _Panel("Drains and deletions", 0.18, "nodes", secondary_y_title="evictions", counts=True),
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
    """A plotly.js scatter trace for a series."""
    optional = {
        "stackgroup": series.stack,
        "fill": series.fill,
        "fillcolor": series.fill_colour,
        "legendgrouptitle": {"text": series.legend_title} if series.legend_title else None,
        "hovertemplate": series.hover,
    }
    return {
        "type": "scatter",
        "x": x,
        "y": y,
        "name": name,
        "mode": "lines",
        "line": dict(line),
        "legendgroup": series.legend,
        **{key: value for key, value in optional.items() if value is not None},
    }


# -- layout: the subplots by hand (what plotly's make_subplots computes, without its cost) ------

_FONT = {"family": "Inter, -apple-system, Segoe UI, Helvetica, Arial, sans-serif", "size": 12}
_AXIS = {
    "showgrid": True,
    "gridcolor": "#eef0f3",
    "linecolor": "#d1d5db",
    "zeroline": False,
    "automargin": True,
}


def _axis_names(panels: Sequence[_Panel]) -> tuple[list[str], list[str], dict[int, str]]:
    """x and y axis ids per panel ("x", "x2", ...), and the secondary y axis id of those with one."""
    xs = ["x" if i == 0 else f"x{i + 1}" for i in range(len(panels))]
    ys = ["y" if i == 0 else f"y{i + 1}" for i in range(len(panels))]
    secondary: dict[int, str] = {}
    for i, panel in enumerate(panels):
        if panel.secondary_y_title is not None:
            secondary[i] = f"y{len(panels) + len(secondary) + 1}"
    return xs, ys, secondary


def _layout_key(axis: str) -> str:
    """The layout key of an axis id: x2 -> xaxis2, y -> yaxis."""
    return f"{axis[0]}axis{axis[1:]}"


def _count_ticks(peak: float) -> dict[str, Any]:
    """Integer ticks for an axis of counts: a step of 1 while plotly would pick halves."""
    ticks: dict[str, Any] = {"tickformat": ",d"}
    if peak <= 8:
        ticks.update(tick0=0, dtick=1)
    return ticks


def _subplots(
    panels: Sequence[_Panel],
    duration: float,
    scale: float,
    axis_title: str,
    peaks: Mapping[str, float],
    gap: float = 0.045,
) -> dict[str, Any]:
    """Axes and subplot titles of panels stacked on one shared time axis, `gap` (a share of the
    figure) apart. `peaks` gives each counting y axis's largest value, for its ticks."""
    xs, ys, secondary = _axis_names(panels)
    usable = 1 - gap * (len(panels) - 1)
    total = sum(p.height for p in panels)
    layout: dict[str, Any] = {"annotations": []}
    top = 1.0
    for i, panel in enumerate(panels):
        height = usable * panel.height / total
        domain = [max(0.0, top - height), top]
        last = i == len(panels) - 1
        x_axis = {
            **_AXIS,
            "anchor": ys[i],
            "domain": [0.0, 1.0],
            "range": [0, duration / scale],
            "showticklabels": last,
        }
        if i:
            x_axis["matches"] = "x"
        if last:
            x_axis["title"] = {"text": axis_title}
        layout[_layout_key(xs[i])] = x_axis
        y_axis: dict[str, Any] = {
            **_AXIS,
            "anchor": xs[i],
            "domain": domain,
            "title": {"text": panel.y_title},
            "rangemode": "tozero",
        }
        if panel.y_range is not None:
            y_axis["range"] = list(panel.y_range)
        if panel.counts:
            y_axis.update(_count_ticks(peaks.get(ys[i], 0)))
        layout[_layout_key(ys[i])] = y_axis
        if i in secondary:
            second: dict[str, Any] = {
                **_AXIS,
                "anchor": xs[i],
                "overlaying": ys[i],
                "side": "right",
                "showgrid": False,
                "rangemode": "tozero",
                "title": {"text": panel.secondary_y_title},
            }
            if panel.counts:
                second.update(_count_ticks(peaks.get(secondary[i], 0)))
            layout[_layout_key(secondary[i])] = second
        layout["annotations"].append(
            {
                "text": html.escape(panel.title),
                "x": 0.5,
                "xref": "paper",
                "xanchor": "center",
                "y": domain[1],
                "yref": "paper",
                "yanchor": "bottom",
                "showarrow": False,
                "font": {"size": 14},
            }
        )
        top = domain[0] - gap
    return layout


def _base_layout(height: int, top_margin: int) -> dict[str, Any]:
    return {
        "height": height,
        "margin": {"l": 70, "r": 30, "t": top_margin, "b": 50},
        "hovermode": "x unified",
        "paper_bgcolor": "#ffffff",
        "plot_bgcolor": "#ffffff",
        "font": dict(_FONT, color="#2a3f5f"),
        "hoverlabel": {"bgcolor": "#ffffff"},
        "legend": {"groupclick": "toggleitem", "tracegroupgap": 18, "font": {"size": 11}},
    }


# -- one run ------------------------------------------------------------------------------------


def periods(events: Iterable[dict], reason: str, marker: str, step: float) -> list[tuple[float, float]]:
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


def _period_rect(start: float, end: float, scale: float, **style: Any) -> dict[str, Any]:
    """A period (seconds) shaded across every panel, behind the traces."""
    return {
        "type": "rect",
        "xref": "x",
        "yref": "paper",
        "x0": start / scale,
        "x1": end / scale,
        "y0": 0,
        "y1": 1,
        "layer": "below",
        **style,
    }


def _shaded_periods(result: Any, scale: float) -> tuple[list[dict], list[dict]]:
    """Shapes and labels for the halted and backed-off periods, across every panel."""
    step = result.scenario.options.scan_interval
    shapes, labels = [], []
    for reason, marker, colour, text_colour, label in _PERIODS:
        for start, end in periods(result.events, reason, marker, step):
            shapes.append(_period_rect(start, end, scale, fillcolor=colour, line={"width": 0}, name=label))
            labels.append(
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
    return shapes, labels


def build_figure(result: Any) -> dict[str, Any]:
    """The run's figure as plotly.js JSON: {"data": traces, "layout": layout}."""
    timeline = result.timeline
    scale, axis_title = _time_axis(result.scenario.duration)
    x = [round(row["time"] / scale, 5) for row in timeline]
    groups = [g.name for g in result.scenario.groups]
    xs, ys, secondary = _axis_names(_PANELS)
    traces: list[dict[str, Any]] = []
    peaks: dict[str, float] = {}

    def add(series: _Series, column: str, name: str, line: Mapping[str, Any]) -> None:
        y = _values(timeline, column, series.per)
        if series.only_if_any and not any(y):
            return
        trace = _scatter(series, x, y, name, line)
        y_axis = secondary[series.panel] if series.secondary_y else ys[series.panel]
        trace.update(xaxis=xs[series.panel], yaxis=y_axis)
        traces.append(trace)
        peaks[y_axis] = max(peaks.get(y_axis, 0), max((v for v in y if v is not None), default=0))

    for block in _GROUP_SERIES:
        for index, group in enumerate(groups):
            colour = _PALETTE[index % len(_PALETTE)]
            for series in block:
                column, name = series.column.format(group=group), series.name.format(group=group)
                add(series, column, name, {"color": colour, **series.line})
    for series in _SERIES:
        add(series, series.column, series.name, series.line)
    # Stacked ready nodes: the axis reaches the total.
    peaks[ys[0]] = max(peaks.get(ys[0], 0), max((row.get("nodes_total", 0) for row in timeline), default=0))

    # The autoscaler's decisions, as markers along the top of the node plot.
    top = max((row.get("nodes_total", 0) + row.get("nodes_upcoming", 0) for row in timeline), default=1) or 1
    for reason, (symbol, colour, label) in _AUTOSCALER_MARKS.items():
        chosen = [e for e in result.events if e["reason"] == reason]
        if chosen:
            traces.append(
                {
                    "type": "scatter",
                    "x": [e["time"] / scale for e in chosen],
                    "y": [top * 1.06] * len(chosen),
                    "mode": "markers",
                    "name": label,
                    "marker": {"symbol": symbol, "color": colour, "size": 9},
                    "legendgroup": "decisions",
                    "legendgrouptitle": {"text": "Autoscaler"},
                    "text": [e["message"] for e in chosen],
                    "hovertemplate": "%{text}<extra></extra>",
                    "xaxis": xs[0],
                    "yaxis": ys[0],
                }
            )
    peaks[ys[0]] = max(peaks[ys[0]], top * 1.06)

    layout = _base_layout(1560, 140)
    layout.update(_subplots(_PANELS, result.scenario.duration, scale, axis_title, peaks))
    shapes, labels = _shaded_periods(result, scale)
    layout["annotations"].extend(labels)

    # Scenario events: one dashed line and one label per moment (events at the same time share it).
    moments: dict[float, list[dict]] = {}
    for marker in result.markers:
        moments.setdefault(marker["time"], []).append(marker)
    for moment, markers in moments.items():
        kinds = [m["kind"] for m in markers]
        colour = _EVENT_COLOURS.get("fault" if "fault" in kinds else kinds[0], "#6b7280")
        shapes.append(
            {
                "type": "line",
                "xref": "x",
                "yref": "paper",
                "x0": moment / scale,
                "x1": moment / scale,
                "y0": 0,
                "y1": 1,
                "line": {"width": 1, "dash": "dash", "color": colour},
                "opacity": 0.6,
            }
        )
        layout["annotations"].append(
            {
                "x": moment / scale,
                "xref": "x",
                "y": 1.03,
                "yref": "paper",
                "yanchor": "bottom",
                "text": "<br>".join(html.escape(m["label"]) for m in markers),
                "showarrow": False,
                "textangle": -25,
                "font": {"size": 10, "color": colour},
                "xanchor": "left",
            }
        )
    layout["shapes"] = shapes
    return {"data": traces, "layout": layout}


# -- the page's plumbing ----------------------------------------------------------------------------

_CONFIG = {"displaylogo": False, "responsive": True}


@cache
def _plotly_js() -> str:
    """plotly.min.js from the plotly package, read once per process."""
    return resources.files("plotly").joinpath("package_data/plotly.min.js").read_text(encoding="utf-8")


def _script_json(value: Any) -> str:
    """JSON safe inside a <script> element."""
    text = json.dumps(value, separators=(",", ":"))
    return text.replace("</", "<\\/").replace("<!--", "<\\!--")


def plot_div(figure: Mapping[str, Any], div_id: str) -> str:
    """A div drawn by plotly.js (which must be loaded before it) from a figure's JSON."""
    return (
        f'<div id="{div_id}" class="plot"></div><script>Plotly.newPlot("{div_id}", '
        f"{_script_json(figure['data'])}, {_script_json(figure['layout'])}, {_script_json(_CONFIG)});</script>"
    )


def plotly_script() -> str:
    return f'<script type="text/javascript">{_plotly_js()}</script>'


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


def aggregate_events(events: Iterable[dict]) -> list[dict[str, Any]]:
    """Events as `kubectl get events` shows them: one row per (source, type, reason, object) with
    its count, first and last seen, and the latest message; in order of first appearance."""
    rows: dict[tuple[str, str, str, str], dict[str, Any]] = {}
    for e in events:
        key = (e["source"], e["type"], e["reason"], e["object"])
        row = rows.get(key)
        if row is None:
            rows[key] = {
                "source": e["source"],
                "type": e["type"],
                "reason": e["reason"],
                "object": e["object"],
                "count": 1,
                "first": e["time"],
                "last": e["time"],
                "message": e["message"],
            }
        else:
            row["count"] += 1
            row["last"] = e["time"]
            row["message"] = e["message"]
    return list(rows.values())


def _seen(offset: float, start: float) -> str:
    """A time in the events table: the offset from the start, and the RFC 3339 time it stands for."""
    return f'{html.escape(format_duration(offset))}<br><span class="at">{rfc3339(start + offset)}</span>'


def _event_table(events: list[dict], start: float, limit: int = 400) -> str:
    shown = [e for e in events if e["source"] in _TABLE_SOURCES or e["reason"] in _TABLE_REASONS]
    aggregated = aggregate_events(shown)
    rows = []
    for e in aggregated[:limit]:
        cls = ' class="warn"' if e["type"] == "Warning" else ""
        rows.append(
            f"<tr{cls}><td>{_seen(e['first'], start)}</td>"
            f'<td>{_seen(e["last"], start)}</td><td class="n">{e["count"]:,}</td>'
            f"<td>{html.escape(e['source'])}</td><td>{html.escape(e['reason'])}</td>"
            f"<td>{html.escape(e['object'])}</td><td>{html.escape(e['message'])}</td></tr>"
        )
    more = len(aggregated) - limit
    if more > 0:
        rows.append(f'<tr><td colspan="7">… {more} more in events.jsonl</td></tr>')
    if not rows:
        rows.append('<tr><td colspan="7">no autoscaler decisions or scenario events</td></tr>')
    head = (
        "<tr><th>first seen</th><th>last seen</th><th>count</th><th>source</th><th>reason</th>"
        "<th>object</th><th>message (latest)</th></tr>"
    )
    return head + "\n".join(rows)


_CSS = """
*{box-sizing:border-box}
body{margin:0;background:#f6f7f9;color:#111827;font:14px/1.5 Inter,-apple-system,'Segoe UI',Helvetica,Arial,sans-serif}
header{background:#0f172a;color:#f8fafc;padding:28px 40px 22px}
header h1{margin:0;font-size:24px;font-weight:650;letter-spacing:-.01em}
header p{margin:6px 0 0;color:#cbd5e1}
header .meta{margin-top:10px;font-size:13px;color:#94a3b8}
header .meta span{margin-right:18px}
td .at{color:#6b7280;font-size:11px;white-space:nowrap}
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
.cols.events-wide{grid-template-columns:minmax(0,1fr) minmax(0,2.2fr)}
.events{max-height:520px;overflow:auto}
.events td:nth-child(-n+2){white-space:nowrap;font-variant-numeric:tabular-nums;color:#6b7280}
.events td.n,.compare td{text-align:right;font-variant-numeric:tabular-nums}
.compare{width:auto;min-width:50%}
.compare th{font-weight:500;color:#374151}
.compare tr:first-child th:not(:first-child){text-align:right;font-weight:620}
.compare td,.compare tr:first-child th{padding-left:32px}
.scroll{max-height:520px;overflow:auto}
.compare td.bad{color:#b91c1c;font-weight:600}.compare td.good{color:#15803d}
.events tr.warn td{color:#b91c1c}
.note{font-size:12px;color:#6b7280;margin:4px 0 0}
footer{color:#9ca3af;font-size:12px;text-align:center;padding-bottom:30px}
"""


# -- the node QoS agent (spec.qos) ---------------------------------------------------------------

_QOS_PANELS = (
    _Panel("Hottest node: usage / capacity", 0.5, "%"),
    _Panel(
        "Nodes over a watermark, and the agent's actions",
        0.5,
        "nodes",
        secondary_y_title="actions",
        counts=True,
    ),
)
_QOS_RESOURCE_COLOURS = {"cpu": "#2563eb", "memory": "#9333ea"}
_WATERMARK_COLOUR = "#dc2626"


def _watermark_lines(
    settings: Any, x_axis: str, y_axis: str, resource: str | None = None
) -> tuple[list[dict], list[dict]]:
    """Shapes and labels: a dashed line across the panel at each utilization watermark (of
    `resource`'s rules only, if given)."""
    from kubetide.sim.report.qos import watermarks

    shapes, labels = [], []
    for watched, percent, label in watermarks(settings.config):
        if resource is not None and watched != resource:
            continue
        shapes.append(
            {
                "type": "line",
                "xref": f"{x_axis} domain",
                "yref": y_axis,
                "x0": 0,
                "x1": 1,
                "y0": percent,
                "y1": percent,
                "line": {"color": _WATERMARK_COLOUR, "width": 1, "dash": "dash"},
            }
        )
        labels.append(
            {
                "text": html.escape(label),
                "xref": f"{x_axis} domain",
                "yref": y_axis,
                "x": 0,
                "y": percent,
                "xanchor": "left",
                "yanchor": "bottom",
                "showarrow": False,
                "font": {"size": 10, "color": _WATERMARK_COLOUR},
            }
        )
    return shapes, labels


def build_qos_figure(result: Any) -> dict[str, Any]:
    """The QoS agent's figure as plotly.js JSON: the hottest node's usage against the watermarks,
    and the nodes over a watermark with the agent's cumulative actions."""
    timeline = result.timeline
    settings = result.scenario.qos
    scale, axis_title = _time_axis(result.scenario.duration)
    x = [round(row["time"] / scale, 5) for row in timeline]
    xs, ys, secondary = _axis_names(_QOS_PANELS)
    traces: list[dict[str, Any]] = []
    for resource in settings.resources:
        column = f"qos_peak_{resource}_pct"
        colour = _QOS_RESOURCE_COLOURS.get(resource, "#0891b2")
        traces.append(
            {
                "type": "scatter",
                "x": x,
                "y": [row.get(column) for row in timeline],
                "name": f"{resource} (hottest node)",
                "mode": "lines",
                "line": {"color": colour, "width": 1.6, "shape": "hv"},
                "xaxis": xs[0],
                "yaxis": ys[0],
            }
        )
    over = [row.get("qos_nodes_over_watermark", 0) for row in timeline]
    traces.append(
        {
            "type": "scatter",
            "x": x,
            "y": over,
            "name": "nodes over a watermark",
            "mode": "lines",
            "fill": "tozeroy",
            "fillcolor": "rgba(220,38,38,0.15)",
            "line": {"color": _WATERMARK_COLOUR, "width": 1.5, "shape": "hv"},
            "xaxis": xs[1],
            "yaxis": ys[1],
        }
    )
    peaks = {ys[1]: max(over, default=0), secondary[1]: 0}
    for column, name, colour in (
        ("qos_evictions_total", "evictions (cumulative)", "#ea580c"),
        ("qos_throttles_total", "throttles (cumulative)", "#0891b2"),
    ):
        values = [row.get(column, 0) for row in timeline]
        if any(values):
            traces.append(
                {
                    "type": "scatter",
                    "x": x,
                    "y": values,
                    "name": name,
                    "mode": "lines",
                    "line": {"color": colour, "width": 1.4, "shape": "hv"},
                    "xaxis": xs[1],
                    "yaxis": secondary[1],
                }
            )
            peaks[secondary[1]] = max(peaks[secondary[1]], max(values))
    layout = _base_layout(520, 60)
    layout.update(_subplots(_QOS_PANELS, result.scenario.duration, scale, axis_title, peaks, gap=0.12))
    shapes, labels = _watermark_lines(settings, xs[0], ys[0])
    layout["shapes"] = shapes
    layout["annotations"].extend(labels)
    return {"data": traces, "layout": layout}


def _qos_section(result: Any) -> str:
    """The node QoS agent's panel (sim/qos.py), only for scenarios with spec.qos."""
    qos = result.summary.get("qos")
    if qos is None or result.scenario.qos is None:
        return ""
    from kubetide.sim.report.qos import counts_table, mode_heading

    precise = qos.get("precise", True)
    note = f"The agent ran in {'precise' if precise else 'all candidates'} mode."
    table = counts_table([(mode_heading(precise), qos)])
    return (
        f"<section><h2>Node QoS agent</h2><p>{html.escape(note)}</p>"
        f'<div style="max-width:820px">{table}</div>{plot_div(build_qos_figure(result), "qos")}</section>'
    )


def render(result) -> str:
    summary = result.summary
    scenario = result.scenario
    plot = plot_div(build_figure(result), "timeline")
    description = html.escape(scenario.description) if scenario.description else ""
    warnings = "".join(f"<li>{html.escape(w)}</li>" for w in result.warnings)
    warning_block = f"<section><h2>Warnings</h2><ul>{warnings}</ul></section>" if warnings else ""
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>kubetide simulate: {html.escape(scenario.name)}</title>
<style>{_CSS}</style>
{plotly_script()}</head>
<body>
<header>
<h1>{html.escape(scenario.name)}</h1>
{f"<p>{description}</p>" if description else ""}
<div class="meta"><span>simulated {html.escape(format_duration(scenario.duration))} from {html.escape(summary["start"])}</span>
<span>seed {summary["seed"]}</span><span>autoscaler: {html.escape(str(summary["autoscaler"]))}</span>
<span>{summary["autoscaler_loops"]:,} loops</span><span>wall time {summary["wall_seconds"]:.1f}s</span></div>
</header>
<main>
<div class="cards">{_cards(summary)}</div>
{warning_block}
<section>{plot}</section>
{_qos_section(result)}
<div class="cols events-wide">
<section><h2>Summary</h2><table class="summary">{_table(summary)}</table></section>
<section><h2>Decisions and scenario events</h2><div class="events"><table>
{_event_table(result.events, scenario.start)}
</table></div></section>
</div>
</main>
<footer>generated by kubetide simulate · summary.json, timeline.csv and events.jsonl sit beside this file</footer>
<script type="application/json" id="summary">{html.escape(json.dumps(summary))}</script>
</body></html>
"""


# -- several runs of one scenario (simulate --compare) -------------------------------------------

_COMPARE_PANELS = (
    _Panel("Nodes (registered)", 0.24, "nodes", counts=True),
    _Panel("Pending pods", 0.2, "pods", counts=True),
    _Panel("Drains in progress", 0.16, "nodes", counts=True),
    _Panel("Evictions (cumulative)", 0.18, "evictions", counts=True),
    _Panel("Cumulative cost", 0.22, "$"),
)
_COMPARE_COLUMNS = ("nodes_total", "pending_pods", "drains_in_progress", "evictions_total", "cost")


def build_comparison_figure(runs: Sequence[tuple[str, Any]]) -> dict[str, Any]:
    """One trace per run and panel, all on the same time axis; a run's traces share its colour
    and legend entry (clicking it hides the run everywhere). Each run's halted and backed-off
    periods are shaded in its colour (backoff with a dotted edge)."""
    figure, scale = _overlaid(runs, _COMPARE_PANELS, _COMPARE_COLUMNS, 1200, missing=0)
    shapes = []
    for index, (name, result) in enumerate(runs):
        step = result.scenario.options.scan_interval
        for reason, marker, *_ in _PERIODS:
            for start, end in periods(result.events, reason, marker, step):
                colour = _PALETTE[index % len(_PALETTE)]
                shapes.append(
                    _period_rect(
                        start,
                        end,
                        scale,
                        fillcolor=colour,
                        opacity=0.1,
                        line={"width": 1, "dash": "dot", "color": colour} if marker else {"width": 0},
                        legendgroup=name,
                        name=f"{name}: {reason}",
                    )
                )
    figure["layout"]["shapes"] = shapes
    return figure


def build_qos_comparison_figure(runs: Sequence[tuple[str, Any]]) -> dict[str, Any]:
    """The QoS agent's series of every run overlaid (runs of a scenario with spec.qos): the
    hottest node's usage per watched resource against the watermarks, the nodes over a
    watermark, and the agent's cumulative evictions and throttles."""
    settings = runs[0][1].scenario.qos
    panels = [
        _Panel(f"Hottest node: {resource} usage / capacity", 0.3, "%") for resource in settings.resources
    ]
    columns = [f"qos_peak_{resource}_pct" for resource in settings.resources]
    panels.append(_Panel("Nodes over a watermark", 0.22, "nodes", counts=True))
    columns.append("qos_nodes_over_watermark")
    for column, title in (
        ("qos_evictions_total", "QoS agent evictions (cumulative)"),
        ("qos_throttles_total", "QoS agent throttles (cumulative)"),
    ):
        if any(row.get(column) for _, result in runs for row in result.timeline):
            panels.append(_Panel(title, 0.22, "actions", counts=True))
            columns.append(column)
    figure, _ = _overlaid(runs, panels, columns, 260 * len(panels) + 120, missing=None)
    xs, ys, _ = _axis_names(panels)
    shapes, labels = [], []
    for index, resource in enumerate(settings.resources):
        lines, texts = _watermark_lines(settings, xs[index], ys[index], resource)
        shapes += lines
        labels += texts
    figure["layout"]["shapes"] = shapes
    figure["layout"]["annotations"].extend(labels)
    return figure


def _overlaid(
    runs: Sequence[tuple[str, Any]],
    panels: Sequence[_Panel],
    columns: Sequence[str],
    height: int,
    missing: Any,
) -> tuple[dict[str, Any], float]:
    """(figure, the time axis's scale): panel i draws timeline column i of every run, in the run's
    colour; a row without the column reads `missing`."""
    scenario = runs[0][1].scenario
    scale, axis_title = _time_axis(scenario.duration)
    xs, ys, _ = _axis_names(panels)
    traces: list[dict[str, Any]] = []
    peaks: dict[str, float] = {}
    for index, (name, result) in enumerate(runs):
        colour = _PALETTE[index % len(_PALETTE)]
        x = [round(row["time"] / scale, 5) for row in result.timeline]
        for panel, column in enumerate(columns):
            y = [row.get(column, missing) for row in result.timeline]
            peaks[ys[panel]] = max(peaks.get(ys[panel], 0), max((v for v in y if v is not None), default=0))
            traces.append(
                {
                    "type": "scatter",
                    "x": x,
                    "y": y,
                    "name": name,
                    "legendgroup": name,
                    "showlegend": panel == 0,
                    "mode": "lines",
                    "line": {"color": colour, "width": 1.6, "shape": "linear" if column == "cost" else "hv"},
                    "hovertemplate": f"{html.escape(name)}: %{{y}}<extra></extra>",
                    "xaxis": xs[panel],
                    "yaxis": ys[panel],
                }
            )
    layout = _base_layout(height, 60)
    layout.update(_subplots(panels, scenario.duration, scale, axis_title, peaks))
    layout["legend"] = {"title": {"text": "Setting"}, "font": {"size": 12}}
    return {"data": traces, "layout": layout}, scale


def render_comparison(comparison: Mapping[str, Any], results: Sequence[Any]) -> str:
    """report.html of `simulate --compare`: compare.json's settings side by side and their runs
    overlaid. `results` are the settings' SimulationResults, in compare.json's order."""
    settings = comparison["settings"]
    runs = [(entry["name"], result) for entry, result in zip(settings, results, strict=True)]
    scenario = results[0].scenario
    figure = build_comparison_figure(runs)
    plot = plot_div(figure, "comparison")
    if figure["layout"]["shapes"]:
        plot += (
            '<p class="note">Shaded: the periods when a setting\'s autoscaler halted (cluster unhealthy) '
            "or, with a dotted edge, held scale-up back (node group backoff), in the setting's colour.</p>"
        )
    qos_plot = ""
    if all(result.scenario.qos is not None for result in results):
        qos_plot = plot_div(build_qos_comparison_figure(runs), "qos-comparison")
    head = "<tr><th></th>" + "".join(f"<th>{html.escape(e['name'])}</th>" for e in settings) + "</tr>"
    rows = [
        "<tr><th>flags</th>" + "".join(f"<td>{html.escape(format_flags(e))}</td>" for e in settings) + "</tr>"
    ]
    for key in settings[0]["metrics"]:
        if key == "invariants":
            continue
        cells = "".join(f"<td>{html.escape(format_metric(key, e['metrics'][key]))}</td>" for e in settings)
        rows.append(f"<tr><th>{html.escape(key.replace('_', ' '))}</th>{cells}</tr>")
    verdicts = []
    for entry in settings:
        broken = {k: v for k, v in entry["metrics"]["invariants"].items() if v}
        text = ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in broken.items()) or "all held"
        verdicts.append(f'<td class="{"bad" if broken else "good"}">{html.escape(text)}</td>')
    rows.append(f"<tr><th>invariants</th>{''.join(verdicts)}</tr>")
    reasons = sorted({reason for result in results for reason in result.summary.get("events", {})})
    event_rows = [
        f"<tr><th>{html.escape(reason)}</th>"
        + "".join(f"<td>{result.summary['events'].get(reason, 0):,}</td>" for result in results)
        + "</tr>"
        for reason in reasons
    ]
    description = html.escape(scenario.description) if scenario.description else ""
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>kubetide simulate --compare: {html.escape(scenario.name)}</title>
<style>{_CSS}</style>
{plotly_script()}</head>
<body>
<header>
<h1>{html.escape(scenario.name)}: {len(settings)} settings compared</h1>
{f"<p>{description}</p>" if description else ""}
<div class="meta"><span>simulated {html.escape(format_duration(scenario.duration))}</span>
<span>seed {comparison["seed"]}</span><span>the same scenario and seed for every setting</span></div>
</header>
<main>
<section><h2>Settings side by side</h2><table class="compare">{head}{"".join(rows)}</table></section>
<section>{plot}</section>
{_qos_comparison(settings, qos_plot)}
<section><h2>Events by reason</h2><div class="scroll"><table class="compare">{head}{"".join(event_rows)}</table></div></section>
</main>
<footer>generated by kubetide simulate --compare · each setting's summary.json, timeline.csv and
events.jsonl are in its directory beside this file; compare.json holds the table above</footer>
</body></html>
"""


def format_flags(entry: Mapping[str, Any], separator: str = " ") -> str:
    """A compare.json setting's flags (and QoS mode) as the console and the report show them."""
    flags = [f"{name}={value}" for name, value in entry["flags"].items()]
    if "qos_precise" in entry:
        flags.append(f"qos.precise={'true' if entry['qos_precise'] else 'false'}")
    return separator.join(flags) or "(no flag changed)"


def format_metric(key: str, value: Any) -> str:
    """A compare.json metric as the console and the report show it."""
    if key == "cost":
        return f"${value:,.2f}"
    if key == "node_hours":
        return f"{value:,.1f}"
    if isinstance(value, float):
        return f"{value:,.0f}"
    return f"{value:,}"


def _qos_comparison(settings: Sequence[Mapping[str, Any]], plot: str) -> str:
    """The QoS agent's counts per setting (compare.json's settings[].qos) and its series, when it ran."""
    if any("qos" not in entry for entry in settings):
        return ""
    from kubetide.sim.report.qos import counts_table, mode_heading

    def heading(entry: Mapping[str, Any]) -> str:
        if "qos_precise" not in entry:
            return str(entry["name"])
        mode = mode_heading(entry["qos_precise"])
        # spec.qos.compare names its runs after the modes: "precise", not "precise: precise"
        return mode if mode.startswith(entry["name"]) else f"{entry['name']}: {mode}"

    columns = [(heading(e), e["qos"]) for e in settings]
    return f'<section><h2>Node QoS agent</h2><div style="max-width:980px">{counts_table(columns)}</div>{plot}</section>'
