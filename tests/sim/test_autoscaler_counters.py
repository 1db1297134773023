"""summary.json's cluster_health and node_groups, counted by the simulator (sim/runtime/
autoscalercounters.py) from the registry's answers after each loop and from its own cloud.
The use cases end to end (UC5, UC4, UC8 with the real autoscaler) are in test_unready_scenarios.py."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from sim_helpers import group, make_scenario

from kubetide.autoscaler.clusterstate.records import placeholder_node
from kubetide.autoscaler.ports import ActionError
from kubetide.sim import Simulation
from kubetide.sim.runtime.autoscalercounters import AutoscalerCounters


@dataclass
class Backoff:
    seconds: dict[str, float] = field(default_factory=dict)

    def backed_off_seconds(self, group_id: str, now: float) -> float:
        return self.seconds.get(group_id, 0.0)


@dataclass
class Registry:
    """The answers a ClusterStateRegistry gives after an update at `last_update`."""

    last_update: float | None = None
    healthy: bool = True
    backoff: Backoff = field(default_factory=Backoff)

    def is_cluster_healthy(self) -> bool:
        return self.healthy


def counters() -> tuple[Simulation, AutoscalerCounters]:
    scenario = make_scenario(groups=[group("a", size=2), group("b", size=1)], duration="10m")
    sim = Simulation(scenario)
    sim.setup()
    return sim, AutoscalerCounters(sim.cloud)


def test_unhealthy_time_runs_between_updates_and_to_the_end():
    _, c = counters()
    registry = Registry()
    for at, healthy in ((0.0, True), (10.0, False), (20.0, False), (30.0, True), (40.0, False)):
        registry.last_update, registry.healthy = at, healthy
        c.observe(registry)
    health = c.summary(registry, now=65.0)["cluster_health"]
    # Unhealthy from the update at 10 to the one at 30, and from 40 to the end.
    assert health == {"unhealthy_seconds": 20.0 + 25.0, "halted_loops": 3}


def test_a_loop_that_did_not_update_the_registry_counts_nothing():
    _, c = counters()
    registry = Registry(last_update=10.0, healthy=False)
    c.observe(registry)
    c.observe(registry)  # the same update seen again
    assert c.summary(registry, now=10.0)["cluster_health"]["halted_loops"] == 1
    c.observe(Registry())  # no update yet (a fresh process)
    assert c.summary(registry, now=10.0)["cluster_health"]["halted_loops"] == 1


def test_group_repairs_are_counted_in_the_cloud_and_start_over_on_restart():
    sim, c = counters()
    a = sim.cloud.groups["a"]
    a.increase_size(2)  # two requests, not registered yet
    a.decrease_target_size(-1)  # S4/UC4: the target lowered to what registered
    pending = next(i for i in a.sim_instances() if not i.registered)
    a.delete_nodes([placeholder_node(pending.id)])  # UC5: deleted before it registered
    with pytest.raises(ActionError):
        a.decrease_target_size(-5)  # refused by the cloud: no fix happened
    registry = Registry(last_update=0.0, backoff=Backoff({"b": 42.0}))
    groups = c.summary(registry, now=60.0)["node_groups"]
    assert groups == {
        "a": {"backoff_seconds": 0.0, "unregistered_removed": 1, "target_size_fixes": 1},
        "b": {"backoff_seconds": 42.0, "unregistered_removed": 0, "target_size_fixes": 0},
    }
    c.restarted()
    after = c.summary(registry, now=60.0)["node_groups"]["a"]
    assert (after["unregistered_removed"], after["target_size_fixes"]) == (0, 0)


def test_no_registry_no_counts():
    _, c = counters()
    assert c.summary(None, now=0.0) == {}
