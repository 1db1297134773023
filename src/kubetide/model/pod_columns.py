"""Pods as columns: one list per field, a row per pod, a Pod built only for a row asked for.

`kubetide downscale` reads a few fields of each of 100,000 pods (names, node, phase, readiness,
times, owner, deletion cost); building a Pod for each (its ObjectMeta, label and annotation dicts,
29 slots) cost more than ranking them (BENCHMARKS.md, "Pod columns from the wire schema"). The
loader (model/loader.py, `Manifests(pod_rows=PodColumns())`) writes a streamed pod's row from the
parts `checked_pod` found of its wire (model/wire.py) once it has made every check `typed_pod`
makes; `pod(row)` builds that pod's Pod from the row (model/pod_typed.py `pod_of`, as typed_pod
does) when a caller needs one. The wire itself is not kept: 100,000 of them held 250 MB more than
the rows, and the system time of their page faults cost more than the Pods saved. A pod the Reader
reads (YAML, or a form the wire schema does not take) is added as the Pod it is, its row read from
it (`add_pod`, `of_pods`): every row says the same whichever way its pod came.

The label and annotation dicts of a wire row are the decoder's own (nothing changes them; `pod`
copies them as typed_meta does); `priorities` holds the resolved priority
(loader.resolve_priorities), which `pod(row)` gives the Pod it builds.
"""

from __future__ import annotations

import dataclasses
import operator
from collections.abc import Callable, Iterable, Sequence
from typing import Any, cast

from kubetide.model.meta import ObjectMeta, OwnerReference
from kubetide.model.pod import Pod
from kubetide.model.pod_typed import CheckedPod, SpecParts, pod_of
from kubetide.model.wire import PodWire

_EMPTY: dict[str, str] = {}


def _controller(owners: tuple[OwnerReference, ...]) -> OwnerReference | None:
    """ObjectMeta.controller of these owner references."""
    for ref in owners:
        if ref.controller:
            return ref
    return None


