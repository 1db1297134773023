"""The sweep's console table, laid out to fit the console's width (100 columns in the README).

Every setting of a grid carries the same flag names, so its full label (`scale-down-unneeded-time=5m
max-drain-parallelism=10`) says little and takes a whole line: a setting is named by the values of
the flags that differ between settings, one column per such flag (headed by the flag's shortest
unambiguous tail, the full names said above the table). A setting that leaves a flag as the
scenario has it (the baseline the sweep adds when no grid setting is the scenario's own) shows the
value the scenario runs with. Rows are numbered, so the lines under the table name settings by
their row. Each metric cell is the median over the seeds, numbers abbreviated with their unit
(`$31.0`, `3.3k`, `55m`), with the 10th-90th percentile under it when the seeds disagree; a metric
that is the same for every setting is said once, under the table, instead of taking a column.

When that does not fit the width, the table gives up, in this order (what a reader of a narrow
terminal misses least first): one-line flag headings (wrapped at a hyphen), one column per flag
(the values side by side in one aligned "setting" column, the flags' order said above), then the
percentiles (said in a note: report.html has them). Nothing is ever cut.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from kubetide.autoscaler.ca_flags import CA_FLAGS, Treatment
from kubetide.autoscaler.options import DEPRECATED_ALIASES, FLAGS, AutoscalerOptions, format_flag
from kubetide.durations import format_duration

OWN_MARK = "*"  # after the row number of the scenario's own setting
UNKNOWN_VALUE = "-"  # a flag whose scenario value kubetide does not keep (scenario_values)
NO_VALUES = "none"  # a list or text flag the scenario leaves empty


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


# metric key (sweep/results.py METRICS) -> (heading, how a value is written); the disruption
# ledger's totals stay in sweep.json, summary.csv and report.html, for the table to fit 100 columns. Headings are two
# short lines (as "invariant breaks"), so that a column is as wide as its numbers.
COLUMNS: dict[str, tuple[str, Callable[[float], str]]] = {
    "cost": ("cost", _money),
    "node_hours": ("node-hours", abbreviate),
    "pending_pod_seconds": ("pending pod-s", abbreviate),
    "max_pending": ("max pending", abbreviate),
    "evictions": ("drain evictions", abbreviate),
    "drain_makespan": ("drain time", _seconds),
}
_BREAKS = "invariant breaks"


def scenario_values(flags: Iterable[str], options: AutoscalerOptions) -> dict[str, str]:
    """Each flag's value in the scenario's own setting (its spec.autoscaler over kubetide's
    defaults), written as the flag would be. A CA flag that is no option field changes nothing
    kubetide decides and keeps no value: a refused flag's inert value or an implemented one's only
    choice when there is one, else UNKNOWN_VALUE."""
    values = {}
    for flag in flags:
        name = DEPRECATED_ALIASES.get(flag, flag)
        if name in FLAGS:
            # An empty list (no startup taints) or an unset address has no flag syntax: NO_VALUES.
            values[flag] = format_flag(name, getattr(options, FLAGS[name].name)) or NO_VALUES
            continue
        ca_flag = CA_FLAGS.get(name)
        if ca_flag is not None and ca_flag.treatment is Treatment.REFUSED and ca_flag.inert is not None:
            values[flag] = ca_flag.inert
        elif ca_flag is not None and ca_flag.choices:
            values[flag] = ca_flag.choices[0]
        else:
            values[flag] = UNKNOWN_VALUE
    return values


def flag_values(row: Mapping[str, Any], own_values: Mapping[str, str]) -> dict[str, str]:
    """The row's setting's flags, each flag it leaves alone at the scenario's value."""
    return {**own_values, **row["flags"]}


