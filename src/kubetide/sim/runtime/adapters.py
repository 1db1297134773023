"""The autoscaler's ports over the simulated cluster: ClusterView, ClusterActions and, with
spec.qos, UsageSource.

These are the same seams the real-cluster adapters implement, so the autoscaler cannot tell the
difference. The view hands out the simulator's own persistent snapshot (the autoscaler forks and
reverts it, and must leave it as found) and workload/PDB status kept incrementally, so a loop
costs the autoscaler's work, not a rebuild of the cluster.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from kubetide.autoscaler.events import Event, StatusObject
from kubetide.autoscaler.options import AutoscalerOptions
from kubetide.autoscaler.ports import ActionError, EvictionOutcome, UsageCeiling, UsageSample
from kubetide.model import ConfigMap, Node, ObjectMeta, Pod, PodDisruptionBudget, Taint, Workload
from kubetide.qos import QosConfig
from kubetide.qos.ceilings import node_ceilings
from kubetide.sim.runtime.deployment import Deployments
from kubetide.sim.runtime.disruption import Budgets
from kubetide.sim.runtime.engine import Engine
from kubetide.sim.runtime.events import EventLog
from kubetide.sim.runtime.eviction import EvictionApi
from kubetide.sim.runtime.metrics import Metrics
from kubetide.sim.runtime.world import World, WorldObserver
from kubetide.sim.spec.profiles import UsageModel
from kubetide.snapshot import ClusterSnapshot

# Where the status ConfigMap is unless the scenario's options say otherwise (--namespace,
# --status-config-map-name).
DEFAULT_STATUS = StatusObject.of(AutoscalerOptions())


def _active(pod: Pod) -> bool:
    return not pod.is_terminating and not pod.is_terminal


class WorkloadStatus(WorldObserver):
    """status.replicas / readyReplicas per controller, counted as pods come and go; for
    Deployments also generation, observedGeneration, updatedReplicas and availableReplicas, as
    their controller reports them (sim/deployment.py)."""

    def __init__(self, world: World, deployments: Deployments | None = None):
        self.world = world
        self.deployments = deployments
        self.ready: dict[str, int] = {}  # controller UID -> active Ready pods (active: World.active)
        self._cache: dict[str, tuple[Workload, tuple[int, ...], Workload]] = {}
        world.subscribe(self)

    def _adjust(self, pod: Pod, sign: int) -> None:
        ref = pod.meta.controller
        if ref is None or not pod.ready or not _active(pod):
            return
        self.ready[ref.uid] = self.ready.get(ref.uid, 0) + sign

    def pod_added(self, pod: Pod) -> None:
        self._adjust(pod, 1)

    def pod_updated(self, old: Pod, new: Pod) -> None:
        if _active(old) != _active(new) or old.ready != new.ready:
            self._adjust(old, -1)
            self._adjust(new, 1)

    def pod_removed(self, pod: Pod) -> None:
        self._adjust(pod, -1)

    def _counts(self, uid: str) -> tuple[int, int]:
        return self.world.active.get(uid, 0), self.ready.get(uid, 0)

    def workloads(self) -> list[Workload]:
        result = []
        # ReplicaSets by owning controller UID, once per call (the autoscaler asks every loop;
        # a scan of every workload per Deployment was quadratic).
        owned: dict[str, list[str]] = {}
        for other in self.world.workloads.values():
            ref = other.meta.controller
            if other.kind == "ReplicaSet" and ref is not None:
                owned.setdefault(ref.uid, []).append(other.meta.uid)
        for key, workload in self.world.workloads.items():
            rollout: tuple[int, ...] = ()
            if workload.kind == "Deployment":
                # A Deployment's pods belong to its ReplicaSets; its status sums theirs.
                replicas = ready = 0
                uids = owned.get(workload.meta.uid, [])
                for uid in uids:
                    count = self._counts(uid)
                    replicas += count[0]
                    ready += count[1]
                if self.deployments is not None:
                    rollout = self.deployments.reported(workload, uids, ready)
            else:
                replicas, ready = self._counts(workload.meta.uid)
            counts = (replicas, ready, *rollout)
            cached = self._cache.get(key)
            if cached is not None and cached[0] is workload and cached[1] == counts:
                result.append(cached[2])
                continue
            current = dataclasses.replace(workload, status_replicas=replicas, status_ready_replicas=ready)
            if rollout:
                current = dataclasses.replace(
                    current,
                    generation=rollout[0],
                    status_observed_generation=rollout[1],
                    status_updated_replicas=rollout[2],
                    status_available_replicas=rollout[3],
                )
            self._cache[key] = (workload, counts, current)
            result.append(current)
        return result


def status_configmap(status, where: StatusObject = DEFAULT_STATUS) -> ConfigMap:
    """The in-memory status ConfigMap (the options' namespace and status-config-map-name, by
    default kube-system/STATUS_CONFIG_MAP_NAME of autoscaler/options.py) for a status document."""
    from kubetide.autoscaler.status import status_yaml

    meta = ObjectMeta(name=where.name, namespace=where.namespace, uid=f"{where.namespace}.{where.name}")
    return ConfigMap(meta, {"status": status_yaml(status)})


class SimClusterView:
    def __init__(
        self,
        world: World,
        budgets: Budgets,
        status: WorkloadStatus,
        status_object: StatusObject = DEFAULT_STATUS,
    ):
        self.world = world
        self.budgets = budgets
        self.status = status
        self.status_object = status_object

    def snapshot(self) -> ClusterSnapshot:
        return self.world.snapshot

    def pending_pods(self) -> Sequence[Pod]:
        return list(self.world.pending.values())

    def refresh(self) -> None:
        """Nothing to take in: the simulated world does not move while the autoscaler runs."""

    def pdbs(self) -> Sequence[PodDisruptionBudget]:
        return [self.budgets.with_status(state) for state in self.budgets.states.values()]

    def workloads(self) -> Sequence[Workload]:
        return self.status.workloads()

    def configmap(self, namespace: str, name: str) -> ConfigMap | None:
        where = self.status_object
        if (namespace, name) == (where.namespace, where.name) and self.world.autoscaler_status is not None:
            return status_configmap(self.world.autoscaler_status, where)
        return self.world.configmaps.get((namespace, name))


class SimClusterActions:
    def __init__(
        self,
        world: World,
        eviction: EvictionApi,
        metrics: Metrics,
        log: EventLog,
        engine,
        deployments: Deployments | None = None,
    ):
        self.world = world
        self.deployments = deployments
        self.eviction = eviction
        self.metrics = metrics
        self.log = log
        self.engine = engine
        self.status_writes = 0

    def _node(self, name: str):
        node = self.world.node(name)
        if node is None:
            raise ActionError(f'nodes "{name}" not found')
        return node

    def add_taint(self, node_name: str, taint: Taint) -> None:
        node = self._node(node_name)
        if taint.time_added is None and taint.effect == "NoExecute":
            taint = dataclasses.replace(taint, time_added=self.engine.now())
        kept = tuple(t for t in node.taints if not (t.key == taint.key and t.effect == taint.effect))
        self.world.update_node(dataclasses.replace(node, taints=(*kept, taint)))

    def remove_taint(self, node_name: str, key: str) -> None:
        node = self._node(node_name)
        kept = tuple(t for t in node.taints if t.key != key)
        if len(kept) != len(node.taints):
            self.world.update_node(dataclasses.replace(node, taints=kept))

    def annotate_node(self, node_name: str, key: str, value: str | None) -> None:
        node = self._node(node_name)
        annotations = {k: v for k, v in node.meta.annotations.items() if k != key}
        if value is not None:
            annotations[key] = value
        if annotations != node.meta.annotations:
            meta = dataclasses.replace(node.meta, annotations=annotations)
            self.world.update_node(dataclasses.replace(node, meta=meta))

    def evict(self, pod: Pod, grace_period_seconds: int) -> EvictionOutcome:
        outcome = self.eviction.evict(pod.uid, grace_period_seconds)
        if outcome is EvictionOutcome.EVICTED:
            self.log.record(
                "Pod", pod.key, "Normal", "Evicted", f"evicted from {pod.node_name}", "eviction-api"
            )
        elif outcome is EvictionOutcome.BLOCKED_BY_PDB:
            self.metrics.c.evictions_refused += 1
            self.metrics.ledger.refused(pod)
            self.log.record(
                "Pod",
                pod.key,
                "Warning",
                "EvictionRefused",
                "429 Too Many Requests: cannot evict pod as it would violate the pod's disruption budget",
                "eviction-api",
            )
        return outcome

    def delete_node_object(self, node_name: str) -> None:
        node = self.world.node(node_name)
        if node is None:
            return  # already gone: what the caller wanted
        self.metrics.deleted_node_object(node)
        self.world.remove_node(node_name)
        self.log.record(
            "Node", node_name, "Normal", "NodeObjectDeleted", "node object deleted", "cluster-autoscaler"
        )

    def write_status(self, status) -> None:
        # Kept as an object; the ConfigMap text is rendered only when someone reads it.
        self.status_writes += 1
        self.world.autoscaler_status = status

    def emit_event(self, event: Event) -> None:
        self.log.record(
            event.kind, event.key, event.type.value, event.reason, event.message, "cluster-autoscaler"
        )

    def restart_deployment(self, namespace: str, name: str, at: float) -> None:
        key = f"Deployment/{namespace}/{name}"
        if self.deployments is None or key not in self.world.workloads:
            raise ActionError(f'deployments.apps "{name}" not found')
        self.deployments.restart(key, at)
        self.metrics.ledger.restarted(f"{namespace}/{name}")
        self.log.record(
            "Deployment",
            f"{namespace}/{name}",
            "Normal",
            "Restarted",
            "rollout restart",
            "cluster-autoscaler",
        )


class SimUsageSource:
    """The UsageSource port from the usage profiles: what the node QoS agents sample (runtime/qos.py
    passes its usage model and CFS quotas), now, for every pod bound to a node. A simulated node
    runs nothing but its pods, so no node usage is reported and the pods' sum stands in."""

    def __init__(
        self, engine: Engine, world: World, usage: UsageModel, quotas: dict[str, int], config: QosConfig
    ):
        self.engine = engine
        self.world = world
        self.usage = usage
        self.quotas = quotas
        self.config = config
        self._ceilings: dict[str, tuple[Node, tuple[UsageCeiling, ...]]] = {}

    def sample(self) -> UsageSample:
        t = self.engine.now() - self.engine.start
        snapshot = self.world.snapshot
        pods: dict[str, dict[str, int]] = {}
        ceilings: dict[str, tuple[UsageCeiling, ...]] = {}
        for node in snapshot.nodes():
            for pod in snapshot.pods_on(node.name).values():
                if not pod.is_terminal:
                    pods[pod.uid] = self.usage.usage(pod, t, self.quotas.get(pod.uid))
            found = self._node_ceilings(node)
            if found:
                ceilings[node.name] = found
        return UsageSample(pods, {}, ceilings)

    def _node_ceilings(self, node: Node) -> tuple[UsageCeiling, ...]:
        cached = self._ceilings.get(node.name)
        if cached is not None and cached[0] is node:
            return cached[1]
        found = tuple(UsageCeiling(c.resource, c.amount, c.source) for c in node_ceilings(self.config, node))
        self._ceilings[node.name] = (node, found)
        return found
