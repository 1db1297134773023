"""ClusterSnapshot: the mutable world every simulation works on.

Nodes live in *slots*: row `i` of `alloc` / `used` (int64 arrays, one column per resource) belongs to
the node in slot `i`. Vectorised fit checks read those arrays directly. Node order is slot order,
which a revert restores exactly, so simulations are deterministic.

Transactions are an undo log. `fork()` pushes a mark (O(1)); `revert()` undoes the log back to the
mark, costing only what changed; `commit()` drops the mark and keeps the changes (which an outer
fork can still revert). Nothing is logged outside a fork.

Observers (scheduling indexes such as topology-domain counts) are told of every pod and node
change, including the inverse changes a revert makes, so they never need a rescan.

Pod changes reach `used` lazily: each add or remove queues its (row offset, resource list) delta,
and reading `used` applies the queues first (sums commute, so adds and removes queue apart). A what-if that adds pods and reverts before anyone
reads `used` never touches the array: undoing an add whose delta is still last in the queue just
drops it. Everything here is per-operation Python, so the write paths are written flat (no helper
calls, no NumPy row operations, observer loops skipped when there are none).
"""

from __future__ import annotations

import dataclasses
import heapq
import itertools
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import numpy as np

from kubetide.model.node import Node
from kubetide.model.pod import Pod
from kubetide.model.shape import Resources
from kubetide.snapshot.columns import ResourceColumns

_ADD_POD, _REMOVE_POD, _ADD_NODE, _REMOVE_NODE, _REPLACE_NODE = range(5)

_Sparse = list[tuple[int, int]]  # (column, amount) for the non-zero amounts of a resource dict

# Queued `used` deltas are applied at the latest when this many are waiting (memory stays bounded
# for a writer that never reads `used`; a what-if queues far fewer).
_MAX_PENDING = 100_000

# What `_pods_at` holds for a slot without a node. Never written: pods are only ever added to the
# slot of a named node, which has its own dict.
_FREE_SLOT: dict[str, Pod] = {}

# Change stamps come from one counter shared by every snapshot, so a stamp is issued once per
# process: a value cached under (node object, stamp) can never be mistaken for another
# snapshot's, or for the same node after any later change. A revert hands back the stamps of the
# state it restores (the same content), never new ones: each undo record keeps the stamp its
# change replaced.
_STAMPS = itertools.count(1)


class SnapshotObserver:
    """Receives every change to a snapshot. Override what you need."""

    def pod_added(self, pod: Pod, node: Node) -> None:
        pass

    def pod_removed(self, pod: Pod, node: Node) -> None:
        pass

    def pods_removed(self, pods: list[Pod], node: Node) -> None:
        """Several pods taken off one node at once (`ClusterSnapshot.remove_pods`); an observer
        that can take them as one update overrides this."""
        for pod in pods:
            self.pod_removed(pod, node)

    def node_added(self, node: Node) -> None:
        pass

    def node_removed(self, node: Node) -> None:
        pass


class SnapshotError(KeyError):
    """A change that does not fit the snapshot (unknown node, duplicate pod...): a caller bug."""


