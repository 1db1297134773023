"""Namespace termination: `kubectl delete namespace` on simulated time.

The namespace controller deletes everything in a terminating namespace, and the
NamespaceLifecycle admission plugin refuses new objects there, so its workloads stop being
replaced: every controller of the namespace (Deployments with their ReplicaSets, StatefulSets,
DaemonSets, Jobs, CronJobs, HPAs) and PodDisruptionBudget goes, and every pod is deleted with its
grace period. The namespace stays Terminating (and keeps refusing objects) for the rest of the run.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from kubetide.model import Manifests, ObjectMeta
from kubetide.sim.runtime.cronjob import CronJobs
from kubetide.sim.runtime.disruption import Budgets
from kubetide.sim.runtime.events import EventLog
from kubetide.sim.runtime.hpa import HorizontalPodAutoscalers
from kubetide.sim.runtime.kubelet import Kubelets
from kubetide.sim.runtime.world import World


class Namespaces:
    def __init__(
        self,
        world: World,
        kubelets: Kubelets,
        budgets: Budgets,
        hpas: HorizontalPodAutoscalers,
        cronjobs: CronJobs,
        controller: Callable[[str], Any],
        log: EventLog,
    ):
        self.world = world
        self.kubelets = kubelets
        self.budgets = budgets
        self.hpas = hpas
        self.cronjobs = cronjobs
        self.controller = controller
        self.log = log
        self.terminating: set[str] = set()

    def terminate(self, namespace: str) -> None:
        self.terminating.add(namespace)
        self.hpas.delete_namespace(namespace)
        self.cronjobs.delete_namespace(namespace)
        # Deployments first, so none recreates a ReplicaSet deleted under it.
        workloads = sorted(
            (w for w in self.world.workloads.values() if w.namespace == namespace),
            key=lambda w: w.kind != "Deployment",
        )
        for workload in workloads:
            if workload.key in self.world.workloads:
                self.controller(workload.kind).delete(workload.key)
        for key in [k for k in self.world.pdbs if k.split("/", 1)[0] == namespace]:
            self.budgets.delete(key)
        for pod in [p for p in self.world.pods() if p.namespace == namespace and not p.is_terminating]:
            self.kubelets.delete(pod)
        self.log.record(
            "Namespace",
            namespace,
            "Normal",
            "NamespaceTerminating",
            f"namespace {namespace} is terminating: its objects are deleted",
            "namespace-controller",
        )

    def admit(self, manifests: Manifests) -> tuple[Manifests, list[str]]:
        """The objects of `manifests` not bound for a terminating namespace (NamespaceLifecycle
        admission), and what was refused ("Kind namespace/name"). `manifests` is left as it is:
        a scenario's events are shared by every run of it."""
        if not self.terminating:
            return manifests, []
        refused: list[str] = []

        def admitted(kind: str, objs: list[Any]) -> list[Any]:
            kept = []
            for obj in objs:
                meta = getattr(obj, "meta", None)  # registered kinds may carry no ObjectMeta
                if isinstance(meta, ObjectMeta) and meta.namespace in self.terminating:
                    refused.append(f"{kind} {obj.meta.key}")
                else:
                    kept.append(obj)
            return kept

        other = {kind: admitted(kind, objs) for kind, objs in manifests.other.items()}
        kept = dataclasses.replace(
            manifests,
            pods=admitted("Pod", manifests.pods),
            workloads=[w for w in manifests.workloads if w.namespace not in self.terminating],
            pdbs=admitted("PodDisruptionBudget", manifests.pdbs),
            other=other,
        )
        refused += [f"{w.kind} {w.meta.key}" for w in manifests.workloads if w.namespace in self.terminating]
        return kept, refused
