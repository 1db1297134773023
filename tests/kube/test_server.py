"""/metrics and /health-check over real HTTP on loopback, and the liveness rules on a fake clock."""

from __future__ import annotations

import socket
import urllib.error
import urllib.request

import pytest

from kubetide.errors import UserError
from kubetide.kube.metrics import AutoscalerMetrics
from kubetide.kube.server import HealthCheck, StatusServer, parse_address


class FakeMonotonic:
    def __init__(self):
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def get(server: StatusServer, path: str) -> tuple[int, str, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{server.port}{path}", timeout=5) as response:
            return response.status, response.headers["Content-Type"], response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers["Content-Type"], exc.read().decode()


@pytest.fixture
def clock():
    return FakeMonotonic()


@pytest.fixture
def served(clock):
    metrics = AutoscalerMetrics(process_metrics=False)
    health = HealthCheck(600, 900, monotonic=clock)
    server = StatusServer("127.0.0.1:0", metrics.exposition, health)
    yield server, metrics, health
    server.close()


def test_metrics_are_served_in_the_prometheus_text_format(served):
    server, metrics, _ = served
    metrics.observe_failed_loop(0.5, "apiCallError")
    status, content_type, body = get(server, "/metrics")
    assert status == 200 and content_type.startswith("text/plain; version=0.0.4")
    assert 'cluster_autoscaler_errors_total{type="apiCallError"} 1.0' in body.splitlines()


def test_health_check_follows_the_loops_once_monitoring_starts(served, clock):
    server, _, health = served
    clock.now += 3600  # a standby replica runs no loops and is healthy however long it waits
    assert get(server, "/health-check")[::2] == (200, "OK")

    health.start_monitoring()
    clock.now += 599  # the first loop gets the whole max-inactivity
    assert get(server, "/health-check")[::2] == (200, "OK")
    clock.now += 2
    status, _, body = get(server, "/health-check")
    assert (status, body) == (500, "Error: no loop has finished in 10m1s (--max-inactivity=10m)")

    health.loop_finished(succeeded=True)
    assert get(server, "/health-check")[::2] == (200, "OK")
    clock.now += 601
    assert get(server, "/health-check")[2] == "Error: the last loop finished 10m1s ago (--max-inactivity=10m)"


def test_loops_that_keep_failing_are_unhealthy_after_max_failing_time(served, clock):
    server, _, health = served
    health.start_monitoring()
    health.loop_finished(succeeded=True)
    for _ in range(90):  # a failing loop every 10 s for 15 minutes: active, never successful
        clock.now += 10
        health.loop_finished(succeeded=False)
    assert get(server, "/health-check")[::2] == (200, "OK")
    clock.now += 10
    health.loop_finished(succeeded=False)
    status, _, body = get(server, "/health-check")
    assert (status, body) == (500, "Error: no loop has succeeded for 15m10s (--max-failing-time=15m)")
    health.loop_finished(succeeded=True)
    assert get(server, "/health-check")[0] == 200


def test_a_replica_that_stops_leading_stops_being_checked(served, clock):
    server, _, health = served
    health.start_monitoring()
    clock.now += 700
    assert get(server, "/health-check")[0] == 500
    health.stop_monitoring()
    assert get(server, "/health-check")[0] == 200


def test_other_paths_are_404(served):
    server, _, _ = served
    assert get(server, "/")[0] == 404
    assert get(server, "/metricsx")[0] == 404


@pytest.mark.parametrize(
    ("address", "expected"),
    [
        (":8085", ("", 8085)),
        ("127.0.0.1:9000", ("127.0.0.1", 9000)),
        ("[::1]:80", ("::1", 80)),
        (":0", ("", 0)),
    ],
)
def test_addresses_as_ca_writes_them(address, expected):
    assert parse_address(address) == expected


@pytest.mark.parametrize(
    ("address", "message"),
    [
        ("8085", 'expected "host:port" or ":port"'),
        (":http", "port must be a number"),
        (":70000", "port must be a number"),
        ("::1:80", "IPv6 host in brackets"),
    ],
)
def test_bad_addresses_are_one_line_user_errors(address, message):
    with pytest.raises(UserError, match=message) as info:
        parse_address(address)
    assert str(info.value).startswith(f"--address={address}: ") and "\n" not in str(info.value)


def test_a_port_in_use_is_a_user_error_naming_the_address():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        address = f"127.0.0.1:{taken.getsockname()[1]}"
        with pytest.raises(UserError) as info:
            StatusServer(address, AutoscalerMetrics(process_metrics=False).exposition, HealthCheck())
    assert str(info.value) == f"--address={address}: the port is already in use"
