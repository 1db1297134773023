"""Moving one pod in the drain simulation: its hint first, then a round-robin search.

The parallel-drain design asks for two things from the search. Hints: the destination a pod got
in the previous loop is tried first, so the same pods land on the same nodes loop after loop and
the candidate set stays stable. A cyclic pointer: the search starts where the last pod landed and
wraps around, so the simulation fills one destination before touching the next (next-fit). That
packs tightly, keeps most queries to a single node check, and, starting from the far end of the
node list while candidates are taken from the front, keeps destinations and candidates apart.

Feasibility is the scheduling package's PredicateChecker; this module never filters on its own.
With a usage guard (usage.py), a guarded move also skips the destinations the pod would push over
a QoS watermark, and every move keeps the guard's projected usage current.
"""

from __future__ import annotations

from collections.abc import Container
from typing import Any

from kubetide.autoscaler.scaledown.usage import Refusal, UsageGuard
from kubetide.model import Pod
from kubetide.scheduling.checker import PredicateChecker
from kubetide.snapshot import ClusterSnapshot, Memo

_POD_FIELDS = Pod.__slots__


def homeless(pod: Pod, cache: Memo[str, Pod] | None = None) -> Pod:
    """The pod as its replacement would look to the scheduler: bound to no node.

    (A pod still naming its node would only ever fit there: the NodeName filter.) Copies are
    kept per UID, tagged with the original object, so each pod is copied once, not once per loop.
    """
    if not pod.node_name:
        return pod
    if cache is not None:
        hit = cache.get(pod.uid, tag=pod)
        if hit is not None:
            return hit
    # A field-by-field copy: dataclasses.replace re-runs __init__ and costs twice as much, which
    # shows at tens of thousands of pods per loop.
    copy = object.__new__(Pod)
    for name in _POD_FIELDS:
        object.__setattr__(copy, name, getattr(pod, name))
    object.__setattr__(copy, "node_name", "")
    if cache is not None:
        cache.put(pod.uid, copy, tag=pod)
    return copy


def _standin_key(pod: Pod) -> tuple[Any, ...]:
    """Equal only for pods the scheduler cannot tell apart once bound to no node: the same shape
    (model/shape.py), namespace and labels. Labels are compared in their given order: pods
    stamped from one template list them alike, and a miss only costs a copy."""
    meta = pod.meta
    return (pod.shape, meta.namespace, tuple(meta.labels.items()))


class PodMover:
    """Moves pods for one planner update. The checker is asked about a homeless stand-in of each
    pod, shared by pods of the same shape, so its per-pod class lookup happens once per shape."""

    def __init__(
        self,
        snapshot: ClusterSnapshot,
        checker: PredicateChecker,
        cache: Memo[str, Pod] | None = None,
        guard: UsageGuard | None = None,
    ):
        self.snapshot = snapshot
        self.checker = checker
        self.guard = guard
        # Set when the last guarded move failed only because of the guard: a destination exists
        # by requests, but the pod would push it over a QoS watermark.
        self.refused: Refusal | None = None
        self.cache: Memo[str, Pod] = cache if cache is not None else Memo()
        # (shape, namespace, labels) -> stand-in
        self._standins: dict[tuple[Any, ...], Pod] = {}
        # The design starts the pointer at the last node.
        valid = snapshot.valid.nonzero()[0]
        self.pointer = int(valid[-1]) if len(valid) else 0

    def standin(self, pod: Pod) -> Pod:
        key = _standin_key(pod)
        found = self._standins.get(key)
        if found is None:
            found = self._standins[key] = homeless(pod, self.cache)
        return found

    def destination(self, pod: Pod, hint: str | None, skip: Container[str]) -> str | None:
        """Where `pod` (already taken off its node) can go, or None."""
        snapshot, checker = self.snapshot, self.checker
        if hint is not None and hint not in skip and hint in snapshot and checker.fits(pod, hint) is None:
            return hint
        # The pointer's node first: the common case, and the same answer find_node(start=pointer)
        # would give, for one node's check instead of a scan. Then its neighbour below: filling
        # the node list from the far end keeps destinations away from the candidates, which come
        # from the front (a forward scan would wrap around onto the next candidates, and each
        # would then carry its received pods on to the next: three times the moves).
        for slot in (self.pointer, self.pointer - 1):
            node = snapshot.node_at(slot) if 0 <= slot < len(snapshot.valid) else None
            if node is not None and node.name not in skip and checker.fits(pod, node.name) is None:
                self.pointer = slot
                return node.name
        found = checker.find_node(pod, skip=skip, start=self.pointer)
        if found is not None:
            self.pointer = snapshot.slot_of(found)
        return found

    def move(self, uid: str, hint: str | None, skip: Container[str], *, guarded: bool = False) -> str | None:
        """Take the pod off its node and put it on a destination; None (pod removed, caller
        reverts) when there is none. The pod leaves first so it does not count against itself
        (anti-affinity with its own labels, spread constraints) while a new home is sought.
        `guarded`: refuse destinations the usage guard (if any) says the pod would overload."""
        source = self.snapshot.node_of(uid) if self.guard is not None else None
        pod = self.snapshot.remove_pod(uid)
        standin, guard = self.standin(pod), self.guard
        refusing = guard.refusing(pod, skip) if guard is not None and guarded else None
        dest = self.destination(standin, hint, skip if refusing is None else refusing)
        self.refused = None
        if dest is None:
            if refusing is not None and refusing.first is not None and self._exists(standin, skip):
                self.refused = refusing.first
            return None
        # The original object goes back in: indexes observing the snapshot know it already.
        self.snapshot.add_pod(pod, dest)
        if guard is not None:
            guard.moved(pod, source, dest)
        return dest

    def _exists(self, pod: Pod, skip: Container[str]) -> bool:
        """Whether some node would take `pod` by requests alone (the search pointer stays)."""
        return self.checker.find_node(pod, skip=skip, start=self.pointer) is not None

    def place(self, pod: Pod, skip: Container[str]) -> str | None:
        """Put a pod that is on no node (a recently evicted one) somewhere, or None."""
        pod = homeless(pod, self.cache)
        dest = self.destination(pod, None, skip)
        if dest is not None:
            self.snapshot.add_pod(pod, dest)
            if self.guard is not None:
                self.guard.moved(pod, None, dest)
        return dest
