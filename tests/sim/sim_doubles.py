"""Tiny autoscaler doubles that talk to the simulator only through the ports.

They prove the ports work end to end; they are not the autoscaler. Each has the factory
signature the simulator expects: (options, clock, view, actions, cloud).
"""

from __future__ import annotations

import math

from kubetide.autoscaler.events import Event, EventType
from kubetide.autoscaler.ports import TO_BE_DELETED_TAINT, EvictionOutcome
from kubetide.model import Taint


class ScaleUpDouble:
    """Grow the first node group by enough nodes for the unschedulable pods' cpu."""

    instances = 0

    def __init__(self, options, clock, view, actions, cloud):
        self.options, self.clock, self.view, self.actions, self.cloud = options, clock, view, actions, cloud
        self.loops = 0
        self.errors: list[str] = []
        ScaleUpDouble.instances += 1

    def run_once(self) -> None:
        self.loops += 1
        pods = [p for p in self.view.pending_pods() if p.is_unschedulable]
        if not pods:
            return
        group = self.cloud.node_groups()[0]
        per_node = group.template_node().allocatable["cpu"]
        needed = math.ceil(sum(p.requests.get("cpu", 0) for p in pods) / per_node)
        ready = sum(
            1 for n in self.view.snapshot().nodes() if n.ready and self.cloud.node_group_for(n) is group
        )
        upcoming = group.target_size() - ready  # requested, or registered but not Ready yet
        delta = min(needed - upcoming, group.max_size - group.target_size())
        if delta > 0:
            try:
                group.increase_size(delta)
                self.actions.emit_event(
                    Event(
                        "NodeGroup",
                        group.id,
                        EventType.NORMAL,
                        "ScaledUpGroup",
                        f"+{delta}",
                        self.clock.now(),
                    )
                )
            except Exception as exc:  # ActionError from faults
                self.errors.append(str(exc))


class DrainDouble(ScaleUpDouble):
    """ScaleUpDouble plus a naive drain: taint, evict everything but DaemonSet pods, delete when
    empty. Nodes to drain are given by the test (`drain_names`)."""

    def __init__(self, options, clock, view, actions, cloud, drain_names=()):
        super().__init__(options, clock, view, actions, cloud)
        self.drain_names = list(drain_names)
        self.outcomes: list[EvictionOutcome] = []

    def run_once(self) -> None:
        super().run_once()
        snapshot = self.view.snapshot()
        for name in list(self.drain_names):
            if name not in snapshot:
                self.drain_names.remove(name)
                continue
            node = snapshot.node(name)
            if not node.has_taint(TO_BE_DELETED_TAINT):
                self.actions.add_taint(
                    name, Taint(TO_BE_DELETED_TAINT, str(int(self.clock.now())), "NoSchedule")
                )
            left = [p for p in snapshot.pods_on(name).values() if not p.is_daemonset]
            for pod in left:
                if not pod.is_terminating:
                    self.outcomes.append(self.actions.evict(pod, 30))
            if not left:
                group = self.cloud.node_group_for(node)
                group.delete_nodes([node])
                self.actions.emit_event(
                    Event(
                        "Node", name, EventType.NORMAL, "ScaleDown", "drained and deleted", self.clock.now()
                    )
                )
                self.drain_names.remove(name)


class RecklessDouble(ScaleUpDouble):
    """Deletes the nodes it is told to, pods and all (to test the invariant counters)."""

    def __init__(self, options, clock, view, actions, cloud, victims=()):
        super().__init__(options, clock, view, actions, cloud)
        self.victims = list(victims)

    def run_once(self) -> None:
        snapshot = self.view.snapshot()
        for name in self.victims:
            if name in snapshot:
                node = snapshot.node(name)
                self.cloud.node_group_for(node).delete_nodes([node])
        self.victims = []
