"""What the drain benchmarks (bench_pdb_drain, bench_drain_estimate) watch in a simulation: each
drain the actuator starts, the estimate of the loop that started it, and when its node is empty."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kubetide.autoscaler.loop import Autoscaler
from kubetide.autoscaler.scaledown.planning import ScaleDownPlan
from kubetide.sim import Simulation
from kubetide.sim.runtime.world import WorldObserver


@dataclass
class Drain:
    node: str
    tainted_at: float
    estimate: float | None
    empty_at: float | None = None

    @property
    def actual(self) -> float | None:
        return None if self.empty_at is None else self.empty_at - self.tainted_at


class DrainWatch(WorldObserver):
    """Records, for each drain the actuator starts, the estimate of the loop that started it
    (`estimate`: the planner's for the node, by default) and the moment the last pod it had to
    evict is gone from the node."""

    def __init__(self, sim: Simulation):
        self.sim = sim
        self.drains: dict[str, Drain] = {}

    def after_autoscaler(self) -> None:
        inner = self.sim.autoscaler
        if not isinstance(inner, Autoscaler) or inner.planner.last_plan is None:
            return
        plan = inner.planner.last_plan
        if not self.observe(plan):
            return
        for name, deletion in inner.actuator.deletions.items():
            if name not in self.drains and not deletion.empty:
                self.drains[name] = Drain(name, deletion.tainted_at, self.estimate(plan, name))

    def observe(self, plan: ScaleDownPlan) -> bool:
        """Looks at the loop's plan first; False: the drains it started are not recorded."""
        return True

    def estimate(self, plan: ScaleDownPlan, name: str) -> float | None:
        status = plan.nodes.get(name)
        return status.estimate.seconds if status is not None and status.estimate else None

    def pod_removed(self, pod: Any) -> None:
        drain = self.drains.get(pod.node_name)
        if drain is None or drain.empty_at is not None or pod.is_daemonset or pod.is_mirror:
            return
        left = [
            p
            for p in self.sim.world.snapshot.pods_on(pod.node_name).values()
            if p.uid != pod.uid and not p.is_daemonset and not p.is_mirror
        ]
        if not left:
            drain.empty_at = self.sim.engine.now()


def run_watched(sim: Simulation, watch: DrainWatch) -> None:
    """The whole scenario of `sim`, `watch` told of every world change and loop."""
    sim.world.subscribe(watch)
    sim.after_autoscaler.append(watch.after_autoscaler)
    sim.setup()
    sim.engine.run_until(sim.engine.start + sim.scenario.duration)
    sim.scheduler.close()
