"""The times a set of loaded objects records: the newest one, and all of them moved together.

A cluster dump carries no "taken at" time. The newest timestamp in it (creation, start, condition
and taint times, metrics samples) is the best lower bound: `kubetide plan` reads the dump as of that moment, and the
simulator starts a scenario whose objects come from a dump at that moment (`shift_times`), so
every pod and node keeps its age.
"""

from __future__ import annotations

import dataclasses

from kubetide.model.loader import Manifests
from kubetide.model.meta import ObjectMeta
from kubetide.model.node import Node
from kubetide.model.pod import Pod


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
    metas = [o.meta for o in manifests.workloads] + [o.meta for o in manifests.pdbs]
    metas += [o.meta for o in manifests.configmaps]
    times += [meta.creation_timestamp for meta in metas]
    # metrics-server's samples (kubetide qos): the moment the usage was measured.
    times += [m.timestamp for kind in ("PodMetrics", "NodeMetrics") for m in manifests.other.get(kind, [])]
    known = [t for t in times if t is not None]
    return max(known) if known else None


def shift_times(manifests: Manifests, offset: float) -> None:
    """Move every timestamp the objects carry by `offset` seconds (in place; absent ones stay)."""
    manifests.nodes = [_node(n, offset) for n in manifests.nodes]
    manifests.pods = [_pod(p, offset) for p in manifests.pods]
    manifests.workloads = [dataclasses.replace(w, meta=_meta(w.meta, offset)) for w in manifests.workloads]
    manifests.pdbs = [dataclasses.replace(p, meta=_meta(p.meta, offset)) for p in manifests.pdbs]
    manifests.configmaps = [dataclasses.replace(c, meta=_meta(c.meta, offset)) for c in manifests.configmaps]


def _add(time: float | None, offset: float) -> float | None:
    return None if time is None else time + offset


def _meta(meta: ObjectMeta, offset: float) -> ObjectMeta:
    return dataclasses.replace(
        meta,
        creation_timestamp=_add(meta.creation_timestamp, offset),
        deletion_timestamp=_add(meta.deletion_timestamp, offset),
    )


def _node(node: Node, offset: float) -> Node:
    return dataclasses.replace(
        node,
        meta=_meta(node.meta, offset),
        ready_transition=_add(node.ready_transition, offset),
        taints=tuple(dataclasses.replace(t, time_added=_add(t.time_added, offset)) for t in node.taints),
    )


def _pod(pod: Pod, offset: float) -> Pod:
    return dataclasses.replace(
        pod,
        meta=_meta(pod.meta, offset),
        start_time=_add(pod.start_time, offset),
        scheduled_transition=_add(pod.scheduled_transition, offset),
        ready_transition=_add(pod.ready_transition, offset),
    )
