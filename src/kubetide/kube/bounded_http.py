"""A small HTTP server that no client reaching the port can hold down (issue #26, item 4).

What it serves is tiny and read-only (/metrics, /health-check), but the kubelet restarts the
process when its liveness probe times out, so the probe must get through whatever else is
connected. The stdlib's ThreadingHTTPServer gives every connection a thread that waits in
recv() with no timeout: 256 connections that never finish their request kept 256 threads busy,
and the next probe timed out.

How this one holds:

- One selector thread accepts and reads requests WITHOUT a thread per connection: a connection
  still sending its request costs a file descriptor and a few bytes of buffer, nothing more.
- Only a complete request head is handed to a worker (a small pool per route class: /metrics
  rendering never waits behind probes, probes never wait behind /metrics), and parsed and
  answered by the stdlib's BaseHTTPRequestHandler. One request per connection (HTTP/1.0).
- Deadlines per connection, counted from accept: the request head within `request_timeout`,
  the whole exchange within `response_timeout`; past them the selector thread closes (or shuts
  down under the worker) the socket. A slow reader of /metrics cannot keep a worker either.
- At most `max_connections` open at once. At the cap, a new connection makes room by closing
  the OLDEST one still sending its request: an attacker's half-open connections are pushed out
  by the probe, not the other way round. Heavy routes queue at most `max_queued` requests;
  past that they are answered 503 at once.
- Out of file descriptors (EMFILE/ENFILE) at accept: the oldest unfinished connection is closed
  to make room; when there is none, accepting pauses for `accept_pause` seconds (one warning
  a minute at most) instead of waking again at once on the still-readable listener.
- A client that goes away mid-answer costs one debug line, never a traceback.

Why not prometheus_client's own server (start_http_server): it is the stdlib's threading WSGI
server with the same thread per connection and no timeout, and it has no /health-check.
"""

from __future__ import annotations

import contextlib
import errno
import io
import logging
import selectors
import socket
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler

log = logging.getLogger("kubetide.server")

# (status, body, content type): what a route answers.
Reply = tuple[int, bytes, str]
TEXT = "text/plain; charset=utf-8"
OUT_OF_DESCRIPTORS = (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM)


@dataclass(frozen=True, slots=True)
class Limits:
    max_connections: int = 128  # open at once, unfinished requests and answers together
    request_timeout: float = 5.0  # seconds from accept to a complete request head
    response_timeout: float = 15.0  # seconds from accept to the last byte of the answer
    max_request_bytes: int = 8192  # the request line and headers; there is never a body to read
    max_queued: int = 8  # requests of a heavy route waiting for or in a worker
    heavy_workers: int = 2
    light_workers: int = 2
    accept_pause: float = 0.5  # seconds without accepting when out of file descriptors


@dataclass(frozen=True, slots=True)
class Route:
    answer: Callable[[], Reply]
    heavy: bool = False  # rendered by the heavy pool (/metrics) rather than the light one


@dataclass(eq=False)
class _Connection:
    sock: socket.socket
    peer: str
    accepted: float
    head: bytearray = field(default_factory=bytearray)
    answering: bool = False  # handed to a worker: no longer read by the selector thread


@dataclass
class Stats:
    """Counters for tests and debugging (read without a lock: approximate by design)."""

    accepted: int = 0
    answered: int = 0
    timed_out: int = 0  # closed at a deadline
    pushed_out: int = 0  # closed to make room for a newer connection
    busy: int = 0  # answered 503: a heavy route's queue was full
    too_large: int = 0
    aborted: int = 0  # the client went away while being answered
    accept_errors: int = 0  # accept() failures, EMFILE included
    accept_pauses: int = 0


