"""The status document, in Cluster Autoscaler's YAML format (kube-system/cluster-autoscaler-status).

The dataclasses mirror CA's clusterstate/api types (ClusterAutoscalerStatus and below); each
field's YAML key is its name in camelCase, which is exactly CA's key. Like CA, probe and transition
times are RFC 3339 at whole seconds (metav1.Time) and ``time`` uses CA's ConfigMap timestamp
format ("2006-01-02 15:04:05.999999999 -0700 MST"), always UTC. Times are kept as the strings
written, so a document parsed back compares equal to the one built.

Differences from CA, on purpose: counts and candidates are written even when zero (CA omits some
zero values); ``backoffInfo`` is written only when the group is in Backoff. ``resourceUnready`` is
always 0: kubetide does not model nodes unready for lack of a device plugin resource.
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

import yaml

from kubetide.autoscaler.clusterstate.records import HealthRecord, NodeCounts
from kubetide.autoscaler.clusterstate.registry import ClusterStateRegistry
from kubetide.durations import rfc3339
from kubetide.model.reader import parse_time

RUNNING = "Running"
INITIALIZING = "Initializing"

HEALTHY = "Healthy"
UNHEALTHY = "Unhealthy"
NEEDED = "Needed"
NOT_NEEDED = "NotNeeded"
IN_PROGRESS = "InProgress"
NO_ACTIVITY = "NoActivity"
BACKOFF = "Backoff"
CANDIDATES_PRESENT = "CandidatesPresent"
NO_CANDIDATES = "NoCandidates"


# ------------------------------------------------------------------------------- the document


@dataclass(frozen=True, slots=True)
class RegisteredUnreadyNodeCount:
    total: int = 0
    resource_unready: int = 0


@dataclass(frozen=True, slots=True)
class RegisteredNodeCount:
    total: int = 0
    ready: int = 0
    not_started: int = 0
    being_deleted: int = 0
    unready: RegisteredUnreadyNodeCount = RegisteredUnreadyNodeCount()


@dataclass(frozen=True, slots=True)
class NodeCount:
    registered: RegisteredNodeCount = RegisteredNodeCount()
    long_unregistered: int = 0
    unregistered: int = 0


@dataclass(frozen=True, slots=True)
class ClusterHealthCondition:
    status: str = ""
    node_counts: NodeCount = NodeCount()
    last_probe_time: str = ""
    last_transition_time: str = ""


@dataclass(frozen=True, slots=True)
class NodeGroupHealthCondition:
    status: str = ""
    node_counts: NodeCount = NodeCount()
    cloud_provider_target: int = 0
    min_size: int = 0
    max_size: int = 0
    last_probe_time: str = ""
    last_transition_time: str = ""


@dataclass(frozen=True, slots=True)
class ClusterScaleUpCondition:
    status: str = ""
    last_probe_time: str = ""
    last_transition_time: str = ""


@dataclass(frozen=True, slots=True)
class BackoffInfo:
    error_code: str = ""
    error_message: str = ""


@dataclass(frozen=True, slots=True)
class NodeGroupScaleUpCondition:
    status: str = ""
    backoff_info: BackoffInfo | None = None
    last_probe_time: str = ""
    last_transition_time: str = ""


@dataclass(frozen=True, slots=True)
class ScaleDownCondition:
    status: str = ""
    candidates: int = 0
    last_probe_time: str = ""
    last_transition_time: str = ""


@dataclass(frozen=True, slots=True)
class ClusterWideStatus:
    health: ClusterHealthCondition = ClusterHealthCondition()
    scale_up: ClusterScaleUpCondition = ClusterScaleUpCondition()
    scale_down: ScaleDownCondition = ScaleDownCondition()


@dataclass(frozen=True, slots=True)
class NodeGroupStatus:
    name: str = ""
    health: NodeGroupHealthCondition = NodeGroupHealthCondition()
    scale_up: NodeGroupScaleUpCondition = NodeGroupScaleUpCondition()
    scale_down: ScaleDownCondition = ScaleDownCondition()


@dataclass(frozen=True, slots=True)
class ClusterAutoscalerStatus:
    time: str = ""
    autoscaler_status: str = ""
    message: str = ""
    cluster_wide: ClusterWideStatus = ClusterWideStatus()
    node_groups: tuple[NodeGroupStatus, ...] = ()

    def node_group(self, name: str) -> NodeGroupStatus | None:
        return next((g for g in self.node_groups if g.name == name), None)


# ----------------------------------------------------------------------------- YAML in and out


_Dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def status_yaml(status: ClusterAutoscalerStatus) -> str:
    """The document as the ConfigMap's ``status`` key holds it."""
    # Written every loop: libyaml's emitter is an order of magnitude faster than PyYAML's own.
    return yaml.dump(
        to_dict(status), Dumper=_Dumper, sort_keys=False, default_flow_style=False, allow_unicode=True
    )


