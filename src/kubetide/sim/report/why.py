"""The reports' answers to "why": pending pods by cause, nodes kept by reason, utilisation against
scale-down-utilization-threshold, read from the timeline columns sim/runtime/decisions.py writes
after each autoscaler loop. A run without them (no autoscaler, or another one) draws none.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from kubetide.autoscaler.scaledown import NodeReason
from kubetide.sim.report.plotting import Drawing, series
from kubetide.sim.runtime.decisions import LOWEST_UTILIZATION, UNREMOVABLE_PREFIX
from kubetide.sim.runtime.simulation import SimulationResult

FITS_NO_GROUP = "pending_fits_no_group"
SCALE_UP_BLOCKED = "pending_scale_up_blocked"
THRESHOLD_COLOUR = "#dc2626"
# One colour per CA reason, the same in every panel and every report (by the enum's order).
_REASON_PALETTE = (
    "#64748b",  # ScaleDownDisabledAnnotation
    "#94a3b8",  # NotAutoscaled
    "#0891b2",  # NotUnneededLongEnough
    "#22d3ee",  # NotUnreadyLongEnough
    "#a16207",  # NodeGroupMinSizeReached
    "#ca8a04",  # MinimalResourceLimitExceeded
    "#6b7280",  # CurrentlyBeingDeleted
    "#16a34a",  # NotUnderutilized
    "#9333ea",  # NotUnneededOtherReason
    "#c084fc",  # RecentlyUnremovable
    "#dc2626",  # NoPlaceToMovePods
    "#f97316",  # NoPlaceToMovePodsBelowQOSWatermark
    "#db2777",  # BlockedByPod
    "#7f1d1d",  # UnexpectedError
    "#1e293b",  # NoReason
)
REASON_COLOURS = {
    str(reason): _REASON_PALETTE[i % len(_REASON_PALETTE)] for i, reason in enumerate(NodeReason)
}


def has_decisions(result: SimulationResult) -> bool:
    """Whether the run's timeline carries the loops' reasons (kubetide's autoscaler ran)."""
    return any(FITS_NO_GROUP in row for row in result.timeline)


def draws_threshold(result: SimulationResult) -> bool:
    """Whether the run's utilisation panel has scale-down-utilization-threshold: its autoscaler
    explained its loops and scaled down (a disabled scale-down has no threshold to meet)."""
    return has_decisions(result) and result.scenario.options.scale_down_enabled


def unremovable_reasons(results: Sequence[SimulationResult]) -> list[str]:
    """The CA reasons that kept a node in any of the runs, in the enum's order."""
    seen = {
        column.removeprefix(UNREMOVABLE_PREFIX)
        for result in results
        for row in result.timeline
        for column, value in row.items()
        if column.startswith(UNREMOVABLE_PREFIX) and value
    }
    return [str(reason) for reason in NodeReason if str(reason) in seen]


def add_unremovable(
    drawing: Drawing,
    row: int,
    x: np.ndarray,
    timeline: Sequence[Mapping[str, Any]],
    reasons: Sequence[str],
    *,
    stack: str,
    show_legend: bool = True,
) -> None:
    """The nodes kept, stacked by reason, on panel `row` (one legend entry per reason, toggling
    it in every panel)."""
    for reason in reasons:
        column = UNREMOVABLE_PREFIX + reason
        drawing.add(
            row,
            x=x,
            y=series(r.get(column, 0) if FITS_NO_GROUP in r else None for r in timeline),
            name=reason,
            mode="lines",
            line={"color": REASON_COLOURS.get(reason, "#6b7280"), "width": 0.5, "shape": "hv"},
            stackgroup=stack,
            legendgroup=f"reason-{reason}",
            legendgrouptitle={"text": "Nodes kept, by reason"} if reason == reasons[0] else None,
            showlegend=show_legend,
            legendrank=1000,
            hovertemplate=f"{reason}: %{{y}}<extra></extra>",
        )
    totals = [sum(r.get(UNREMOVABLE_PREFIX + reason, 0) for reason in reasons) for r in timeline]
    drawing.peaks[(row, False)] = max(drawing.peaks.get((row, False), 0.0), max(totals, default=0))


def lowest_utilization(timeline: Sequence[Mapping[str, Any]]) -> np.ndarray:
    return series(r.get(LOWEST_UTILIZATION) for r in timeline)


def threshold_percent(result: SimulationResult) -> float:
    return 100 * result.scenario.options.scale_down_utilization_threshold


def threshold_label(result: SimulationResult, setting: str | None = None) -> str:
    threshold = result.scenario.options.scale_down_utilization_threshold
    text = f"scale-down-utilization-threshold {threshold:g}"
    return f"{setting}: {text}" if setting else text


def pod_seconds(result: SimulationResult, column: str) -> float:
    """The column's pods integrated over time: each loop's count held until the next loop (the
    run's end for the last one), as the timeline samples them; pending_pod_seconds in
    summary.json is exact, this is within a loop's interval per change of the count."""
    timeline = result.timeline
    total = 0.0
    for row, following in zip(timeline, [*timeline[1:], None], strict=True):
        end = following["time"] if following is not None else result.scenario.duration
        total += (row.get(column) or 0) * max(0.0, end - row["time"])
    return total


def peak_count(result: SimulationResult, column: str) -> int:
    return int(max((row.get(column) or 0 for row in result.timeline), default=0))
