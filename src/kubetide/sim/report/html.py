"""report.html: one self-contained page per run (`render`) or comparison (`render_comparison`).

A run's page: summary cards, its figures (figures.py), the node QoS agent's counts when it ran,
the summary.json table, and the events table, aggregated as `kubectl get events` shows them: one
row per (source, type, reason, object) with its count, first and last seen, and the latest
message. A comparison's page: compare.json's settings side by side, their runs overlaid, and
events by reason. Both are plotting.py's page, with plotly.js inlined once.
"""

from __future__ import annotations

import html
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from kubetide.durations import format_duration, rfc3339
from kubetide.sim.report.columns import METRICS, POLICY_ROWS, format_flags, format_metric
from kubetide.sim.report.disruption import disruption_section
from kubetide.sim.report.figures import (
    build_comparison_figure,
    build_cost_disruption_figure,
    build_figure,
    build_hpa_figure,
    build_qos_comparison_figure,
    build_qos_figure,
)
from kubetide.sim.report.plotting import page, plot_div
from kubetide.sim.report.qos import counts_table, mode_heading
from kubetide.sim.report.unblocked import unremovable_section
from kubetide.sim.report.why import FITS_NO_GROUP, has_decisions, peak_count, pod_seconds, unremovable_reasons
from kubetide.sim.runtime.decisions import UNREMOVABLE_PREFIX
from kubetide.sim.runtime.simulation import SimulationResult

# Events the table shows: the autoscaler's, the scenario's and the simulator's, and the cloud's
# and node controller's failures (the rest, e.g. every binding, stays in events.jsonl).
_TABLE_SOURCES = ("cluster-autoscaler", "scenario", "simulator", "qos-agent")
_TABLE_REASONS = ("InstanceCreationFailed", "CloudError", "NodeNotReady")


def _cards(summary: dict, unfit_pod_seconds: float = 0.0) -> str:
    """The cards across the top; `unfit_pod_seconds`: the pending pod-seconds of pods no node
    group can take, said on the Pending card."""
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
            f"{summary['pods']['pending_pod_seconds'] / 3600:,.1f} pod-hours waiting"
            + (f", ≈{unfit_pod_seconds / 3600:,.1f} for no group" if unfit_pod_seconds else ""),
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
            f"by drains; {summary.get('evictions_refused', 0):,} refused by a PDB (HTTP 429)",
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
        if isinstance(value, list):  # rows with their own table (unremovable_at_end.nodes)
            return
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


def _qos_section(result: SimulationResult) -> str:
    """The node QoS agent's panel (runtime/qos.py), only for scenarios with spec.qos."""
    qos = result.summary.get("qos")
    if qos is None or result.scenario.qos is None:
        return ""
    precise = qos.get("precise", True)
    note = f"The agent ran in {'precise' if precise else 'all candidates'} mode."
    table = counts_table([(mode_heading(precise), qos)])
    return (
        f"<section><h2>Node QoS agent</h2><p>{html.escape(note)}</p>"
        f'<div style="max-width:820px">{table}</div>{plot_div(build_qos_figure(result), "qos")}</section>'
    )


def _hpa_section(runs: Sequence[tuple[str, SimulationResult]]) -> str:
    """The HPAs' panel (runtime/hpa.py), only for scenarios with HorizontalPodAutoscalers."""
    figure = build_hpa_figure(runs)
    if figure is None:
        return ""
    note = (
        "Dashed: minReplicas and maxReplicas on the replica panels, the target on the metric panels. "
        "Readings are what the simulated HPA controller last computed (every sync period)."
    )
    return f'<section><h2>HorizontalPodAutoscalers</h2>{plot_div(figure, "hpa")}<p class="note">{note}</p></section>'


