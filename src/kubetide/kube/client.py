"""The one door to the Kubernetes API: raw JSON over the official client's configuration.

Why the official `kubernetes` client, and why only its configuration and connection pool: it
loads every kubeconfig users have (client certificates, bearer tokens, exec and auth-provider
plugins with token refresh, in-cluster service-account config) and is maintained by the
Kubernetes project. Its generated object model is not used: responses stay JSON dicts and go
straight into kubetide's own model (`kubetide.model`), so there is one object model, not two.

Requests are paced by a client-side token bucket (`--kube-client-qps`, `--kube-client-burst`,
the Cluster Autoscaler's names and defaults), as client-go paces every request it starts.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import urllib3

from kubetide.errors import UserError

DEFAULT_QPS = 5.0
DEFAULT_BURST = 10
# A watch's server-side timeout; the informer re-opens it from the last resourceVersion.
WATCH_TIMEOUT_SECONDS = 290


class ApiError(Exception):
    """The API server answered with an error status (or, as ApiUnreachable, not at all)."""

    def __init__(self, status: int, reason: str, message: str):
        self.status, self.reason, self.message = status, reason, message
        super().__init__(f"{status} {reason}: {message}" if status else message)


class ApiUnreachable(ApiError):
    def __init__(self, message: str):
        super().__init__(0, "Unreachable", message)


class RateLimiter:
    """A token bucket: `qps` tokens a second, at most `burst` saved up. `wait()` takes one."""

    def __init__(self, qps: float, burst: int, monotonic: Callable[[], float] = time.monotonic):
        if qps <= 0 or burst < 1:
            raise UserError(
                f"--kube-client-qps and --kube-client-burst must be positive (got {qps}, {burst})"
            )
        self.qps, self.burst, self._monotonic = qps, burst, monotonic
        self._tokens = float(burst)
        self._last = monotonic()
        self._lock = threading.Lock()

    def delay(self) -> float:
        """Take a token; return how long the caller must wait before using it."""
        with self._lock:
            now = self._monotonic()
            self._tokens = min(self.burst, self._tokens + (now - self._last) * self.qps)
            self._last = now
            self._tokens -= 1
            return 0.0 if self._tokens >= 0 else -self._tokens / self.qps

    def wait(self) -> None:
        pause = self.delay()
        if pause > 0:
            time.sleep(pause)


class KubeClient:
    """JSON requests and watch streams against one API server."""

    def __init__(self, api_client: Any, limiter: RateLimiter, source: str):
        self._api = api_client
        self._pool: urllib3.PoolManager = api_client.rest_client.pool_manager
        self.server: str = api_client.configuration.host.rstrip("/")
        self.limiter = limiter
        self.source = source  # where the configuration came from, for error messages
        self.requests = 0  # requests sent, for tests and benchmarks

    # -- plumbing ------------------------------------------------------------------------------
    def _headers(self, content_type: str | None) -> dict[str, str]:
        headers = {"Accept": "application/json", "User-Agent": "kubetide"}
        if content_type:
            headers["Content-Type"] = content_type
        # Refreshes exec-plugin and service-account tokens as the official client does.
        self._api.update_params_for_auth(headers, [], ["BearerToken"], None, None, None)
        return headers

    def _url(self, path: str, query: dict[str, str] | None) -> str:
        return f"{self.server}{path}?{urlencode(query)}" if query else f"{self.server}{path}"

    def _send(
        self,
        method: str,
        path: str,
        query: dict[str, str] | None,
        body: Any,
        content_type: str | None,
        timeout: urllib3.Timeout,
        stream: bool,
    ) -> urllib3.BaseHTTPResponse:
        self.limiter.wait()
        self.requests += 1
        try:
            return self._pool.request(
                method,
                self._url(path, query),
                body=None if body is None else json.dumps(body),
                headers=self._headers(content_type if body is not None else None),
                timeout=timeout,
                preload_content=not stream,
                retries=False,  # retries are the caller's decision (conflicts, 429s, re-lists)
            )
        except urllib3.exceptions.HTTPError as exc:
            raise ApiUnreachable(f"cannot reach the API server at {self.server}: {_cause(exc)}") from None

    # -- the API -------------------------------------------------------------------------------
    def request(
        self,
        method: str,
        path: str,
        *,
        query: dict[str, str] | None = None,
        body: Any = None,
        content_type: str = "application/json",
        timeout: float = 30.0,
    ) -> dict:
        """The decoded JSON answer; ApiError for a status >= 400."""
        response = self._send(method, path, query, body, content_type, urllib3.Timeout(total=timeout), False)
        data = response.data
        if response.status >= 400:
            raise _api_error(response.status, data)
        return json.loads(data) if data else {}

    def list_pages(
        self, path: str, *, page_size: int = 500, query: dict[str, str] | None = None
    ) -> Iterator[dict]:
        """A LIST in pages of `page_size` (limit/continue), so a large cluster never arrives as
        one huge response. The last page's metadata.resourceVersion is the list's. `query` adds
        parameters (a fieldSelector) to every page."""
        first = {**(query or {}), "limit": str(page_size)}
        page_query = first
        while True:
            page = self.request("GET", path, query=page_query)
            yield page
            token = (page.get("metadata") or {}).get("continue")
            if not token:
                return
            page_query = {**first, "continue": token}

    def watch(
        self,
        path: str,
        *,
        query: dict[str, str],
        on_open: Callable[[urllib3.BaseHTTPResponse], None] | None = None,
    ) -> Iterator[dict]:
        """Watch events ({"type", "object"}) until the server ends the stream.

        An ERROR event (for example 410 Gone: the resourceVersion is too old) raises ApiError.
        `on_open` receives the open response, so another thread can shut it to stop the watch.
        """
        params = {"watch": "1", "timeoutSeconds": str(WATCH_TIMEOUT_SECONDS), **query}
        # The read timeout only has to outlast the server's own, plus a bookmark's gap.
        timeout = urllib3.Timeout(connect=10.0, read=WATCH_TIMEOUT_SECONDS + 30.0)
        response = self._send("GET", path, params, None, None, timeout, True)
        if on_open is not None:
            on_open(response)
        try:
            if response.status >= 400:
                raise _api_error(response.status, response.read())
            buffer = b""
            for chunk in response.stream(64 * 1024, decode_content=True):
                buffer += chunk
                *lines, buffer = buffer.split(b"\n")
                for line in lines:
                    if not line.strip():
                        continue
                    event = json.loads(line)
                    if event.get("type") == "ERROR":
                        status = event.get("object") or {}
                        raise ApiError(
                            int(status.get("code") or 500),
                            status.get("reason", ""),
                            status.get("message", ""),
                        )
                    yield event
        except urllib3.exceptions.HTTPError as exc:
            raise ApiUnreachable(f"watch of {path} broke: {_cause(exc)}") from None
        finally:
            response.release_conn()

    def close(self) -> None:
        self._pool.clear()


def _cause(exc: BaseException) -> str:
    reason = getattr(exc, "reason", None)
    return str(reason or exc).splitlines()[0]


def _api_error(status: int, data: bytes) -> ApiError:
    try:
        body = json.loads(data)
    except ValueError:
        body = {}
    if not isinstance(body, dict):
        body = {}
    message = body.get("message") or data.decode("utf-8", "replace").strip()[:300] or "no message"
    return ApiError(status, str(body.get("reason") or ""), message)


def connect(
    kubeconfig: str | None,
    context: str | None = None,
    *,
    qps: float = DEFAULT_QPS,
    burst: int = DEFAULT_BURST,
) -> KubeClient:
    """A client from a kubeconfig file, or from the pod's service account when `kubeconfig` is
    None. Every way this can fail is a UserError of one line naming the file."""
    from kubernetes import client as k8s_client
    from kubernetes import config as k8s_config
    from kubernetes.config.config_exception import ConfigException

    limiter = RateLimiter(qps, burst)
    configuration = k8s_client.Configuration()
    # One connection per informer's open watch plus the loop's own requests; the default pool
    # (5 per core) would drop and reopen connections every loop on a small machine.
    configuration.connection_pool_maxsize = 32
    if kubeconfig is None:
        try:
            k8s_config.load_incluster_config(client_configuration=configuration)
        except ConfigException as exc:
            raise UserError(
                f"no --kubeconfig given and no in-cluster configuration ({str(exc).splitlines()[0]})"
            ) from None
        return KubeClient(k8s_client.ApiClient(configuration), limiter, "in-cluster configuration")
    path = Path(kubeconfig)
    if not path.is_file():
        raise UserError(f"--kubeconfig {kubeconfig}: no such file")
    try:
        k8s_config.load_kube_config(
            config_file=str(path), context=context, client_configuration=configuration, persist_config=False
        )
    except (ConfigException, ValueError, TypeError, KeyError, AttributeError, OSError) as exc:
        # The loader raises whatever its YAML walk trips on for malformed files.
        detail = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise UserError(f"--kubeconfig {kubeconfig}: invalid kubeconfig: {detail}") from None
    except Exception as exc:  # yaml errors and the like: still the user's file, never a traceback
        detail = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise UserError(f"--kubeconfig {kubeconfig}: cannot load: {detail}") from None
    return KubeClient(k8s_client.ApiClient(configuration), limiter, kubeconfig)
