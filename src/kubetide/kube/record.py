"""`kubetide record`: what drives an autoscaler, watched on a live cluster (read-only).

Informers (kube/informer.py) on the workloads, pods and nodes; every `interval` the recorder takes
what changed and, where metrics-server serves them, one list of PodMetrics. What it keeps is what
a replay needs and nothing else (no names of containers, no env, no messages):

- each workload's replicas over time (Deployments, StatefulSets, ReplicaSets and
  ReplicationControllers that no Deployment owns): an HPA's decisions, a `kubectl scale`, a
  rollout of a new size all show up here;
- each workload's mean per-pod usage over time (cpu, memory) from PodMetrics;
- how long each Job pod ran (status.startTime to its containers' last finishedAt), for the
  simulator's jobRunDuration; the CronJobs themselves are in the starting scenario;
- each node group's size over time, to compare with what a replay's policy does.

The recording's times are seconds since it started, on the monotonic clock; the start's wall time
is written beside them. `write_recording` turns it into the files sim/spec/recording.py reads.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kubetide.errors import ManifestError, UserError
from kubetide.kube.client import ApiError, KubeClient
from kubetide.kube.informer import DELETED, Change, InformerGroup
from kubetide.kube.resources import NODES, PODS, WORKLOADS
from kubetide.kube.usage import POD_METRICS
from kubetide.model.quantity import QuantityError, parse_capacity
from kubetide.model.reader import parse_time

log = logging.getLogger(__name__)

# The workload kinds whose replicas a replay drives (spec.traces' kinds; a ReplicationController
# is replayed as the ReplicaSet the simulator adopts it as).
TRACED_KINDS = ("Deployment", "StatefulSet", "ReplicaSet", "ReplicationController")
RECORDED_WORKLOADS = tuple(r for r in WORKLOADS if r.kind in TRACED_KINDS)
SYNC_TIMEOUT = 60.0


@dataclass(frozen=True, slots=True)
class WorkloadState:
    kind: str
    namespace: str
    name: str
    replicas: int
    owner: tuple[str, str] | None  # the controller's (kind, name)


@dataclass(frozen=True, slots=True)
class PodState:
    namespace: str
    name: str
    owner: tuple[str, str] | None
    run_seconds: float | None  # a finished Job pod's run time, else None


@dataclass
class Recording:
    """What was observed; times are seconds since the recording began."""

    source: str
    started: str  # RFC 3339, the wall time at 0 s
    interval: float
    seconds: float = 0.0
    replicas: dict[tuple[str, str, str], list[tuple[float, int]]] = field(default_factory=dict)
    usage: list[tuple[float, str, int, int]] = field(default_factory=list)  # t, ns/name, millicpu, bytes
    job_runs: list[tuple[float, str, str, float]] = field(default_factory=list)  # t, ns, job, seconds
    node_groups: list[tuple[float, str, int]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def changed_workloads(self) -> list[tuple[str, str, str]]:
        """The workloads whose replicas moved while recording (the others stay as the start has them)."""
        return sorted(key for key, rows in self.replicas.items() if len({r for _, r in rows}) > 1)


def _workload_parser(kind: str) -> Callable[[dict], WorkloadState]:
    def parse(raw: dict) -> WorkloadState:
        meta = raw.get("metadata") or {}
        replicas = (raw.get("spec") or {}).get("replicas", 1)
        if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 0:
            where = f"{kind} {meta.get('namespace')}/{meta.get('name')}"
            raise ManifestError("the watch", where, "spec.replicas", f"not a replica count: {replicas!r}")
        return WorkloadState(
            kind, meta.get("namespace", ""), meta.get("name", ""), replicas, _controller(meta)
        )

    return parse


def _controller(meta: dict) -> tuple[str, str] | None:
    for ref in meta.get("ownerReferences") or ():
        if isinstance(ref, dict) and ref.get("controller"):
            return str(ref.get("kind")), str(ref.get("name"))
    return None


def _parse_pod(raw: dict) -> PodState:
    meta = raw.get("metadata") or {}
    owner = _controller(meta)
    status = raw.get("status") or {}
    run = None
    if owner is not None and owner[0] == "Job" and status.get("phase") in ("Succeeded", "Failed"):
        run = _run_seconds(status)
    return PodState(meta.get("namespace", ""), meta.get("name", ""), owner, run)


def _run_seconds(status: dict) -> float | None:
    finished = [
        ((s.get("state") or {}).get("terminated") or {}).get("finishedAt")
        for s in status.get("containerStatuses") or ()
        if isinstance(s, dict)
    ]
    start = status.get("startTime")
    try:
        ends = [parse_time(f) for f in finished if isinstance(f, str)]
        began = parse_time(start) if isinstance(start, str) else None
    except ValueError:
        return None  # an odd timestamp: this run is not counted
    if not ends or began is None:
        return None
    return max(0.0, max(ends) - began)


class Recorder:
    """Watches the cluster and fills a Recording; `step()` once per interval, `stop()` at the end."""

    def __init__(
        self,
        client: KubeClient,
        recording: Recording,
        group_of: Callable[[Sequence[Any]], dict[str, int]],
        *,
        monotonic: Callable[[], float] = time.monotonic,
    ):
        self.client = client
        self.recording = recording
        self.group_of = group_of  # nodes -> size of each node group
        self.monotonic = monotonic
        self.informers = InformerGroup()
        for resource in RECORDED_WORKLOADS:
            self.informers.add(client, resource, parse=_workload_parser(resource.kind))
        self.informers.add(client, PODS, parse=_parse_pod)
        self.informers.add(client, NODES)
        self.workloads: dict[tuple[str, str, str], WorkloadState] = {}
        self.pods: dict[str, PodState] = {}
        self.nodes: dict[str, Any] = {}
        self.runs_seen: set[str] = set()
        self.sizes: dict[str, int] = {}
        self.metrics_missing: str | None = None
        self.began = 0.0

    def start(self) -> None:
        self.informers.start()
        missing = self.informers.wait_for_sync(SYNC_TIMEOUT)
        if missing:
            self.informers.stop()
            raise UserError(f"{self.client.source}: cannot watch {'; '.join(missing)}")
        self.began = self.monotonic()
        self.step()

    def stop(self) -> None:
        self.step()
        self.informers.stop()

    def step(self) -> None:
        # Tenths of a second, as written: two steps in one tenth are one moment of the trace.
        now = round(self.monotonic() - self.began, 1)
        self.recording.seconds = now
        for change in self.informers.changes():
            self._apply(change, now)
        self._sample_usage(now)
        sizes = self.group_of(list(self.nodes.values()))
        for group in sorted(sizes.keys() | self.sizes.keys()):
            if sizes.get(group, 0) != self.sizes.get(group):
                self.recording.node_groups.append((now, group, sizes.get(group, 0)))
        self.sizes = sizes

    def _apply(self, change: Change, now: float) -> None:
        if change.kind == "Node":
            if change.type == DELETED:
                self.nodes.pop(change.key, None)
            else:
                self.nodes[change.key] = change.obj
        elif change.kind == "Pod":
            self._apply_pod(change, now)
        else:
            self._apply_workload(change, now)

    def _apply_pod(self, change: Change, now: float) -> None:
        pod: PodState = change.obj
        if change.type == DELETED:
            self.pods.pop(change.key, None)
            return
        self.pods[change.key] = pod
        if pod.run_seconds is not None and pod.owner is not None and change.key not in self.runs_seen:
            self.runs_seen.add(change.key)
            self.recording.job_runs.append((now, pod.namespace, pod.owner[1], pod.run_seconds))

    def _apply_workload(self, change: Change, now: float) -> None:
        state: WorkloadState = change.obj
        key = (state.kind, state.namespace, state.name)
        if change.type == DELETED:
            self.workloads.pop(key, None)
            replicas = 0
        else:
            self.workloads[key] = state
            replicas = state.replicas
        if state.kind == "ReplicaSet" and state.owner is not None and state.owner[0] == "Deployment":
            return  # its Deployment's replicas are the ones that drive it
        rows = self.recording.replicas.setdefault(key, [])
        if rows and rows[-1][0] == now:
            rows[-1] = (now, replicas)  # changes seen in one step: the trace keeps the last
        elif not rows or rows[-1][1] != replicas:
            rows.append((now, replicas))

    def _workload_of(self, pod: PodState) -> str | None:
        if pod.owner is None:
            return None
        kind, name = pod.owner
        if kind == "ReplicaSet":
            owner = self.workloads.get(("ReplicaSet", pod.namespace, name))
            if owner is not None and owner.owner is not None and owner.owner[0] == "Deployment":
                name = owner.owner[1]
        return f"{pod.namespace}/{name}"

    def _sample_usage(self, now: float) -> None:
        if self.recording.usage and self.recording.usage[-1][0] >= now:
            return  # the last step (stop) right after a sample
        try:
            items = [
                item
                for page in self.client.list_pages(POD_METRICS.list_path)
                for item in page.get("items") or ()
            ]
        except ApiError as exc:
            message = f"no PodMetrics ({'metrics-server not installed?' if exc.status == 404 else exc}): usage not recorded"
            if message != self.metrics_missing:
                self.metrics_missing = message
                self.recording.notes.append(message)
                log.warning("%s", message)
            return
        totals: dict[str, list[int]] = {}
        for item in items:
            meta = item.get("metadata") or {}
            pod = self.pods.get(f"{meta.get('namespace')}/{meta.get('name')}")
            workload = self._workload_of(pod) if pod is not None else None
            if workload is None:
                continue
            cpu = memory = 0
            try:
                for container in item.get("containers") or ():
                    usage = container.get("usage") or {}
                    cpu += parse_capacity("cpu", usage.get("cpu", "0"))
                    memory += parse_capacity("memory", usage.get("memory", "0"))
            except QuantityError:
                continue  # an odd sample from a metrics adapter is not worth a failed recording
            entry = totals.setdefault(workload, [0, 0, 0])
            entry[0] += cpu
            entry[1] += memory
            entry[2] += 1
        for workload, (cpu, memory, pods) in sorted(totals.items()):
            self.recording.usage.append((now, workload, cpu // pods, memory // pods))


# -- the files -----------------------------------------------------------------------------------


def trace_file(kind: str, namespace: str, name: str) -> str:
    return f"replicas/{kind.lower()}-{namespace}-{name}.csv"


def write_recording(recording: Recording, directory: Path, start_scenario: str) -> list[str]:
    """Write the recording's files into `directory` (which exists and is empty); the file names."""
    import yaml

    from kubetide.durations import format_duration
    from kubetide.model.quantity import format_quantity

    written = ["start.yaml"]
    (directory / "start.yaml").write_text(start_scenario, encoding="utf-8")
    changed = recording.changed_workloads()
    if changed:
        (directory / "replicas").mkdir()
    for kind, namespace, name in changed:
        path = trace_file(kind, namespace, name)
        rows = "".join(f"{t:.1f},{r}\n" for t, r in recording.replicas[(kind, namespace, name)])
        (directory / path).write_text("time,replicas\n" + rows, encoding="utf-8")
        written.append(path)
    if recording.usage:
        rows = "".join(
            f"{t:.1f},{w},{format_quantity('cpu', c)},{format_quantity('memory', m)}\n"
            for t, w, c, m in recording.usage
        )
        (directory / "usage.csv").write_text("time,workload,cpu,memory\n" + rows, encoding="utf-8")
        written.append("usage.csv")
    rows = "".join(f"{t:.1f},{ns},{job},{s:.1f}\n" for t, ns, job, s in recording.job_runs)
    (directory / "jobs.csv").write_text("time,namespace,job,run_seconds\n" + rows, encoding="utf-8")
    rows = "".join(f"{t:.1f},{g},{n}\n" for t, g, n in recording.node_groups)
    (directory / "nodes.csv").write_text("time,node_group,nodes\n" + rows, encoding="utf-8")
    written += ["jobs.csv", "nodes.csv", "recording.yaml"]
    meta = {
        "apiVersion": "kubetide.io/v1alpha1",
        "kind": "Recording",
        "source": recording.source,
        "started": recording.started,
        "duration": format_duration(recording.seconds),
        "interval": format_duration(recording.interval),
        "traces": [
            {"kind": k, "namespace": ns, "name": n, "file": trace_file(k, ns, n)} for k, ns, n in changed
        ],
        "usage": "usage.csv" if recording.usage else None,
        "notes": recording.notes,
    }
    (directory / "recording.yaml").write_text(yaml.safe_dump(meta, sort_keys=False), encoding="utf-8")
    return written
