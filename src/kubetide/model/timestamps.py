"""The newest time a set of loaded objects records.

A cluster dump carries no "taken at" time. The newest timestamp in it (creation, start, condition
and taint times, metrics samples) is the best lower bound: the offline commands decide as of that
moment (cli/now.py), and the simulator starts the clock of a scenario whose objects come from a
dump at that moment, so every pod and node keeps its age.
"""

from __future__ import annotations

from datetime import UTC, datetime

from kubetide.model.loader import Manifests

# The last second RFC 3339 (and the API server) can write: a clock past it has no text.
LATEST_TIME = datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC).timestamp()


def newest_timestamp(manifests: Manifests) -> float | None:
    """The latest time any loaded object records (deletion times excluded: they lie ahead)."""
    times: list[float | None] = []
    for node in manifests.nodes:
        times += [node.meta.creation_timestamp, node.ready_transition]
        times += [t.time_added for t in node.taints]
    for pod in manifests.pods:
        times += [
            pod.meta.creation_timestamp,
            pod.start_time,
            pod.scheduled_transition,
            pod.ready_transition,
        ]
    rows = manifests.pod_rows
    if rows is not None:
        for column in (rows.created, rows.start_times, rows.scheduled_transitions, rows.ready_transitions):
            times += column
    metas = [o.meta for o in manifests.workloads] + [o.meta for o in manifests.pdbs]
    metas += [o.meta for o in manifests.configmaps]
    times += [meta.creation_timestamp for meta in metas]
    # metrics-server's samples (kubetide qos): the moment the usage was measured.
    times += [m.timestamp for kind in ("PodMetrics", "NodeMetrics") for m in manifests.other.get(kind, [])]
    known = [t for t in times if t is not None]
    return max(known) if known else None
