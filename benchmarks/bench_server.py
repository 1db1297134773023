"""The /metrics and /health-check server (issue #26 item 4): `python -m benchmarks server
[--seconds S] [--half-open N] [--server stdlib|prometheus|bounded ...]`.

1. The registry: kubetide's own `AutoscalerMetrics` (process metrics included), fed by the real
   autoscaler in the simulator scaling a cluster up to 5 000 pods (20 Deployments of 250 x 500m
   on 8-cpu nodes, about 330 nodes, as issue #26's run) and back down, every loop observed.
   Reported: series and bytes of the exposition, and the time to render it.
2. Three servers serve that registry on 127.0.0.1 in turn: the stdlib ThreadingHTTPServer the
   project used before (a thread per connection, no timeout), prometheus_client's own
   start_http_server (/metrics only) and kubetide's BoundedHTTPServer (kube/bounded_http.py).
   Each is measured quiet (sequential GET /metrics) and under attack: N half-open connections
   (a request never finished; 256 by default, as in the issue), then 4 threads scraping
   /metrics back to back for S seconds while a prober asks /health-check every 0.1 s with the
   kubelet's default probe timeout (1 s). The clients run in a process of their own. Reported: /metrics and /health-check latency (median,
   p99, max), probes that failed, and scrapes that failed.

Latency is wall time on a shared 2-core machine: read it with the load average printed beside.
The scrapers open a connection per scrape (tens of thousands in TIME_WAIT afterwards): measure
one server per run (`--server`) when comparing how many half-open connections each let in.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import socket
import statistics
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from prometheus_client import start_http_server
from rich.console import Console
from rich.table import Table

from kubetide.autoscaler.loop import Autoscaler
from kubetide.clock import work_timer
from kubetide.kube.metrics import AutoscalerMetrics
from kubetide.kube.server import HealthCheck, StatusServer
from kubetide.sim import Simulation
from kubetide.sim.spec.scenario import parse_scenario

PODS = 5000
DEPLOYMENTS = 20
PROBE_TIMEOUT = 1.0  # the kubelet's default timeoutSeconds


def scenario():
    objects = []
    for index in range(DEPLOYMENTS):
        labels = {"app": f"web-{index}"}
        objects.append(
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {"name": f"web-{index}", "namespace": "default"},
                "spec": {
                    "replicas": PODS // DEPLOYMENTS,
                    "selector": {"matchLabels": labels},
                    "template": {
                        "metadata": {"labels": labels},
                        "spec": {
                            "containers": [
                                {"name": "c", "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}}
                            ]
                        },
                    },
                },
            }
        )
    events = [
        {
            "at": "20m",
            "scale": {"kind": "Deployment", "namespace": "default", "name": f"web-{i}", "replicas": 50},
        }
        for i in range(DEPLOYMENTS)
    ]
    group = {
        "name": "general",
        "minSize": 1,
        "maxSize": 600,
        "initialSize": 1,
        "price": 0.4,
        "provisioningDelay": "60s",
        "template": {"status": {"allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"}}},
    }
    data = {
        "apiVersion": "kubetide.io/v1alpha1",
        "kind": "Scenario",
        "metadata": {"name": "metrics-5000"},
        "spec": {"duration": "50m", "seed": 1, "nodeGroups": [group], "objects": objects, "events": events},
    }
    return parse_scenario(data, "metrics-5000.yaml", Path("."))


def filled_metrics() -> tuple[AutoscalerMetrics, int, int]:
    """The metrics of a simulated 5 000-pod run; also the peak node and pod counts."""
    metrics = AutoscalerMetrics()
    peak = {"nodes": 0, "pods": 0}

    def factory(options, clock, view, actions, cloud):
        autoscaler = Autoscaler(options, clock, view, actions, cloud, seed=1, timer=work_timer())

        class Loop:
            def run_once(self):
                started = time.perf_counter()
                result = autoscaler.run_once()
                metrics.observe_loop(result, time.perf_counter() - started, autoscaler)
                snapshot = view.snapshot()
                peak["nodes"] = max(peak["nodes"], sum(1 for _ in snapshot.nodes()))
                peak["pods"] = max(peak["pods"], snapshot.pod_count())

        return Loop()

    Simulation(scenario(), autoscaler_factory=factory).run()
    return metrics, peak["nodes"], peak["pods"]


# -- the servers -----------------------------------------------------------------------------


def stdlib_server(metrics: AutoscalerMetrics, health: HealthCheck):
    """What kube/server.py was before: ThreadingHTTPServer, a thread per connection."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            if self.path == "/metrics":
                body, content_type = metrics.exposition()
            else:
                body, content_type = (b"OK" if health.check() is None else b"Error"), "text/plain"
            self.send_response(200)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server.server_address[1], lambda: (server.shutdown(), server.server_close())


def prometheus_server(metrics: AutoscalerMetrics, health: HealthCheck):
    server, _thread = start_http_server(0, addr="127.0.0.1", registry=metrics.registry)
    return server.server_address[1], lambda: (server.shutdown(), server.server_close())


