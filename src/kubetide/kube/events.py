"""Kubernetes Events, correlated as client-go's tools/record does, stamped when they happened.

Correlation (client-go's EventCorrelator, written anew here as `EventCorrelator`, which does no
I/O; `EventRecorder` writes what it decides):
- **Aggregation**: events on one object with the same type and reason but different messages are
  distinct Events (a node's "marked toBeDeleted" and its "nodes removed" both stay), until ten
  distinct messages have been said within ten minutes; from then on they go to one Event whose
  message is "(combined from similar events): <latest message>", with a count.
- **Deduplication**: an event said again (same object, type, reason and message, or the same
  aggregate) is not a new object: its count goes up and lastTimestamp moves. The count is
  patched at most once per `refresh_seconds`, so a reason said every loop costs one write per
  refresh, never one per loop; a held-back count is written at the next refresh, not dropped.
- **Spam filter**: each object (for one source) has a token bucket of 25 writes, refilled one
  every five minutes, as client-go's; a new Event beyond it is dropped (counted in
  `spam_filtered`), a count update waits for a token.
- **One TriggeredScaleUp per pod per scale-up**: a pod still pending is counted again by the
  loops that follow while the nodes it asked for come up (which pods the upcoming nodes take
  depends on what else is pending then), so its later TriggeredScaleUps within the aggregation
  interval are that same decision and are not said again. (A 238-pod burst wrote 1,251 of them
  without this rule.)
- Entries quiet for an hour are forgotten, so memory follows the cluster, not its history.

Time: firstTimestamp and lastTimestamp are the event's own `at`, the decision's Clock time, not
when it reached the API server.

`BackgroundEvents` puts bounded, prioritised queues in front of recorders: per-node events
(ScaleDown, ScaleDownFailed) are written before cluster-wide ones (status ConfigMap), and those
before per-pod noise (TriggeredScaleUp for each of 5,000 pods). Several writers share the work,
each with the objects whose events it writes (the correlation is per object, so each keeps its
own), so a 2,000-pod burst is written in seconds, not minutes. Only per-pod events are ever
dropped when a queue is full (the oldest first); `close(timeout)` writes what it can in that
order within the deadline, as client-go's broadcaster Shutdown does, so at SIGTERM every node's
story is written before the pods'.
"""

from __future__ import annotations

import collections
import enum
import logging
import secrets
import threading
import time
import zlib
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
# client-go's EventSourceObjectSpamFilter: per source and object, 25 writes, then one per 5 min.
SPAM_BURST = 25
SPAM_REFILL_SECONDS = 300.0
TRIGGERED_SCALE_UP = "TriggeredScaleUp"
# `kubetide run`'s event writers and their client's rate: high enough that the API server's
# answers, not a client-side limit, pace a burst's TriggeredScaleUps (its priority and fairness
# guard it beyond that).
WRITERS = 8
WRITE_QPS = 400.0
WRITE_BURST = 400
# Cluster-scoped objects' events live here, as kubectl and the Cluster Autoscaler put them.
CLUSTER_SCOPED_EVENT_NAMESPACE = "default"
# involvedObject.apiVersion of the kinds events are about that are not in the core group
INVOLVED_API_VERSIONS = {"Deployment": "apps/v1", "NodeQOS": "ensurance.crane.io/v1alpha1"}

_Key = tuple[str, str, str, str, str]  # kind, key, type, reason, message ("" when aggregated)


@dataclass(slots=True)
class _Entry:
    name: str
    namespace: str
    kind: str
    key: str
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


@dataclass(slots=True)
class _Bucket:
    tokens: float
    at: float


@dataclass(frozen=True, slots=True)
class Create:
    """A new Event to write: `message` is the event's, or its aggregate's."""

    key: _Key
    event: Event
    message: str


