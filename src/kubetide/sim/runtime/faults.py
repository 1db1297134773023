"""Fault injection: `{type, nodeGroup, count, duration}` from the scenario's events.

A fault starts at its event's time and lasts `duration` (default: to the end of the scenario).
- stockout, nodeNeverRegisters, nodeNeverReady: each instance the group creates while the fault
  lasts is affected, up to `count` instances (default: all of them).
- nodeNotReady: `count` Ready nodes of the group (default: all), drawn from the fault stream, turn
  NotReady; they recover when the duration ends.
- nodeReady: up to `count` NotReady nodes of the group recover now, and the group's nodeNotReady
  and nodeNeverReady faults end.
- cloudError: the group's increase/decrease/delete calls fail while it lasts.
- autoscalerRestart: handled by the simulation (the autoscaler is rebuilt from its factory).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from kubetide.sim.runtime.engine import Engine
from kubetide.sim.runtime.events import EventLog
from kubetide.sim.runtime.nodelifecycle import NodeLifecycle
from kubetide.sim.runtime.world import World
from kubetide.sim.spec.scenario import FaultSpec


@dataclass(slots=True)
class ActiveFault:
    type: str
    group: str
    remaining: int | None  # instances/nodes still to hit; None = unlimited
    until: float | None
    nodes: tuple[str, ...] = ()  # nodeNotReady: the nodes it took down
    over: bool = False


class Faults:
    def __init__(self, engine: Engine, world: World, lifecycle: NodeLifecycle, log: EventLog):
        self.engine = engine
        self.world = world
        self.lifecycle = lifecycle
        self.log = log
        self.rng = engine.rng("faults")
        self._active: list[ActiveFault] = []
        self.injected = 0
        self.on_restart: Callable[[], None] | None = None
        self.group_nodes: Callable[[str], list[str]] = lambda group: []

    # -- queries from the cloud ----------------------------------------------------------------
    def active(self, group: str, kind: str) -> bool:
        now = self.engine.now()
        return any(
            f.type == kind and f.group == group and not f.over and (f.until is None or now < f.until)
            for f in self._active
        )

    def hit(self, group: str, kind: str) -> bool:
        """Does this fault affect the next instance? Consumes one of its `count`."""
        now = self.engine.now()
        for fault in self._active:
            if fault.type != kind or fault.group != group or fault.over:
                continue
            if fault.until is not None and now >= fault.until:
                continue
            if fault.remaining is None:
                return True
            if fault.remaining > 0:
                fault.remaining -= 1
                return True
        return False

    # -- injection -----------------------------------------------------------------------------
    def inject(self, spec: FaultSpec) -> None:
        self.injected += 1
        now = self.engine.now()
        until = None if spec.duration is None else now + spec.duration
        group = spec.nodeGroup or ""
        detail = f"{spec.type}" + (f" on {group}" if group else "")
        if spec.count is not None:
            detail += f", count {spec.count}"
        if spec.duration is not None:
            detail += f", for {spec.duration:g}s"
        self.log.record(
            "Scenario", group or "cluster", "Warning", "FaultInjected", detail, "scenario", fault=spec.type
        )

        if spec.type == "autoscalerRestart":
            if self.on_restart is not None:
                self.on_restart()
            return
        if spec.type == "nodeReady":
            self._recover(group, spec.count)
            return
        fault = ActiveFault(spec.type, group, spec.count, until)
        self._active.append(fault)
        if spec.type == "nodeNotReady":
            ready = [
                name for name in self.group_nodes(group) if (node := self.world.node(name)) and node.ready
            ]
            count = len(ready) if spec.count is None else min(spec.count, len(ready))
            chosen = sorted(self.rng.sample(ready, count))
            fault.nodes = tuple(chosen)
            for name in chosen:
                self.lifecycle.set_ready(name, False)
        if until is not None:
            self.engine.at(until, self._expire, fault)

    def _expire(self, fault: ActiveFault) -> None:
        if fault.over:
            return
        fault.over = True
        self.log.record(
            "Scenario",
            fault.group,
            "Normal",
            "FaultEnded",
            f"{fault.type} on {fault.group} ended",
            "scenario",
            fault=fault.type,
        )
        if fault.type == "nodeNotReady":
            for name in fault.nodes:
                self.lifecycle.set_ready(name, True)

    def _recover(self, group: str, count: int | None) -> None:
        for fault in self._active:
            if fault.group == group and fault.type in ("nodeNotReady", "nodeNeverReady"):
                fault.over = True
        down = [
            name for name in self.group_nodes(group) if (node := self.world.node(name)) and not node.ready
        ]
        for name in down[: len(down) if count is None else count]:
            self.lifecycle.set_ready(name, True)
