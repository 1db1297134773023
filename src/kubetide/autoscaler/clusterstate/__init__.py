"""Cluster state registry: which nodes are coming, late, unready or broken, and whether the
autoscaler may act (the cluster-state-registry design, use cases UC1-UC8, questions S1-S4).

- ``readiness``: per-node classification (ready, not started, unready, being deleted).
- ``backoff``: exponential scale-up backoff per node group.
- ``records``: what the registry reports and the decisions it hands the loop.
- ``registry``: ClusterStateRegistry, updated once per loop.
- ``status``: StatusBuilder, which fills the cluster-autoscaler-status document
  (``kubetide.autoscaler.status``, Cluster Autoscaler's YAML format) from the registry.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kubetide.lazy import lazy_exports

if TYPE_CHECKING:
    from kubetide.autoscaler.clusterstate.backoff import BackoffStatus, ExponentialBackoff
    from kubetide.autoscaler.clusterstate.readiness import NodeReadiness, Readiness
    from kubetide.autoscaler.clusterstate.records import (
        GroupState,
        HealthRecord,
        NodeCounts,
        ScaleUpRequest,
        SizeFix,
        UnregisteredInstance,
    )
    from kubetide.autoscaler.clusterstate.registry import ClusterStateRegistry
    from kubetide.autoscaler.clusterstate.status import ScaleDownSummary, ScaleUpSummary, StatusBuilder
    from kubetide.autoscaler.status import ClusterAutoscalerStatus, parse_status_yaml, status_yaml
else:
    # Each name's module is imported when the name is first read (kubetide.lazy says why).
    __getattr__ = lazy_exports(
        __name__,
        {
            "kubetide.autoscaler.clusterstate.backoff": ("BackoffStatus", "ExponentialBackoff"),
            "kubetide.autoscaler.clusterstate.readiness": ("NodeReadiness", "Readiness"),
            "kubetide.autoscaler.clusterstate.records": (
                "GroupState",
                "HealthRecord",
                "NodeCounts",
                "ScaleUpRequest",
                "SizeFix",
                "UnregisteredInstance",
            ),
            "kubetide.autoscaler.clusterstate.registry": ("ClusterStateRegistry",),
            "kubetide.autoscaler.clusterstate.status": (
                "ScaleDownSummary",
                "ScaleUpSummary",
                "StatusBuilder",
            ),
            "kubetide.autoscaler.status": ("ClusterAutoscalerStatus", "parse_status_yaml", "status_yaml"),
        },
    )

__all__ = [
    "BackoffStatus",
    "ClusterAutoscalerStatus",
    "ClusterStateRegistry",
    "ExponentialBackoff",
    "GroupState",
    "HealthRecord",
    "NodeCounts",
    "NodeReadiness",
    "Readiness",
    "ScaleDownSummary",
    "ScaleUpRequest",
    "ScaleUpSummary",
    "SizeFix",
    "StatusBuilder",
    "UnregisteredInstance",
    "parse_status_yaml",
    "status_yaml",
]
