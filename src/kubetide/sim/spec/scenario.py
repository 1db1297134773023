"""Scenario files: what cluster to simulate, for how long, and what happens to it.

The file is validated in two passes. The pydantic models below check the shape (unknown fields are
errors, with a did-you-mean); then `load_scenario` parses what the models leave as raw data (node
templates, manifests, autoscaler flags, trace files) with the model's own readers. Every error
becomes one `ScenarioError` line naming the file and the field path, for example
`scenario.yaml: spec.nodeGroups[0].maxSize: must be at least minSize (3), got 2`, and nothing runs.
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import typing
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal, TypeAlias

from pydantic import Field, ValidationError, field_validator, model_validator

from kubetide.autoscaler.karpenter.nodepools import NodePool
from kubetide.autoscaler.options import AutoscalerOptions, parse_options
from kubetide.cloud.schema import NODE_GROUP_LABEL as NODE_GROUP_LABEL  # re-exported for sim/
from kubetide.cloud.schema import Delay, Duration, NodeGroupSpec, first_error, read_spec_documents
from kubetide.cloud.schema import StrictModel as _Model
from kubetide.cloud.schema import duration as _duration
from kubetide.cloud.schema import parse_template as _parse_template
from kubetide.cloud.static import group_key
from kubetide.durations import format_duration, rfc3339
from kubetide.model import Manifests, Node
from kubetide.model.cronjob import check_time_zone
from kubetide.model.loader import resolve_priorities
from kubetide.model.timestamps import LATEST_TIME, newest_timestamp
from kubetide.model.warnings import controller_warnings
from kubetide.sim.spec.errors import ScenarioError
from kubetide.sim.spec.files import csv_rows, read_manifests, read_relative
from kubetide.sim.spec.limits import DEFAULT_LIMITS, Limits
from kubetide.sim.spec.nodepools import NodePoolSpec, load_node_pools
from kubetide.sim.spec.qos import QosSettings, QosSpec, load_qos
from kubetide.sim.spec.usage import UsageSpec

API_VERSION = "kubetide.io/v1alpha1"
FAULT_TYPES = (
    "stockout",
    "nodeNeverReady",
    "nodeNeverRegisters",
    "nodeNotReady",
    "nodeReady",
    "cloudError",
    "autoscalerRestart",
)
RUN_DURATION_ANNOTATION = "kubetide.io/run-duration"
# Simulated second 0 of a scenario without dated objects: 2026-01-01T00:00:00Z (never a falsy 0.0).
EPOCH = 1_767_225_600.0

# What the simulator runs in minutes and a few GB on a laptop. Longer scenarios are refused up
# front rather than left to run for hours; sizes are limited by limits.py, which --limit lifts.
MAX_DURATION = 30 * 24 * 3600.0  # seconds of simulated time
MAX_GROUP_SIZE = DEFAULT_LIMITS.nodes  # the default nodes limit (cli/scenario.py caps groups at it)
INT32_MAX = 2**31 - 1  # replicas are int32 in the Kubernetes API


# -- shape -----------------------------------------------------------------------------------
# Node groups (NodeGroupSpec, Delay, Duration) are in kubetide.cloud.schema, shared with GROUPS.yaml.


class Metadata(_Model):
    name: str = Field(min_length=1, pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
    description: str = ""


class ObjectRef(_Model):
    kind: Literal[
        "Deployment",
        "ReplicaSet",
        "StatefulSet",
        "DaemonSet",
        "Job",
        "Pod",
        "PodDisruptionBudget",
        "HorizontalPodAutoscaler",
        "CronJob",
        "Namespace",
    ]
    namespace: str = "default"
    name: str = Field(min_length=1)


class ScaleSpec(_Model):
    kind: Literal["Deployment", "ReplicaSet", "StatefulSet", "Job"]
    namespace: str = "default"
    name: str = Field(min_length=1)
    replicas: int = Field(ge=0, le=INT32_MAX)


class FaultSpec(_Model):
    type: Literal[FAULT_TYPES]  # type: ignore[valid-type]
    nodeGroup: str | None = None
    count: int | None = Field(default=None, ge=1)
    duration: Duration | None = None

    @model_validator(mode="after")
    def _group(self) -> FaultSpec:
        if self.type != "autoscalerRestart" and not self.nodeGroup:
            raise ValueError(f"a {self.type} fault needs nodeGroup")
        return self


class RestartSpec(_Model):
    """`kubectl rollout restart`: the template's restartedAt annotation set to the event's time."""

    kind: Literal["Deployment"] = "Deployment"
    namespace: str = "default"
    name: str = Field(min_length=1)


class SetImageSpec(_Model):
    """`kubectl set image`: new images for containers of a Deployment's pod template."""

    kind: Literal["Deployment"] = "Deployment"
    namespace: str = "default"
    name: str = Field(min_length=1)
    images: dict[str, str] = Field(min_length=1)  # container name -> image

    @field_validator("images")
    @classmethod
    def _images(cls, images: dict[str, str]) -> dict[str, str]:
        for container, image in images.items():
            if not container:
                raise ValueError("a container name must not be empty")
            if not image.strip():
                raise ValueError(f'the image of container "{container}" must not be empty')
        return images


