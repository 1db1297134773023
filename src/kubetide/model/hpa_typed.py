"""HorizontalPodAutoscalers from the wire schema (model/wire_workloads.py), as pods are
(model/pod_typed.py): decoded in C and built here; `behavior` (its defaults, ranges and field
paths) is read by the Reader's own parser. Anything the API server would not have written makes
the build decline, and parse_hpa reads the object through the Reader, which alone words errors."""

from __future__ import annotations

from kubetide.errors import ManifestError
from kubetide.model.hpa import (
    DEFAULT_CPU_UTILIZATION,
    Behavior,
    HorizontalPodAutoscaler,
    ResourceMetric,
    parse_behavior,
    parse_hpa,
)
from kubetide.model.quantity import CPU, MEMORY
from kubetide.model.reader import INT64_MAX, INT64_MIN, Reader
from kubetide.model.typed import Declined, timestamp, typed_meta, units
from kubetide.model.typed_kinds import wire_decoder, wire_parser
from kubetide.model.wire_workloads import HorizontalPodAutoscalerWire, MetricSpecWire


def _int64(value: int | None) -> int | None:
    if value is not None and not INT64_MIN <= value <= INT64_MAX:
        raise Declined
    return value


def _resource_metric(metric: MetricSpecWire) -> ResourceMetric:
    source = metric.resource
    if source is None or source.name not in (CPU, MEMORY):
        raise Declined
    target = source.target
    if target.type == "Utilization":
        utilization = _int64(target.average_utilization)
        if utilization is None or utilization <= 0:
            raise Declined
        return ResourceMetric(source.name, utilization=utilization)
    if target.type == "AverageValue" and target.average_value is not None:
        value = units(source.name, target.average_value)
        if value <= 0:
            raise Declined
        return ResourceMetric(source.name, average_value=value)
    raise Declined


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
    min_replicas = 1 if spec.min_replicas is None else spec.min_replicas
    max_replicas = spec.max_replicas
    for count in (min_replicas, max_replicas):
        _int64(count)
    if min_replicas < 0 or max_replicas < max(min_replicas, 1):
        raise Declined
    metrics: list[ResourceMetric] = []
    unsupported: list[str] = []
    for metric in spec.metrics or ():
        if metric.type == "Resource":
            metrics.append(_resource_metric(metric))
        else:
            unsupported.append(metric.type)
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
