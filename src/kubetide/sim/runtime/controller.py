"""What the workload controllers share: a work queue synced after a short controller delay.

Like client-go's work queues, a key enqueued many times before its sync runs is synced once, so a
burst of pod deletions costs one reconcile per owner, not one per pod.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from kubetide.model import ObjectMeta, OwnerReference, Pod, Workload
from kubetide.sim.runtime.engine import Engine, Timer
from kubetide.sim.runtime.evolve import evolve
from kubetide.sim.runtime.kubelet import Kubelets
from kubetide.sim.runtime.world import World, WorldObserver
from kubetide.sim.spec.scenario import ClusterSpec

# Kubernetes' generated-name alphabet (no vowels, no confusable digits).
_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"


class Controller(WorldObserver):
    kind = ""
    scaled_field = "replicas"  # the spec field a `scale` event sets (Jobs: parallelism)

    def __init__(self, engine: Engine, world: World, cluster: ClusterSpec, kubelets: Kubelets):
        self.engine = engine
        self.world = world
        self.cluster = cluster
        self.kubelets = kubelets
        self.rng = engine.rng(f"controller/{self.kind}")
        self._dirty: dict[str, None] = {}  # workload keys, in the order they were enqueued
        self._timer: Timer | None = None
        self.created = 0
        world.subscribe(self)

    # -- the API server's side: apply, scale, delete ------------------------------------------
    def apply(self, workload: Workload) -> None:
        """Create or update; an update keeps the existing object's identity (UID)."""
        old = self.world.workloads.get(workload.key)
        if old is not None:
            workload = dataclasses.replace(workload, meta=old.meta)
        self.world.workloads[workload.key] = workload
        self.enqueue(workload.key)

    def scale(self, key: str, count: int) -> None:
        workload = self.world.workloads[key]
        changes: dict[str, Any] = {self.scaled_field: count}
        self.world.workloads[key] = dataclasses.replace(workload, **changes)
        self.enqueue(key)

    def delete(self, key: str) -> None:
        """Delete with cascading (background) garbage collection of the pods."""
        workload = self.world.workloads.pop(key, None)
        if workload is not None:
            self.delete_pods(workload)

    def delete_pods(self, workload: Workload) -> None:
        for pod in self.world.pods_of(workload.meta.uid):
            self.kubelets.delete(pod)

    # -- queue -------------------------------------------------------------------------------
    def enqueue(self, key: str) -> None:
        self._dirty[key] = None
        if self._timer is None or not self._timer.active:
            delay = self.cluster.controllerDelay.draw(self.rng)
            self._timer = self.engine.after(delay, self._sync_dirty)

    def flush(self) -> bool:
        """Sync what is queued now instead of after the delay (set-up). True if anything was."""
        if not self._dirty:
            return False
        if self._timer is not None:
            self._timer.cancel()
        self._sync_dirty()
        return True

    def _sync_dirty(self) -> None:
        self._timer = None
        dirty, self._dirty = self._dirty, {}
        for key in dirty:
            workload = self.world.workloads.get(key)
            if workload is not None:
                self.sync(workload)

    def sync(self, workload: Workload) -> None:
        raise NotImplementedError

    # -- watches -----------------------------------------------------------------------------
    def owns(self, pod: Pod) -> str | None:
        """The key of the workload of this controller's kind that controls `pod`, if any."""
        ref = pod.meta.controller
        if ref is None or ref.kind != self.kind:
            return None
        return f"{self.kind}/{pod.namespace}/{ref.name}"

    def pod_removed(self, pod: Pod) -> None:
        key = self.owns(pod)
        if key is not None:
            self.enqueue(key)

    def pod_updated(self, old: Pod, new: Pod) -> None:
        if (
            (new.is_terminating and not old.is_terminating)
            or (new.is_terminal and not old.is_terminal)
            or new.ready != old.ready
        ):
            key = self.owns(new)
            if key is not None:
                self.enqueue(key)

    # -- helpers -----------------------------------------------------------------------------
    def generate_name(self, base: str) -> str:
        return base + "-" + "".join(self.rng.choice(_ALPHABET) for _ in range(5))

    def create_pod(self, workload: Workload, name: str, node_name: str = "", extra_labels=None) -> Pod:
        """A pod stamped from the workload's template (PodTemplate.instantiate, minus its cost)."""
        prototype = workload.template.prototype
        labels = dict(prototype.meta.labels)
        if extra_labels:
            labels.update(extra_labels)
        meta = ObjectMeta(
            name=name,
            namespace=workload.namespace,
            uid=self.world.new_uid(),
            labels=labels,
            annotations=dict(prototype.meta.annotations),
            owner_references=(
                OwnerReference(workload.kind, workload.name, workload.meta.uid, controller=True),
            ),
            creation_timestamp=self.engine.now(),
        )
        pod = evolve(prototype, meta=meta, node_name=node_name)
        self.created += 1
        self.world.add_pod(pod)
        return pod

    def active_pods(self, workload: Workload) -> list[Pod]:
        """Pods that count towards the workload's replicas: not terminating, not finished."""
        return [
            p for p in self.world.pods_of(workload.meta.uid) if not p.is_terminating and not p.is_terminal
        ]