class EventSpec(_Model):
    """One spec.events entry: `at` and exactly one of the kinds (its key names it)."""

    at: Duration
    scale: ScaleSpec | None = None
    apply: list[dict[str, Any]] | None = None
    delete: ObjectRef | None = None
    fault: FaultSpec | None = None
    restart: RestartSpec | None = None
    setImage: SetImageSpec | None = None

    @model_validator(mode="before")
    @classmethod
    def _known_kind(cls, data: Any) -> Any:
        if isinstance(data, dict):
            for key in data:
                if key != "at" and key not in EVENT_KINDS:
                    close = difflib.get_close_matches(str(key), ("at", *EVENT_KINDS), n=1)
                    hint = f' (did you mean "{close[0]}"?)' if close else ""
                    raise ValueError(
                        f'unknown event kind "{key}"{hint}; the kinds are {", ".join(EVENT_KINDS)}'
                    )
        return data

    @model_validator(mode="after")
    def _one_action(self) -> EventSpec:
        actions = [name for name in EVENT_KINDS if getattr(self, name) is not None]
        if len(actions) != 1:
            found = ", ".join(actions) or "none"
            raise ValueError(
                f"an event needs exactly one of scale, apply, delete, fault, restart or setImage (found {found})"
            )
        return self


class TraceSpec(_Model):
    """Replicas over time for a Deployment, from a CSV file with columns `time,replicas`."""

    kind: Literal["Deployment", "ReplicaSet", "StatefulSet"] = "Deployment"
    namespace: str = "default"
    name: str = Field(min_length=1)
    file: str = Field(min_length=1)


class HpaControllerSpec(_Model):
    """kube-controller-manager's HPA flags, by their names, with its defaults."""

    syncPeriod: Duration = Field(default=15.0, ge=1.0)
    tolerance: float = Field(default=0.1, ge=0.0)
    downscaleStabilization: Duration = 300.0
    cpuInitializationPeriod: Duration = 300.0
    initialReadinessDelay: Duration = 30.0


class ClusterSpec(_Model):
    """How fast the simulated control plane and kubelets react."""

    podStartupDelay: Delay = Delay.model_validate({"min": "2s", "max": "8s"})  # bound -> Running and Ready
    controllerDelay: Delay = Delay.model_validate(
        {"min": "1s", "max": "1s"}
    )  # a pod is gone -> its replacement is created
    # At most one scheduling pass this often; shorter would re-arm the pass at one instant forever.
    schedulerInterval: Duration = Field(default=1.0, ge=0.1)
    jobRunDuration: Duration = 600.0  # when a Job's pods carry no kubetide.io/run-duration
    notReadyTolerationSeconds: int = Field(default=300, ge=0, le=2**31 - 1)  # DefaultTolerationSeconds
    # kube-controller-manager's --horizontal-pod-autoscaler-* flags (sim/runtime/hpa.py)
    horizontalPodAutoscaler: HpaControllerSpec = HpaControllerSpec()
    # The zone CronJobs without spec.timeZone are scheduled in (kube-controller-manager's own).
    timeZone: str = "UTC"

    @field_validator("timeZone")
    @classmethod
    def _zone(cls, value: str) -> str:
        check_time_zone(value)
        return value


