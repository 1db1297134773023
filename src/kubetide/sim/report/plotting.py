"""The one plotting stack of every report.html (simulate, simulate --compare, sweep): plotly's
graph objects, one look (`TEMPLATE`), panels stacked on a shared time axis by plotly's
`make_subplots`, and the page around them (`page`, `CSS`), with plotly.js inlined once so a
report works offline and can be mailed around.

Titles and labels are escaped here (plotly.js renders text as a subset of HTML); plotly's own JSON
writer makes the figures safe inside a <script> element.
"""

from __future__ import annotations

import html
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio
from plotly.subplots import make_subplots

PALETTE = ("#2563eb", "#16a34a", "#9333ea", "#ea580c", "#0891b2", "#db2777", "#65a30d", "#ca8a04")
FONT = {"family": "Inter, -apple-system, Segoe UI, Helvetica, Arial, sans-serif", "size": 12}
_AXIS = {
    "showgrid": True,
    "gridcolor": "#eef0f3",
    "linecolor": "#d1d5db",
    "zeroline": False,
    "automargin": True,
}
CONFIG = {"displaylogo": False, "responsive": True}

# Every figure's look: white, light grid, the palette, unified hover, legend groups that toggle
# one item at a time.
TEMPLATE = go.layout.Template(
    layout=go.Layout(
        font={**FONT, "color": "#2a3f5f"},
        paper_bgcolor="#ffffff",
        plot_bgcolor="#ffffff",
        colorway=list(PALETTE),
        hoverlabel={"bgcolor": "#ffffff"},
        xaxis=_AXIS,
        yaxis=_AXIS,
        legend={"groupclick": "toggleitem", "tracegroupgap": 18, "font": {"size": 11}},
    )
)


def colour(index: int) -> str:
    return PALETTE[index % len(PALETTE)]


def time_axis(duration: float) -> tuple[float, str]:
    """(seconds per unit, title) of a time axis for a run of `duration` seconds."""
    if duration <= 2 * 3600:
        return 60.0, "minutes since start"
    return 3600.0, "hours since start"


@dataclass(frozen=True)
class Panel:
    """One row of a stacked figure."""

    title: str
    height: float  # share of the figure
    y_title: str
    y_range: tuple[float, float] | None = None
    secondary_y_title: str | None = None  # a second y axis, for series drawn with secondary_y
    counts: bool = False  # the y axes count things: ticks at integers only
    # False: the primary y axis spans the data (with a margin), not 0 to its peak, so 45-52
    # nodes are not a flat line at the top of the panel (`fit_ranges`).
    from_zero: bool = True


@dataclass
class Grid:
    """Panels stacked on one shared time axis, laid out by plotly's `make_subplots`: the layout
    (plain data, finished by `Drawing.draw`) and each panel's axes."""

    panels: Sequence[Panel]
    layout: dict[str, Any]
    axes: dict[tuple[int, bool], tuple[str, str]]  # (row, secondary y) -> (x axis id, y axis id)

    def axis_key(self, row: int, secondary_y: bool = False) -> str:
        """The layout key of a panel's y axis ("yaxis3")."""
        return "yaxis" + self.axes[(row, secondary_y)][1][1:]


def stacked(
    panels: Sequence[Panel],
    *,
    duration: float,
    scale: float,
    axis_title: str,
    height: int,
    top_margin: int,
    spacing: float = 0.045,
) -> Grid:
    """Panels stacked on one shared time axis (0 to `duration` in units of `scale` seconds), each
    with its title, y axis title and range."""
    subplots = make_subplots(
        rows=len(panels),
        cols=1,
        shared_xaxes=True,
        vertical_spacing=spacing,
        row_heights=[p.height for p in panels],
        subplot_titles=[html.escape(p.title) for p in panels],
        specs=[[{"secondary_y": p.secondary_y_title is not None}] for p in panels],
    )
    layout = subplots.layout.to_plotly_json()
    layout.update(height=height, margin={"l": 70, "r": 30, "t": top_margin, "b": 50}, hovermode="x unified")
    for title in layout["annotations"]:
        title["font"] = {"size": 14}
    axes: dict[tuple[int, bool], tuple[str, str]] = {}
    for row, panel in enumerate(panels, start=1):
        sides = (False, True) if panel.secondary_y_title is not None else (False,)
        for secondary in sides:
            cell = subplots.get_subplot(row, 1, secondary_y=secondary)
            axes[(row, secondary)] = (_axis_id(cell.xaxis), _axis_id(cell.yaxis))
        primary = subplots.get_subplot(row, 1)
        x_axis, y_axis = layout[primary.xaxis.plotly_name], layout[primary.yaxis.plotly_name]
        x_axis.update(range=[0, duration / scale], domain=[0.0, 1.0])  # secondary y axes sit in the margin
        if row == len(panels):
            x_axis["title"] = {"text": axis_title}
        y_axis.update(title={"text": panel.y_title}, rangemode="tozero" if panel.from_zero else "normal")
        if panel.y_range is not None:
            y_axis["range"] = list(panel.y_range)
        if panel.secondary_y_title is not None:
            second = layout[subplots.get_subplot(row, 1, secondary_y=True).yaxis.plotly_name]
            second.update(title={"text": panel.secondary_y_title}, rangemode="tozero", showgrid=False)
    return Grid(panels, layout, axes)