def bounded_server(metrics: AutoscalerMetrics, health: HealthCheck):
    server = StatusServer("127.0.0.1:0", metrics.exposition, health)
    return server.port, server.close


SERVERS: dict[str, tuple[str, Callable]] = {
    "stdlib": ("stdlib ThreadingHTTPServer (before)", stdlib_server),
    "prometheus": ("prometheus_client start_http_server", prometheus_server),
    "bounded": ("kubetide BoundedHTTPServer (now)", bounded_server),
}


# -- measuring -------------------------------------------------------------------------------


def timed_get(port: int, path: str, timeout: float) -> float | None:
    """Seconds to a complete answer, None when it failed or took longer than `timeout`."""
    started = time.perf_counter()
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=timeout) as response:
            response.read()
    except (OSError, urllib.error.URLError):
        return None
    elapsed = time.perf_counter() - started
    return elapsed if elapsed <= timeout else None


@contextmanager
def half_open(port: int, count: int, budget: float = 30.0):
    """Up to `count` half-open connections, opened within `budget` seconds."""
    clients = []
    deadline = time.monotonic() + budget
    try:
        while len(clients) < count and time.monotonic() < deadline:
            try:
                client = socket.create_connection(("127.0.0.1", port), timeout=3)
                client.sendall(b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n")
                clients.append(client)
            except OSError:  # the server's backlog is full: try again while the budget lasts
                time.sleep(0.01)
        yield len(clients)
    finally:
        for client in clients:
            client.close()


def summary(latencies: list[float | None]) -> str:
    done = sorted(x for x in latencies if x is not None)
    failed = len(latencies) - len(done)
    if not done:
        return f"all {failed} failed"
    p99 = done[min(len(done) - 1, int(len(done) * 0.99))]
    text = f"{statistics.median(done) * 1000:.1f} / {p99 * 1000:.1f} / {done[-1] * 1000:.1f} ms"
    return text + (f", {failed} of {len(latencies)} failed" if failed else "")


def quietly(port: int) -> str:
    return summary([timed_get(port, "/metrics", 10.0) for _ in range(200)])


def under_attack(port: int, half: int, seconds: float, probe: bool) -> tuple[str, str, int]:
    scrapes: list[float | None] = []
    probes: list[float | None] = []
    stop = threading.Event()

    def scraper():
        while not stop.is_set():
            scrapes.append(timed_get(port, "/metrics", 10.0))

    with half_open(port, half) as opened:
        threads = [threading.Thread(target=scraper, daemon=True) for _ in range(4)]
        for thread in threads:
            thread.start()
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if probe:
                probes.append(timed_get(port, "/health-check", PROBE_TIMEOUT))
            time.sleep(0.1)
        stop.set()
        for thread in threads:
            thread.join(15)
    return summary(scrapes), summary(probes) if probe else "(no /health-check)", opened


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=10.0, help="attack duration per server")
    parser.add_argument("--half-open", type=int, default=256)
    parser.add_argument(
        "--server",
        choices=sorted(SERVERS),
        action="append",
        help="measure only these (repeatable; default all, one after the other)",
    )
    args = parser.parse_args()
    console = Console(width=170)

    started = time.perf_counter()
    metrics, nodes, pods = filled_metrics()
    console.print(f"simulated run: peak {nodes} nodes / {pods} pods in {time.perf_counter() - started:.1f} s")
    body, _ = metrics.exposition()
    series = sum(1 for line in body.splitlines() if line and not line.startswith(b"#"))
    renders = []
    for _ in range(50):
        t0 = time.perf_counter()
        metrics.exposition()
        renders.append(time.perf_counter() - t0)
    console.print(
        f"registry: {series} series, {len(body)} bytes; render median {statistics.median(renders) * 1000:.2f} ms, "
        f"max {max(renders) * 1000:.2f} ms"
    )

    health = HealthCheck()
    table = Table(title=f"median / p99 / max; {args.half_open} half-open + 4 scrapers for {args.seconds:g} s")
    for column in (
        "server",
        "quiet /metrics (200)",
        "attack: /metrics",
        "attack: /health-check (1 s)",
        "held open",
    ):
        table.add_column(column)
    for key in args.server or SERVERS:
        name, start = SERVERS[key]
        console.print(f"{name}: measuring", style="dim")
        port, stop = start(metrics, health)
        try:
            # The clients run in a process of their own: in this one they would compete with the
            # server for the GIL and count their own slowness as the server's.
            # By module path: run as __main__ (python -m), the functions would not pickle.
            from benchmarks import bench_server as clients_module

            with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as clients:
                quiet = clients.submit(clients_module.quietly, port).result()
                probe = key != "prometheus"
                attacked, probed, opened = clients.submit(
                    clients_module.under_attack, port, args.half_open, args.seconds, probe
                ).result()
        finally:
            stop()
        table.add_row(name, quiet, attacked, probed, str(opened))
    console.print(table)
    console.print(f"load average at the end: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
