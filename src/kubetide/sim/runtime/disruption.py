"""PodDisruptionBudgets: the disruption controller's status, kept incrementally.

For every PDB we keep the pods it selects, how many of them are healthy (Ready and not
terminating, as the disruption controller counts), and how many it selects per controller, so the
status (currentHealthy, desiredHealthy, expectedPods, disruptionsAllowed) is O(controllers) to
compute, however many pods the budget covers.

expectedPods follows the disruption controller: an integer minAvailable needs only the pod count;
a percentage or maxUnavailable needs the scale of every controller of the selected pods
(Deployment/ReplicaSet/StatefulSet replicas; a Deployment's ReplicaSets count as the Deployment,
once); pods with another kind of controller, or none, make
the budget unusable (disruptionsAllowed 0), as the real controller cannot find their scale.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from kubetide.model import Pod, PodDisruptionBudget
from kubetide.sim.runtime.world import World, WorldObserver

_SCALABLE = ("ReplicaSet", "StatefulSet")


@dataclass(slots=True)
class BudgetState:
    pdb: PodDisruptionBudget
    pods: dict[str, None]  # selected pod UIDs
    healthy: int = 0
    controllers: dict[tuple[str, str, str], int] = dataclasses.field(
        default_factory=dict
    )  # (kind, ns/name, uid)
    bare: int = 0  # selected pods without a controller


@dataclass(frozen=True, slots=True)
class BudgetStatus:
    current_healthy: int
    desired_healthy: int
    expected_pods: int
    disruptions_allowed: int


def healthy(pod: Pod) -> bool:
    return pod.ready and not pod.is_terminating and not pod.is_terminal


class Budgets(WorldObserver):
    def __init__(self, world: World):
        self.world = world
        self.states: dict[str, BudgetState] = {}
        self._of_pod: dict[str, list[BudgetState]] = {}  # pod UID -> budgets selecting it
        # Controller UID -> budgets selecting its pods. Pods stamped from one template share their
        # labels (StatefulSets add per-pod ones, so theirs are matched pod by pod).
        self._of_owner: dict[str, list[BudgetState]] = {}
        # id(state) -> (its PDB, the status, the PDB with that status): see `with_status`.
        self._with_status: dict[int, tuple[PodDisruptionBudget, BudgetStatus, PodDisruptionBudget]] = {}
        world.subscribe(self)

    # -- objects ---------------------------------------------------------------------------
    def apply(self, pdb: PodDisruptionBudget) -> None:
        self.delete(pdb.key)
        self._of_owner.clear()
        self.world.pdbs[pdb.key] = pdb
        state = BudgetState(pdb, {})
        self.states[pdb.key] = state
        for pod in list(self.world.pods()):
            if pdb.matches(pod):
                self._add(state, pod)

    def delete(self, key: str) -> None:
        state = self.states.pop(key, None)
        self.world.pdbs.pop(key, None)
        self._of_owner.clear()
        if state is None:
            return
        self._with_status.pop(id(state), None)
        for uid in state.pods:
            budgets = self._of_pod.get(uid)
            if budgets is not None:
                budgets.remove(state)
                if not budgets:
                    del self._of_pod[uid]

    def budgets_of(self, pod: Pod) -> list[BudgetState]:
        return self._of_pod.get(pod.uid, [])

    # -- status ------------------------------------------------------------------------------
    def status(self, state: BudgetState) -> BudgetStatus:
        pdb = state.pdb
        matched = len(state.pods)
        if isinstance(pdb.min_available, int) and pdb.max_unavailable is None:
            expected = matched
            desired = pdb.min_available
            usable = True
        else:
            usable = state.bare == 0
            scales: dict[str, int] = {}  # top controller -> its scale, each counted once
            for (kind, key, _uid), count in state.controllers.items():
                if count <= 0:
                    continue
                found = self._scale(kind, key)
                if found is None:
                    usable = False
                else:
                    scales[found[0]] = found[1]
            expected = sum(scales.values())
            desired = (
                pdb.desired_healthy_for(expected)
                if (pdb.min_available is not None or pdb.max_unavailable is not None)
                else 0
            )
        allowed = max(0, state.healthy - desired) if usable and expected > 0 else 0
        return BudgetStatus(state.healthy, desired, expected, allowed)

    def _scale(self, kind: str, key: str) -> tuple[str, int] | None:
        """(the controller whose scale counts, its replicas) for pods of `kind` `key`. A
        ReplicaSet a Deployment controls counts as that Deployment, as the disruption
        controller's finders do: mid-rollout its ReplicaSets together hold more than its
        replicas, and the budget expects the replicas."""
        if kind not in _SCALABLE:
            return None
        workload = self.world.workloads.get(f"{kind}/{key}")
        if workload is None:
            return None
        owner = workload.meta.controller
        if kind == "ReplicaSet" and owner is not None and owner.kind == "Deployment":
            workload = self.world.workloads.get(f"Deployment/{workload.namespace}/{owner.name}")
            if workload is None:
                return None
        return workload.key, workload.replicas or 0

    def with_status(self, state: BudgetState) -> PodDisruptionBudget:
        status = self.status(state)
        # The same object while the status holds: the autoscaler asks every loop, and its planner
        # compares PDBs to tell a quiet loop (identity is the cheap case of that comparison).
        last = self._with_status.get(id(state))
        if last is not None and last[0] is state.pdb and last[1] == status:
            return last[2]
        current = dataclasses.replace(
            state.pdb,
            disruptions_allowed=status.disruptions_allowed,
            current_healthy=status.current_healthy,
            desired_healthy=status.desired_healthy,
            expected_pods=status.expected_pods,
        )
        self._with_status[id(state)] = (state.pdb, status, current)
        return current

    # -- pod index ---------------------------------------------------------------------------
    def _add(self, state: BudgetState, pod: Pod) -> None:
        state.pods[pod.uid] = None
        self._of_pod.setdefault(pod.uid, []).append(state)
        if healthy(pod):
            state.healthy += 1
        ref = pod.meta.controller
        if ref is None:
            state.bare += 1
        else:
            key = (ref.kind, f"{pod.namespace}/{ref.name}", ref.uid)
            state.controllers[key] = state.controllers.get(key, 0) + 1

    def pod_added(self, pod: Pod) -> None:
        if not self.states:
            return
        ref = pod.meta.controller
        if ref is None or ref.kind == "StatefulSet":
            matching = [state for state in self.states.values() if state.pdb.matches(pod)]
        else:
            cached = self._of_owner.get(ref.uid)
            if cached is None:
                cached = self._of_owner[ref.uid] = [s for s in self.states.values() if s.pdb.matches(pod)]
            matching = cached
        for state in matching:
            self._add(state, pod)

    def pod_updated(self, old: Pod, new: Pod) -> None:
        budgets = self._of_pod.get(new.uid)
        if budgets:
            delta = healthy(new) - healthy(old)
            if delta:
                for state in budgets:
                    state.healthy += delta

    def pod_removed(self, pod: Pod) -> None:
        budgets = self._of_pod.pop(pod.uid, None)
        if not budgets:
            return
        was_healthy = healthy(pod)
        ref = pod.meta.controller
        for state in budgets:
            del state.pods[pod.uid]
            if was_healthy:
                state.healthy -= 1
            if ref is None:
                state.bare -= 1
            else:
                key = (ref.kind, f"{pod.namespace}/{ref.name}", ref.uid)
                count = state.controllers[key] - 1
                if count:
                    state.controllers[key] = count
                else:
                    del state.controllers[key]
