"""The HorizontalPodAutoscaler's arithmetic, as kube-controller-manager does it
(pkg/controller/podautoscaler: replica_calculator.go and horizontal.go), with no clock and no I/O:
the caller passes the time, the pods with their metrics and the state kept between syncs.

One sync of one HPA (`HpaState.reconcile`):
1. outside [minReplicas, maxReplicas] (and not scaled to 0 by hand): straight back in bounds;
2. else each metric proposes a count (`resource_replicas`), the largest wins; a metric that
   cannot be read stops the sync when it is the only one, or when the others propose less than
   now (upstream never scales down on partial metrics);
3. the proposal is stabilised (the highest recommendation of the scale-down window; with
   `behavior`, also the lowest of the scale-up window) and limited by the rate policies, each
   over its periodSeconds of past scale events, combined by selectPolicy;
4. minReplicas / maxReplicas bound it. A change is recorded as a scale event for the policies.

`resource_replicas` is GetResourceReplicas / calcPlainMetricReplicas: pods deleted or Failed are
ignored; Pending ones count as unready; a pod without a metric is missing; for cpu, a pod is unready
while it has not become ready (or became ready less than one metric window before the sample)
within cpuInitializationPeriod of its start, or, after that, when it is not ready and its readiness
never changed since shortly after it started (delayOfInitialReadinessStatus). When nothing is
missing or unready the answer is ceil(ratio x ready pods) unless the ratio is within the tolerance;
otherwise missing pods are taken at 100% of their request (or the target, if higher) on a scale-down
and at 0 on a scale-up, unready pods at 0 on a scale-up, the ratio is recomputed, and a change of
direction or one within the tolerance keeps the current count.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from kubetide.model.hpa import Behavior, HorizontalPodAutoscaler, ResourceMetric, ScalingPolicy, ScalingRules
from kubetide.model.quantity import CPU

# kube-controller-manager's defaults for its HPA flags.
DEFAULT_SYNC_PERIOD = 15.0  # --horizontal-pod-autoscaler-sync-period
DEFAULT_TOLERANCE = 0.1  # --horizontal-pod-autoscaler-tolerance
DEFAULT_DOWNSCALE_STABILIZATION = 300.0  # --horizontal-pod-autoscaler-downscale-stabilization
DEFAULT_CPU_INITIALIZATION_PERIOD = 300.0  # --horizontal-pod-autoscaler-cpu-initialization-period
DEFAULT_INITIAL_READINESS_DELAY = 30.0  # --horizontal-pod-autoscaler-initial-readiness-delay
# Without behavior, a scale-up goes to at most max(2 x current, 4) at once (horizontal.go).
SCALE_UP_LIMIT_FACTOR = 2.0
SCALE_UP_LIMIT_MINIMUM = 4.0


class MetricError(Exception):
    """A metric could not be computed (no pods, no metrics, a missing request)."""


@dataclass(frozen=True, slots=True)
class Settings:
    """The controller's flags."""

    sync_period: float = DEFAULT_SYNC_PERIOD
    tolerance: float = DEFAULT_TOLERANCE
    downscale_stabilization: float = DEFAULT_DOWNSCALE_STABILIZATION
    cpu_initialization_period: float = DEFAULT_CPU_INITIALIZATION_PERIOD
    initial_readiness_delay: float = DEFAULT_INITIAL_READINESS_DELAY


@dataclass(frozen=True, slots=True)
class PodSample:
    """One pod the HPA's selector matches, as the controller sees it at a sync.

    `ready` is None when the pod has no Ready condition; `metric` None when metrics.k8s.io has no
    sample for it (cpu in millicores, memory in bytes); `request` 0 when it requests none."""

    name: str
    phase: str
    deleting: bool = False
    ready: bool | None = True
    ready_transition: float | None = None
    start_time: float | None = None
    request: int = 0
    metric: int | None = None
    metric_time: float = 0.0
    metric_window: float = 0.0


@dataclass(frozen=True, slots=True)
class MetricResult:
    replicas: int
    current: int  # utilization in percent, or the average value


@dataclass(frozen=True, slots=True)
class Tolerances:
    scale_down: float
    scale_up: float

    def within(self, ratio: float) -> bool:
        return 1.0 - self.scale_down <= ratio <= 1.0 + self.scale_up


def tolerances(behavior: Behavior | None, default: float) -> Tolerances:
    if behavior is None:
        return Tolerances(default, default)
    down, up = behavior.scale_down.tolerance, behavior.scale_up.tolerance
    return Tolerances(default if down is None else down, default if up is None else up)


