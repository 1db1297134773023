"""PodDisruptionBudgets, Namespaces and PriorityClasses from the wire schema (model/wire.py), as pods and nodes are
(model/pod_typed.py): decoded in C, built into the model's values here. Anything the API server
would not have written makes the decode return None, and the loader reads the object through
the Reader (parse_pdb, parse_namespace, parse_priority_class), which alone words errors. Already-parsed
objects (YAML, JSON read whole) are converted into the same Structs (`parse_*_typed`)."""

from __future__ import annotations

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

_NAMESPACE_DECODER = msgspec.json.Decoder(NamespaceWire)
_PRIORITY_CLASS_DECODER = msgspec.json.Decoder(PriorityClassWire)
_PDB_DECODER = msgspec.json.Decoder(PodDisruptionBudgetWire)
_NO_SPEC = PodDisruptionBudgetSpecWire()
_EVICTION_POLICIES = ("IfHealthyBudget", "AlwaysAllow")
# parse_priority_class's range for a value (system- classes may go beyond it)
_USER_PRIORITY_MIN, _USER_PRIORITY_MAX = -(2**31), 10**9


def decode_namespace(text: bytes | str | msgspec.Raw) -> tuple[Namespace, str] | None:
    """parse_namespace's Namespace of one namespace's JSON text and the loader's name for it, or None."""
    try:
        wire = _NAMESPACE_DECODER.decode(text)
        meta = typed_meta(wire.metadata, "Namespace", namespaced=False)
    except (msgspec.MsgspecError, Declined):
        return None
    meta.labels.setdefault("kubernetes.io/metadata.name", meta.name)
    return Namespace(meta), label("Namespace", wire.metadata)


def decode_priority_class(text: bytes | str | msgspec.Raw) -> tuple[PriorityClass, str] | None:
    """parse_priority_class's PriorityClass of one class's JSON text and the loader's name for it,
    or None."""
    try:
        wire = _PRIORITY_CLASS_DECODER.decode(text)
    except msgspec.MsgspecError:
        return None
    built = _priority_class(wire)
    return None if built is None else (built, label("PriorityClass", wire.metadata))


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


def parse_namespace_typed(reader: Reader) -> Namespace:
    """parse_namespace's result, through the wire schema when the object is as the API server writes it."""
    try:
        wire = msgspec.convert(reader.data, NamespaceWire)
        meta = typed_meta(wire.metadata, "Namespace", namespaced=False)
    except (msgspec.MsgspecError, Declined):
        return parse_namespace(reader)
    meta.labels.setdefault("kubernetes.io/metadata.name", meta.name)
    return Namespace(meta)


def parse_priority_class_typed(reader: Reader) -> PriorityClass:
    """parse_priority_class's result, through the wire schema when the object is as the API server
    writes it."""
    try:
        wire = msgspec.convert(reader.data, PriorityClassWire)
    except msgspec.MsgspecError:
        return parse_priority_class(reader)
    built = _priority_class(wire)
    return parse_priority_class(reader) if built is None else built


def decode_pdb(text: bytes | str | msgspec.Raw) -> tuple[PodDisruptionBudget, str] | None:
    """parse_pdb's PodDisruptionBudget of one budget's JSON text and the loader's name for it, or None."""
    try:
        wire = _PDB_DECODER.decode(text)
    except msgspec.MsgspecError:
        return None
    built = _pdb(wire)
    return None if built is None else (built, label("PodDisruptionBudget", wire.metadata))


def parse_pdb_typed(reader: Reader) -> PodDisruptionBudget:
    """parse_pdb's result, through the wire schema when the object is as the API server writes it."""
    try:
        wire = msgspec.convert(reader.data, PodDisruptionBudgetWire)
    except msgspec.MsgspecError:
        return parse_pdb(reader)
    built = _pdb(wire)
    return parse_pdb(reader) if built is None else built


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
