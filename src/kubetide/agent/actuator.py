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
AvoidanceRestore on the pods it acts on, the reasons the simulator's events.jsonl uses.
"""

from __future__ import annotations

import logging
import secrets
from datetime import UTC, datetime

from kubetide.agent.cgroups import CgroupError
from kubetide.agent.throttle import CgroupThrottler
from kubetide.autoscaler.ports import ActionError, EvictionOutcome
from kubetide.clock import Clock
from kubetide.kube.actions import KubeClusterActions
from kubetide.kube.client import ApiError, KubeClient
from kubetide.model import Node, Pod, Taint
from kubetide.qos.config import EVICT, THROTTLE_DOWN, THROTTLE_UP

log = logging.getLogger("kubetide.agent")

COMPONENT = "kubetide-qos-agent"
REASONS = {EVICT: "AvoidanceEvict", THROTTLE_DOWN: "AvoidanceThrottle", THROTTLE_UP: "AvoidanceRestore"}
REFUSED_REASON = "AvoidanceEvictRefused"
TRIGGERED_REASON, RESTORED_REASON = "AvoidanceTriggered", "RestoreTriggered"
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


class Events:
    """core/v1 Events from this node's agent. A repeat of the same event (an eviction a PDB keeps
    refusing, every sample) bumps the count of the Event already written, patched at most once per
    `refresh_seconds`, as client-go aggregates repeats: one object per pod and reason, not one per
    sample."""

    def __init__(self, client: KubeClient, clock: Clock, node_name: str, refresh_seconds: float = 60.0):
        self.client, self.clock, self.node_name = client, clock, node_name
        self.refresh_seconds = refresh_seconds
        # (kind, key, type, reason) -> [event namespace, event name, count, when last written]
        self._written: dict[tuple[str, str, str, str], list] = {}
        self.written = 0

    def record(self, kind: str, key: str, event_type: str, reason: str, message: str) -> None:
        now = self.clock.now()
        entry = self._written.get((kind, key, event_type, reason))
        if entry is not None:
            entry[2] += 1
            if now - entry[3] >= self.refresh_seconds:
                self._patch(entry, message, now)
            return
        # Forget what has not been said for an hour, so memory follows the node's pods.
        self._written = {k: v for k, v in self._written.items() if now - v[3] < FORGET_SECONDS}
        namespace, _, name = key.rpartition("/")
        event_namespace = namespace or "default"  # where kubectl looks for a Node's events
        involved = {"kind": kind, "name": name, "apiVersion": "v1"}
        if namespace:
            involved["namespace"] = namespace
        event_name = f"{name}.{secrets.token_hex(8)}"
        body = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": event_name, "namespace": event_namespace},
            "involvedObject": involved,
            "type": event_type,
            "reason": reason,
            "message": message,
            "count": 1,
            "firstTimestamp": _stamp(now),
            "lastTimestamp": _stamp(now),
            "source": {"component": COMPONENT, "host": self.node_name},
            "reportingComponent": COMPONENT,
            "reportingInstance": self.node_name,
        }
        try:
            self.client.request("POST", f"/api/v1/namespaces/{event_namespace}/events", body=body)
        except ApiError as exc:
            log.warning("event %s on %s %s not recorded: %s", reason, kind, key, exc)
            return
        self.written += 1
        self._written[(kind, key, event_type, reason)] = [event_namespace, event_name, 1, now]

    def _patch(self, entry: list, message: str, now: float) -> None:
        namespace, name, count, _ = entry
        body = {"count": count, "message": message, "lastTimestamp": _stamp(now)}
        try:
            self.client.request(
                "PATCH",
                f"/api/v1/namespaces/{namespace}/events/{name}",
                body=body,
                content_type="application/merge-patch+json",
            )
        except ApiError as exc:
            # Gone (the API server's event TTL): the next repeat starts a new Event.
            log.warning("event %s not updated: %s", name, exc)
            self._written = {k: v for k, v in self._written.items() if v is not entry}
            return
        entry[3] = now
        self.written += 1


def _stamp(moment: float) -> str:
    return datetime.fromtimestamp(int(moment), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
