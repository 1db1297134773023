"""A sweep's report.html: the settings' trade-offs, the Pareto front and each flag's effect.

The trade-off plots put one point per setting at its medians, whiskers from the 10th to the 90th
percentile, over the metrics of front.py that the data varies on: each pair of them (three
plots when cost, pending pod-seconds and evictions all vary), the settings side by side when one
does. The Pareto front (front.py, over the same metrics) is starred, and joined when it is over
the two metrics of its plot. Each effect plot shows, for one --grid flag, the median and 10-90 spread of each of
those metrics over every run with that flag's value. The table gives each setting's flags as
columns and every metric with its unit. The page and the plots are the simulator's report stack
(sim/report/plotting.py): the same look and page, plotly.js inlined once so it works offline.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from itertools import combinations
from typing import Any

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from kubetide.durations import format_duration
from kubetide.sim.report.plotting import TEMPLATE, colour, page, plot_div
from kubetide.sweep.front import TRADE_OFFS, pareto_front
from kubetide.sweep.results import METRICS, run_metrics

_FRONT = "#dc2626"
# (axis title, plotly's hover format) per metric; labels and units as the table shows them.
_AXES = {
    "cost": ("cost ($)", "$%{v:,.2f}"),
    "node_hours": ("node-hours", "%{v:,.1f} node-h"),
    "pending_pod_seconds": ("pending pod-seconds", "%{v:,.0f} pod-s"),
    "max_pending": ("max pending pods", "%{v:,.0f} pods"),
    "evictions": ("evictions", "%{v:,.0f}"),
    "drain_makespan": ("drain makespan (s)", "%{v:,.0f} s"),
    "below_pdb_minimum_seconds": ("below PDB minimum (s)", "%{v:,.0f} s"),
    "below_desired_pod_seconds": ("below desired pod-seconds", "%{v:,.0f} pod-s"),
}

_HEADINGS = {
    "drain_makespan": "drain makespan",
    "below_pdb_minimum_seconds": "below PDB minimum",
}  # the table's, where its cells differ from summary.csv's unit

Spread = Mapping[str, float]  # median, p10, p90 of a metric over a setting's runs


def format_value(key: str, value: float, unit: bool = True) -> str:
    """A metric's value as a person reads it, with its unit unless `unit` is False: $44.63,
    197.7 node-h, 1,234 pod-s, 1h12m."""
    if key == "cost":
        return f"${value:,.2f}"
    if key in ("drain_makespan", "below_pdb_minimum_seconds"):
        return format_duration(round(value))
    text = f"{value:,.1f}" if key == "node_hours" else f"{value:,.0f}"
    units = {"node_hours": " node-h", "pending_pod_seconds": " pod-s", "below_desired_pod_seconds": " pod-s"}
    return text + units.get(key, "") if unit else text


def format_spread(key: str, spread: Spread) -> tuple[str, str]:
    """(the median with its unit, "p10 to p90" or "" when every run gave the same) of a metric."""
    median = format_value(key, spread["median"])
    low, high = format_value(key, spread["p10"], False), format_value(key, spread["p90"], False)
    return median, "" if low == high else f"{low} to {high}"


def _error_bars(spreads: Sequence[Spread]) -> dict[str, Any]:
    return {
        "type": "data",
        "symmetric": False,
        "array": [s["p90"] - s["median"] for s in spreads],
        "arrayminus": [s["median"] - s["p10"] for s in spreads],
        "thickness": 1,
        "width": 3,
    }


def _hover(key: str, axis: str) -> str:
    return _AXES[key][1].replace("v", axis)


def trade_off_pairs(axes: Sequence[str]) -> list[tuple[str, str]]:
    """The pairs of metrics drawn against each other: every pair of the varying ones (cost vs
    pending, cost vs evictions, pending vs evictions when all three vary)."""
    return list(combinations(axes, 2))


def build_sweep_figure(
    sweep: Mapping[str, Any], runs_by_setting: Mapping[str, Sequence[Mapping[str, Any]]]
) -> go.Figure:
    """The trade-off plots across the top, then one row per --grid flag: its effect on each
    metric the settings differ on."""
    rows = [r for r in sweep["settings"] if r["runs"]]
    axes, on_front_ids = pareto_front(rows)
    on_front = set(on_front_ids)
    pairs = trade_off_pairs(axes)
    flags = list(sweep["grid"])
    effects = axes or ["cost"]
    cols = max(len(pairs), len(effects), 1)
    if len(pairs) > 1:
        specs: list[list[dict[str, Any] | None]] = [[{} for _ in pairs] + [None] * (cols - len(pairs))]
        titles = [f"{_AXES[y][0]} vs {_AXES[x][0]}" for x, y in pairs]
    else:  # one plot across the top
        specs = [[{"colspan": cols}] + [None] * (cols - 1)]
        if pairs:
            (x, y), *_ = pairs
            titles = [f"{_AXES[y][0]} vs {_AXES[x][0]}"]
        elif axes:
            titles = [f"{_AXES[axes[0]][0]} per setting"]
        else:
            titles = ["every setting gives the same cost, pending pod-seconds and evictions"]
    for flag in flags:  # make_subplots gives titles to the cells that exist, in order
        specs.append([{} for _ in effects] + [None] * (cols - len(effects)))
        titles += [f"{flag}: {_AXES[key][0]}" for key in effects]
    figure = make_subplots(
        rows=1 + len(flags),
        cols=cols,
        specs=specs,
        subplot_titles=[html.escape(t) for t in titles],
        vertical_spacing=0.3 / (1 + len(flags)),
        horizontal_spacing=0.08,
    )
    if pairs:
        for col, (x_key, y_key) in enumerate(pairs, start=1):
            _trade_off(figure, rows, on_front, x_key, y_key, col, legend=col == 1, axes=axes)
    elif axes:
        _one_metric(figure, rows, on_front, axes[0])
    for index, flag in enumerate(flags, start=2):
        for col, key in enumerate(effects, start=1):
            _effect(figure, sweep, rows, runs_by_setting, flag, key, index, col)
    figure.update_annotations(font_size=13)
    figure.update_layout(
        template=TEMPLATE,
        height=480 + 300 * len(flags),
        margin={"l": 70, "r": 30, "t": 60, "b": 50},
        legend={"groupclick": "toggleitem", "orientation": "h", "y": 1.06, "x": 0},
        hovermode="closest",
    )
    return figure


def _trade_off(
    figure: go.Figure,
    rows: Sequence[Mapping[str, Any]],
    on_front: set[str],
    x_key: str,
    y_key: str,
    col: int,
    *,
    legend: bool,
    axes: Sequence[str],
) -> None:
    """Panel `col` of the top row: `y_key` against `x_key` per setting, the front (over `axes`)
    starred, and joined when it is over these two metrics only."""
    for starred in (False, True):
        chosen = [r for r in rows if (r["id"] in on_front) == starred]
        if not chosen:
            continue
        xs = [r["metrics"][x_key] for r in chosen]
        ys = [r["metrics"][y_key] for r in chosen]
        figure.add_trace(
            go.Scatter(
                x=[s["median"] for s in xs],
                y=[s["median"] for s in ys],
                error_x=_error_bars(xs),
                error_y=_error_bars(ys),
                mode="markers+text",
                marker={
                    "size": 12 if starred else 8,
                    "symbol": "star" if starred else "circle",
                    "color": _FRONT if starred else colour(0),
                },
                text=[html.escape(_short(r)) for r in chosen],
                textposition="top center",
                textfont={"size": 10},
                customdata=[html.escape(r["label"]) for r in chosen],
                hovertemplate=f"%{{customdata}}<br>{_hover(x_key, 'x')}<br>{_hover(y_key, 'y')}<extra></extra>",
                name="Pareto front" if starred else "other settings",
                legendgroup="front" if starred else "other",
                showlegend=legend,
            ),
            row=1,
            col=col,
        )
    figure.update_xaxes(title_text=_AXES[x_key][0], row=1, col=col)
    figure.update_yaxes(title_text=_AXES[y_key][0], row=1, col=col)
    if len(axes) != 2:
        return  # a front over three metrics is no line in two of them: its points are starred
    line = sorted(
        (r["metrics"][x_key]["median"], r["metrics"][y_key]["median"]) for r in rows if r["id"] in on_front
    )
    figure.add_trace(
        go.Scatter(
            x=[p[0] for p in line],
            y=[p[1] for p in line],
            mode="lines",
            line={"color": _FRONT, "dash": "dot", "width": 1},
            showlegend=False,
            legendgroup="front",
            hoverinfo="skip",
        ),
        row=1,
        col=col,
    )


def _short(row: Mapping[str, Any]) -> str:
    """A setting's name on a plot: its flags' values ("5m · 10"), the scenario's own by that name."""
    return " · ".join(str(value) for value in row["flags"].values()) or "scenario's own"


