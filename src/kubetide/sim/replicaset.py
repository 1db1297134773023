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
REVISION_ANNOTATION = "deployment.kubernetes.io/revision"
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
        self._current: dict[str, str] = {}  # Deployment key -> the adopted ReplicaSet it scales

    # -- objects -----------------------------------------------------------------------------
    def apply(self, workload: Workload) -> None:
        """Create or update a Deployment or ReplicaSet.

        A Deployment created while ReplicaSets it owns exist (a cluster dump, applied ReplicaSets
        first) adopts the newest of them as the one it scales, with the replicas and pods it has;
        otherwise it gets a ReplicaSet of its own."""
        if workload.kind == "Deployment":
            adopted = None if workload.key in self.world.workloads else self._newest_owned(workload)
            self.world.workloads[workload.key] = workload
            if adopted is not None:
                self._current[workload.key] = adopted.key
                return
            rs = self._replicaset_for(workload)
            existing = self.world.workloads.get(self._replicaset_key(workload))
            if existing is not None:
                template = rs.template if existing.key == rs.key else existing.template
                rs = dataclasses.replace(existing, replicas=workload.replicas, template=template)
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
        """Delete with cascading (background) garbage collection: a Deployment's ReplicaSets
        (every one it owns) and their pods."""
        workload = self.world.workloads.pop(key, None)
        if workload is None:
            return
        if workload.kind != "Deployment":
            self.delete_pods(workload)
            return
        self._current.pop(key, None)
        for rs in self._owned(workload):
            del self.world.workloads[rs.key]
            self.delete_pods(rs)

    def _replicaset_key(self, deployment: Workload) -> str:
        """The ReplicaSet a Deployment scales: the one it adopted, or its own."""
        adopted = self._current.get(deployment.key)
        if adopted is not None:
            return adopted
        return f"ReplicaSet/{deployment.namespace}/{deployment.name}-{_template_hash(deployment)}"

    def _owned(self, deployment: Workload) -> list[Workload]:
        """The ReplicaSets whose controller is this Deployment (by UID, or by name where a
        hand-written ReplicaSet's owner reference has no UID)."""
        owned = []
        for rs in self.world.workloads.values():
            ref = rs.meta.controller
            if (
                rs.kind == "ReplicaSet"
                and rs.namespace == deployment.namespace
                and ref is not None
                and ref.kind == "Deployment"
                and ref.name == deployment.name
                and ref.uid in ("", deployment.meta.uid)
            ):
                owned.append(rs)
        return owned

    def _newest_owned(self, deployment: Workload) -> Workload | None:
        """The Deployment's current ReplicaSet among those it owns, as the Deployment controller
        finds it: one whose pod template is the Deployment's (pod-template-hash aside), the
        highest revision first. None: the Deployment would roll out a new one. Templates compare
        as the simulator models pods (requests, placement, priority...): a new image alone is
        the same template here."""
        current = [rs for rs in self._owned(deployment) if _same_template(rs, deployment)]
        if not current:
            return None
        return max(current, key=lambda rs: (_revision(rs), rs.meta.creation_timestamp or 0.0, rs.name))

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


def _same_template(rs: Workload, deployment: Workload) -> bool:
    prototype = rs.template.prototype
    labels = {k: v for k, v in prototype.labels.items() if k != TEMPLATE_HASH_LABEL}
    unhashed = dataclasses.replace(prototype, meta=dataclasses.replace(prototype.meta, labels=labels))
    return unhashed == deployment.template.prototype


def _revision(rs: Workload) -> int:
    text = rs.meta.annotations.get(REVISION_ANNOTATION, "")
    return int(text) if text.isdigit() else 0


def _template_hash(deployment: Workload) -> str:
    digest = hashlib.sha1(f"{deployment.meta.uid}/template".encode()).hexdigest()
    return "".join("bcdfghjklmnpqrstvwxz2456789"[int(digest[i : i + 2], 16) % 27] for i in range(0, 20, 2))