class WorkloadRanking(_Model):
    logarithmic: bool = True


class CompareQosSpec(_Model):
    precise: bool


class CompareSpec(_Model):
    """One column of spec.compare: a name (its directory under --out) and the flags it changes."""

    name: str = Field(pattern=r"^[A-Za-z0-9][-A-Za-z0-9_]{0,62}$")
    autoscaler: dict[str, Any] = Field(default_factory=dict)
    qos: CompareQosSpec | None = None  # spec.qos.precise for this run


class Spec(_Model):
    duration: Duration
    seed: int = 0
    # `flag: value`, or the Cluster Autoscaler container's `args:` list as it is.
    autoscaler: dict[str, Any] | list[Any] = Field(default_factory=dict)
    nodeGroups: list[NodeGroupSpec] = Field(min_length=1)
    nodePools: list[NodePoolSpec] = Field(default_factory=list)  # policy karpenter's NodePools
    objects: list[dict[str, Any]] = Field(default_factory=list)
    events: list[EventSpec] = Field(default_factory=list)
    traces: list[TraceSpec] = Field(default_factory=list)
    cluster: ClusterSpec = ClusterSpec()
    workloadRanking: WorkloadRanking = WorkloadRanking()
    usage: list[UsageSpec] = Field(default_factory=list)
    qos: QosSpec | None = None
    compare: list[CompareSpec] = Field(default_factory=list)

    @field_validator("autoscaler", mode="before")
    @classmethod
    def _flags(cls, value: Any) -> Any:
        if not isinstance(value, dict | list):
            raise ValueError(
                "expected a map of flags (scan-interval: 10s) or a list of args (- --scan-interval=10s)"
            )
        return value

    @model_validator(mode="after")
    def _positive(self) -> Spec:
        if self.duration <= 0:
            raise ValueError("duration must be positive")
        return self


class ScenarioDocument(_Model):
    apiVersion: Literal["kubetide.io/v1alpha1"]
    kind: Literal["Scenario"]
    metadata: Metadata
    spec: Spec


def check_duration(seconds: float) -> None:
    """Raise ValueError if the simulator cannot run this long (spec.duration, --duration)."""
    if seconds > MAX_DURATION:
        raise ValueError(
            f"{format_duration(seconds)} is too long for the simulator on this machine "
            f"(at most {format_duration(MAX_DURATION)})"
        )


# -- loaded form -----------------------------------------------------------------------------


@dataclass(frozen=True)
class GroupConfig:
    name: str
    min_size: int
    max_size: int
    initial_size: int
    price: float
    provisioning_delay: Delay
    ready_delay: Delay
    deletion_delay: Delay
    template: Node


# Scenario events: something the scenario makes happen `at` seconds after the start, one frozen
# class per kind. `kind` is the key that names it in spec.events; `field` is where it came from,
# for messages (spec.events[3], or a trace's row). `_parse_event` builds them from the file and
# the simulator dispatches them with a `match` that ends in assert_never: mypy fails on a kind
# added here and not handled there.


@dataclass(frozen=True, slots=True)
class _TimedEvent:
    """What every event has: when it happens and where it was written."""

    at: float
    field: str


@dataclass(frozen=True, slots=True)
class ScaleEvent(_TimedEvent):
    """A workload's replicas set (spec.events[].scale, or a row of a trace)."""

    kind: ClassVar[str] = "scale"
    target: ScaleSpec


@dataclass(frozen=True, slots=True)
class ApplyEvent(_TimedEvent):
    """Objects created or replaced (`kubectl apply`)."""

    kind: ClassVar[str] = "apply"
    manifests: Manifests


@dataclass(frozen=True, slots=True)
class DeleteEvent(_TimedEvent):
    """An object deleted."""

    kind: ClassVar[str] = "delete"
    target: ObjectRef


@dataclass(frozen=True, slots=True)
class FaultEvent(_TimedEvent):
    """A cloud or node fault injected (stockout, nodes never Ready, an autoscaler restart...)."""

    kind: ClassVar[str] = "fault"
    fault: FaultSpec


@dataclass(frozen=True, slots=True)
class RestartEvent(_TimedEvent):
    """`kubectl rollout restart` of a Deployment."""

    kind: ClassVar[str] = "restart"
    target: RestartSpec


