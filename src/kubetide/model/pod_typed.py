"""Pods from the wire schema (model/wire.py): decoded in C, built into the model's Pod here.

`typed_pod` builds a Pod from a PodWire, which msgspec made from JSON text (`decode_pod`) or from
parsed YAML (`convert_pod`); msgspec has already checked every field's type and skipped every
field kubetide does not read. What is left to do in Python is what types cannot say: names and
labels as the API server validates them, quantities, limits over requests, ranges. A pod that
passes all of it is built here; anything else (a field of another type than the API server
writes, a rare field such as init containers, overhead, host network or host ports, or an
error) makes `typed_pod` return None, and the pod is read by `parse_pod` through the Reader,
which alone words errors (file, item, object, field) and reads lenient forms. So this module
never raises a ManifestError of its own, and for every pod it builds it builds what the Reader
path builds (a property test compares the two on randomly broken pods).

Pods of one template share their spec objects and their shape (model/shape.py), worked out once
per distinct container list, node selector and tolerations (`_template`); the shape of a pod with
affinity or spread constraints is worked out per pod, as is the parsing of those fields.
"""

from __future__ import annotations

import functools
from typing import Any, NamedTuple

import msgspec

from kubetide.errors import ManifestError
from kubetide.model.meta import ObjectMeta, OwnerReference, synthetic_uid
from kubetide.model.node import Toleration, parse_toleration
from kubetide.model.pod import (
    DEFAULT_GRACE_PERIOD,
    NO_AFFINITY,
    PHASES,
    Container,
    Pod,
    TopologySpreadConstraint,
    Volume,
    _parse_affinity,
    _parse_spread,
    _parse_volume,
    effective_requests,
    parse_pod,
)
from kubetide.model.quantity import MAX_UNITS, PODS, QuantityError, parse_quantity, to_units
from kubetide.model.reader import INT64_MAX, INT64_MIN, Reader, parse_time
from kubetide.model.shape import PodShape
from kubetide.model.validation import (
    INT32_MAX,
    INT32_MIN,
    dns1123_label_problem,
    duplicate_name,
    labels_problem,
    namespace_problem,
    object_name_problem,
)
from kubetide.model.wire import ContainerWire, ObjectMetaWire, PodWire

_POD_DECODER = msgspec.json.Decoder(PodWire)


class _Declined(Exception):
    """The pod needs the Reader path (to be parsed, or to have its error worded)."""


def decode_pod(text: bytes | str | msgspec.Raw) -> tuple[Pod, str] | None:
    """The Pod of one pod's JSON text and the loader's name for it (see labelled_pod), or None:
    decode the text into dicts then, and parse_pod_typed them."""
    try:
        wire = _POD_DECODER.decode(text)
    except msgspec.MsgspecError:
        return None
    return labelled_pod(wire)


def labelled_pod(wire: PodWire) -> tuple[Pod, str] | None:
    """The Pod of a PodWire and how the loader names it (`Pod namespace/name`, the namespace as
    written), or None: the Reader reads the pod then."""
    pod = typed_pod(wire, "", "")
    if pod is None:
        return None
    namespace = wire.metadata.namespace
    return pod, f"Pod {namespace}/{pod.name}" if namespace else f"Pod {pod.name}"


def convert_pod(data: Any, source: str, location: str) -> Pod | None:
    """The Pod of an already-parsed pod (YAML, or JSON read whole), or None: parse_pod it."""
    try:
        wire = msgspec.convert(data, PodWire)
    except msgspec.MsgspecError:
        return None
    return typed_pod(wire, source, location)


def parse_pod_typed(reader: Reader) -> Pod:
    """parse_pod's result, through the wire schema when the pod is as the API server writes it."""
    pod = convert_pod(reader.data, reader.source, reader.location)
    return parse_pod(reader) if pod is None else pod


def typed_pod(wire: PodWire, source: str, location: str) -> Pod | None:
    try:
        return _pod(wire, source, location)
    except (_Declined, ManifestError):
        return None


@functools.lru_cache(maxsize=4096)
def _units(resource: str, text: str) -> int:
    """Integer units of one quantity string; the same few strings recur in every pod of a dump."""
    try:
        amount = parse_quantity(text)
    except QuantityError:
        raise _Declined from None
    if amount < 0:
        raise _Declined
    return to_units(resource, amount)