def parse_status_yaml(text: str) -> ClusterAutoscalerStatus:
    """Read a status document back (unknown keys are ignored, missing ones take defaults)."""
    data = yaml.safe_load(text)
    if not isinstance(data, Mapping):
        raise ValueError("a status document is a YAML mapping")
    return _from_dict(ClusterAutoscalerStatus, data)


def to_dict(obj: typing.Any) -> dict:
    result: dict[str, typing.Any] = {}
    for f in dataclasses.fields(obj):
        value = getattr(obj, f.name)
        if value is None:
            continue
        if dataclasses.is_dataclass(value):
            value = to_dict(value)
        elif isinstance(value, tuple):
            value = [to_dict(v) for v in value]
        result[yaml_key(f.name)] = value
    return result


def yaml_key(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.capitalize() for part in rest)


def _from_dict(cls: type, data: Mapping) -> typing.Any:
    hints = typing.get_type_hints(cls)
    values = {}
    for f in dataclasses.fields(cls):
        key = yaml_key(f.name)
        if key in data and data[key] is not None:
            values[f.name] = _convert(hints[f.name], data[key], key)
    return cls(**values)


def _convert(hint: typing.Any, value: typing.Any, key: str) -> typing.Any:
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        (hint,) = [a for a in typing.get_args(hint) if a is not type(None)]
        origin = typing.get_origin(hint)
    if origin is tuple:
        item = typing.get_args(hint)[0]
        if not isinstance(value, list):
            raise ValueError(f"{key}: expected a list")
        return tuple(_convert(item, v, key) for v in value)
    if dataclasses.is_dataclass(hint):
        if not isinstance(value, Mapping):
            raise ValueError(f"{key}: expected a mapping")
        return _from_dict(hint, value)
    if hint is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"{key}: expected an integer, got {value!r}")
        return value
    if isinstance(value, datetime):  # an unquoted RFC 3339 time, as PyYAML reads it
        return rfc3339(value.replace(tzinfo=value.tzinfo or UTC).timestamp())
    return str(value)


# ---------------------------------------------------------------------------------- the times


def status_time(moment: float) -> str:
    """Unix seconds in CA's ConfigMap timestamp format, e.g. ``2026-01-01 00:00:10.5 +0000 UTC``."""
    seconds = math.floor(moment)
    micros = round((moment - seconds) * 1_000_000)
    if micros == 1_000_000:
        seconds, micros = seconds + 1, 0
    text = datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%d %H:%M:%S")
    if micros:
        text += "." + f"{micros:06d}".rstrip("0")
    return text + " +0000 UTC"


def parse_status_timestamp(text: str) -> float:
    """Either time format of the document back to Unix seconds."""
    if text.endswith(" UTC"):
        stamp, _, offset = text.removesuffix(" UTC").rpartition(" ")
        return parse_time(stamp.replace(" ", "T") + offset[:3] + ":" + offset[3:])
    return parse_time(text)


# --------------------------------------------------------------------------------- the builder


@dataclass(frozen=True, slots=True)
class ScaleUpSummary:
    """What scale-up concluded this loop; the loop fills it from the scale-up result."""

    evaluated: bool = False  # scale-up ran (False when the loop halted or skipped it)
    pods_needing_nodes: int = 0  # pending pods no existing or upcoming node can take
    backed_off: bool = False  # such pods exist and every group that could take them is backed off


@dataclass(frozen=True, slots=True)
class ScaleDownSummary:
    """The scale-down candidates (unneeded nodes) per node group, as the planner left them."""

    candidates: Mapping[str, Sequence[str]] = field(default_factory=dict)