class BoundedHTTPServer:
    """Serves `routes` (path -> Route) on an already bound, listening socket."""

    def __init__(
        self,
        listener: socket.socket,
        routes: Mapping[str, Route],
        limits: Limits | None = None,
        *,
        monotonic: Callable[[], float] = time.monotonic,
    ):
        self.limits = limits or Limits()
        self.routes = dict(routes)
        self.stats = Stats()
        self._monotonic = monotonic
        self._listener = listener
        listener.setblocking(False)
        self._selector = selectors.DefaultSelector()
        self._selector.register(listener, selectors.EVENT_READ, None)
        self._wake_read, self._wake_write = socket.socketpair()
        self._wake_read.setblocking(False)
        self._selector.register(self._wake_read, selectors.EVENT_READ, "wake")
        self._lock = threading.Lock()
        self._reading: OrderedDict[int, _Connection] = OrderedDict()  # by accept order, oldest first
        self._answering: dict[int, _Connection] = {}
        self._heavy_queued = 0
        self._paused_until: float | None = None
        self._last_fd_warning = -1e9
        self._closing = threading.Event()
        self._heavy = ThreadPoolExecutor(self.limits.heavy_workers, thread_name_prefix="http-heavy")
        self._light = ThreadPoolExecutor(self.limits.light_workers, thread_name_prefix="http-light")
        self._thread = threading.Thread(target=self._serve, name="http-selector", daemon=True)
        self._thread.start()

    @property
    def open_connections(self) -> int:
        with self._lock:
            return len(self._reading) + len(self._answering)

    def close(self) -> None:
        self._closing.set()
        with contextlib.suppress(OSError):
            self._wake_write.send(b"x")
        self._thread.join()
        with self._lock:
            answering = list(self._answering.values())
        for conn in answering:  # a worker blocked on a slow client fails now, not at its deadline
            with contextlib.suppress(OSError):
                conn.sock.shutdown(socket.SHUT_RDWR)
        self._heavy.shutdown(wait=True, cancel_futures=True)
        self._light.shutdown(wait=True, cancel_futures=True)
        with self._lock:
            leftovers = [*self._reading.values(), *self._answering.values()]
            self._reading.clear()
            self._answering.clear()
        for conn in leftovers:
            _close(conn.sock)
        self._selector.close()
        for sock in (self._listener, self._wake_read, self._wake_write):
            _close(sock)

    # -- the selector thread -----------------------------------------------------------------
    def _serve(self) -> None:
        while not self._closing.is_set():
            try:
                self._serve_once()
            except Exception:  # a bug: keep serving the probe rather than die silently
                log.exception("the HTTP server's selector loop failed; going on")
                time.sleep(0.1)

    def _serve_once(self) -> None:
        for key, _ in self._selector.select(timeout=0.1):
            if key.data is None:
                self._accept()
            elif key.data == "wake":
                with contextlib.suppress(OSError):
                    self._wake_read.recv(64)
            else:
                self._read(key.data)
        self._enforce_deadlines()
        self._resume_accepting()

    def _accept(self) -> None:
        for _ in range(64):  # a burst, then the others get their turn
            try:
                sock, address = self._listener.accept()
            except BlockingIOError:
                return
            except OSError as exc:
                self.stats.accept_errors += 1
                if exc.errno in OUT_OF_DESCRIPTORS:
                    if not self._push_out_oldest("out of file descriptors"):
                        self._pause_accepting(exc)
                else:
                    log.debug("accept failed: %s", exc)
                return
            self.stats.accepted += 1
            sock.setblocking(False)
            conn = _Connection(sock, _peer(address), self._monotonic())
            if self.open_connections >= self.limits.max_connections and not self._push_out_oldest(
                f"--max {self.limits.max_connections} connections"
            ):
                _close(sock)  # every open connection is being answered: this one waits for nothing
                continue
            with self._lock:
                self._reading[sock.fileno()] = conn
            self._selector.register(sock, selectors.EVENT_READ, conn)

    def _push_out_oldest(self, why: str) -> bool:
        """Close the oldest connection still sending its request; False when there is none."""
        with self._lock:
            if not self._reading:
                return False
            _, oldest = self._reading.popitem(last=False)
        self._unregister(oldest.sock)
        _close(oldest.sock)
        self.stats.pushed_out += 1
        log.debug("closed an unfinished request from %s to make room (%s)", oldest.peer, why)
        return True

    def _pause_accepting(self, exc: OSError) -> None:
        self._unregister(self._listener)
        self._paused_until = self._monotonic() + self.limits.accept_pause
        self.stats.accept_pauses += 1
        now = self._monotonic()
        if now - self._last_fd_warning >= 60:
            self._last_fd_warning = now
            log.warning(
                "cannot accept connections (%s): pausing %gs each time until descriptors are free",
                exc.strerror or exc,
                self.limits.accept_pause,
            )

    def _resume_accepting(self) -> None:
        if self._paused_until is not None and self._monotonic() >= self._paused_until:
            self._paused_until = None
            self._selector.register(self._listener, selectors.EVENT_READ, None)

    def _read(self, conn: _Connection) -> None:
        try:
            chunk = conn.sock.recv(4096)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            chunk = b""
        if not chunk:  # the client closed (or reset) before finishing its request
            self._drop(conn)
            return
        conn.head += chunk
        end = _head_end(conn.head)
        if end < 0:
            if len(conn.head) > self.limits.max_request_bytes:
                self.stats.too_large += 1
                self._refuse(conn, 431, b"request header fields too large\n")
            return
        del conn.head[end:]  # a body, if any, is never read
        self._dispatch(conn)

    def _dispatch(self, conn: _Connection) -> None:
        route = self.routes.get(_path(conn.head))
        heavy = route is not None and route.heavy
        if heavy and self._heavy_queued >= self.limits.max_queued:
            self.stats.busy += 1
            self._refuse(conn, 503, b"busy: too many /metrics requests at once\n")
            return
        self._unregister(conn.sock)
        conn.answering = True
        with self._lock:
            self._reading.pop(conn.sock.fileno(), None)
            self._answering[conn.sock.fileno()] = conn
            if heavy:
                self._heavy_queued += 1
        pool = self._heavy if heavy else self._light
        try:
            pool.submit(self._answer, conn, heavy)
        except RuntimeError:  # shutting down
            self._finish(conn, heavy)

    def _refuse(self, conn: _Connection, status: int, body: bytes) -> None:
        """A short answer from the selector thread, best effort, without blocking."""
        reason = {431: "Request Header Fields Too Large", 503: "Service Unavailable"}[status]
        response = (
            f"HTTP/1.0 {status} {reason}\r\nContent-Type: {TEXT}\r\nContent-Length: {len(body)}\r\n"
            "Connection: close\r\n\r\n"
        ).encode() + body
        with contextlib.suppress(OSError):
            conn.sock.send(response)
        self._drop(conn)

    def _drop(self, conn: _Connection) -> None:
        with self._lock:
            self._reading.pop(conn.sock.fileno(), None)
        self._unregister(conn.sock)
        _close(conn.sock)

    def _enforce_deadlines(self) -> None:
        now = self._monotonic()
        limits = self.limits
        late_readers = []
        with self._lock:
            # Oldest first: the scan stops at the first connection still within its time, so
            # thousands of open connections cost nothing per wake-up until they are late.
            for conn in self._reading.values():
                if now - conn.accepted <= limits.request_timeout:
                    break
                late_readers.append(conn)
            late_answers = [c for c in self._answering.values() if now - c.accepted > limits.response_timeout]
        for conn in late_readers:
            self.stats.timed_out += 1
            log.debug(
                "closed a connection from %s: no complete request in %gs", conn.peer, limits.request_timeout
            )
            self._drop(conn)
        for conn in late_answers:
            # The worker is blocked writing to a client that does not read: shutting the socket
            # down makes its send fail now; the worker then closes it.
            with contextlib.suppress(OSError):
                conn.sock.shutdown(socket.SHUT_RDWR)

    def _unregister(self, sock: socket.socket) -> None:
        with contextlib.suppress(KeyError, ValueError, OSError):
            self._selector.unregister(sock)

    # -- the workers -------------------------------------------------------------------------
    def _answer(self, conn: _Connection, heavy: bool) -> None:
        try:
            remaining = self.limits.response_timeout - (self._monotonic() - conn.accepted)
            if remaining <= 0:
                self.stats.timed_out += 1
                return
            conn.sock.setblocking(True)
            conn.sock.settimeout(remaining)
            exchange = _Exchange(conn, (conn.peer, 0), self)  # type: ignore[arg-type]  # ours, not a socketserver's
            if exchange.failure is not None:  # a timeout, which the stdlib catches and logs
                raise exchange.failure
            self.stats.answered += 1
        except OSError as exc:  # BrokenPipe, ConnectionReset, a timeout, a shutdown at the deadline
            self.stats.aborted += 1
            log.debug("answer to %s not delivered: %s", conn.peer, exc.strerror or exc)
        except Exception:  # a bug in a route: the server goes on
            log.exception("answering %s failed", conn.peer)
        finally:
            self._finish(conn, heavy)

    def _finish(self, conn: _Connection, heavy: bool) -> None:
        with self._lock:
            self._answering.pop(conn.sock.fileno(), None)
            if heavy:
                self._heavy_queued -= 1
        _close(conn.sock)