def render(result: SimulationResult) -> str:
    summary = result.summary
    scenario = result.scenario
    warnings = "".join(f"<li>{html.escape(w)}</li>" for w in result.warnings)
    warning_block = f"<section><h2>Warnings</h2><ul>{warnings}</ul></section>" if warnings else ""
    main = f"""<div class="cards">{_cards(summary, pod_seconds(result, FITS_NO_GROUP))}</div>
{warning_block}
<section>{plot_div(build_figure(result), "timeline")}{_unfit_note(result)}</section>
{disruption_section([(scenario.name, result)])}
{unremovable_section([(scenario.name, result)])}
{_qos_section(result)}
{_hpa_section([("replicas", result)])}
<div class="cols events-wide">
<section><h2>Summary</h2><table class="summary">{_table(summary)}</table></section>
<section><h2>Decisions and scenario events</h2><div class="events"><table>
{_event_table(result.events, scenario.start)}
</table></div></section>
</div>"""
    return page(
        title=f"kubetide simulate: {scenario.name}",
        heading=scenario.name,
        description=scenario.description,
        meta=[
            f"simulated {format_duration(scenario.duration)} from {summary['start']}",
            f"seed {summary['seed']}",
            f"autoscaler: {summary['autoscaler']}",
            f"{summary['autoscaler_loops']:,} loops",
            f"wall time {summary['wall_seconds']:.1f}s",
        ],
        main=main,
        footer="generated by kubetide simulate · summary.json, timeline.csv and events.jsonl sit beside this file",
        tail=f'<script type="application/json" id="summary">{html.escape(json.dumps(summary))}</script>\n',
    )


# -- several runs of one scenario (simulate --compare) -------------------------------------------


def _cost_disruption(settings: Sequence[Mapping[str, Any]]) -> str:
    figure = plot_div(build_cost_disruption_figure(settings), "cost-disruption")
    return f"<section><h2>Cost and disruption, per policy</h2>{figure}</section>"


def render_comparison(comparison: Mapping[str, Any], results: Sequence[SimulationResult]) -> str:
    """report.html of `simulate --compare`: compare.json's settings side by side and their runs
    overlaid. `results` are the settings' SimulationResults, in compare.json's order."""
    settings = comparison["settings"]
    runs = [(entry["name"], result) for entry, result in zip(settings, results, strict=True)]
    scenario = results[0].scenario
    figure = build_comparison_figure(runs)
    plot = plot_div(figure, "comparison")
    if any(shape.type == "rect" for shape in figure.layout.shapes):
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
    for key, heading, _ in METRICS:
        cells = "".join(f"<td>{html.escape(format_metric(key, e['metrics'][key]))}</td>" for e in settings)
        rows.append(f"<tr><th>{html.escape(heading)}</th>{cells}</tr>")
        if key == "pending_pod_seconds":
            rows += _why_pending_rows(results)
    rows += _kept_rows(results)
    policies = all("policy" in entry for entry in settings)
    if policies:
        for key, heading in POLICY_ROWS:
            cells = "".join(f"<td>{html.escape(format_metric(key, e['policy'][key]))}</td>" for e in settings)
            rows.append(f"<tr><th>{html.escape(heading)}</th>{cells}</tr>")
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
    main = f"""<section><h2>Settings side by side</h2><table class="compare">{head}{"".join(rows)}</table>
{_why_pending_note(runs)}</section>
<section>{plot}</section>
{_cost_disruption(settings) if policies else ""}
{disruption_section(runs)}
{unremovable_section(runs)}
{_qos_comparison(settings, qos_plot)}
{_hpa_section(runs)}
<section><h2>Events by reason</h2><div class="scroll"><table class="compare">{head}{"".join(event_rows)}</table></div></section>"""
    return page(
        title=f"kubetide simulate --compare: {scenario.name}",
        heading=f"{scenario.name}: {len(settings)} settings compared",
        description=scenario.description,
        meta=[
            f"simulated {format_duration(scenario.duration)}",
            f"seed {comparison['seed']}",
            "the same scenario and seed for every setting",
        ],
        main=main,
        footer="generated by kubetide simulate --compare · each setting's summary.json, timeline.csv and\n"
        "events.jsonl are in its directory beside this file; compare.json holds the table above",
    )


