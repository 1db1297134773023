"""The status document, in Cluster Autoscaler's YAML format (kube-system/cluster-autoscaler-status).

The document is what `ClusterActions.write_status` carries, so it sits beside the ports and
depends on nothing in the autoscaler; `clusterstate.status.StatusBuilder` fills it from the
registry.

The dataclasses mirror CA's clusterstate/api types (ClusterAutoscalerStatus and below); each
field's YAML key is its name in camelCase, which is exactly CA's key. Like CA, probe and transition
times are RFC 3339 at whole seconds (metav1.Time) and ``time`` uses CA's ConfigMap timestamp
format ("2006-01-02 15:04:05.999999999 -0700 MST"), always UTC. Times are kept as the strings
written, so a document parsed back compares equal to the one built.

Differences from CA, on purpose: counts and candidates are written even when zero (CA omits some
zero values); ``backoffInfo`` is written only when the group is in Backoff; a group's ``scaleUp`` also says,
kubetide's own, ``neverReady`` while the group holds nodes that registered and never became Ready
(UC3: not scaled up until they are Ready or gone, whatever its status says), and
``providerFailure`` when its cloud provider gave no template or failed with a ProviderError
(ports.py) this loop (the reason, CA's error type, the message). The cluster-wide
``scaleDown`` also lists, kubetide's own and only when there are any, the ``drains`` the planner
would start (estimated time, PodDisruptionBudget waves, why a node is risky), the nodes
``waitingForBudget`` (with their estimated drain time once the budget is back), the
``estimatedSecondsToLastRemoval`` of them all (scheduled under the budgets and
max-drain-parallelism), and ``unremovable`` nodes (at most 50): those blocked by pods, with the
first blocking pod in the Cluster Autoscaler's order and "+N more", and what would unblock each
when --annotate-scale-down-blockers has the planner find it. ``resourceUnready`` is
always 0: kubetide does not model nodes unready for lack of a device plugin resource.
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

import yaml

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
class ProviderFailure:
    """kubetide's own: why scale-up passed the group over for its cloud provider's answer this
    loop. `reason` is the Event's reason too (NoTemplateNode, FailedToGetTemplateNode,
    FailedToGetNodePrice); `errorCode` is CA's error type (cloudProviderError,
    configurationError), empty when the group simply has no template."""

    reason: str = ""
    error_code: str = ""
    error_message: str = ""


@dataclass(frozen=True, slots=True)
class NodeGroupScaleUpCondition:
    status: str = ""
    backoff_info: BackoffInfo | None = None
    last_probe_time: str = ""
    last_transition_time: str = ""
    # kubetide's own, written only when the group holds nodes that registered and never became
    # Ready (UC3): why scale-up leaves it alone, in one line naming them.
    never_ready: str | None = None
    # kubetide's own, written only when the provider's answer made scale-up pass the group over.
    provider_failure: ProviderFailure | None = None


@dataclass(frozen=True, slots=True)
class ScaleDownCondition:
    status: str = ""
    candidates: int = 0
    last_probe_time: str = ""
    last_transition_time: str = ""


@dataclass(frozen=True, slots=True)
class DrainStatus:
    """kubetide's own: a scale-down candidate with pods to evict, and how long it should take."""

    node: str = ""
    estimated_drain_seconds: int = 0
    waves: int = 1
    risky: str = ""  # why its PodDisruptionBudgets let it go only pod by pod; empty when they do not


@dataclass(frozen=True, slots=True)
class WaitingNode:
    """kubetide's own: an unneeded node held back only by budget other drains use for now."""

    node: str = ""
    reason: str = ""
    # From the schedule of the whole scale-down: seconds from its taint to empty, once it starts.
    estimated_drain_seconds: int | None = None


@dataclass(frozen=True, slots=True)
class UnremovableNode:
    """kubetide's own: a node blocked by pods, or one the planner found a way to unblock."""

    node: str = ""
    reason: str = ""
    # the first blocking pod as the Cluster Autoscaler orders them, then "+N more"
    blocking_pods: str = ""
    # what would unblock it, in one line (--annotate-scale-down-blockers; always for a single
    # replica its budget holds without --surge-before-evict)
    unblock: str = ""


@dataclass(frozen=True, slots=True)
class ClusterScaleDownCondition(ScaleDownCondition):
    # kubetide's own, written only when there is something to say (None otherwise).
    # Seconds until the last of the drains and waiting nodes is empty, scheduled on paper.
    estimated_seconds_to_last_removal: int | None = None
    drains: tuple[DrainStatus, ...] | None = None
    waiting_for_budget: tuple[WaitingNode, ...] | None = None
    unremovable: tuple[UnremovableNode, ...] | None = None


@dataclass(frozen=True, slots=True)
class ClusterWideStatus:
    health: ClusterHealthCondition = ClusterHealthCondition()
    scale_up: ClusterScaleUpCondition = ClusterScaleUpCondition()
    scale_down: ClusterScaleDownCondition = ClusterScaleDownCondition()


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
    status: ClusterAutoscalerStatus = _from_dict(ClusterAutoscalerStatus, data)
    return status


def to_dict(obj: typing.Any) -> dict[str, typing.Any]:
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


def _from_dict(cls: type, data: Mapping[str, typing.Any]) -> typing.Any:
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
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
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
