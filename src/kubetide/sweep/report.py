"""A sweep's report.html: the cost vs pending pod-seconds trade-off and each flag's effect.

The trade-off plot has one point per setting at its medians, whiskers from the 10th to the 90th
percentile, and the Pareto front drawn as a line through its settings. Each effect plot shows, for
one --grid flag, the median and 10-90 spread of a metric over every run with that flag's value.
plotly.js is inlined, as in sim/report.py, so the page works offline.
"""

from __future__ import annotations

import html
from typing import Any

import numpy as np

from kubetide.sweep.results import METRICS, run_metrics

_EFFECT_METRICS = (("cost", "cost ($)"), ("pending_pod_seconds", "pending pod-seconds"))


def _whiskers(spread: dict[str, float]) -> tuple[float, float]:
    return spread["p90"] - spread["median"], spread["median"] - spread["p10"]


def render(sweep: dict[str, Any], runs_by_setting: dict[str, list[dict[str, Any]]]) -> str:
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    rows = [r for r in sweep["settings"] if r["runs"]]
    front = set(sweep["pareto_front"])
    flags = list(sweep["grid"])
    figure = make_subplots(
        rows=1 + len(flags),
        cols=2,
        specs=[[{"colspan": 2}, None]] + [[{}, {}] for _ in flags],
        subplot_titles=["cost vs pending pod-seconds (median, 10-90th percentile whiskers)"]
        + [f"{flag}: {label}" for flag in flags for _, label in _EFFECT_METRICS],
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
                error_x={
                    "type": "data",
                    "symmetric": False,
                    "array": [_whiskers(c)[0] for c in cost],
                    "arrayminus": [_whiskers(c)[1] for c in cost],
                },
                error_y={
                    "type": "data",
                    "symmetric": False,
                    "array": [_whiskers(p)[0] for p in pending],
                    "arrayminus": [_whiskers(p)[1] for p in pending],
                },
                mode="markers",
                marker={
                    "size": 11 if on_front else 8,
                    "symbol": "star" if on_front else "circle",
                    "color": "#dc2626" if on_front else "#2563eb",
                },
                text=[r["label"] for r in chosen],
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
            line={"color": "#dc2626", "dash": "dot"},
            showlegend=False,
            hoverinfo="skip",
        ),
        row=1,
        col=1,
    )
    figure.update_xaxes(title_text="cost ($)", row=1, col=1)
    figure.update_yaxes(title_text="pending pod-seconds", row=1, col=1)
    for index, flag in enumerate(flags, start=2):
        for col, (key, label) in enumerate(_EFFECT_METRICS, start=1):
            values = sweep["grid"][flag]
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
                    line={"color": "#16a34a"},
                    name=f"{flag}: {label}",
                ),
                row=index,
                col=col,
            )
            figure.update_xaxes(title_text=flag, type="category", row=index, col=col)
            figure.update_yaxes(title_text=label, row=index, col=col)
    figure.update_layout(height=520 + 320 * len(flags), template="plotly_white", margin={"t": 60})
    plot = figure.to_html(full_html=False, include_plotlyjs=True, config={"displaylogo": False})
    headings = "".join(f"<th>{html.escape(label)}</th>" for _, label in METRICS)
    table_rows = "".join(
        "<tr><td>"
        + html.escape(r["label"])
        + "</td>"
        + "".join(
            f"<td>{r['metrics'][key]['median']:g} ({r['metrics'][key]['p10']:g}-{r['metrics'][key]['p90']:g})</td>"
            for key, _ in METRICS
        )
        + f"<td>{len(r['invariant_breaks'])}</td></tr>"
        for r in rows
    )
    title = html.escape(f"sweep of {sweep['scenario']}: {len(rows)} settings x {len(sweep['seeds'])} seeds")
    return (
        f"<!doctype html><html><head><meta charset='utf-8'><title>{title}</title>"
        "<style>body{font-family:sans-serif;margin:2em}td,th{padding:2px 8px;text-align:right}"
        "td:first-child{text-align:left}</style></head><body>"
        f"<h1>{title}</h1><p>medians over seeds, 10th-90th percentile in brackets</p>"
        f"<table><tr><th>setting</th>{headings}<th>invariant breaks</th></tr>{table_rows}</table>"
        f"{plot}</body></html>\n"
    )
