"""The ReplicaSet controller (Deployments, which own ReplicaSets, are in sim/deployment.py).

It keeps `replicas` active pods: a pod that is deleted, evicted or lost is replaced after the
controller delay (terminating pods no longer count, so replacements start while they wind down). On
scale-down it picks victims with the workload ranking (KEP-2185, logarithmic age buckets unless the
scenario says otherwise), passing the pods of every ReplicaSet with the same controller as related
pods, as upstream's getIndirectlyRelatedPods does (the rank criterion counts them per node).
"""

from __future__ import annotations

from kubetide.model import Pod, Workload
from kubetide.sim.runtime.controller import Controller
from kubetide.sim.runtime.engine import Engine
from kubetide.sim.runtime.kubelet import Kubelets
from kubetide.sim.runtime.world import World
from kubetide.sim.spec.scenario import ClusterSpec
from kubetide.workloads import DeletionAgeRatio, pods_to_delete
from kubetide.workloads.owners import controller_identity

TEMPLATE_HASH_LABEL = "pod-template-hash"
BURST_REPLICAS = 500  # the ReplicaSet controller's per-sync creation limit


class ReplicaSets(Controller):
    kind = "ReplicaSet"

    def __init__(
        self, engine: Engine, world: World, cluster: ClusterSpec, kubelets: Kubelets, logarithmic: bool
    ):
        super().__init__(engine, world, cluster, kubelets)
        self.logarithmic = logarithmic
        self.deleted = 0
        self.age_ratio = DeletionAgeRatio()

    # -- reconcile ---------------------------------------------------------------------------
    def sync(self, rs: Workload) -> None:
        diff = (rs.replicas or 0) - self.world.active.get(rs.meta.uid, 0)
        if diff > 0:
            for _ in range(min(diff, BURST_REPLICAS)):
                self.create_pod(rs, self.generate_name(rs.name))
            if diff > BURST_REPLICAS:
                self.enqueue(rs.key)
        elif diff < 0:
            active = self.active_pods(rs)
            now = self.engine.now()
            victims = pods_to_delete(
                active,
                -diff,
                now,
                self.related_pods(rs),
                logarithmic=self.logarithmic,
                owner_has_controller=rs.meta.controller is not None,
                metric=self.age_ratio,
            )
            for pod in victims:
                self.deleted += 1
                self.kubelets.delete(pod)

    def related_pods(self, rs: Workload) -> list[Pod] | None:
        """Pods of every ReplicaSet owned by the same controller as `rs` (itself included), as
        upstream's getIndirectlyRelatedPods lists them; None for a ReplicaSet without a controller,
        which upstream gives no related pods (every rank 0). Siblings are found by the controller's
        UID, whatever its kind (a Deployment, an Argo Rollout, ...), as
        getReplicaSetsWithSameController does; a hand-written reference without a UID by kind and
        name in the namespace (two such references to different owners are not siblings)."""
        ref = rs.meta.controller
        if ref is None:
            return None
        identity = controller_identity(rs.namespace, ref)
        pods: list[Pod] = []
        for other in self.world.workloads.values():
            owner = other.meta.controller
            if (
                other.kind == "ReplicaSet"
                and owner is not None
                and controller_identity(other.namespace, owner) == identity
            ):
                pods.extend(self.world.pods_of(other.meta.uid))
        return pods
