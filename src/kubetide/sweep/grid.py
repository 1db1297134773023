"""The settings of a sweep: the cross product of `--grid FLAG=V1,V2,...`, validated up front.

Values are separated by commas, or by semicolons when the list contains one, for values that
themselves hold commas: `--grid 'expander=least-waste,priority;random'` is two values. The same
flag given twice adds values rather than replacing them.
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from kubetide.autoscaler.options import AutoscalerOptions, parse_options
from kubetide.errors import ManifestError, UserError


@dataclass(frozen=True)
class Setting:
    """One point of the grid: the flags it overrides, in --grid order, as given."""

    flags: tuple[tuple[str, str], ...]

    @property
    def label(self) -> str:
        return " ".join(f"{name}={value}" for name, value in self.flags) or "(scenario's own)"

    @property
    def id(self) -> str:
        """A directory name: readable, and unique thanks to a hash of the exact values."""
        readable = re.sub(r"[^A-Za-z0-9.=-]+", "_", "_".join(f"{n}={v}" for n, v in self.flags))
        digest = hashlib.sha1(repr(self.flags).encode()).hexdigest()[:8]
        return f"{readable[:80]}-{digest}" if readable else f"scenario-{digest}"

    def options(self, base: AutoscalerOptions) -> AutoscalerOptions:
        return parse_options(dict(self.flags), "--grid", field="", base=base)


def parse_grid(items: Sequence[str]) -> dict[str, list[str]]:
    """`FLAG=V1,V2` items into flag -> values (in order, duplicates dropped)."""
    grid: dict[str, list[str]] = {}
    for item in items:
        name, sep, values_text = item.partition("=")
        name = name.strip().removeprefix("--")
        if not sep or not name or not values_text.strip():
            raise UserError(
                f"--grid {item}: expected FLAG=V1,V2,... (e.g. --grid scale-down-unneeded-time=5m,10m)"
            )
        separator = ";" if ";" in values_text else ","
        values = [v.strip() for v in values_text.split(separator) if v.strip()]
        known = grid.setdefault(name, [])
        known.extend(v for v in values if v not in known)
    return grid


def check_flags(flags: Iterable[tuple[str, Any]], base: AutoscalerOptions, prefix: str) -> list[str]:
    """Each FLAG=VALUE parsed as spec.autoscaler's are (over `base`); the first bad one is one
    line, `{prefix}FLAG=VALUE: message`, with spec.autoscaler's message (did-you-mean included).

    Returns the warnings for the caller to show, as `plan --set` shows them: an approximated or
    infrastructure flag, a deprecated alias, each `{prefix}FLAG: ...` and once per flag however
    many values it is given (a grid's values all run the same approximation)."""
    warnings: list[str] = []
    warned: set[str] = set()
    for name, value in flags:
        said: list[str] = []
        try:
            parse_options({name: value}, prefix.strip(), field="", base=base, warnings=said)
        except ManifestError as exc:
            raise UserError(f"{prefix}{exc.field}={value}: {exc.message}") from None
        if name not in warned:
            warned.add(name)
            warnings += [f"{prefix}{message}" for message in said]
    return warnings


def build_settings(
    grid: dict[str, list[str]], base: AutoscalerOptions, warnings: list[str] | None = None
) -> list[Setting]:
    """Every combination of the grid's values, each checked with the flag parser before any run;
    what the user should be told of the flags (check_flags) goes to `warnings`."""
    said = check_flags(((name, value) for name, values in grid.items() for value in values), base, "--grid ")
    if warnings is not None:
        warnings += said
    names = list(grid)
    return [Setting(tuple(zip(names, combo))) for combo in itertools.product(*(grid[n] for n in names))]


def scenario_setting(settings: list[Setting], base: AutoscalerOptions) -> tuple[list[Setting], Setting]:
    """The setting equal to the scenario's own options: one of the grid's, or an added empty one."""
    for setting in settings:
        if setting.options(base) == base:
            return settings, setting
    own = Setting(())
    return [own, *settings], own


def with_options(scenario, setting: Setting):
    """The scenario with the setting's flags applied over its spec.autoscaler."""
    return dataclasses.replace(scenario, options=setting.options(scenario.options))