class ClusterSnapshot:
    def __init__(self, nodes: Iterable[Node] = (), pods: Iterable[Pod] = ()):
        self.columns = ResourceColumns()
        capacity = 64
        self._width = len(self.columns)
        self.alloc = np.zeros((capacity, self._width), dtype=np.int64)
        self._used = np.zeros((capacity, self._width), dtype=np.int64)
        self.valid = np.zeros(capacity, dtype=bool)
        self._node_at: list[Node | None] = [None] * capacity
        # Per slot: the stamp of the last change to the node in it or its pods (see `stamp`).
        self._stamp: list[int] = [0] * capacity
        self._slot: dict[str, int] = {}
        # Min-heap of free slots, lazily cleaned: a revert may refill a slot that is still listed.
        self._free: list[int] = list(range(capacity))
        self._pods_on: dict[str, dict[str, Pod]] = {}
        # The same dicts by slot: the write paths know the slot, and a list index is one memory
        # access where a second name lookup in a large dict is a few.
        self._pods_at: list[dict[str, Pod]] = [_FREE_SLOT] * capacity
        self._node_of: dict[str, str] = {}
        # Sparse resource lists [(column, amount)] of pods' requests, cached by the requests part
        # of the pod's shape (model/shape.py), a value computed once per pod: every version of a
        # pod and every pod stamped from one template have equal requests, so the cache stays
        # small and hits almost always. Pods request 2-4 resources, and scalar updates through a
        # memoryview beat a NumPy row operation several times over.
        self._sparse: dict[Resources, _Sparse] = {}
        self._vectors: dict[Resources, np.ndarray] = {}
        # The same for nodes' allocatable, by node name, with the dict the list was made from: a
        # what-if adds and drops the same node objects over and over (an entry is used only while
        # the node's allocatable is that very dict, which nothing changes after parsing).
        self._node_sparse: dict[str, tuple[Mapping[str, int], _Sparse]] = {}
        # Flat views: one int index per scalar update.
        self._used_view = self._used.reshape(-1).data
        self._alloc_view = self.alloc.reshape(-1).data
        self._valid_view = self.valid.data
        # Queued `used` deltas, applied when `used` is read: pod adds as their undo record
        # (_ADD_POD, uid, slot, row offset, resource list), removals as (row offset, list).
        self._pending: list[tuple[int, str, int, int, _Sparse, int]] = []
        self._pending_removals: list[tuple[int, _Sparse]] = []
        self._log: list[tuple[Any, ...]] = []  # (operation, its arguments...)
        self._marks: list[int] = []
        # The latest stamp of any node here (see `version`), and its value at each open fork.
        self._version = 0
        self._fork_versions: list[int] = []
        self._observers: list[SnapshotObserver] = []
        for node in nodes:
            self.add_node(node)
        for pod in pods:
            self.add_pod(pod, pod.node_name)

    # -- reading ---------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._slot)

    def __contains__(self, node_name: str) -> bool:
        return node_name in self._slot

    def nodes(self) -> Iterator[Node]:
        """Nodes in slot order (stable across fork/revert)."""
        return filter(None, self._node_at)  # Node objects are always true

    def node(self, name: str) -> Node:
        slot = self._slot.get(name)
        node = None if slot is None else self._node_at[slot]
        if node is None:
            raise SnapshotError(f"no node {name!r} in the snapshot")
        return node

    def slot_of(self, name: str) -> int:
        return self._slot[name]

    def node_at(self, slot: int) -> Node | None:
        return self._node_at[slot]

    def stamp(self, name: str) -> int:
        """A number that changes whenever the node or the pods bound to it change (add, remove,
        replace). A revert gives back the stamps a fork found, with the content they stood for.
        Stamps are issued once, even across snapshots, so anything derived from a node and its
        pods can be cached under (node object, stamp) and reused as long as both are the same."""
        return self._stamp[self._slot[name]]

    @property
    def version(self) -> int:
        """The latest stamp given to any node of this snapshot: unchanged exactly while no node
        and no pod changed (a revert gives back the version the fork found, with its content),
        so a caller that saw this version has seen every node's stamp as it still is."""
        return self._version

    def stamps(self) -> Iterator[tuple[Node, int]]:
        """(node, stamp) in slot order: what a per-node cache checks once per loop."""
        # A list, not a generator: the autoscaler walks every node every loop, and a
        # comprehension over zip is several times cheaper per node than a generator's resumes.
        return iter([(n, s) for n, s in zip(self._node_at, self._stamp) if n is not None])

    def pods_on(self, node_name: str) -> Mapping[str, Pod]:
        """Pods bound to a node, by UID (a live view: copy before changing the snapshot)."""
        return self._pods_on[node_name]

    def pods(self) -> Iterator[Pod]:
        for pods in self._pods_on.values():
            yield from pods.values()

    def pods_by_node(self) -> Iterator[tuple[str, int, Mapping[str, Pod]]]:
        """(node name, stamp, its pods by UID) per node, in the order `pods()` yields pods, so a
        per-node cache can stand in for a scan of every pod (live views: copy before changing)."""
        stamp, slot = self._stamp, self._slot
        return iter([(name, stamp[slot[name]], pods) for name, pods in self._pods_on.items()])

    def pod_count(self) -> int:
        return len(self._node_of)

    def has_pod(self, uid: str) -> bool:
        return uid in self._node_of

    def node_of(self, uid: str) -> str | None:
        return self._node_of.get(uid)

    def pod(self, uid: str) -> Pod:
        node = self._node_of[uid]
        return self._pods_on[node][uid]

    @property
    def used(self) -> np.ndarray:
        """Requests of the pods bound to each slot's node (int64, one column per resource)."""
        if self._pending or self._pending_removals:
            self._apply_pending()
        return self._used

    def requested(self, node_name: str) -> dict[str, int]:
        row = self.used[self._slot[node_name]]
        return {name: int(row[i]) for i, name in enumerate(self.columns.names) if row[i]}

    def allocatable(self, node_name: str) -> dict[str, int]:
        row = self.alloc[self._slot[node_name]]
        return {name: int(row[i]) for i, name in enumerate(self.columns.names) if row[i]}

    def vector(self, amounts: Mapping[str, int]) -> np.ndarray:
        """A resource vector over the snapshot's columns (adding columns for new resources)."""
        self._ensure_columns(amounts)
        vec = np.zeros(len(self.columns), dtype=np.int64)
        index = self.columns.index
        for name, amount in amounts.items():
            vec[index[name]] = amount
        return vec

    def _sparse_of(self, amounts: Mapping[str, int]) -> _Sparse:
        """(column, amount) for the non-zero amounts (adding columns for new resources)."""
        self._ensure_columns(amounts)
        index = self.columns.index
        return [(index[name], amount) for name, amount in amounts.items() if amount]

    def _pod_sparse(self, requests: Resources) -> _Sparse:
        """The cached sparse list of a pod's requests (adding columns for new resources)."""
        sparse = self._sparse.get(requests)
        if sparse is None:
            sparse = self._sparse[requests] = self._sparse_of(requests.amounts)
            self._bound_caches()
        return sparse

    def _node_sparse_of(self, node: Node) -> _Sparse:
        """The cached sparse list of a node's allocatable (adding columns for new resources)."""
        allocatable = node.allocatable
        entry = self._node_sparse.get(node.meta.name)
        if entry is None or entry[0] is not allocatable:
            entry = self._node_sparse[node.meta.name] = (allocatable, self._sparse_of(allocatable))
            self._bound_caches()
        return entry[1]

    def pod_vector(self, pod: Pod) -> np.ndarray:
        requests = pod.shape.requests
        vector = self._vectors.get(requests)
        if vector is None or len(vector) != len(self.columns):
            vector = self._vectors[requests] = self.vector(requests.amounts)
            self._bound_caches()
        return vector

    def _bound_caches(self) -> None:
        # Drop everything now and then rather than hold every request shape ever seen (a day-long
        # simulation may see many), but never below what the pods and nodes present could need
        # (clearing then would thrash).
        limit = 2 * (len(self._node_of) + len(self._slot)) + 65536  # at most a few tens of MB
        if len(self._sparse) > limit:
            self._sparse.clear()
        if len(self._vectors) > limit:
            self._vectors.clear()
        if len(self._node_sparse) > limit:
            self._node_sparse.clear()

    # -- observers -------------------------------------------------------------------------
    def add_observer(self, observer: SnapshotObserver) -> None:
        self._observers.append(observer)

    def remove_observer(self, observer: SnapshotObserver) -> None:
        self._observers.remove(observer)

    # -- transactions ----------------------------------------------------------------------
    def fork(self) -> None:
        self._marks.append(len(self._log))
        self._fork_versions.append(self._version)

    def revert(self) -> None:
        if not self._marks:
            raise SnapshotError("revert() without a fork()")
        mark = self._marks.pop()
        log = self._log
        observers = self._observers
        pending = self._pending
        node_of, pods_at, stamps = self._node_of, self._pods_at, self._stamp
        while len(log) > mark:
            entry = log.pop()
            if entry[0] != _ADD_POD:
                self._undo(entry)
                continue
            # Undoing an add is by far the commonest step of a what-if: inlined, using what the
            # add recorded (slot, resource list) instead of looking it up again.
            _, uid, slot, _, sparse, stamp = entry
            del node_of[uid]
            pod = pods_at[slot].pop(uid)
            if pending and pending[-1] is entry:
                pending.pop()  # never applied: nothing to take back
            else:
                used = self._used_view
                base = slot * self._width  # the width may have grown since the add
                for column, amount in sparse:
                    used[base + column] -= amount
            stamps[slot] = stamp  # the one it had before the add: same pods, same stamp
            if observers:
                node = self._node_at[slot]
                for observer in observers:
                    observer.pod_removed(pod, node)
        self._version = self._fork_versions.pop()

    def commit(self) -> None:
        if not self._marks:
            raise SnapshotError("commit() without a fork()")
        self._marks.pop()
        self._fork_versions.pop()
        if not self._marks:
            self._log = []

    @property
    def depth(self) -> int:
        """How many forks are open."""
        return len(self._marks)

    def _undo(self, entry: tuple[Any, ...]) -> None:
        """Undo one change and give its slot back the stamp the change replaced (the last item
        of every record)."""
        op = entry[0]
        if op == _REMOVE_POD:
            slot = self._slot[entry[2]]
            self._place(entry[1], entry[2], slot)
        elif op == _ADD_NODE:
            slot = self._slot[entry[1]]
            self._drop_node(entry[1])
        elif op == _REMOVE_NODE:
            slot = entry[2]
            self._install_node(entry[1], slot)
        else:  # _REPLACE_NODE
            slot = self._slot[entry[1].name]
            self._swap_node(entry[1])
        self._stamp[slot] = entry[-1]

    # -- writing ---------------------------------------------------------------------------
    def add_node(self, node: Node) -> None:
        name = node.meta.name
        if name in self._slot:
            raise SnapshotError(f"node {name!r} is already in the snapshot")
        slot = self._take_slot()
        stamp = self._stamp[slot]
        self._install_node(node, slot)
        if self._marks:
            self._log.append((_ADD_NODE, name, stamp))

    def remove_node(self, name: str) -> None:
        """Remove a node and every pod bound to it."""
        node = self.node(name)
        for uid in list(self._pods_on[name]):
            self.remove_pod(uid)
        slot = self._slot[name]
        stamp = self._stamp[slot]
        self._drop_node(name)
        if self._marks:
            self._log.append((_REMOVE_NODE, node, slot, stamp))

    def replace_node(self, node: Node) -> None:
        """Swap in a new version of a node (labels, taints, readiness); its pods stay."""
        old = self.node(node.name)
        stamp = self._stamp[self._slot[node.name]]
        self._swap_node(node)
        if self._marks:
            self._log.append((_REPLACE_NODE, old, stamp))

    def bind(self, pod: Pod, node_name: str) -> None:
        """A pending pod, bound to `node_name` as the scheduler would bind it (its parsed shape
        kept: a pod is never parsed again)."""
        self.add_pod(dataclasses.replace(pod, node_name=node_name, parsed_shape=pod.shape), node_name)

    def add_pod(self, pod: Pod, node_name: str) -> None:
        uid = pod.meta.uid
        node_of = self._node_of
        if uid in node_of:
            raise SnapshotError(f"pod {pod.key} ({uid}) is already bound to {node_of[uid]!r}")
        slot = self._slot.get(node_name)
        if slot is None:
            raise SnapshotError(f"no node {node_name!r} in the snapshot for pod {pod.key}")
        # `_place`, inlined: this is the hot path of every what-if.
        sparse = self._sparse.get(pod.shape.requests)
        if sparse is None:
            sparse = self._pod_sparse(pod.shape.requests)  # may add columns: the offset comes after
        self._pods_at[slot][uid] = pod
        node_of[uid] = node_name
        stamps = self._stamp
        change = (_ADD_POD, uid, slot, slot * self._width, sparse, stamps[slot])
        pending = self._pending
        pending.append(change)  # an undo compares it by identity (see `revert`)
        if len(pending) > _MAX_PENDING:  # a writer that never reads must not grow the queue
            self._apply_pending()
        stamps[slot] = self._version = next(_STAMPS)
        if self._observers:
            node = self._node_at[slot]
            assert node is not None  # the slot of a node that holds a pod
            for observer in self._observers:
                observer.pod_added(pod, node)
        if self._marks:
            self._log.append(change)

    def remove_pod(self, uid: str) -> Pod:
        node_name = self._node_of.get(uid)
        if node_name is None:
            raise SnapshotError(f"no pod with UID {uid!r} in the snapshot")
        pod, stamp = self._unplace(uid)
        if self._marks:
            self._log.append((_REMOVE_POD, pod, node_name, stamp))
        return pod

    def remove_pods(self, node_name: str, uids: list[str]) -> None:
        """Take these distinct pods (all bound to `node_name`) off it at once: the node's stamp moves once
        and observers get them as one batch, where a feed's mass deletion would otherwise pay
        every index update pod by pod. Inside a fork, pod by pod (each removal is undone alone)."""
        node_of = self._node_of
        stray = next((uid for uid in uids if node_of.get(uid) != node_name), None)
        if stray is not None:
            raise SnapshotError(f"no pod with UID {stray!r} on node {node_name!r}")
        if self._marks:
            for uid in uids:
                self.remove_pod(uid)
            return
        if not uids:
            return
        slot = self._slot[node_name]
        on_node, removals = self._pods_at[slot], self._pending_removals
        removed = []
        for uid in uids:
            del node_of[uid]
            pod = on_node.pop(uid)
            sparse = self._pod_sparse(pod.shape.requests)  # may add columns: the row offset comes after
            removals.append((slot * self._width, sparse))
            removed.append(pod)
        if len(removals) > _MAX_PENDING:
            self._apply_pending()
        self._stamp[slot] = self._version = next(_STAMPS)
        if self._observers:
            node = self._node_at[slot]
            assert node is not None  # the slot of a node that holds a pod
            for observer in self._observers:
                observer.pods_removed(removed, node)

    def move_pod(self, uid: str, node_name: str) -> None:
        pod = self.remove_pod(uid)
        self.add_pod(pod, node_name)

    def update_pod(self, pod: Pod) -> None:
        """Replace a bound pod's object (status change) without moving it."""
        node_name = self._node_of[pod.uid]
        self.remove_pod(pod.uid)
        self.add_pod(pod, node_name)

    # -- internals (shared by changes and their undo) ----------------------------------------
    def _place(self, pod: Pod, node_name: str, slot: int) -> None:
        uid = pod.meta.uid
        self._pods_on[node_name][uid] = pod
        self._node_of[uid] = node_name
        sparse = self._pod_sparse(pod.shape.requests)  # may add columns: the row offset comes after
        self._pending.append((_ADD_POD, uid, slot, slot * self._width, sparse, 0))  # never undone
        self._stamp[slot] = self._version = next(_STAMPS)
        if self._observers:
            node = self._node_at[slot]
            assert node is not None  # the slot of a node that holds a pod
            for observer in self._observers:
                observer.pod_added(pod, node)

    def _unplace(self, uid: str) -> tuple[Pod, int]:
        """Take a pod off its node; returns it and the stamp its node had before."""
        node_name = self._node_of.pop(uid)
        slot = self._slot[node_name]
        pod = self._pods_on[node_name].pop(uid)
        sparse = self._pod_sparse(pod.shape.requests)  # may add columns: the row offset comes after
        self._pending_removals.append((slot * self._width, sparse))
        if len(self._pending_removals) > _MAX_PENDING:
            self._apply_pending()
        stamp = self._stamp[slot]
        self._stamp[slot] = self._version = next(_STAMPS)
        if self._observers:
            node = self._node_at[slot]
            assert node is not None  # the slot of a node that holds a pod
            for observer in self._observers:
                observer.pod_removed(pod, node)
        return pod, stamp

    def _apply_pending(self) -> None:
        used = self._used_view
        for _, _, _, base, sparse, _ in self._pending:
            for column, amount in sparse:
                used[base + column] += amount
        for base, sparse in self._pending_removals:
            for column, amount in sparse:
                used[base + column] -= amount
        self._pending.clear()
        self._pending_removals.clear()

    def _install_node(self, node: Node, slot: int) -> None:
        # A free slot's rows are all zero: `alloc` is cleared when a node leaves, and `used`
        # returns to zero as its pods leave first.
        sparse = self._node_sparse_of(node)  # may add columns: the offset comes after
        name = node.meta.name
        self._slot[name] = slot
        self._node_at[slot] = node
        self._stamp[slot] = self._version = next(_STAMPS)
        self._pods_on[name] = self._pods_at[slot] = {}
        alloc = self._alloc_view
        base = slot * self._width
        for column, amount in sparse:
            alloc[base + column] = amount
        self._valid_view[slot] = True
        if self._observers:
            for observer in self._observers:
                observer.node_added(node)

    def _drop_node(self, name: str) -> None:
        slot = self._slot.pop(name)
        node = self._node_at[slot]
        assert node is not None  # a named node's slot
        del self._pods_on[name]
        self._pods_at[slot] = _FREE_SLOT
        self._node_at[slot] = None
        self._stamp[slot] = self._version = next(_STAMPS)
        alloc = self._alloc_view
        base = slot * self._width
        for column, _ in self._node_sparse_of(node):
            alloc[base + column] = 0
        self._valid_view[slot] = False
        heapq.heappush(self._free, slot)
        if self._observers:
            for observer in self._observers:
                observer.node_removed(node)

    def _swap_node(self, node: Node) -> None:
        slot = self._slot[node.name]
        old = self._node_at[slot]
        assert old is not None  # a named node's slot
        pods = list(self._pods_on[node.name].values())
        # Observers see the pods leave with the old node and come back with the new one, so
        # indexes keyed by node labels (topology domains) stay right when labels change.
        for observer in self._observers:
            for pod in pods:
                observer.pod_removed(pod, old)
            observer.node_removed(old)
        self._ensure_columns(node.allocatable)
        self._node_at[slot] = node
        self._stamp[slot] = self._version = next(_STAMPS)
        self.alloc[slot] = self.vector(node.allocatable)
        for observer in self._observers:
            observer.node_added(node)
            for pod in pods:
                observer.pod_added(pod, node)

    def _take_slot(self) -> int:
        free, valid = self._free, self._valid_view
        while free:
            slot = heapq.heappop(free)
            if not valid[slot]:
                return slot
        self._grow()
        return heapq.heappop(free)

    def _grow(self) -> None:
        self._apply_pending()  # queued deltas hold row offsets into the old arrays
        old = len(self._node_at)
        new = old * 2
        width = self._width
        self.alloc = np.concatenate([self.alloc, np.zeros((old, width), dtype=np.int64)])
        self._used = np.concatenate([self._used, np.zeros((old, width), dtype=np.int64)])
        self.valid = np.concatenate([self.valid, np.zeros(old, dtype=bool)])
        self._refresh_views()
        self._node_at.extend([None] * old)
        self._pods_at.extend([_FREE_SLOT] * old)
        self._stamp.extend([0] * old)
        for slot in range(old, new):
            heapq.heappush(self._free, slot)

    def _ensure_columns(self, amounts: Mapping[str, int]) -> None:
        missing = self.columns.missing(amounts)
        if not missing:
            return
        self._apply_pending()  # queued deltas hold row offsets for the old width
        for name in missing:
            self.columns.add(name)
        self._width = len(self.columns)
        extra = np.zeros((self.alloc.shape[0], len(missing)), dtype=np.int64)
        self.alloc = np.hstack([self.alloc, extra])
        self._used = np.hstack([self._used, extra])
        self._refresh_views()

    def _refresh_views(self) -> None:
        self._used_view = self._used.reshape(-1).data
        self._alloc_view = self.alloc.reshape(-1).data
        self._valid_view = self.valid.data
