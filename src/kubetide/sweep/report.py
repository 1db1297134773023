"""A sweep's report.html: the cost vs pending pod-seconds trade-off and each flag's effect.

The trade-off plot has one point per setting at its medians, whiskers from the 10th to the 90th
percentile, and the Pareto front drawn as a line through its settings. Each effect plot shows, for
one --grid flag, the median and 10-90 spread of a metric over every run with that flag's value.
The page and the plots are the simulator's report stack (sim/report/plotting.py): the same look,
plotly's objects, plotly.js inlined once so the page works offline.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from kubetide.sim.report.plotting import TEMPLATE, colour, page, plot_div
from kubetide.sweep.results import METRICS, run_metrics

_EFFECT_METRICS = (("cost", "cost ($)"), ("pending_pod_seconds", "pending pod-seconds"))
_FRONT = "#dc2626"

Spread = Mapping[str, float]  # median, p10, p90 of a metric over a setting's runs


def _whiskers(spread: Spread) -> tuple[float, float]:
    return spread["p90"] - spread["median"], spread["median"] - spread["p10"]


def _error_bars(spreads: Sequence[Spread]) -> dict[str, Any]:
    above, below = zip(*(_whiskers(s) for s in spreads), strict=True) if spreads else ((), ())
    return {"type": "data", "symmetric": False, "array": list(above), "arrayminus": list(below)}


def build_sweep_figure(
    sweep: Mapping[str, Any], runs_by_setting: Mapping[str, Sequence[Mapping[str, Any]]]
) -> go.Figure:
    """The trade-off plot across the top, then one row per --grid flag: its effect on each metric."""
    rows = [r for r in sweep["settings"] if r["runs"]]
    front = set(sweep["pareto_front"])
    flags = list(sweep["grid"])
    figure = make_subplots(
        rows=1 + len(flags),
        cols=2,
        specs=[[{"colspan": 2}, None]] + [[{}, {}] for _ in flags],
        subplot_titles=["cost vs pending pod-seconds (median, 10-90th percentile whiskers)"]
        + [html.escape(f"{flag}: {label}") for flag in flags for _, label in _EFFECT_METRICS],
        vertical_spacing=0.12 / max(1, len(flags)),
    )
    for on_front in (False, True):
        chosen = [r for r in rows if (r["id"] in front) == on_front]
        if not chosen:
            continue
        cost = [r["metrics"]["cost"] for r in chosen]
        pending = [r["metrics"]["pending_pod_seconds"] for r in chosen]
        figure.add_trace(
            go.Scatter(
                x=[c["median"] for c in cost],
                y=[p["median"] for p in pending],
                error_x=_error_bars(cost),
                error_y=_error_bars(pending),
                mode="markers",
                marker={
                    "size": 11 if on_front else 8,
                    "symbol": "star" if on_front else "circle",
                    "color": _FRONT if on_front else colour(0),
                },
                text=[html.escape(r["label"]) for r in chosen],
                hovertemplate="%{text}<br>cost %{x}<br>pending pod-s %{y}<extra></extra>",
                name="Pareto front" if on_front else "setting",
            ),
            row=1,
            col=1,
        )
    front_points = sorted(
        (r["metrics"]["cost"]["median"], r["metrics"]["pending_pod_seconds"]["median"])
        for r in rows
        if r["id"] in front
    )
    figure.add_trace(
        go.Scatter(
            x=[p[0] for p in front_points],
            y=[p[1] for p in front_points],
            mode="lines",
            line={"color": _FRONT, "dash": "dot"},
            showlegend=False,
            hoverinfo="skip",
        ),
        row=1,
        col=1,
    )
    figure.update_xaxes(title_text="cost ($)", row=1, col=1)
    figure.update_yaxes(title_text="pending pod-seconds", row=1, col=1)
    for index, flag in enumerate(flags, start=2):
        values = sweep["grid"][flag]
        for col, (key, label) in enumerate(_EFFECT_METRICS, start=1):
            medians, plus, minus = [], [], []
            for value in values:
                runs = [
                    run_metrics(s)[key]
                    for r in rows
                    if r["flags"].get(flag) == value
                    for s in runs_by_setting.get(r["id"], [])
                ]
                p10, median, p90 = np.percentile(runs, [10, 50, 90]) if runs else (np.nan,) * 3
                medians.append(median)
                plus.append(p90 - median)
                minus.append(median - p10)
            figure.add_trace(
                go.Scatter(
                    x=values,
                    y=medians,
                    mode="lines+markers",
                    showlegend=False,
                    error_y={"type": "data", "symmetric": False, "array": plus, "arrayminus": minus},
                    line={"color": colour(1)},
                    name=html.escape(f"{flag}: {label}"),
                ),
                row=index,
                col=col,
            )
            figure.update_xaxes(title_text=html.escape(flag), type="category", row=index, col=col)
            figure.update_yaxes(title_text=label, row=index, col=col)
    figure.update_annotations(font_size=14)
    figure.update_layout(
        template=TEMPLATE,
        height=520 + 320 * len(flags),
        margin={"l": 70, "r": 30, "t": 60, "b": 50},
        legend={"groupclick": "toggleitem"},
    )
    return figure


def _table(rows: Sequence[Mapping[str, Any]]) -> str:
    headings = "".join(f"<th>{html.escape(label)}</th>" for _, label in METRICS)
    body = "".join(
        "<tr><th>"
        + html.escape(r["label"])
        + "</th>"
        + "".join(
            f"<td>{r['metrics'][key]['median']:g}"
            f'<br><span class="at">{r["metrics"][key]["p10"]:g} to {r["metrics"][key]["p90"]:g}</span></td>'
            for key, _ in METRICS
        )
        + f'<td class="{"bad" if r["invariant_breaks"] else "good"}">{len(r["invariant_breaks"])}</td></tr>'
        for r in rows
    )
    return (
        f'<table class="compare"><tr><th>setting</th>{headings}<th>invariant breaks</th></tr>{body}</table>'
        '<p class="note">Medians over the runs; the 10th to 90th percentile below each.</p>'
    )


def render(sweep: Mapping[str, Any], runs_by_setting: Mapping[str, Sequence[Mapping[str, Any]]]) -> str:
    rows = [r for r in sweep["settings"] if r["runs"]]
    seeds = len(sweep["seeds"])
    main = (
        f'<section><h2>Settings</h2><div class="scroll">{_table(rows)}</div></section>'
        f"<section>{plot_div(build_sweep_figure(sweep, runs_by_setting), 'sweep')}</section>"
    )
    grid = ", ".join(f"{flag} in {{{', '.join(map(str, values))}}}" for flag, values in sweep["grid"].items())
    return page(
        title=f"kubetide sweep: {sweep['scenario']}",
        heading=f"sweep of {sweep['scenario']}: {len(rows)} settings x {seeds} seeds",
        description=grid,
        meta=[
            f"{sum(r['runs'] for r in rows):,} runs",
            f"Pareto front: {len(sweep['pareto_front'])} of {len(rows)} settings",
        ],
        main=main,
        footer="generated by kubetide sweep · sweep.json, summary.csv and every run's summary.json "
        "(runs/) sit beside this file",
    )