@dataclass(frozen=True, slots=True)
class SetImageEvent(_TimedEvent):
    """`kubectl set image` on a Deployment."""

    kind: ClassVar[str] = "setImage"
    target: SetImageSpec


ScenarioEvent: TypeAlias = ScaleEvent | ApplyEvent | DeleteEvent | FaultEvent | RestartEvent | SetImageEvent
# The keys of spec.events entries, in the order the messages list them.
EVENT_KINDS = tuple(kind.kind for kind in typing.get_args(ScenarioEvent))


@dataclass(frozen=True)
class CompareEntry:
    """A checked spec.compare entry (sweep/compare.py runs them)."""

    name: str
    autoscaler: dict[str, Any]
    qos_precise: bool | None


@dataclass
class Scenario:
    name: str
    description: str
    source: str
    seed: int
    duration: float
    options: AutoscalerOptions
    groups: list[GroupConfig]
    objects: Manifests
    events: list[ScenarioEvent]
    cluster: ClusterSpec
    logarithmic_ranking: bool = True
    warnings: list[str] = field(default_factory=list)
    qos: QosSettings | None = None  # spec.qos and the usage profiles; None: no QoS agent
    compare: list[CompareEntry] = field(default_factory=list)
    start: float = EPOCH  # the Unix time simulated second 0 stands for
    usage: Any = None  # sim.usage.UsageModel: the pods' usage profiles (HPAs and the QoS agent)
    limits: Limits = DEFAULT_LIMITS  # what it was loaded within; its runs are held to them too
    node_pools: tuple[NodePool, ...] = ()  # spec.nodePools (policy karpenter); none: one default pool

    def with_duration(self, seconds: float) -> Scenario:
        """The same scenario cut (or stretched) to `seconds`; later events are dropped."""
        return dataclasses.replace(self, duration=seconds, events=[e for e in self.events if e.at <= seconds])


# -- loading ---------------------------------------------------------------------------------


def load_scenario(path: str | Path, limits: Limits = DEFAULT_LIMITS) -> Scenario:
    path = Path(path)
    return scenario_from_documents(read_spec_documents(path, ScenarioError), str(path), path.parent, limits)


def scenario_from_documents(
    documents: list[Any], source: str, base_dir: Path, limits: Limits = DEFAULT_LIMITS
) -> Scenario:
    """The Scenario of a file's decoded documents (cli/inputs.py reads `-` and checks the kind)."""
    if len(documents) != 1 or not isinstance(documents[0], dict):
        raise ScenarioError(source, "", "expected one YAML document with kind: Scenario")
    return parse_scenario(documents[0], source, base_dir=base_dir, limits=limits)