@functools.lru_cache(maxsize=4096)
def _time(text: str) -> float:
    try:
        return parse_time(text)
    except ValueError:
        raise _Declined from None


def _timestamp(text: str | None) -> float | None:
    return None if text is None else _time(text)


@functools.lru_cache(maxsize=1024)
def _toleration(fields: tuple[tuple[str, Any], ...]) -> Toleration:
    try:
        return parse_toleration(Reader(dict(fields), ""))
    except ManifestError:
        raise _Declined from None


@functools.lru_cache(maxsize=4096)
def _owner_references(refs: tuple[tuple[str, str, str, bool], ...]) -> tuple[OwnerReference, ...]:
    """The pods of one controller name the same owner: one (immutable) tuple for all of them."""
    return tuple(OwnerReference(*ref) for ref in refs)


def typed_meta(meta: ObjectMetaWire, kind: str, namespaced: bool) -> ObjectMeta:
    """parse_meta's result for metadata as the API server writes it; _Declined otherwise."""
    name = meta.name
    if not name or object_name_problem(kind, name) is not None:
        raise _Declined
    namespace = (meta.namespace or "default") if namespaced else ""
    if namespaced and namespace_problem(namespace) is not None:
        raise _Declined
    owners: tuple[OwnerReference, ...] = ()
    if meta.owner_references:
        refs = tuple((r.kind, r.name, r.uid, bool(r.controller)) for r in meta.owner_references)
        if sum(ref[3] for ref in refs) > 1:
            raise _Declined
        owners = _owner_references(refs)
    labels = meta.labels or {}
    if labels and labels_problem(labels) is not None:
        raise _Declined
    return ObjectMeta(
        name=name,
        namespace=namespace,
        uid=meta.uid or synthetic_uid(kind, namespace, name),
        labels=dict(labels),
        annotations=dict(meta.annotations or {}),
        owner_references=owners,
        creation_timestamp=_timestamp(meta.creation_timestamp),
        deletion_timestamp=_timestamp(meta.deletion_timestamp),
    )


def _resources(amounts: dict[str, str] | None) -> dict[str, int]:
    return {name: _units(name, text) for name, text in amounts.items()} if amounts else {}


ContainerKey = tuple[str, tuple[tuple[str, int], ...], tuple[tuple[str, int], ...]]


def _container(container: ContainerWire) -> ContainerKey:
    """A container's name, requests and limits (in the manifest's order), as a hashable key."""
    if container.restart_policy is not None:
        raise _Declined
    for port in container.ports or ():
        if port.host_port is not None:
            raise _Declined
    resources = container.resources
    limits = _resources(resources.limits) if resources else {}
    requests = _resources(resources.requests) if resources else {}
    for r, v in limits.items():
        requests.setdefault(r, v)
        if requests[r] > v:
            raise _Declined
    return container.name, tuple(requests.items()), tuple(limits.items())


def _containers(
    keys: tuple[ContainerKey, ...],
) -> tuple[tuple[Container, ...], dict[str, int], dict[str, int]]:
    """Containers and pod-level requests and limits of one container list."""
    names = [name for name, _, _ in keys]
    if duplicate_name(names) is not None or any(dns1123_label_problem(name) for name in names):
        raise _Declined
    containers = tuple(Container(name, dict(requests), dict(limits)) for name, requests, limits in keys)
    requests = effective_requests(containers, (), {}, "requests")
    requests[PODS] = 1
    limits = effective_requests(containers, (), {}, "limits")
    for totals in (requests, limits):
        if any(amount > MAX_UNITS for amount in totals.values()):
            raise _Declined
    return containers, requests, limits


TolerationFields = tuple[tuple[str, Any], ...]


class _Template(NamedTuple):
    """The spec objects pods stamped from one template have in common, parsed once."""

    containers: tuple[Container, ...]
    requests: dict[str, int]
    limits: dict[str, int]
    node_selector: dict[str, str]
    tolerations: tuple[Toleration, ...]
    shape: PodShape  # for a pod without affinity or spread constraints


