"""The Deployment controller's rollout arithmetic, as pure functions (sim/deployment.py acts on it).

What kube-controller-manager's deployment controller computes (pkg/controller/deployment,
util/deployment_util.go), without the objects around it:

- `resolve_fenceposts` (model/scaled.py, shared with surge-before-evict): maxSurge and
  maxUnavailable of a RollingUpdate from ints or percentages of the Deployment's replicas, maxSurge
  rounded up and maxUnavailable down. When both come to 0 (a small Deployment with percentages),
  maxUnavailable becomes 1, as upstream does, so the rollout can move at all. Both given as 0 is
  refused when the manifest is read (model/workloads.py).
- `new_replicaset_replicas`: how far the new ReplicaSet may grow now: up to replicas + maxSurge
  pods in all, never past replicas.
- `old_replicaset_scale_down`: how far the old ReplicaSets may shrink now: unhealthy pods first
  (oldest ReplicaSet first), then available ones down to replicas - maxUnavailable available pods.
- `RolloutStatus`: the Deployment status fields a caller reads to tell "rolling out" from
  "settled", with `kubectl rollout status`'s verdict (model/workloads.py's `rollout_verdict`,
  which decision code applies to `ClusterView.workloads()` as `rolling_out(workload)`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kubetide.model.scaled import resolve_fenceposts
from kubetide.model.workloads import rollout_verdict


def max_unavailable(strategy: str, max_surge: int | str, max_unavailable_: int | str, replicas: int) -> int:
    """The most pods that may be unavailable during a rollout (upstream's MaxUnavailable): 0 for
    Recreate or no replicas, never more than the replicas."""
    if strategy != "RollingUpdate" or replicas == 0:
        return 0
    _, unavailable = resolve_fenceposts(max_surge, max_unavailable_, replicas)
    return min(unavailable, replicas)


def new_replicaset_replicas(replicas: int, surge: int, current_pods: int, new_replicas: int) -> int:
    """The new ReplicaSet's replicas after one sync (NewRSNewReplicas for RollingUpdate).

    `current_pods`: the pods of all the Deployment's ReplicaSets; `new_replicas`: the new one's
    replicas now."""
    if new_replicas >= replicas:
        return replicas
    room = replicas + surge - current_pods
    if room <= 0:
        return new_replicas
    return new_replicas + min(room, replicas - new_replicas)


@dataclass(frozen=True, slots=True)
class OldReplicaSet:
    """What the scale-down of an old ReplicaSet reads: its replicas and available pods."""

    replicas: int
    available: int


def old_replicaset_scale_down(
    replicas: int,
    unavailable: int,
    old: Sequence[OldReplicaSet],
    all_pods: int,
    available_pods: int,
    new_unavailable: int,
) -> list[int]:
    """Each old ReplicaSet's replicas after one sync (reconcileOldReplicaSets), `old` oldest first.

    `all_pods`: the pods of every ReplicaSet of the Deployment; `available_pods`: the available
    ones among them; `new_unavailable`: the new ReplicaSet's replicas that are not available."""
    sizes = [rs.replicas for rs in old]
    if sum(sizes) == 0:
        return sizes
    min_available = replicas - unavailable
    budget = all_pods - min_available - new_unavailable
    if budget <= 0:
        return sizes
    # Unhealthy pods first: they cost no availability (cleanupUnhealthyReplicas).
    cleaned = 0
    for index, rs in enumerate(old):
        if cleaned >= budget:
            break
        unhealthy = sizes[index] - rs.available
        if unhealthy <= 0:
            continue
        cut = min(unhealthy, budget - cleaned)
        sizes[index] -= cut
        cleaned += cut
    # Then available pods, down to min_available (scaleDownOldReplicaSetsForRollingUpdate).
    excess = available_pods - min_available
    for index in range(len(old)):
        if excess <= 0:
            break
        cut = min(sizes[index], excess)
        sizes[index] -= cut
        excess -= cut
    return sizes


@dataclass(frozen=True, slots=True)
class RolloutStatus:
    """A Deployment's status as the controller reports it, counted from its pods now.

    `replicas`: active pods of all its ReplicaSets; `updated`: active pods of the ReplicaSet with
    the current template; `ready`, `available` (Ready for minReadySeconds): of all its pods."""

    spec_replicas: int
    generation: int
    observed_generation: int
    replicas: int
    updated: int
    ready: int
    available: int

    @property
    def unavailable(self) -> int:
        return max(0, self.spec_replicas - self.available)

    @property
    def done(self) -> bool:
        return rollout_message(self)[0]

    @property
    def rolling_out(self) -> bool:
        """A change is still being rolled out (the opposite of settled)."""
        return not self.done

    @property
    def message(self) -> str:
        return rollout_message(self)[1]

    def as_dict(self) -> dict[str, int]:
        """The Deployment status fields, with their API names."""
        return {
            "observedGeneration": self.observed_generation,
            "replicas": self.replicas,
            "updatedReplicas": self.updated,
            "readyReplicas": self.ready,
            "availableReplicas": self.available,
            "unavailableReplicas": self.unavailable,
        }


def rollout_message(status: RolloutStatus) -> tuple[bool, str]:
    """(done, message) as `kubectl rollout status` decides it (DeploymentStatusViewer)."""
    return rollout_verdict(
        status.generation,
        status.observed_generation,
        status.spec_replicas,
        status.replicas,
        status.updated,
        status.available,
    )
