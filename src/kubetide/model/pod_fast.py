"""The pod parser's fast path: pods as the API server prints them, read straight from the dicts.

Turning a large dump into Pods used to be most of `kubetide plan`'s time, spent in the path-aware
Reader (a Reader object and a field path per field) and in parsing the same quantity strings over
and over. `parse_pod_fast` (the loader's Pod parser) tries `fast_pod` first. It accepts only the
canonical form of each field (strings where the API server writes strings, ints where it writes
ints, no null where a default would apply) and returns None at the first thing it does not
expect: a value the Reader would convert or reject, or a rare field (init containers, overhead,
host network, host ports). The pod is then parsed again by `parse_pod`, through the Reader, which
alone decides what is an error and words it. So this module never raises a ManifestError of its
own, and for every pod it accepts it returns what the Reader path returns (a property test
compares the two on randomly broken pods).

Rare-but-structured fields (affinity, topology spread, tolerations, volumes) go through the
Reader parsers themselves, with the same field paths; an error there also means "None".

Pods of one template share their spec objects and their shape (model/shape.py), worked out once
per distinct container list, node selector and tolerations (`_template`); the shape of a pod with
affinity or spread constraints is worked out per pod, as is the parsing of those fields.
"""

from __future__ import annotations

import functools
from typing import Any, NamedTuple

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

# Fields parse_pod_spec reads that only the Reader path handles.
_SLOW_SPEC_FIELDS = ("initContainers", "overhead", "hostNetwork")


class _NotCanonical(Exception):
    """The pod needs the Reader path (to be parsed, or to have its error worded)."""


@functools.lru_cache(maxsize=4096)
def _units(resource: str, text: str) -> int:
    """Integer units of one quantity string; the same few strings recur in every pod of a dump."""
    try:
        amount = parse_quantity(text)
    except QuantityError:
        raise _NotCanonical from None
    if amount < 0:
        raise _NotCanonical
    return to_units(resource, amount)


@functools.lru_cache(maxsize=4096)
def _time(text: str) -> float:
    try:
        return parse_time(text)
    except ValueError:
        raise _NotCanonical from None


@functools.lru_cache(maxsize=1024)
def _toleration(fields: tuple[tuple[str, Any], ...]) -> Toleration:
    try:
        return parse_toleration(Reader(dict(fields), ""))
    except ManifestError:
        raise _NotCanonical from None


def parse_pod_fast(reader: Reader) -> Pod:
    """parse_pod's result, from the fast path when the pod is canonical."""
    pod = fast_pod(reader.data, reader.source, reader.location)
    return parse_pod(reader) if pod is None else pod


def fast_pod(data: Any, source: str, location: str) -> Pod | None:
    """The Pod for a canonical pod manifest, or None: parse it with the Reader then."""
    try:
        return _pod(data, source, location)
    except (_NotCanonical, ManifestError):
        return None


def _dict(value: Any) -> dict[str, Any]:
    if type(value) is not dict:
        raise _NotCanonical
    return value


def _optional_dict(value: Any) -> dict[str, Any]:
    return {} if value is None else _dict(value)


def _optional_list(value: Any) -> list[Any]:
    if value is None:
        return []
    if type(value) is not list:
        raise _NotCanonical
    return value


def _str(value: Any, default: str = "") -> str:
    if value is None:
        return default
    if type(value) is not str:
        raise _NotCanonical
    return value


def _int(value: Any) -> int | None:
    if value is None:
        return None
    if type(value) is not int or not INT64_MIN <= value <= INT64_MAX:
        raise _NotCanonical
    return value


def _str_map(value: Any) -> dict[str, str]:
    mapping = _optional_dict(value)
    for k, v in mapping.items():
        if type(k) is not str or type(v) is not str:
            raise _NotCanonical
    return dict(mapping)


def _timestamp(value: Any) -> float | None:
    return None if value is None else _time(_str(value))


@functools.lru_cache(maxsize=4096)
def _owner_references(refs: tuple[tuple[str, str, str, bool], ...]) -> tuple[OwnerReference, ...]:
    """The pods of one controller name the same owner: one (immutable) tuple for all of them."""
    return tuple(OwnerReference(*ref) for ref in refs)


def meta_of(data: dict[str, Any], kind: str, namespaced: bool) -> ObjectMeta:
    """parse_meta's result for canonical metadata."""
    meta = _dict(data.get("metadata"))
    name = _str(meta.get("name"))
    if not name or object_name_problem(kind, name) is not None:
        raise _NotCanonical
    namespace = (_str(meta.get("namespace")) or "default") if namespaced else ""
    if namespaced and namespace_problem(namespace) is not None:
        raise _NotCanonical
    owners = []
    controllers = 0
    for ref in _optional_list(meta.get("ownerReferences")):
        ref = _dict(ref)
        ref_kind, ref_name = ref.get("kind"), ref.get("name")
        if type(ref_kind) is not str or type(ref_name) is not str:
            raise _NotCanonical
        controller = ref.get("controller")
        if controller is not None and type(controller) is not bool:
            raise _NotCanonical
        owners.append((ref_kind, ref_name, _str(ref.get("uid")), bool(controller)))
        controllers += bool(controller)
    if controllers > 1:
        raise _NotCanonical
    labels = _str_map(meta.get("labels"))
    if labels_problem(labels) is not None:
        raise _NotCanonical
    return ObjectMeta(
        name=name,
        namespace=namespace,
        uid=_str(meta.get("uid")) or synthetic_uid(kind, namespace, name),
        labels=labels,
        annotations=_str_map(meta.get("annotations")),
        owner_references=_owner_references(tuple(owners)) if owners else (),
        creation_timestamp=_timestamp(meta.get("creationTimestamp")),
        deletion_timestamp=_timestamp(meta.get("deletionTimestamp")),
    )


