"""Pod and everything scheduling needs to know about one.

Effective requests are computed once, at parse time, with the Kubernetes rules (see
`effective_requests`), so every later fit check is a lookup.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import InitVar, dataclass, field, fields
from typing import Any, TypeVar

from kubetide.model.meta import ObjectIdentity, ObjectMeta, OwnerReference, parse_meta
from kubetide.model.node import Toleration, parse_toleration
from kubetide.model.quantity import CPU, MAX_UNITS, MEMORY, PODS
from kubetide.model.reader import Reader
from kubetide.model.selectors import (
    NODE_OPERATORS,
    LabelSelector,
    Requirement,
    optional_label_selector,
    parse_requirement,
)
from kubetide.model.shape import PodShape
from kubetide.model.validation import dns1123_label_problem, duplicate_name, int32_problem

T = TypeVar("T")

MIRROR_ANNOTATION = "kubernetes.io/config.mirror"
PHASES = ("Pending", "Running", "Succeeded", "Failed", "Unknown")
DEFAULT_GRACE_PERIOD = 30


@dataclass(frozen=True, slots=True)
class HostPort:
    port: int
    protocol: str = "TCP"
    ip: str = "0.0.0.0"


@dataclass(frozen=True, slots=True)
class Container:
    name: str
    requests: dict[str, int]
    limits: dict[str, int]
    host_ports: tuple[HostPort, ...] = ()
    sidecar: bool = False  # an init container with restartPolicy: Always


@dataclass(frozen=True, slots=True)
class Volume:
    name: str
    kind: str  # hostPath, emptyDir, persistentVolumeClaim, configMap, ...
    medium: str = ""

    @property
    def is_local_storage(self) -> bool:
        """What the Cluster Autoscaler treats as local storage that blocks a drain."""
        return self.kind == "hostPath" or (self.kind == "emptyDir" and self.medium != "Memory")


@dataclass(frozen=True, slots=True)
class NodeSelectorTerm:
    match_expressions: tuple[Requirement, ...] = ()
    match_fields: tuple[Requirement, ...] = ()


@dataclass(frozen=True, slots=True)
class PodAffinityTerm:
    label_selector: LabelSelector | None
    topology_key: str
    namespaces: tuple[str, ...] = ()
    namespace_selector: LabelSelector | None = None
    match_label_keys: tuple[str, ...] = ()
    mismatch_label_keys: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class WeightedPodAffinityTerm:
    weight: int
    term: PodAffinityTerm


@dataclass(frozen=True, slots=True)
class WeightedNodeSelectorTerm:
    weight: int
    term: NodeSelectorTerm


@dataclass(frozen=True, slots=True)
class TopologySpreadConstraint:
    max_skew: int
    topology_key: str
    when_unsatisfiable: str  # DoNotSchedule | ScheduleAnyway
    label_selector: LabelSelector | None
    min_domains: int | None = None
    node_affinity_policy: str = "Honor"
    node_taints_policy: str = "Ignore"
    match_label_keys: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Affinity:
    node_required: tuple[NodeSelectorTerm, ...] | None = None
    node_preferred: tuple[WeightedNodeSelectorTerm, ...] = ()
    pod_required: tuple[PodAffinityTerm, ...] = ()
    pod_preferred: tuple[WeightedPodAffinityTerm, ...] = ()
    anti_required: tuple[PodAffinityTerm, ...] = ()
    anti_preferred: tuple[WeightedPodAffinityTerm, ...] = ()


NO_AFFINITY = Affinity()


@dataclass(frozen=True, slots=True)
class Pod(ObjectIdentity):
    meta: ObjectMeta
    requests: dict[str, int]  # effective pod requests, `pods: 1` included
    limits: dict[str, int]
    containers: tuple[Container, ...] = ()
    init_containers: tuple[Container, ...] = ()
    node_name: str = ""
    node_selector: dict[str, str] = field(default_factory=dict)
    affinity: Affinity = NO_AFFINITY
    tolerations: tuple[Toleration, ...] = ()
    topology_spread: tuple[TopologySpreadConstraint, ...] = ()
    volumes: tuple[Volume, ...] = ()
    priority: int = 0
    priority_class_name: str = ""
    explicit_priority: bool = False  # spec.priority was set; otherwise resolved from the class
    termination_grace_period: int = DEFAULT_GRACE_PERIOD
    # spec.activeDeadlineSeconds: the kubelet ends the pod this long after its start (a Job's
    # pods carry the Job's)
    active_deadline_seconds: int | None = None
    host_network: bool = False
    scheduler_name: str = "default-scheduler"
    # status
    phase: str = "Pending"
    ready: bool = False
    ready_transition: float | None = None
    scheduled_status: str = ""  # PodScheduled condition status: True / False / ""
    scheduled_reason: str = ""  # e.g. Unschedulable
    scheduled_transition: float | None = None
    start_time: float | None = None
    restarts: int = 0  # max restart count over regular containers
    sidecar_restarts: int = 0  # max restart count over restartable init containers
    # status.nominatedNodeName: where the scheduler means to put a pending pod once the pods it
    # preempts there are gone
    nominated_node_name: str = ""
    # What the scheduler reads of the spec (model/shape.py), computed once per pod. A parser that
    # already has it passes `parsed_shape`; otherwise (and in dataclasses.replace, which never
    # passes it) it is computed from the fields, so it always describes them.
    parsed_shape: InitVar[PodShape | None] = None
    shape: PodShape = field(init=False, repr=False, compare=False)

    def __post_init__(self, parsed_shape: PodShape | None) -> None:
        if parsed_shape is None:
            parsed_shape = shape_of(self)
        object.__setattr__(self, "shape", parsed_shape)

    # -- identity (name, namespace, key: ObjectIdentity) ------------------------------------
    @property
    def uid(self) -> str:
        return self.meta.uid

    @property
    def labels(self) -> dict[str, str]:
        return self.meta.labels

    @property
    def annotations(self) -> dict[str, str]:
        return self.meta.annotations

    @property
    def controller(self) -> OwnerReference | None:
        return self.meta.controller

    # -- classification ---------------------------------------------------------------------
    @property
    def is_mirror(self) -> bool:
        return MIRROR_ANNOTATION in self.meta.annotations

    @property
    def is_daemonset(self) -> bool:
        ref = self.meta.controller
        return ref is not None and ref.kind == "DaemonSet"

    @property
    def is_terminal(self) -> bool:
        return self.phase in ("Succeeded", "Failed")

    @property
    def is_terminating(self) -> bool:
        return self.meta.deletion_timestamp is not None

    @property
    def is_unschedulable(self) -> bool:
        """What the autoscaler reacts to: PodScheduled=False with reason Unschedulable."""
        return (
            not self.node_name
            and self.scheduled_status == "False"
            and self.scheduled_reason == "Unschedulable"
        )

    @property
    def qos_class(self) -> str:
        return qos_class(self.containers, self.init_containers)

    @property
    def host_ports(self) -> tuple[HostPort, ...]:
        return tuple(p for c in (*self.init_containers, *self.containers) for p in c.host_ports)


# Every slot of a Pod, in declaration order (`shape` last), for `assembled_pod`.
POD_SLOTS = tuple(f.name for f in fields(Pod))
_SLOT_SETTERS = tuple(getattr(Pod, name).__set__ for name in POD_SLOTS)
_new_object = object.__new__


def assembled_pod(values: tuple[Any, ...]) -> Pod:
    """The Pod whose slots (POD_SLOTS, in order, the shape last and describing the rest) hold
    `values`: what `Pod(...)` builds, for a parser that has every value and the shape. The
    generated `__init__` matches keywords and sets each of 28 fields through the frozen class's
    `object.__setattr__`; setting the slots directly takes half the time, which on a
    100,000-pod dump is a tenth of the load."""
    pod = _new_object(Pod)
    for set_slot, value in zip(_SLOT_SETTERS, values, strict=True):
        set_slot(pod, value)
    return pod


# Pod fields the shape is computed from: changing one means computing it again.
SHAPE_FIELDS = frozenset(
    {
        "requests",
        "containers",
        "init_containers",
        "node_selector",
        "affinity",
        "tolerations",
        "topology_spread",
    }
)


def shape_of(pod: Pod) -> PodShape:
    return PodShape.of(
        pod.requests, pod.host_ports, pod.node_selector, pod.affinity, pod.tolerations, pod.topology_spread
    )


def qos_class(containers: Iterable[Container], init_containers: Iterable[Container]) -> str:
    """BestEffort, Burstable or Guaranteed, by the kubelet's rules (cpu and memory only)."""
    everything = [*init_containers, *containers]
    if all(not c.requests.get(r) and not c.limits.get(r) for c in everything for r in (CPU, MEMORY)):
        return "BestEffort"
    for c in everything:
        for r in (CPU, MEMORY):
            if r not in c.limits or c.requests.get(r) != c.limits[r]:
                return "Burstable"
    return "Guaranteed"


