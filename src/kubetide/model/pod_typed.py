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
from kubetide.model.meta import ObjectMeta
from kubetide.model.node import Toleration, parse_toleration
from kubetide.model.pod import (
    DEFAULT_GRACE_PERIOD,
    NO_AFFINITY,
    PHASES,
    POD_SLOTS,
    Affinity,
    Container,
    Pod,
    TopologySpreadConstraint,
    Volume,
    _parse_affinity,
    _parse_spreads,
    assembled_pod,
    effective_requests,
    parse_pod,
)
from kubetide.model.quantity import MAX_UNITS, PODS
from kubetide.model.reader import INT64_MAX, INT64_MIN, Reader
from kubetide.model.shape import PodShape
from kubetide.model.typed import (
    Declined,
    MetaFields,
    checked_meta,
    label,
    shared,
    timestamp,
    typed_meta,
    units,
)
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
    PodConditionWire,
    PodSpecWire,
    PodStatusWire,
    PodWire,
    VolumeWire,
)

_POD_DECODER = msgspec.json.Decoder(PodWire)
_PHASES = {phase: phase for phase in PHASES}


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


# A container's name, requests and limits as written (quantity strings, in the manifest's order):
# hashable, so that the pods of one template find their parsed containers in _template's cache
# and no quantity is looked at twice.
ContainerKey = tuple[str, tuple[tuple[str, str], ...], tuple[tuple[str, str], ...]]
_NO_AMOUNTS: tuple[tuple[str, str], ...] = ()


def _container(container: ContainerWire) -> ContainerKey:
    if container.restart_policy is not None:
        raise Declined
    if container.ports:
        for port in container.ports:
            if port.host_port is not None:
                raise Declined
    resources = container.resources
    if resources is None:
        return container.name, _NO_AMOUNTS, _NO_AMOUNTS
    requests, limits = resources.requests, resources.limits
    return (
        container.name,
        tuple(requests.items()) if requests else _NO_AMOUNTS,
        tuple(limits.items()) if limits else _NO_AMOUNTS,
    )


def _parsed_container(key: ContainerKey) -> Container:
    """The Container of a key, with the API server's defaulting (a limit without a request makes
    the request equal the limit) and its check (no request over its limit)."""
    name, written_requests, written_limits = key
    limits = {resource: units(resource, text) for resource, text in written_limits}
    requests = {resource: units(resource, text) for resource, text in written_requests}
    for r, v in limits.items():
        requests.setdefault(r, v)
        if requests[r] > v:
            raise Declined
    return Container(name, requests, limits)


def _containers(
    keys: tuple[ContainerKey, ...],
) -> tuple[tuple[Container, ...], dict[str, int], dict[str, int]]:
    """Containers and pod-level requests and limits of one container list."""
    names = [name for name, _, _ in keys]
    if duplicate_name(names) is not None or any(dns1123_label_problem(name) for name in names):
        raise Declined
    containers = tuple(map(_parsed_container, keys))
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


# The slots assembled_pod fills, in the order _pod gives them: a change to Pod's fields must
# change _pod too, and fails here, at import, until it does.
_SLOTS_BUILT = (
    "meta",
    "requests",
    "limits",
    "containers",
    "init_containers",
    "node_name",
    "node_selector",
    "affinity",
    "tolerations",
    "topology_spread",
    "volumes",
    "priority",
    "priority_class_name",
    "explicit_priority",
    "termination_grace_period",
    "active_deadline_seconds",
    "host_network",
    "scheduler_name",
    "phase",
    "ready",
    "ready_transition",
    "scheduled_status",
    "scheduled_reason",
    "scheduled_transition",
    "start_time",
    "restarts",
    "sidecar_restarts",
    "nominated_node_name",
    "shape",
)
if POD_SLOTS != _SLOTS_BUILT:
    raise ImportError(f"Pod's fields changed: {POD_SLOTS}; model/pod_typed.py _pod builds {_SLOTS_BUILT}")


def _pod(wire: PodWire, source: str, location: str) -> Pod:
    meta = typed_meta(wire.metadata, "Pod", namespaced=True)
    spec = _spec_parts(wire.spec, source, location)
    return pod_of(meta, spec, _NO_STATUS if wire.status is None else _status(wire.status))


# What a Pod holds of a spec the wire schema takes, parsed and checked (`_spec_parts`): template,
# node name, affinity, spread constraints, shape, volumes, priority as written (None: from its
# PriorityClass), priority class name, grace period, active deadline, scheduler name. A plain
# tuple: a NamedTuple's constructor and field reads made every Pod built 4-8% slower.
SpecParts = tuple[
    _Template,
    str,
    Affinity,
    tuple[TopologySpreadConstraint, ...],
    PodShape,
    tuple[Volume, ...],
    int | None,
    str,
    int | None,
    int | None,
    str,
]


def pod_of(meta: ObjectMeta, spec: SpecParts, status: tuple[Any, ...]) -> Pod:
    """The Pod of a pod's parsed parts: its metadata, its spec's parts and its status slots (phase
    to nominated_node_name, as `_status` gives them). typed_pod builds every Pod with it, and
    model/pod_columns.py a pod row's Pod, so the two are the same."""
    (
        template,
        node_name,
        affinity,
        spread,
        shape,
        volumes,
        priority,
        class_name,
        grace,
        deadline,
        scheduler,
    ) = spec
    return assembled_pod(
        (
            meta,
            template.requests,
            template.limits,
            template.containers,
            (),  # init_containers: a pod with any is the Reader's
            node_name,
            template.node_selector,
            affinity,
            template.tolerations,
            spread,
            volumes,
            priority or 0,
            class_name,
            priority is not None,  # explicit_priority
            DEFAULT_GRACE_PERIOD if grace is None else grace,
            deadline,
            False,  # host_network: a pod with it set is the Reader's
            scheduler,
            *status,
            shape,
        )
    )


