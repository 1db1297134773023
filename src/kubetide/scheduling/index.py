"""Incremental indexes over a snapshot: topology domains, matching-pod counts, host ports.

`SchedulingIndex` is a `SnapshotObserver`. It hears every pod and node change, including the inverse
changes a revert replays, and keeps these structures right without ever rescanning the pods:

- `Topology`: for one label key, each slot's domain id (-1 when the node lacks the key) and the
  number of nodes per domain.
- label groups: bound pods bucketed by (namespace, labels, terminating), with per-slot counts. A
  new matcher is initialised from the groups (a few hundred) rather than from the pods (a few
  hundred thousand), and a new pod only touches the matchers of its group.
- `PodSet`: the pods one `PodMatcher` conjunction selects, counted per slot and, for each topology
  key asked for, per domain. Spread and inter-pod affinity read these.
- `AntiEntry`: bound pods' own required anti-affinity terms, counted per domain of the term's key,
  for the symmetric check against an incoming pod.
- host ports in use, per slot.

`version` increases on every change; caches keyed on it are invalidated by any change at all.
`touched` logs the slot of every change, so per-slot caches (a fit group's base mask and resource
scores) recompute only the rows that changed since they last looked.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from kubetide.model.node import Node
from kubetide.model.pod import HostPort, Pod
from kubetide.scheduling.terms import NamespaceLabels, PodMatcher, affinity_matcher
from kubetide.snapshot import ClusterSnapshot, SnapshotObserver

ANY_IP = "0.0.0.0"


def _grown(array: np.ndarray, size: int, fill: int = 0) -> np.ndarray:
    if len(array) >= size:
        return array
    extra = np.full(size - len(array), fill, dtype=array.dtype)
    return np.concatenate([array, extra])


class Topology:
    """Domains of one topology key across the snapshot's slots."""

    __slots__ = ("dom", "ids", "key", "nodes", "values")

    def __init__(self, key: str, capacity: int):
        self.key = key
        self.ids: dict[str, int] = {}
        self.values: list[str] = []
        self.nodes: list[int] = []  # valid nodes per domain
        self.dom = np.full(capacity, -1, dtype=np.int64)

    def place(self, slot: int, labels: Mapping[str, str]) -> None:
        value = labels.get(self.key)
        if value is None:
            self.dom[slot] = -1
            return
        d = self.ids.get(value)
        if d is None:
            d = self.ids[value] = len(self.values)
            self.values.append(value)
            self.nodes.append(0)
        self.dom[slot] = d
        self.nodes[d] += 1

    def clear(self, slot: int) -> None:
        d = int(self.dom[slot])
        if d >= 0:
            self.nodes[d] -= 1
            self.dom[slot] = -1

    @property
    def size(self) -> int:
        return len(self.values)


class PodSet:
    """Bound pods selected by a conjunction of matchers, counted per slot and per domain."""

    __slots__ = ("domains", "key", "per_slot", "total")

    def __init__(self, key: tuple[Any, ...], capacity: int):
        self.key = key  # (matchers, skip_terminating)
        self.per_slot = np.zeros(capacity, dtype=np.int64)
        self.total = 0
        self.domains: dict[str, list[Any]] = {}  # topology key -> [Topology, counts per domain]

    def add(self, slot: int, delta: int) -> None:
        self.per_slot[slot] += delta
        self.total += delta
        for holder in self.domains.values():
            d = holder[0].dom[slot]
            if d >= 0:
                counts = holder[1]
                if d >= len(counts):
                    counts = holder[1] = _grown(counts, 2 * int(d) + 8)
                counts[d] += delta

    def domain_counts(self, topology: Topology) -> np.ndarray:
        """Matching pods per domain of `topology` (length = its number of domains)."""
        holder = self.domains.get(topology.key)
        if holder is None:
            dom = topology.dom
            has = dom >= 0
            counts = np.bincount(dom[has], weights=self.per_slot[has], minlength=topology.size)
            holder = self.domains[topology.key] = [topology, counts.astype(np.int64)]
        counts = holder[1]
        if len(counts) < topology.size:
            counts = holder[1] = _grown(counts, topology.size)
        return counts[: topology.size]


