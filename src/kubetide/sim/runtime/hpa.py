"""The HorizontalPodAutoscaler controller of kube-controller-manager, on simulated time.

Every `spec.cluster.horizontalPodAutoscaler.syncPeriod` (15 s, --horizontal-pod-autoscaler-sync-period)
each HPA is synced as upstream syncs it (the arithmetic is workloads/hpa.py): the target's pods are
the ones its selector matches in its namespace; each pod's metric is what metrics-server would
report of its usage profile (sim/spec/usage.py) once the pod has run for one metrics resolution (15 s;
before that it has none, a "missing" pod); the new count goes to the target's `scale` as
`kubectl scale` would, with upstream's SuccessfulRescale event.

Where a pod's resource has no usage profile, its usage is what the HPA's status last read
(status.currentMetrics: the dump's averageUtilization of its request, or averageValue), else its
request. So a cluster dump simulates as it was: the HPAs hold their counts until a profile or a
trace moves the usage. The controller starts warm, as one that has been running: each HPA's
downscale window starts full at the current count.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from typing import Any

from kubetide.model import Pod
from kubetide.model.hpa import HorizontalPodAutoscaler, ResourceMetric
from kubetide.sim.runtime.engine import Engine, Timer
from kubetide.sim.runtime.events import EventLog
from kubetide.sim.spec.profiles import UsageModel
from kubetide.sim.runtime.world import World, WorldObserver
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
        self.usage = dataclasses.replace(base, owners=self._owners, _resolved={})
        self.hpas: dict[str, HorizontalPodAutoscaler] = {}
        self.states: dict[str, HpaState] = {}
        self.history: dict[str, dict[str, Any]] = {}  # key -> counts for the summary
        self.missing_target: set[str] = set()
        self._timer: Timer | None = None
        self._subscribed = False
        self.rescales = 0

    # -- the API server's side -----------------------------------------------------------------
    def apply(self, hpa: HorizontalPodAutoscaler) -> None:
        self.hpas[hpa.key] = hpa
        self.states.setdefault(hpa.key, HpaState())
        if not self._subscribed:  # only scenarios with HPAs pay for the cache's upkeep
            self.world.subscribe(self)
            self._subscribed = True

    def delete(self, key: str) -> bool:
        self.states.pop(key, None)
        return self.hpas.pop(key, None) is not None

    def delete_namespace(self, namespace: str) -> None:
        for key in [k for k, h in self.hpas.items() if h.namespace == namespace]:
            self.delete(key)

    def start(self) -> None:
        """Warm start: each HPA's window holds its current count; the first sync one period on."""
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
        pods = [
            p for p in self.world.pods() if p.namespace == hpa.namespace and target.selector.matches(p.labels)
        ]
        samples = self._samples(hpa, pods, now)
        decision = self.states[hpa.key].reconcile(hpa, current, samples, now, self.settings)
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

    def _samples(
        self, hpa: HorizontalPodAutoscaler, pods: list[Pod], now: float
    ) -> dict[str, list[PodSample]]:
        """The pods as each metric's resource sees them (request and usage differ per resource)."""
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
                    value = self._usage(pod, resource, t, request, fallback.get(resource))
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

    def _usage(self, pod: Pod, resource: str, t: float, request: int, status: ResourceMetric | None) -> int:
        series = key = None
        for name, found, jitter_key in self.usage.resolve(pod):
            if name == resource:
                series, key = found, jitter_key
        if series is not None:
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
    def pod_removed(self, pod: Pod) -> None:
        self.usage.forget(pod.uid)

    def _owners(self, pod: Pod) -> Iterable[tuple[str, str]]:
        ref = pod.meta.controller
        if ref is None:
            return ()
        owners = [(ref.kind, ref.name)]
        workload = self.world.workloads.get(f"{ref.kind}/{pod.namespace}/{ref.name}")
        parent = workload.meta.controller if workload is not None else None
        if parent is not None:
            owners.append((parent.kind, parent.name))
        return owners

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
