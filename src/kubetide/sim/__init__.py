"""The embedded discrete-event cluster simulator behind `kubetide simulate`.

One module per simulated component (engine, cloud, scheduler, controllers, kubelet, eviction API,
node lifecycle, faults), wired together by `Simulation`; see docs/architecture.md (sim/).
"""

from kubetide.sim.scenario import Scenario, ScenarioError, load_scenario
from kubetide.sim.simulation import AutoscalerFactory, NoAutoscaler, Simulation, SimulationResult

__all__ = [
    "AutoscalerFactory",
    "NoAutoscaler",
    "Scenario",
    "ScenarioError",
    "Simulation",
    "SimulationResult",
    "load_scenario",
]
