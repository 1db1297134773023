"""A sweep's `--trace` alternatives: the same scenario driven by other replica traces.

A trace alternative replaces the file of one of the scenario's `spec.traces`: `--trace CSV` when
the scenario has exactly one trace, `--trace NAME=CSV` (the traced workload's name, or
namespace/name) when it has several. Every setting runs on every alternative and every seed, and
a setting's spread is taken over all of them, so a setting is judged on several nights rather than
one. Each alternative is a whole scenario, loaded here once with the ordinary scenario loader, so a
run on an alternative is exactly `kubetide simulate` on the scenario with that trace file.
"""

from __future__ import annotations

import copy
import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kubetide.errors import UserError
from kubetide.sim.spec.limits import DEFAULT_LIMITS, Limits
from kubetide.sim.spec.scenario import Scenario, parse_scenario

SCENARIOS_OWN = ""  # the trace id of runs on the scenario as written


@dataclass(frozen=True)
class TraceAlternative:
    """One --trace value: which of spec.traces it replaces, with which file."""

    index: int  # into spec.traces
    file: Path
    label: str  # as given on the command line

    @property
    def id(self) -> str:
        """A directory name: the file's stem, and a hash of the target and the file's bytes, so a
        changed trace is never mistaken for a stored run's."""
        digest = hashlib.sha1(f"{self.index}\n".encode() + self.file.read_bytes()).hexdigest()[:8]
        readable = re.sub(r"[^A-Za-z0-9.-]+", "_", self.file.stem)[:60]
        return f"{readable}-{digest}"


def _target_index(traces: list[dict], target: str | None, item: str) -> int:
    if target is None:
        if len(traces) != 1:
            names = ", ".join(f"{t.get('namespace', 'default')}/{t.get('name')}" for t in traces)
            raise UserError(f"--trace {item}: the scenario has {len(traces)} traces ({names}); use NAME=CSV")
        return 0
    matches = [
        i
        for i, t in enumerate(traces)
        if target in (t.get("name"), f"{t.get('namespace', 'default')}/{t.get('name')}")
    ]
    if len(matches) != 1:
        names = ", ".join(f"{t.get('namespace', 'default')}/{t.get('name')}" for t in traces)
        found = "no trace" if not matches else "several traces"
        raise UserError(f"--trace {item}: {found} of the scenario is for {target!r} (its traces: {names})")
    return matches[0]


def parse_trace_alternatives(
    items: Sequence[str], document: dict[str, Any], source: str
) -> list[TraceAlternative]:
    """The --trace values, checked against the scenario document's spec.traces (duplicates dropped)."""
    if not items:
        return []
    spec = document.get("spec")
    traces = spec.get("traces") if isinstance(spec, dict) else None
    if not isinstance(traces, list) or not traces or not all(isinstance(t, dict) for t in traces):
        raise UserError(f"--trace: {source} has no spec.traces; a trace alternative replaces the file of one")
    alternatives: list[TraceAlternative] = []
    for item in items:
        target, sep, file_text = item.rpartition("=")
        target_name = target.strip() if sep else None
        file = Path(file_text.strip())
        if not file_text.strip():
            raise UserError(f"--trace {item}: expected CSV or NAME=CSV")
        if not file.is_file():
            raise UserError(f"--trace {item}: no such file {file}")
        alternative = TraceAlternative(_target_index(traces, target_name, item), file.resolve(), item)
        if alternative not in alternatives:
            alternatives.append(alternative)
    return alternatives


def scenario_variants(
    document: dict[str, Any],
    source: str,
    base_dir: Path,
    scenario: Scenario,
    alternatives: Sequence[TraceAlternative],
    limits: Limits = DEFAULT_LIMITS,
) -> dict[str, Scenario]:
    """Trace id -> the scenario to simulate: the scenario itself without alternatives, otherwise one
    scenario per alternative (the document with its trace file replaced, relative files read from
    base_dir as the scenario's own were), with the caller's duration applied, within `limits`."""
    if not alternatives:
        return {SCENARIOS_OWN: scenario}
    variants = {}
    for alternative in alternatives:
        data = copy.deepcopy(document)
        data["spec"]["traces"][alternative.index]["file"] = str(alternative.file)
        variant = parse_scenario(data, source, base_dir=base_dir, limits=limits)
        if variant.duration != scenario.duration:
            variant = variant.with_duration(scenario.duration)
        variants[alternative.id] = variant
    return variants
