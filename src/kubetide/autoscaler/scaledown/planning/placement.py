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

from collections.abc import Container, Sequence
from typing import Any

from kubetide.autoscaler.scaledown.planning.usage import Refusal, UsageGuard
from kubetide.model import LabelSelector, Pod
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


def is_node_local(pod: Pod) -> bool:
    """Whether the pod's shape (model/shape.py: everything the filters read of a pod but its
    labels) is node-local: see `_is_node_local`."""
    shape = pod.shape
    local = _LOCAL.get(shape)
    if local is None:
        if len(_LOCAL) > 100_000:
            _LOCAL.clear()  # a cache
        local = _LOCAL[shape] = _is_node_local(pod)
    return local


_LOCAL: dict[Any, bool] = {}


def _is_node_local(pod: Pod) -> bool:
    """Whether the scheduler's filters, for this pod on a node, read that node's own content only
    and are changed by other pods placed there only through their requests: no required pod
    (anti-)affinity, no DoNotSchedule topology spread, no host port. (Bound pods' required
    anti-affinity terms against it are read too: `paper_pods` keeps on paper only pods that no
    term of a pod moved for real in the same trial selects.)"""
    affinity = pod.affinity
    if affinity.pod_required or affinity.anti_required or pod.host_ports:
        return False
    return all(c.when_unsatisfiable != "DoNotSchedule" for c in pod.topology_spread)


def paper_pods(pods: Sequence[Pod]) -> set[str]:
    """The UIDs of those of a trial's pods that `move_on_paper` may place: node-local ones that no
    hard spread constraint or required pod (anti-)affinity term of the others (moved for real)
    selects, since it would count them where they are not. Any namespace is taken to match, and a
    term without a selector to select every pod."""
    local = [pod for pod in pods if is_node_local(pod)]
    if not local:
        return set()
    selectors: list[LabelSelector | None] = []
    for pod in pods:
        if is_node_local(pod):
            continue
        affinity = pod.affinity
        selectors.extend(t.label_selector for t in (*affinity.pod_required, *affinity.anti_required))
        selectors.extend(
            c.label_selector for c in pod.topology_spread if c.when_unsatisfiable == "DoNotSchedule"
        )
    if any(selector is None for selector in selectors):
        return set()
    if not selectors:
        return {pod.uid for pod in local}
    return {
        pod.uid
        for pod in local
        if not any(selector.matches(pod.labels) for selector in selectors if selector is not None)
    }


class _Filled(Container[str]):
    """The nodes a pod may not go to in a trial on paper: `skip`, and those where the pods put
    there on paper (`added`: per node, their requests per resource) leave too little room for
    its requests. Otherwise the checker answers from the snapshot as it is (pods moved for real
    included), which is its answer once the paper pods are added too: for a node-local pod the
    only filter they change is NodeResourcesFit, and it compares the same sums."""

    __slots__ = ("added", "need", "skip", "snapshot")

    def __init__(
        self,
        skip: Container[str],
        added: dict[str, dict[str, int]],
        need: tuple[tuple[str, int], ...],
        snapshot: ClusterSnapshot,
    ):
        self.skip = skip
        self.added = added
        self.need = need
        self.snapshot = snapshot

    def __contains__(self, name: object) -> bool:
        if name in self.skip:
            return True
        extra = self.added.get(name) if self.added else None  # type: ignore[call-overload]
        if extra is None:
            return False
        snapshot = self.snapshot
        slot, columns = snapshot.slot_of(name), snapshot.columns.index  # type: ignore[arg-type]
        alloc, used = snapshot.alloc, snapshot.used
        for resource, amount in self.need:
            taken = extra.get(resource)
            if taken is None:
                continue  # no paper pod there asks for it: the checker's answer stands
            column = columns[resource]
            if int(alloc[slot, column]) - int(used[slot, column]) - taken < amount:
                return True
        return False