def group_pods(
    pods: list[PodSample], resource: str, now: float, settings: Settings
) -> tuple[int, set[str], set[str], set[str]]:
    """(ready pod count, unready, missing, ignored) as upstream's groupPods sorts them."""
    ready = 0
    unready: set[str] = set()
    missing: set[str] = set()
    ignored: set[str] = set()
    for pod in pods:
        if pod.deleting or pod.phase == "Failed":
            ignored.add(pod.name)
            continue
        if pod.phase == "Pending":
            unready.add(pod.name)
            continue
        if pod.metric is None:
            missing.add(pod.name)
            continue
        if resource == CPU:
            if pod.ready is None or pod.start_time is None:
                is_unready = True
            else:
                transition = pod.ready_transition if pod.ready_transition is not None else pod.start_time
                if pod.start_time + settings.cpu_initialization_period > now:
                    is_unready = not pod.ready or pod.metric_time < transition + pod.metric_window
                else:
                    is_unready = (
                        not pod.ready and pod.start_time + settings.initial_readiness_delay > transition
                    )
            if is_unready:
                unready.add(pod.name)
                continue
        ready += 1
    return ready, unready, missing, ignored


def _utilization_ratio(metrics: dict[str, int], requests: dict[str, int], target: int) -> tuple[float, int]:
    """GetResourceUtilizationRatio: (ratio, utilization in whole percent, truncated as upstream)."""
    total = requested = 0
    for name, value in metrics.items():
        request = requests.get(name)
        if request is None:
            continue
        total += value
        requested += request
    if requested == 0:
        raise MetricError("no metrics returned matched known pods")
    utilization = total * 100 // requested
    return utilization / target, utilization


def _average_ratio(metrics: dict[str, int], target: int) -> tuple[float, int]:
    """GetMetricUsageRatio: (ratio, average per pod, truncated as upstream)."""
    average = sum(metrics.values()) // len(metrics)
    return average / target, average


