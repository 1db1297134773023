"""Crane's NodeQOS, AvoidanceAction and PodQOS from the wire schema (qos/wire.py), built here into
what parse_nodeqos, parse_avoidance_action and parse_podqos make (qos/config.py, qos/podqos.py).
Anything the API server would not have written makes the build decline, and the Reader's parser
reads the object, which alone words errors.

These values keep where they were written (an Origin: file, object, field), so that references
checked later between objects (QosConfig.build) still name the field: they are built from a
Reader's position, i.e. converted from parsed values (`msgspec.convert`), YAML or JSON alike. A
node's configuration is a handful of objects, so decoding a JSON List's items straight into the
Structs (which knows no position) would save nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import msgspec

from kubetide.errors import ManifestError
from kubetide.model.reader import INT64_MAX, Reader
from kubetide.model.selectors import LabelSelector, parse_label_selector
from kubetide.model.typed import Declined, typed_meta
from kubetide.qos.config import (
    DEFAULT_COOL_DOWN,
    DEFAULT_MIN_CPU_RATIO,
    DEFAULT_STEP_CPU_RATIO,
    STRATEGIES,
    AvoidanceAction,
    CpuThrottle,
    NodeQOS,
    Rule,
    parse_avoidance_action,
    parse_metric_rule,
    parse_nodeqos,
)
from kubetide.qos.manifest import API_GROUP, Origin
from kubetide.qos.podqos import (
    PRIORITY_SCOPE,
    QOS_CLASS_SCOPE,
    QOS_CLASSES,
    SCOPE_OPERATORS,
    SCOPES,
    PodQOS,
    PriorityRange,
    ScopeRequirement,
    parse_podqos,
    parse_priority,
)
from kubetide.qos.wire import AvoidanceActionWire, NodeQOSWire, PodQOSWire, RuleWire, ScopeRequirementWire

W = TypeVar("W", NodeQOSWire, AvoidanceActionWire, PodQOSWire)
T = TypeVar("T")


def _parser(
    wire_type: type[W], build: Callable[[W, Reader], T], fallback: Callable[[Reader], T]
) -> Callable[[Reader], T]:
    """parse(Reader) -> the value: converted into the Struct and built where the Reader stands,
    else `fallback(reader)`."""

    def parse(reader: Reader) -> T:
        try:
            return build(msgspec.convert(reader.data, wire_type), reader)
        except (msgspec.MsgspecError, Declined, ManifestError):
            return fallback(reader)

    return parse


def _check_api_version(version: str | None) -> None:
    if version is not None and version.split("/")[0] != API_GROUP:
        raise Declined


def _selector(selector: Any, path: str) -> LabelSelector | None:
    return None if selector is None else parse_label_selector(Reader(selector, "", "", path))


def _in_range(value: int | None, default: int, low: int, high: int) -> int:
    if value is None:
        return default
    if not low <= value <= high:
        raise Declined
    return value


def _threshold(value: int | None) -> int:
    return _in_range(value, 1, 0, INT64_MAX) or 1  # 0 is Go's "unset": crane defaults it to 1


def _rule(wire: RuleWire, origin: Origin) -> Rule:
    strategy = "None" if wire.strategy is None else wire.strategy
    if strategy not in STRATEGIES:
        raise Declined
    metric_rule = {"name": wire.metric_rule.name, "value": wire.metric_rule.value}
    metric, raw, watermark = parse_metric_rule(Reader(metric_rule, origin.source, origin.location))
    return Rule(
        name=wire.name,
        action_name=wire.action_name,
        metric=metric,
        raw_value=raw,
        watermark=watermark,
        avoidance_threshold=_threshold(wire.avoidance_threshold),
        restore_threshold=_threshold(wire.restore_threshold),
        strategy=strategy,
        origin=origin,
    )


def _nodeqos(wire: NodeQOSWire, reader: Reader) -> NodeQOS:
    _check_api_version(wire.api_version)
    meta = typed_meta(wire.metadata, "NodeQOS", namespaced=False)
    spec = wire.spec
    if spec is None:
        return NodeQOS(meta.name, (), None, Origin(reader.source, reader.location, reader.path))
    if spec.rules is not None and spec.objective_ensurances is not None:
        raise Declined
    key = "objectiveEnsurances" if spec.objective_ensurances is not None else "rules"
    rules: list[Rule] = []
    for index, item in enumerate(spec.objective_ensurances or spec.rules or ()):
        rule = _rule(item, Origin(reader.source, reader.location, f"spec.{key}[{index}]"))
        if any(r.name == rule.name for r in rules):
            raise Declined
        rules.append(rule)
    selector = _selector(spec.selector, "spec.selector")
    return NodeQOS(meta.name, tuple(rules), selector, Origin(reader.source, reader.location, reader.path))


def _avoidance_action(wire: AvoidanceActionWire, reader: Reader) -> AvoidanceAction:
    _check_api_version(wire.api_version)
    meta = typed_meta(wire.metadata, "AvoidanceAction", namespaced=False)
    spec = wire.spec
    cool_down = _in_range(spec.cool_down_seconds if spec else None, DEFAULT_COOL_DOWN, 0, INT64_MAX)
    throttle = None
    if spec is not None and spec.throttle is not None:
        cpu = spec.throttle.cpu_throttle
        throttle = CpuThrottle(
            min_cpu_ratio=_in_range(cpu.min_cpu_ratio if cpu else None, DEFAULT_MIN_CPU_RATIO, 0, 100),
            step_cpu_ratio=_in_range(cpu.step_cpu_ratio if cpu else None, DEFAULT_STEP_CPU_RATIO, 0, 100),
        )
    eviction = spec.eviction if spec else None
    grace = None
    if eviction is not None and eviction.termination_grace_period_seconds is not None:
        grace = _in_range(eviction.termination_grace_period_seconds, 0, 0, INT64_MAX)
    origin = Origin(reader.source, reader.location, reader.path)
    return AvoidanceAction(meta.name, cool_down, throttle, eviction is not None, grace, origin)


def _scope_requirement(wire: ScopeRequirementWire) -> ScopeRequirement:
    if wire.scope_name not in SCOPES or wire.operator not in SCOPE_OPERATORS or not wire.values:
        raise Declined
    values = tuple(wire.values)
    priorities: tuple[PriorityRange, ...] = ()
    if wire.scope_name == PRIORITY_SCOPE:
        anywhere = Reader({}, "")
        priorities = tuple(parse_priority(anywhere, "values", value) for value in values)
    if wire.scope_name == QOS_CLASS_SCOPE and any(value not in QOS_CLASSES for value in values):
        raise Declined
    return ScopeRequirement(wire.scope_name, wire.operator, values, priorities)


def _podqos(wire: PodQOSWire, reader: Reader) -> PodQOS:
    _check_api_version(wire.api_version)
    meta = typed_meta(wire.metadata, "PodQOS", namespaced=False)
    spec = wire.spec
    actions = tuple(spec.allowed_actions or ()) if spec else ()
    label_selector = _selector(spec.label_selector if spec else None, "spec.labelSelector")
    scope_selector = spec.scope_selector if spec else None
    expressions = (scope_selector.match_expressions if scope_selector else None) or ()
    scope = tuple(_scope_requirement(expression) for expression in expressions)
    return PodQOS(
        meta.name, actions, label_selector, scope, Origin(reader.source, reader.location, reader.path)
    )


parse_nodeqos_typed = _parser(NodeQOSWire, _nodeqos, parse_nodeqos)
parse_avoidance_action_typed = _parser(AvoidanceActionWire, _avoidance_action, parse_avoidance_action)
parse_podqos_typed = _parser(PodQOSWire, _podqos, parse_podqos)
