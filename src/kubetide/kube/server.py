"""The HTTP endpoint on --address: /metrics for Prometheus and /health-check for the kubelet.

/health-check follows the Cluster Autoscaler's liveness rules: 500 once no loop has finished for
--max-inactivity (10m) or none has succeeded for --max-failing-time (15m), so a wedged or
persistently failing autoscaler gets restarted. A replica that is not leading runs no loops, and
is healthy by definition: the check only starts counting once the replica starts looping
(`HealthCheck.start_monitoring`), and until its first loop ends the time since then is what is
measured, so a slow first loop (cold caches) gets the whole max-inactivity.

Ages are read from a monotonic clock: a wall-clock step (NTP, a VM resumed) must neither kill a
healthy autoscaler nor keep a dead one alive.
"""

from __future__ import annotations

import errno
import socket
import threading
import time
from collections.abc import Callable

from kubetide.durations import format_duration
from kubetide.errors import UserError
from kubetide.kube.bounded_http import TEXT, BoundedHTTPServer, Limits, Reply, Route

DEFAULT_ADDRESS = ":8085"
DEFAULT_MAX_INACTIVITY = 600.0  # --max-inactivity, CA's default
DEFAULT_MAX_FAILING_TIME = 900.0  # --max-failing-time, CA's default


class HealthCheck:
    """Liveness from the loop's progress. The loop thread reports; HTTP threads ask."""

    def __init__(
        self,
        max_inactivity: float = DEFAULT_MAX_INACTIVITY,
        max_failing_time: float = DEFAULT_MAX_FAILING_TIME,
        *,
        monotonic: Callable[[], float] = time.monotonic,
    ):
        self.max_inactivity = max_inactivity
        self.max_failing_time = max_failing_time
        self._monotonic = monotonic
        self._lock = threading.Lock()
        self._monitoring_since: float | None = None
        self._last_finished: float | None = None
        self._last_succeeded: float | None = None

    def start_monitoring(self) -> None:
        """The replica starts running loops (it became the leader): from now on it must make
        progress."""
        with self._lock:
            self._monitoring_since = self._monotonic()
            self._last_finished = self._last_succeeded = None

    def stop_monitoring(self) -> None:
        """The replica stops running loops (it is no longer the leader)."""
        with self._lock:
            self._monitoring_since = None

    def loop_finished(self, succeeded: bool) -> None:
        """A loop ended: returned a result (succeeded) or raised."""
        with self._lock:
            now = self._monotonic()
            self._last_finished = now
            if succeeded:
                self._last_succeeded = now

    def check(self) -> str | None:
        """None when healthy, else why not (one line)."""
        with self._lock:
            since = self._monitoring_since
            if since is None:
                return None
            now = self._monotonic()
            last_finished, last_succeeded = self._last_finished, self._last_succeeded
            any_finished = last_finished is not None
            finished = last_finished if last_finished is not None else since
            succeeded = last_succeeded if last_succeeded is not None else since
        if now - finished > self.max_inactivity:
            age = format_duration(round(now - finished))
            what = f"the last loop finished {age} ago" if any_finished else f"no loop has finished in {age}"
            return f"{what} (--max-inactivity={format_duration(self.max_inactivity)})"
        if now - succeeded > self.max_failing_time:
            return (
                f"no loop has succeeded for {format_duration(round(now - succeeded))} "
                f"(--max-failing-time={format_duration(self.max_failing_time)})"
            )
        return None


def parse_address(address: str) -> tuple[str, int]:
    """(host, port) from --address: "host:port", ":port" (every interface) or "[v6]:port"."""
    host, sep, port_text = address.rpartition(":")
    if not sep:
        raise UserError(f'--address={address}: expected "host:port" or ":port"')
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    elif ":" in host:
        raise UserError(f"--address={address}: write an IPv6 host in brackets, as in [::1]:8085")
    if not port_text.isdigit() or not 0 <= int(port_text) <= 65535:
        raise UserError(f"--address={address}: port must be a number from 0 to 65535")
    return host, int(port_text)


class StatusServer:
    """/metrics and /health-check on --address, served by a `BoundedHTTPServer` (bounded_http.py:
    per-connection deadlines, a connection cap that pushes out the oldest unfinished request,
    no thread per connection, no traceback per aborted client).

    `metrics` returns (body, content type) for /metrics; `AutoscalerMetrics.exposition` fits.
    """

    def __init__(
        self,
        address: str,
        metrics: Callable[[], tuple[bytes, str]],
        health: HealthCheck,
        limits: Limits | None = None,
    ):
        host, port = parse_address(address)
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        try:
            listener = socket.create_server((host, port), family=family, backlog=128)
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise UserError(f"--address={address}: the port is already in use") from None
            raise UserError(f"--address={address}: cannot listen: {exc.strerror or exc}") from None
        self.port: int = listener.getsockname()[1]

        def scrape() -> Reply:
            body, content_type = metrics()
            return 200, body, content_type

        def probe() -> Reply:
            problem = health.check()
            if problem is None:
                return 200, b"OK", TEXT
            return 500, f"Error: {problem}".encode(), TEXT

        routes = {"/metrics": Route(scrape, heavy=True), "/health-check": Route(probe)}
        self.http = BoundedHTTPServer(listener, routes, limits)

    def close(self) -> None:
        self.http.close()
