"""The report's table of the nodes still unremovable at the end of a run and what would unblock
each (summary.json's `scale_down.unremovable_at_end`, sim/runtime/unremovable.py): node, node
group, the autoscaler's reason, the pods that block it, and the change the planner found."""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from typing import Any

from kubetide.sim.report.why import REASON_COLOURS
from kubetide.sim.runtime.simulation import SimulationResult

HEAD = (
    "<tr><th>node</th><th>group</th><th>reason</th><th>blocking pods</th>"
    "<th>what would unblock it</th><th>enough?</th></tr>"
)


def unremovable_at_end(result: SimulationResult) -> Mapping[str, Any] | None:
    found: Mapping[str, Any] | None = result.summary.get("scale_down", {}).get("unremovable_at_end")
    return found


def unremovable_section(runs: Sequence[tuple[str, SimulationResult]]) -> str:
    """One section: a table per run (headed by its setting's name when there are several), or ''
    when no run asked (another autoscaler, scale-down off)."""
    parts = []
    for name, result in runs:
        found = unremovable_at_end(result)
        if found is None:
            continue
        heading = f"<h3>{html.escape(name)}</h3>" if len(runs) > 1 else ""
        parts.append(heading + _table(found))
    if not parts:
        return ""
    note = (
        "Asked once, on the cluster as the run left it, as <code>kubetide plan</code> asks it: a fresh"
        " loop with its timers run out (nodes merely waiting out scale-down-unneeded-time are not"
        " listed), then each suggested change applied in a copy and the planner run again."
        ' "enough? yes": with every change listed, the planner finds the node removable.'
    )
    return (
        '<section class="unblock" id="unremovable-at-end"><h2>Nodes still unremovable at the end, and what would unblock them</h2>'
        + "".join(parts)
        + f'<p class="note">{note}</p></section>'
    )


def _table(found: Mapping[str, Any]) -> str:
    rows = [_row(node) for node in found["nodes"]]
    count, listed = found["count"], len(found["nodes"])
    if not count:
        return '<p class="note">none: every node could go, or was on its way out</p>'
    by_reason = ", ".join(f"{reason} {n}" for reason, n in found["by_reason"].items())
    more = f"; the first {listed} listed" if listed < count else ""
    summary = f'<p class="note">{count} node{"s" if count != 1 else ""}: {html.escape(by_reason)}{more}</p>'
    return f'{summary}<div class="scroll"><table class="unblock">{HEAD}{"".join(rows)}</table></div>'


def _row(node: Mapping[str, Any]) -> str:
    reason = node["reason"]
    colour = REASON_COLOURS.get(reason, "#6b7280")
    pods = "<br>".join(html.escape(f"{b['pod']} ({b['reason']})") for b in node["blocking_pods"]) or "—"
    unblock = node["unblock"]
    if unblock is None:
        answer, enough = html.escape(node.get("detail") or ""), "—"
    else:
        answer = html.escape(unblock["text"])
        # A summary written before answers told waiting apart has no "waiting".
        waiting = unblock.get("waiting", False)
        enough = (
            "yes"
            if unblock["removable"]
            else "waiting"
            if waiting and unblock["changes"]
            else "no"
            if unblock["changes"]
            else "—"
        )
    return (
        f"<tr><td>{html.escape(node['node'])}</td><td>{html.escape(node['group'] or '—')}</td>"
        f'<td><span class="dot" style="background:{colour}"></span>{html.escape(reason)}</td>'
        f"<td>{pods}</td><td>{answer}</td><td>{enough}</td></tr>"
    )
