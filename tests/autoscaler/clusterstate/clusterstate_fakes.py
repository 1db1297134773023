"""A small in-memory cloud implementing the ports' NodeGroup/CloudProvider protocols, and node
builders, for the registry's unit tests (imported as a top-level module: tests have no packages)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from kubetide.autoscaler.clusterstate import ClusterStateRegistry
from kubetide.autoscaler.options import AutoscalerOptions
from kubetide.autoscaler.ports import (
    TO_BE_DELETED_TAINT,
    ActionError,
    CloudProvider,
    Instance,
    InstanceError,
    InstanceState,
    NodeGroup,
)
from kubetide.model import Node, ObjectMeta, Taint

T0 = 1_767_225_600.0  # 2026-01-01T00:00:00Z

STOCKOUT = InstanceError("OutOfResources", "STOCKOUT", "zone us-east1-b has no n2-standard-8 capacity")


def pid(name: str) -> str:
    return f"fake:///{name}"


@dataclass
class FakeGroup:
    id: str
    min_size: int = 0
    max_size: int = 100
    target: int = 0
    listed: list[Instance] = field(default_factory=list)
    refuse_increase: bool = False

    def target_size(self) -> int:
        return self.target

    def increase_size(self, delta: int) -> None:
        if self.refuse_increase:
            raise ActionError("quota exceeded")
        self.target += delta

    def decrease_target_size(self, delta: int) -> None:
        assert delta < 0, "Cluster Autoscaler's sign: the change of the target"
        self.target += delta

    def delete_nodes(self, nodes: Sequence[Node]) -> None:
        ids = {n.provider_id for n in nodes}
        self.listed = [Instance(i.id, InstanceState.DELETING) if i.id in ids else i for i in self.listed]
        self.target -= len(ids)

    def instances(self) -> Sequence[Instance]:
        return list(self.listed)

    def template_node(self) -> Node:
        return node(f"{self.id}-template")

    def price_per_hour(self) -> float:
        return 1.0

    # test helpers
    def add(
        self, name: str, state: InstanceState = InstanceState.RUNNING, error: InstanceError | None = None
    ):
        self.listed.append(Instance(pid(name), state, error))

    def drop(self, name: str) -> None:
        self.listed = [i for i in self.listed if i.id != pid(name)]


class FakeCloud:
    def __init__(self, *groups: FakeGroup):
        self.groups = {g.id: g for g in groups}

    def node_groups(self) -> Sequence[NodeGroup]:
        return list(self.groups.values())

    def node_group_for(self, n: Node) -> NodeGroup | None:
        for group in self.groups.values():
            if any(i.id == n.provider_id for i in group.listed):
                return group
        return None

    def __getitem__(self, group_id: str) -> FakeGroup:
        return self.groups[group_id]


def node(
    name: str,
    created: float = T0,
    ready: bool = True,
    transition: float | None = None,
    deleting_since: float | None = None,
) -> Node:
    taints = ()
    if deleting_since is not None:
        taints = (Taint(TO_BE_DELETED_TAINT, str(int(deleting_since)), "NoSchedule"),)
    return Node(
        meta=ObjectMeta(name=name, creation_timestamp=created),
        allocatable={"cpu": 4000, "memory": 16 * 2**30, "pods": 110},
        capacity={"cpu": 4000, "memory": 16 * 2**30, "pods": 110},
        taints=taints,
        ready=ready,
        ready_transition=created if transition is None else transition,
        provider_id=pid(name),
    )


def group_with_nodes(
    group_id: str, count: int, created: float = T0, **kwargs
) -> tuple[FakeGroup, list[Node]]:
    """A group at target `count` whose `count` instances are all registered, Ready nodes."""
    group = FakeGroup(group_id, target=count, **kwargs)
    nodes = []
    for index in range(count):
        name = f"{group_id}-{index}"
        group.add(name)
        nodes.append(node(name, created=created))
    return group, nodes


def assert_protocols(cloud: FakeCloud) -> None:
    """Static check that the fakes satisfy the ports (pyright/mypy read these assignments)."""
    _: CloudProvider = cloud
    for group in cloud.groups.values():
        __: NodeGroup = group


def make_registry(**flags) -> ClusterStateRegistry:
    """A registry with default options except the given ones (field names of AutoscalerOptions)."""
    return ClusterStateRegistry(AutoscalerOptions().with_values(**flags))


def scaling_up_by_one(
    provision: float, startup: float
) -> tuple[ClusterStateRegistry, FakeGroup, FakeCloud, list[Node]]:
    """Group "ng" of one Ready node, seen at T0 and grown by one then, with these
    max-node-provision-time and max-node-startup-time: the registry, the group, its cloud and the
    old node (the new instance is the test's to add)."""
    registry = make_registry(max_node_provision_time=provision, max_node_startup_time=startup)
    group, old = group_with_nodes("ng", 1)
    cloud = FakeCloud(group)
    registry.update(old, cloud, T0)
    group.increase_size(1)
    registry.register_scale_up("ng", 1, T0)
    return registry, group, cloud, old
