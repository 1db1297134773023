"""HorizontalPodAutoscalers from the wire schema (model/wire_workloads.py), as pods are
(model/pod_typed.py): decoded in C and built here; `behavior` (its defaults, ranges and field
paths) is read by the Reader's own parser. Anything the API server would not have written makes
the build decline, and parse_hpa reads the object through the Reader, which alone words errors."""

from __future__ import annotations

from kubetide.errors import ManifestError
from kubetide.model.hpa import (
    DEFAULT_CPU_UTILIZATION,
    TARGET_TYPES,
    Behavior,
    HorizontalPodAutoscaler,
    ResourceMetric,
    parse_behavior,
    parse_hpa,
    parse_metric,
)
from kubetide.model.quantity import CPU, MEMORY
from kubetide.model.reader import INT64_MAX, INT64_MIN, Reader
from kubetide.model.typed import Declined, timestamp, typed_meta, units
from kubetide.model.typed_kinds import wire_decoder, wire_parser
from kubetide.model.validation import int32_problem, path_segment_problem
from kubetide.model.wire_workloads import HorizontalPodAutoscalerWire, MetricSpecWire


def _int64(value: int | None) -> int | None:
    if value is not None and not INT64_MIN <= value <= INT64_MAX:
        raise Declined
    return value


def _resource_metric(metric: MetricSpecWire) -> ResourceMetric:
    """A Resource metric of cpu or memory as the API server writes one; anything else (another
    metric type, whose source the Reader checks, or a target it would refuse) declines."""
    source = metric.resource
    if (
        metric.type != "Resource"
        or source is None
        or source.name not in (CPU, MEMORY)
        or any(
            x is not None for x in (metric.pods, metric.object, metric.external, metric.container_resource)
        )
    ):
        raise Declined
    target = source.target
    if target.type not in TARGET_TYPES or target.value is not None:
        raise Declined
    utilization, value = target.average_utilization, target.average_value
    if (utilization is None) == (value is None):
        raise Declined
    if utilization is not None:
        if utilization < 1 or int32_problem(utilization) is not None:
            raise Declined
        return ResourceMetric(source.name, utilization=utilization)
    assert value is not None
    amount = units(source.name, value)
    if amount <= 0:
        raise Declined
    return ResourceMetric(source.name, average_value=amount)


def _other_metric(metric: MetricSpecWire) -> str:
    """A metric of a type the simulator has no source for, checked by the Reader's own parser
    (its sources are kept as plain values): what parse_hpa lists it as."""
    if metric.resource is not None:
        raise Declined  # a second source: the Reader words the API server's refusal
    sources = {
        "pods": metric.pods,
        "object": metric.object,
        "external": metric.external,
        "containerResource": metric.container_resource,
    }
    entry = {"type": metric.type, **{key: value for key, value in sources.items() if value is not None}}
    try:
        found = parse_metric(Reader(entry, "", "", "spec.metrics"))
    except ManifestError:
        raise Declined from None
    if not isinstance(found, str):
        raise Declined
    return found


def _behavior_of(behavior: object) -> Behavior | None:
    if behavior is None:
        return None
    try:
        return parse_behavior(Reader(behavior, "", "", "spec.behavior"))
    except ManifestError:
        raise Declined from None


def _hpa(wire: HorizontalPodAutoscalerWire) -> HorizontalPodAutoscaler:
    meta = typed_meta(wire.metadata, "HorizontalPodAutoscaler", namespaced=True)
    spec = wire.spec
    ref = spec.scale_target_ref
    if path_segment_problem(ref.kind) is not None or path_segment_problem(ref.name) is not None:
        raise Declined
    min_replicas = 1 if spec.min_replicas is None else spec.min_replicas
    max_replicas = spec.max_replicas
    for count in (min_replicas, max_replicas):
        if int32_problem(count) is not None:
            raise Declined
    if min_replicas < 1 or max_replicas < min_replicas:
        raise Declined
    metrics: list[ResourceMetric] = []
    unsupported: list[str] = []
    for metric in spec.metrics or ():
        if metric.type == "Resource":
            metrics.append(_resource_metric(metric))
        else:
            unsupported.append(_other_metric(metric))
    if not metrics and not unsupported:
        metrics.append(ResourceMetric(CPU, utilization=DEFAULT_CPU_UTILIZATION))
    behavior = _behavior_of(spec.behavior)
    status = wire.status
    current: list[tuple[str, int | None, int | None]] = []
    for entry in (status.current_metrics if status else None) or ():
        source = entry.resource
        if entry.type != "Resource" or source is None or source.name not in (CPU, MEMORY):
            continue
        now = source.current
        value = now.average_value if now else None
        current.append(
            (
                source.name,
                _int64(now.average_utilization) if now else None,
                None if value is None else units(source.name, value),
            )
        )
    return HorizontalPodAutoscaler(
        meta=meta,
        target_kind=spec.scale_target_ref.kind,
        target_name=spec.scale_target_ref.name,
        min_replicas=min_replicas,
        max_replicas=max_replicas,
        metrics=tuple(metrics),
        unsupported_metrics=tuple(unsupported),
        behavior=behavior,
        current_replicas=_int64(status.current_replicas) if status else None,
        desired_replicas=_int64(status.desired_replicas) if status else None,
        last_scale_time=timestamp(status.last_scale_time) if status else None,
        current_metrics=tuple(current),
    )


decode_hpa = wire_decoder(HorizontalPodAutoscalerWire, _hpa, "HorizontalPodAutoscaler")
parse_hpa_typed = wire_parser(HorizontalPodAutoscalerWire, _hpa, parse_hpa)
