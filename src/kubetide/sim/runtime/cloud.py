"""The simulated cloud: node groups whose instances go requested -> registered -> Ready.

`SimNodeGroup` implements the autoscaler's `NodeGroup` port. Raising the target size requests
instances at once; each registers its Node after the group's provisioningDelay and turns Ready
after its readyDelay (fixed, or drawn from the cloud's random stream). Deleting nodes lowers the
target and terminates the instances after the deletionDelay, when the cloud node controller
removes the Node object. Faults (see faults.py) make the cloud fail the way real ones do: stockouts
surface as instances stuck in Creating with an OutOfResources error (as Cluster Autoscaler's cloud
providers report them), unregistered or never-Ready instances simply never progress, and
cloudError makes the API calls themselves fail.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from kubetide.autoscaler.ports import ActionError, Instance, InstanceError, InstanceState
from kubetide.cloud.static import group_key
from kubetide.model import Node, ObjectMeta, Taint
from kubetide.model.node import HOSTNAME_LABEL
from kubetide.sim.runtime.engine import Engine, Timer
from kubetide.sim.runtime.events import EventLog
from kubetide.sim.runtime.nodelifecycle import NOT_READY_TAINT, NodeLifecycle
from kubetide.sim.runtime.world import World
from kubetide.sim.spec.scenario import NODE_GROUP_LABEL, GroupConfig

_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"


@dataclass(slots=True)
class SimInstance:
    id: str
    node_name: str
    group: str
    state: InstanceState
    requested_at: float
    error: InstanceError | None = None
    registered: bool = False
    never_ready: bool = False
    timer: Timer | None = None
    # The last view handed out: the autoscaler lists every instance every loop, and an unchanged
    # instance can keep answering with the same immutable object.
    _view: Instance | None = dataclasses.field(default=None, repr=False, compare=False)

    def view(self) -> Instance:
        view = self._view
        if view is None or view.state is not self.state or view.error is not self.error:
            view = self._view = Instance(self.id, self.state, self.error)
        return view


class CloudHooks:
    """What the metrics want to hear from the cloud (all optional)."""

    def __init__(self) -> None:
        self.instance_started: list[Callable[[SimInstance], None]] = []  # billing starts
        self.instance_ended: list[Callable[[SimInstance], None]] = []  # billing stops
        self.scaled_up: list[Callable[[str, int], None]] = []
        self.deleting_nodes: list[Callable[[str, Sequence[Node]], None]] = []  # before the deletion
        # The instance is gone and its Node is about to be removed, with whatever is still bound.
        self.terminating: list[Callable[[str, Node], None]] = []
        # Repairs of a group (the summary's node_groups): instances deleted before they ever
        # registered as nodes (UC5), and the target lowered by DecreaseTargetSize (S4/UC4).
        self.unregistered_deleted: list[Callable[[str, int], None]] = []
        self.target_decreased: list[Callable[[str, int], None]] = []


class SimNodeGroup:
    def __init__(self, config: GroupConfig, cloud: SimCloud):
        self.config = config
        self.cloud = cloud
        self._target = 0
        self.deleting = 0  # instances being terminated
        self._instances: dict[str, SimInstance] = {}  # by id, in creation order
        self._by_node: dict[str, SimInstance] = {}

    # -- NodeGroup port ----------------------------------------------------------------------
    @property
    def id(self) -> str:
        return self.config.name

    @property
    def min_size(self) -> int:
        return self.config.min_size

    @property
    def max_size(self) -> int:
        return self.config.max_size

    def target_size(self) -> int:
        return self._target

    def increase_size(self, delta: int) -> None:
        if delta <= 0:
            raise ActionError(f"size increase must be positive, got {delta}")
        self.cloud.check_api(self.id, "increase size")
        if self._target + delta > self.max_size:
            raise ActionError(f"size increase too large: desired {self._target + delta}, max {self.max_size}")
        self._target += delta
        for _ in range(delta):
            self._launch()
        self._record("IncreaseSize", f"target size {self._target - delta} -> {self._target}")
        for hook in self.cloud.hooks.scaled_up:
            hook(self.id, delta)

    def decrease_target_size(self, delta: int) -> None:
        count = abs(delta)
        if count == 0:
            return
        self.cloud.check_api(self.id, "decrease target size")
        unfulfilled = [
            i for i in self._instances.values() if not i.registered and i.state is InstanceState.CREATING
        ]
        if count > len(unfulfilled):
            raise ActionError(
                f"attempt to delete existing nodes: target {self._target}, only {len(unfulfilled)} not registered"
            )
        # Failed requests go first, then the newest.
        unfulfilled.sort(key=lambda i: (i.error is None, -i.requested_at))
        for instance in unfulfilled[:count]:
            self._drop(instance)
        self._target -= count
        self._record("DecreaseTargetSize", f"target size {self._target + count} -> {self._target}")
        for hook in self.cloud.hooks.target_decreased:
            hook(self.id, count)

    def delete_nodes(self, nodes: Sequence[Node]) -> None:
        self.cloud.check_api(self.id, "delete nodes")
        instances = []
        for node in nodes:
            instance = self._instances.get(node.provider_id) or self._by_node.get(node.name)
            if instance is None:
                raise ActionError(f"node {node.name} does not belong to node group {self.id}")
            if instance.state is not InstanceState.DELETING and instance not in instances:
                instances.append(instance)
        if self._target - len(instances) < self.min_size:
            raise ActionError(
                f"min size reached: deleting {len(instances)} of {self._target} nodes would go below {self.min_size}"
            )
        for hook in self.cloud.hooks.deleting_nodes:
            hook(self.id, [n for n in nodes if n.name in self.cloud.world.snapshot])
        unregistered = sum(1 for instance in instances if not instance.registered)
        if unregistered:
            for repaired in self.cloud.hooks.unregistered_deleted:
                repaired(self.id, unregistered)
        for instance in instances:
            self._target -= 1
            if not instance.registered:
                self._drop(instance)
                continue
            instance.state = InstanceState.DELETING
            self.deleting += 1
            if instance.timer is not None:
                instance.timer.cancel()
            delay = self.config.deletion_delay.draw(self.cloud.rng)
            instance.timer = self.cloud.engine.after(delay, self._terminated, instance)
        self._record(
            "DeleteNodes", f"deleting {', '.join(i.node_name for i in instances)}; target size {self._target}"
        )

    def instances(self) -> Sequence[Instance]:
        return [i.view() for i in self._instances.values()]

    def template_node(self) -> Node:
        return self.config.template

    def price_per_hour(self) -> float:
        return self.config.price

    # -- lifecycle ---------------------------------------------------------------------------
    def add_initial(self, count: int) -> None:
        """Nodes registered and Ready when the scenario starts."""
        for _ in range(count):
            self._target += 1
            instance = self._new_instance()
            self._start_billing(instance)
            self._register(instance, ready=True)

    def adopt(self, node: Node) -> None:
        """A node that exists when the scenario starts (spec.objects, e.g. a cluster dump): one
        of the group's running instances, keeping its name, labels, age and readiness. It gets
        the group label the simulator's own nodes carry, and a provider ID if it has none."""
        cloud = self.cloud
        now = cloud.engine.now()
        provider_id = node.provider_id or f"kubetide://{self.id}/{node.name}"
        instance = SimInstance(
            id=provider_id,
            node_name=node.name,
            group=self.id,
            state=InstanceState.RUNNING,
            requested_at=node.meta.creation_timestamp or now,
            registered=True,
        )
        cloud.node_names.add(node.name)
        self._instances[instance.id] = instance
        self._by_node[node.name] = instance
        self._target += 1
        self._start_billing(instance)
        meta = dataclasses.replace(
            node.meta,
            labels={**node.labels, NODE_GROUP_LABEL: self.id},
            creation_timestamp=node.meta.creation_timestamp or now,
        )
        cloud.world.add_node(dataclasses.replace(node, meta=meta, provider_id=provider_id))

    def _new_instance(self) -> SimInstance:
        cloud = self.cloud
        while True:
            suffix = "".join(cloud.rng.choice(_ALPHABET) for _ in range(5))
            name = f"{self.id}-{suffix}"
            if name not in cloud.node_names:
                break
        cloud.node_names.add(name)
        instance = SimInstance(
            id=f"kubetide://{self.id}/{name}",
            node_name=name,
            group=self.id,
            state=InstanceState.CREATING,
            requested_at=cloud.engine.now(),
        )
        self._instances[instance.id] = instance
        self._by_node[name] = instance
        return instance

    def _record(self, reason: str, message: str, event_type: str = "Normal", **extra: str) -> None:
        """An event of this node group's, as the cloud reports it."""
        self.cloud.log.record("NodeGroup", self.id, event_type, reason, message, "cloud", **extra)

    def _launch(self) -> None:
        cloud = self.cloud
        instance = self._new_instance()
        if cloud.faults.hit(self.id, "stockout"):
            instance.error = InstanceError(
                "OutOfResources", "STOCKOUT", f"the zone does not have enough resources for {self.id}"
            )
            self._record("InstanceCreationFailed", instance.error.message, "Warning", instance=instance.id)
            return
        self._start_billing(instance)
        if cloud.faults.hit(self.id, "nodeNeverRegisters"):
            return
        instance.never_ready = cloud.faults.hit(self.id, "nodeNeverReady")
        delay = self.config.provisioning_delay.draw(cloud.rng)
        instance.timer = cloud.engine.after(delay, self._register, instance)

    def _register(self, instance: SimInstance, ready: bool = False) -> None:
        cloud = self.cloud
        instance.timer = None
        instance.registered = True
        instance.state = InstanceState.RUNNING
        now = cloud.engine.now()
        template = self.config.template
        labels = {**template.labels, HOSTNAME_LABEL: instance.node_name, NODE_GROUP_LABEL: self.id}
        taints = template.taints
        if not ready:
            taints = (*taints, Taint(NOT_READY_TAINT, "", "NoSchedule", now))
        node = dataclasses.replace(
            template,
            meta=ObjectMeta(
                name=instance.node_name,
                uid=cloud.world.new_uid(),
                labels=labels,
                annotations=dict(template.annotations),
                creation_timestamp=now,
            ),
            taints=taints,
            ready=ready,
            ready_transition=now,
            provider_id=instance.id,
        )
        cloud.world.add_node(node)
        if not ready:
            cloud.log.record(
                "Node", node.name, "Normal", "RegisteredNode", f"Node {node.name} registered", "cloud"
            )
            if not instance.never_ready:
                delay = self.config.ready_delay.draw(cloud.rng)
                instance.timer = cloud.engine.after(delay, self._ready, instance)

    def _ready(self, instance: SimInstance) -> None:
        instance.timer = None
        self.cloud.lifecycle.set_ready(instance.node_name, True)

    def _terminated(self, instance: SimInstance) -> None:
        instance.timer = None
        self.deleting -= 1
        node = self.cloud.world.node(instance.node_name)
        if node is not None:
            for hook in self.cloud.hooks.terminating:
                hook(self.id, node)
        self.cloud.world.remove_node(instance.node_name)
        self._forget(instance)

    def _drop(self, instance: SimInstance) -> None:
        if instance.timer is not None:
            instance.timer.cancel()
        self._forget(instance)

    def _forget(self, instance: SimInstance) -> None:
        del self._instances[instance.id]
        del self._by_node[instance.node_name]
        if instance.error is None:
            for hook in self.cloud.hooks.instance_ended:
                hook(instance)

    def _start_billing(self, instance: SimInstance) -> None:
        for hook in self.cloud.hooks.instance_started:
            hook(instance)

    # -- for the simulator's own bookkeeping -------------------------------------------------
    def sim_instances(self) -> list[SimInstance]:
        return list(self._instances.values())

    def instance_of(self, node_name: str) -> SimInstance | None:
        return self._by_node.get(node_name)


