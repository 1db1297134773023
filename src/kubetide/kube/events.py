"""Kubernetes Events, correlated as client-go's tools/record does, stamped when they happened.

Correlation (client-go's EventCorrelator, written anew here):
- **Aggregation**: events on one object with the same type and reason but different messages are
  distinct Events (a node's "marked toBeDeleted" and its "nodes removed" both stay), until ten
  distinct messages have been said within ten minutes; from then on they go to one Event whose
  message is "(combined from similar events): <latest message>", with a count.
- **Deduplication**: an event said again (same object, type, reason and message, or the same
  aggregate) is not a new object: its count goes up and lastTimestamp moves. The count is
  patched at most once per `refresh_seconds` (client-go's spam filter allows about one write per
  five minutes per object; it drops the rest, we keep the count and write it at the next
  refresh), so a reason said every loop costs one write per refresh, never one per loop.
- Entries quiet for an hour are forgotten, so memory follows the cluster, not its history.

Time: firstTimestamp and lastTimestamp are the event's own `at`, the decision's Clock time, not
when it reached the API server.

`BackgroundEvents` puts a bounded, prioritised queue in front of a recorder: per-node events
(ScaleDown, ScaleDownFailed) are written before cluster-wide ones (status ConfigMap), and those
before per-pod noise (TriggeredScaleUp for each of 5,000 pods). Only per-pod events are ever
dropped when the queue is full (the oldest first); `close(timeout)` writes what it can in that
order, so at SIGTERM every node's story is written before the pods'.
"""

from __future__ import annotations

import collections
import enum
import logging
import secrets
import threading
import time
from dataclasses import dataclass, field

from kubetide.autoscaler.events import Event
from kubetide.clock import Clock
from kubetide.durations import rfc3339
from kubetide.kube.client import ApiError, KubeClient

log = logging.getLogger("kubetide.kube")

COMPONENT = "cluster-autoscaler"
REFRESH_SECONDS = 300.0
FORGET_SECONDS = 3600.0
# client-go's EventAggregator: this many distinct messages for one (object, type, reason) within
# the interval, and the next ones are combined into one Event.
AGGREGATE_MAX_EVENTS = 10
AGGREGATE_INTERVAL_SECONDS = 600.0
AGGREGATED_PREFIX = "(combined from similar events): "
# Cluster-scoped objects' events live here, as kubectl and the Cluster Autoscaler put them.
CLUSTER_SCOPED_EVENT_NAMESPACE = "default"
# involvedObject.apiVersion of the kinds events are about that are not in the core group
INVOLVED_API_VERSIONS = {"Deployment": "apps/v1", "NodeQOS": "ensurance.crane.io/v1alpha1"}

_Key = tuple[str, str, str, str, str]  # kind, key, type, reason, message ("" when aggregated)


@dataclass(slots=True)
class _Entry:
    name: str
    namespace: str
    count: int
    message: str
    last: float
    written_count: int
    written_at: float  # the recorder's clock when last written


@dataclass(slots=True)
class _Similar:
    """client-go's aggregate record: the distinct messages said lately for one reason."""

    messages: set[str] = field(default_factory=set)
    last: float = 0.0


