"""Usage profiles: how much cpu and memory each simulated pod really uses, over time.

Requests are what the scheduler and the autoscaler see; usage is what the node QoS agent sees
(sim/runtime/qos.py). A profile gives each resource one of

    a constant      cpu: 300m                         (a Kubernetes quantity)
    a trace         cpu: {trace: traces/batch.csv}    (the file's `cpu` column)
    a generator     cpu: {base: 200m, spikes: {every: 10m, to: 1500m, for: 2m, start: 5m}, jitter: 0.1}

and `trace: file.csv` alone reads every resource column the file has. Trace files (relative to the
scenario) have a header naming their columns, `time,cpu,memory`, then one row per change: time in
seconds since the start of the scenario (or a duration, `10m`), values as quantities; a value holds
until the next row, and the first row's value also holds before it. A file with a `workload`
column second (`time,workload,cpu,memory`, the workload as `namespace/name`) holds several
workloads' per-pod usage, each in time order: a spec.usage entry of it alone (`- trace: night.csv`)
gives each named workload's pods (of any controller kind, a Deployment's through its ReplicaSets)
its rows; what a Prometheus export of per-pod rates averaged per workload gives (docs/scenarios.md).
A generator is `base`, except during spikes: `for` long, every `every`, the first at `start` (default: one `every` in); `jitter`
(a fraction below 1) scales each sample by a factor drawn uniformly from [1 - jitter, 1 + jitter],
from a hash of the seed, the pod and the time, so a run is reproducible and pods draw independently.
Profiles run on scenario time: all pods of a workload spike together, and a replacement pod picks
up where the profile is.

Where profiles come from, per resource, first found wins:
1. the pod's annotation `kubetide.io/usage` (on a workload, in its pod template), a JSON or YAML
   flow mapping, e.g. `'{"cpu": {"base": "200m", "spikes": {"every": "10m", "to": "1500m", "for": "2m"}}}'`;
2. the scenario's `spec.usage` entries, in order: `match` (kind + name of a workload, which for a
   Deployment also covers its ReplicaSet's pods; namespace; a label `selector` on the pods; all
   optional, an empty match is every pod) plus the profile (`cpu`, `memory`, `trace`);
3. the pod's request (0 when it has none).

A pod uses nothing until it is Running, and never more than its limit; a pod the agent throttled
never more than its CPU quota. Only cpu and memory have profiles.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import Field

from kubetide.cloud.schema import StrictModel
from kubetide.durations import parse_duration
from kubetide.errors import ManifestError
from kubetide.model import Manifests
from kubetide.model.loader import read_text
from kubetide.model.quantity import QuantityError, parse_resource
from kubetide.model.reader import Reader
from kubetide.model.selectors import LabelSelector, parse_label_selector
from kubetide.sim.spec.errors import ScenarioError
from kubetide.sim.spec.files import csv_rows
from kubetide.sim.spec.profiles import (
    RESOURCES,
    USAGE_ANNOTATION,
    Constant,
    Generator,
    Profile,
    Series,
    Trace,
    UsageModel,
    UsageRule,
)

# -- shape (spec.usage) -------------------------------------------------------------------------


class UsageMatch(StrictModel):
    """Which pods a spec.usage entry is for (every field optional; empty = every pod)."""

    kind: Literal["Deployment", "ReplicaSet", "StatefulSet", "DaemonSet", "Job", "Pod"] | None = None
    name: str | None = Field(default=None, min_length=1)
    namespace: str | None = Field(default=None, min_length=1)
    selector: dict[str, Any] | None = None  # a label selector on the pods


class UsageSpec(StrictModel):
    """A usage profile for the pods `match` selects (parsed below)."""

    match: UsageMatch = UsageMatch()
    cpu: Any = None
    memory: Any = None
    trace: str | None = None


# -- loading -----------------------------------------------------------------------------------

PROFILE_KEYS = ("cpu", "memory", "trace")
SERIES_TRACE_KEYS = ("trace",)
GENERATOR_KEYS = ("base", "spikes", "jitter")
SPIKE_KEYS = ("every", "to", "for", "start")


class _Loader:
    def __init__(self, source: str, base_dir: Path):
        self.source = source
        self.base_dir = base_dir
        self.files: dict[str, dict[str, dict[str, Trace]]] = {}  # file -> workload ("": none) -> columns

    def error(self, where: str, message: str) -> ScenarioError:
        return ScenarioError(self.source, where, message)

    def _unknown(self, where: str, data: Mapping, allowed: Iterable[str]) -> None:
        allowed = tuple(allowed)
        for key in data:
            if key not in allowed:
                close = difflib.get_close_matches(str(key), allowed, n=1, cutoff=0.6)
                hint = f' (did you mean "{close[0]}"?)' if close else f" (expected {', '.join(allowed)})"
                raise self.error(f"{where}.{key}", f"unknown field{hint}")

    def quantity(self, where: str, resource: str, value: Any) -> int:
        if value is None:
            raise self.error(where, "required field is missing")
        try:
            amount = parse_resource(resource, value)
        except QuantityError as exc:
            raise self.error(where, str(exc)) from None
        if amount < 0:
            raise self.error(where, f"must not be negative, got {value!r}")
        return amount

    def duration(self, where: str, value: Any, *, positive: bool) -> float:
        if value is None:
            raise self.error(where, "required field is missing")
        try:
            seconds = parse_duration(value)
        except ValueError as exc:
            raise self.error(where, str(exc)) from None
        if seconds < 0 or (positive and seconds == 0):
            raise self.error(where, f"must be {'positive' if positive else 'non-negative'}, got {value!r}")
        return seconds

    def profile(self, where: str, data: Any, *, extra: Iterable[str] = ()) -> Profile:
        if not isinstance(data, Mapping):
            raise self.error(where, "expected a mapping with cpu, memory or trace")
        self._unknown(where, data, (*PROFILE_KEYS, *extra))
        series: dict[str, Series] = {}
        if data.get("trace") is not None:
            clash = [r for r in RESOURCES if data.get(r) is not None]
            if clash:
                raise self.error(
                    f"{where}.{clash[0]}",
                    "give a trace for every resource, or a profile per resource, not both",
                )
            columns = self.trace_file(f"{where}.trace", data["trace"])
            series.update(columns)
        for resource in RESOURCES:
            if data.get(resource) is not None:
                series[resource] = self.series(f"{where}.{resource}", resource, data[resource])
        if not series:
            raise self.error(where, "a usage profile needs cpu, memory or trace")
        return Profile(series)

    def series(self, where: str, resource: str, data: Any) -> Series:
        if not isinstance(data, Mapping):
            return Constant(self.quantity(where, resource, data))
        if "trace" in data:
            self._unknown(where, data, SERIES_TRACE_KEYS)
            columns = self.trace_file(f"{where}.trace", data["trace"])
            if resource not in columns:
                raise self.error(f"{where}.trace", f'{data["trace"]} has no "{resource}" column')
            return columns[resource]
        self._unknown(where, data, GENERATOR_KEYS)
        if "base" not in data:
            raise self.error(f"{where}.base", "required field is missing (or give a trace)")
        base = self.quantity(f"{where}.base", resource, data["base"])
        jitter = data.get("jitter", 0) or 0
        if isinstance(jitter, bool) or not isinstance(jitter, int | float) or not 0 <= jitter < 1:
            raise self.error(
                f"{where}.jitter", f"must be a fraction from 0 up to (not including) 1, got {jitter!r}"
            )
        spikes = data.get("spikes")
        if spikes is None:
            return Generator(base, jitter=float(jitter))
        at = f"{where}.spikes"
        if not isinstance(spikes, Mapping):
            raise self.error(at, "expected a mapping with every, to, for (and optionally start)")
        self._unknown(at, spikes, SPIKE_KEYS)
        every = self.duration(f"{at}.every", spikes.get("every"), positive=True)
        to = self.quantity(f"{at}.to", resource, spikes.get("to"))
        length = self.duration(f"{at}.for", spikes.get("for"), positive=True)
        if length > every:
            raise self.error(
                f"{at}.for",
                f"a spike ({spikes['for']}) cannot last longer than its period ({spikes['every']})",
            )
        start = (
            every
            if spikes.get("start") is None
            else self.duration(f"{at}.start", spikes["start"], positive=False)
        )
        return Generator(base, to, every, length, start, float(jitter))

    def trace_file(self, where: str, name: Any) -> dict[str, Trace]:
        """The columns of a trace file without a workload column."""
        traces = self.traces(where, name)
        if "" not in traces:
            raise self.error(
                where,
                f"{name} has a workload column: give it as a spec.usage entry of its own "
                "(trace: only, no match kind or name), each workload's rows are its pods' usage",
            )
        return traces[""]

    def traces(self, where: str, name: Any) -> dict[str, dict[str, Trace]]:
        """A trace file's columns per workload ("" for a file without a workload column)."""
        if not isinstance(name, str) or not name:
            raise self.error(where, "expected a file path")
        cached = self.files.get(name)
        if cached is not None:
            return cached
        path = self.base_dir / name
        if not path.exists():
            raise self.error(where, f'no such file "{name}"')
        try:
            text = read_text(path)  # capped as every input is: a trace can be /dev/zero too
        except ManifestError as exc:
            raise self.error(where, f"cannot read {name}: {exc.message}") from None
        self.files[name] = columns = _parse_trace(text, str(path))
        return columns