class StatusBuilder:
    """Builds the status each loop and keeps the lastTransitionTime of every condition."""

    def __init__(self) -> None:
        self._since: dict[tuple[str, str], tuple[str, float]] = {}
        self._scale_down: ScaleDownSummary = ScaleDownSummary()
        self._scale_down_probe: float | None = None

    def build(
        self,
        registry: ClusterStateRegistry,
        now: float,
        scale_up: ScaleUpSummary | None = None,
        scale_down: ScaleDownSummary | None = None,
        message: str = "",
    ) -> ClusterAutoscalerStatus:
        """The document for this loop. ``scale_down=None`` repeats the last summary given."""
        if scale_down is not None:
            self._scale_down, self._scale_down_probe = scale_down, now
        down_probe = self._scale_down_probe if self._scale_down_probe is not None else now
        candidates = self._scale_down.candidates

        groups = []
        any_in_progress = False
        for state in registry.node_groups():
            group_id = state.id
            health = registry.node_group_health(group_id)
            backoff = registry.backoff_status(group_id, now)
            if registry.is_node_group_scaling_up(group_id):
                up_status, info = IN_PROGRESS, None
                any_in_progress = True
            elif not registry.is_node_group_healthy(group_id):
                up_status, info = UNHEALTHY, None
            elif backoff.backed_off:
                error = backoff.error
                up_status = BACKOFF
                info = BackoffInfo(error.code, error.message) if error else BackoffInfo()
            else:
                up_status, info = NO_ACTIVITY, None
            group_candidates = len(candidates.get(group_id, ()))
            groups.append(
                NodeGroupStatus(
                    name=group_id,
                    health=NodeGroupHealthCondition(
                        status=_health_status(health),
                        node_counts=_node_count(state.counts),
                        cloud_provider_target=state.target,
                        min_size=state.min_size,
                        max_size=state.max_size,
                        last_probe_time=rfc3339(health.last_probe_time if health else now),
                        last_transition_time=rfc3339(health.last_transition_time if health else now),
                    ),
                    scale_up=NodeGroupScaleUpCondition(
                        up_status, info, rfc3339(now), self._transition(group_id, "scaleUp", up_status, now)
                    ),
                    scale_down=self._scale_down_condition(group_id, group_candidates, down_probe),
                )
            )

        if any_in_progress:
            cluster_up = IN_PROGRESS
        elif scale_up is None or not scale_up.evaluated:
            cluster_up = NO_ACTIVITY
        elif scale_up.pods_needing_nodes > 0:
            cluster_up = BACKOFF if scale_up.backed_off else NEEDED
        else:
            cluster_up = NOT_NEEDED
        health = registry.cluster_health()
        total_candidates = sum(len(names) for names in candidates.values())
        return ClusterAutoscalerStatus(
            time=status_time(now),
            autoscaler_status=RUNNING if registry.last_update is not None else INITIALIZING,
            message=message,
            cluster_wide=ClusterWideStatus(
                health=ClusterHealthCondition(
                    status=_health_status(health),
                    node_counts=_node_count(registry.node_counts()),
                    last_probe_time=rfc3339(health.last_probe_time if health else now),
                    last_transition_time=rfc3339(health.last_transition_time if health else now),
                ),
                scale_up=ClusterScaleUpCondition(
                    cluster_up, rfc3339(now), self._transition("", "scaleUp", cluster_up, now)
                ),
                scale_down=self._scale_down_condition("", total_candidates, down_probe),
            ),
            node_groups=tuple(groups),
        )

    def status_yaml(self, registry: ClusterStateRegistry, now: float, **summaries: typing.Any) -> str:
        return status_yaml(self.build(registry, now, **summaries))

    def _scale_down_condition(self, scope: str, candidates: int, probe: float) -> ScaleDownCondition:
        status = CANDIDATES_PRESENT if candidates else NO_CANDIDATES
        since = self._transition(scope, "scaleDown", status, probe)
        return ScaleDownCondition(status, candidates, rfc3339(probe), since)

    def _transition(self, scope: str, kind: str, status: str, now: float) -> str:
        previous = self._since.get((scope, kind))
        if previous is None or previous[0] != status:
            previous = (status, now)
            self._since[(scope, kind)] = previous
        return rfc3339(previous[1])


def _health_status(record: HealthRecord | None) -> str:
    return HEALTHY if record is None or record.healthy else UNHEALTHY


def _node_count(counts: NodeCounts) -> NodeCount:
    return NodeCount(
        registered=RegisteredNodeCount(
            total=counts.registered,
            ready=counts.ready,
            not_started=counts.not_started,
            being_deleted=counts.being_deleted,
            unready=RegisteredUnreadyNodeCount(total=counts.unready),
        ),
        long_unregistered=counts.long_unregistered,
        unregistered=counts.unregistered,
    )
