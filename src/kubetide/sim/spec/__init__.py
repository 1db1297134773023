"""The scenario spec: a scenario file read, checked and loaded into values the runtime runs.

Bottom of sim/: it imports neither the runtime nor the reports. scenario.py is the loader (shape
and raw parts), qos.py spec.qos, usage.py spec.usage and the usage annotation (profiles.py: the
loaded profiles), files.py the files a scenario names, limits.py how much a scenario may ask for
(`--limit`), errors.py the one error all of them raise, export.py what a scenario exported from a
cluster keeps of its objects.
"""

from kubetide.sim.spec.errors import ScenarioError
from kubetide.sim.spec.scenario import Scenario, load_scenario, parse_scenario, scenario_from_documents

__all__ = ["Scenario", "ScenarioError", "load_scenario", "parse_scenario", "scenario_from_documents"]