@functools.lru_cache(maxsize=4096)
def _template(
    keys: tuple[ContainerKey, ...],
    selector: tuple[tuple[str, str], ...],
    toleration_fields: tuple[TolerationFields, ...],
) -> _Template:
    """One set of objects per distinct spec: a dump's pods mostly come from a few templates, and
    parsing each distinct container list, node selector and toleration (and working out their
    shape) once is most of what makes this path fast. Nothing changes them after parsing, so the
    pods share them."""
    containers, requests, limits = _containers(keys)
    node_selector = dict(selector)
    tolerations = tuple(_toleration(fields) for fields in toleration_fields)
    shape = PodShape.of(requests, (), node_selector, NO_AFFINITY, tolerations, ())
    return _Template(containers, requests, limits, node_selector, tolerations, shape)


def _int64(value: int | None) -> int | None:
    if value is not None and not INT64_MIN <= value <= INT64_MAX:
        raise _Declined
    return value


def _pod(wire: PodWire, source: str, location: str) -> Pod:
    meta = typed_meta(wire.metadata, "Pod", namespaced=True)
    spec = wire.spec
    if spec.init_containers is not None or spec.overhead is not None or spec.host_network is not None:
        raise _Declined
    if not spec.containers:
        raise _Declined
    keys = tuple(_container(c) for c in spec.containers)
    toleration_fields = tuple(tuple(t.items()) for t in spec.tolerations) if spec.tolerations else ()
    selector = tuple(spec.node_selector.items()) if spec.node_selector else ()
    template = _template(keys, selector, toleration_fields)
    grace = _int64(spec.termination_grace_period_seconds)
    if grace is not None and grace < 0:
        raise _Declined
    priority = spec.priority
    if priority is not None and not INT32_MIN <= priority <= INT32_MAX:
        raise _Declined

    fields: dict[str, Any] = {}
    status = wire.status
    if status is not None:
        phase = "Pending" if status.phase is None else status.phase
        if phase not in PHASES:
            raise _Declined
        fields["phase"] = phase
        for condition in status.conditions or ():
            kind = condition.type
            if kind == "Ready":
                fields["ready"] = condition.status == "True"
                fields["ready_transition"] = _timestamp(condition.last_transition_time)
            elif kind == "PodScheduled":
                fields["scheduled_status"] = condition.status or ""
                fields["scheduled_reason"] = condition.reason or ""
                fields["scheduled_transition"] = _timestamp(condition.last_transition_time)
        fields["start_time"] = _timestamp(status.start_time)
        fields["nominated_node_name"] = status.nominated_node_name or ""
        fields["restarts"] = max(
            (_int64(s.restart_count) or 0 for s in status.container_statuses or ()),
            default=0,
        )
        if status.init_container_statuses is not None:
            raise _Declined
    else:
        # parse_pod reads an absent status as an empty one
        fields.update(phase="Pending", start_time=None, nominated_node_name="", restarts=0)

    # The Reader parsers, with the Reader path's field paths; a Reader only where there is a field.
    affinity = NO_AFFINITY
    spread: tuple[TopologySpreadConstraint, ...] = ()
    volumes: tuple[Volume, ...] = ()
    if spec.affinity is not None or spec.topology_spread_constraints is not None or spec.volumes is not None:
        rare = {
            "affinity": spec.affinity,
            "topologySpreadConstraints": spec.topology_spread_constraints,
            "volumes": spec.volumes,
        }
        spec_reader = Reader(rare, source, location, "spec")
        if spec.affinity is not None:
            affinity = _parse_affinity(spec_reader)
        spread = tuple(_parse_spread(c) for c in spec_reader.items("topologySpreadConstraints"))
        volumes = tuple(_parse_volume(v) for v in spec_reader.items("volumes"))
    shape = template.shape
    if affinity is not NO_AFFINITY or spread:
        shape = PodShape.of(
            template.requests, (), template.node_selector, affinity, template.tolerations, spread
        )
    return Pod(
        meta=meta,
        requests=template.requests,
        limits=template.limits,
        containers=template.containers,
        node_name=spec.node_name or "",
        node_selector=template.node_selector,
        affinity=affinity,
        tolerations=template.tolerations,
        topology_spread=spread,
        volumes=volumes,
        priority=priority or 0,
        priority_class_name=spec.priority_class_name or "",
        explicit_priority=priority is not None,
        termination_grace_period=DEFAULT_GRACE_PERIOD if grace is None else grace,
        scheduler_name="default-scheduler" if spec.scheduler_name is None else spec.scheduler_name,
        parsed_shape=shape,
        **fields,
    )