class AntiEntry:
    """Bound pods carrying one (resolved) required anti-affinity term, counted per domain."""

    __slots__ = ("counts", "matcher", "padded", "padded_version", "topology", "total")

    def __init__(self, matcher: PodMatcher, topology: Topology):
        self.matcher = matcher
        self.topology = topology
        self.counts = np.zeros(max(8, topology.size), dtype=np.int64)
        self.total = 0  # only pods on nodes that carry the key count
        self.padded: np.ndarray | None = None  # domain counts + a trailing 0, per index version
        self.padded_version = -1

    def add(self, slot: int, delta: int) -> None:
        d = self.topology.dom[slot]
        if d >= 0:
            if d >= len(self.counts):
                self.counts = _grown(self.counts, 2 * int(d) + 8)
            self.counts[d] += delta
            self.total += delta

    def domain_counts(self) -> np.ndarray:
        if len(self.counts) < self.topology.size:
            self.counts = _grown(self.counts, self.topology.size)
        return self.counts[: self.topology.size]


class _Group:
    __slots__ = ("labels", "namespace", "sets", "slots", "terminating")

    def __init__(self, namespace: str, labels: Mapping[str, str], terminating: bool):
        self.namespace = namespace
        self.labels = labels
        self.terminating = terminating
        self.slots: dict[int, int] = {}
        self.sets: list[PodSet] = []