def _parse_trace(text: str, source: str) -> dict[str, dict[str, Trace]]:
    """Columns per workload: "" for a `time,cpu,memory` file; a `time,workload,cpu,memory` file
    holds each workload's rows (`namespace/name`), each in time order."""
    header: _TraceHeader | None = None
    times: dict[str, list[float]] = {}
    values: dict[str, dict[str, list[int]]] = {}
    for number, row in csv_rows(text, source):
        if not row or not "".join(row).strip() or row[0].strip().startswith("#"):
            continue
        cells = [cell.strip() for cell in row]
        at = f"line {number}"
        if header is None:
            header = _TraceHeader.parse(cells, source, at)
            continue
        header.check_width(cells, source, at)
        seconds = _row_time(cells[0], source, at)
        workload = header.workload(cells, source, at)
        rows = times.setdefault(workload, [])
        columns = values.setdefault(workload, {name: [] for name in header.resources})
        if rows and seconds <= rows[-1]:
            previous = "row's" if not header.by_workload else f"row's for {workload}"
            raise ScenarioError(source, at, f"time: {cells[0]} is not after the previous {previous}")
        rows.append(seconds)
        for name, cell in zip(header.resources, header.amounts(cells), strict=True):
            columns[name].append(_row_amount(name, cell, source, at))
    if header is None or not times:
        raise ScenarioError(source, "", "no rows: expected a header (time,cpu,memory) and at least one row")
    return {
        workload: {name: Trace(tuple(times[workload]), tuple(column)) for name, column in columns.items()}
        for workload, columns in values.items()
    }


