"""The wire schema of the metrics-server kinds the QoS agent reads (metrics.k8s.io/v1beta1
PodMetrics and NodeMetrics): msgspec Structs carrying only the fields read, as model/wire.py does
for pods and nodes (see there for what the decoder checks and skips)."""

from __future__ import annotations

from typing import Any

import msgspec

from kubetide.model.wire import ObjectMetaWire

_OPTIONS: dict[str, Any] = {"frozen": True, "gc": False, "rename": "camel"}


class ContainerMetricsWire(msgspec.Struct, **_OPTIONS):
    name: str
    usage: dict[str, str] | None = None


class PodMetricsWire(msgspec.Struct, **_OPTIONS):
    metadata: ObjectMetaWire
    api_version: str | None = None
    containers: list[ContainerMetricsWire] | None = None
    timestamp: str | None = None
    kind: str = ""


class NodeMetricsWire(msgspec.Struct, **_OPTIONS):
    metadata: ObjectMetaWire
    usage: dict[str, str]
    api_version: str | None = None
    timestamp: str | None = None
    kind: str = ""
