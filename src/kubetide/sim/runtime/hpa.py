"""The HorizontalPodAutoscaler controller of kube-controller-manager, on simulated time.

Every `spec.cluster.horizontalPodAutoscaler.syncPeriod` (15 s, --horizontal-pod-autoscaler-sync-period)
each HPA is synced as upstream syncs it (the arithmetic is workloads/hpa.py): the target's pods are
the ones it controls (a Deployment's through its ReplicaSets; upstream lists the namespace's pods by
the target's selector, which also finds pods it does not own, a misconfiguration upstream warns of);
each pod's metric is what metrics-server would report of its usage profile (sim/spec/usage.py)
once the pod has run for one metrics resolution (15 s;
before that it has none, a "missing" pod); the new count goes to the target's `scale` as
`kubectl scale` would, with upstream's SuccessfulRescale event.

Where a pod's resource has no usage profile, its usage is what the HPA's status last read
(status.currentMetrics: the dump's averageUtilization of its request, or averageValue), else its
request. So a cluster dump simulates as it was: the HPAs hold their counts until a profile or a
trace moves the usage. The controller starts warm, as one that has been running: each HPA's
downscale window starts full at the current count.
"""

from __future__ import annotations

import bisect
import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kubetide.model import Pod, Workload
from kubetide.model.hpa import HorizontalPodAutoscaler, ResourceMetric
from kubetide.sim.runtime.engine import Engine, Timer
from kubetide.sim.runtime.events import EventLog
from kubetide.sim.runtime.world import World, WorldObserver
from kubetide.sim.spec.profiles import Constant, Generator, Trace, UsageModel
from kubetide.workloads.hpa import HpaState, PodSample, Settings

KIND = "HorizontalPodAutoscaler"
SOURCE = "horizontal-pod-autoscaler"
# metrics-server's default --metric-resolution: a pod's first sample comes this long after it
# starts, and each sample covers this window.
METRICS_RESOLUTION = 15.0


