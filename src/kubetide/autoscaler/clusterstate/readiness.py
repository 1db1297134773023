"""Per-node readiness classification: the registry's vocabulary for "is this node capacity?".

A registered node is exactly one of:

- ``READY``: the node is ready as the Cluster Autoscaler judges it (model/node.py: Ready, no
  DiskPressure or NetworkUnavailable, none of the taints those states bring) and nobody is
  deleting it.
- ``NOT_STARTED``: not Ready, younger than max-node-startup-time and never Ready since it was
  created. A node that is still booting (UC2) is coming capacity, not a failure.
- ``UNREADY``: not Ready for any other reason: it broke after starting (UC6), or it never started
  within max-node-startup-time (UC3). Only these count against cluster and group health.
- ``BEING_DELETED``: the autoscaler is removing it (ToBeDeletedByClusterAutoscaler taint) or the
  cloud already is (its instance is DELETING). Neither unready nor capacity (UC7).

"Never Ready since creation" is judged two ways, because the registry only looks once per loop:
the registry remembers every node it has seen Ready, and a NotReady condition whose
lastTransitionTime lies within ``STATUS_SETTLE_SECONDS`` of the creation time is the kubelet's
first status (Cluster Autoscaler's old "NotReady transition == creation time" rule, with the same
two-minute tolerance it used). A later NotReady transition means the node was Ready in between.

Boundaries: a node exactly max-node-startup-time old is no longer "not started" (CA compares
``created + startup > now``).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

# How long after creation a kubelet may take to post its first NotReady condition
# (Cluster Autoscaler's former MaxStatusSettingDelayAfterCreation).
STATUS_SETTLE_SECONDS = 120.0


class Readiness(enum.Enum):
    READY = "ready"
    NOT_STARTED = "notStarted"
    UNREADY = "unready"
    BEING_DELETED = "beingDeleted"


@dataclass(frozen=True, slots=True)
class NodeReadiness:
    """One node's classification and the times it rests on (Unix seconds)."""

    name: str
    group_id: str | None  # None: not managed by the autoscaler (still counts for cluster health)
    readiness: Readiness
    created: float  # creationTimestamp, or when the registry first saw the node
    ready_transition: float | None  # the Ready condition's lastTransitionTime
    unready_since: float | None  # for NOT_STARTED and UNREADY: since when it has not been Ready
    deletion_since: float | None  # for BEING_DELETED: when the taint was added (or first seen)
    reason: str  # one line, for `plan` and logs
    # Not Ready and never Ready since it was created (NOT_STARTED, or UNREADY because it never
    # started): for a scale-up request such a node has not arrived, however long it has existed.
    never_started: bool = False


def classify(
    *,
    ready: bool,
    being_deleted: bool,
    created: float,
    ready_transition: float | None,
    seen_ready: bool,
    now: float,
    max_node_startup_time: float,
) -> tuple[Readiness, str]:
    """The readiness class of one node and why. Pure: all history comes in as arguments."""
    if being_deleted:
        return Readiness.BEING_DELETED, "being deleted by the autoscaler or the cloud"
    if ready:
        return Readiness.READY, "Ready"
    age = now - created
    if age < max_node_startup_time and not seen_ready and first_status(created, ready_transition):
        return Readiness.NOT_STARTED, f"not Ready yet, {age:g}s after creation"
    if not seen_ready and first_status(created, ready_transition):
        return Readiness.UNREADY, "never became Ready within max-node-startup-time"
    return Readiness.UNREADY, "NotReady after having been Ready"


def first_status(created: float, ready_transition: float | None) -> bool:
    """Whether the NotReady condition is the one the kubelet posted at registration."""
    return ready_transition is None or ready_transition - created <= STATUS_SETTLE_SECONDS
