"""Surge before evict (kubetide's own; `--surge-before-evict`, issue 24).

A pod behind a PodDisruptionBudget that allows no disruption even with all its pods healthy (one
replica with minAvailable 1, or minAvailable equal to the replicas) can never be evicted, so its
node can never be drained: no autoscaler moves it. When the pod belongs to a Deployment whose
RollingUpdate allows a surge (maxSurge at least 1 pod once rounded), kubetide can start the
replacement first instead: it restarts the Deployment as `kubectl rollout restart` does (the
restartedAt annotation in its pod template), the Deployment controller creates the new pod on an
untainted node, and removes the old one only once the new one is available. The budget is never
used, so its guarantee holds throughout.

Who is surged: `--surge-before-evict` turns it on for every such Deployment; the Deployment's
annotation `kubetide.io/surge-before-evict: "true"` opts it in with the flag off, `"false"` opts
it out with the flag on. StatefulSets, bare pods and Recreate Deployments are never surged, and the
plan says so. Nor is any Deployment when kubetide may not restart Deployments (its credentials
lack the permission: options.may_restart_deployments), opted in or not. The planner decides
(`plan_surge`); the actuator restarts each Deployment once and waits for a Deployment already
rolling out instead of restarting it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kubetide.autoscaler.scaledown.planning.drainability import WorkloadIndex
from kubetide.autoscaler.scaledown.planning.pdb import PdbTracker, is_healthy
from kubetide.model import Pod, Workload
from kubetide.model.scaled import resolve_fenceposts

SURGE_ANNOTATION = "kubetide.io/surge-before-evict"


@dataclass(frozen=True, slots=True)
class Surge:
    """The Deployments whose rollouts move a node's budget-pinned pods off it, replacement first."""

    deployments: tuple[tuple[str, str], ...]  # (namespace, name), in the order to restart them
    pods: frozenset[str]  # UIDs of the node's pods those rollouts replace: they are not evicted

    def words(self) -> str:
        names = ", ".join(f"{ns}/{name}" for ns, name in self.deployments)
        return (
            f"surge before evict: restarts Deployment {names} first, so each pinned pod's"
            " replacement is available on another node before the pod goes"
        )


@dataclass(frozen=True, slots=True)
class NoSurge:
    """Why the node's pinned pods cannot be surged (or that only --surge-before-evict, or the
    Deployment's annotation, is missing)."""

    why: str


def plan_surge(
    pods: Sequence[Pod],
    tracker: PdbTracker,
    workloads: WorkloadIndex | None,
    enabled: bool,
    may_restart: bool = True,
) -> Surge | NoSurge | None:
    """Whether the node's pods that a budget pins for good can all leave by a surge; None when
    no healthy pod is pinned (an unhealthy one refused while its budget is violated)."""
    pinned = [p for p in pods if is_healthy(p) and any(tracker.full[i] < 1 for i in tracker.matching(p))]
    if not pinned:
        return None
    deployments: list[tuple[str, str]] = []
    opted_in = True
    for pod in pinned:
        deployment = deployment_of(pod, workloads)
        why = _why_not(pod, deployment)
        if why is not None:
            return NoSurge(why)
        assert deployment is not None
        if not enabled and deployment.meta.annotations.get(SURGE_ANNOTATION) != "true":
            opted_in = False
        if (deployment.namespace, deployment.name) not in deployments:
            deployments.append((deployment.namespace, deployment.name))
    if not opted_in:
        return NoSurge(
            "with --surge-before-evict (or the Deployment annotated"
            f' {SURGE_ANNOTATION}: "true") it would go: its Deployment allows a surge'
        )
    if not may_restart:
        names = ", ".join(f"{ns}/{name}" for ns, name in deployments)
        return NoSurge(
            f"Deployment {names} is not surged: kubetide may not restart Deployments (patch"
            " deployments.apps; deploy/components/surge-before-evict grants it)"
        )
    return Surge(tuple(deployments), frozenset(p.uid for p in pinned))


def deployment_of(pod: Pod, workloads: WorkloadIndex | None) -> Workload | None:
    """The Deployment that owns the pod through its ReplicaSet, if the workloads show one."""
    ref = pod.meta.controller
    if ref is None or ref.kind != "ReplicaSet" or workloads is None:
        return None
    replicaset = workloads.get(("ReplicaSet", pod.namespace, ref.name))
    owner = replicaset.meta.controller if replicaset is not None else None
    if owner is None or owner.kind != "Deployment":
        return None
    return workloads.get(("Deployment", pod.namespace, owner.name))


def _why_not(pod: Pod, deployment: Workload | None) -> str | None:
    if deployment is None:
        ref = pod.meta.controller
        if ref is None:
            owner = "it has no controller"
        elif ref.kind == "ReplicaSet":
            owner = f"its ReplicaSet {ref.name} belongs to no Deployment"
        else:
            owner = f"its controller is a {ref.kind}"
        return f"pod {pod.key} is never surged: {owner}, and only Deployments start a replacement first"
    key = f"Deployment {deployment.namespace}/{deployment.name}"
    if deployment.meta.annotations.get(SURGE_ANNOTATION) == "false":
        return f'{key} opts out of surge before evict ({SURGE_ANNOTATION}: "false")'
    if deployment.strategy != "RollingUpdate":
        return f"{key} is never surged: its strategy is {deployment.strategy}"
    surge, _ = resolve_fenceposts(deployment.max_surge, deployment.max_unavailable, deployment.replicas or 0)
    if surge < 1:
        return f"{key} is never surged: its maxSurge {deployment.max_surge} rounds to 0 pods"
    return None