def parse_scenario(data: dict, source: str, base_dir: Path, limits: Limits = DEFAULT_LIMITS) -> Scenario:
    """The loaded scenario; ScenarioError on the first thing wrong with it, or over `limits`."""
    _check_counts(data.get("spec"), limits, source)  # before validating 10,000 node groups
    try:
        doc = ScenarioDocument.model_validate(data)
    except ValidationError as exc:
        raise _first_error(exc, source) from None
    spec = doc.spec
    _check(check_duration, spec.duration, source, "spec.duration")
    flag_warnings: list[str] = []
    ignored: list[str] = []
    options = parse_options(
        spec.autoscaler, source, "spec.autoscaler", warnings=flag_warnings, ignored=ignored
    )
    if ignored:
        flag_warnings.append(
            f"spec.autoscaler: infrastructure flags ignored in the simulator: {', '.join(ignored)}"
        )

    groups = []
    names: set[str] = set()
    for index, group in enumerate(spec.nodeGroups):
        where = f"spec.nodeGroups[{index}]"
        if group.name in names:
            raise ScenarioError(source, f"{where}.name", f'duplicate node group "{group.name}"')
        names.add(group.name)
        _within(limits, "nodes", group.maxSize, source, f"{where}.maxSize", "nodes")
        groups.append(
            GroupConfig(
                name=group.name,
                min_size=group.minSize,
                max_size=group.maxSize,
                initial_size=group.minSize if group.initialSize is None else group.initialSize,
                price=group.price,
                provisioning_delay=group.provisioningDelay,
                ready_delay=group.readyDelay,
                deletion_delay=group.deletionDelay,
                template=_template(group.template, group.name, source, f"{where}.template"),
            )
        )

    node_pools = load_node_pools(spec.nodePools, {g.name: g.template for g in groups}, source)
    objects = read_manifests(spec.objects, source, "spec.objects", base_dir)
    _check_starting_nodes(groups, objects, limits, source)
    _check_workload_sizes(objects, limits)
    # Objects from a cluster dump keep their times, and so their ages: the simulated clock starts
    # at the dump's newest time, so what the simulator prints is on the cluster's own clock.
    newest = newest_timestamp(objects)
    start = EPOCH if newest is None else newest
    if start + MAX_DURATION > LATEST_TIME:  # the API server takes times up to 9999-12-31
        raise ScenarioError(
            source,
            "spec.objects",
            f"the newest time the objects record ({rfc3339(start)}) leaves no room to simulate "
            "before the end of year 9999 (the simulated clock starts there)",
        )
    classes = list(objects.priority_classes)
    resolve_priorities(objects, source)

    events: list[ScenarioEvent] = []
    for index, event in enumerate(spec.events):
        where = f"spec.events[{index}]"
        if event.at > spec.duration:
            raise ScenarioError(
                source,
                f"{where}.at",
                f"{format_duration(event.at)} is after the end of the scenario ({format_duration(spec.duration)})",
            )
        events.append(_parse_event(event, where, source, base_dir, limits, names, classes))
    for loaded in events:  # once every apply is known: one may come later in the file
        if isinstance(loaded, RestartEvent | SetImageEvent):
            where = f"{loaded.field}.{loaded.kind}"
            _check_rollout_target(loaded.target, objects, events, source, where, loaded.at)
    for index, trace in enumerate(spec.traces):
        where = f"spec.traces[{index}]"
        events.extend(_trace_events(trace, source, where, base_dir, spec.duration, limits, len(events)))
    events.sort(key=lambda e: e.at)  # stable: same-time events keep file order
    warnings = [f"{source}: {w}" for w in flag_warnings] + list(objects.warnings)
    warnings += _ungrouped_nodes(objects, names, source)
    applied = [(f"{e.field}.apply", e.manifests) for e in events if isinstance(e, ApplyEvent)]
    warnings += controller_warnings([("spec.objects", objects), *applied], source)
    qos, usage = load_qos(
        spec.qos, spec.usage, spec.seed, [("spec.objects", objects), *applied], source, base_dir, warnings
    )
    compare = _compare(spec, options, source)
    _check_pods(objects, events, limits, source)

    return Scenario(
        name=doc.metadata.name,
        description=doc.metadata.description,
        source=source,
        seed=spec.seed,
        duration=spec.duration,
        options=options,
        groups=groups,
        objects=objects,
        events=events,
        cluster=spec.cluster,
        logarithmic_ranking=spec.workloadRanking.logarithmic,
        warnings=warnings,
        qos=qos,
        compare=compare,
        start=start,
        usage=usage,
        limits=limits,
        node_pools=node_pools,
    )


def _parse_event(
    event: EventSpec,
    where: str,
    source: str,
    base_dir: Path,
    limits: Limits,
    groups: set[str],
    classes: list[Any],
) -> ScenarioEvent:
    """The typed event of one spec.events entry (its shape already checked by EventSpec), its
    contents read and checked against the scenario: the node groups named, the limits, and the
    PriorityClasses known so far (`classes`, which an apply extends)."""
    at = event.at
    if event.scale is not None:
        _within(limits, "replicas", event.scale.replicas, source, f"{where}.scale.replicas", "pods")
        return ScaleEvent(at, where, event.scale)
    if event.apply is not None:
        manifests = read_manifests(event.apply, source, f"{where}.apply", base_dir)
        _check_workload_sizes(manifests, limits)
        classes.extend(manifests.priority_classes)
        known = Manifests(priority_classes=list(classes))
        known.pods, known.workloads = manifests.pods, manifests.workloads
        resolve_priorities(known, source)
        return ApplyEvent(at, where, manifests)
    if event.delete is not None:
        return DeleteEvent(at, where, event.delete)
    if event.restart is not None:
        return RestartEvent(at, where, event.restart)
    if event.setImage is not None:
        return SetImageEvent(at, where, event.setImage)
    fault = event.fault
    assert fault is not None  # EventSpec holds exactly one kind
    if fault.nodeGroup is not None and fault.nodeGroup not in groups:
        raise ScenarioError(
            source, f"{where}.fault.nodeGroup", _unknown("node group", fault.nodeGroup, groups)
        )
    if fault.count is not None:
        _within(limits, "nodes", fault.count, source, f"{where}.fault.count", "nodes")
    return FaultEvent(at, where, fault)


