"""`kubetide run`'s loop on a recorded feed of 5,000 nodes and 150,000 pods (issue 30):
`python -m benchmarks.bench_run_feed [--pods-fraction 1.0] [--cache DIR]`.

The cluster is `benchmarks.dumps.large_items()` (bench_scheduling's heterogeneous cluster, 5,000
nodes in zonal groups, 150,000 pods of 500 ReplicaSets with full metadata as the API server sends
it: managedFields, ownerReferences, conditions, containerStatuses; a PDB for every tenth). It is
recorded once, in a child process, as the API server's answers: LIST pages of 500 items, and watch
events. The measured process then runs the real client decoding (KubeClient.list_pages / watch,
json.loads per page and per event line), the real informers, KubeClusterView and the Autoscaler
with the default options, through a KubeClient whose transport answers from the recording instead
of a socket. Writes go to an actions port that records nothing (the status, taints and events are
not sent anywhere), and the clock is a manual one, 10 s a loop.

Measured:
1. cache fill: from the informers' start to every first list applied (wall, process CPU);
2. steady loops: each with 100 pod updates on the watch (status heartbeats): `view.sync()` plus
   `run_once()`, wall and the loop thread's CPU, median and max of 20 (target < 200 ms);
3. a 30% load drop: DELETED events for 3 pods of every 10 (45,000), then the loops that plan the
   scale-down: the first after the drop and the next 5 (target < 2 s each);
4. peak RSS of the measured process (target < 1.5 GB).
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

PAGE = 500
STEADY_LOOPS = 20
CHURN_PER_LOOP = 100
DROP_EVERY = (3, 10)  # 3 pods of every 10 go
AFTER_DROP_LOOPS = 6
LOOP_SECONDS = 10.0


# -- recording (a child process, so its memory is not the measured one's) ----------------------------


def record(directory: Path, pods_fraction: float) -> None:
    """Write <plural>.pages (one LIST page per line), drop.events and churn.events (watch lines)."""
    from benchmarks.dumps import large_items

    directory.mkdir(parents=True, exist_ok=True)
    plurals = {
        "Node": "nodes",
        "Pod": "pods",
        "ReplicaSet": "replicasets",
        "PodDisruptionBudget": "poddisruptionbudgets",
    }
    pages: dict[str, list[dict]] = {p: [] for p in plurals.values()}
    files = {p: (directory / f"{p}.pages").open("w") for p in plurals.values()}
    drop = (directory / "drop.events").open("w")
    churn = (directory / "churn.events").open("w")
    version = 1000
    pod_index = kept = 0
    keep_every = max(1, round(1 / pods_fraction))

    def flush(plural: str, last: bool) -> None:
        items = pages[plural]
        token = "" if last else f"{plural}-{version}"
        page = {
            "kind": "List",
            "apiVersion": "v1",
            "metadata": {"resourceVersion": str(version), "continue": token},
            "items": items,
        }
        files[plural].write(json.dumps(page, separators=(",", ":")) + "\n")
        pages[plural] = []

    for item in large_items():
        plural = plurals[item["kind"]]
        if plural == "pods":
            pod_index += 1
            if pod_index % keep_every:
                continue
            kept += 1
            if kept % DROP_EVERY[1] < DROP_EVERY[0]:
                drop.write(json.dumps({"type": "DELETED", "object": item}, separators=(",", ":")) + "\n")
            elif kept % 97 == 0:
                bumped = json.loads(json.dumps(item))
                bumped["metadata"]["resourceVersion"] = str(
                    int(bumped["metadata"].get("resourceVersion") or 0) + 1
                )
                churn.write(json.dumps({"type": "MODIFIED", "object": bumped}, separators=(",", ":")) + "\n")
        pages[plural].append(item)
        if len(pages[plural]) == PAGE:
            flush(plural, last=False)
    for plural in plurals.values():
        flush(plural, last=True)
        files[plural].close()
    drop.close()
    churn.close()
    (directory / "done").write_text(str(pods_fraction))


# -- the recorded transport ---------------------------------------------------------------------------


class _Answer:
    """What KubeClient reads of a urllib3 response: status, data, or a stream of watch lines."""

    def __init__(self, data: bytes = b"", lines: queue.Queue[bytes | None] | None = None):
        self.status, self.data, self._lines = 200, data, lines

    def stream(self, _size: int, decode_content: bool = True) -> Iterator[bytes]:
        assert self._lines is not None
        while (line := self._lines.get()) is not None:
            yield line

    def read(self) -> bytes:
        return self.data

    def release_conn(self) -> None:
        pass

    def shutdown(self) -> None:
        if self._lines is not None:
            self._lines.put(None)

    close = shutdown


def recorded_client(directory: Path) -> Any:
    """A KubeClient whose transport answers from the recording: LIST pages in order, an empty list
    for resources not recorded, and per resource a watch stream the benchmark feeds."""
    from kubetide.kube.client import KubeClient, RateLimiter

    class RecordedKubeClient(KubeClient):
        def __init__(self) -> None:  # no API connection: the transport below answers
            self.server, self.source, self.requests = "https://recorded.invalid", "recording", 0
            self.limiter = RateLimiter(qps=1e9, burst=10**9)
            self.streams: dict[str, queue.Queue[bytes | None]] = {}
            self._pages: dict[str, Iterator[bytes]] = {}

        def _send(self, method, path, query, body, content_type, timeout, stream):
            self.requests += 1
            plural = path.rstrip("/").rsplit("/", 1)[-1]
            if stream:
                return _Answer(lines=self.streams.setdefault(plural, queue.Queue()))
            if method != "GET":
                return _Answer(b"{}")
            if plural not in self._pages:
                file = directory / f"{plural}.pages"
                self._pages[plural] = (
                    iter(file.open("rb"))
                    if file.exists()
                    else iter([b'{"items":[],"metadata":{"resourceVersion":"1"}}'])
                )
            return _Answer(next(self._pages[plural]))

        def feed(self, plural: str, lines: list[bytes]) -> None:
            stream = self.streams.setdefault(plural, queue.Queue())
            for line in lines:
                stream.put(line)

    return RecordedKubeClient()


class NullActions:
    """The actions port, writing nothing: the benchmark measures deciding, not the API's writes."""

    def add_taint(self, node_name, taint) -> None: ...
    def remove_taint(self, node_name, key) -> None: ...
    def evict(self, pod, grace_period_seconds):
        from kubetide.autoscaler.ports import EvictionOutcome

        return EvictionOutcome.EVICTED

    def delete_node_object(self, node_name) -> None: ...
    def write_status(self, status) -> None: ...
    def emit_event(self, event) -> None: ...
    def restart_deployment(self, namespace, name, at) -> None: ...