def _axis_id(axis: Any) -> str:
    """How traces and shapes name an axis: layout key "xaxis2" -> "x2"."""
    return str(axis.plotly_name).replace("axis", "")


def count_ticks(
    grid: Grid, peaks: Mapping[tuple[int, bool], float], lows: Mapping[tuple[int, bool], float] | None = None
) -> None:
    """Ticks the counting panels' y axes at integers (a step of 1 while plotly would pick halves).
    `peaks[(row, secondary)]` is the largest value drawn on that axis, `lows` the smallest (0
    when not given: the axis starts at 0)."""
    for row, panel in enumerate(grid.panels, start=1):
        if not panel.counts:
            continue
        for secondary in (False, True) if panel.secondary_y_title is not None else (False,):
            axis = grid.layout[grid.axis_key(row, secondary)]
            axis["tickformat"] = ",d"
            bottom = (lows or {}).get((row, secondary), 0.0) if not panel.from_zero and not secondary else 0.0
            if peaks.get((row, secondary), 0) - bottom <= 8:
                axis.update(tick0=0, dtick=1)


def fitted_range(low: float, high: float, counts: bool) -> tuple[float, float]:
    """A y range around data from `low` to `high`: a margin of a tenth of the span each side (at
    least half a unit for counts, so a flat line sits mid-panel), never below 0 for data that
    is not negative."""
    margin = max((high - low) * 0.1, 0.5 if counts else abs(high) * 0.05 or 1.0)
    bottom = low - margin
    if low >= 0:
        bottom = max(bottom, 0.0)
    return bottom, high + margin


def fit_ranges(
    grid: Grid, peaks: Mapping[tuple[int, bool], float], lows: Mapping[tuple[int, bool], float]
) -> None:
    """Sets the range of every primary y axis whose panel is not `from_zero` to its data."""
    for row, panel in enumerate(grid.panels, start=1):
        if panel.from_zero or panel.y_range is not None or (row, False) not in lows:
            continue
        bottom, top = fitted_range(lows[(row, False)], peaks.get((row, False), 0.0), panel.counts)
        grid.layout[grid.axis_key(row)]["range"] = [bottom, top]


@dataclass
class Drawing:
    """What goes on a grid: traces (as plotly's scatter properties), shapes and annotations,
    gathered first and made into one figure (`draw`): plotly checks a figure's whole layout on
    every change, and its data too once it has some, so building it piece by piece costs many
    times the one check."""

    traces: list[dict[str, Any]] = field(default_factory=list)
    shapes: list[dict[str, Any]] = field(default_factory=list)
    annotations: list[dict[str, Any]] = field(default_factory=list)
    peaks: dict[tuple[int, bool], float] = field(default_factory=dict)  # largest value per y axis
    lows: dict[tuple[int, bool], float] = field(default_factory=dict)  # smallest value per y axis

    def add(self, row: int, secondary_y: bool = False, **scatter: Any) -> None:
        """A scatter trace (plotly's `go.Scatter` properties) on panel `row` (1 at the top)."""
        self.traces.append({"type": "scatter", "row": row, "secondary_y": secondary_y, **scatter})
        axis = (row, secondary_y)
        self.peaks[axis] = max(self.peaks.get(axis, 0.0), peak(scatter.get("y")))
        bottom = low(scatter.get("y"))
        if bottom is not None:
            self.lows[axis] = min(self.lows.get(axis, bottom), bottom)

    def hline(self, grid: Grid, row: int, y: float, label: str, line_colour: str) -> None:
        """A dashed horizontal line across panel `row` at `y`, labelled at its left end (a
        threshold, a watermark, a bound); the panel's axis reaches it."""
        x_axis, y_axis = grid.axes[(row, False)]
        x_domain = f"{x_axis} domain"
        self.shapes.append(
            {
                "type": "line",
                "xref": x_domain,
                "yref": y_axis,
                "x0": 0,
                "x1": 1,
                "y0": y,
                "y1": y,
                "line": {"color": line_colour, "width": 1, "dash": "dash"},
            }
        )
        self.annotations.append(
            {
                "text": html.escape(label),
                "xref": x_domain,
                "yref": y_axis,
                "x": 0,
                "y": y,
                "xanchor": "left",
                "yanchor": "bottom",
                "showarrow": False,
                "font": {"size": 10, "color": line_colour},
                "bgcolor": "rgba(255,255,255,0.85)",  # readable over the lines it crosses
            }
        )
        axis = (row, False)
        self.peaks[axis] = max(self.peaks.get(axis, 0.0), y)
        if axis in self.lows:
            self.lows[axis] = min(self.lows[axis], y)

    def draw(self, grid: Grid) -> go.Figure:
        """The figure: plotly's objects, checked once, in the report's look (`TEMPLATE`)."""
        count_ticks(grid, self.peaks, self.lows)
        fit_ranges(grid, self.peaks, self.lows)
        layout = {
            **grid.layout,
            "template": TEMPLATE,
            "shapes": [*grid.layout.get("shapes", ()), *self.shapes],
            "annotations": [*grid.layout.get("annotations", ()), *self.annotations],
        }
        data = []
        for trace in self.traces:
            properties = {k: v for k, v in trace.items() if k not in ("row", "secondary_y") and v is not None}
            x_axis, y_axis = grid.axes[(trace["row"], trace["secondary_y"])]
            data.append({**properties, "xaxis": x_axis, "yaxis": y_axis})
        return go.Figure(data=data, layout=layout)