def _compare(spec: Spec, options: AutoscalerOptions, source: str) -> list[CompareEntry]:
    """spec.compare, each entry's flags checked as spec.autoscaler's are (over them)."""
    entries: list[CompareEntry] = []
    for index, entry in enumerate(spec.compare):
        where = f"spec.compare[{index}]"
        if any(e.name == entry.name for e in entries):
            raise ScenarioError(source, f"{where}.name", f'duplicate name "{entry.name}"')
        parse_options(entry.autoscaler, source, f"{where}.autoscaler", base=options)
        if entry.qos is not None and spec.qos is None:
            raise ScenarioError(source, f"{where}.qos", "needs spec.qos (the node QoS agent)")
        precise = None if entry.qos is None else entry.qos.precise
        entries.append(CompareEntry(entry.name, dict(entry.autoscaler), precise))
    if entries and spec.qos is not None and spec.qos.compare:
        raise ScenarioError(
            source,
            "spec.qos.compare",
            "give the QoS modes as spec.compare[].qos.precise when spec.compare is set",
        )
    return entries


def _ungrouped_nodes(objects: Manifests, groups: set[str], source: str) -> list[str]:
    """A warning for spec.objects nodes whose group label names no node group of the scenario:
    the simulator keeps them as plain nodes (sim/adoption.py), which is rarely what was meant."""
    strays: dict[str, list[str]] = {}
    for node in objects.nodes:
        key = group_key(node)
        if key is not None and key[1] not in groups:
            strays.setdefault(f"{key[0]}={key[1]}", []).append(node.name)
    if not strays:
        return []
    labels = ", ".join(f"{label} ({len(nodes)})" for label, nodes in strays.items())
    return [
        f"{source}: spec.objects: nodes labelled {labels} are in no node group of the scenario: "
        "kept, never autoscaled (name a group after the label's value to make them its instances)"
    ]


def _check_rollout_target(
    target: RestartSpec | SetImageSpec,
    objects: Manifests,
    earlier: list[ScenarioEvent],
    source: str,
    where: str,
    at: float,
) -> None:
    """A restart or setImage event names a Deployment of the scenario (in spec.objects or applied
    by an earlier event), and setImage only containers its template has."""
    versions = [w for w in objects.workloads if w.kind == "Deployment"]
    for event in earlier:
        if isinstance(event, ApplyEvent) and event.at <= at:
            versions.extend(w for w in event.manifests.workloads if w.kind == "Deployment")
    key = f"{target.namespace}/{target.name}"
    found = [w for w in versions if w.meta.key == key]
    if not found:
        known = {w.meta.key for w in versions}
        raise ScenarioError(source, f"{where}.name", _unknown("Deployment", key, known))
    if isinstance(target, SetImageSpec):
        names: set[str] = set()
        for workload in found:
            prototype = workload.template.prototype
            names.update(c.name for c in (*prototype.init_containers, *prototype.containers))
        for container in target.images:
            if container not in names:
                raise ScenarioError(
                    source,
                    f"{where}.images",
                    f'Deployment {key} has no container "{container}" (it has {", ".join(sorted(names))})',
                )


def _check(check: Callable[..., None], value: Any, source: str, field: str, *limits: Any) -> None:
    try:
        check(value, *limits)
    except ValueError as exc:
        raise ScenarioError(source, field, str(exc)) from None


def _within(limits: Limits, kind: str, value: int, source: str, field: str, unit: str) -> None:
    """ScenarioError naming `field` when `value` (of `unit`) is over the limit `kind`."""
    message = limits.over(kind, value, f"{value:,} {unit}")
    if message is not None:
        raise ScenarioError(source, field, message)