class PodColumns:
    """The loaded pods' fields the decision code reads without Pods, one list each, in load order."""

    __slots__ = (
        "_built",
        "_specs",
        "annotations",
        "controllers",
        "created",
        "deleted",
        "explicit_priorities",
        "labels",
        "names",
        "namespaces",
        "nodes",
        "nominated_nodes",
        "owners",
        "phases",
        "priorities",
        "priority_class_names",
        "ready",
        "ready_transitions",
        "restarts",
        "scheduled_reasons",
        "scheduled_statuses",
        "scheduled_transitions",
        "sidecar_restarts",
        "start_times",
        "uids",
    )

    def __init__(self) -> None:
        self.names: list[str] = []
        self.namespaces: list[str] = []
        self.uids: list[str] = []
        self.labels: list[dict[str, str]] = []
        self.annotations: list[dict[str, str]] = []
        self.owners: list[tuple[OwnerReference, ...]] = []
        self.controllers: list[OwnerReference | None] = []
        self.created: list[float | None] = []
        self.deleted: list[float | None] = []
        self.nodes: list[str] = []
        self.phases: list[str] = []
        self.ready: list[bool] = []
        self.ready_transitions: list[float | None] = []
        self.scheduled_statuses: list[str] = []
        self.scheduled_reasons: list[str] = []
        self.scheduled_transitions: list[float | None] = []
        self.start_times: list[float | None] = []
        self.restarts: list[int] = []
        self.sidecar_restarts: list[int] = []
        self.nominated_nodes: list[str] = []
        self.priorities: list[int] = []
        self.explicit_priorities: list[bool] = []
        self.priority_class_names: list[str] = []
        # The row's spec parts, for pod(row) (None for a row added as a Pod), and its Pod once
        # built or given.
        self._specs: list[SpecParts | None] = []
        self._built: list[Pod | None] = []  # (of_pods: the Pods, all of them)

    def __len__(self) -> int:
        return len(self._built)

    def add_checked(self, wire: PodWire, checked: CheckedPod) -> None:
        """The row of a pod `checked_pod` took (its Pod is built from the row when asked for)."""
        name, namespace, uid, owners, created, deleted = checked.meta
        metadata, spec = wire.metadata, checked.spec
        node, priority, class_name = spec[1], spec[6], spec[7]  # SpecParts' node, priority, class
        (
            phase,
            ready,
            ready_transition,
            scheduled_status,
            scheduled_reason,
            scheduled_transition,
            start_time,
            restarts,
            sidecar,
            nominated,
        ) = checked.status
        self.names.append(name)
        self.namespaces.append(namespace)
        self.uids.append(uid)
        self.labels.append(metadata.labels or _EMPTY)
        self.annotations.append(metadata.annotations or _EMPTY)
        self.owners.append(owners)
        self.controllers.append(_controller(owners) if owners else None)
        self.created.append(created)
        self.deleted.append(deleted)
        self.nodes.append(node)
        self.phases.append(phase)
        self.ready.append(ready)
        self.ready_transitions.append(ready_transition)
        self.scheduled_statuses.append(scheduled_status)
        self.scheduled_reasons.append(scheduled_reason)
        self.scheduled_transitions.append(scheduled_transition)
        self.start_times.append(start_time)
        self.restarts.append(restarts)
        self.sidecar_restarts.append(sidecar)
        self.nominated_nodes.append(nominated)
        self.priorities.append(priority or 0)
        self.explicit_priorities.append(priority is not None)
        self.priority_class_names.append(class_name)
        self._specs.append(spec)
        self._built.append(None)

    def add_pod(self, pod: Pod) -> None:
        """The row of a Pod already built (by the Reader)."""
        for column, read in _READERS.items():
            getattr(self, column).append(read(pod))
        self._specs.append(None)
        self._built.append(pod)

    def extend(self, other: PodColumns) -> None:
        for name in (*_READERS, "_specs", "_built"):  # the rows' Pods last: a column of Pods
            getattr(self, name).extend(getattr(other, name))  # not yet read reads them

    @classmethod
    def of_pods(cls, pods: Iterable[Pod]) -> PodColumns:
        """The rows of Pods; pod(row) is the Pod. Each column is read from the Pods when it is
        first read (map and attrgetter, in C): the ranking of a simulated ReplicaSet reads ten
        of them, and reading all of them cost it as much again."""
        columns = cls.__new__(cls)
        columns._built = list(pods)
        columns._specs = [None] * len(columns._built)
        return columns

    def __getattr__(self, name: str) -> Any:
        """A column of a table of Pods (`of_pods`) not read yet: read from the Pods, and kept.
        (Called only for a slot not set: a column once set is a plain slot read.)"""
        read = _READERS.get(name)
        if read is None:
            raise AttributeError(name)
        values = list(map(read, cast(list[Pod], self._built)))  # of_pods: Pods, none of them None
        setattr(self, name, values)
        return values

    def pod(self, row: int) -> Pod:
        """The row's Pod, built on the first call (the one Pod every later call returns), with
        its resolved priority."""
        pod = self._built[row]
        if pod is None:
            pod = self._built[row] = self._assembled(row)
        priority = self.priorities[row]
        if pod.priority != priority:  # the priority its PriorityClass resolved to (the shape keeps)
            pod = self._built[row] = dataclasses.replace(pod, priority=priority, parsed_shape=pod.shape)
        return pod

    def _assembled(self, row: int) -> Pod:
        """What typed_pod builds of the wire the row was written from."""
        spec = self._specs[row]
        assert spec is not None, "a row added as a Pod keeps its Pod"
        labels, annotations = self.labels[row], self.annotations[row]
        meta = ObjectMeta(
            self.names[row],
            self.namespaces[row],
            self.uids[row],
            dict(labels),
            dict(annotations),
            self.owners[row],
            self.created[row],
            self.deleted[row],
        )
        status = (
            self.phases[row],
            self.ready[row],
            self.ready_transitions[row],
            self.scheduled_statuses[row],
            self.scheduled_reasons[row],
            self.scheduled_transitions[row],
            self.start_times[row],
            self.restarts[row],
            self.sidecar_restarts[row],
            self.nominated_nodes[row],
        )
        return pod_of(meta, spec, status)

    def pods(self, rows: Sequence[int]) -> list[Pod]:
        return list(map(self.pod, rows))

    def key(self, row: int) -> str:
        """The row's `namespace/name` (Pod.key)."""
        namespace = self.namespaces[row]
        return f"{namespace}/{self.names[row]}" if namespace else self.names[row]

    def key_order(self, row: int) -> tuple[str, str]:
        """(namespace, name) of the row: how two pods of one UID are told apart."""
        return self.namespaces[row], self.names[row]

    def keys(self, rows: Sequence[int]) -> list[str]:
        names, namespaces = take(self.names, rows), take(self.namespaces, rows)
        return [f"{ns}/{name}" if ns else name for ns, name in zip(namespaces, names, strict=True)]


def take(column: Sequence[Any], rows: Sequence[int]) -> list[Any]:
    """A column's values at `rows`, in that order (itemgetter, in C)."""
    if len(rows) == 1:
        return [column[rows[0]]]
    if not rows:
        return []
    return list(operator.itemgetter(*rows)(column))


# Each column and what reads its value of a Pod.
_READERS: dict[str, Callable[[Pod], Any]] = {
    column: operator.attrgetter(attribute)
    for column, attribute in (
        ("names", "meta.name"),
        ("namespaces", "meta.namespace"),
        ("uids", "meta.uid"),
        ("labels", "meta.labels"),
        ("annotations", "meta.annotations"),
        ("owners", "meta.owner_references"),
        ("controllers", "meta.controller"),
        ("created", "meta.creation_timestamp"),
        ("deleted", "meta.deletion_timestamp"),
        ("nodes", "node_name"),
        ("phases", "phase"),
        ("ready", "ready"),
        ("ready_transitions", "ready_transition"),
        ("scheduled_statuses", "scheduled_status"),
        ("scheduled_reasons", "scheduled_reason"),
        ("scheduled_transitions", "scheduled_transition"),
        ("start_times", "start_time"),
        ("restarts", "restarts"),
        ("sidecar_restarts", "sidecar_restarts"),
        ("nominated_nodes", "nominated_node_name"),
        ("priorities", "priority"),
        ("explicit_priorities", "explicit_priority"),
        ("priority_class_names", "priority_class_name"),
    )
}
if set(_READERS) != {name for name in PodColumns.__slots__ if not name.startswith("_")}:
    raise ImportError("PodColumns' columns and the Pod attributes read into them differ")