# -- measuring ----------------------------------------------------------------------------------------


def _wait_queued(view: Any, count: int) -> None:
    """Until the informer threads have parsed `count` changes (they do between loops in `run`)."""
    while view.informers.queue.qsize() < count:
        time.sleep(0.005)


def measure(directory: Path) -> dict:
    from kubetide.autoscaler.loop import Autoscaler
    from kubetide.autoscaler.options import AutoscalerOptions
    from kubetide.clock import ManualClock
    from kubetide.cloud.static import StaticCloud
    from kubetide.kube.view import KubeClusterView

    client = recorded_client(directory)
    wall, cpu = time.perf_counter(), time.process_time()
    view = KubeClusterView(client)
    view.start()
    missing = view.wait_for_sync(1800)
    assert not missing, missing
    view.sync()
    fill = {"wall_s": time.perf_counter() - wall, "cpu_s": time.process_time() - cpu}
    snapshot = view.snapshot()
    fill.update(nodes=len(snapshot), pods=view.pod_count())
    clock = ManualClock(time.time())
    cloud = StaticCloud.from_nodes(list(snapshot.nodes()))
    autoscaler = Autoscaler(AutoscalerOptions(), clock, view, NullActions(), cloud, timer=time.perf_counter)

    results = []

    def loop() -> tuple[float, float]:
        clock.advance(LOOP_SECONDS)
        wall, cpu = time.perf_counter(), time.thread_time()
        view.sync()
        results.append(autoscaler.run_once())
        return time.perf_counter() - wall, time.thread_time() - cpu

    first = loop()
    churn = (directory / "churn.events").read_bytes().splitlines(keepends=True)
    steady = []
    for i in range(STEADY_LOOPS):
        lines = churn[(i * CHURN_PER_LOOP) % len(churn) :][:CHURN_PER_LOOP]
        client.feed("pods", lines)
        _wait_queued(view, len(lines))
        steady.append(loop())
    drop = (directory / "drop.events").read_bytes().splitlines(keepends=True)
    parse_wall, parse_cpu = time.perf_counter(), time.process_time()
    client.feed("pods", drop)
    _wait_queued(view, len(drop))
    parsed = {"wall_s": time.perf_counter() - parse_wall, "cpu_s": time.process_time() - parse_cpu}
    after = [loop() for _ in range(AFTER_DROP_LOOPS)]
    plan = results[-1].scale_down
    view.stop()
    autoscaler.close()
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return {
        "cache_fill": fill,
        "first_loop": {"wall_s": first[0], "cpu_s": first[1]},
        "steady": _summary(steady),
        "drop_events": len(drop),
        "drop_parse": parsed,
        "after_drop": [{"wall_s": w, "cpu_s": c} for w, c in after],
        "candidates_after_drop": None if plan is None else len(plan.candidate_set),
        "peak_rss_mb": usage.ru_maxrss / 1024,
    }


def _summary(samples: list[tuple[float, float]]) -> dict:
    walls, cpus = [w for w, _ in samples], [c for _, c in samples]
    return {
        "wall_median_s": statistics.median(walls),
        "wall_max_s": max(walls),
        "cpu_median_s": statistics.median(cpus),
        "cpu_max_s": max(cpus),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.bench_run_feed", description=__doc__.splitlines()[0]
    )
    parser.add_argument(
        "--pods-fraction", type=float, default=1.0, help="keep this fraction of the pods (quick runs)"
    )
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "kubetide-run-feed")
    parser.add_argument("--record-only", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--measure-only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    directory = args.cache / f"fraction-{args.pods_fraction:g}"
    if args.record_only:
        record(directory, args.pods_fraction)
        return 0
    if args.measure_only:
        print(json.dumps(measure(directory), indent=2))
        return 0
    if not (directory / "done").exists():
        started = time.perf_counter()
        subprocess.run(
            [
                sys.executable,
                "-m",
                "benchmarks.bench_run_feed",
                "--record-only",
                "--pods-fraction",
                str(args.pods_fraction),
                "--cache",
                str(args.cache),
            ],
            check=True,
        )
        print(f"recorded in {time.perf_counter() - started:.0f} s: {directory}", file=sys.stderr)
    # Measured in a fresh process: its peak RSS is kubetide's alone.
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "benchmarks.bench_run_feed",
            "--measure-only",
            "--pods-fraction",
            str(args.pods_fraction),
            "--cache",
            str(args.cache),
        ],
        check=True,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONHASHSEED": "0"},
    )
    result = json.loads(out.stdout)
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
