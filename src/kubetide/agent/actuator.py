"""The QosActuator on a live node, and the events the agent records.

- throttle / restore: the pod cgroup's CFS quota (throttle.py).
- evict: the Eviction API (policy/v1, the pod's UID as a precondition) through kube/actions.py,
  so PodDisruptionBudgets hold: a 429 is a refusal, and the pod stays a candidate next sample.
- taint_node / untaint_node: the node's taint, read-modify-write with a retry on 409 Conflict
  (kube/actions.py, as the autoscaler writes its taints).

A failed write is logged and does not stop the sample: the next sample sees the node as it is and
decides again. Events are best effort in the same way.

Event reasons: crane's agent records AvoidanceTriggered (Warning) and RestoreTriggered (Normal) on
the node when a rule comes into force or is lifted; kubetide adds DisableScheduling /
RestoreScheduling on the node and AvoidanceEvict / AvoidanceEvictRefused / AvoidanceThrottle /
AvoidanceRestore on the pods it acts on, the reasons the simulator's events.jsonl uses, and
UnknownMetric (Warning) on a NodeQOS one of whose rules names a metric it does not know (the rule
is skipped, the others apply).
"""

from __future__ import annotations

import logging

from kubetide.agent.cgroups import CgroupError
from kubetide.agent.throttle import CgroupThrottler
from kubetide.autoscaler.ports import ActionError, EvictionOutcome
from kubetide.clock import Clock
from kubetide.kube.actions import KubeClusterActions
from kubetide.kube.client import KubeClient
from kubetide.kube.events import EventRecorder
from kubetide.model import Node, Pod, Taint
from kubetide.qos.config import EVICT, THROTTLE_DOWN, THROTTLE_UP

log = logging.getLogger("kubetide.agent")

COMPONENT = "kubetide-qos-agent"
REASONS = {EVICT: "AvoidanceEvict", THROTTLE_DOWN: "AvoidanceThrottle", THROTTLE_UP: "AvoidanceRestore"}
REFUSED_REASON = "AvoidanceEvictRefused"
TRIGGERED_REASON, RESTORED_REASON = "AvoidanceTriggered", "RestoreTriggered"
UNKNOWN_METRIC_REASON = "UnknownMetric"  # on a NodeQOS: a rule skipped, its metric not registered
FORGET_SECONDS = 3600.0


class NodeActuator:
    """What `QosAgent.step` calls on a real node."""

    def __init__(self, client: KubeClient, clock: Clock, throttler: CgroupThrottler):
        self.actions = KubeClusterActions(client, clock)
        self.throttler = throttler

    def throttle(self, pod: Pod, quota_millicores: int) -> None:
        try:
            self.throttler.throttle(pod, quota_millicores)
        except CgroupError as exc:
            log.warning("throttle %s: %s", pod.key, exc)

    def restore(self, pod: Pod, quota_millicores: int | None) -> None:
        try:
            self.throttler.restore(pod, quota_millicores)
        except CgroupError as exc:
            log.warning("restore %s: %s", pod.key, exc)

    def evict(self, pod: Pod, grace_seconds: int) -> bool:
        outcome = self.actions.evict(pod, grace_seconds)
        if outcome is EvictionOutcome.BLOCKED_BY_PDB:
            log.info("eviction of %s refused by a PodDisruptionBudget; retried next sample", pod.key)
        # NOT_FOUND: already gone, which releases what evicting it would have.
        return outcome in (EvictionOutcome.EVICTED, EvictionOutcome.NOT_FOUND)

    def taint_node(self, node: Node, taint: Taint) -> None:
        try:
            self.actions.add_taint(node.name, taint)
        except ActionError as exc:
            log.warning("disable scheduling: %s", exc)

    def untaint_node(self, node: Node, taint: Taint) -> None:
        try:
            self.actions.remove_taint(node.name, taint.key)
        except ActionError as exc:
            log.warning("restore scheduling: %s", exc)


def node_events(
    client: KubeClient, clock: Clock, node_name: str, refresh_seconds: float = 60.0
) -> EventRecorder:
    """core/v1 Events from this node's agent, aggregated as the autoscaler's are: a repeat (an
    eviction a PDB keeps refusing, every sample) bumps the count of the Event already written,
    patched at most once per `refresh_seconds`."""
    return EventRecorder(client, clock, refresh_seconds=refresh_seconds, component=COMPONENT, host=node_name)
