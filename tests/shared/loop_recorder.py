"""kubetide's Autoscaler in the simulator, keeping every loop's LoopResult for the test to read."""

from __future__ import annotations

from kubetide.autoscaler.loop import Autoscaler, LoopResult
from kubetide.clock import work_timer


def recording_autoscaler(loops: list[LoopResult], seed: int):
    """A Simulation autoscaler_factory: the Autoscaler with `seed` on a work-driven timer, each
    loop's result appended to `loops`."""

    class Recording(Autoscaler):
        def run_once(self) -> LoopResult:
            result = super().run_once()
            loops.append(result)
            return result

    def factory(options, clock, view, actions, cloud):
        return Recording(options, clock, view, actions, cloud, seed=seed, timer=work_timer())

    return factory