def differing_flags(
    rows: Sequence[Mapping[str, Any]], own_values: Mapping[str, str] | None = None
) -> list[str]:
    """The flags whose value is not the same in every setting, in first-seen order."""
    own_values = own_values or {}
    names: dict[str, None] = {}
    for row in rows:
        names.update(dict.fromkeys(row["flags"]))
    return [
        name
        for name in names
        if len({flag_values(row, own_values).get(name, UNKNOWN_VALUE) for row in rows}) > 1
    ]


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


def row_numbers(sweep: Mapping[str, Any]) -> dict[str, int]:
    """Setting id -> its row in the table, from 1."""
    return {row["id"]: number for number, row in enumerate(sweep["settings"], start=1)}


def _spread_cell(spread: Mapping[str, float], write: Callable[[float], str], under: str | None = "\n") -> str:
    """The median, and `under` it the 10th-90th percentile when the seeds disagree (None: the
    median alone). The range's second end drops a `$` the first one has; on a line of its own
    (dim on a terminal) it needs no parentheses, beside the median it has them."""
    median, low, high = (write(spread[k]) for k in ("median", "p10", "p90"))
    if low == high or under is None:
        return median
    if low.startswith("$"):
        high = high.removeprefix("$")
    if under == "\n":
        return f"{median}\n[dim]{low}-{high}[/dim]"
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


def _two_lines(heading: str) -> str:
    """A heading broken at the space or hyphen that makes its longest line shortest (the hyphen
    kept): `utilization-threshold` -> `utilization-` / `threshold`."""
    best = heading
    for index, char in enumerate(heading):
        if char not in " -":
            continue
        first = heading[: index + 1] if char == "-" else heading[:index]
        candidate = f"{first}\n{heading[index + 1 :]}"
        if max(map(len, candidate.splitlines())) < max(map(len, best.splitlines())):
            best = candidate
    return best


@dataclass(frozen=True)
class _Layout:
    wrap_flag_headings: bool  # flag headings on two lines
    fold_flags: bool  # the flags' values in one "setting" column
    spreads: bool  # the 10th-90th percentile under each median


# Most readable first; the first that fits the width is taken (the last one whatever its width).
_LAYOUTS = (
    _Layout(wrap_flag_headings=False, fold_flags=False, spreads=True),
    _Layout(wrap_flag_headings=True, fold_flags=False, spreads=True),
    _Layout(wrap_flag_headings=True, fold_flags=True, spreads=True),
    _Layout(wrap_flag_headings=True, fold_flags=False, spreads=False),
    _Layout(wrap_flag_headings=True, fold_flags=True, spreads=False),
)


def sweep_table(
    sweep: Mapping[str, Any], own_values: Mapping[str, str] | None = None, width: int = 100
) -> tuple[list[str], Table, list[str]]:
    """The lines said above the table (the flags' full names, how to read a cell), the table in
    the first layout that fits `width`, and the lines under it (the metrics the same everywhere).
    `own_values` are the scenario's values of the swept flags (scenario_values), shown for a
    setting that leaves a flag as the scenario has it."""
    own_values = own_values or {}
    for layout in _LAYOUTS:
        above, table, under = _laid_out(sweep, own_values, layout)
        if _natural_width(table) <= width:
            break
    return above, table, under


def _natural_width(table: Table) -> int:
    return Console(width=10_000).measure(table).maximum


