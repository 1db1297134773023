"""The wire schema of the kinds the QoS agent reads: metrics-server's PodMetrics and NodeMetrics
(metrics.k8s.io/v1beta1) and crane's NodeQOS, AvoidanceAction and PodQOS
(ensurance.crane.io/v1alpha1), as msgspec Structs carrying only the fields read, as
model/wire.py does for pods and nodes (see there for what the decoder checks and skips).
Values whose meaning depends on something else (a rule's watermark, read by its metric) and
selectors (read by the Reader's parser, with its field paths) are plain values."""

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


class MetricRuleWire(msgspec.Struct, **_OPTIONS):
    name: str
    value: Any = None  # a percentage or a quantity: its metric reads it


class RuleWire(msgspec.Struct, **_OPTIONS):
    name: str
    action_name: str
    metric_rule: MetricRuleWire
    strategy: str | None = None
    avoidance_threshold: int | None = None
    restore_threshold: int | None = None


class NodeQOSSpecWire(msgspec.Struct, **_OPTIONS):
    rules: list[RuleWire] | None = None
    objective_ensurances: list[RuleWire] | None = None  # the older name of rules
    selector: Any = None


class NodeQOSWire(msgspec.Struct, **_OPTIONS):
    metadata: ObjectMetaWire
    api_version: str | None = None
    spec: NodeQOSSpecWire | None = None
    kind: str = ""


class CpuThrottleWire(msgspec.Struct, **_OPTIONS):
    min_cpu_ratio: int | None = msgspec.field(default=None, name="minCPURatio")
    step_cpu_ratio: int | None = msgspec.field(default=None, name="stepCPURatio")


class ThrottleWire(msgspec.Struct, **_OPTIONS):
    cpu_throttle: CpuThrottleWire | None = None


class EvictionWire(msgspec.Struct, **_OPTIONS):
    termination_grace_period_seconds: int | None = None


class AvoidanceActionSpecWire(msgspec.Struct, **_OPTIONS):
    cool_down_seconds: int | None = None
    throttle: ThrottleWire | None = None
    eviction: EvictionWire | None = None


class AvoidanceActionWire(msgspec.Struct, **_OPTIONS):
    metadata: ObjectMetaWire
    api_version: str | None = None
    spec: AvoidanceActionSpecWire | None = None
    kind: str = ""


class ScopeRequirementWire(msgspec.Struct, **_OPTIONS):
    scope_name: str
    operator: str
    values: list[str] | None = None


class ScopeSelectorWire(msgspec.Struct, **_OPTIONS):
    match_expressions: list[ScopeRequirementWire] | None = None


class PodQOSSpecWire(msgspec.Struct, **_OPTIONS):
    allowed_actions: list[str] | None = None
    label_selector: Any = None
    scope_selector: ScopeSelectorWire | None = None


class PodQOSWire(msgspec.Struct, **_OPTIONS):
    metadata: ObjectMetaWire
    api_version: str | None = None
    spec: PodQOSSpecWire | None = None
    kind: str = ""
