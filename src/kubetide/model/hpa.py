"""HorizontalPodAutoscaler (autoscaling/v2), as `kubectl get hpa -o yaml` prints it.

Only what the simulated HPA controller reads (sim/runtime/hpa.py, workloads/hpa.py): the target, the
bounds, Resource metrics (cpu, memory; Utilization or AverageValue), `behavior` with the API
server's defaults filled in, and the status the controller last wrote. Other metric types (Pods,
Object, External, ContainerResource) are kept as names only: the simulator has no source for
them, and the controller treats a metric it cannot read as upstream does (sim/runtime/hpa.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from kubetide.model.meta import KindKeyedIdentity, ObjectMeta, parse_meta
from kubetide.model.quantity import CPU, MEMORY, QuantityError, parse_quantity, parse_resource
from kubetide.model.reader import Reader
from kubetide.model.validation import int32_problem, path_segment_problem

# The API server's defaults (pkg/apis/autoscaling/v2/defaults.go): scale up by 100% or 4 pods per
# 15 s, whichever is more, at once; scale down by up to 100% per 15 s after the downscale window.
DEFAULT_CPU_UTILIZATION = 80
SELECT_POLICIES = ("Max", "Min", "Disabled")
POLICY_TYPES = ("Pods", "Percent")
# spec.metrics[].type -> the field holding its source (the API server wants that one, no other)
METRIC_SOURCES = {
    "Object": "object",
    "Pods": "pods",
    "Resource": "resource",
    "ContainerResource": "containerResource",
    "External": "external",
}
TARGET_TYPES = ("Utilization", "Value", "AverageValue")


@dataclass(frozen=True, slots=True)
class ScalingPolicy:
    type: str  # Pods | Percent
    value: int
    period_seconds: int


@dataclass(frozen=True, slots=True)
class ScalingRules:
    """One direction of spec.behavior. `stabilization_window` None: the controller's flag
    (--horizontal-pod-autoscaler-downscale-stabilization) decides, as upstream for scaleDown."""

    stabilization_window: int | None
    select_policy: str
    policies: tuple[ScalingPolicy, ...]
    tolerance: float | None = None  # None: --horizontal-pod-autoscaler-tolerance


DEFAULT_SCALE_UP = ScalingRules(0, "Max", (ScalingPolicy("Pods", 4, 15), ScalingPolicy("Percent", 100, 15)))
DEFAULT_SCALE_DOWN = ScalingRules(None, "Max", (ScalingPolicy("Percent", 100, 15),))


@dataclass(frozen=True, slots=True)
class Behavior:
    scale_up: ScalingRules
    scale_down: ScalingRules


@dataclass(frozen=True, slots=True)
class ResourceMetric:
    """A Resource metric: `utilization` (percent of requests) or `average_value` (cpu in
    millicores, memory in bytes) per pod."""

    resource: str
    utilization: int | None = None
    average_value: int | None = None


@dataclass(frozen=True, slots=True)
class HorizontalPodAutoscaler(KindKeyedIdentity):
    kind: ClassVar[str] = "HorizontalPodAutoscaler"
    meta: ObjectMeta
    target_kind: str
    target_name: str
    min_replicas: int
    max_replicas: int
    metrics: tuple[ResourceMetric, ...]
    unsupported_metrics: tuple[str, ...]  # types the simulator cannot read ("External", ...)
    behavior: Behavior | None  # None: v1-style normalisation (no behavior given)
    # status, as the controller last wrote it
    current_replicas: int | None = None
    desired_replicas: int | None = None
    last_scale_time: float | None = None
    # status.currentMetrics of Resource metrics: resource -> (averageUtilization, averageValue)
    current_metrics: tuple[tuple[str, int | None, int | None], ...] = ()

    @property
    def target_key(self) -> str:
        """The target workload's key in the simulator's world ("Deployment/ns/name")."""
        return f"{self.target_kind}/{self.meta.namespace}/{self.target_name}"


def inaction_warning(hpa: HorizontalPodAutoscaler, source: str) -> str | None:
    """A warning for an HPA the simulated controller cannot act on as upstream's would, or None.

    With no metric the simulator can read, every sync fails (upstream's FailedGetPodsMetric and
    kin): the replicas never move. With some, the unreadable ones still stop every scale-down, as
    upstream refuses to scale down while a metric is invalid."""
    if not hpa.unsupported_metrics:
        return None
    kinds = " and ".join(sorted(set(hpa.unsupported_metrics)))
    target = f"{hpa.target_kind} {hpa.namespace}/{hpa.target_name}"
    if not hpa.metrics:
        effect = f"it never scales {target}"
    else:
        effect = f"it scales {target} up on its Resource metrics but never down"
    return (
        f"{source}: HorizontalPodAutoscaler {hpa.meta.key}: the simulator has no source for "
        f"{kinds} metrics: {effect}"
    )


def parse_hpa(reader: Reader) -> HorizontalPodAutoscaler:
    meta = parse_meta(reader, "HorizontalPodAutoscaler", namespaced=True)
    spec = reader.child("spec")
    ref = spec.child("scaleTargetRef")
    kind = ref.str("kind", required=True)
    name = ref.str("name", required=True)
    for key, value in (("kind", kind), ("name", name)):
        problem = path_segment_problem(value)
        if problem is not None:
            raise ref.error(problem, key)
    min_replicas = spec.int("minReplicas", default=1)
    max_replicas = spec.int("maxReplicas", required=True)
    for key, count in (("minReplicas", min_replicas), ("maxReplicas", max_replicas)):
        problem = int32_problem(count)
        if problem is not None:
            raise spec.error(problem, key)
    if min_replicas < 1:
        # 0 only with the alpha HPAScaleToZero feature gate, off unless a cluster turns it on.
        raise spec.error(f"must be at least 1, got {min_replicas}", "minReplicas")
    if max_replicas < min_replicas:
        raise spec.error(f"must be at least minReplicas ({min_replicas}), got {max_replicas}", "maxReplicas")
    metrics: list[ResourceMetric] = []
    unsupported: list[str] = []
    for entry in spec.items("metrics"):
        metric = parse_metric(entry)
        if isinstance(metric, str):
            unsupported.append(metric)
        else:
            metrics.append(metric)
    if not metrics and not unsupported:
        metrics.append(ResourceMetric(CPU, utilization=DEFAULT_CPU_UTILIZATION))
    behavior = parse_behavior(spec.child("behavior")) if spec.has("behavior") else None
    status = reader.child("status")
    current: list[tuple[str, int | None, int | None]] = []
    for entry in status.items("currentMetrics"):
        if entry.str("type", default="") != "Resource":
            continue
        resource = entry.child("resource")
        name_ = resource.str("name", default="")
        if name_ not in (CPU, MEMORY):
            continue
        now = resource.child("current")
        value = now.raw("averageValue")
        current.append(
            (
                name_,
                now.int("averageUtilization"),
                None if value is None else _quantity(now, "averageValue", name_),
            )
        )
    return HorizontalPodAutoscaler(
        meta=meta,
        target_kind=kind,
        target_name=name,
        min_replicas=min_replicas,
        max_replicas=max_replicas,
        metrics=tuple(metrics),
        unsupported_metrics=tuple(unsupported),
        behavior=behavior,
        current_replicas=status.int("currentReplicas"),
        desired_replicas=status.int("desiredReplicas"),
        last_scale_time=status.timestamp("lastScaleTime"),
        current_metrics=tuple(current),
    )


def parse_metric(entry: Reader) -> ResourceMetric | str:
    """One spec.metrics entry, checked as the API server checks it: a Resource metric of cpu or
    memory, or the type of one the simulator has no source for ("Pods", "Resource
    ephemeral-storage")."""
    metric_type = entry.str("type", required=True)
    source = METRIC_SOURCES.get(metric_type)
    if source is None:
        expected = ", ".join(METRIC_SOURCES)
        raise entry.error(f'unsupported metric type "{metric_type}" (expected {expected})', "type")
    if not entry.has(source):
        raise entry.error(f"required for a metric of type {metric_type}", source)
    for other in METRIC_SOURCES.values():
        if other != source and entry.has(other):
            raise entry.error(f"may not be given in a metric of type {metric_type}", other)
    reader = entry.child(source)
    target = reader.child("target")
    _check_target(target)
    if metric_type in ("Resource", "ContainerResource"):
        return _resource_metric(metric_type, reader, target)
    described = reader.child("metric")
    if not described.str("name", required=True):
        raise described.error("must not be empty", "name")
    if metric_type == "Object":
        obj = reader.child("describedObject")
        for key in ("kind", "name"):
            problem = path_segment_problem(obj.str(key, required=True))
            if problem is not None:
                raise obj.error(problem, key)
    if metric_type == "Pods":
        if not target.has("averageValue"):
            raise target.error("required for a Pods metric", "averageValue")
    elif not target.has("value") and not target.has("averageValue"):
        raise target.error(f"required for an {metric_type} metric: value or averageValue", "value")
    if metric_type == "Object" and target.has("value") and target.has("averageValue"):
        raise target.error("may not be given with value", "averageValue")
    return metric_type


def _resource_metric(metric_type: str, reader: Reader, target: Reader) -> ResourceMetric | str:
    resource = reader.str("name", required=True)
    if not resource:  # any other name is taken (the metric then never has a value)
        raise reader.error("must not be empty", "name")
    if metric_type == "ContainerResource" and not reader.str("container", required=True):
        raise reader.error("must not be empty", "container")
    has_utilization, has_value = target.has("averageUtilization"), target.has("averageValue")
    if not has_utilization and not has_value:
        raise target.error("required: a target averageUtilization or averageValue", "averageUtilization")
    if has_utilization and has_value:
        raise target.error("may not be given with averageUtilization", "averageValue")
    if metric_type == "ContainerResource" or resource not in (CPU, MEMORY):
        return f"{metric_type} {resource}"
    # The controller goes by which field is set, whatever the target's type says.
    if has_value:
        return ResourceMetric(resource, average_value=_quantity(target, "averageValue", resource))
    return ResourceMetric(resource, utilization=target.int("averageUtilization", required=True))


def _check_target(target: Reader) -> None:
    """A MetricTarget: its type, and every value given positive (validateMetricTarget)."""
    kind = target.str("type", required=True)
    if kind not in TARGET_TYPES:
        raise target.error(f'expected {", ".join(TARGET_TYPES)}, got "{kind}"', "type")
    for key in ("value", "averageValue"):
        amount = target.quantity(key)
        if amount is not None and amount <= 0:
            raise target.error(f"must be positive, got {target.raw(key)!r}", key)
    utilization = target.int("averageUtilization")
    if utilization is not None:
        problem = int32_problem(utilization)
        if problem is not None:
            raise target.error(problem, "averageUtilization")
        if utilization < 1:
            raise target.error(f"must be positive, got {utilization}", "averageUtilization")


def _quantity(reader: Reader, key: str, resource: str) -> int:
    value = reader.raw(key)
    if value is None:
        raise reader.error("required field is missing", key)
    try:
        return parse_resource(resource, value)
    except QuantityError as exc:
        raise reader.error(str(exc), key) from None


def parse_behavior(reader: Reader) -> Behavior:
    return Behavior(
        _rules(reader, "scaleUp", DEFAULT_SCALE_UP),
        _rules(reader, "scaleDown", DEFAULT_SCALE_DOWN),
    )


def _rules(parent: Reader, key: str, default: ScalingRules) -> ScalingRules:
    """One direction, fields left out taken from the default (as the API server fills them)."""
    if not parent.has(key):
        return default
    reader = parent.child(key)
    window = reader.int("stabilizationWindowSeconds")
    if window is not None and not 0 <= window <= 3600:
        raise reader.error(f"must be from 0 to 3600, got {window}", "stabilizationWindowSeconds")
    select = reader.str("selectPolicy", default="Max")
    if select not in SELECT_POLICIES:
        raise reader.error(f'expected one of {", ".join(SELECT_POLICIES)}, got "{select}"', "selectPolicy")
    policies: list[ScalingPolicy] = []
    if reader.raw("policies") == []:
        raise reader.error(
            "must give at least one policy (or leave policies out for the default)", "policies"
        )
    for entry in reader.items("policies"):
        kind = entry.str("type", required=True)
        if kind not in POLICY_TYPES:
            raise entry.error(f'expected Pods or Percent, got "{kind}"', "type")
        value = entry.int("value", required=True)
        if value <= 0:
            raise entry.error(f"must be positive, got {value}", "value")
        period = entry.int("periodSeconds", required=True)
        if not 0 < period <= 1800:
            raise entry.error(f"must be from 1 to 1800, got {period}", "periodSeconds")
        policies.append(ScalingPolicy(kind, value, period))
    tolerance_text = reader.raw("tolerance")
    tolerance = None
    if tolerance_text is not None:
        try:
            tolerance = float(parse_quantity(tolerance_text))
        except QuantityError as exc:
            raise reader.error(str(exc), "tolerance") from None
        if tolerance < 0:
            raise reader.error("must not be negative", "tolerance")
    return ScalingRules(
        default.stabilization_window if window is None else window,
        select,
        tuple(policies) if reader.has("policies") else default.policies,
        tolerance,
    )