def effective_requests(
    containers: Iterable[Container],
    init_containers: Iterable[Container],
    overhead: dict[str, int],
    field: str,
) -> dict[str, int]:
    """Pod-level requests (or limits) by the scheduler's rules.

    Regular containers add up. Init containers run one at a time, so the pod needs the largest of
    them; sidecars (restartable init containers) keep running, so they add to the steady state and
    to every init container that starts after them. Overhead is added on top.
    """
    total: dict[str, int] = {}
    for c in containers:
        for r, v in getattr(c, field).items():
            total[r] = total.get(r, 0) + v
    sidecars: dict[str, int] = {}
    init_peak: dict[str, int] = {}
    for c in init_containers:
        amounts = getattr(c, field)
        if c.sidecar:
            for r, v in amounts.items():
                total[r] = total.get(r, 0) + v
                sidecars[r] = sidecars.get(r, 0) + v
            during = dict(sidecars)
        else:
            during = dict(sidecars)
            for r, v in amounts.items():
                during[r] = during.get(r, 0) + v
        for r, v in during.items():
            if v > init_peak.get(r, 0):
                init_peak[r] = v
    for r, v in init_peak.items():
        if v > total.get(r, 0):
            total[r] = v
    for r, v in overhead.items():
        total[r] = total.get(r, 0) + v
    return total