def _standin_key(pod: Pod) -> tuple[Any, ...]:
    """Equal only for pods the scheduler cannot tell apart once bound to no node: the same shape
    (model/shape.py), namespace and labels. Labels are compared in their given order: pods
    stamped from one template list them alike, and a miss only costs a copy."""
    meta = pod.meta
    return (pod.shape, meta.namespace, tuple(meta.labels.items()))


class Standins:
    """The homeless stand-ins of pods (`_standin_key`: one per class of pods the scheduler cannot
    tell apart), by key and by pod UID (tagged with the pod object it was found for), kept across
    a planner's loops: each search asks for the stand-in of every pod of every node it tries, and
    most of them are the pods it asked for in the last search. A stand-in answers for any pod of
    its key, whichever pod it was copied from (that pod may be gone: the copy is bound to no node
    and nothing else of it is read). Entries live pass by pass (`Memo`): one pass a search."""

    __slots__ = ("by_key", "by_uid", "homeless")

    def __init__(self, homeless: Memo[str, Pod] | None = None):
        self.homeless: Memo[str, Pod] = homeless if homeless is not None else Memo()
        self.by_key: Memo[tuple[Any, ...], Pod] = Memo()
        self.by_uid: Memo[str, Pod] = Memo()

    def new_pass(self) -> None:
        self.homeless.new_pass()
        self.by_key.new_pass()
        self.by_uid.new_pass()

    def of(self, pod: Pod) -> Pod:
        found = self.by_uid.get(pod.uid, tag=pod)
        if found is not None:
            return found
        key = _standin_key(pod)
        found = self.by_key.get(key)
        if found is None:
            found = self.by_key.put(key, homeless(pod, self.homeless))
        return self.by_uid.put(pod.uid, found, tag=pod)