def _resources(value: Any) -> dict[str, int]:
    result = {}
    for name, amount in _optional_dict(value).items():
        if amount is None:
            continue
        if type(name) is not str or type(amount) is not str:
            raise _NotCanonical
        result[name] = _units(name, amount)
    return result


ContainerKey = tuple[str, tuple[tuple[str, int], ...], tuple[tuple[str, int], ...]]


def _container(data: Any) -> ContainerKey:
    """A container's name, requests and limits (in the manifest's order), as a hashable key."""
    data = _dict(data)
    name = data.get("name")
    if type(name) is not str or data.get("restartPolicy") is not None:
        raise _NotCanonical
    for port in _optional_list(data.get("ports")):
        port = _dict(port)
        _str(port.get("protocol"))  # the Reader checks it is a string
        if port.get("hostPort") is not None:
            raise _NotCanonical
    resources = _optional_dict(data.get("resources"))
    limits = _resources(resources.get("limits"))
    requests = _resources(resources.get("requests"))
    for r, v in limits.items():
        requests.setdefault(r, v)
        if requests[r] > v:
            raise _NotCanonical
    return name, tuple(requests.items()), tuple(limits.items())


def _containers(
    keys: tuple[ContainerKey, ...],
) -> tuple[tuple[Container, ...], dict[str, int], dict[str, int]]:
    """Containers and pod-level requests and limits of one container list."""
    names = [name for name, _, _ in keys]
    if duplicate_name(names) is not None or any(dns1123_label_problem(name) for name in names):
        raise _NotCanonical
    containers = tuple(Container(name, dict(requests), dict(limits)) for name, requests, limits in keys)
    requests = effective_requests(containers, (), {}, "requests")
    requests[PODS] = 1
    limits = effective_requests(containers, (), {}, "limits")
    for totals in (requests, limits):
        if any(amount > MAX_UNITS for amount in totals.values()):
            raise _NotCanonical
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


def _pod(data: Any, source: str, location: str) -> Pod:
    data = _dict(data)
    meta = meta_of(data, "Pod", namespaced=True)
    spec = _dict(data.get("spec"))
    for key in _SLOW_SPEC_FIELDS:
        if spec.get(key) is not None:
            raise _NotCanonical
    keys = tuple(_container(c) for c in _optional_list(spec.get("containers")))
    if not keys:
        raise _NotCanonical
    toleration_fields = []
    for t in _optional_list(spec.get("tolerations")):
        t = _dict(t)
        if any(type(v) not in (str, int) for v in t.values()):
            raise _NotCanonical
        toleration_fields.append(tuple(t.items()))
    selector = tuple(_str_map(spec.get("nodeSelector")).items())
    template = _template(keys, selector, tuple(toleration_fields))
    grace = _int(spec.get("terminationGracePeriodSeconds"))
    if grace is not None and grace < 0:
        raise _NotCanonical
    priority = _int(spec.get("priority"))
    if priority is not None and not INT32_MIN <= priority <= INT32_MAX:
        raise _NotCanonical

    fields: dict[str, Any] = {}
    status = data.get("status")
    if status is not None:
        status = _dict(status)
        phase = _str(status.get("phase"), "Pending")
        if phase not in PHASES:
            raise _NotCanonical
        fields["phase"] = phase
        for condition in _optional_list(status.get("conditions")):
            condition = _dict(condition)
            kind = _str(condition.get("type"))
            if kind == "Ready":
                fields["ready"] = _str(condition.get("status")) == "True"
                fields["ready_transition"] = _timestamp(condition.get("lastTransitionTime"))
            elif kind == "PodScheduled":
                fields["scheduled_status"] = _str(condition.get("status"))
                fields["scheduled_reason"] = _str(condition.get("reason"))
                fields["scheduled_transition"] = _timestamp(condition.get("lastTransitionTime"))
        fields["start_time"] = _timestamp(status.get("startTime"))
        fields["nominated_node_name"] = _str(status.get("nominatedNodeName"))
        fields["restarts"] = max(
            (
                _int(_dict(s).get("restartCount")) or 0
                for s in _optional_list(status.get("containerStatuses"))
            ),
            default=0,
        )
        if status.get("initContainerStatuses") is not None:
            raise _NotCanonical
    else:
        # parse_pod reads an absent status as an empty one
        fields.update(phase="Pending", start_time=None, nominated_node_name="", restarts=0)

    # The Reader parsers, with the Reader path's field paths; a Reader only where there is a field.
    spec_reader = Reader(spec, source, location, "spec")
    affinity = NO_AFFINITY if spec.get("affinity") is None else _parse_affinity(spec_reader)
    spread: tuple[TopologySpreadConstraint, ...] = ()
    volumes: tuple[Volume, ...] = ()
    if spec.get("topologySpreadConstraints") is not None:
        spread = tuple(_parse_spread(c) for c in spec_reader.items("topologySpreadConstraints"))
    if spec.get("volumes") is not None:
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
        node_name=_str(spec.get("nodeName")),
        node_selector=template.node_selector,
        affinity=affinity,
        tolerations=template.tolerations,
        topology_spread=spread,
        volumes=volumes,
        priority=priority or 0,
        priority_class_name=_str(spec.get("priorityClassName")),
        explicit_priority=priority is not None,
        termination_grace_period=DEFAULT_GRACE_PERIOD if grace is None else grace,
        scheduler_name=_str(spec.get("schedulerName"), "default-scheduler"),
        parsed_shape=shape,
        **fields,
    )