# -- parsing --------------------------------------------------------------------------------


def _parse_container(reader: Reader, host_network: bool, init: bool) -> Container:
    name = reader.str("name", required=True)
    problem = dns1123_label_problem(name)
    if problem is not None:
        raise reader.error(problem, "name")
    resources = reader.child("resources")
    limits = resources.resources("limits")
    requests = resources.resources("requests")
    for r, v in limits.items():
        # API server defaulting: a limit without a request makes the request equal the limit.
        requests.setdefault(r, v)
    for r, v in requests.items():
        if r in limits and v > limits[r]:
            raise resources.child("requests").error(f"must be less than or equal to the {r} limit", r)
    ports = []
    for port in reader.items("ports"):
        protocol = port.str("protocol", default="TCP")
        host_port = port.int("hostPort", default=0)
        if host_network and not host_port:
            host_port = port.int("containerPort", default=0)
        if host_port:
            if not 0 < host_port < 65536:
                raise port.error(f"must be between 1 and 65535, got {host_port}", "hostPort")
            ports.append(HostPort(host_port, protocol, port.str("hostIP", default="") or "0.0.0.0"))
    restart_policy = reader.str("restartPolicy", default="")
    if restart_policy and (not init or restart_policy != "Always"):
        raise reader.error(f'unsupported restartPolicy "{restart_policy}"', "restartPolicy")
    return Container(name, requests, limits, tuple(ports), sidecar=init and restart_policy == "Always")


def _parse_node_selector_term(reader: Reader) -> NodeSelectorTerm:
    expressions = tuple(parse_requirement(r, NODE_OPERATORS) for r in reader.items("matchExpressions"))
    fields = []
    for r in reader.items("matchFields"):
        requirement = parse_requirement(r, NODE_OPERATORS)
        if requirement.key != "metadata.name":
            raise r.error(f'unsupported field "{requirement.key}" (only metadata.name)', "key")
        fields.append(requirement)
    return NodeSelectorTerm(expressions, tuple(fields))


def _parse_pod_affinity_term(reader: Reader) -> PodAffinityTerm:
    topology_key = reader.str("topologyKey", default="")
    if not topology_key:
        raise reader.error("required field is missing", "topologyKey")
    return PodAffinityTerm(
        label_selector=optional_label_selector(reader, "labelSelector"),
        topology_key=topology_key,
        namespaces=tuple(reader.str_list("namespaces")),
        namespace_selector=optional_label_selector(reader, "namespaceSelector"),
        match_label_keys=tuple(reader.str_list("matchLabelKeys")),
        mismatch_label_keys=tuple(reader.str_list("mismatchLabelKeys")),
    )


def _parse_weighted(reader: Reader, key: str, parse: Callable[[Reader], T]) -> tuple[tuple[int, T], ...]:
    result = []
    for item in reader.items(key):
        weight = item.int("weight", required=True)
        if not 1 <= weight <= 100:
            raise item.error(f"must be between 1 and 100, got {weight}", "weight")
        inner = "preference" if parse is _parse_node_selector_term else "podAffinityTerm"
        result.append((weight, parse(item.child(inner))))
    return tuple(result)


