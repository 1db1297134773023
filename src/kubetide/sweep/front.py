"""Which settings are worth a look: the Pareto front over the trade-offs a sweep is about.

A setting is on the front when no other setting is at least as good on every chosen metric and
better on one (medians over its runs; lower is better). The metrics are cost, pending
pod-seconds and evictions (cheap nights that evict twice as many pods are a real trade-off), but
only those the data varies on: a metric equal for every setting decides nothing, and drawing it
collapses a plot to a line. sweep.json, the sweep's console and report.html all take the front
from `pareto_front`, so the three cannot disagree.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

TRADE_OFFS = ("cost", "pending_pod_seconds", "evictions")


def varying(rows: Sequence[Mapping[str, Any]], keys: Sequence[str] = TRADE_OFFS) -> list[str]:
    """The metrics of `keys` whose medians are not the same for every setting, in `keys` order."""
    found = []
    for key in keys:
        medians = {row["metrics"][key]["median"] for row in rows if row["runs"]}
        if len(medians) > 1:
            found.append(key)
    return found


def front(rows: Sequence[Mapping[str, Any]], keys: Sequence[str]) -> list[str]:
    """The ids of the settings no other setting dominates on `keys` (their medians), in row order.
    With no key every setting is on it (nothing tells them apart)."""
    points = {row["id"]: tuple(row["metrics"][key]["median"] for key in keys) for row in rows if row["runs"]}

    def dominated(point: tuple[float, ...]) -> bool:
        return any(
            other != point and all(o <= p for o, p in zip(other, point, strict=True))
            for other in points.values()
        )

    return [key for key, point in points.items() if not dominated(point)]


def pareto_front(rows: Sequence[Mapping[str, Any]]) -> tuple[list[str], list[str]]:
    """(the metrics the front is over: those of TRADE_OFFS that vary, the ids of the settings on it)."""
    axes = varying(rows)
    return axes, front(rows, axes)
