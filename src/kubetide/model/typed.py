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
from kubetide.model.wire import ObjectMetaWire, OwnerReferenceWire

# One str object per distinct value of the fields that objects repeat (namespace, node name,
# condition status and reason): msgspec makes a new str for every value it decodes, and a
# dump's 100,000 pods then keep 100,000 copies of "True" and of each node's name. Used as
# `shared(text, text)`, the dict's setdefault in C: the first object seen with the value (25 MB
# less on 100,000 pods, and 5% less loading time than keeping the copies). The values are
# names from a cluster, so they are as many as its nodes and namespaces.
_SHARED: dict[str, str] = {}
shared = _SHARED.setdefault


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


# Unix seconds of each timestamp text met so far. A dump repeats some (a rollout's creation
# seconds) and not others (100,000 pods' distinct ready times): a plain dict, emptied when full,
# costs one lookup either way, where an LRU cache's bookkeeping on every miss cost more than the
# parse it saved.
_TIMES: dict[str, float] = {}
_MAX_TIMES = 1 << 16


def _time(text: str) -> float:
    seconds = _TIMES.get(text)
    if seconds is None:
        try:
            seconds = parse_time(text)
        except ValueError:
            raise Declined from None
        if len(_TIMES) >= _MAX_TIMES:
            _TIMES.clear()
        _TIMES[text] = seconds
    return seconds


def timestamp(text: str | None) -> float | None:
    return None if text is None else _time(text)


@functools.lru_cache(maxsize=4096)
def _owner_references(refs: tuple[OwnerReferenceWire, ...]) -> tuple[OwnerReference, ...]:
    """The pods of one controller name the same owners: the wire's references (frozen Structs,
    hashed in C) map to one immutable tuple for all of them, checked once."""
    owners = tuple(OwnerReference(ref.kind, ref.name, ref.uid, bool(ref.controller)) for ref in refs)
    if sum(owner.controller for owner in owners) > 1:
        raise Declined
    return owners


def typed_meta(meta: ObjectMetaWire, kind: str, namespaced: bool) -> ObjectMeta:
    """parse_meta's result for metadata as the API server writes it; Declined otherwise."""
    labels, annotations = meta.labels, meta.annotations
    # Positional: ObjectMeta's fields in order (a keyword call costs a third more, per object).
    name, namespace, uid, owners, created, deleted = checked_meta(meta, kind, namespaced)
    return ObjectMeta(
        name,
        namespace,
        uid,
        dict(labels) if labels else {},
        dict(annotations) if annotations else {},
        owners,
        created,
        deleted,
    )


MetaFields = tuple[str, str, str, tuple[OwnerReference, ...], float | None, float | None]


def checked_meta(meta: ObjectMetaWire, kind: str, namespaced: bool) -> MetaFields:
    """What typed_meta's ObjectMeta holds but the label and annotation dicts (name, namespace, UID,
    owner references, creation and deletion times), with every check typed_meta makes: the pod
    columns (model/pod_columns.py) take these without an ObjectMeta. Declined as typed_meta."""
    name = meta.name
    if not name or object_name_problem(kind, name) is not None:
        raise Declined
    namespace = (meta.namespace or "default") if namespaced else ""
    namespace = shared(namespace, namespace)
    if namespaced and namespace_problem(namespace) is not None:
        raise Declined
    refs = meta.owner_references
    labels = meta.labels
    if labels and labels_problem(labels) is not None:
        raise Declined
    created, deleted = meta.creation_timestamp, meta.deletion_timestamp
    return (
        name,
        namespace,
        meta.uid or synthetic_uid(kind, namespace, name),
        _owner_references(tuple(refs)) if refs else (),
        None if created is None else _time(created),
        None if deleted is None else _time(deleted),
    )


def label(kind: str, meta: ObjectMetaWire) -> str:
    """How the loader names an object: `Kind namespace/name`, the namespace as written."""
    return f"{kind} {meta.namespace}/{meta.name}" if meta.namespace else f"{kind} {meta.name}"
