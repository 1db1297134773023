"""A recording (`kubetide record`, kube/record.py) as a scenario: `scenario from-cluster --trace DIR`.

The recording's start.yaml is the cluster as it was when recording began, exported as
`scenario from-cluster` exports (only the fields the simulator reads). The replay adds:

- one spec.traces entry per workload whose replicas moved while recording; an HPA whose target is
  traced is dropped, since its decisions are what the trace holds (left in, the simulated HPA
  would fight the trace);
- the per-workload usage (usage.csv) as a spec.usage trace, when metrics-server served PodMetrics;
- the Job pods' median run time as spec.cluster.jobRunDuration, when some Job pod finished;
- the recording's length as spec.duration.

Trace files are named relative to the scenario file, so the scenario can live beside the
recording or anywhere else.
"""

from __future__ import annotations

import csv
import io
import os
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from kubetide.durations import format_duration, parse_duration
from kubetide.errors import ManifestError, UserError

# The replicas a trace drives; a ReplicationController is adopted as a ReplicaSet.
TRACE_KINDS = {"Deployment": "Deployment", "StatefulSet": "StatefulSet", "ReplicaSet": "ReplicaSet"}
TRACE_KINDS["ReplicationController"] = "ReplicaSet"


@dataclass
class Replay:
    text: str
    traced: list[str] = field(default_factory=list)  # kind namespace/name
    dropped_hpas: list[str] = field(default_factory=list)
    usage: bool = False
    job_run: float | None = None
    duration: float = 0.0
    notes: list[str] = field(default_factory=list)


def scenario_from_recording(directory: Path, scenario_dir: Path) -> Replay:
    """The scenario text replaying the recording in `directory`, its files named relative to
    `scenario_dir` (where the scenario will be written). Raises UserError naming the file."""
    meta = _load(directory / "recording.yaml")
    if not isinstance(meta, dict) or meta.get("kind") != "Recording":
        raise UserError(f"{directory / 'recording.yaml'}: not a kubetide recording (kind: Recording)")
    scenario = _load(directory / "start.yaml")
    if not isinstance(scenario, dict) or not isinstance(scenario.get("spec"), dict):
        raise UserError(f"{directory / 'start.yaml'}: not a scenario (spec missing)")
    spec = scenario["spec"]
    try:
        duration = parse_duration(meta.get("duration"))
    except ManifestError as exc:
        raise UserError(f"{directory / 'recording.yaml'}: duration: {exc.message}") from None
    replay = Replay(text="", duration=duration, notes=[str(n) for n in meta.get("notes") or ()])

    def relative(name: str) -> str:
        path = directory / name
        if not path.is_file():
            raise UserError(f"{directory / 'recording.yaml'}: {name}: no such file in the recording")
        return os.path.relpath(path, scenario_dir)

    present = {_identity(obj) for obj in spec.get("objects") or ()}
    traced: set[tuple[str, str, str]] = set()
    traces = []
    for entry in meta.get("traces") or ():
        kind = TRACE_KINDS.get(str(entry.get("kind")))
        if kind is None:
            raise UserError(
                f"{directory / 'recording.yaml'}: traces: kind {entry.get('kind')!r} is not replayable"
            )
        namespace, name = str(entry.get("namespace")), str(entry.get("name"))
        if (kind, namespace, name) not in present:
            replay.notes.append(
                f"{kind} {namespace}/{name} was created while recording: its replicas are not replayed"
            )
            continue
        traces.append(
            {"kind": kind, "namespace": namespace, "name": name, "file": relative(str(entry.get("file")))}
        )
        traced.add((kind, namespace, name))
        replay.traced.append(f"{kind} {namespace}/{name}")
    spec["traces"] = [*spec.get("traces", []), *traces]
    kept = []
    for obj in spec.get("objects") or ():
        target = _hpa_target(obj)
        if target is not None and target in traced:
            replay.dropped_hpas.append(
                f"{obj['metadata'].get('namespace', 'default')}/{obj['metadata'].get('name')}"
            )
            continue
        kept.append(obj)
    spec["objects"] = kept
    if meta.get("usage"):
        spec["usage"] = [{"trace": relative(str(meta["usage"]))}]
        replay.usage = True
    runs = _job_runs(directory / "jobs.csv")
    if runs:
        replay.job_run = statistics.median(runs)
        spec.setdefault("cluster", {})["jobRunDuration"] = format_duration(max(1.0, round(replay.job_run)))
    spec["duration"] = format_duration(max(1.0, duration))
    header = [
        f"# {meta.get('source')} as recorded from {meta.get('started')} for {meta.get('duration')} "
        "(kubetide record), replayed: its workloads' replicas and usage follow the recording,",
        "# the autoscaler is the simulated one (choose it under spec.autoscaler, or --set/--compare).",
    ]
    replay.text = "\n".join(header) + "\n" + yaml.safe_dump(scenario, sort_keys=False)
    return replay


def _load(path: Path) -> Any:
    try:
        return yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UserError(f"{path}: no such file (give the directory `kubetide record --out` wrote)") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"{path}: cannot read: {exc}") from None
    except yaml.YAMLError as exc:
        raise UserError(f"{path}: not YAML: {str(exc).splitlines()[0]}") from None


def _identity(obj: Any) -> tuple[str, str, str] | None:
    if not isinstance(obj, dict) or str(obj.get("kind")) not in TRACE_KINDS:
        return None
    meta = obj.get("metadata") or {}
    return TRACE_KINDS[str(obj["kind"])], str(meta.get("namespace", "default")), str(meta.get("name"))


def _hpa_target(obj: Any) -> tuple[str, str, str] | None:
    if not isinstance(obj, dict) or obj.get("kind") != "HorizontalPodAutoscaler":
        return None
    ref = (obj.get("spec") or {}).get("scaleTargetRef") or {}
    kind = TRACE_KINDS.get(str(ref.get("kind")))
    if kind is None:
        return None
    return kind, str((obj.get("metadata") or {}).get("namespace", "default")), str(ref.get("name"))


def _job_runs(path: Path) -> list[float]:
    if not path.is_file():
        return []
    rows = list(csv.DictReader(io.StringIO(path.read_text(encoding="utf-8"))))
    try:
        return [float(row["run_seconds"]) for row in rows]
    except (KeyError, TypeError, ValueError):
        raise UserError(f"{path}: expected the columns time,namespace,job,run_seconds with numbers") from None