class EventCorrelator:
    """What to write for each event, as the module says: a Create, an entry whose count to
    patch, or nothing. No I/O: the caller writes and reports back (`created`, `patched`)."""

    def __init__(self, refresh_seconds: float = REFRESH_SECONDS):
        self.refresh_seconds = refresh_seconds
        self._entries: dict[_Key, _Entry] = {}
        self._similar: dict[tuple[str, str, str, str], _Similar] = {}
        self._buckets: dict[tuple[str, str], _Bucket] = {}
        self._triggered: dict[str, float] = {}  # pod key -> its TriggeredScaleUp's time
        self.spam_filtered = 0

    def correlate(self, event: Event, now: float) -> Create | _Entry | None:
        if event.reason == TRIGGERED_SCALE_UP and event.kind == "Pod":
            said = self._triggered.get(event.key)
            if said is not None and event.at - said < AGGREGATE_INTERVAL_SECONDS:
                return None  # the scale-up this pod already triggered, counted again
            self._triggered[event.key] = event.at
        key, message = self._aggregate(event)
        entry = self._entries.get(key)
        if entry is None:
            if not self._allow(event.kind, event.key, now):
                self.spam_filtered += 1
                return None
            return Create(key, event, message)
        entry.count += 1
        entry.message = message
        entry.last = max(entry.last, event.at)
        return self._due(entry, now)

    def created(self, write: Create, name: str, namespace: str, now: float) -> None:
        event = write.event
        self._entries[write.key] = _Entry(
            name, namespace, event.kind, event.key, 1, write.message, event.at, 1, now
        )

    def patched(self, entry: _Entry, now: float) -> None:
        entry.written_count, entry.written_at = entry.count, now

    def expired(self, entry: _Entry) -> None:
        """The API server no longer has the entry's Event (its TTL): the next one starts anew."""
        self._entries = {k: v for k, v in self._entries.items() if v is not entry}

    def due(self, now: float) -> list[_Entry]:
        """Entries whose held-back counts may be written now; forgets what has gone quiet."""
        result = []
        for key, entry in list(self._entries.items()):
            if entry.count != entry.written_count:
                if self._due(entry, now) is not None:
                    result.append(entry)
            elif now - entry.last >= FORGET_SECONDS and now - entry.written_at >= FORGET_SECONDS:
                del self._entries[key]
        for similar_key, similar in list(self._similar.items()):
            if now - similar.last >= AGGREGATE_INTERVAL_SECONDS:
                del self._similar[similar_key]
        self._triggered = {
            pod: at for pod, at in self._triggered.items() if now - at < AGGREGATE_INTERVAL_SECONDS
        }
        for object_key, bucket in list(self._buckets.items()):
            if self._refill(bucket, now) >= SPAM_BURST:
                del self._buckets[object_key]  # full again: as if never seen
        return result

    def _due(self, entry: _Entry, now: float) -> _Entry | None:
        if now - entry.written_at < self.refresh_seconds:
            return None
        return entry if self._allow(entry.kind, entry.key, now) else None

    def _aggregate(self, event: Event) -> tuple[_Key, str]:
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

    @staticmethod
    def _refill(bucket: _Bucket, now: float) -> float:
        bucket.tokens = min(SPAM_BURST, bucket.tokens + max(0.0, now - bucket.at) / SPAM_REFILL_SECONDS)
        bucket.at = now
        return bucket.tokens

    def _allow(self, kind: str, key: str, now: float) -> bool:
        """The spam filter: takes a token of the object's bucket, if it has one."""
        bucket = self._buckets.setdefault((kind, key), _Bucket(SPAM_BURST, now))
        if self._refill(bucket, now) < 1:
            return False
        bucket.tokens -= 1
        return True


class EventRecorder:
    """Writes Events synchronously, correlated as the module says. Not thread-safe: one writer
    (a BackgroundEvents writer's thread, or the caller)."""

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
        self.correlator = EventCorrelator(refresh_seconds)
        self.writes = 0

    def sibling(self) -> EventRecorder:
        """A recorder on the same client and settings, with a correlation of its own (for
        another set of objects)."""
        return EventRecorder(
            self.client,
            self.clock,
            refresh_seconds=self.refresh_seconds,
            component=self.component,
            host=self.host,
        )

    def record(self, event: Event) -> None:
        write = self.correlator.correlate(event, self.clock.now())
        if isinstance(write, Create):
            self._create(write)
        elif write is not None:
            self._patch(write)

    def flush(self) -> None:
        """Write counts held back by the refresh interval once it has passed, and forget
        entries that have gone quiet. Called once per loop."""
        for entry in self.correlator.due(self.clock.now()):
            self._patch(entry)

    def _create(self, write: Create) -> None:
        event, message = write.event, write.message
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
        self.correlator.created(write, event_name, event_namespace, self.clock.now())

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
                self.correlator.expired(entry)
            return
        self.writes += 1
        self.correlator.patched(entry, self.clock.now())


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


