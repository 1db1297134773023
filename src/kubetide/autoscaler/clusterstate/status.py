"""StatusBuilder: the status document (autoscaler/status.py) filled from the registry, with the
transition times it keeps between loops."""

from __future__ import annotations

import typing
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from kubetide.autoscaler.clusterstate.records import HealthRecord, NodeCounts
from kubetide.autoscaler.clusterstate.registry import ClusterStateRegistry, never_ready_text
from kubetide.autoscaler.status import (
    BACKOFF,
    CANDIDATES_PRESENT,
    HEALTHY,
    IN_PROGRESS,
    INITIALIZING,
    NEEDED,
    NO_ACTIVITY,
    NO_CANDIDATES,
    NOT_NEEDED,
    RUNNING,
    UNHEALTHY,
    BackoffInfo,
    ClusterAutoscalerStatus,
    ClusterHealthCondition,
    ClusterScaleDownCondition,
    ClusterScaleUpCondition,
    ClusterWideStatus,
    DrainStatus,
    NodeCount,
    NodeGroupHealthCondition,
    NodeGroupScaleUpCondition,
    NodeGroupStatus,
    ProviderFailure,
    RegisteredNodeCount,
    RegisteredUnreadyNodeCount,
    ScaleDownCondition,
    UnremovableNode,
    WaitingNode,
    status_time,
    status_yaml,
    to_dict,
)
from kubetide.durations import rfc3339

# The builder, plus the document's names that adapters written before the document moved to
# autoscaler/status.py import from here (kube/actions.py); new code imports them from there.
__all__ = [
    "ClusterAutoscalerStatus",
    "ScaleDownSummary",
    "ScaleUpSummary",
    "StatusBuilder",
    "status_yaml",
    "to_dict",
]


@dataclass(frozen=True, slots=True)
class ScaleUpSummary:
    """What scale-up concluded this loop; the loop fills it from the scale-up result."""

    evaluated: bool = False  # scale-up ran (False when the loop halted or skipped it)
    pods_needing_nodes: int = 0  # pending pods no existing or upcoming node can take
    backed_off: bool = False  # such pods exist and every group that could take them is backed off
    # Groups passed over for their provider's answer (no template, a ProviderError), by id.
    provider_failures: Mapping[str, ProviderFailure] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ScaleDownSummary:
    """The scale-down candidates (unneeded nodes) per node group, as the planner left them, with
    the drains they would need and the nodes waiting for PodDisruptionBudget budget."""

    candidates: Mapping[str, Sequence[str]] = field(default_factory=dict)
    drains: tuple[DrainStatus, ...] = ()
    waiting_for_budget: tuple[WaitingNode, ...] = ()
    estimated_seconds_to_last_removal: int | None = None
    unremovable: tuple[UnremovableNode, ...] = ()


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
        failures = scale_up.provider_failures if scale_up is not None else {}

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
            stuck = registry.never_ready_nodes(group_id)
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
                        up_status,
                        info,
                        rfc3339(now),
                        self._transition(group_id, "scaleUp", up_status, now),
                        never_ready_text(stuck) if stuck else None,
                        failures.get(group_id),
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
                scale_down=self._cluster_scale_down(total_candidates, down_probe),
            ),
            node_groups=tuple(groups),
        )

    def status_yaml(self, registry: ClusterStateRegistry, now: float, **summaries: typing.Any) -> str:
        return status_yaml(self.build(registry, now, **summaries))

    def _cluster_scale_down(self, candidates: int, probe: float) -> ClusterScaleDownCondition:
        condition = self._scale_down_condition("", candidates, probe)
        return ClusterScaleDownCondition(
            condition.status,
            condition.candidates,
            condition.last_probe_time,
            condition.last_transition_time,
            estimated_seconds_to_last_removal=self._scale_down.estimated_seconds_to_last_removal,
            drains=self._scale_down.drains or None,
            waiting_for_budget=self._scale_down.waiting_for_budget or None,
            unremovable=self._scale_down.unremovable or None,
        )

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
