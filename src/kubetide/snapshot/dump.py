"""A snapshot from a cluster dump: the offline commands (`schedule`, `plan`) start here."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from kubetide.model import Node, Pod
from kubetide.snapshot.snapshot import ClusterSnapshot


def snapshot_from_dump(
    nodes: Iterable[Node], pods: Iterable[Pod], source: str
) -> tuple[ClusterSnapshot, list[Pod], list[str]]:
    """Bind the dump's bound pods into a new snapshot; return it, the pending pods and warnings.

    Finished pods hold no resources and are left out, as kube-scheduler leaves them out. A pod
    bound to a node missing from the dump, or repeating another pod's UID, is ignored with a
    warning rather than failing the whole dump: partial dumps are common.
    """
    snapshot = ClusterSnapshot(nodes)
    pending: list[Pod] = []
    missing: Counter[str] = Counter()
    duplicates: list[str] = []
    seen: set[str] = set()
    for pod in pods:
        if pod.is_terminal:
            continue
        if pod.uid in seen:
            duplicates.append(pod.key)
            continue
        seen.add(pod.uid)
        if not pod.node_name:
            pending.append(pod)
        elif pod.node_name not in snapshot:
            missing[pod.node_name] += 1
        else:
            snapshot.add_pod(pod, pod.node_name)
    warnings = [
        f"{source}: {n} bound pod{'s' if n > 1 else ''} on node {name}, which is not in the dump: ignored"
        for name, n in sorted(missing.items())
    ]
    warnings += [f"{source}: pod {key} repeats another pod's UID: ignored" for key in duplicates]
    return snapshot, pending, warnings