def series(values: Iterable[float | None]) -> np.ndarray:
    """A trace's values as plotly takes them fastest (a float array; None, a gap, is NaN)."""
    return np.array([math.nan if v is None else v for v in values], dtype=float)


def peak(values: Any) -> float:
    """The largest value of a trace's values (0 for none, or only gaps)."""
    array = np.asarray(values if values is not None else (), dtype=float)
    if array.size == 0 or np.isnan(array).all():
        return 0.0
    return max(float(np.nanmax(array)), 0.0)


def low(values: Any) -> float | None:
    """The smallest value of a trace's values (None for none, or only gaps)."""
    array = np.asarray(values if values is not None else (), dtype=float)
    if array.size == 0 or np.isnan(array).all():
        return None
    return float(np.nanmin(array))


def period_rect(start: float, end: float, scale: float, **style: Any) -> dict[str, Any]:
    """A period (seconds) shaded across every panel, behind the traces (a layout shape)."""
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


def plot_div(figure: go.Figure, div_id: str) -> str:
    """A div drawn by plotly.js (loaded once per page by `plotly_script`)."""
    return pio.to_html(
        figure, include_plotlyjs=False, full_html=False, div_id=div_id, config=CONFIG, validate=False
    )


@cache
def plotly_script() -> str:
    """plotly.js as the plotly package ships it, inlined once per page."""
    from plotly.offline import get_plotlyjs

    return f'<script type="text/javascript">{get_plotlyjs()}</script>'


CSS = """
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
.summary{table-layout:fixed}
.summary th{font-weight:500;color:#374151;width:55%;font-family:ui-monospace,Menlo,Consolas,monospace;font-size:12px;overflow-wrap:anywhere}
.summary td{font-variant-numeric:tabular-nums}
.cols{display:grid;grid-template-columns:minmax(0,1fr) minmax(0,1.6fr);gap:22px}
.cols.events-wide{grid-template-columns:minmax(0,1fr) minmax(0,2.2fr)}
.events{max-height:520px;overflow:auto}
.events td:last-child{min-width:280px}
.events td:nth-child(-n+2){white-space:nowrap;font-variant-numeric:tabular-nums;color:#6b7280}
.events td.n,.compare td{text-align:right;font-variant-numeric:tabular-nums}
.compare{width:auto;min-width:50%}
.compare th{font-weight:500;color:#374151}
.compare tr:first-child th:not(:first-child){text-align:right;font-weight:620}
.compare td,.compare tr:first-child th{padding-left:32px}
.scroll{max-height:520px;overflow:auto}
.compare td.bad{color:#b91c1c;font-weight:600}.compare td.good{color:#15803d}
.compare td.reasons{max-width:360px;text-align:left;font-size:12px}
.sweep th,.sweep td{padding-left:14px;text-align:right}.sweep td{white-space:nowrap}.sweep td.mark{padding:5px 0 0 4px}
.front{color:#dc2626;font-size:15px}
.events tr.warn td{color:#b91c1c}
.note{font-size:12px;color:#6b7280;margin:4px 0 0}
.unblock td{font-size:12px}.unblock td:nth-child(-n+3){white-space:nowrap}.unblock h3{font-size:14px;margin:14px 0 4px}
.unblock .scroll{max-height:640px}.dot{display:inline-block;width:8px;height:8px;border-radius:50%;margin-right:6px}
footer{color:#9ca3af;font-size:12px;text-align:center;padding-bottom:30px}
"""


def page(
    *, title: str, heading: str, description: str, meta: Sequence[str], main: str, footer: str, tail: str = ""
) -> str:
    """A whole report.html: the header (heading, description, meta items), `main`, the footer and
    `tail` (e.g. data for scripts). `title`, `heading`, `description` and `meta` are text (escaped
    here); `main`, `footer` and `tail` are HTML."""
    about = f"<p>{html.escape(description)}</p>" if description else ""
    spans = "".join(f"<span>{html.escape(item)}</span>" for item in meta)
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{html.escape(title)}</title>
<style>{CSS}</style>
{plotly_script()}</head>
<body>
<header>
<h1>{html.escape(heading)}</h1>
{about}
<div class="meta">{spans}</div>
</header>
<main>
{main}
</main>
<footer>{footer}</footer>
{tail}</body></html>
"""
