"""Deployment and ReplicaSet controllers.

A Deployment owns one ReplicaSet (`<name>-<template hash>`, labelled pod-template-hash), which owns
the pods, as in Kubernetes; rollouts of a changed template are not simulated (an apply changes the
replica count and the template new pods are stamped from). The ReplicaSet controller keeps
`replicas` active pods: a pod that is deleted, evicted or lost is replaced after the controller
delay (terminating pods no longer count, so replacements start while they wind down). On
scale-down it picks victims with the workload ranking (KEP-2185, logarithmic age buckets unless the
scenario says otherwise), passing the pods of every ReplicaSet with the same controller as related
pods, as upstream's getIndirectlyRelatedPods does (the rank criterion counts them per node).
"""

from __future__ import annotations

import dataclasses
import hashlib

from kubetide.model import ObjectMeta, OwnerReference, Pod, PodTemplate, Workload
from kubetide.model.selectors import LabelSelector
from kubetide.sim.controller import Controller
from kubetide.sim.engine import Engine
from kubetide.sim.kubelet import Kubelets
from kubetide.sim.scenario import ClusterSpec
from kubetide.sim.world import World
from kubetide.workloads import DeletionAgeRatio, pods_to_delete

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

    # -- objects -----------------------------------------------------------------------------
    def apply(self, workload: Workload) -> None:
        """Create or update a Deployment or ReplicaSet."""
        if workload.kind == "Deployment":
            self.world.workloads[workload.key] = workload
            rs = self._replicaset_for(workload)
            existing = self.world.workloads.get(rs.key)
            if existing is not None:
                rs = dataclasses.replace(existing, replicas=workload.replicas, template=rs.template)
            self.world.workloads[rs.key] = rs
            self.enqueue(rs.key)
        else:
            old = self.world.workloads.get(workload.key)
            if old is not None:
                workload = dataclasses.replace(workload, meta=old.meta)
            self.world.workloads[workload.key] = workload
            self.enqueue(workload.key)

    def scale(self, key: str, replicas: int) -> None:
        workload = self.world.workloads[key]
        self.world.workloads[key] = dataclasses.replace(workload, replicas=replicas)
        if workload.kind == "Deployment":
            rs_key = self._replicaset_key(workload)
            rs = self.world.workloads[rs_key]
            self.world.workloads[rs_key] = dataclasses.replace(rs, replicas=replicas)
            self.enqueue(rs_key)
        else:
            self.enqueue(key)

    def delete(self, key: str) -> None:
        """Delete with cascading (background) garbage collection of the pods."""
        workload = self.world.workloads.pop(key, None)
        if workload is None:
            return
        if workload.kind == "Deployment":
            rs = self.world.workloads.pop(self._replicaset_key(workload), None)
            if rs is None:
                return
            workload = rs
        self.delete_pods(workload)

    def _replicaset_key(self, deployment: Workload) -> str:
        return f"ReplicaSet/{deployment.namespace}/{deployment.name}-{_template_hash(deployment)}"

    def _replicaset_for(self, deployment: Workload) -> Workload:
        digest = _template_hash(deployment)
        name = f"{deployment.name}-{digest}"
        labels = {**deployment.template.labels, TEMPLATE_HASH_LABEL: digest}
        prototype = deployment.template.prototype
        template = PodTemplate(
            dataclasses.replace(prototype, meta=dataclasses.replace(prototype.meta, labels=labels))
        )
        selector = LabelSelector(
            tuple(sorted({**dict(deployment.selector.match_labels), TEMPLATE_HASH_LABEL: digest}.items())),
            deployment.selector.match_expressions,
        )
        meta = ObjectMeta(
            name=name,
            namespace=deployment.namespace,
            uid=self.world.new_uid(),
            labels=labels,
            owner_references=(
                OwnerReference("Deployment", deployment.name, deployment.meta.uid, controller=True),
            ),
            creation_timestamp=self.engine.now(),
        )
        return Workload("ReplicaSet", meta, selector, template, replicas=deployment.replicas)

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
        which upstream gives no related pods (every rank 0)."""
        ref = rs.meta.controller
        if ref is None:
            return None
        pods: list[Pod] = []
        for other in self.world.workloads.values():
            owner = other.meta.controller
            if (
                other.kind == "ReplicaSet"
                and owner is not None
                and owner.uid == ref.uid
                and other.namespace == rs.namespace
            ):
                pods.extend(self.world.pods_of(other.meta.uid))
        return pods


def _template_hash(deployment: Workload) -> str:
    digest = hashlib.sha1(f"{deployment.meta.uid}/template".encode()).hexdigest()
    return "".join("bcdfghjklmnpqrstvwxz2456789"[int(digest[i : i + 2], 16) % 27] for i in range(0, 20, 2))