class PodMover:
    """Moves pods for one planner update. The checker is asked about a homeless stand-in of each
    pod, shared by pods of the same shape, so its per-pod class lookup happens once per shape."""

    def __init__(
        self,
        snapshot: ClusterSnapshot,
        checker: PredicateChecker,
        standins: Standins | None = None,
        guard: UsageGuard | None = None,
    ):
        self.snapshot = snapshot
        self.checker = checker
        self.guard = guard
        # Set when the last guarded move failed only because of the guard: a destination exists
        # by requests, but the pod would push it over a QoS watermark.
        self.refused: Refusal | None = None
        # Kept by the planner across loops: a node waiting for budget asks for its pods' stand-ins
        # in every search.
        self.standins = standins if standins is not None else Standins()
        # `fill_on_paper`'s checker answers, (id(stand-in), slot) -> fits, while the snapshot is
        # at `_answers_version`: its nodes and pods are then what they were when asked (a revert
        # gives back the version with the content, and any change takes a version never used).
        self._answers: dict[tuple[int, int], bool] = {}
        self._answers_version = -1
        self._needs: dict[Any, tuple[tuple[str, int], ...]] = {}  # requests -> the non-zero ones
        # The design starts the pointer at the last node.
        valid = snapshot.valid.nonzero()[0]
        self.pointer = int(valid[-1]) if len(valid) else 0

    def standin(self, pod: Pod) -> Pod:
        return self.standins.of(pod)

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

    def move(
        self,
        uid: str,
        hint: str | None,
        skip: Container[str],
        *,
        guarded: bool = False,
        added: dict[str, dict[str, int]] | None = None,
    ) -> str | None:
        """Take the pod off its node and put it on a destination; None (pod removed, caller
        reverts) when there is none. The pod leaves first so it does not count against itself
        (anti-affinity with its own labels, spread constraints) while a new home is sought.
        `guarded`: refuse destinations the usage guard (if any) says the pod would overload.
        `added`: the requests of pods this trial put on paper (`move_on_paper`), which take room
        as if they were there (the caller makes sure the pod's constraints select none of them)."""
        source = self.snapshot.node_of(uid) if self.guard is not None else None
        pod = self.snapshot.remove_pod(uid)
        standin, guard = self.standin(pod), self.guard
        if added:
            skip = _Filled(
                skip, added, tuple((r, a) for r, a in pod.shape.requests.items if a > 0), self.snapshot
            )
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

    def move_on_paper(
        self, pod: Pod, hint: str | None, skip: Container[str], added: dict[str, dict[str, int]]
    ) -> str | None:
        """Where `move` would put the pod, without moving it: for a trial that is reverted
        whatever it finds (its node waits for budget), of a node-local pod (`is_node_local`) no
        constraint of a pod moved for real in the trial selects. `added` holds, per node, the
        requests of the pods the trial put there on paper. The snapshot and every index observing
        it stay untouched (no move, no undo record, nothing to revert), and the answer and the
        pointer are those `move` would give."""
        standin = self.standin(pod)
        self.refused = None
        need = tuple((r, a) for r, a in pod.shape.requests.items if a > 0)
        dest = self.destination(standin, hint, _Filled(skip, added, need, self.snapshot))
        if dest is not None:
            extra = added.get(dest)
            if extra is None:
                extra = added[dest] = {}
            for resource, amount in need:
                extra[resource] = extra.get(resource, 0) + amount
        return dest

    def pointer_node(self) -> str:
        """The name of the node at the search pointer (after `fill_on_paper` put pods there)."""
        node = self.snapshot.node_at(self.pointer)
        assert node is not None
        return node.name

    def fill_on_paper(
        self, pods: Sequence[Pod], skip: Container[str], added: dict[str, dict[str, int]]
    ) -> int:
        """How many of `pods`, first to last, `move_on_paper` would put on the pointer's node
        (each without a hint, the same conditions as `move_on_paper`'s), recorded in `added` as
        it would: the pods it takes until the first that does not fit there. That pod is the
        caller's to move on paper (it looks further and moves the pointer), and the pointer
        stays. The snapshot does not change while pods go on paper, so the checker's answer for
        a node is asked once per stand-in while the snapshot stays as it is (over every trial on
        paper between two changes), not once per pod; the requests are then the only thing that
        differs from one pod to the next (`_Filled`'s sums)."""
        snapshot = self.snapshot
        slot = self.pointer
        node = snapshot.node_at(slot) if 0 <= slot < len(snapshot.valid) else None
        if node is None or node.name in skip or not pods:
            return 0
        name = node.name
        columns = snapshot.columns.index
        alloc, used = snapshot.alloc, snapshot.used
        free: dict[str, int] = {}  # resource -> the pointer node's room, read once
        extra = added.get(name, {})
        if self._answers_version != snapshot.version:
            self._answers.clear()
            self._answers_version = snapshot.version
        answers = self._answers
        self.refused = None
        placed = 0
        needs = self._needs
        for pod in pods:
            requests = pod.shape.requests
            need = needs.get(requests)
            if need is None:
                need = needs[requests] = tuple((r, a) for r, a in requests.items if a > 0)
            for resource, amount in need:
                taken = extra.get(resource)
                if taken is None:
                    continue  # no paper pod there asks for it: the checker's answer stands
                room = free.get(resource)
                if room is None:
                    column = columns[resource]
                    room = free[resource] = int(alloc[slot, column]) - int(used[slot, column])
                if room - taken < amount:
                    return placed
            standin = self.standin(pod)
            fits = answers.get((id(standin), slot))
            if fits is None:
                fits = answers[id(standin), slot] = self.checker.fits(standin, name) is None
            if not fits:
                return placed
            for resource, amount in need:
                extra[resource] = extra.get(resource, 0) + amount
            if not placed:
                added[name] = extra
            placed += 1
        return placed

    def _exists(self, pod: Pod, skip: Container[str]) -> bool:
        """Whether some node would take `pod` by requests alone (the search pointer stays)."""
        return self.checker.find_node(pod, skip=skip, start=self.pointer) is not None

    def place(self, pod: Pod, skip: Container[str]) -> str | None:
        """Put a pod that is on no node (a recently evicted one) somewhere, or None."""
        pod = homeless(pod, self.standins.homeless)
        dest = self.destination(pod, None, skip)
        if dest is not None:
            self.snapshot.add_pod(pod, dest)
            if self.guard is not None:
                self.guard.moved(pod, None, dest)
        return dest
