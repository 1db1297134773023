"""The embedded discrete-event cluster simulator behind `kubetide simulate`.

One module per simulated component (engine, cloud, scheduler, controllers, kubelet, eviction API,
node lifecycle, faults), wired together by `Simulation`; see docs/architecture.md (sim/).
"""

from kubetide.sim.runtime.simulation import AutoscalerFactory, NoAutoscaler, Simulation, SimulationResult
from kubetide.sim.spec import Scenario, ScenarioError, load_scenario

__all__ = [
    "AutoscalerFactory",
    "NoAutoscaler",
    "Scenario",
    "ScenarioError",
    "Simulation",
    "SimulationResult",
    "load_scenario",
]
