"""The Eviction API (POST pods/{name}/eviction) with the API server's PDB checks.

- A pod that is gone: 404 (NOT_FOUND).
- A pod that is already terminating, finished, or not yet running (phase Pending) is deleted
  without consulting budgets, as the API server does.
- A pod selected by more than one PDB: 500 (FAILED); the API server refuses to choose.
- A healthy pod (Ready, not terminating) needs disruptionsAllowed > 0 on its budget, else 429
  (BLOCKED_BY_PDB); an accepted eviction makes the pod unhealthy at once (deletionTimestamp), which
  is how the budget's count goes down, so two evictions cannot both take the last allowed slot.
- An unhealthy pod: with unhealthyPodEvictionPolicy AlwaysAllow it is always evictable; with
  IfHealthyBudget only while the budget is met (currentHealthy >= desiredHealthy).
Accepted evictions delete the pod gracefully with the requested grace period.
"""

from __future__ import annotations

from collections.abc import Callable

from kubetide.autoscaler.ports import EvictionOutcome
from kubetide.model import Pod
from kubetide.sim.runtime.disruption import Budgets, healthy
from kubetide.sim.runtime.kubelet import Kubelets
from kubetide.sim.runtime.world import World


class EvictionApi:
    def __init__(self, world: World, budgets: Budgets, kubelets: Kubelets):
        self.world = world
        self.budgets = budgets
        self.kubelets = kubelets
        self.accepted = 0
        self.refused = 0
        self.on_evicted: list[Callable[[Pod], None]] = []

    def evict(self, uid: str, grace_period_seconds: int | None = None) -> EvictionOutcome:
        pod = self.world.pod(uid)
        if pod is None:
            return EvictionOutcome.NOT_FOUND
        if not (pod.is_terminating or pod.is_terminal or pod.phase == "Pending"):
            outcome = self._check_budgets(pod)
            if outcome is not None:
                if outcome is EvictionOutcome.BLOCKED_BY_PDB:
                    self.refused += 1
                return outcome
        self.accepted += 1
        for hook in self.on_evicted:
            hook(pod)
        self.kubelets.delete(pod, grace_period_seconds)
        return EvictionOutcome.EVICTED

    def _check_budgets(self, pod: Pod) -> EvictionOutcome | None:
        budgets = self.budgets.budgets_of(pod)
        if not budgets:
            return None
        if len(budgets) > 1:
            return EvictionOutcome.FAILED  # "This pod has more than one PodDisruptionBudget"
        state = budgets[0]
        status = self.budgets.status(state)
        if not healthy(pod):
            if state.pdb.unhealthy_pod_eviction_policy == "AlwaysAllow":
                return None
            if status.current_healthy >= status.desired_healthy:
                return None
            return EvictionOutcome.BLOCKED_BY_PDB
        if status.disruptions_allowed <= 0:
            return EvictionOutcome.BLOCKED_BY_PDB
        return None