def _check_counts(spec: Any, limits: Limits, source: str) -> None:
    """spec.nodeGroups and spec.events within their limits, counted before they are validated."""
    if not isinstance(spec, dict):
        return  # the shape's error says what is wrong
    for name, kind, unit in (("nodeGroups", "node-groups", "node groups"), ("events", "events", "events")):
        entries = spec.get(name)
        if isinstance(entries, list):
            _within(limits, kind, len(entries), source, f"spec.{name}", unit)


def _origin(manifests: Manifests, identity: str) -> tuple[str, str]:
    """(file, location) an object was given at (`identity`: "Deployment shop/web")."""
    source, _, location = manifests.origins[identity].partition(": ")
    return source, location


def _check_workload_sizes(manifests: Manifests, limits: Limits) -> None:
    """Replicas, Job sizes and HPA maxReplicas within the replicas limit; the error names where
    the object was given."""
    for workload in manifests.workloads:
        for name, value in (
            ("replicas", workload.replicas),
            ("completions", workload.completions),
            ("parallelism", workload.parallelism),
        ):
            if value is not None:
                source, location = _origin(manifests, f"{workload.kind} {workload.meta.key}")
                _within(limits, "replicas", value, source, f"{location}: spec.{name}", "pods")
    for hpa in manifests.other.get("HorizontalPodAutoscaler", ()):
        source, location = _origin(manifests, f"HorizontalPodAutoscaler {hpa.meta.key}")
        _within(limits, "replicas", hpa.max_replicas, source, f"{location}: spec.maxReplicas", "pods")


def _check_starting_nodes(groups: list[GroupConfig], objects: Manifests, limits: Limits, source: str) -> None:
    """The nodes the scenario starts with (spec.objects' and every group's initial size) within
    the nodes limit; the error names the group whose initial size passes it."""
    count = len(objects.nodes)
    _within(limits, "nodes", count, source, "spec.objects", "nodes")
    for index, group in enumerate(groups):
        count += group.initial_size
        what = f"{count:,} nodes at the start (this group's initial size with those before it)"
        message = limits.over("nodes", count, what)
        if message is not None:
            raise ScenarioError(source, f"spec.nodeGroups[{index}]", message)


def _check_pods(objects: Manifests, events: list[ScenarioEvent], limits: Limits, source: str) -> None:
    """The most pods the scenario could ask for within the pods limit (most_pods says how they
    are counted); the error names the workload that asks for the most."""
    counts = most_pods(objects, events, source)
    total = sum(count for count, _ in counts.values())
    message = limits.over("pods", total, f"up to {total:,} pods in all")
    if message is None:
        return
    name, (count, where) = max(counts.items(), key=lambda item: item[1][0])
    at, _, field = where.partition(": ")
    raise ScenarioError(at, field, f"{message}; {name} asks for {count:,} of them here")