@dataclass(frozen=True)
class _TraceHeader:
    """A trace file's columns: time, then workload (optional), then resources."""

    columns: list[str]
    by_workload: bool
    resources: list[str]

    @classmethod
    def parse(cls, cells: list[str], source: str, at: str) -> _TraceHeader:
        columns = [cell.lower() for cell in cells]
        if not columns or columns[0] != "time":
            raise ScenarioError(source, at, 'expected a header naming the columns, e.g. "time,cpu,memory"')
        by_workload = len(columns) > 1 and columns[1] == "workload"
        resources = columns[2:] if by_workload else columns[1:]
        for name in resources:
            if name not in RESOURCES:
                raise ScenarioError(source, at, f'unknown column "{name}" (expected cpu, memory)')
        if len(set(columns)) != len(columns):
            raise ScenarioError(source, at, "a column is named twice")
        if not resources:
            raise ScenarioError(source, at, "no cpu or memory column")
        return cls(columns, by_workload, resources)

    def check_width(self, cells: list[str], source: str, at: str) -> None:
        if len(cells) != len(self.columns):
            raise ScenarioError(
                source,
                at,
                f"expected {len(self.columns)} columns ({','.join(self.columns)}), got {len(cells)}",
            )

    def workload(self, cells: list[str], source: str, at: str) -> str:
        """The row's `namespace/name`, or "" in a file without a workload column."""
        if not self.by_workload:
            return ""
        workload = cells[1]
        if workload.count("/") != 1 or not all(workload.split("/")):
            raise ScenarioError(source, at, f"workload: expected namespace/name, got {workload!r}")
        return workload

    def amounts(self, cells: list[str]) -> list[str]:
        return cells[2 if self.by_workload else 1 :]