def _why_pending_rows(results: Sequence[SimulationResult]) -> list[str]:
    """The pending pod-seconds no scale-up could help (pods no node group can take), beside the
    total: when both settings wait as long, this says whether either could have done better."""
    if not any(has_decisions(result) for result in results) or not any(
        peak_count(result, FITS_NO_GROUP) for result in results
    ):
        return []
    seconds = "".join(f"<td>≈{pod_seconds(result, FITS_NO_GROUP):,.0f}</td>" for result in results)
    most = "".join(f"<td>{peak_count(result, FITS_NO_GROUP):,}</td>" for result in results)
    return [
        f"<tr><th>&nbsp;&nbsp;of which fit no node group</th>{seconds}</tr>",
        f"<tr><th>&nbsp;&nbsp;pods fitting no node group (most at once)</th>{most}</tr>",
    ]


def _why_pending_note(runs: Sequence[tuple[str, SimulationResult]]) -> str:
    """Per setting whose pods waited for no node group: how much of its pending time that is, and
    which pods (the same sentence for several settings is said once, naming them)."""
    notes: dict[str, list[str]] = {}  # the sentence -> the settings it is true of
    for name, result in runs:
        total = result.summary["pods"]["pending_pod_seconds"]
        stuck = pod_seconds(result, FITS_NO_GROUP)
        if not total or not stuck:
            continue
        pods = peak_count(result, FITS_NO_GROUP)
        sentence = (
            f"≈{stuck:,.0f} of the {total:,.0f} pending pod-seconds are "
            f"{'one pod' if pods == 1 else f'{pods} pods (at most, at once)'} that no node group can take"
            f"{_named(result.unfit_pods)}; no setting of the autoscaler changes them."
        )
        notes.setdefault(sentence, []).append(name)
    return "".join(
        f'<p class="note">{html.escape(", ".join(names))}: {html.escape(sentence)}</p>'
        for sentence, names in notes.items()
    )


def _unfit_note(result: SimulationResult) -> str:
    """Under one run's plots: the pods no node group could take, and why."""
    if not result.unfit_pods:
        return ""
    text = f"Pending pods no node group can take{_named(result.unfit_pods)}."
    return f'<p class="note">{html.escape(text)}</p>'


def _named(unfit: Mapping[str, str], most: int = 3) -> str:
    """ ": pod a (why), pod b (why) and 2 more" for the pods no node group could take."""
    if not unfit:
        return ""
    named = [f"{pod} ({why})" for pod, why in list(unfit.items())[:most]]
    more = f" and {len(unfit) - most} more" if len(unfit) > most else ""
    return ": " + "; ".join(named) + more


def _kept_rows(results: Sequence[SimulationResult]) -> list[str]:
    """The nodes kept at the end of each run, by the autoscaler's reason."""
    reasons = unremovable_reasons(results)
    if not reasons:
        return []
    cells = []
    for result in results:
        last = result.timeline[-1] if result.timeline else {}
        counts = [(reason, last.get(UNREMOVABLE_PREFIX + reason, 0)) for reason in reasons]
        text = ", ".join(f"{reason} {n}" for reason, n in counts if n) or "none"
        cells.append(f'<td class="reasons">{html.escape(text)}</td>')
    return [f"<tr><th>nodes kept at the end, by reason</th>{''.join(cells)}</tr>"]


def _qos_comparison(settings: Sequence[Mapping[str, Any]], plot: str) -> str:
    """The QoS agent's counts per setting (compare.json's settings[].qos) and its series, when it ran."""
    if any("qos" not in entry for entry in settings):
        return ""

    def heading(entry: Mapping[str, Any]) -> str:
        if "qos_precise" not in entry:
            return str(entry["name"])
        mode = mode_heading(entry["qos_precise"])
        # spec.qos.compare names its runs after the modes: "precise", not "precise: precise"
        return mode if mode.startswith(entry["name"]) else f"{entry['name']}: {mode}"

    columns = [(heading(e), e["qos"]) for e in settings]
    return f'<section><h2>Node QoS agent</h2><div style="max-width:980px">{counts_table(columns)}</div>{plot}</section>'
