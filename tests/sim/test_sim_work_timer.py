"""Determinism for real (issue 17 item 7): the time budgets run on the simulator's work-driven
Timer, so a scenario whose budgets run out gives the same summary on every run and machine, and
the budgets still bound the work done per loop."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from sim_helpers import deployment, group, make_scenario

from kubetide.autoscaler.loop import Autoscaler
from kubetide.autoscaler.ports import DELETION_CANDIDATE_TAINT
from kubetide.autoscaler.scaleup.estimator import TIME_LIMIT_REASON
from kubetide.autoscaler.scaleup.skips import SkipReason
from kubetide.clock import WORK_STEP, work_timer
from kubetide.sim import Simulation

# Budgets worth a handful of units of work, off by half a unit so no rounding decides: three
# nodes simulated for scale-down per loop, two soft taints (the pass stops once the budget is
# spent, so a write may start with half a unit left), eight estimator readings per scale-up.
TINY = {
    "scale-down-simulation-timeout": f"{3.5 * WORK_STEP}s",
    "max-bulk-soft-taint-time": f"{1.5 * WORK_STEP}s",
    "max-binpacking-time": f"{8.5 * WORK_STEP}s",
    "max-nodegroup-binpacking-duration": f"{8.5 * WORK_STEP}s",
}


def scenario(budgets=None):
    # A full cluster gets a burst of hostname-spread pods (placed one by one by the estimator,
    # each a timer reading), then a drop that leaves many nodes unneeded at once.
    spread = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "kubernetes.io/hostname"}
    ]}}  # fmt: skip
    return make_scenario(
        groups=[group("a", size=12, max_size=40), group("b", size=0, max_size=40, cpu="8", memory="32Gi")],
        objects=[
            deployment("web", 4, cpu="1", pod_extra={"affinity": spread}),
            deployment("batch", 40, cpu="1"),
        ],
        events=[
            {"at": "2m", "scale": {"kind": "Deployment", "name": "web", "replicas": 24}},
            {"at": "40m", "scale": {"kind": "Deployment", "name": "web", "replicas": 2}},
            {"at": "40m", "scale": {"kind": "Deployment", "name": "batch", "replicas": 4}},
        ],
        duration="2h",
        autoscaler={"scale-down-unneeded-time": "5m", "scale-down-delay-after-add": "5m", **(budgets or {})},
    )


@dataclass
class Work:
    """Per loop: nodes the scale-down simulated, soft taints written, scale-up budget outcomes."""

    simulated: list[int] = field(default_factory=list)
    timed_out: int = 0
    soft_taints: list[int] = field(default_factory=list)
    binpacking_cut: int = 0


def run(budgets=None) -> tuple[dict, Work]:
    work = Work()

    def factory(options, clock, view, actions, cloud):
        counted = _CountingActions(actions)
        inner = Autoscaler(options, clock, view, counted, cloud, seed=1, timer=work_timer())

        class Watched:
            def run_once(self):
                counted.soft_taints = 0
                result = inner.run_once()
                work.soft_taints.append(counted.soft_taints)
                if result.scale_down is not None:
                    work.simulated.append(result.scale_down.simulated)
                    work.timed_out += result.scale_down.timed_out
                if result.scale_up is not None:
                    up = result.scale_up
                    reasons = [
                        *(skip.reason for skip in up.skipped_groups.values()),
                        *(r for e in up.estimates.values() for r in e.refused.values()),
                    ]
                    work.binpacking_cut += any(
                        r in (TIME_LIMIT_REASON, SkipReason.BINPACKING_TIME) for r in reasons
                    )
                return result

        return Watched()

    summary = Simulation(scenario(budgets), autoscaler_factory=factory).run().summary
    summary.pop("wall_seconds")
    return summary, work


class _CountingActions:
    def __init__(self, inner):
        self.inner = inner
        self.soft_taints = 0

    def add_taint(self, node_name, taint):
        self.soft_taints += taint.key == DELETION_CANDIDATE_TAINT
        self.inner.add_taint(node_name, taint)

    def __getattr__(self, name):
        return getattr(self.inner, name)


def test_tiny_budgets_give_the_same_summary_however_slow_the_machine(monkeypatch):
    first, work = run(TINY)
    # The second run on a machine whose clock races: every reading an hour later than the last.
    # Any budget still read from the machine's clock would run out at once and change the run.
    readings = iter(range(0, 10**9, 3600))
    monkeypatch.setattr(time, "perf_counter", lambda: float(next(readings)))
    second, again = run(TINY)
    monkeypatch.undo()
    assert first == second
    assert work == again


def test_tiny_budgets_still_bound_the_work_done_per_loop():
    summary, work = run(TINY)
    roomy_summary, roomy = run()
    # Scale-down: at most three nodes considered per loop, and the budget did cut loops short.
    assert max(work.simulated) <= 3 and work.timed_out > 0
    assert max(roomy.simulated) > 3 and roomy.timed_out == 0
    # Soft taints: two writes per loop at most, where the default budget allowed more.
    assert max(work.soft_taints) <= 2 < max(roomy.soft_taints)
    # Scale-up: the binpacking budgets refused or skipped work; the roomy run never did.
    assert work.binpacking_cut > 0 and roomy.binpacking_cut == 0
    assert summary != roomy_summary