class HorizontalPodAutoscalers(WorldObserver):
    def __init__(
        self,
        engine: Engine,
        world: World,
        log: EventLog,
        usage: UsageModel | None,
        settings: Settings,
        scale: Callable[[str, int], None],
    ):
        self.engine = engine
        self.world = world
        self.log = log
        self.settings = settings
        self.scale = scale
        # Per run: the profile cache is keyed by pod UID, which another run reuses.
        base = usage if usage is not None else UsageModel()
        self.usage = dataclasses.replace(base, owners=self.world.owners, _resolved={})
        self.hpas: dict[str, HorizontalPodAutoscaler] = {}
        self.states: dict[str, HpaState] = {}
        self.history: dict[str, dict[str, Any]] = {}  # key -> counts for the summary
        self.missing_target: set[str] = set()
        self._timer: Timer | None = None
        self._subscribed = False
        self._started = False
        self._changes: dict[str, int] = {}  # controller UID -> changes to its pods (the cache's key)
        self._cache: dict[str, _Inputs] = {}
        self.rescales = 0

    # -- the API server's side -----------------------------------------------------------------
    def apply(self, hpa: HorizontalPodAutoscaler) -> None:
        self.hpas[hpa.key] = hpa
        self.states.setdefault(hpa.key, HpaState())
        if not self._subscribed:  # only scenarios with HPAs pay for the cache's upkeep
            self.world.subscribe(self)
            self._subscribed = True
        if self._started:  # applied by a scenario event: synced from the next period on
            self._schedule()

    def delete(self, key: str) -> bool:
        self.states.pop(key, None)
        self._cache.pop(key, None)
        return self.hpas.pop(key, None) is not None

    def delete_namespace(self, namespace: str) -> None:
        for key in [k for k, h in self.hpas.items() if h.namespace == namespace]:
            self.delete(key)

    def start(self) -> None:
        """Warm start: each HPA's window holds its current count; the first sync one period on."""
        self._started = True
        now = self.engine.now()
        for key, hpa in self.hpas.items():
            target = self.world.workloads.get(hpa.target_key)
            if target is not None and target.replicas is not None:
                self.states[key].warm_start(target.replicas, now)
            self.history[key] = self._history(hpa, target.replicas if target is not None else None)
        self._schedule()

    def _schedule(self) -> None:
        if self._timer is None or not self._timer.active:
            self._timer = self.engine.after(self.settings.sync_period, self._sync_all)

    # -- the controller ------------------------------------------------------------------------
    def _sync_all(self) -> None:
        self._timer = None
        if not self.hpas:
            return
        for key in list(self.hpas):
            self._sync(self.hpas[key])
        self._schedule()

    def _sync(self, hpa: HorizontalPodAutoscaler) -> None:
        target = self.world.workloads.get(hpa.target_key)
        if target is None or target.replicas is None:
            if hpa.key not in self.missing_target:
                self.missing_target.add(hpa.key)
                self.log.record(
                    KIND,
                    hpa.meta.key,
                    "Warning",
                    "FailedGetScale",
                    f"{hpa.target_kind} {hpa.namespace}/{hpa.target_name} not found (or not scalable)",
                    SOURCE,
                )
            return
        self.missing_target.discard(hpa.key)
        current = target.replicas
        now = self.engine.now()
        samples, memo = self._inputs(hpa, target, now)
        decision = self.states[hpa.key].reconcile(hpa, current, samples, now, self.settings, memo)
        record = self.history.setdefault(hpa.key, self._history(hpa, current))
        record["readings"] = decision.metrics
        if decision.desired != current:
            self.rescales += 1
            self.log.record(
                KIND,
                hpa.meta.key,
                "Normal",
                "SuccessfulRescale",
                f"New size: {decision.desired}; reason: {decision.reason}",
                SOURCE,
            )
            self.scale(hpa.target_key, decision.desired)
            record["rescales"] += 1
            record["peak"] = max(record["peak"], decision.desired)
            record["low"] = min(record["low"], decision.desired)
        record["final"] = decision.desired

    def _inputs(
        self, hpa: HorizontalPodAutoscaler, target: Workload, now: float
    ) -> tuple[dict[str, list[PodSample]], dict]:
        """The pods as the metrics see them, and the memo of results on them. Reused from the last
        sync while nothing they depend on changed: no pod of the target added, changed or gone
        (the watches count changes per controller), each usage series at the same step, and no
        pod's reading due to change with time yet (a first metric, the end of a cpu
        initialisation period): then the last results stand, and a sync costs no pod walk."""
        owners = self._owners_of(target)
        token = (tuple((uid, self._changes.get(uid, 0)) for uid in owners), hpa)
        cached = self._cache.get(hpa.key)
        t = now - self.engine.start
        if (
            cached is not None
            and cached.token == token
            and now < cached.valid_until
            and all(_epoch(series, t) == epoch for series, epoch in cached.epochs)
        ):
            return cached.samples, cached.memo
        pods = [p for uid in owners for p in self.world.pods_of(uid)]
        used: dict[int, Any] = {}
        samples = self._samples(hpa, pods, now, used)
        valid_until = min((_next_flip(pod, now, self.settings) for pod in pods), default=float("inf"))
        entry = _Inputs(
            token, valid_until, [(series, _epoch(series, t)) for series in used.values()], samples, {}
        )
        self._cache[hpa.key] = entry
        return samples, entry.memo

    def _owners_of(self, target: Workload) -> list[str]:
        owners = [target.meta.uid]
        if target.kind == "Deployment":
            owners += [
                w.meta.uid
                for w in self.world.workloads.values()
                if w.kind == "ReplicaSet"
                and w.namespace == target.namespace
                and (ref := w.meta.controller) is not None
                and ref.uid == target.meta.uid
            ]
        return owners

    def _samples(
        self, hpa: HorizontalPodAutoscaler, pods: list[Pod], now: float, used: dict[int, Any] | None = None
    ) -> dict[str, list[PodSample]]:
        """The pods as each metric's resource sees them (request and usage differ per resource);
        the usage series read go into `used` (by identity)."""
        t = now - self.engine.start
        out: dict[str, list[PodSample]] = {}
        fallback = _status_usage(hpa)
        for metric in hpa.metrics:
            resource = metric.resource
            samples = []
            for pod in pods:
                request = pod.requests.get(resource, 0)
                value = None
                if (
                    pod.phase == "Running"
                    and pod.start_time is not None
                    and now - pod.start_time >= METRICS_RESOLUTION
                ):
                    value = self._usage(pod, resource, t, request, fallback.get(resource), used)
                samples.append(
                    PodSample(
                        name=pod.name,
                        phase=pod.phase,
                        deleting=pod.meta.deletion_timestamp is not None,
                        ready=pod.ready if pod.phase == "Running" else False,
                        ready_transition=pod.ready_transition,
                        start_time=pod.start_time,
                        request=request,
                        metric=value,
                        metric_time=now,
                        metric_window=METRICS_RESOLUTION,
                    )
                )
            out[resource] = samples
        return out

    def _usage(
        self,
        pod: Pod,
        resource: str,
        t: float,
        request: int,
        status: ResourceMetric | None,
        used: dict[int, Any] | None = None,
    ) -> int:
        series = key = None
        for name, found, jitter_key in self.usage.resolve(pod):
            if name == resource:
                series, key = found, jitter_key
        if series is not None:
            if used is not None:
                used[id(series)] = series
            value = series.at(t, key or 0)
        elif status is not None and status.utilization is not None:
            value = request * status.utilization // 100
        elif status is not None and status.average_value is not None:
            value = status.average_value
        else:
            value = request
        limit = pod.limits.get(resource)
        return min(value, limit) if limit else value

    def _history(self, hpa: HorizontalPodAutoscaler, replicas: int | None) -> dict[str, Any]:
        start = replicas or 0
        return {"initial": start, "final": start, "peak": start, "low": start, "rescales": 0, "readings": {}}

    # -- watches -------------------------------------------------------------------------------
    def _changed(self, pod: Pod) -> None:
        ref = pod.meta.controller
        if ref is not None:
            self._changes[ref.uid] = self._changes.get(ref.uid, 0) + 1

    def pod_added(self, pod: Pod) -> None:
        self._changed(pod)

    def pod_bound(self, pod: Pod) -> None:
        self._changed(pod)

    def pod_updated(self, old: Pod, new: Pod) -> None:
        self._changed(new)

    def pod_removed(self, pod: Pod) -> None:
        self._changed(pod)
        self.usage.forget(pod.uid)

    # -- outputs -------------------------------------------------------------------------------
    def timeline_columns(self, row: dict[str, Any]) -> None:
        """Per HPA: its target's replicas now, and its metrics' last readings."""
        for key, hpa in self.hpas.items():
            target = self.world.workloads.get(hpa.target_key)
            name = f"hpa_{hpa.namespace}/{hpa.name}"
            row[f"{name}_replicas"] = (
                target.replicas if target is not None and target.replicas is not None else 0
            )
            readings = self.history.get(key, {}).get("readings", {})
            for metric in hpa.metrics:  # a column per metric from the first row (timeline.csv)
                row[f"{name}_{metric.resource}"] = readings.get(metric.resource)

    def summary(self) -> dict[str, Any]:
        out = {}
        for key, record in sorted(self.history.items()):
            hpa = self.hpas.get(key)
            entry = {k: v for k, v in record.items() if k != "readings"}
            if hpa is not None:
                entry["min_replicas"], entry["max_replicas"] = hpa.min_replicas, hpa.max_replicas
                entry["targets"] = {m.resource: _target_text(m) for m in hpa.metrics}
            out[key.split("/", 1)[1]] = entry
        return out


