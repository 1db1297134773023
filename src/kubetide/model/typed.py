"""What the wire-schema paths (model/pod_typed.py, model/node_typed.py) share: metadata, quantity
strings and timestamps, checked as the Reader path checks them, and cached (the same strings recur
in every object of a dump). Nothing here raises a ManifestError: what the Reader would refuse or
read otherwise raises Declined, and the object is read by the Reader."""

from __future__ import annotations

import functools

from kubetide.model.meta import ObjectMeta, OwnerReference, synthetic_uid
from kubetide.model.quantity import QuantityError, parse_quantity, to_units
from kubetide.model.reader import parse_time
from kubetide.model.validation import labels_problem, namespace_problem, object_name_problem
from kubetide.model.wire import ObjectMetaWire


class Declined(Exception):
    """The object needs the Reader path (to be parsed, or to have its error worded)."""


@functools.lru_cache(maxsize=4096)
def units(resource: str, text: str) -> int:
    """Integer units of one quantity string; the same few strings recur in every pod of a dump."""
    try:
        amount = parse_quantity(text)
    except QuantityError:
        raise Declined from None
    if amount < 0:
        raise Declined
    return to_units(resource, amount)


@functools.lru_cache(maxsize=4096)
def _time(text: str) -> float:
    try:
        return parse_time(text)
    except ValueError:
        raise Declined from None


def timestamp(text: str | None) -> float | None:
    return None if text is None else _time(text)


@functools.lru_cache(maxsize=4096)
def _owner_references(refs: tuple[tuple[str, str, str, bool], ...]) -> tuple[OwnerReference, ...]:
    """The pods of one controller name the same owner: one (immutable) tuple for all of them."""
    return tuple(OwnerReference(*ref) for ref in refs)


def typed_meta(meta: ObjectMetaWire, kind: str, namespaced: bool) -> ObjectMeta:
    """parse_meta's result for metadata as the API server writes it; Declined otherwise."""
    name = meta.name
    if not name or object_name_problem(kind, name) is not None:
        raise Declined
    namespace = (meta.namespace or "default") if namespaced else ""
    if namespaced and namespace_problem(namespace) is not None:
        raise Declined
    owners: tuple[OwnerReference, ...] = ()
    if meta.owner_references:
        refs = tuple((r.kind, r.name, r.uid, bool(r.controller)) for r in meta.owner_references)
        if sum(ref[3] for ref in refs) > 1:
            raise Declined
        owners = _owner_references(refs)
    labels = meta.labels or {}
    if labels and labels_problem(labels) is not None:
        raise Declined
    return ObjectMeta(
        name=name,
        namespace=namespace,
        uid=meta.uid or synthetic_uid(kind, namespace, name),
        labels=dict(labels),
        annotations=dict(meta.annotations or {}),
        owner_references=owners,
        creation_timestamp=timestamp(meta.creation_timestamp),
        deletion_timestamp=timestamp(meta.deletion_timestamp),
    )


def label(kind: str, meta: ObjectMetaWire) -> str:
    """How the loader names an object: `Kind namespace/name`, the namespace as written."""
    return f"{kind} {meta.namespace}/{meta.name}" if meta.namespace else f"{kind} {meta.name}"