def _row_time(cell: str, source: str, at: str) -> float:
    """A row's time: seconds, or a duration ("90s", "1h30m"), never negative."""
    try:
        seconds = float(cell)
    except ValueError:
        try:
            seconds = parse_duration(cell)
        except ValueError as exc:
            raise ScenarioError(source, at, f"time: {exc}") from None
    if seconds < 0:
        raise ScenarioError(source, at, f"time: must not be negative, got {cell!r}")
    return seconds


def _row_amount(name: str, cell: str, source: str, at: str) -> int:
    try:
        amount = parse_resource(name, cell)
    except QuantityError as exc:
        raise ScenarioError(source, at, f"{name}: {exc}") from None
    if amount < 0:
        raise ScenarioError(source, at, f"{name}: must not be negative, got {cell!r}")
    return amount


def _annotated(manifests: Manifests) -> Iterable[tuple[str, str]]:
    """(where, annotation text) for every pod and pod template carrying the usage annotation."""
    for workload in manifests.workloads:
        text = workload.template.prototype.annotations.get(USAGE_ANNOTATION)
        if text is not None:
            yield (
                f"{workload.kind} {workload.meta.key}: spec.template.metadata.annotations[{USAGE_ANNOTATION}]",
                text,
            )
    for pod in manifests.pods:
        text = pod.annotations.get(USAGE_ANNOTATION)
        if text is not None:
            yield f"Pod {pod.key}: metadata.annotations[{USAGE_ANNOTATION}]", text


def load_usage(
    rules: list[UsageSpec],
    manifests: list[tuple[str, Manifests]],
    source: str,
    base_dir: Path,
    seed: int,
    warnings: list[str] | None = None,
) -> UsageModel:
    """Check `spec.usage` (pydantic-shaped entries) and every usage annotation in `manifests`
    ((where, manifests) pairs: spec.objects and each applied event). Rows of a per-workload trace
    for a workload no pod can belong to add a warning to `warnings`."""
    loader = _Loader(source, base_dir)
    model = UsageModel(seed=seed)
    _load_annotations(loader, model, manifests)
    workloads = {(w.kind, w.meta.name) for _, loaded in manifests for w in loaded.workloads}
    workloads |= {("Pod", p.name) for _, loaded in manifests for p in loaded.pods}
    controllers = _controllers(manifests)
    for index, rule in enumerate(rules):
        at = f"spec.usage[{index}]"
        _check_match(loader, at, rule.match, workloads)
        selector = _selector(loader, at, rule.match)
        traces = loader.traces(f"{at}.trace", rule.trace) if rule.trace is not None else {"": {}}
        if "" not in traces:  # a trace with a workload column: a rule per workload it names
            _add_workload_traces(loader, model, at, rule, selector, traces, controllers, warnings)
            continue
        data = {key: getattr(rule, key) for key in PROFILE_KEYS if getattr(rule, key) is not None}
        match = rule.match
        model.rules.append(
            UsageRule(match.kind, match.namespace, match.name, selector, loader.profile(at, data), at)
        )
    return model


def _load_annotations(loader: _Loader, model: UsageModel, manifests: list[tuple[str, Manifests]]) -> None:
    """Each distinct usage annotation's profile, checked once."""
    for where, loaded in manifests:
        for what, text in _annotated(loaded):
            if text in model.annotations:
                continue
            at = f"{where}: {what}"
            try:
                data = yaml.safe_load(text)
            except yaml.YAMLError as exc:
                mark = getattr(exc, "problem", None) or str(exc).splitlines()[0]
                raise loader.error(at, f"not a JSON or YAML mapping: {mark}") from None
            model.annotations[text] = loader.profile(at, data)


