"""Every API permission `kubetide qos-agent` uses, checked at start (kube/permissions.py) and
granted by deploy/qos-agent/rbac.yaml: the same list, so a missing grant is one line at start."""

from __future__ import annotations

from kubetide.kube.permissions import WATCH, Permission
from kubetide.qos.manifest import API_GROUP

AGENT_PERMISSIONS: tuple[Permission, ...] = (
    Permission(("get", "list", "watch", "update"), "nodes", why="its own Node; the disable-scheduling taint"),
    Permission(WATCH, "pods", why="the pods on its node"),
    Permission(("create",), "pods/eviction", why="evict through the Eviction API"),
    Permission(WATCH, "nodeqoss", API_GROUP),
    Permission(WATCH, "avoidanceactions", API_GROUP),
    Permission(WATCH, "podqoss", API_GROUP),
    Permission(("create", "patch"), "events", why="events on its node and the pods it acts on"),
)
# Only with --usage-source=summary: the kubelet's /stats/summary through the API server.
SUMMARY_PERMISSION = Permission(("get",), "nodes/proxy", why="the kubelet's summary API")
