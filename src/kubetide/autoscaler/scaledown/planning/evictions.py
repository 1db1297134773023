"""recent_evictions: pods we evicted whose replacements may not exist yet.

Between an eviction and the controller creating (and the scheduler binding) a replacement, the
cluster looks as if the pod's capacity were free. Without a memory of it, the next planner update
would happily hand that capacity to another drain and the replacement would end up pending. So
evicted pods are remembered for recent-evictions-ttl and put back into the simulated cluster
before the candidates are chosen, unless their owner already has all its replicas again.

The owner check compares the controller's target replicas with what it has now (bound, not
terminating pods it owns, capped by its status.replicas when that is lower) and injects at most
`target - current` of its evicted pods. A pod without a known owner is always injected. (The
Cluster Autoscaler has this list but leaves the re-injection effectively off; kubetide keeps it.)

The same list paces drains (kubetide's own, not CA's): a workload with a recent eviction and fewer
Ready pods than its target replicas is *recovering*, its displaced pod not yet made good. A drain
evicts no pod of a recovering workload that a PodDisruptionBudget covers, nor of an OrderedReady
StatefulSet (the budget counts the replacement as unavailable already; evicting it while it starts,
which the eviction API allows since it is not Ready, would keep the workload short for another
start-up), and the planner counts its pods as used budget (pdb.py): their nodes wait.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Container, Iterable, Mapping
from dataclasses import dataclass

from kubetide.autoscaler.scaledown.planning.placement import PodMover
from kubetide.autoscaler.scaledown.planning.update import Update
from kubetide.model import OwnerReference, Pod, Workload
from kubetide.snapshot import ClusterSnapshot

# (controller kind, namespace, controller name)
OwnerKey = tuple[str, str, str]


@dataclass(frozen=True, slots=True)
class RecentEviction:
    pod: Pod
    owner: OwnerReference | None
    at: float


class RecentEvictions:
    def __init__(self, ttl: float):
        self.ttl = ttl
        self.by_uid: dict[str, RecentEviction] = {}
        # Every owner's bound not-terminating pods (and Ready ones) over the nodes, summed node by
        # node: the owner check runs every loop while evictions are recent, and counting every
        # pod each time was the loop's largest cost during drains.
        self._owned = OwnedPods()

    def __len__(self) -> int:
        return len(self.by_uid)

    def record(self, pod: Pod, now: float) -> None:
        self.by_uid[pod.uid] = RecentEviction(pod, pod.controller, now)

    def expire(self, now: float) -> None:
        self.by_uid = {uid: e for uid, e in self.by_uid.items() if now - e.at < self.ttl}

    def needing_homes(
        self, snapshot: ClusterSnapshot, workloads: Mapping[tuple[str, str, str], Workload] | None
    ) -> list[Pod]:
        """The evicted pods to inject, oldest eviction first."""
        result = []
        left: dict[tuple[str, str, str], int] = {}
        bound: Mapping[OwnerKey, int] | None = None  # per owner, its bound pods
        for eviction in sorted(self.by_uid.values(), key=lambda e: (e.at, e.pod.key)):
            pod = eviction.pod
            if snapshot.has_pod(pod.uid):
                continue  # still terminating where it was: it holds its own place
            owner = eviction.owner
            key = workload = None
            if owner is not None and workloads is not None:
                key = (owner.kind, pod.namespace, owner.name)
                workload = workloads.get(key)
            if key is not None and workload is not None and workload.replicas is not None:
                if key not in left:
                    if bound is None:
                        bound = self._owned.totals(snapshot)[0]
                    current = bound.get(key, 0)
                    if workload.status_replicas is not None:
                        current = min(current, workload.status_replicas)
                    left[key] = max(0, workload.replicas - current)
                if left[key] <= 0:
                    continue
                left[key] -= 1
            result.append(pod)
        return result

    def inject(
        self,
        snapshot: ClusterSnapshot,
        mover: PodMover,
        skip: Container[str],
        workloads: Mapping[tuple[str, str, str], Workload] | None,
    ) -> tuple[list[tuple[Pod, str]], Pod | None]:
        """Place the pods needing homes into the snapshot; stop at the first that fits nowhere.

        Returns (pod, node) for the placed ones, and the pod that did not fit (or None).
        """
        placed: list[tuple[Pod, str]] = []
        for pod in self.needing_homes(snapshot, workloads):
            dest = mover.place(pod, skip)
            if dest is None:
                return placed, pod
            placed.append((pod, dest))
        return placed, None

    def recovering(
        self, snapshot: ClusterSnapshot, workloads: Mapping[tuple[str, str, str], Workload] | None
    ) -> frozenset[OwnerKey]:
        """The owners of recently evicted pods that have fewer Ready pods than their target
        replicas: a displaced pod of theirs is not made good yet."""
        return self._short(snapshot, workloads, ready=True)

    def unplaced(
        self, snapshot: ClusterSnapshot, workloads: Mapping[tuple[str, str, str], Workload] | None
    ) -> frozenset[OwnerKey]:
        """The owners of recently evicted pods that have fewer pods bound to a node (and not
        terminating) than their target replicas: the replacement of a displaced pod of theirs has
        no node yet, or (a StatefulSet's, created once its pod is gone) does not exist yet."""
        return self._short(snapshot, workloads, ready=False)

    def _short(
        self,
        snapshot: ClusterSnapshot,
        workloads: Mapping[tuple[str, str, str], Workload] | None,
        *,
        ready: bool,
    ) -> frozenset[OwnerKey]:
        if not self.by_uid or workloads is None:
            return frozenset()
        bound, ready_pods = self._owned.totals(snapshot)
        totals = ready_pods if ready else bound
        result = set()
        for key in self._owners():
            workload = workloads.get(key)
            if workload is None or workload.replicas is None:
                continue
            if totals.get(key, 0) < workload.replicas:
                result.add(key)
        return frozenset(result)

    def _owners(self) -> set[OwnerKey]:
        return {(e.owner.kind, e.pod.namespace, e.owner.name) for e in self.by_uid.values() if e.owner}


class OwnedPods:
    """Per owner, its bound pods not terminating and of those the Ready ones, over a snapshot's
    nodes: kept as sums of per-node counts, each node's under its snapshot stamp, so a loop
    counts the pods of the nodes that changed (added or removed too), and reads no node when the
    snapshot's version is the one it last saw."""

    def __init__(self) -> None:
        # Node -> (its stamp, its bound counts, its Ready counts) as summed in the totals.
        self._nodes: dict[str, tuple[int, Counter[OwnerKey], Counter[OwnerKey]]] = {}
        self._bound: Counter[OwnerKey] = Counter()
        self._ready: Counter[OwnerKey] = Counter()
        self._seen: tuple[ClusterSnapshot, int] | None = None

    def totals(self, snapshot: ClusterSnapshot) -> tuple[Mapping[OwnerKey, int], Mapping[OwnerKey, int]]:
        """(bound, Ready) per owner over `snapshot`'s nodes now (an owner without pods may be
        missing or 0)."""
        seen = self._seen
        if seen is None or seen[0] is not snapshot or seen[1] != snapshot.version:
            self._sync(snapshot)
            self._seen = (snapshot, snapshot.version)
        return self._bound, self._ready

    def _sync(self, snapshot: ClusterSnapshot) -> None:
        nodes, bound, ready = self._nodes, self._bound, self._ready
        for name, stamp, pods in snapshot.pods_by_node():
            old = nodes.get(name)
            if old is not None and old[0] == stamp:
                continue
            if old is not None:
                bound.subtract(old[1])
                ready.subtract(old[2])
            counts, ready_counts = _owned_pods(pods.values())
            bound.update(counts)
            ready.update(ready_counts)
            nodes[name] = (stamp, counts, ready_counts)
        if len(nodes) > len(snapshot):  # nodes gone since
            for name in [name for name in nodes if name not in snapshot]:
                _, counts, ready_counts = nodes.pop(name)
                bound.subtract(counts)
                ready.subtract(ready_counts)


def owner_key(pod: Pod) -> OwnerKey | None:
    ref = pod.controller
    return (ref.kind, pod.namespace, ref.name) if ref is not None else None


def _owned_pods(pods: Iterable[Pod]) -> tuple[Counter[OwnerKey], Counter[OwnerKey]]:
    """Per owner: its bound pods not terminating, and of those the Ready ones."""
    counts: Counter[OwnerKey] = Counter()
    ready: Counter[OwnerKey] = Counter()
    for pod in pods:
        key = owner_key(pod)
        if key is not None and not pod.is_terminating:
            counts[key] += 1
            if pod.ready:
                ready[key] += 1
    return counts, ready


def inject_recent_evictions(u: Update, recent: RecentEvictions) -> str | None:
    """Step 2 of UpdateUnneededNodes: recently evicted pods whose owners are still short of
    replicas go back into the simulated cluster. None when all fit, else why not: as with the
    deleted set, no new candidates are added this loop then."""
    placed, unfit = recent.inject(u.snapshot, u.mover, u.skip, u.ctx.workloads)
    u.plan.injected = {pod.key: dest for pod, dest in placed}
    for pod, dest in placed:
        u.receive(dest, pod, None)
    if unfit is not None:
        return f"recently evicted pod {unfit.key} has no replacement yet and fits on no node"
    return None
