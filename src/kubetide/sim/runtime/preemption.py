"""kube-scheduler's DefaultPreemption, in essence, for the simulated scheduler.

A pending pod that fits no node may evict pods of lower priority: on each node, all of them are
taken away in a fork of the snapshot; if the pod then fits, victims are given back one at a time
(pods whose PodDisruptionBudget has no disruption left first, then the most important) as long
as the pod still fits, and the rest are the node's victims. The node is chosen as kube-scheduler's
pickOneNodeForPreemption does: fewest PDB violations, then the lowest highest victim priority, the
lowest sum of victim priorities, the fewest victims, then node order. Victims are deleted with
graceful termination and the preemptor is nominated to the node (status.nominatedNodeName, kept
here: the Pod model has no such field); it binds when room is made.

A pod waiting on its nomination does not preempt again while lower-priority pods on its node are
still terminating (kube-scheduler's PodEligibleToPreemptOthers), and is not reported
Unschedulable meanwhile: that stands in for the Cluster Autoscaler's rule that a pod with a
nominatedNodeName needs no scale-up.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from kubetide.model import Pod
from kubetide.scheduling import PredicateChecker
from kubetide.sim.runtime.disruption import Budgets
from kubetide.sim.runtime.events import EventLog
from kubetide.sim.runtime.kubelet import Kubelets
from kubetide.sim.runtime.world import World, WorldObserver

NEVER = "Never"  # PriorityClass preemptionPolicy that forbids preempting


@dataclass(frozen=True, slots=True)
class Candidate:
    node: str
    victims: tuple[Pod, ...]
    pdb_violations: int

    def rank(self, position: int) -> tuple[int, int, int, int, int]:
        priorities = [v.priority for v in self.victims]
        return (self.pdb_violations, max(priorities), sum(priorities), len(priorities), position)


class Preemption(WorldObserver):
    """Finds and carries out preemptions for the simulated scheduler; remembers nominations."""

    def __init__(
        self, world: World, checker: PredicateChecker, kubelets: Kubelets, budgets: Budgets, log: EventLog
    ):
        self.world = world
        self.checker = checker
        self.kubelets = kubelets
        self.budgets = budgets
        self.log = log
        self.nominated: dict[str, str] = {}  # preemptor UID -> node (status.nominatedNodeName)
        self.preemptions = 0
        self.victims = 0
        # Bound pods per priority, so a cluster where nothing is of lower priority than a
        # pending pod (the usual case) costs a look at a few counters, not a scan of every pod.
        self._bound_priorities: Counter[int] = Counter()
        world.subscribe(self)

    # -- watches -------------------------------------------------------------------------------
    def pod_added(self, pod: Pod) -> None:
        if pod.node_name:
            self._bound_priorities[pod.priority] += 1

    def pod_bound(self, pod: Pod) -> None:
        self._bound_priorities[pod.priority] += 1
        self.nominated.pop(pod.uid, None)

    def pod_removed(self, pod: Pod) -> None:
        if pod.node_name:
            self._bound_priorities[pod.priority] -= 1
        self.nominated.pop(pod.uid, None)

    # -- decisions -----------------------------------------------------------------------------
    def may_preempt(self, pod: Pod) -> bool:
        """Some bound pod has a lower priority, and the pod's class lets it preempt."""
        if not any(count and priority < pod.priority for priority, count in self._bound_priorities.items()):
            return False
        pc = self.world.priority_classes.get(pod.priority_class_name)
        return pc is None or pc.preemption_policy != NEVER

    def waiting(self, pod: Pod) -> bool:
        """Nominated, and lower-priority pods on the nominated node are still terminating."""
        node = self.nominated.get(pod.uid)
        if node is None or node not in self.world.snapshot:
            return False
        return any(
            p.is_terminating and p.priority < pod.priority for p in self.world.snapshot.pods_on(node).values()
        )

    def preempt(self, pod: Pod) -> str | None:
        """Evict the victims for `pod` on the best candidate node; returns that node, or None."""
        candidates = [c for c in (self._candidate(pod, n) for n in self._nodes_with_lower(pod)) if c]
        if not candidates:
            return None
        chosen = min(enumerate(candidates), key=lambda item: item[1].rank(item[0]))[1]
        for victim in chosen.victims:
            self.log.record(
                "Pod",
                victim.key,
                "Normal",
                "Preempted",
                f"Preempted by pod {pod.uid} on node {chosen.node}",
                "default-scheduler",
            )
            self.kubelets.delete(victim)
        self.nominated[pod.uid] = chosen.node
        self.preemptions += 1
        self.victims += len(chosen.victims)
        return chosen.node

    def _nodes_with_lower(self, pod: Pod) -> list[str]:
        snapshot = self.world.snapshot
        return [
            node.name
            for node in snapshot.nodes()
            if any(
                p.priority < pod.priority and not p.is_terminating
                for p in snapshot.pods_on(node.name).values()
            )
        ]

    def _candidate(self, pod: Pod, node: str) -> Candidate | None:
        snapshot, checker = self.world.snapshot, self.checker
        lower = [
            p for p in snapshot.pods_on(node).values() if p.priority < pod.priority and not p.is_terminating
        ]
        left = self._disruptions_left()
        protected = {p.uid for p in lower if self._violates(p, left)}
        snapshot.fork()
        try:
            for victim in lower:
                snapshot.remove_pod(victim.uid)
            if checker.fits(pod, node) is not None:
                return None
            # Give back what the pod can do without: PDB-protected pods first, then the most
            # important (kube-scheduler's reprieve order), so the victims are the cheapest set.
            victims = []
            for p in sorted(lower, key=lambda p: (p.uid not in protected, -p.priority, p.key)):
                snapshot.add_pod(p, node)
                if checker.fits(pod, node) is not None:
                    snapshot.remove_pod(p.uid)
                    victims.append(p)
        finally:
            snapshot.revert()
        violations = 0
        for victim in victims:
            if self._violates(victim, left):
                violations += 1
            for state in self.budgets.budgets_of(victim):
                left[state.pdb.key] -= 1
        return Candidate(node, tuple(victims), violations)

    def _disruptions_left(self) -> Counter[str]:
        left: Counter[str] = Counter()
        for state in self.budgets.states.values():
            left[state.pdb.key] = self.budgets.status(state).disruptions_allowed
        return left

    def _violates(self, pod: Pod, left: Counter[str]) -> bool:
        return any(left[state.pdb.key] <= 0 for state in self.budgets.budgets_of(pod))
