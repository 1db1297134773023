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
    effective_requests,
    parse_pod,
)
from kubetide.model.quantity import MAX_UNITS, PODS
from kubetide.model.reader import INT64_MAX, INT64_MIN, Reader
from kubetide.model.shape import PodShape
from kubetide.model.typed import Declined, label, timestamp, typed_meta, units
from kubetide.model.validation import (
    INT32_MAX,
    INT32_MIN,
    dns1123_label_problem,
    duplicate_name,
)
from kubetide.model.wire import (
    VOLUME_SOURCES,
    ContainerWire,
    EmptyDirWire,
    PodWire,
    VolumeWire,
)

_POD_DECODER = msgspec.json.Decoder(PodWire)


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
    return pod, label("Pod", wire.metadata)


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
    except (Declined, ManifestError):
        return None


@functools.lru_cache(maxsize=1024)
def _toleration(fields: tuple[tuple[str, Any], ...]) -> Toleration:
    try:
        return parse_toleration(Reader(dict(fields), ""))
    except ManifestError:
        raise Declined from None


def _resources(amounts: dict[str, str] | None) -> dict[str, int]:
    return {name: units(name, text) for name, text in amounts.items()} if amounts else {}


ContainerKey = tuple[str, tuple[tuple[str, int], ...], tuple[tuple[str, int], ...]]


def _container(container: ContainerWire) -> ContainerKey:
    """A container's name, requests and limits (in the manifest's order), as a hashable key."""
    if container.restart_policy is not None:
        raise Declined
    for port in container.ports or ():
        if port.host_port is not None:
            raise Declined
    resources = container.resources
    limits = _resources(resources.limits) if resources else {}
    requests = _resources(resources.requests) if resources else {}
    for r, v in limits.items():
        requests.setdefault(r, v)
        if requests[r] > v:
            raise Declined
    return container.name, tuple(requests.items()), tuple(limits.items())


def _containers(
    keys: tuple[ContainerKey, ...],
) -> tuple[tuple[Container, ...], dict[str, int], dict[str, int]]:
    """Containers and pod-level requests and limits of one container list."""
    names = [name for name, _, _ in keys]
    if duplicate_name(names) is not None or any(dns1123_label_problem(name) for name in names):
        raise Declined
    containers = tuple(Container(name, dict(requests), dict(limits)) for name, requests, limits in keys)
    requests = effective_requests(containers, (), {}, "requests")
    requests[PODS] = 1
    limits = effective_requests(containers, (), {}, "limits")
    for totals in (requests, limits):
        if any(amount > MAX_UNITS for amount in totals.values()):
            raise Declined
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


@functools.lru_cache(maxsize=4096)
def _volume(volume: VolumeWire) -> Volume:
    """What _parse_volume makes of a volume: its name, its source's kind, an emptyDir's medium.
    Pods of one template mount the same volumes (frozen Structs, hashed in C): one Volume for all
    of them."""
    sources = [key for attribute, key in VOLUME_SOURCES if getattr(volume, attribute) is not msgspec.UNSET]
    if len(sources) > 1:
        raise Declined  # the Reader takes the first in the manifest's order, which Structs do not keep
    empty_dir = volume.empty_dir
    medium = (empty_dir.medium or "") if isinstance(empty_dir, EmptyDirWire) else ""
    return Volume(volume.name, sources[0] if sources else "unknown", medium)


def _int64(value: int | None) -> int | None:
    if value is not None and not INT64_MIN <= value <= INT64_MAX:
        raise Declined
    return value


def _pod(wire: PodWire, source: str, location: str) -> Pod:
    meta = typed_meta(wire.metadata, "Pod", namespaced=True)
    spec = wire.spec
    if spec.init_containers is not None or spec.overhead is not None or spec.host_network is not None:
        raise Declined
    if not spec.containers:
        raise Declined
    keys = tuple(_container(c) for c in spec.containers)
    toleration_fields = tuple(tuple(t.items()) for t in spec.tolerations) if spec.tolerations else ()
    selector = tuple(spec.node_selector.items()) if spec.node_selector else ()
    template = _template(keys, selector, toleration_fields)
    grace = _int64(spec.termination_grace_period_seconds)
    if grace is not None and grace < 0:
        raise Declined
    priority = spec.priority
    if priority is not None and not INT32_MIN <= priority <= INT32_MAX:
        raise Declined

    fields: dict[str, Any] = {}
    status = wire.status
    if status is not None:
        phase = "Pending" if status.phase is None else status.phase
        if phase not in PHASES:
            raise Declined
        fields["phase"] = phase
        for condition in status.conditions or ():
            kind = condition.type
            if kind == "Ready":
                fields["ready"] = condition.status == "True"
                fields["ready_transition"] = timestamp(condition.last_transition_time)
            elif kind == "PodScheduled":
                fields["scheduled_status"] = condition.status or ""
                fields["scheduled_reason"] = condition.reason or ""
                fields["scheduled_transition"] = timestamp(condition.last_transition_time)
        fields["start_time"] = timestamp(status.start_time)
        fields["nominated_node_name"] = status.nominated_node_name or ""
        fields["restarts"] = max(
            (_int64(s.restart_count) or 0 for s in status.container_statuses or ()),
            default=0,
        )
        if status.init_container_statuses is not None:
            raise Declined
    else:
        # parse_pod reads an absent status as an empty one
        fields.update(phase="Pending", start_time=None, nominated_node_name="", restarts=0)

    # The Reader parsers, with the Reader path's field paths; a Reader only where there is a field.
    affinity = NO_AFFINITY
    spread: tuple[TopologySpreadConstraint, ...] = ()
    volumes: tuple[Volume, ...] = ()
    if spec.affinity is not None or spec.topology_spread_constraints is not None:
        rare = {"affinity": spec.affinity, "topologySpreadConstraints": spec.topology_spread_constraints}
        spec_reader = Reader(rare, source, location, "spec")
        if spec.affinity is not None:
            affinity = _parse_affinity(spec_reader)
        spread = tuple(_parse_spread(c) for c in spec_reader.items("topologySpreadConstraints"))
    if spec.volumes:
        volumes = tuple(_volume(v) for v in spec.volumes)
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