def resource_replicas(
    metric: ResourceMetric,
    current_replicas: int,
    pods: list[PodSample],
    now: float,
    settings: Settings,
    tolerance: Tolerances,
) -> MetricResult:
    """What one Resource metric proposes; MetricError when it cannot say."""
    if not pods:
        raise MetricError("no pods returned by selector while calculating replica count")
    ready_count, unready, missing, ignored = group_pods(pods, metric.resource, now, settings)
    metrics = {
        p.name: p.metric
        for p in pods
        if p.metric is not None and p.name not in ignored and p.name not in unready
    }
    if not metrics:
        raise MetricError("did not receive metrics for targeted pods (pods might be unready)")
    utilization_target = metric.utilization
    if utilization_target is not None:
        requests = {}
        for pod in pods:
            if pod.name in ignored:
                continue
            if pod.request <= 0:
                raise MetricError(f"missing request for {metric.resource} in pod {pod.name}")
            requests[pod.name] = pod.request

        def ratio_of(values: dict[str, int]) -> tuple[float, int]:
            return _utilization_ratio(values, requests, utilization_target)

        fallback = {name: requests[name] * max(100, utilization_target) // 100 for name in missing}
    else:
        assert metric.average_value is not None
        average_target = metric.average_value

        def ratio_of(values: dict[str, int]) -> tuple[float, int]:
            return _average_ratio(values, average_target)

        fallback = dict.fromkeys(missing, average_target)
    ratio, current = ratio_of(metrics)
    scale_up_with_unready = bool(unready) and ratio > 1.0
    if not scale_up_with_unready and not missing:
        if tolerance.within(ratio):
            return MetricResult(current_replicas, current)
        return MetricResult(math.ceil(ratio * ready_count), current)
    if missing:
        if ratio < 1.0:
            metrics.update(fallback)  # a scale-down counts missing pods at their full share
        elif ratio > 1.0:
            metrics.update(dict.fromkeys(missing, 0))  # a scale-up counts them at nothing
    if scale_up_with_unready:
        metrics.update(dict.fromkeys(unready, 0))
    new_ratio, _ = ratio_of(metrics)
    if tolerance.within(new_ratio) or (ratio < 1.0 < new_ratio) or (ratio > 1.0 > new_ratio):
        return MetricResult(current_replicas, current)
    replicas = math.ceil(new_ratio * len(metrics))
    if (new_ratio < 1.0 and replicas > current_replicas) or (new_ratio > 1.0 and replicas < current_replicas):
        return MetricResult(current_replicas, current)
    return MetricResult(replicas, current)


def _reason(metric: ResourceMetric, *, above: bool) -> str:
    """The reason upstream's SuccessfulRescale event gives."""
    if not above:
        return "All metrics below target"
    kind = " utilization (percentage of request)" if metric.utilization is not None else ""
    return f"{metric.resource} resource{kind} above target"


# -- between syncs: recommendations and scale events ------------------------------------------


@dataclass(slots=True)
class _Timestamped:
    value: int
    time: float
    outdated: bool = False


def _change_in_period(events: list[_Timestamped], period: float, now: float) -> int:
    cutoff = now - period
    return sum(e.value for e in events if e.time > cutoff)


def _replicas_at_period_start(
    current: int, up: list[_Timestamped], down: list[_Timestamped], period: float, now: float
) -> int:
    """The replica count at the start of a policy's period: the changes within it undone."""
    return current - _change_in_period(up, period, now) + _change_in_period(down, period, now)


def _limit_by_policies(
    current: int,
    up: list[_Timestamped],
    down: list[_Timestamped],
    rules: ScalingRules,
    now: float,
    propose: Callable[[int, ScalingPolicy], int],
    *,
    scaling_up: bool,
) -> int:
    """What the policies allow now: each proposes a count from the replicas at the start of its
    period; selectPolicy Min takes the proposal that changes the least, Max the most."""
    if rules.select_policy == "Disabled":
        return current
    least, most = (min, max) if scaling_up else (max, min)
    pick = least if rules.select_policy == "Min" else most
    proposals = [
        propose(_replicas_at_period_start(current, up, down, policy.period_seconds, now), policy)
        for policy in rules.policies
    ]
    return pick(proposals) if proposals else current


def _scale_up_proposal(start: int, policy: ScalingPolicy) -> int:
    if policy.type == "Pods":
        return start + policy.value
    return math.ceil(start * (1 + policy.value / 100))  # rounded up, or a small Percent would never add a pod


def _scale_down_proposal(start: int, policy: ScalingPolicy) -> int:
    if policy.type == "Pods":
        return start - policy.value
    return int(start * (1 - policy.value / 100))  # truncated, as upstream's int32 conversion


def scale_up_limit(
    current: int, up: list[_Timestamped], down: list[_Timestamped], rules: ScalingRules, now: float
) -> int:
    """calculateScaleUpLimitWithScalingRules: the most replicas the policies allow now."""
    return _limit_by_policies(current, up, down, rules, now, _scale_up_proposal, scaling_up=True)


def scale_down_limit(
    current: int, up: list[_Timestamped], down: list[_Timestamped], rules: ScalingRules, now: float
) -> int:
    """calculateScaleDownLimitWithBehaviors: the fewest replicas the policies allow now."""
    return _limit_by_policies(current, up, down, rules, now, _scale_down_proposal, scaling_up=False)


@dataclass
class Decision:
    desired: int
    reason: str  # why this count: the metric's, or the limit that bounded it
    metrics: dict[str, int] = field(default_factory=dict)  # resource -> current (percent or value)
    error: str = ""  # a metric that could not be read


@dataclass
class HpaState:
    """What the controller keeps in memory per HPA between syncs (lost when it restarts)."""

    recommendations: list[_Timestamped] = field(default_factory=list)
    scale_up_events: list[_Timestamped] = field(default_factory=list)
    scale_down_events: list[_Timestamped] = field(default_factory=list)

    def reconcile(
        self,
        hpa: HorizontalPodAutoscaler,
        current: int,
        pods: list[PodSample] | Mapping[str, list[PodSample]],
        now: float,
        settings: Settings,
        memo: dict[tuple[str, int], MetricResult | str] | None = None,
    ) -> Decision:
        """One sync: the replica count the HPA sets now (== current: no change). `pods` are the
        target's pods, or per resource (a pod's request and metric differ per resource).

        `memo` (the caller's, per HPA) keeps each metric's result by (resource, current count):
        pass the same dict only while the pods and their metrics read the same as when it was
        filled (the simulator's HPA controller checks that), else a new one."""
        minimum = hpa.min_replicas
        if current == 0 and minimum != 0:
            return Decision(0, "ScalingDisabled")
        if current > hpa.max_replicas:
            return self._record(
                current, hpa.max_replicas, hpa, "Current number of replicas above Spec.MaxReplicas", now
            )
        if current < minimum:
            return self._record(
                current, minimum, hpa, "Current number of replicas below Spec.MinReplicas", now
            )
        proposal, reason, readings, error = self._from_metrics(hpa, current, pods, now, settings, memo)
        if proposal < 0:
            return Decision(current, "FailedGetResourceMetric", readings, error)
        if hpa.behavior is None:
            desired = self._normalize(hpa, current, proposal, now, settings)
        else:
            desired = self._normalize_with_behavior(hpa, hpa.behavior, current, proposal, now, settings)
        decision = self._record(current, desired, hpa, reason, now)
        decision.metrics, decision.error = readings, error
        return decision

    def warm_start(self, current: int, now: float) -> None:
        """A controller that has been running: its downscale window holds the current count."""
        self.recommendations.append(_Timestamped(current, now))

    def _from_metrics(
        self,
        hpa: HorizontalPodAutoscaler,
        current: int,
        pods: list[PodSample] | Mapping[str, list[PodSample]],
        now: float,
        settings: Settings,
        memo: dict[tuple[str, int], MetricResult | str] | None = None,
    ) -> tuple[int, str, dict[str, int], str]:
        """computeReplicasForMetrics: (proposal or -1, reason, readings, first error)."""
        tolerance = tolerances(hpa.behavior, settings.tolerance)
        best, reason, invalid, error = 0, "", len(hpa.unsupported_metrics), ""
        if invalid:
            error = f"no source for {hpa.unsupported_metrics[0]} metrics in the simulator"
        readings: dict[str, int] = {}
        for metric in hpa.metrics:
            found = None if memo is None else memo.get((metric.resource, current))
            if found is None:
                try:
                    samples = pods if isinstance(pods, list) else pods.get(metric.resource, [])
                    found = resource_replicas(metric, current, samples, now, settings, tolerance)
                except MetricError as exc:
                    found = str(exc)
                if memo is not None:
                    memo[(metric.resource, current)] = found
            if isinstance(found, str):
                invalid += 1
                error = error or f"{metric.resource}: {found}"
                continue
            result = found
            readings[metric.resource] = result.current
            if result.replicas > best:
                best = result.replicas
                reason = _reason(metric, above=result.replicas > current)
        total = len(hpa.metrics) + len(hpa.unsupported_metrics)
        if invalid >= total or (invalid and best < current):
            return -1, "", readings, error
        return best, reason or "All metrics below target", readings, error

    def _normalize(
        self, hpa: HorizontalPodAutoscaler, current: int, proposal: int, now: float, settings: Settings
    ) -> int:
        """normalizeDesiredReplicas: the downscale window's highest, then max(2x, 4) and bounds."""
        stabilized = proposal
        cutoff = now - settings.downscale_stabilization
        old: _Timestamped | None = None
        for rec in self.recommendations:
            if rec.time < cutoff:
                old = rec
            elif rec.value > stabilized:
                stabilized = rec.value
        if old is not None:
            old.value, old.time = proposal, now
        else:
            self.recommendations.append(_Timestamped(proposal, now))
        up_limit = int(max(SCALE_UP_LIMIT_FACTOR * current, SCALE_UP_LIMIT_MINIMUM))
        maximum = min(hpa.max_replicas, up_limit)
        return min(max(stabilized, hpa.min_replicas), maximum)

    def _normalize_with_behavior(
        self,
        hpa: HorizontalPodAutoscaler,
        behavior: Behavior,
        current: int,
        proposal: int,
        now: float,
        settings: Settings,
    ) -> int:
        """normalizeDesiredReplicasWithBehaviors: stabilise in both windows, then the rates."""
        up_window = behavior.scale_up.stabilization_window or 0
        down_window = behavior.scale_down.stabilization_window
        if down_window is None:
            down_window = int(settings.downscale_stabilization)
        if down_window > 0 and not self.recommendations:
            # maybeInitScaleDownStabilizationWindow: a fresh controller starts its window at
            # the current count, so it does not scale down the moment it starts.
            self.recommendations.append(_Timestamped(current, now))
        up_cutoff, down_cutoff = now - up_window, now - down_window
        up_rec = down_rec = proposal
        old: _Timestamped | None = None
        for rec in self.recommendations:
            if rec.time > up_cutoff:
                up_rec = min(rec.value, up_rec)
            if rec.time > down_cutoff:
                down_rec = max(rec.value, down_rec)
            if rec.time < up_cutoff and rec.time < down_cutoff:
                old = rec
        stabilized = min(max(current, up_rec), down_rec)
        if old is not None:
            old.value, old.time = proposal, now
        else:
            self.recommendations.append(_Timestamped(proposal, now))
        if stabilized > current:
            limit = max(
                scale_up_limit(current, self.scale_up_events, self.scale_down_events, behavior.scale_up, now),
                current,
            )
            return min(stabilized, hpa.max_replicas, limit)
        if stabilized < current:
            limit = min(
                scale_down_limit(
                    current, self.scale_up_events, self.scale_down_events, behavior.scale_down, now
                ),
                current,
            )
            return max(stabilized, hpa.min_replicas, limit)
        return stabilized

    def _record(
        self, current: int, desired: int, hpa: HorizontalPodAutoscaler, reason: str, now: float
    ) -> Decision:
        """storeScaleEvent: a change is kept for the rate policies (only with behavior)."""
        if desired != current and hpa.behavior is not None:
            if desired > current:
                events, rules, change = self.scale_up_events, hpa.behavior.scale_up, desired - current
            else:
                events, rules, change = self.scale_down_events, hpa.behavior.scale_down, current - desired
            longest = max((p.period_seconds for p in rules.policies), default=0)
            for event in events:
                event.outdated = event.time + longest < now
            for event in events:
                if event.outdated:
                    event.value, event.time, event.outdated = change, now, False
                    break
            else:
                events.append(_Timestamped(change, now))
        return Decision(desired, reason)
