"""The names scale-down gives its decisions.

They are the Cluster Autoscaler's (its UnremovableReason and BlockingPodReason values), so what
`kubetide plan` prints can be compared with a CA status page or log line by name. One is
kubetide's own, in the same style: NoPlaceToMovePodsBelowQOSWatermark (CA has no usage guard).
"""

from __future__ import annotations

import enum


class NodeReason(enum.StrEnum):
    """Why a node is not removed (or not yet)."""

    SCALE_DOWN_DISABLED_ANNOTATION = "ScaleDownDisabledAnnotation"
    NOT_AUTOSCALED = "NotAutoscaled"
    NOT_UNNEEDED_LONG_ENOUGH = "NotUnneededLongEnough"
    NOT_UNREADY_LONG_ENOUGH = "NotUnreadyLongEnough"
    NODE_GROUP_MIN_SIZE_REACHED = "NodeGroupMinSizeReached"
    MINIMAL_RESOURCE_LIMIT_EXCEEDED = "MinimalResourceLimitExceeded"
    CURRENTLY_BEING_DELETED = "CurrentlyBeingDeleted"
    NOT_UNDERUTILIZED = "NotUnderutilized"
    NOT_UNNEEDED_OTHER_REASON = "NotUnneededOtherReason"
    RECENTLY_UNREMOVABLE = "RecentlyUnremovable"
    NO_PLACE_TO_MOVE_PODS = "NoPlaceToMovePods"
    # kubetide's own: a pod fits elsewhere by requests, but only on nodes whose projected usage
    # would then cross a node QoS watermark (the agent would evict it again at the next spike).
    NO_PLACE_TO_MOVE_PODS_BELOW_QOS_WATERMARK = "NoPlaceToMovePodsBelowQOSWatermark"
    BLOCKED_BY_POD = "BlockedByPod"
    # CA 1.36: unneeded, but a running pod annotated safe-to-evict "on-completion" holds the node
    # until it completes (no blocking pod is named: nothing is refused, the pod is waited for).
    BLOCKED_BY_ON_COMPLETION_POD = "BlockedByOnCompletionPod"
    UNEXPECTED_ERROR = "UnexpectedError"
    NO_REASON = "NoReason"


class PodReason(enum.StrEnum):
    """Why one pod keeps its node from being drained."""

    CONTROLLER_NOT_FOUND = "ControllerNotFound"
    MIN_REPLICAS_REACHED = "MinReplicasReached"
    NOT_REPLICATED = "NotReplicated"
    LOCAL_STORAGE_REQUESTED = "LocalStorageRequested"
    NOT_SAFE_TO_EVICT_ANNOTATION = "NotSafeToEvictAnnotation"
    UNMOVABLE_KUBE_SYSTEM_POD = "UnmovableKubeSystemPod"
    NOT_ENOUGH_PDB = "NotEnoughPdb"
