"""Kubernetes Events, aggregated as `kubectl get events` users expect.

The autoscaler says the same thing every loop (NotTriggerScaleUp for a pod that still fits
nowhere, ScaleDownFailed...). One core/v1 Event per (object, type, reason) carries a count and the
first and last time it was said; a repeat only bumps the count in memory, and the Event is
patched at most once per `refresh_seconds` (client-go's spam filter allows about one update per
five minutes per object) and whenever its message changes. An entry not repeated for an hour is
forgotten, so memory follows the cluster, not its history.
"""

from __future__ import annotations

import logging
import queue
import secrets
import threading
from dataclasses import dataclass

from kubetide.clock import Clock
from kubetide.durations import rfc3339
from kubetide.kube.client import ApiError, KubeClient

log = logging.getLogger("kubetide.kube")

COMPONENT = "cluster-autoscaler"
REFRESH_SECONDS = 300.0
FORGET_SECONDS = 3600.0
# Cluster-scoped objects' events live here, as kubectl and the Cluster Autoscaler put them.
CLUSTER_SCOPED_EVENT_NAMESPACE = "default"


@dataclass(slots=True)
class _Entry:
    name: str
    namespace: str
    count: int
    message: str
    first: float
    last: float
    written_count: int
    written_message: str
    written_at: float


class EventRecorder:
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
        self._entries: dict[tuple[str, str, str, str], _Entry] = {}
        self.writes = 0

    def record(self, kind: str, key: str, event_type: str, reason: str, message: str) -> None:
        now = self.clock.now()
        entry = self._entries.get((kind, key, event_type, reason))
        if entry is None:
            self._create(kind, key, event_type, reason, message, now)
            return
        entry.count += 1
        entry.message = message
        entry.last = now
        if message != entry.written_message or now - entry.written_at >= self.refresh_seconds:
            self._patch(entry)

    def flush(self) -> None:
        """Write counts held back by the refresh interval once it has passed, and forget
        entries that have gone quiet. Called once per loop."""
        now = self.clock.now()
        for id_, entry in list(self._entries.items()):
            if entry.count != entry.written_count and now - entry.written_at >= self.refresh_seconds:
                self._patch(entry)
            elif now - entry.last >= FORGET_SECONDS:
                del self._entries[id_]

    def _create(self, kind: str, key: str, event_type: str, reason: str, message: str, now: float) -> None:
        namespace, _, name = key.rpartition("/")
        event_namespace = namespace or CLUSTER_SCOPED_EVENT_NAMESPACE
        event_name = f"{name}.{secrets.token_hex(8)}"
        involved = {"kind": kind, "name": name, "apiVersion": "v1"}
        if namespace:
            involved["namespace"] = namespace
        body = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": event_name, "namespace": event_namespace},
            "involvedObject": involved,
            "type": event_type,
            "reason": reason,
            "message": message,
            "count": 1,
            "firstTimestamp": rfc3339(now),
            "lastTimestamp": rfc3339(now),
            "source": {"component": self.component, **({"host": self.host} if self.host else {})},
            "reportingComponent": self.component,
            **({"reportingInstance": self.host} if self.host else {}),
        }
        try:
            self.client.request("POST", f"/api/v1/namespaces/{event_namespace}/events", body=body)
        except ApiError as exc:
            # Events are best effort, as in client-go: a lost event never fails the loop.
            log.warning("event %s on %s %s not recorded: %s", reason, kind, key, exc)
            return
        self.writes += 1
        self._entries[(kind, key, event_type, reason)] = _Entry(
            event_name, event_namespace, 1, message, now, now, 1, message, now
        )

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
        entry.written_count, entry.written_message, entry.written_at = (
            entry.count,
            entry.message,
            self.clock.now(),
        )


class BackgroundEvents:
    """An EventRecorder fed through a queue by a thread of its own, so a loop that has a hundred
    things to say (a TriggeredScaleUp per pod) never waits on the API for them: at the client's
    default 5 requests a second that was 20 s of a loop. The Cluster Autoscaler's recorder is
    asynchronous for the same reason. Best effort, as events are: when the API cannot keep up
    and the queue is full, new events are dropped with a warning."""

    MAX_QUEUED = 10_000

    def __init__(self, recorder: EventRecorder):
        self.recorder = recorder
        self._queue: queue.Queue[tuple[str, ...] | None] = queue.Queue(self.MAX_QUEUED)
        self._dropped = 0
        self._thread = threading.Thread(target=self._run, name="events", daemon=True)
        self._thread.start()

    @property
    def writes(self) -> int:
        return self.recorder.writes

    def record(self, kind: str, key: str, event_type: str, reason: str, message: str) -> None:
        self._put((kind, key, event_type, reason, message))

    def flush(self) -> None:
        self._put(())

    def _put(self, item: tuple[str, ...]) -> None:
        try:
            self._queue.put_nowait(item)
        except queue.Full:
            self._dropped += 1
            if self._dropped in (1, 100, 10_000):
                log.warning("events dropped: the API server is not keeping up (%d so far)", self._dropped)

    def wait_idle(self, timeout: float) -> bool:
        """Wait until everything queued so far is written (or given up); False on timeout."""
        done = threading.Event()

        def wait() -> None:
            self._queue.join()
            done.set()

        threading.Thread(target=wait, daemon=True).start()
        return done.wait(timeout)

    def close(self, timeout: float = 5.0) -> None:
        """Write what is queued, within `timeout`, then stop the thread."""
        self.wait_idle(timeout)
        self._queue.put(None)
        self._thread.join(timeout)

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            try:
                if item is None:
                    return
                if item:
                    self.recorder.record(*item)
                else:
                    self.recorder.flush()
            except Exception:  # a bug must not silence every later event
                log.exception("recording an event failed")
            finally:
                self._queue.task_done()
