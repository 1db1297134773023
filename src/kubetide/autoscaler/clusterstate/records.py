"""What the registry reports: per-group state, health records, and decisions for the loop.

The registry never calls the cloud or the API server. Where Cluster Autoscaler's registry and
loop act (shrink a group, delete an instance, emit an event), kubetide's registry returns a record
saying what to do and why; the loop does it and tells the registry it did.
"""

from __future__ import annotations

from dataclasses import dataclass

from kubetide.autoscaler.ports import Instance
from kubetide.model import Node, ObjectMeta


@dataclass(frozen=True, slots=True)
class NodeCounts:
    """Node counts in the status document's terms (registered nodes split by readiness)."""

    registered: int = 0
    ready: int = 0
    not_started: int = 0
    being_deleted: int = 0
    unready: int = 0
    long_unregistered: int = 0  # instances unregistered for longer than max-node-provision-time
    unregistered: int = 0  # instances not registered yet, within max-node-provision-time


@dataclass(frozen=True, slots=True)
class GroupState:
    """One node group as the registry saw it at the last update."""

    id: str
    min_size: int
    max_size: int
    target: int
    counts: NodeCounts
    in_target: int  # registered nodes the cloud still counts in the target (instance not DELETING)
    unregistered: tuple[str, ...]  # instance ids, within max-node-provision-time
    long_unregistered: tuple[str, ...]  # instance ids, past max-node-provision-time
    errored: tuple[Instance, ...]  # instances the cloud failed to create (will never register)
    missing: int  # target slots with no instance at all (requested, not yet created)
    upcoming: int  # S3: nodes that will become capacity without another request
    # Registered nodes in the target that were never Ready (starting, or past max-node-startup-time
    # without starting): a scale-up request has not got them yet.
    not_arrived: int = 0
    # UC3: of those, the nodes past max-node-startup-time (by name). Scale-up leaves the group
    # alone while there are any.
    never_ready: tuple[str, ...] = ()

    @property
    def arrived(self) -> int:
        """Registered nodes in the target that have been Ready: what a scale-up request got."""
        return self.in_target - self.not_arrived


@dataclass(frozen=True, slots=True)
class HealthRecord:
    """A health verdict and since when it has held (S1 for the cluster, S2 per group)."""

    healthy: bool
    unready: int  # the unjustified unready nodes the verdict counted
    total: int  # the nodes the percentage is taken of
    last_probe_time: float
    last_transition_time: float
    message: str


@dataclass(slots=True)
class ScaleUpRequest:
    """A scale-up the registry waits to see registered (Cluster Autoscaler's ScaleUpRequest)."""

    group_id: str
    increase: int
    time: float  # when last increased
    expected_add_time: float  # time + max-node-provision-time


@dataclass(frozen=True, slots=True)
class SizeFix:
    """S4/UC4: lower a group's target size to what exists. The loop calls
    ``group.decrease_target_size(fix.delta)`` and then ``registry.record_target_size_fixed``."""

    group_id: str
    decrease: int  # how many requested nodes to drop (positive)
    reason: str  # error code: "timeout", or the cloud's code (STOCKOUT, QUOTA_EXCEEDED, ...)
    message: str

    @property
    def delta(self) -> int:
        """The change of the target size (negative, Cluster Autoscaler's DecreaseTargetSize sign)."""
        return -self.decrease


@dataclass(frozen=True, slots=True)
class UnregisteredInstance:
    """UC5: an instance that never registered as a Node within max-node-provision-time."""

    group_id: str
    instance_id: str
    since: float  # when the registry first saw it unregistered

    @property
    def node(self) -> Node:
        """A stand-in Node for ``NodeGroup.delete_nodes`` (name and providerID = instance id)."""
        return placeholder_node(self.instance_id)


def placeholder_node(instance_id: str) -> Node:
    return Node(
        meta=ObjectMeta(name=instance_id),
        allocatable={},
        capacity={},
        ready=False,
        provider_id=instance_id,
    )