class EventRecorder:
    """Writes Events synchronously, correlated as the module says. Not thread-safe: one writer
    (BackgroundEvents' thread, or the caller)."""

    def __init__(
        self,
        client: KubeClient,
        clock: Clock,
        *,
        refresh_seconds: float = REFRESH_SECONDS,
        component: str = COMPONENT,
        host: str = "",  # the node a per-node agent speaks for
    ):
        self.client = client
        self.clock = clock
        self.refresh_seconds = refresh_seconds
        self.component, self.host = component, host
        self._entries: dict[_Key, _Entry] = {}
        self._similar: dict[tuple[str, str, str, str], _Similar] = {}
        self.writes = 0

    def record(self, event: Event) -> None:
        key, message = self._correlate(event)
        entry = self._entries.get(key)
        if entry is None:
            self._create(key, event, message)
            return
        entry.count += 1
        entry.message = message
        entry.last = max(entry.last, event.at)
        if self.clock.now() - entry.written_at >= self.refresh_seconds:
            self._patch(entry)

    def flush(self) -> None:
        """Write counts held back by the refresh interval once it has passed, and forget
        entries that have gone quiet. Called once per loop."""
        now = self.clock.now()
        for key, entry in list(self._entries.items()):
            if entry.count != entry.written_count and now - entry.written_at >= self.refresh_seconds:
                self._patch(entry)
            elif now - entry.last >= FORGET_SECONDS and now - entry.written_at >= FORGET_SECONDS:
                del self._entries[key]
        for similar_key, similar in list(self._similar.items()):
            if now - similar.last >= AGGREGATE_INTERVAL_SECONDS:
                del self._similar[similar_key]

    def _correlate(self, event: Event) -> tuple[_Key, str]:
        """The entry an event goes to, and the message it carries there."""
        aggregate = (event.kind, event.key, event.type.value, event.reason)
        similar = self._similar.get(aggregate)
        if similar is None or event.at - similar.last > AGGREGATE_INTERVAL_SECONDS:
            similar = self._similar[aggregate] = _Similar()
        similar.last = max(similar.last, event.at)
        similar.messages.add(event.message)
        if len(similar.messages) < AGGREGATE_MAX_EVENTS:
            return (*aggregate, event.message), event.message
        similar.messages.pop()  # bounded, as client-go keeps it
        return (*aggregate, ""), AGGREGATED_PREFIX + event.message

    def _create(self, key: _Key, event: Event, message: str) -> None:
        namespace, name = event.namespace, event.name
        event_namespace = namespace or CLUSTER_SCOPED_EVENT_NAMESPACE
        event_name = f"{name}.{secrets.token_hex(8)}"
        involved = {
            "kind": event.kind,
            "name": name,
            "apiVersion": INVOLVED_API_VERSIONS.get(event.kind, "v1"),
        }
        if namespace:
            involved["namespace"] = namespace
        stamp = rfc3339(event.at)
        body = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": event_name, "namespace": event_namespace},
            "involvedObject": involved,
            "type": event.type.value,
            "reason": event.reason,
            "message": message,
            "count": 1,
            "firstTimestamp": stamp,
            "lastTimestamp": stamp,
            "source": {"component": self.component, **({"host": self.host} if self.host else {})},
            "reportingComponent": self.component,
            **({"reportingInstance": self.host} if self.host else {}),
        }
        try:
            self.client.request("POST", f"/api/v1/namespaces/{event_namespace}/events", body=body)
        except ApiError as exc:
            # Events are best effort, as in client-go: a lost event never fails the loop.
            log.warning("event %s on %s %s not recorded: %s", event.reason, event.kind, event.key, exc)
            return
        self.writes += 1
        self._entries[key] = _Entry(event_name, event_namespace, 1, message, event.at, 1, self.clock.now())

    def _patch(self, entry: _Entry) -> None:
        body = {"count": entry.count, "message": entry.message, "lastTimestamp": rfc3339(entry.last)}
        try:
            self.client.request(
                "PATCH",
                f"/api/v1/namespaces/{entry.namespace}/events/{entry.name}",
                body=body,
                content_type="application/merge-patch+json",
            )
        except ApiError as exc:
            log.warning("event %s not updated: %s", entry.name, exc)
            if exc.status == 404:  # expired by the API server's event TTL: start a new one
                self._entries = {k: v for k, v in self._entries.items() if v is not entry}
            return
        self.writes += 1
        entry.written_count, entry.written_at = entry.count, self.clock.now()


class Precedence(enum.IntEnum):
    """Which events are written first when the API server cannot keep up (lower first)."""

    NODE = 0  # a node's scale-down story: marked, drained, removed, failed
    CLUSTER = 1  # the status ConfigMap's and workloads' events
    POD = 2  # per-pod scale-up noise, the only kind ever dropped


def precedence(event: Event) -> Precedence:
    if event.kind == "Node":
        return Precedence.NODE
    if event.kind == "Pod":
        return Precedence.POD
    return Precedence.CLUSTER


