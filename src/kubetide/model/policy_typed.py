"""PodDisruptionBudgets, Namespaces and PriorityClasses from the wire schema (model/wire.py), as pods and nodes are
(model/pod_typed.py): decoded in C, built into the model's values here. Anything the API server
would not have written makes the decode return None, and the loader reads the object through
the Reader (parse_pdb, parse_namespace, parse_priority_class), which alone words errors. Already-parsed
objects (YAML, JSON read whole) are converted into the same Structs (`parse_*_typed`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import msgspec

from kubetide.errors import ManifestError
from kubetide.model.policy import (
    Namespace,
    PodDisruptionBudget,
    PriorityClass,
    parse_namespace,
    parse_pdb,
    parse_priority_class,
)
from kubetide.model.reader import INT64_MAX, INT64_MIN, Reader
from kubetide.model.selectors import optional_label_selector
from kubetide.model.typed import Declined, label, typed_meta
from kubetide.model.validation import percent_problem
from kubetide.model.wire import (
    NamespaceWire,
    PodDisruptionBudgetSpecWire,
    PodDisruptionBudgetWire,
    PriorityClassWire,
)

_NO_SPEC = PodDisruptionBudgetSpecWire()
_EVICTION_POLICIES = ("IfHealthyBudget", "AlwaysAllow")
# parse_priority_class's range for a value (system- classes may go beyond it)
_USER_PRIORITY_MIN, _USER_PRIORITY_MAX = -(2**31), 10**9
W = TypeVar("W", NamespaceWire, PriorityClassWire, PodDisruptionBudgetWire)
T = TypeVar("T")


def _decoder(
    wire_type: type[W], build: Callable[[W], T | None], kind: str
) -> Callable[..., tuple[T, str] | None]:
    """decode(JSON text) -> (the object, the loader's name for it), or None when the text is not
    as the API server writes it: the loader then reads it through the Reader."""
    decoder = msgspec.json.Decoder(wire_type)

    def decode(text: bytes | str | msgspec.Raw) -> tuple[T, str] | None:
        try:
            wire = decoder.decode(text)
        except msgspec.MsgspecError:
            return None
        built = build(wire)
        return None if built is None else (built, label(kind, wire.metadata))

    return decode


def _parser(
    wire_type: type[W], build: Callable[[W], T | None], fallback: Callable[[Reader], T]
) -> Callable[[Reader], T]:
    """parse(Reader) -> the object: an already-parsed one converted into the Struct and built,
    else `fallback` (the Reader's parser, which alone words errors)."""

    def parse(reader: Reader) -> T:
        try:
            wire = msgspec.convert(reader.data, wire_type)
        except msgspec.MsgspecError:
            return fallback(reader)
        built = build(wire)
        return fallback(reader) if built is None else built

    return parse


def _namespace(wire: NamespaceWire) -> Namespace | None:
    try:
        meta = typed_meta(wire.metadata, "Namespace", namespaced=False)
    except Declined:
        return None
    meta.labels.setdefault("kubernetes.io/metadata.name", meta.name)
    return Namespace(meta)


def _priority_class(wire: PriorityClassWire) -> PriorityClass | None:
    try:
        meta = typed_meta(wire.metadata, "PriorityClass", namespaced=False)
    except Declined:
        return None
    value = wire.value
    if not INT64_MIN <= value <= INT64_MAX:
        return None
    if not _USER_PRIORITY_MIN <= value <= _USER_PRIORITY_MAX and not meta.name.startswith("system-"):
        return None
    policy = "PreemptLowerPriority" if wire.preemption_policy is None else wire.preemption_policy
    return PriorityClass(
        meta=meta, value=value, global_default=bool(wire.global_default), preemption_policy=policy
    )


def _pdb(wire: PodDisruptionBudgetWire) -> PodDisruptionBudget | None:
    try:
        meta = typed_meta(wire.metadata, "PodDisruptionBudget", namespaced=True)
    except Declined:
        return None
    spec = wire.spec or _NO_SPEC
    # The budget and selector (a few fields) through the Reader's own readers, so their lenient
    # forms ("30%", "3") mean the same; any error sends the whole object to parse_pdb to be worded.
    given = {
        "minAvailable": spec.min_available,
        "maxUnavailable": spec.max_unavailable,
        "selector": spec.selector,
    }
    spec_reader = Reader({key: value for key, value in given.items() if value is not None}, "", "", "spec")
    try:
        min_available = spec_reader.int_or_percent("minAvailable")
        max_unavailable = spec_reader.int_or_percent("maxUnavailable")
        selector = optional_label_selector(spec_reader, "selector")
    except ManifestError:
        return None
    for value in (min_available, max_unavailable):
        if value is not None and percent_problem(value) is not None:
            return None
    if min_available is not None and max_unavailable is not None:
        return None
    policy = (
        "IfHealthyBudget"
        if spec.unhealthy_pod_eviction_policy is None
        else spec.unhealthy_pod_eviction_policy
    )
    if policy not in _EVICTION_POLICIES:
        return None
    status = wire.status
    counts = (
        (status.disruptions_allowed, status.current_healthy, status.desired_healthy, status.expected_pods)
        if status is not None
        else (None, None, None, None)
    )
    if any(count is not None and not INT64_MIN <= count <= INT64_MAX for count in counts):
        return None
    return PodDisruptionBudget(
        meta=meta,
        selector=selector,
        min_available=min_available,
        max_unavailable=max_unavailable,
        unhealthy_pod_eviction_policy=policy,
        disruptions_allowed=counts[0],
        current_healthy=counts[1],
        desired_healthy=counts[2],
        expected_pods=counts[3],
    )


decode_namespace = _decoder(NamespaceWire, _namespace, "Namespace")
decode_priority_class = _decoder(PriorityClassWire, _priority_class, "PriorityClass")
decode_pdb = _decoder(PodDisruptionBudgetWire, _pdb, "PodDisruptionBudget")
parse_namespace_typed = _parser(NamespaceWire, _namespace, parse_namespace)
parse_priority_class_typed = _parser(PriorityClassWire, _priority_class, parse_priority_class)
parse_pdb_typed = _parser(PodDisruptionBudgetWire, _pdb, parse_pdb)
