"""Informers: list once, then watch from the list's resourceVersion, as client-go's reflector.

Each informer runs in its own daemon thread and never touches the autoscaler's state: it turns
API objects into model objects and puts `Change`s on a queue that the view applies between
loops, so the snapshot never moves under a running loop.

- Watches resume from the last resourceVersion seen (bookmarks included) after the server ends
  the stream or the connection breaks; a 410 Gone (the version was compacted away) re-lists,
  and the re-list is diffed against what the informer knows, so consumers see only changes.
- Lists are paginated (limit/continue); an expired continue token restarts the list.
- An object kubetide cannot parse is skipped with a warning (named by kind, name and field), not
  a crash: one odd object must not stop the autoscaler.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from kubetide.errors import ManifestError
from kubetide.kube.client import ApiError, KubeClient
from kubetide.kube.resources import Resource, object_key, parser_for

log = logging.getLogger("kubetide.kube")

ADDED, MODIFIED, DELETED = "ADDED", "MODIFIED", "DELETED"
LIST_PAGE_SIZE = 500
RETRY_MIN, RETRY_MAX = 0.5, 10.0  # seconds between attempts after an error, doubling


@dataclass(frozen=True, slots=True)
class Change:
    kind: str
    type: str  # ADDED | MODIFIED | DELETED
    key: str  # namespace/name or name
    obj: Any  # the model object (for DELETED: its last known state)


class Informer:
    def __init__(
        self,
        client: KubeClient,
        resource: Resource,
        changes: queue.SimpleQueue[Change],
        *,
        on_change: Callable[[Change], None] | None = None,
        parse: Callable[[dict], Any] | None = None,
        field_selector: str = "",
    ):
        self.client = client
        self.resource = resource
        # e.g. spec.nodeName=NODE for an agent that needs its own node's pods only
        self.selection = {"fieldSelector": field_selector} if field_selector else {}
        self.changes = changes
        self.on_change = on_change
        # Custom resources kubetide has no model for (Cluster API's) bring their own parser.
        self.parse = parse or parser_for(resource.kind, client.server)
        self.synced = threading.Event()  # the first full list is on the queue
        self.stopping = threading.Event()
        self.resource_version = ""
        self.last_error: ApiError | None = None
        self.relists = 0  # lists after the first (410 Gone), for tests
        # key -> (resourceVersion, model object); raw objects are not kept (managedFields alone would
        # triple the memory of a large cluster's pods).
        self._known: dict[str, tuple[str, Any]] = {}
        self._response: Any = None
        self._thread: threading.Thread | None = None

    # -- lifecycle -----------------------------------------------------------------------------
    def start(self) -> None:
        self._thread = threading.Thread(
            target=self._run, name=f"informer-{self.resource.plural}", daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        self.stopping.set()
        response = self._response
        if response is not None:
            # Closing the socket ends a watch blocked in read; the thread then sees `stopping`.
            try:
                response.shutdown()
            except Exception:  # already closed, or urllib3 without shutdown(): close instead
                response.close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    # -- the reflector loop -----------------------------------------------------------------------
    def _run(self) -> None:
        pause = RETRY_MIN
        while not self.stopping.is_set():
            try:
                if not self.resource_version:
                    self._list()
                self._watch()
                pause = RETRY_MIN
                self.last_error = None
                continue  # the server ended the watch (its timeout): resume at once
            except ApiError as exc:
                if self.stopping.is_set():
                    return
                if exc.status == 410:
                    log.info("%s: watch expired (410 Gone); re-listing", self.resource.plural)
                    self.resource_version = ""
                    self.relists += 1
                    continue
                self.last_error = exc
                log.warning("%s: %s; retrying in %.1fs", self.resource.plural, exc, pause)
            except Exception as exc:  # a bug: keep the cache alive, say so loudly, retry
                if self.stopping.is_set():
                    return
                self.last_error = ApiError(0, type(exc).__name__, str(exc))
                log.exception("%s: informer failed; retrying in %.1fs", self.resource.plural, pause)
            self.stopping.wait(pause)
            pause = min(RETRY_MAX, pause * 2)

    def _list(self) -> None:
        seen: dict[str, tuple[str, Any]] = {}
        page: dict = {}
        for page in self.client.list_pages(
            self.resource.list_path, page_size=LIST_PAGE_SIZE, query=self.selection
        ):
            for raw in page.get("items") or ():
                key = object_key(raw)
                version = (raw.get("metadata") or {}).get("resourceVersion", "")
                obj = self._parse(raw)
                if obj is not None:
                    seen[key] = (version, obj)
        for key, (version, obj) in seen.items():
            known = self._known.get(key)
            if known is None:
                self._emit(Change(self.resource.kind, ADDED, key, obj))
            elif known[0] != version:
                self._emit(Change(self.resource.kind, MODIFIED, key, obj))
        for key, (_, obj) in self._known.items():
            if key not in seen:
                self._emit(Change(self.resource.kind, DELETED, key, obj))
        self._known = seen
        self.resource_version = (page.get("metadata") or {}).get("resourceVersion", "")
        self.synced.set()

    def _watch(self) -> None:
        query = {**self.selection, "resourceVersion": self.resource_version, "allowWatchBookmarks": "true"}
        for event in self.client.watch(self.resource.list_path, query=query, on_open=self._opened):
            if self.stopping.is_set():
                return
            kind, raw = event.get("type"), event.get("object") or {}
            version = (raw.get("metadata") or {}).get("resourceVersion", "")
            if kind == "BOOKMARK":
                self.resource_version = version or self.resource_version
                continue
            key = object_key(raw)
            if kind == DELETED:
                known = self._known.pop(key, None)
                obj = self._parse(raw) if known is None else known[1]
                if obj is not None:
                    self._emit(Change(self.resource.kind, DELETED, key, obj))
            elif kind in (ADDED, MODIFIED):
                obj = self._parse(raw)
                if obj is not None:
                    change_type = MODIFIED if key in self._known else ADDED
                    self._known[key] = (version, obj)
                    self._emit(Change(self.resource.kind, change_type, key, obj))
            self.resource_version = version or self.resource_version

    def _opened(self, response: Any) -> None:
        self._response = response

    def _parse(self, raw: dict) -> Any:
        try:
            return self.parse(raw)
        except ManifestError as exc:
            log.warning("skipping an object kubetide cannot read: %s", exc)
            return None
        except Exception:  # a parser bug must cost one object, not the whole cache
            log.exception("skipping %s %s: kubetide failed to read it", self.resource.kind, object_key(raw))
            return None

    def _emit(self, change: Change) -> None:
        self.changes.put(change)
        if self.on_change is not None:
            self.on_change(change)


class InformerGroup:
    """Informers that feed one queue, started, awaited and stopped together; the consumer drains
    the queue in its own thread (`changes()`), so what it builds never moves under it."""

    def __init__(self) -> None:
        self.queue: queue.SimpleQueue[Change] = queue.SimpleQueue()
        self.informers: list[Informer] = []

    def add(self, client: KubeClient, resource: Resource, **options: Any) -> Informer:
        informer = Informer(client, resource, self.queue, **options)
        self.informers.append(informer)
        return informer

    def start(self) -> None:
        for informer in self.informers:
            informer.start()

    def wait_for_sync(self, timeout: float) -> list[str]:
        """Wait up to `timeout` seconds in all for every first list; the resources not listed in
        time, each with the last error it saw (empty when all are in)."""
        deadline = time.monotonic() + timeout
        for informer in self.informers:
            informer.synced.wait(max(0.0, deadline - time.monotonic()))
        return [
            f"{i.resource.plural}: {i.last_error or 'not listed yet'}"
            for i in self.informers
            if not i.synced.is_set()
        ]

    def stop(self) -> None:
        for informer in self.informers:
            informer.stopping.set()  # all at once, so the joins below do not wait in turn
        for informer in self.informers:
            informer.stop()

    def changes(self) -> Iterator[Change]:
        """Every change queued so far, oldest first."""
        while True:
            try:
                yield self.queue.get_nowait()
            except queue.Empty:
                return

    def last_errors(self) -> list[str]:
        return [f"{i.resource.plural}: {i.last_error}" for i in self.informers if i.last_error is not None]
