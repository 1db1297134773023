"""PodMetrics and NodeMetrics from the wire schema (qos/wire.py): decoded in C, built here into
what parse_pod_metrics / parse_node_metrics make (qos/state.py). Anything the API server would not
have written (another type, a negative or malformed quantity, a container named twice) makes the
build decline, and the object is read by the Reader's parser, which alone words errors."""

from __future__ import annotations

from kubetide.model.quantity import CPU, MEMORY
from kubetide.model.typed import Declined, timestamp, typed_meta, units
from kubetide.model.typed_kinds import wire_decoder, wire_parser
from kubetide.qos.state import METRICS_API, NodeMetrics, PodMetrics, parse_node_metrics, parse_pod_metrics
from kubetide.qos.wire import NodeMetricsWire, PodMetricsWire


def _usage(amounts: dict[str, str] | None) -> dict[str, int]:
    return {name: units(name, text) for name, text in amounts.items()} if amounts else {}


def _check_api_version(version: str | None) -> None:
    if version is not None and version != METRICS_API:
        raise Declined


def _pod_metrics(wire: PodMetricsWire) -> PodMetrics:
    _check_api_version(wire.api_version)
    meta = typed_meta(wire.metadata, "PodMetrics", namespaced=True)
    total: dict[str, int] = {}
    containers: dict[str, dict[str, int]] = {}
    for container in wire.containers or ():
        if container.name in containers:
            raise Declined
        usage = containers[container.name] = _usage(container.usage)
        for resource, amount in usage.items():
            total[resource] = total.get(resource, 0) + amount
    for resource in (CPU, MEMORY):
        total.setdefault(resource, 0)
    return PodMetrics(meta.namespace, meta.name, total, containers, timestamp(wire.timestamp))


def _node_metrics(wire: NodeMetricsWire) -> NodeMetrics:
    _check_api_version(wire.api_version)
    meta = typed_meta(wire.metadata, "NodeMetrics", namespaced=False)
    return NodeMetrics(meta.name, _usage(wire.usage), timestamp(wire.timestamp))


decode_pod_metrics = wire_decoder(PodMetricsWire, _pod_metrics, "PodMetrics")
decode_node_metrics = wire_decoder(NodeMetricsWire, _node_metrics, "NodeMetrics")
parse_pod_metrics_typed = wire_parser(PodMetricsWire, _pod_metrics, parse_pod_metrics)
parse_node_metrics_typed = wire_parser(NodeMetricsWire, _node_metrics, parse_node_metrics)
