"""What the autoscaler tells people through Kubernetes Events: one value type, one constructor
per reason, with the Cluster Autoscaler's reasons and messages so `kubectl get events` reads as
it does under CA.

An Event carries `at`, the decision's Clock time: an adapter that writes it later (a queue
behind the API server's rate limit) still stamps it with when it happened, not when it was
written. Events about the cluster as a whole go on the status ConfigMap, whose namespace and
name come from the options (`--namespace`, `--status-config-map-name`): `StatusObject.of(options)`.

Where CA uses one reason for two things on one node (ScaleDown when the node is marked
toBeDeleted and again when it is removed), the messages differ, so an event recorder that keys
Events by message as client-go's does keeps both; neither overwrites the other.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Protocol

from kubetide.durations import rfc3339


class EventType(enum.StrEnum):
    NORMAL = "Normal"
    WARNING = "Warning"


class _StatusLocation(Protocol):
    @property
    def namespace(self) -> str: ...

    @property
    def status_config_map_name(self) -> str: ...


@dataclass(frozen=True, slots=True)
class StatusObject:
    """The status ConfigMap, the object cluster-wide events are about."""

    namespace: str
    name: str

    @classmethod
    def of(cls, options: _StatusLocation) -> StatusObject:
        return cls(options.namespace, options.status_config_map_name)

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True, slots=True)
class Event:
    """One thing said about one object: `kind` and `key` ("ns/name", or "name" for a
    cluster-scoped object) name it; `at` is when it happened (Unix seconds, the Clock's)."""

    kind: str
    key: str
    type: EventType
    reason: str
    message: str
    at: float

    @property
    def namespace(self) -> str:
        return self.key.rpartition("/")[0]

    @property
    def name(self) -> str:
        return self.key.rpartition("/")[2]

    # -- the cluster as a whole (on the status ConfigMap) --------------------------------------
    @classmethod
    def _on_status(
        cls, status: StatusObject, type_: EventType, reason: str, message: str, at: float
    ) -> Event:
        return cls("ConfigMap", status.key, type_, reason, message, at)

    @classmethod
    def cluster_unhealthy(cls, status: StatusObject, message: str, at: float) -> Event:
        return cls._on_status(status, EventType.WARNING, "ClusterUnhealthy", message, at)

    @classmethod
    def delete_unregistered(cls, status: StatusObject, instance_id: str, group_id: str, at: float) -> Event:
        message = f"removed unregistered node {instance_id} of {group_id}"
        return cls._on_status(status, EventType.NORMAL, "DeleteUnregistered", message, at)

    @classmethod
    def delete_unregistered_failed(cls, status: StatusObject, group_id: str, error: str, at: float) -> Event:
        return cls._on_status(
            status, EventType.WARNING, "DeleteUnregisteredFailed", f"{group_id}: {error}", at
        )

    @classmethod
    def fix_node_group_size_failed(cls, status: StatusObject, error: str, at: float) -> Event:
        return cls._on_status(status, EventType.WARNING, "FixNodeGroupSizeFailed", error, at)

    @classmethod
    def scaled_up_group(
        cls, status: StatusObject, group_id: str, current: int, new_size: int, max_size: int, at: float
    ) -> Event:
        message = (
            f"Scale-up: setting group {group_id} size to {new_size} instead of {current} (max: {max_size})"
        )
        return cls._on_status(status, EventType.NORMAL, "ScaledUpGroup", message, at)

    @classmethod
    def failed_to_scale_up_group(cls, status: StatusObject, group_id: str, error: str, at: float) -> Event:
        message = f"Scale-up failed for group {group_id}: {error}"
        return cls._on_status(status, EventType.WARNING, "FailedToScaleUpGroup", message, at)

    @classmethod
    def node_group_skipped(
        cls, status: StatusObject, group_id: str, reason: str, why: str, warning: bool, at: float
    ) -> Event:
        """Scale-up passed a group over for its provider's answer (no template, a ProviderError):
        `reason` is the name the status document gives it too; a Warning for an error."""
        type_ = EventType.WARNING if warning else EventType.NORMAL
        return cls._on_status(status, type_, reason, f"Scale-up skipped group {group_id}: {why}", at)

    @classmethod
    def scale_up_failed(cls, status: StatusObject, message: str, at: float) -> Event:
        """Instances the cloud failed to create (CA's registry: ScaleUpFailed)."""
        return cls._on_status(status, EventType.WARNING, "ScaleUpFailed", message, at)

    @classmethod
    def scale_up_timed_out(cls, status: StatusObject, group_id: str, waited: str, at: float) -> Event:
        message = f"Nodes added to group {group_id} failed to register within {waited}"
        return cls._on_status(status, EventType.WARNING, "ScaleUpTimedOut", message, at)

    @classmethod
    def scale_down_throttled(cls, status: StatusObject, message: str, at: float) -> Event:
        return cls._on_status(status, EventType.NORMAL, "ScaleDownThrottled", message, at)

    @classmethod
    def node_removed_summary(cls, status: StatusObject, node: str, drained: bool, at: float) -> Event:
        """CA's status-ConfigMap line for each removed node (its LogRecorder)."""
        if drained:
            return cls._on_status(
                status, EventType.NORMAL, "ScaleDown", f"Scale-down: node {node} removed with drain", at
            )
        return cls._on_status(
            status, EventType.NORMAL, "ScaleDownEmpty", f"Scale-down: empty node {node} removed", at
        )

    # -- pods -----------------------------------------------------------------------------------
    @classmethod
    def triggered_scale_up(cls, pod_key: str, increases: str, at: float) -> Event:
        """`increases`: CA's "{group current->new (max: n)}" list."""
        message = f"pod triggered scale-up: [{increases}]"
        return cls("Pod", pod_key, EventType.NORMAL, "TriggeredScaleUp", message, at)

    @classmethod
    def not_trigger_scale_up(cls, pod_key: str, message: str, at: float) -> Event:
        return cls("Pod", pod_key, EventType.NORMAL, "NotTriggerScaleUp", message, at)

    @classmethod
    def pod_evicted_for_scale_down(cls, pod_key: str, at: float) -> Event:
        return cls("Pod", pod_key, EventType.NORMAL, "ScaleDown", "deleting pod for node scale down", at)

    # -- nodes ----------------------------------------------------------------------------------
    @classmethod
    def node_marked_for_deletion(cls, node: str, at: float) -> Event:
        """The taint went on: the node is cordoned for scale-down (CA's ScaleDown)."""
        message = "marked the node as toBeDeleted/unschedulable"
        return cls("Node", node, EventType.NORMAL, "ScaleDown", message, at)

    @classmethod
    def node_replacing(cls, node: str, group_id: str, at: float) -> Event:
        """kubetide's own: a cheaper node was launched to stand in for this one, drained once it
        is Ready (scaledown/planning/replacement.py)."""
        message = f"launched a node of {group_id} to replace it; drained once that node is Ready"
        return cls("Node", node, EventType.NORMAL, "ScaleDownReplacing", message, at)

    @classmethod
    def node_replacement_resumed(cls, node: str, group_id: str, launched_at: float, at: float) -> Event:
        """kubetide's own: a restarted kubetide took back the replacement a previous run launched
        for this node (scaledown/actuation/restart.py)."""
        message = (
            f"taken back after a restart: the node of {group_id} asked for at {rfc3339(launched_at)} "
            "replaces it; "
            "drained once that node is Ready"
        )
        return cls("Node", node, EventType.NORMAL, "ScaleDownReplacing", message, at)

    @classmethod
    def node_removed(cls, node: str, at: float) -> Event:
        """The cloud accepted the node's deletion (CA's ScaleDown, its own message)."""
        return cls("Node", node, EventType.NORMAL, "ScaleDown", "nodes removed by cluster autoscaler", at)

    @classmethod
    def delay_deletion_timed_out(cls, node: str, timeout: float, at: float) -> Event:
        message = f"delay-deletion annotations still present after {timeout:g}s; deleting anyway"
        return cls("Node", node, EventType.WARNING, "ScaleDown", message, at)

    @classmethod
    def single_replica_held(cls, node: str, why: str, at: float) -> Event:
        """kubetide's own: a single replica's budget keeps the node (blockers.py says why)."""
        return cls("Node", node, EventType.NORMAL, "ScaleDownBlockedBySingleReplica", why, at)

    @classmethod
    def scale_down_failed(cls, node: str, why: str, at: float) -> Event:
        return cls("Node", node, EventType.WARNING, "ScaleDownFailed", why, at)

    # -- workloads ------------------------------------------------------------------------------
    @classmethod
    def surge_before_evict(cls, deployment_key: str, message: str, at: float) -> Event:
        return cls("Deployment", deployment_key, EventType.NORMAL, "SurgeBeforeEvict", message, at)