class BackgroundEvents:
    """An EventRecorder fed through a bounded, prioritised queue by a thread of its own, so a loop
    that has a thousand things to say never waits on the API for them (at the client's default
    5 requests a second a TriggeredScaleUp per pod is minutes of writes). The Cluster
    Autoscaler's recorder is asynchronous for the same reason.

    Bounds: at most `max_queued_pod_events` per-pod events wait; beyond that the oldest is
    dropped (counted in `dropped`, warned in the log). Node and cluster events are never dropped
    for room: they are few (one per node per step) and are what an operator reads after a
    scale-down."""

    MAX_QUEUED_POD_EVENTS = 2_000

    def __init__(self, recorder: EventRecorder, *, max_queued_pod_events: int = MAX_QUEUED_POD_EVENTS):
        self.recorder = recorder
        self.max_queued_pod_events = max_queued_pod_events
        self._queues: dict[Precedence, collections.deque[Event]] = {
            p: collections.deque() for p in Precedence
        }
        self._flush_requested = False
        self._busy = False  # the thread is writing an event taken off a queue
        self._closing = False
        self._condition = threading.Condition()
        self.dropped = 0
        self._thread = threading.Thread(target=self._run, name="events", daemon=True)
        self._thread.start()

    @property
    def writes(self) -> int:
        return self.recorder.writes

    def queued(self) -> int:
        with self._condition:
            return sum(len(q) for q in self._queues.values())

    def record(self, event: Event) -> None:
        with self._condition:
            if self._closing:
                return
            level = precedence(event)
            queue = self._queues[level]
            if level is Precedence.POD and len(queue) >= self.max_queued_pod_events:
                queue.popleft()
                self.dropped += 1
                if self.dropped in (1, 100, 10_000) or self.dropped % 100_000 == 0:
                    log.warning(
                        "per-pod events dropped: the API server is not keeping up (%d so far)", self.dropped
                    )
            queue.append(event)
            self._condition.notify_all()

    def flush(self) -> None:
        """Ask the thread to write held-back counts (EventRecorder.flush) once the queue is empty."""
        with self._condition:
            self._flush_requested = True
            self._condition.notify_all()

    def wait_idle(self, timeout: float) -> bool:
        """Wait until everything queued so far is written (or given up); False on timeout."""
        deadline = time.monotonic() + timeout
        with self._condition:
            while self._busy or any(self._queues.values()) or self._flush_requested:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._condition.wait(left)
        return True

    def close(self, timeout: float = 5.0) -> None:
        """Write what is queued, most important first, within `timeout`; then stop the thread.
        What is still queued at the deadline (per-pod events, normally) is dropped and counted."""
        deadline = time.monotonic() + timeout
        written = self.wait_idle(timeout)
        with self._condition:
            self._closing = True
            left = sum(len(q) for q in self._queues.values())
            by_level = {p.name.lower(): len(q) for p, q in self._queues.items() if q}
            for queue in self._queues.values():
                queue.clear()
            self.dropped += left
            self._condition.notify_all()
        if not written and left:
            log.warning("stopping: %d events not written within %gs (%s)", left, timeout, by_level)
        self._thread.join(max(0.5, deadline - time.monotonic()))

    def _take(self) -> Event | bool | None:
        """The next thing to do: an Event, True for a flush, None to stop."""
        with self._condition:
            self._busy = False
            self._condition.notify_all()
            while True:
                if self._closing:
                    return None
                for level in Precedence:
                    queue = self._queues[level]
                    if queue:
                        self._busy = True
                        return queue.popleft()
                if self._flush_requested:
                    self._flush_requested = False
                    self._busy = True
                    return True
                self._condition.wait()

    def _run(self) -> None:
        while True:
            item = self._take()
            if item is None:
                return
            try:
                if isinstance(item, Event):
                    self.recorder.record(item)
                else:
                    self.recorder.flush()
            except Exception:  # a bug must not silence every later event
                log.exception("recording an event failed")