def _parse_affinity(reader: Reader) -> Affinity:
    if not reader.has("affinity"):
        return NO_AFFINITY
    affinity = reader.child("affinity")
    node = affinity.child("nodeAffinity")
    node_required = None
    if node.has("requiredDuringSchedulingIgnoredDuringExecution"):
        required = node.child("requiredDuringSchedulingIgnoredDuringExecution")
        node_required = tuple(_parse_node_selector_term(t) for t in required.items("nodeSelectorTerms"))
    node_preferred = tuple(
        WeightedNodeSelectorTerm(w, t)
        for w, t in _parse_weighted(
            node, "preferredDuringSchedulingIgnoredDuringExecution", _parse_node_selector_term
        )
    )
    pod = affinity.child("podAffinity")
    anti = affinity.child("podAntiAffinity")
    required_key = "requiredDuringSchedulingIgnoredDuringExecution"
    preferred_key = "preferredDuringSchedulingIgnoredDuringExecution"
    return Affinity(
        node_required=node_required,
        node_preferred=node_preferred,
        pod_required=tuple(_parse_pod_affinity_term(t) for t in pod.items(required_key)),
        pod_preferred=tuple(
            WeightedPodAffinityTerm(w, t)
            for w, t in _parse_weighted(pod, preferred_key, _parse_pod_affinity_term)
        ),
        anti_required=tuple(_parse_pod_affinity_term(t) for t in anti.items(required_key)),
        anti_preferred=tuple(
            WeightedPodAffinityTerm(w, t)
            for w, t in _parse_weighted(anti, preferred_key, _parse_pod_affinity_term)
        ),
    )


def _parse_spread(reader: Reader) -> TopologySpreadConstraint:
    max_skew = reader.int("maxSkew", required=True)
    if max_skew < 1:
        raise reader.error(f"must be at least 1, got {max_skew}", "maxSkew")
    when = reader.str("whenUnsatisfiable", required=True)
    if when not in ("DoNotSchedule", "ScheduleAnyway"):
        raise reader.error(f'must be DoNotSchedule or ScheduleAnyway, got "{when}"', "whenUnsatisfiable")
    min_domains = reader.int("minDomains")
    if min_domains is not None and (min_domains < 1 or when != "DoNotSchedule"):
        raise reader.error("must be at least 1 and needs whenUnsatisfiable: DoNotSchedule", "minDomains")
    affinity_policy = reader.str("nodeAffinityPolicy", default="Honor")
    taints_policy = reader.str("nodeTaintsPolicy", default="Ignore")
    for key, value in (("nodeAffinityPolicy", affinity_policy), ("nodeTaintsPolicy", taints_policy)):
        if value not in ("Honor", "Ignore"):
            raise reader.error(f'must be Honor or Ignore, got "{value}"', key)
    return TopologySpreadConstraint(
        max_skew=max_skew,
        topology_key=_required_nonempty(reader, "topologyKey"),
        when_unsatisfiable=when,
        label_selector=optional_label_selector(reader, "labelSelector"),
        min_domains=min_domains,
        node_affinity_policy=affinity_policy,
        node_taints_policy=taints_policy,
        match_label_keys=tuple(reader.str_list("matchLabelKeys")),
    )


def _parse_spreads(spec: Reader) -> tuple[TopologySpreadConstraint, ...]:
    """spec.topologySpreadConstraints. The API server refuses two constraints with the same
    {topologyKey, whenUnsatisfiable} pair (they would be one constraint counted twice), and so do we."""
    constraints: list[TopologySpreadConstraint] = []
    first: dict[tuple[str, str], int] = {}
    for index, item in enumerate(spec.items("topologySpreadConstraints")):
        constraint = _parse_spread(item)
        pair = (constraint.topology_key, constraint.when_unsatisfiable)
        if pair in first:
            raise item.error(
                f'duplicate value: topologyKey "{pair[0]}" with whenUnsatisfiable {pair[1]}, as in '
                f"topologySpreadConstraints[{first[pair]}]",
                "{topologyKey, whenUnsatisfiable}",
            )
        first[pair] = index
        constraints.append(constraint)
    return tuple(constraints)


def _required_nonempty(reader: Reader, key: str) -> str:
    value = reader.str(key, required=True)
    if not value:
        raise reader.error("required field is missing", key)
    return value


