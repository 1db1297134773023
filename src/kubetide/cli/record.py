"""`kubetide record`: watch a live cluster (read-only) for a while and keep what drives an
autoscaler, to replay it in the simulator under any policy (`scenario from-cluster --trace DIR`).

What is kept, and what is not, is in kube/record.py; the replay in sim/spec/recording.py.
"""

from __future__ import annotations

import signal
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from kubetide.errors import UserError

DEFAULT_INTERVAL = "15s"


def _permissions():
    from kubetide.kube.permissions import WATCH, Permission

    why = "record what changes"
    return tuple(
        Permission(WATCH, resource, group, why=why)
        for resource, group in (
            ("deployments", "apps"),
            ("replicasets", "apps"),
            ("statefulsets", "apps"),
            ("replicationcontrollers", ""),
            ("pods", ""),
            ("nodes", ""),
        )
    )


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "record",
        help="watch a live cluster (read-only) and record its load, to replay in the simulator",
        description="Watch a live cluster (read-only) for a while and record what drives an "
        "autoscaler: each workload's replicas (HPA decisions included), its pods' usage (PodMetrics, "
        "where metrics-server runs), how long Job pods run, node group sizes. "
        "`kubetide scenario from-cluster --trace DIR` replays it.",
    )
    parser.add_argument(
        "--kubeconfig", metavar="PATH", help="the cluster (default: in-cluster service account)"
    )
    parser.add_argument("--context", metavar="NAME", help="with --kubeconfig: the context to use")
    parser.add_argument(
        "--for", dest="length", metavar="DURATION", required=True, help="how long to record (e.g. 1h)"
    )
    parser.add_argument("--out", metavar="DIR", required=True, help="a new directory for the recording")
    parser.add_argument(
        "--node-groups",
        metavar="GROUPS.yaml",
        help="node groups and their bounds (default: from node labels)",
    )
    parser.add_argument(
        "--interval",
        default=DEFAULT_INTERVAL,
        metavar="DURATION",
        help=f"how often changes are taken and PodMetrics read (default {DEFAULT_INTERVAL})",
    )
    parser.set_defaults(run=run)


def run(args) -> int:
    from kubetide.cli.inputs import read_node_groups
    from kubetide.cli.scenario import _read_live_cluster, export_scenario
    from kubetide.cli.simulate import duration_flag
    from kubetide.durations import format_duration, rfc3339
    from kubetide.kube.client import connect
    from kubetide.kube.permissions import check_permissions
    from kubetide.kube.record import Recorder, Recording, write_recording

    length = duration_flag(args.length)
    interval = _interval(args.interval)
    out = Path(args.out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise UserError(f"--out {out}: exists and is not an empty directory (the recording needs a new one)")
    if not out.parent.is_dir():
        raise UserError(f"--out {out}: no directory {out.parent}")
    definitions = read_node_groups(args.node_groups) if args.node_groups else None
    client = connect(args.kubeconfig, args.context)
    try:
        # Before the minutes a large cluster's export takes: a watch refused later would only
        # show as informers that never sync.
        check_permissions(client, _permissions(), "")
    finally:
        client.close()
    documents, source = _read_live_cluster(args.kubeconfig, args.context)
    start_scenario, warnings = export_scenario(
        documents, source, definitions, name="recorded", duration=length
    )
    for warning in warnings:
        print(f"warning: {warning}", file=sys.stderr)
    client = connect(args.kubeconfig, args.context)
    recording = Recording(source=source, started=rfc3339(time.time()), interval=interval)
    recorder = Recorder(client, recording, node_group_sizes(definitions))
    stopped = threading.Event()
    previous = signal.signal(signal.SIGTERM, lambda *_: stopped.set())
    try:
        recorder.start()
        print(
            f"recording {source} for {format_duration(length)} into {out} (Ctrl-C ends it early)", flush=True
        )
        deadline = time.monotonic() + length
        try:
            while not stopped.is_set() and time.monotonic() < deadline:
                stopped.wait(min(interval, max(0.0, deadline - time.monotonic())))
                recorder.step()
        except KeyboardInterrupt:
            pass  # the recording so far is kept
        recorder.stop()
    finally:
        signal.signal(signal.SIGTERM, previous)
        client.close()
    out.mkdir(exist_ok=True)
    write_recording(recording, out, start_scenario)
    _summary(recording, out)
    return 0


def _interval(text: str) -> float:
    from kubetide.durations import parse_duration
    from kubetide.errors import ManifestError

    try:
        seconds = parse_duration(text)
    except (ManifestError, ValueError) as exc:
        raise UserError(f"--interval: {getattr(exc, 'message', exc)}") from None
    if not 1 <= seconds <= 3600:
        raise UserError(f"--interval: {text} is outside 1s..1h")
    return seconds


def _summary(recording, out: Path) -> None:
    from kubetide.durations import format_duration

    changed = recording.changed_workloads()
    changes = sum(len(recording.replicas[key]) - 1 for key in changed)
    usage = len({w for _, w, _, _ in recording.usage})
    lines = [
        f"recorded {recording.source} for {format_duration(recording.seconds)} into {out}:",
        f"  replicas: {len(changed)} workloads changed ({changes} changes)",
        f"  usage: {usage} workloads ({len(recording.usage)} samples)"
        if recording.usage
        else "  usage: none",
        f"  Job pods finished: {len(recording.job_runs)}",
        f"  node group size changes: {len(recording.node_groups)}",
        *(f"  note: {note}" for note in recording.notes),
        f"next: kubetide scenario from-cluster --trace {out} --out {out / 'replay.yaml'}",
    ]
    print("\n".join(lines))


def node_group_sizes(definitions) -> Callable[[Sequence[Any]], dict[str, int]]:
    """nodes -> each node group's size, grouped as `scenario from-cluster` groups them."""
    from kubetide.cloud.static import StaticCloud

    def sizes(nodes: Sequence[Any]) -> dict[str, int]:
        if not nodes:
            return {}
        try:
            cloud = StaticCloud.from_nodes(nodes, definitions)
        except UserError:  # GROUPS.yaml names a group no node of now fills: no sizes this step
            return {}
        return {g.id: len(g.nodes) for g in cloud.groups.values()}

    return sizes
