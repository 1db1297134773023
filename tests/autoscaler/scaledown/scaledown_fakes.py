"""Small builders and in-test fakes (ClusterActions, CloudProvider) for the scale-down tests."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from kubetide.autoscaler.ports import ActionError, EvictionOutcome, Instance, InstanceState
from kubetide.model import LabelSelector, Node, ObjectMeta, OwnerReference, Pod, PodDisruptionBudget, Taint
from kubetide.model.pod import Volume
from kubetide.model.workloads import PodTemplate, Workload
from kubetide.snapshot import ClusterSnapshot

GI = 2**30


def node(
    name: str,
    cpu: int = 1000,
    memory: int = 4 * GI,
    *,
    pods: int = 110,
    ready: bool = True,
    annotations: dict | None = None,
    labels: dict | None = None,
    taints: Sequence[Taint] = (),
    extra: dict | None = None,
) -> Node:
    alloc = {"cpu": cpu, "memory": memory, "pods": pods, **(extra or {})}
    return Node(
        ObjectMeta(
            name,
            labels={"kubernetes.io/hostname": name, **(labels or {})},
            annotations=dict(annotations or {}),
        ),
        alloc,
        dict(alloc),
        taints=tuple(taints),
        ready=ready,
    )


def pod(
    name: str,
    node_name: str = "",
    cpu: int = 100,
    memory: int = 0,
    *,
    namespace: str = "default",
    owner: tuple[str, str] | None = ("ReplicaSet", "rs"),
    labels: dict | None = None,
    annotations: dict | None = None,
    ready: bool = True,
    phase: str = "Running",
    priority: int = 0,
    created: float | None = 0.0,
    deleted: float | None = None,
    grace: int = 30,
    volumes: Sequence[Volume] = (),
    extra: dict | None = None,
) -> Pod:
    owners = (
        () if owner is None else (OwnerReference(owner[0], owner[1], f"uid-{owner[1]}", controller=True),)
    )
    requests = {"cpu": cpu, "pods": 1, **(extra or {})}
    if memory:
        requests["memory"] = memory
    return Pod(
        ObjectMeta(
            name,
            namespace,
            f"uid-{namespace}-{name}",
            labels=dict(labels or {"app": owner[1] if owner else name}),
            annotations=dict(annotations or {}),
            owner_references=owners,
            creation_timestamp=created,
            deletion_timestamp=deleted,
        ),
        requests,
        {},
        node_name=node_name,
        ready=ready,
        phase=phase,
        priority=priority,
        termination_grace_period=grace,
        volumes=tuple(volumes),
    )


def workload(
    kind: str, name: str, replicas: int | None = 1, namespace: str = "default", status_replicas=None
):
    template = PodTemplate(pod("template", owner=None))
    return Workload(
        kind=kind,
        meta=ObjectMeta(name, namespace, f"uid-{name}"),
        selector=LabelSelector((("app", name),)),
        template=template,
        replicas=replicas,
        status_replicas=status_replicas,
    )


def pdb(
    name: str,
    app: str,
    *,
    namespace: str = "default",
    allowed: int | None = None,
    min_available=None,
    max_unavailable=None,
    policy: str = "IfHealthyBudget",
    current_healthy=None,
    desired_healthy=None,
    expected_pods=None,
) -> PodDisruptionBudget:
    return PodDisruptionBudget(
        ObjectMeta(name, namespace, f"uid-pdb-{name}"),
        LabelSelector((("app", app),)),
        min_available=min_available,
        max_unavailable=max_unavailable,
        unhealthy_pod_eviction_policy=policy,
        disruptions_allowed=allowed,
        current_healthy=current_healthy,
        desired_healthy=desired_healthy,
        expected_pods=expected_pods,
    )


def snapshot_of(nodes: Sequence[Node], pods: Sequence[Pod]) -> ClusterSnapshot:
    return ClusterSnapshot(nodes, pods)


def state(s: ClusterSnapshot):
    return (
        [n.name for n in s.nodes()],
        {n.name: (s.requested(n.name), sorted(s.pods_on(n.name))) for n in s.nodes()},
        [n for n in s.nodes()],
    )


class FakeGroup:
    def __init__(self, id: str, min_size: int = 0, max_size: int = 100, target: int | None = None):
        self._id = id
        self._min = min_size
        self._max = max_size
        self._target = target
        self.members: list[str] = []
        self.deleted: list[str] = []
        self.fail_delete = False

    @property
    def id(self) -> str:
        return self._id

    @property
    def min_size(self) -> int:
        return self._min

    @property
    def max_size(self) -> int:
        return self._max

    def target_size(self) -> int:
        return self._target if self._target is not None else len(self.members)

    def increase_size(self, delta: int) -> None:
        raise ActionError("not in these tests")

    def decrease_target_size(self, delta: int) -> None:
        raise ActionError("not in these tests")

    def delete_nodes(self, nodes) -> None:
        if self.fail_delete:
            raise ActionError("cloud refused")
        for n in nodes:
            self.members.remove(n.name)
            self.deleted.append(n.name)
        if self._target is not None:
            self._target -= len(nodes)

    def instances(self):
        return [Instance(f"id-{m}", InstanceState.RUNNING) for m in self.members]

    def template_node(self) -> Node:
        return node("template")

    def price_per_hour(self) -> float:
        return 1.0


class FakeCloud:
    def __init__(self, groups: Sequence[FakeGroup] = ()):
        self.groups = {g.id: g for g in groups}

    def add(self, group: FakeGroup, *names: str) -> FakeGroup:
        self.groups[group.id] = group
        group.members.extend(names)
        return group

    def node_groups(self):
        return list(self.groups.values())

    def node_group_for(self, n: Node):
        for g in self.groups.values():
            if n.name in g.members:
                return g
        return None


def cloud_for(*names: str, min_size: int = 0, group: str = "g") -> FakeCloud:
    cloud = FakeCloud()
    cloud.add(FakeGroup(group, min_size=min_size), *names)
    return cloud


class FakeActions:
    """Records every write; evictions answer from `outcomes` (a list per pod key, last repeats)."""

    def __init__(self):
        self.calls: list[tuple] = []
        self.taints: dict[str, dict[str, Taint]] = {}
        self.outcomes: dict[str, list[EvictionOutcome]] = {}
        self.fail_taint_on: set[str] = set()
        self.fail_restart: bool = False
        self.events: list[tuple] = []
        self.event_times: list[float] = []
        self.evicted: list[str] = []

    def add_taint(self, node_name: str, taint: Taint) -> None:
        self.calls.append(("add_taint", node_name, taint.key))
        if node_name in self.fail_taint_on:
            raise ActionError(f"conflict on {node_name}")
        self.taints.setdefault(node_name, {})[taint.key] = taint

    def remove_taint(self, node_name: str, key: str) -> None:
        self.calls.append(("remove_taint", node_name, key))
        self.taints.get(node_name, {}).pop(key, None)

    def evict(self, p: Pod, grace_period_seconds: int) -> EvictionOutcome:
        self.calls.append(("evict", p.key, grace_period_seconds))
        queue = self.outcomes.get(p.key, [EvictionOutcome.EVICTED])
        outcome = queue.pop(0) if len(queue) > 1 else queue[0]
        if outcome is EvictionOutcome.EVICTED:
            self.evicted.append(p.key)
        return outcome

    def delete_node_object(self, node_name: str) -> None:
        self.calls.append(("delete_node_object", node_name))

    def restart_deployment(self, namespace: str, name: str, at: float) -> None:
        self.calls.append(("restart_deployment", f"{namespace}/{name}", at))
        if self.fail_restart:
            raise ActionError(f"deployments.apps {name} is forbidden")

    def write_status(self, status) -> None:
        self.calls.append(("write_status",))

    def emit_event(self, event) -> None:
        self.events.append((event.kind, event.key, event.type.value, event.reason, event.message))
        self.event_times.append(event.at)

    def reasons(self) -> list[str]:
        return [e[3] for e in self.events]


def with_taints(n: Node, *taints: Taint) -> Node:
    return dataclasses.replace(n, taints=(*n.taints, *taints))


class DeletionWorld:
    """A real-cluster stand-in for the actuator's tests: a snapshot edited by hand, fake actions
    and cloud (one group of every node), and the planner and actuator wired as the loop wires them."""

    def __init__(self, nodes, pods, options, pdbs=()):
        from kubetide.autoscaler.scaledown.actuation.actuator import Actuator
        from kubetide.autoscaler.scaledown.planning.planner import Planner
        from kubetide.clock import WorkTimer

        self.options = options
        self.snapshot = snapshot_of(nodes, pods)
        self.cloud = FakeCloud()
        self.group = self.cloud.add(FakeGroup("g"), *[n.name for n in nodes])
        self.actions = FakeActions()
        self.planner = Planner(self.options, timer=WorkTimer(1e-3), timers_expired=True)
        self.actuator = Actuator(self.options, self.actions, self.cloud, self.planner)
        self.pdbs = list(pdbs)