class _Writer:
    """One writer: an EventRecorder fed through a bounded, prioritised queue by a thread of its
    own. At most `max_queued_pod_events` per-pod events wait; beyond that the oldest is dropped
    (counted in `dropped`). Node and cluster events are never dropped for room."""

    def __init__(self, recorder: EventRecorder, max_queued_pod_events: int, name: str):
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
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def queued(self) -> dict[Precedence, int]:
        with self._condition:
            return {p: len(q) for p, q in self._queues.items()}

    def record(self, event: Event) -> bool:
        """Queue `event`; False when that pushed out an older per-pod event."""
        with self._condition:
            if self._closing:
                return True
            level = precedence(event)
            queue = self._queues[level]
            pushed_out = level is Precedence.POD and len(queue) >= self.max_queued_pod_events
            if pushed_out:
                queue.popleft()
                self.dropped += 1
            queue.append(event)
            self._condition.notify_all()
            return not pushed_out

    def flush(self) -> None:
        with self._condition:
            self._flush_requested = True
            self._condition.notify_all()

    def wait_idle(self, deadline: float) -> bool:
        with self._condition:
            while self._busy or any(self._queues.values()) or self._flush_requested:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._condition.wait(left)
        return True

    def stop(self) -> dict[Precedence, int]:
        """Stop taking work; what is still queued is dropped, counted, and returned by level."""
        with self._condition:
            self._closing = True
            left = {p: len(q) for p, q in self._queues.items() if q}
            for queue in self._queues.values():
                queue.clear()
            self.dropped += sum(left.values())
            self._condition.notify_all()
        return left

    def join(self, timeout: float) -> None:
        self._thread.join(timeout)

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


class BackgroundEvents:
    """EventRecorders fed through bounded, prioritised queues by threads of their own, so a loop
    that has a thousand things to say never waits on the API for them. The Cluster Autoscaler's
    recorder is asynchronous for the same reason.

    `writers` threads share the work, each writing the events of the objects that hash to it
    (an object's events stay in order, and its correlation in one place): a 2,000-pod burst's
    TriggeredScaleUps are as many POSTs, and one at a time they are minutes of round trips.

    Bounds: at most `max_queued_pod_events` per-pod events wait (shared evenly by the writers);
    beyond that the oldest is dropped (counted in `dropped`, warned in the log). Node and cluster
    events are never dropped for room: they are few (one per node per step) and are what an
    operator reads after a scale-down."""

    MAX_QUEUED_POD_EVENTS = 10_000

    def __init__(
        self,
        recorder: EventRecorder,
        *,
        max_queued_pod_events: int = MAX_QUEUED_POD_EVENTS,
        writers: int = 1,
    ):
        self.recorder = recorder
        recorders = [recorder, *(recorder.sibling() for _ in range(writers - 1))]
        share = max(1, max_queued_pod_events // len(recorders))
        self._writers = [_Writer(r, share, f"events-{index}") for index, r in enumerate(recorders)]
        self._pushed_out = 0
        self._lock = threading.Lock()

    @property
    def writes(self) -> int:
        return sum(w.recorder.writes for w in self._writers)

    @property
    def dropped(self) -> int:
        return sum(w.dropped for w in self._writers)

    @property
    def spam_filtered(self) -> int:
        return sum(w.recorder.correlator.spam_filtered for w in self._writers)

    def queued(self) -> int:
        return sum(sum(w.queued().values()) for w in self._writers)

    def record(self, event: Event) -> None:
        writer = self._writers[zlib.crc32(f"{event.kind}/{event.key}".encode()) % len(self._writers)]
        if writer.record(event):
            return
        with self._lock:
            self._pushed_out += 1
            pushed_out = self._pushed_out
        if pushed_out in (1, 100, 10_000) or pushed_out % 100_000 == 0:
            log.warning("per-pod events dropped: the API server is not keeping up (%d so far)", pushed_out)

    def flush(self) -> None:
        """Ask the writers to write held-back counts (EventRecorder.flush) once their queues are
        empty."""
        for writer in self._writers:
            writer.flush()

    def wait_idle(self, timeout: float) -> bool:
        """Wait until everything queued so far is written (or given up); False on timeout."""
        deadline = time.monotonic() + timeout
        return all([writer.wait_idle(deadline) for writer in self._writers])

    def close(self, timeout: float = 5.0) -> None:
        """Write what is queued, most important first, within `timeout` (client-go's broadcaster
        Shutdown drains its queue the same way, bounded); then stop the threads. What is still
        queued at the deadline (per-pod events, normally) is dropped and counted."""
        deadline = time.monotonic() + timeout
        written = self.wait_idle(timeout)
        left: collections.Counter[str] = collections.Counter()
        for writer in self._writers:
            left.update({p.name.lower(): n for p, n in writer.stop().items()})
        if not written and left:
            log.warning(
                "stopping: %d events not written within %gs (%s)", sum(left.values()), timeout, dict(left)
            )
        for writer in self._writers:
            writer.join(max(0.5, deadline - time.monotonic()))
