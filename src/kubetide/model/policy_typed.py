"""Namespaces and PriorityClasses from the wire schema (model/wire.py), as pods and nodes are
(model/pod_typed.py): decoded in C, built into the model's values here. Anything the API server
would not have written makes the decode return None, and the loader reads the object through
the Reader (parse_namespace, parse_priority_class), which alone words errors. Already-parsed
objects (YAML, JSON read whole) are converted into the same Structs (`parse_*_typed`)."""

from __future__ import annotations

import msgspec

from kubetide.model.policy import Namespace, PriorityClass, parse_namespace, parse_priority_class
from kubetide.model.reader import INT64_MAX, INT64_MIN, Reader
from kubetide.model.typed import Declined, label, typed_meta
from kubetide.model.wire import NamespaceWire, PriorityClassWire

_NAMESPACE_DECODER = msgspec.json.Decoder(NamespaceWire)
_PRIORITY_CLASS_DECODER = msgspec.json.Decoder(PriorityClassWire)
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