def _check_match(loader: _Loader, at: str, match: UsageMatch, workloads: set[tuple[str, str]]) -> None:
    """A rule's match names a kind with its name, and a workload that exists."""
    if match.name is not None and match.kind is None:
        raise loader.error(f"{at}.match.name", "a name needs a kind (Deployment, StatefulSet, ...)")
    if match.kind is not None and match.name is not None and (match.kind, match.name) not in workloads:
        known = sorted(name for kind, name in workloads if kind == match.kind)
        close = difflib.get_close_matches(match.name, known, n=1)
        hint = f' (did you mean "{close[0]}"?)' if close else ""
        raise loader.error(
            f"{at}.match.name", f'no {match.kind} "{match.name}" in spec.objects or spec.events{hint}'
        )


def _selector(loader: _Loader, at: str, match: UsageMatch) -> LabelSelector | None:
    if match.selector is None:
        return None
    try:
        return parse_label_selector(Reader(match.selector, loader.source, "", f"{at}.match.selector"))
    except ManifestError as exc:
        raise loader.error(exc.field or f"{at}.match.selector", exc.message) from None


def _add_workload_traces(
    loader: _Loader,
    model: UsageModel,
    at: str,
    rule: UsageSpec,
    selector: LabelSelector | None,
    traces: dict[str, dict[str, Trace]],
    controllers: set[tuple[str, str]],
    warnings: list[str] | None,
) -> None:
    """A rule per workload a trace with a workload column names (in the rule's namespace, if it
    gives one); rows for workloads no pod can belong to add a warning."""
    match = rule.match
    if match.kind is not None or match.name is not None or rule.cpu is not None or rule.memory is not None:
        raise loader.error(
            f"{at}.trace",
            f"{rule.trace} names its workloads: give it with no match kind or name, cpu or memory",
        )
    unmatched: dict[str, int] = {}
    for workload, columns in traces.items():
        namespace, name = workload.split("/")
        if match.namespace is None or match.namespace == namespace:
            model.rules.append(UsageRule(None, namespace, name, selector, Profile(dict(columns)), at))
            if (namespace, name) not in controllers:
                unmatched[workload] = len(next(iter(columns.values())).times)
    if unmatched and warnings is not None:
        warnings.append(_unmatched_rows(loader.source, f"{at}.trace", rule.trace, unmatched))


def _controllers(manifests: list[tuple[str, Manifests]]) -> set[tuple[str, str]]:
    """(namespace, name) of everything a pod's usage may be given under by a per-workload trace:
    the workloads and CronJobs, and the controllers pods and workloads name as theirs (a dump's
    pods may name a ReplicaSet it does not hold)."""
    found: set[tuple[str, str]] = set()
    for _, loaded in manifests:
        for workload in loaded.workloads:
            found.add((workload.namespace, workload.name))
            if (ref := workload.meta.controller) is not None:
                found.add((workload.namespace, ref.name))
        for cronjob in loaded.other.get("CronJob", []):
            found.add((cronjob.namespace, cronjob.name))
        for pod in loaded.pods:
            if (ref := pod.meta.controller) is not None:
                found.add((pod.namespace, ref.name))
    return found


def _unmatched_rows(source: str, where: str, name: str | None, rows: dict[str, int]) -> str:
    """One line for a trace's rows that name no workload: how many, and the first few names."""
    shown = ", ".join(list(rows)[:3]) + (f" and {len(rows) - 3} more" if len(rows) > 3 else "")
    count = sum(rows.values())
    return (
        f"{source}: {where}: {count} row{'s' if count != 1 else ''} of {name} name "
        f"{len(rows)} workload{'s' if len(rows) != 1 else ''} not in spec.objects or spec.events "
        f"({shown}): no pod uses them"
    )