def _one_metric(figure: go.Figure, rows: Sequence[Mapping[str, Any]], on_front: set[str], key: str) -> None:
    """One metric varies: the settings side by side, best first, the best starred."""
    ordered = sorted(rows, key=lambda r: r["metrics"][key]["median"])
    spreads = [r["metrics"][key] for r in ordered]
    figure.add_trace(
        go.Scatter(
            x=[s["median"] for s in spreads],
            y=[html.escape(r["label"]) for r in ordered],
            error_x=_error_bars(spreads),
            mode="markers",
            marker={
                "size": [12 if r["id"] in on_front else 8 for r in ordered],
                "symbol": ["star" if r["id"] in on_front else "circle" for r in ordered],
                "color": [_FRONT if r["id"] in on_front else colour(0) for r in ordered],
            },
            hovertemplate=f"%{{y}}<br>{_hover(key, 'x')}<extra></extra>",
            name="settings",
            showlegend=False,
        ),
        row=1,
        col=1,
    )
    figure.update_xaxes(title_text=_AXES[key][0], row=1, col=1)
    figure.update_yaxes(type="category", autorange="reversed", row=1, col=1)


def _effect(
    figure: go.Figure,
    sweep: Mapping[str, Any],
    rows: Sequence[Mapping[str, Any]],
    runs_by_setting: Mapping[str, Sequence[Mapping[str, Any]]],
    flag: str,
    key: str,
    row: int,
    col: int,
) -> None:
    """The median and 10-90 spread of `key` over every run with each value of `flag`."""
    values = sweep["grid"][flag]
    medians, plus, minus = [], [], []
    for value in values:
        runs = [
            run_metrics(summary)[key]
            for r in rows
            if r["flags"].get(flag) == value
            for summary in runs_by_setting.get(r["id"], [])
        ]
        p10, median, p90 = np.percentile(runs, [10, 50, 90]) if runs else (np.nan,) * 3
        medians.append(median)
        plus.append(p90 - median)
        minus.append(median - p10)
    figure.add_trace(
        go.Scatter(
            x=[str(v) for v in values],
            y=medians,
            mode="lines+markers",
            showlegend=False,
            error_y={"type": "data", "symmetric": False, "array": plus, "arrayminus": minus, "thickness": 1},
            line={"color": colour(1)},
            name=html.escape(f"{flag}: {_AXES[key][0]}"),
            hovertemplate=f"{html.escape(flag)}=%{{x}}<br>{_hover(key, 'y')}<extra></extra>",
        ),
        row=row,
        col=col,
    )
    figure.update_xaxes(title_text=html.escape(flag), type="category", row=row, col=col)
    figure.update_yaxes(title_text=_AXES[key][0], row=row, col=col)