def most_pods(objects: Manifests, events: list[ScenarioEvent], source: str) -> dict[str, tuple[int, str]]:
    """Object -> (the most pods it could ask for at once, where that number was given as
    "file: field"), over spec.objects and every event:

    - a Deployment, ReplicaSet or StatefulSet: the most of its replicas in any version, any scale
      event or trace row, and its HPAs' maxReplicas (a rollout's surge pods are not counted);
    - a Job: its parallelism or completions, whichever is more (finished pods stay);
    - a CronJob: its Job's pods for the Job running and those its history limits keep;
    - a pod of no controller: 1. DaemonSets are not counted: they follow the nodes, which the
      nodes limit bounds, as are ReplicaSets a Deployment owns (its pods are the Deployment's).
    """
    counts: dict[str, tuple[int, str]] = {}

    def ask(key: str, count: int, where: str) -> None:
        if key not in counts or count > counts[key][0]:
            counts[key] = (count, where)

    for manifests in [objects] + [e.manifests for e in events if isinstance(e, ApplyEvent)]:

        def given(identity: str, field: str) -> str:
            return f"{manifests.origins.get(identity, source + ': spec.objects')}: {field}"  # noqa: B023

        for workload in manifests.workloads:
            owner = workload.meta.controller
            if workload.kind == "DaemonSet" or (owner is not None and owner.kind == "Deployment"):
                continue
            identity = f"{workload.kind} {workload.meta.key}"
            if workload.kind == "Job":
                parallelism, completions = workload.parallelism or 0, workload.completions or 0
                field = "spec.completions" if completions > parallelism else "spec.parallelism"
                ask(identity, max(parallelism, completions), given(identity, field))
            else:
                ask(identity, workload.replicas or 0, given(identity, "spec.replicas"))
        for hpa in manifests.other.get("HorizontalPodAutoscaler", ()):
            identity = f"HorizontalPodAutoscaler {hpa.meta.key}"
            target = f"{hpa.target_kind} {hpa.meta.namespace}/{hpa.target_name}"
            ask(target, hpa.max_replicas, given(identity, "spec.maxReplicas"))
        for cronjob in manifests.other.get("CronJob", ()):
            job = cronjob.job
            runs = 1 + cronjob.successful_jobs_history_limit + cronjob.failed_jobs_history_limit
            identity = f"CronJob {cronjob.meta.key}"
            ask(identity, runs * max(job.parallelism or 0, job.completions or 0), given(identity, "spec"))
        for pod in manifests.pods:
            if pod.meta.controller is None:
                identity = f"Pod {pod.meta.key}"
                ask(identity, 1, given(identity, "spec"))
    for event in events:
        if isinstance(event, ScaleEvent):
            scale = event.target
            field = event.field if event.field.startswith("spec.traces") else f"{event.field}.scale.replicas"
            ask(f"{scale.kind} {scale.namespace}/{scale.name}", scale.replicas, f"{source}: {field}")
    return counts


def _template(data: dict, group: str, source: str, where: str) -> Node:
    return _parse_template(data, group, source, where, ScenarioError)


def _trace_events(
    trace: TraceSpec, source: str, where: str, base_dir: Path, duration: float, limits: Limits, before: int
) -> list[ScenarioEvent]:
    """The scale events of a trace file's rows up to `duration`; `before`: the scenario's events
    before them, which count towards the events limit with them."""
    file = base_dir / trace.file
    text = read_relative(file, trace.file, source, f"{where}.file")
    events: list[ScenarioEvent] = []
    target = ScaleSpec(kind=trace.kind, namespace=trace.namespace, name=trace.name, replicas=0)
    for number, row in csv_rows(text, str(file)):
        if not row or row[0].strip().startswith("#"):
            continue
        if row[0].strip().lower() == "time":
            continue  # the header
        if len(row) != 2:
            raise ScenarioError(
                str(file), f"line {number}", f"expected two columns (time, replicas), got {len(row)}"
            )
        try:
            at = _trace_time(row[0])
        except ValueError as exc:
            raise ScenarioError(str(file), f"line {number}", f"time: {exc}") from None
        try:
            replicas = int(row[1].strip())
            if replicas < 0:
                raise ValueError
        except ValueError:
            raise ScenarioError(
                str(file), f"line {number}", f"replicas: expected a non-negative integer, got {row[1]!r}"
            ) from None
        _within(limits, "replicas", replicas, str(file), f"line {number}: replicas", "pods")
        if at <= duration:
            total = before + len(events) + 1
            _within(
                limits, "events", total, str(file), f"line {number}", "events (spec.events and trace rows)"
            )
            events.append(
                ScaleEvent(at, f"{where} line {number}", target.model_copy(update={"replicas": replicas}))
            )
    return events


def _trace_time(text: str) -> float:
    """A trace's time column: seconds (`90`) or a Go duration (`1h30m`)."""
    text = text.strip()
    try:
        seconds = float(text)
    except ValueError:
        return _duration(text)
    if not 0 <= seconds < math.inf:  # NaN fails this too
        raise ValueError(f"expected a non-negative number of seconds, got {text!r}")
    return seconds


def _unknown(what: str, name: str, known: set[str]) -> str:
    close = difflib.get_close_matches(name, sorted(known), n=1)
    hint = f' (did you mean "{close[0]}"?)' if close else ""
    return f'unknown {what} "{name}"{hint}'


# -- error messages --------------------------------------------------------------------------


def _first_error(exc: ValidationError, source: str) -> ScenarioError:
    path, message = first_error(exc, ScenarioDocument)
    return ScenarioError(source, path, message)
