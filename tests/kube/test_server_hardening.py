"""The /metrics and /health-check server against clients that misbehave, on real sockets on
127.0.0.1 (issue #26, item 4): hundreds of half-open connections, slow readers, floods of
scrapes, clients that go away mid-answer, and a process out of file descriptors. No test
asserts a time: waits poll for an outcome and fail only after a generous bound."""

from __future__ import annotations

import contextlib
import logging
import socket
import struct
import subprocess
import sys
import textwrap
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from kubetide.kube.bounded_http import Limits
from kubetide.kube.server import HealthCheck, StatusServer

BIG_BODY = b"# a large exposition\n" + b"x" * (4 << 20)  # far more than a socket buffer holds


def get(port: int, path: str, timeout: float = 10) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=timeout) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def wait_for(condition, what: str, bound: float = 20.0) -> None:
    deadline = time.monotonic() + bound
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"not within {bound}s: {what}")
        time.sleep(0.02)


def half_open(port: int, count: int) -> list[socket.socket]:
    """Connections that start a request and never finish it."""
    clients = []
    for _ in range(count):
        client = socket.create_connection(("127.0.0.1", port))
        client.sendall(b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # no blank line: never ends
        clients.append(client)
    return clients


def closed_by_server(client: socket.socket) -> bool:
    client.settimeout(0)
    try:
        return client.recv(1) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True


@contextlib.contextmanager
def serving(metrics_body: bytes = b"m 1\n", limits: Limits | None = None, metrics=None):
    health = HealthCheck()
    answer = metrics or (lambda: (metrics_body, "text/plain; version=0.0.4"))
    server = StatusServer("127.0.0.1:0", answer, health, limits)
    try:
        yield server
    finally:
        server.close()


def test_hundreds_of_half_open_connections_do_not_keep_the_health_check_out():
    limits = Limits(max_connections=64)
    with serving(limits=limits) as server:
        clients = half_open(server.port, 300)
        try:
            # Every new probe pushes out the oldest unfinished request; it is never queued behind.
            for _ in range(20):
                assert get(server.port, "/health-check") == (200, b"OK")
                assert get(server.port, "/metrics") == (200, b"m 1\n")
            assert server.http.open_connections <= limits.max_connections
            assert server.http.stats.pushed_out >= 300 - limits.max_connections
            # The connections pushed out were the oldest: the first ones are closed.
            wait_for(lambda: all(closed_by_server(c) for c in clients[:100]), "the oldest closed")
        finally:
            for client in clients:
                client.close()


def test_an_unfinished_request_is_closed_at_the_request_timeout():
    with serving(limits=Limits(request_timeout=0.3)) as server:
        clients = half_open(server.port, 5)
        try:
            wait_for(lambda: all(closed_by_server(c) for c in clients), "every slow request closed")
            assert server.http.stats.timed_out >= 5
            wait_for(lambda: server.http.open_connections == 0, "nothing left open")
        finally:
            for client in clients:
                client.close()


def test_a_client_that_never_reads_the_answer_does_not_keep_a_worker():
    limits = Limits(response_timeout=2, heavy_workers=1)
    huge = b"x" * (64 << 20)  # more than the kernel's socket buffers on both ends take in
    with serving(huge, limits) as server:
        stuck = []
        for _ in range(2):  # more than the one /metrics worker
            client = socket.create_connection(("127.0.0.1", server.port))
            client.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            client.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
            stuck.append(client)  # and never read
        try:
            # Without the deadline the worker would stay blocked in send() for ever.
            stats = server.http.stats
            wait_for(lambda: stats.aborted + stats.timed_out >= 2, "both stuck answers given up")
            status, body = get(server.port, "/metrics", timeout=30)
            assert status == 200 and body == huge
            assert server.http.stats.aborted >= 1
        finally:
            for client in stuck:
                client.close()


def test_a_flood_of_scrapes_is_answered_503_past_the_queue_and_probes_still_answer():
    release = threading.Event()

    def slow_metrics():
        release.wait(20)  # every /metrics worker busy until the test says so
        return b"m 1\n", "text/plain; version=0.0.4"

    limits = Limits(heavy_workers=1, max_queued=2)
    with serving(limits=limits, metrics=slow_metrics) as server:
        results: list[int] = []

        def scrape():
            results.append(get(server.port, "/metrics", timeout=30)[0])

        threads = [threading.Thread(target=scrape) for _ in range(6)]
        for thread in threads:
            thread.start()
        wait_for(lambda: server.http.stats.busy >= 4, "the scrapes past the queue refused")
        assert get(server.port, "/health-check") == (200, b"OK")  # the probe pool is not blocked
        release.set()
        for thread in threads:
            thread.join()
        assert sorted(results) == [200, 200, 503, 503, 503, 503]


def test_an_oversized_or_malformed_request_gets_an_error_and_the_server_goes_on():
    with serving(limits=Limits(max_request_bytes=1024)) as server:
        with socket.create_connection(("127.0.0.1", server.port)) as client:
            client.sendall(b"GET /metrics HTTP/1.1\r\nX-Big: " + b"a" * 4096)
            assert client.recv(100).startswith(b"HTTP/1.0 431 ")
        with socket.create_connection(("127.0.0.1", server.port)) as client:
            client.sendall(b"GET /a b HTTP/1.1\r\n\r\n")  # three words and a version
            assert client.recv(100).startswith(b"HTTP/1.0 400 ")
        with socket.create_connection(("127.0.0.1", server.port)) as client:
            client.sendall(b"POST /metrics HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello")
            assert client.recv(100).startswith(b"HTTP/1.0 501 ")
        assert get(server.port, "/health-check") == (200, b"OK")


def reset(client: socket.socket) -> None:
    """Close with an RST, as a client killed mid-request does."""
    client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    client.close()


def test_aborted_clients_leave_no_traceback_and_at_most_one_debug_line_each(capfd, caplog):
    with caplog.at_level(logging.DEBUG, "kubetide.server"), serving(BIG_BODY) as server:
        for _ in range(40):
            client = socket.create_connection(("127.0.0.1", server.port))
            client.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
            client.recv(1024)  # the answer has started
            reset(client)
        for _ in range(20):  # and some that go away before finishing their request
            client = socket.create_connection(("127.0.0.1", server.port))
            client.sendall(b"GET /metr")
            reset(client)
        wait_for(lambda: server.http.open_connections == 0, "every aborted connection closed")
        assert get(server.port, "/health-check") == (200, b"OK")
        assert server.http.stats.aborted >= 1
    out, err = capfd.readouterr()
    assert "Traceback" not in out + err
    assert not [r for r in caplog.records if r.exc_info or r.levelno >= logging.WARNING]
    assert len([r for r in caplog.records if r.name == "kubetide.server"]) <= 60


OUT_OF_DESCRIPTORS = textwrap.dedent(
    """
    import logging, os, resource, sys, time, urllib.request
    from kubetide.kube.bounded_http import Limits
    from kubetide.kube.server import HealthCheck, StatusServer

    logging.basicConfig(level=logging.WARNING)
    server = StatusServer("127.0.0.1:0", lambda: (b"m 1\\n", "text/plain"), HealthCheck(),
                          Limits(accept_pause=0.2))
    print(server.port, flush=True)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (256, hard))
    hogs = []
    try:
        while True:
            hogs.append(os.open(os.devnull, os.O_RDONLY))  # every descriptor taken
    except OSError:
        pass
    sys.stdin.readline()  # the test has connected while no descriptor was free
    for fd in hogs:
        os.close(fd)
    stats = server.http.stats
    print(stats.accept_errors, stats.accept_pauses, flush=True)
    sys.stdin.readline()
    server.close()
    """
)


def test_out_of_file_descriptors_the_server_pauses_instead_of_spinning_and_recovers(tmp_path):
    script = tmp_path / "emfile.py"
    script.write_text(OUT_OF_DESCRIPTORS)
    src = Path(__file__).resolve().parents[2] / "src"
    process = subprocess.Popen(
        [sys.executable, str(script)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={"PYTHONPATH": str(src), "PATH": "/usr/bin:/bin"},
    )
    try:
        assert process.stdout is not None and process.stdin is not None
        port = int(process.stdout.readline())
        time.sleep(0.5)  # let the child take every descriptor (a wait, not an assertion)
        waiting = socket.create_connection(("127.0.0.1", port))  # queued in the backlog
        waiting.sendall(b"GET /health-check HTTP/1.0\r\n\r\n")
        time.sleep(1.5)  # out of descriptors for a while: pauses, not a busy loop
        process.stdin.write("\n")
        process.stdin.flush()
        errors, pauses = (int(n) for n in process.stdout.readline().split())
        # A spinning accept loop fails thousands of times in 1.5 s; pausing 0.2 s each time
        # makes it about 8 (a generous bound for a loaded machine).
        assert 1 <= errors <= 40 and pauses == errors
        waiting.settimeout(20)
        assert waiting.recv(100).startswith(b"HTTP/1.0 200 ")  # served once descriptors are free
        waiting.close()
        assert get(port, "/health-check") == (200, b"OK")
        process.stdin.write("\n")
        process.stdin.flush()
        _, err = process.communicate(timeout=30)
        assert process.returncode == 0, err
        assert "Traceback" not in err
        assert err.count("cannot accept connections") == 1  # one warning, not one per failure
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
