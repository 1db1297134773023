"""The sweep's console table, laid out for 100 columns.

Every setting of a grid carries the same flag names, so its full label (`scale-down-unneeded-time=5m
max-drain-parallelism=10`) says little and takes a whole line: a setting is named by the values of
the flags that differ between settings, one column per such flag (headed by the flag's shortest
unambiguous tail, the full names said above the table). Each metric cell is the median over the
seeds, numbers abbreviated with their unit (`$31.0`, `3.3k`, `55m`), with the 10th-90th percentile
under it when the seeds disagree; a metric that is the same for every setting is said once, under
the table, instead of taking a column.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from rich.markup import escape
from rich.table import Table

from kubetide.durations import format_duration

SCENARIOS_OWN_VALUE = "scenario's"  # a flag a setting leaves as the scenario sets it


def abbreviate(value: float) -> str:
    """3 significant digits, k / M / G beyond a thousand: 0.51, 31.0, 163, 3.3k, 12k, 1.2M."""
    for factor, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= factor:
            scaled = value / factor
            return f"{scaled:.1f}{suffix}" if abs(scaled) < 10 else f"{scaled:.0f}{suffix}"
    if value == int(value):
        return f"{int(value)}"
    if abs(value) >= 100:
        return f"{value:.0f}"
    if abs(value) >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}"


def _money(value: float) -> str:
    return "$" + abbreviate(value)


def _seconds(value: float) -> str:
    """A duration to the minute from ten minutes on, to the second below (55m, 1h5m, 9m45s)."""
    rounded = round(value / 60) * 60 if value >= 600 else round(value)
    return format_duration(rounded)


# metric key (sweep/results.py METRICS) -> (heading, how a value is written)
COLUMNS: dict[str, tuple[str, Callable[[float], str]]] = {
    "cost": ("cost", _money),
    "node_hours": ("node-hours", abbreviate),
    "pending_pod_seconds": ("pending pod-s", abbreviate),
    "max_pending": ("max pending", abbreviate),
    "evictions": ("drain evictions", abbreviate),
    "drain_makespan": ("drain time", _seconds),
}


def differing_flags(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """The flags whose value is not the same in every setting, in first-seen order."""
    names: dict[str, None] = {}
    for row in rows:
        names.update(dict.fromkeys(row["flags"]))
    return [name for name in names if len({row["flags"].get(name, SCENARIOS_OWN_VALUE) for row in rows}) > 1]


def short_names(flags: Sequence[str]) -> dict[str, str]:
    """Each flag's shortest tail of at least two words (or the whole name) that no other flag in
    `flags` ends with: scale-down-unneeded-time -> unneeded-time, max-drain-parallelism ->
    drain-parallelism."""
    short = {}
    for flag in flags:
        words = flag.split("-")
        for count in range(min(2, len(words)), len(words) + 1):
            tail = "-".join(words[-count:])
            if not any(other != flag and other.endswith(tail) for other in flags):
                break
        short[flag] = tail
    return short


def short_labels(rows: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """Setting id -> its differing flags' values by their short names (`unneeded-time=5m
    drain-parallelism=10`), for sentences about settings; the full label when no flag differs."""
    flags = differing_flags(rows)
    short = short_names(flags)
    return {
        row["id"]: " ".join(f"{short[f]}={row['flags'].get(f, SCENARIOS_OWN_VALUE)}" for f in flags)
        or row["label"]
        for row in rows
    }


def _spread_cell(spread: Mapping[str, float], write: Callable[[float], str], under: str = "\n") -> str:
    median, low, high = (write(spread[k]) for k in ("median", "p10", "p90"))
    if low == high:
        return median
    return f"{median}{under}[dim]({low}-{high})[/dim]"


def constant_metrics(rows: Sequence[Mapping[str, Any]]) -> dict[str, Mapping[str, float]]:
    """Metrics whose spread is the same in every setting that ran: key -> that spread."""
    ran = [row for row in rows if row["runs"]]
    if len(ran) < 2:
        return {}
    return {
        key: ran[0]["metrics"][key]
        for key in COLUMNS
        if all(row["metrics"][key] == ran[0]["metrics"][key] for row in ran)
    }


def sweep_table(sweep: Mapping[str, Any]) -> tuple[list[str], Table, list[str]]:
    """The lines said above the table (the flags' full names), the table, and the lines under it
    (the metrics the same everywhere)."""
    rows = sweep["settings"]
    flags = differing_flags(rows)
    short = short_names(flags)
    same = constant_metrics(rows)
    shown = [key for key in COLUMNS if key not in same]
    table = Table(show_header=True, header_style="bold", box=None, pad_edge=False)
    if flags:
        for flag in flags:
            table.add_column(escape(short[flag]), no_wrap=True)
    else:
        table.add_column("setting")
    for key in shown:
        table.add_column(COLUMNS[key][0], justify="right")
    table.add_column("invariant\nbreaks", justify="right")
    for row in rows:
        own = " *" if row["id"] == sweep["scenario_setting"] else ""
        if flags:
            names = [escape(str(row["flags"].get(flag, SCENARIOS_OWN_VALUE))) for flag in flags]
            names[-1] += own
        else:
            names = [escape(row["label"]) + own]
        if not row["runs"]:
            table.add_row(*names, *("-" for _ in shown), "-")
            continue
        cells = [_spread_cell(row["metrics"][key], COLUMNS[key][1]) for key in shown]
        breaks = len(row["invariant_breaks"])
        table.add_row(*names, *cells, f"[{'green' if breaks == 0 else 'bold red'}]{breaks}[/]")
    above = []
    if flags and any(short[f] != f for f in flags):
        above.append("settings by " + ", ".join(escape(f) for f in flags))
    above.append("each cell: the median over the seeds, the 10th-90th percentile under it")
    under = []
    if same:
        under.append(
            "the same for every setting: "
            + ", ".join(
                f"{COLUMNS[key][0]} {_spread_cell(s, COLUMNS[key][1], ' ')}" for key, s in same.items()
            )
        )
    return above, table, under