@dataclass
class _Inputs:
    """One HPA's pods as its last sync read them, and what they gave."""

    token: tuple
    valid_until: float  # the first time a pod's reading changes by itself (a first metric...)
    epochs: list[tuple[Any, Any]]  # (usage series, its step when read)
    samples: dict[str, list[PodSample]]
    memo: dict


def _epoch(series: Any, t: float) -> Any:
    """What a series' value at `t` depends on: equal epochs, equal values (per pod)."""
    if isinstance(series, Constant):
        return 0
    if isinstance(series, Trace):
        return bisect.bisect_right(series.times, t)
    if isinstance(series, Generator) and not series.jitter:
        return series.spiking(t)
    return t  # jitter: every sample differs


def _next_flip(pod: Pod, now: float, settings: Settings) -> float:
    """The first time after `now` at which `pod` reads differently with nothing else changed: its
    first metric, the end of its cpu initialisation period, a metric window after it became ready."""
    start = pod.start_time
    if pod.phase != "Running" or start is None:
        return float("inf")
    times = (
        start + METRICS_RESOLUTION,
        start + settings.cpu_initialization_period,
        (pod.ready_transition or start) + METRICS_RESOLUTION,
    )
    return min((t for t in times if t > now), default=float("inf"))


def _status_usage(hpa: HorizontalPodAutoscaler) -> dict[str, ResourceMetric]:
    """What the HPA's status last read, per resource, as a per-pod usage to stand in."""
    return {
        resource: ResourceMetric(resource, utilization=utilization, average_value=value)
        for resource, utilization, value in hpa.current_metrics
    }


def _target_text(metric: ResourceMetric) -> str:
    return f"{metric.utilization}%" if metric.utilization is not None else f"{metric.average_value}"


def hpa_settings(cluster: Any) -> Settings:
    """The controller's flags from spec.cluster.horizontalPodAutoscaler."""
    spec = cluster.horizontalPodAutoscaler
    return Settings(
        sync_period=spec.syncPeriod,
        tolerance=spec.tolerance,
        downscale_stabilization=spec.downscaleStabilization,
        cpu_initialization_period=spec.cpuInitializationPeriod,
        initial_readiness_delay=spec.initialReadinessDelay,
    )