class SimCloud:
    """The CloudProvider port over the scenario's node groups."""

    def __init__(
        self,
        engine: Engine,
        world: World,
        lifecycle: NodeLifecycle,
        log: EventLog,
        faults,
        groups: list[GroupConfig],
    ):
        self.engine = engine
        self.world = world
        self.lifecycle = lifecycle
        self.log = log
        self.faults = faults
        self.rng = engine.rng("cloud")
        self.hooks = CloudHooks()
        self.node_names: set[str] = set()
        self.groups = {config.name: SimNodeGroup(config, self) for config in groups}

    def adopt(self, nodes: Sequence[Node]) -> list[Node]:
        """Make the nodes that belong to a group (by the labels `kubetide plan` reads, see
        cloud/static.py) that group's instances. Returns the others, which no group manages."""
        unmanaged = []
        for node in nodes:
            key = group_key(node)
            group = self.groups.get(key[1]) if key is not None else None
            if group is None or node.name in self.node_names:
                unmanaged.append(node)
            else:
                group.adopt(node)
        return unmanaged

    def check_api(self, group: str, call: str) -> None:
        if self.faults.active(group, "cloudError"):
            self.log.record(
                "NodeGroup", group, "Warning", "CloudError", f"{call} failed: cloud API error", "cloud"
            )
            raise ActionError(
                f"{call} for node group {group} failed: cloud API error (simulated cloudError fault)"
            )

    # -- CloudProvider port ------------------------------------------------------------------
    def node_groups(self) -> Sequence[SimNodeGroup]:
        return list(self.groups.values())

    def node_group_for(self, node: Node) -> SimNodeGroup | None:
        # Asked for every node every loop: field reads rather than properties and instance_of.
        meta = node.meta
        group = self.groups.get(meta.labels.get(NODE_GROUP_LABEL, ""))
        if group is not None and group._by_node.get(meta.name) is not None:
            return group
        if node.provider_id.startswith("kubetide://"):
            return self.groups.get(node.provider_id.removeprefix("kubetide://").split("/", 1)[0])
        return None