def _parse_volume(reader: Reader) -> Volume:
    name = reader.str("name", required=True)
    kind = next((k for k in reader.fields() if k != "name"), "unknown")
    medium = reader.child("emptyDir").str("medium", default="") if kind == "emptyDir" else ""
    return Volume(name, kind, medium)


def parse_pod_spec(reader: Reader, meta: ObjectMeta, status: Reader | None = None) -> Pod:
    """A Pod from its spec (and status, for real pods; templates have none)."""
    spec = reader.child("spec")
    host_network = spec.bool("hostNetwork")
    containers = tuple(_parse_container(c, host_network, init=False) for c in spec.items("containers"))
    if not containers:
        raise spec.error("a pod needs at least one container", "containers")
    init_containers = tuple(
        _parse_container(c, host_network, init=True) for c in spec.items("initContainers")
    )
    # One namespace of names for all of a pod's containers, init containers included.
    twice = duplicate_name([c.name for c in (*init_containers, *containers)])
    if twice is not None:
        where = "initContainers" if sum(c.name == twice for c in init_containers) > 1 else "containers"
        raise spec.error(f'duplicate container name "{twice}"', where)
    overhead = spec.resources("overhead")
    requests = effective_requests(containers, init_containers, overhead, "requests")
    requests[PODS] = 1
    limits = effective_requests(containers, init_containers, overhead, "limits")
    for what, totals in (("requests", requests), ("limits", limits)):
        for resource, amount in totals.items():
            if amount > MAX_UNITS:  # each quantity fits in int64; the containers' sum need not
                raise spec.error(f"the pod's {resource} {what} add up to more than {MAX_UNITS} units (int64)")
    grace = spec.int("terminationGracePeriodSeconds", default=DEFAULT_GRACE_PERIOD)
    if grace < 0:
        raise spec.error(f"must be non-negative, got {grace}", "terminationGracePeriodSeconds")
    active_deadline = spec.int("activeDeadlineSeconds")
    if active_deadline is not None and active_deadline <= 0:
        raise spec.error(f"must be positive, got {active_deadline}", "activeDeadlineSeconds")
    priority = spec.int("priority")
    problem = None if priority is None else int32_problem(priority)
    if problem is not None:
        raise spec.error(problem, "priority")

    fields: dict[str, Any] = {}
    if status is not None:
        phase = status.str("phase", default="Pending")
        if phase not in PHASES:
            raise status.error(f'unknown phase "{phase}" (expected one of {", ".join(PHASES)})', "phase")
        fields["phase"] = phase
        for condition in status.items("conditions"):
            kind = condition.str("type")
            if kind == "Ready":
                fields["ready"] = condition.str("status") == "True"
                fields["ready_transition"] = condition.timestamp("lastTransitionTime")
            elif kind == "PodScheduled":
                fields["scheduled_status"] = condition.str("status", default="")
                fields["scheduled_reason"] = condition.str("reason", default="")
                fields["scheduled_transition"] = condition.timestamp("lastTransitionTime")
        fields["start_time"] = status.timestamp("startTime")
        fields["nominated_node_name"] = status.str("nominatedNodeName", default="")
        fields["restarts"] = max(
            (s.int("restartCount", default=0) for s in status.items("containerStatuses")), default=0
        )
        sidecar_names = {c.name for c in init_containers if c.sidecar}
        fields["sidecar_restarts"] = max(
            (
                s.int("restartCount", default=0)
                for s in status.items("initContainerStatuses")
                if s.str("name") in sidecar_names
            ),
            default=0,
        )

    return Pod(
        meta=meta,
        requests=requests,
        limits=limits,
        containers=containers,
        init_containers=init_containers,
        node_name=spec.str("nodeName", default=""),
        node_selector=spec.str_map("nodeSelector"),
        affinity=_parse_affinity(spec),
        tolerations=tuple(parse_toleration(t) for t in spec.items("tolerations")),
        topology_spread=_parse_spreads(spec),
        volumes=tuple(_parse_volume(v) for v in spec.items("volumes")),
        priority=priority or 0,
        priority_class_name=spec.str("priorityClassName", default=""),
        explicit_priority=priority is not None,
        termination_grace_period=grace,
        active_deadline_seconds=active_deadline,
        host_network=host_network,
        scheduler_name=spec.str("schedulerName", default="default-scheduler"),
        **fields,
    )


def parse_pod(reader: Reader) -> Pod:
    meta = parse_meta(reader, "Pod", namespaced=True)
    return parse_pod_spec(reader, meta, reader.child("status"))