class CheckedPod(NamedTuple):
    """What `checked_pod` finds of a pod: what model/pod_columns.py keeps of it as a row."""

    meta: MetaFields  # name, namespace, UID, owner references, creation and deletion times
    spec: SpecParts
    status: tuple[Any, ...]  # the status slots, phase to nominated_node_name (POD_SLOTS order)


def checked_pod(wire: PodWire) -> CheckedPod | None:
    """Every check typed_pod makes of a pod, and the parts it builds the Pod from, without
    building it (nor its ObjectMeta, label and annotation dicts): None exactly when typed_pod
    returns None."""
    try:
        meta = checked_meta(wire.metadata, "Pod", namespaced=True)
        spec = _spec_parts(wire.spec, "", "")
        status = _NO_STATUS if wire.status is None else _status(wire.status)
    except (Declined, ManifestError):
        return None
    return CheckedPod(meta, spec, status)


def _spec_parts(spec: PodSpecWire, source: str, location: str) -> SpecParts:
    """The parts of a spec the wire schema takes; Declined (or the Reader's ManifestError for
    affinity or spread) otherwise."""
    template = _spec_template(spec)
    grace = spec.termination_grace_period_seconds
    if grace is not None and not 0 <= grace <= INT64_MAX:
        raise Declined
    priority = spec.priority
    if priority is not None and not INT32_MIN <= priority <= INT32_MAX:
        raise Declined
    active_deadline = spec.active_deadline_seconds
    if active_deadline is not None and not 0 < active_deadline <= INT64_MAX:
        raise Declined  # the Reader words the error
    affinity, spread, shape = _placement(spec, template, source, location)
    node_name = spec.node_name or ""
    return (
        template,
        shared(node_name, node_name),
        affinity,
        spread,
        shape,
        tuple(map(_volume, spec.volumes)) if spec.volumes else (),
        priority,
        spec.priority_class_name or "",
        grace,
        active_deadline,
        "default-scheduler" if spec.scheduler_name is None else spec.scheduler_name,
    )


def _spec_template(spec: PodSpecWire) -> _Template:
    """The parsed objects of the pod's template (shared with every pod stamped from it); Declined
    for a spec with a field only the Reader reads."""
    if spec.init_containers is not None or spec.overhead is not None or spec.host_network is not None:
        raise Declined
    if not spec.containers:
        raise Declined
    keys = tuple(map(_container, spec.containers))
    toleration_fields = tuple(tuple(t.items()) for t in spec.tolerations) if spec.tolerations else ()
    selector = tuple(spec.node_selector.items()) if spec.node_selector else ()
    return _template(keys, selector, toleration_fields)


def _placement(
    spec: PodSpecWire, template: _Template, source: str, location: str
) -> tuple[Affinity, tuple[TopologySpreadConstraint, ...], PodShape]:
    """Affinity, topology spread and the pod's shape: the template's shape for a pod with
    neither; otherwise parsed by the Reader's parsers, with the Reader path's field paths (a
    Reader only where there is a field), and the shape worked out for this pod."""
    if spec.affinity is None and spec.topology_spread_constraints is None:
        return NO_AFFINITY, (), template.shape
    rare = {"affinity": spec.affinity, "topologySpreadConstraints": spec.topology_spread_constraints}
    spec_reader = Reader(rare, source, location, "spec")
    affinity = NO_AFFINITY if spec.affinity is None else _parse_affinity(spec_reader)
    spread = _parse_spreads(spec_reader)
    if affinity is NO_AFFINITY and not spread:
        return affinity, spread, template.shape
    shape = PodShape.of(template.requests, (), template.node_selector, affinity, template.tolerations, spread)
    return affinity, spread, shape


# The status slots (phase ... nominated_node_name) of a pod without a status: parse_pod reads an
# absent status as an empty one.
_NO_STATUS = ("Pending", False, None, "", "", None, None, 0, 0, "")


def _status(status: PodStatusWire) -> tuple[Any, ...]:
    """The status slots, phase to nominated_node_name, in POD_SLOTS order."""
    if status.init_container_statuses is not None:
        raise Declined
    phase = "Pending"
    if status.phase is not None:
        known = _PHASES.get(status.phase)  # the constant: one str for every pod
        if known is None:
            raise Declined
        phase = known
    restarts = 0
    if status.container_statuses:
        restarts = max(_int64(s.restart_count) or 0 for s in status.container_statuses)
    return (
        phase,
        *(_conditions(status.conditions) if status.conditions else _NO_CONDITIONS),
        timestamp(status.start_time),
        restarts,
        0,  # sidecar_restarts: only restartable init containers have them
        status.nominated_node_name or "",
    )


# ready, ready_transition, scheduled_status, scheduled_reason, scheduled_transition
_NO_CONDITIONS = (False, None, "", "", None)


def _conditions(conditions: list[PodConditionWire]) -> tuple[Any, ...]:
    """What the Ready and PodScheduled conditions say (the last of each kind written wins)."""
    ready, ready_transition = False, None
    scheduled_status, scheduled_reason, scheduled_transition = "", "", None
    for condition in conditions:
        kind = condition.type
        if kind == "Ready":
            ready = condition.status == "True"
            ready_transition = timestamp(condition.last_transition_time)
        elif kind == "PodScheduled":
            scheduled_status = condition.status or ""
            scheduled_status = shared(scheduled_status, scheduled_status)
            scheduled_reason = condition.reason or ""
            scheduled_reason = shared(scheduled_reason, scheduled_reason)
            scheduled_transition = timestamp(condition.last_transition_time)
    return ready, ready_transition, scheduled_status, scheduled_reason, scheduled_transition