class SchedulingIndex(SnapshotObserver):
    def __init__(self, snapshot: ClusterSnapshot, ns_labels: NamespaceLabels):
        self.snapshot = snapshot
        self.ns_labels = ns_labels
        self.version = 0
        self.capacity = len(snapshot.valid)
        self.slot: dict[str, int] = {}
        self.topologies: dict[str, Topology] = {}
        self.sets: dict[tuple[Any, ...], PodSet] = {}
        self.anti_entries: list[AntiEntry] = []
        self._anti_by_key: dict[tuple[Any, ...], AntiEntry] = {}
        self._groups: dict[tuple[Any, ...], _Group] = {}
        # uid -> (pod, group, anti entries, host ports); a cache, safe to drop at any time
        self._pods: dict[str, tuple[Any, ...]] = {}
        # slot -> {(protocol, port): {ip: count}}
        self.ports: dict[int, dict[tuple[str, int], dict[str, int]]] = {}
        # Slots whose node appeared or changed, for per-class node caches to catch up on.
        self.node_log: list[int] = []
        self.log_base = 0
        # Slots of every pod or node change; `touched_base` entries were dropped from the front.
        self.touched: list[int] = []
        self.touched_base = 0
        self._touch_limit = 8 * self.capacity + 4096
        for node in snapshot.nodes():
            self.node_added(node)
        for node in snapshot.nodes():
            for pod in snapshot.pods_on(node.name).values():
                self.pod_added(pod, node)
        snapshot.add_observer(self)

    def close(self) -> None:
        self.snapshot.remove_observer(self)

    # -- observer ----------------------------------------------------------------------------
    def node_added(self, node: Node) -> None:
        self.version += 1
        slot = self.snapshot.slot_of(node.name)
        if slot >= self.capacity:
            self._grow(len(self.snapshot.valid))
        self.slot[node.name] = slot
        for topology in self.topologies.values():
            topology.place(slot, node.labels)
        if len(self.node_log) > 4 * self.capacity + 1024:
            self.log_base += len(self.node_log)
            self.node_log = []
        self.node_log.append(slot)
        self._touch(slot)

    def node_removed(self, node: Node) -> None:
        self.version += 1
        slot = self.slot.pop(node.name)
        for topology in self.topologies.values():
            topology.clear(slot)
        self.ports.pop(slot, None)
        self._touch(slot)

    def _touch(self, slot: int) -> None:
        touched = self.touched
        if len(touched) > self._touch_limit:
            self.touched_base += len(touched)
            touched.clear()
        touched.append(slot)

    def pod_added(self, pod: Pod, node: Node) -> None:
        self._pod_changed(pod, self.slot[node.name], 1)

    def pod_removed(self, pod: Pod, node: Node) -> None:
        self._pod_changed(pod, self.slot[node.name], -1)

    def pods_removed(self, pods: list[Pod], node: Node) -> None:
        """A batch off one node (a feed's mass deletion): each label group, pod set and
        anti-affinity entry is updated once by the group's count, not once per pod."""
        slot = self.slot[node.name]
        self.version += len(pods)
        self._touch(slot)
        by_group: dict[_Group, int] = {}
        by_entry: dict[AntiEntry, int] = {}
        for pod in pods:
            info = self._pods.get(pod.meta.uid)
            if info is None or info[0] is not pod:
                info = self._describe(pod)
            by_group[info[1]] = by_group.get(info[1], 0) + 1
            for entry in info[2]:
                by_entry[entry] = by_entry.get(entry, 0) + 1
            if info[3]:
                self._ports_changed(slot, info[3], -1)
        for group, count in by_group.items():
            left = group.slots[slot] - count
            if left:
                group.slots[slot] = left
            else:
                del group.slots[slot]
            for pod_set in group.sets:
                pod_set.add(slot, -count)
        for entry, count in by_entry.items():
            entry.add(slot, -count)

    def _pod_changed(self, pod: Pod, slot: int, delta: int) -> None:
        # The hot path of every simulation (each bind and each undo): kept flat on purpose.
        self.version += 1
        touched = self.touched
        if len(touched) > self._touch_limit:
            self.touched_base += len(touched)
            touched.clear()
        touched.append(slot)
        info = self._pods.get(pod.meta.uid)
        if info is None or info[0] is not pod:
            info = self._describe(pod)
        group = info[1]
        slots = group.slots
        count = slots.get(slot, 0) + delta
        if count:
            slots[slot] = count
        else:
            del slots[slot]
        if group.sets:
            for pod_set in group.sets:
                pod_set.add(slot, delta)
        if info[2]:
            for entry in info[2]:
                entry.add(slot, delta)
        if info[3]:
            self._ports_changed(slot, info[3], delta)

    def _describe(self, pod: Pod) -> tuple[Any, ...]:
        if len(self._pods) > 2 * self.snapshot.pod_count() + 100_000:
            self._pods.clear()
        terminating = pod.meta.deletion_timestamp is not None
        key = (pod.namespace, tuple(sorted(pod.labels.items())), terminating)
        group = self._groups.get(key)
        if group is None:
            group = self._groups[key] = _Group(pod.namespace, pod.labels, terminating)
            for pod_set in self.sets.values():
                if self._selects(pod_set.key, group):
                    group.sets.append(pod_set)
        entries = tuple(
            self._anti_entry(affinity_matcher(term, pod), term.topology_key)
            for term in pod.affinity.anti_required
        )
        info = self._pods[pod.uid] = (pod, group, entries, pod.host_ports)
        return info

    def _ports_changed(self, slot: int, ports: tuple[HostPort, ...], delta: int) -> None:
        used = self.ports.setdefault(slot, {})
        for p in ports:
            ips = used.setdefault((p.protocol, p.port), {})
            n = ips.get(p.ip, 0) + delta
            if n:
                ips[p.ip] = n
            else:
                del ips[p.ip]
                if not ips:
                    del used[(p.protocol, p.port)]
        if not used:
            del self.ports[slot]

    def _grow(self, capacity: int) -> None:
        self.capacity = capacity
        self._touch_limit = 8 * capacity + 4096
        for topology in self.topologies.values():
            topology.dom = _grown(topology.dom, capacity, -1)
        for pod_set in self.sets.values():
            pod_set.per_slot = _grown(pod_set.per_slot, capacity)

    # -- lookups -----------------------------------------------------------------------------
    def topology(self, key: str) -> Topology:
        topology = self.topologies.get(key)
        if topology is None:
            topology = self.topologies[key] = Topology(key, self.capacity)
            for name, slot in self.slot.items():
                topology.place(slot, self.snapshot.node(name).labels)
        return topology

    def pod_set(self, matchers: tuple[PodMatcher, ...], skip_terminating: bool) -> PodSet:
        key = (matchers, skip_terminating)
        pod_set = self.sets.get(key)
        if pod_set is None:
            pod_set = self.sets[key] = PodSet(key, self.capacity)
            for group in self._groups.values():
                if self._selects(key, group):
                    group.sets.append(pod_set)
                    for slot, count in group.slots.items():
                        pod_set.per_slot[slot] += count
                        pod_set.total += count
        return pod_set

    def _selects(self, key: tuple[Any, ...], group: _Group) -> bool:
        matchers, skip_terminating = key
        if skip_terminating and group.terminating:
            return False
        return all(m.matches(group.namespace, group.labels, self.ns_labels) for m in matchers)

    def _anti_entry(self, matcher: PodMatcher, topology_key: str) -> AntiEntry:
        key = (matcher, topology_key)
        entry = self._anti_by_key.get(key)
        if entry is None:
            entry = self._anti_by_key[key] = AntiEntry(matcher, self.topology(topology_key))
            self.anti_entries.append(entry)
        return entry

    def port_conflict(self, slot: int, wanted: tuple[HostPort, ...]) -> bool:
        """NodePorts: same protocol and port, and the same IP or 0.0.0.0 on either side."""
        used = self.ports.get(slot)
        if not used:
            return False
        for p in wanted:
            ips = used.get((p.protocol, p.port))
            if ips and (p.ip == ANY_IP or p.ip in ips or ANY_IP in ips):
                return True
        return False