def _table(sweep: Mapping[str, Any], rows: Sequence[Mapping[str, Any]], on_front: set[str]) -> str:
    flags = list(sweep["grid"]) or sorted({flag for r in rows for flag in r["flags"]})
    head = "".join(f"<th>{html.escape(flag)}</th>" for flag in flags)
    # metric headings break at spaces, not hyphens ("pod-s"): a non-breaking hyphen
    head += "".join(
        f"<th>{html.escape(_HEADINGS.get(key, label)).replace('-', '&#8209;')}</th>" for key, label in METRICS
    )
    body = []
    for r in rows:
        star = '<span class="front" title="on the Pareto front">★</span>' if r["id"] in on_front else ""
        cells = "".join(
            f"<th>{html.escape(str(r['flags'][flag]))}</th>"
            if flag in r["flags"]
            else '<th><span class="at">the scenario\'s</span></th>'
            for flag in flags
        )
        for key, _ in METRICS:
            median, spread = format_spread(key, r["metrics"][key])
            below = f'<br><span class="at">{html.escape(spread)}</span>' if spread else ""
            cells += f"<td>{html.escape(median)}{below}</td>"
        breaks = len(r["invariant_breaks"])
        body.append(
            f'<tr><td class="mark">{star}</td>{cells}<td class="{"bad" if breaks else "good"}">{breaks}</td></tr>'
        )
    return (
        f'<table class="compare sweep"><tr><th></th>{head}<th>invariant breaks</th></tr>'
        f"{''.join(body)}</table>"
        '<p class="note">Medians over the runs; the 10th to 90th percentile below each, when the runs differ. '
        "★: on the Pareto front.</p>"
    )


def render(sweep: Mapping[str, Any], runs_by_setting: Mapping[str, Sequence[Mapping[str, Any]]]) -> str:
    rows = [r for r in sweep["settings"] if r["runs"]]
    axes, on_front_ids = pareto_front(rows)
    on_front = set(on_front_ids)
    seeds = len(sweep["seeds"])
    same = [key for key in TRADE_OFFS if key not in axes]
    names = [_AXES[key][0] for key in axes]
    listed = ", ".join(names[:-1]) + " and " + names[-1] if len(names) > 1 else "".join(names)
    about = "Pareto front over " + (listed or "nothing: the settings tie")
    if same and rows:
        about += "; the same for every setting: " + ", ".join(
            f"{_AXES[key][0]} {format_value(key, rows[0]['metrics'][key]['median'])}" for key in same
        )
    about += ". Points and lines are medians over the runs, whiskers their 10th to 90th percentile"
    main = (
        f'<section><h2>Settings</h2><div class="scroll">{_table(sweep, rows, on_front)}</div></section>'
        f'<section><h2>Trade-offs and each flag\'s effect</h2><p class="note">{html.escape(about)}.</p>'
        f"{plot_div(build_sweep_figure(sweep, runs_by_setting), 'sweep')}</section>"
    )
    grid = ", ".join(f"{flag} in {{{', '.join(map(str, values))}}}" for flag, values in sweep["grid"].items())
    return page(
        title=f"kubetide sweep: {sweep['scenario']}",
        heading=f"sweep of {sweep['scenario']}: {len(rows)} settings x {seeds} seeds",
        description=grid,
        meta=[
            f"{sum(r['runs'] for r in rows):,} runs",
            f"simulated {format_duration(sweep['simulated_seconds'])} each",
            f"Pareto front: {len(on_front)} of {len(rows)} settings",
        ],
        main=main,
        footer="generated by kubetide sweep · sweep.json, summary.csv and every run's summary.json "
        "(runs/) sit beside this file",
    )
