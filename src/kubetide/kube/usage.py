"""The UsageSource port on a real cluster: metrics.k8s.io and crane's NodeQOS objects.

`kubetide run --usage-metrics-interval=1m` turns it on (off by default: it needs metrics-server,
and permissions the autoscaler does not otherwise ask for). At most once per interval it lists
PodMetrics and NodeMetrics (metrics.k8s.io/v1beta1: metrics-server serves no watch) and crane's
NodeQOS and AvoidanceAction objects (ensurance.crane.io/v1alpha1), and turns them into a
UsageSample for scale-down's QoS watermark guard (autoscaler/scaledown/planning/usage.py): usage per pod
UID (PodMetrics name the pod, the view's snapshot gives its UID), usage per node, and each node's
ceilings (qos/ceilings.py). Between reads the last sample is given again; the guard's peaks are
kept per loop, so a one-minute interval only means fewer samples.

A failed read (metrics-server down, the CRDs not installed) is logged once per distinct error
and gives no usage at all (the guard is off, scale-down packs by requests), never a failed loop.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

from kubetide.autoscaler.ports import UsageCeiling, UsageSample
from kubetide.errors import ManifestError
from kubetide.kube.client import ApiError, KubeClient
from kubetide.kube.permissions import Permission
from kubetide.kube.resources import Resource, parser_for
from kubetide.qos import QosConfig
from kubetide.qos.ceilings import node_ceilings
from kubetide.qos.manifest import API_VERSION
from kubetide.snapshot import ClusterSnapshot

log = logging.getLogger(__name__)

POD_METRICS = Resource("PodMetrics", "metrics.k8s.io/v1beta1", "pods", namespaced=True)
NODE_METRICS = Resource("NodeMetrics", "metrics.k8s.io/v1beta1", "nodes", namespaced=False)
NODEQOS = Resource("NodeQOS", API_VERSION, "nodeqoss", namespaced=False)
AVOIDANCE_ACTIONS = Resource("AvoidanceAction", API_VERSION, "avoidanceactions", namespaced=False)
READ = ("list",)
USAGE_PERMISSIONS = (
    Permission(READ, "pods", "metrics.k8s.io", why="pod usage for scale-down's QoS watermark guard"),
    Permission(READ, "nodes", "metrics.k8s.io", why="node usage for scale-down's QoS watermark guard"),
    Permission(READ, "nodeqoss", "ensurance.crane.io", why="the QoS watermarks scale-down keeps under"),
    Permission(READ, "avoidanceactions", "ensurance.crane.io", why="which watermarks evict or throttle"),
)
NO_USAGE = UsageSample({}, {}, {})
# Who serves each API group the guard reads, for the message when one is missing.
_PROVIDERS = {"metrics.k8s.io": "metrics-server", "ensurance.crane.io": "crane's CRDs"}


class KubeUsageSource:
    def __init__(
        self,
        client: KubeClient,
        snapshot: Callable[[], ClusterSnapshot],
        interval: float,
        monotonic: Callable[[], float] = time.monotonic,
    ):
        self.client = client
        self.snapshot = snapshot
        self.interval = interval
        self.monotonic = monotonic
        self._last: UsageSample = NO_USAGE
        self._read_at: float | None = None
        self._logged: str | None = None
        self._warned: set[str] = set()  # said once while the configuration keeps them

    def sample(self) -> UsageSample:
        now = self.monotonic()
        if self._read_at is not None and now - self._read_at < self.interval:
            return self._last
        self._read_at = now
        try:
            self._last = self._read()
            self._logged = None
            for warning in self._last.warnings:
                if warning not in self._warned:
                    log.warning("scale-down's QoS watermark guard: %s", warning)
            self._warned = set(self._last.warnings)
        except (ApiError, ManifestError) as exc:
            message = str(exc)
            if message != self._logged:
                log.warning("usage for scale-down's QoS watermark guard unavailable (guard off): %s", message)
                self._logged = message
            self._last = NO_USAGE
        return self._last

    def _list(self, resource: Resource) -> list[Any]:
        parse = parser_for(resource.kind, self.client.source)
        try:
            return [
                parse(item)
                for page in self.client.list_pages(resource.list_path)
                for item in page.get("items") or ()
            ]
        except ApiError as exc:
            if exc.status != 404:
                raise
            group = resource.group_version.partition("/")[0]
            raise ApiError(
                404,
                "NotFound",
                f"{resource.plural}.{group} is not served ({_PROVIDERS.get(group, 'its API')} not installed?)",
            ) from None

    def _read(self) -> UsageSample:
        return usage_sample(
            self.snapshot(),
            self._list(NODEQOS),
            self._list(AVOIDANCE_ACTIONS),
            self._list(POD_METRICS),
            self._list(NODE_METRICS),
        )


def usage_sample(
    snapshot: ClusterSnapshot,
    nodeqoss: Sequence[Any],
    avoidance_actions: Sequence[Any],
    pod_metrics: Sequence[Any],
    node_metrics: Sequence[Any],
) -> UsageSample:
    """The guard's UsageSample from the objects as parsed (listed here, or read from files by
    `kubetide plan --usage`): usage per pod UID (a PodMetrics names its pod, the snapshot gives
    the UID; metrics of pods not in it are left out), usage per node, each node's ceilings."""
    config = QosConfig.build(list(nodeqoss), list(avoidance_actions))
    uids = {pod.key: pod.uid for pod in snapshot.pods()}
    pods = {uids[m.key]: dict(m.usage) for m in pod_metrics if m.key in uids}
    nodes = {m.name: dict(m.usage) for m in node_metrics}
    ceilings: dict[str, tuple[UsageCeiling, ...]] = {}
    for node in snapshot.nodes():
        found = node_ceilings(config, node)
        if found:
            ceilings[node.name] = tuple(UsageCeiling(c.resource, c.amount, c.source) for c in found)
    return UsageSample(pods, nodes, ceilings, tuple(config.warnings))