def _laid_out(
    sweep: Mapping[str, Any], own_values: Mapping[str, str], layout: _Layout
) -> tuple[list[str], Table, list[str]]:
    rows = sweep["settings"]
    settings = _SettingColumns.of(rows, own_values, layout)
    same = constant_metrics(rows)
    shown = [key for key in COLUMNS if key not in same]
    ran = [row for row in rows if row["runs"]]
    breaks_same = len(ran) > 1 and len({len(row["invariant_breaks"]) for row in ran}) == 1
    table = Table(show_header=True, header_style="bold", box=None, pad_edge=False)
    table.add_column("#", justify="right", no_wrap=True)
    settings.add_columns(table)
    for key in shown:
        table.add_column(_two_lines(COLUMNS[key][0]), justify="right", no_wrap=True)
    if not breaks_same:
        table.add_column(_two_lines(_BREAKS), justify="right", no_wrap=True)
    own = sweep["scenario_setting"]
    for number, row in enumerate(rows, start=1):
        cells = [f"{number}{OWN_MARK if row['id'] == own else ' '}", *settings.cells(row)]
        breaks = [] if breaks_same else ["-"]
        if not row["runs"]:
            table.add_row(*cells, *("-" for _ in shown), *breaks)
            continue
        under = "\n" if layout.spreads else None
        cells += [_spread_cell(row["metrics"][key], COLUMNS[key][1], under) for key in shown]
        if not breaks_same:
            count = len(row["invariant_breaks"])
            cells.append(f"[{'green' if count == 0 else 'bold red'}]{count}[/]")
        table.add_row(*cells)
    above = settings.legend(rows)
    if not shown:
        pass  # no metric column: nothing to read a cell of
    elif layout.spreads:
        above.append("each cell: the median over the seeds, the 10th-90th percentile under it")
    else:
        above.append("each cell: the median over the seeds (their 10th-90th percentiles: report.html)")
    said = [f"{COLUMNS[key][0]} {_spread_cell(s, COLUMNS[key][1], ' ')}" for key, s in same.items()]
    if breaks_same:
        said.append(f"{_BREAKS} {len(ran[0]['invariant_breaks'])}")
    under_lines = ["the same for every setting: " + ", ".join(said)] if said else []
    return above, table, under_lines


@dataclass(frozen=True)
class _SettingColumns:
    """How the table shows each setting's flags: not at all when nothing differs (its label is
    said above the table), the values in one folded "setting" column, or a column per flag."""

    flags: list[str]  # the flags whose value differs between settings
    short: dict[str, str]
    fold: bool
    wrap_headings: bool
    values: dict[str, dict[str, str]]  # setting id -> flag -> value
    widths: dict[str, int]  # flag -> its longest value (the folded column's values align)

    @classmethod
    def of(
        cls, rows: Sequence[Mapping[str, Any]], own_values: Mapping[str, str], layout: _Layout
    ) -> _SettingColumns:
        flags = differing_flags(rows, own_values)
        values = {row["id"]: flag_values(row, own_values) for row in rows}
        return cls(
            flags=flags,
            short=short_names(flags),
            fold=layout.fold_flags and len(flags) > 1,
            wrap_headings=layout.wrap_flag_headings,
            values=values,
            widths={
                flag: max(len(str(values[row["id"]].get(flag, UNKNOWN_VALUE))) for row in rows)
                for flag in flags
            },
        )

    def add_columns(self, table: Table) -> None:
        if not self.flags:
            return
        if self.fold:
            table.add_column("setting", no_wrap=True)
            return
        for flag in self.flags:
            heading = _two_lines(self.short[flag]) if self.wrap_headings else self.short[flag]
            table.add_column(escape(heading), no_wrap=True)

    def cells(self, row: Mapping[str, Any]) -> list[str]:
        texts = [self._text(row, flag) for flag in self.flags]
        if not self.flags:
            return []
        if not self.fold:
            return [escape(text) for text in texts]
        return [
            escape(" ".join(text.ljust(self.widths[flag]) for flag, text in zip(self.flags, texts)).rstrip())
        ]

    def legend(self, rows: Sequence[Mapping[str, Any]]) -> list[str]:
        """The lines above the table that say which flags the setting columns show."""
        if not self.flags:
            return [f"setting: {escape(row['label'])}" for row in rows if row["flags"]]
        if self.fold:
            return ["setting = " + " ".join(escape(f) for f in self.flags)]
        if any(self.short[f] != f for f in self.flags):
            return ["settings by " + ", ".join(escape(f) for f in self.flags)]
        return []

    def _text(self, row: Mapping[str, Any], flag: str) -> str:
        return str(self.values[row["id"]].get(flag, UNKNOWN_VALUE))