class _Exchange(BaseHTTPRequestHandler):
    """One request, already read, parsed and answered by the stdlib."""

    server: BoundedHTTPServer  # type: ignore[assignment]  # ours, not a socketserver.BaseServer
    request: _Connection
    failure: OSError | None = None  # why the answer was not delivered

    def setup(self) -> None:
        self.connection = self.request.sock
        self.rfile = io.BytesIO(bytes(self.request.head))
        self.wfile = self.connection.makefile("wb")

    def finish(self) -> None:
        try:
            self.wfile.flush()
        finally:
            self.wfile.close()

    def do_GET(self) -> None:
        route = self.server.routes.get(self.path.split("?", 1)[0])
        if route is None:
            status, body, content_type = 404, b"404 page not found\n", TEXT
        else:
            status, body, content_type = route.answer()
        try:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(body)
            self.wfile.flush()
        except OSError as exc:
            self.failure = exc  # the stdlib swallows a timeout: the server reads it from here
            raise

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        """Scrapes and probes every few seconds would drown the process's own output."""

    def log_message(self, format: str, *args) -> None:
        """What the stdlib reports (a malformed request): one debug line. A failed delivery is
        logged once, by the server."""
        if self.failure is None:
            log.debug("%s: " + format, self.request.peer, *args)


def _head_end(head: bytearray) -> int:
    """Where the request head ends (after its blank line), -1 while it has not."""
    for separator in (b"\r\n\r\n", b"\n\n"):
        found = head.find(separator)
        if found >= 0:
            return found + len(separator)
    return -1


def _path(head: bytearray) -> str:
    line = bytes(head.split(b"\n", 1)[0]).decode("latin-1").split()
    return line[1].split("?", 1)[0] if len(line) >= 2 else ""


def _peer(address: object) -> str:
    if isinstance(address, tuple) and len(address) >= 2:
        return f"{address[0]}:{address[1]}"
    return str(address)


def _close(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.close()
