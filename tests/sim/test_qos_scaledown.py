"""examples/qos-scaledown.yaml: scale-down on beside the node QoS agent (issue 18 item 3).

Without the guard, scale-down drains the node scale-up added for the evicted pods back onto the
hot node, and the agent evicts them again at every spike. With it, the destination that would
cross its watermark is refused and the agent evicts at the first spike only.
"""

import dataclasses
from pathlib import Path

import pytest

from kubetide.autoscaler.scaledown.reasons import NodeReason
from kubetide.sim import Simulation, load_scenario
from kubetide.sim.runtime.qosguard import guard_summary
from kubetide.sweep.compare import comparison, run_variants, scenario_variants
from kubetide.sweep.engines import LocalEngine

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "qos-scaledown.yaml"
GUARD_REASON = str(NodeReason.NO_PLACE_TO_MOVE_PODS_BELOW_QOS_WATERMARK)


def run(guard: bool):
    scenario = load_scenario(EXAMPLE)
    scenario = dataclasses.replace(
        scenario,
        options=scenario.options.with_values(scale_down_respect_qos_watermarks=guard),
        compare=[],
    )
    sim = Simulation(scenario)
    return sim, sim.run().summary


@pytest.fixture(scope="module")
def runs():
    return {guard: run(guard) for guard in (False, True)}


def test_the_example_has_scale_down_on_and_the_guard_on():
    scenario = load_scenario(EXAMPLE)
    assert scenario.options.scale_down_enabled
    assert scenario.options.scale_down_respect_qos_watermarks


def test_evictions_by_the_agent_fall_with_the_guard_on(runs):
    (_, off), (_, on) = runs[False], runs[True]
    spikes = on["qos"]["scale_down_guard"]["spikes"]
    assert spikes == off["qos"]["scale_down_guard"]["spikes"] > 2
    # Without the guard the fight repeats: evictions at (nearly) every spike, a node added and
    # removed each time.
    assert off["qos"]["evictions"] >= 3 * (spikes - 1)
    assert off["scale_down"]["nodes_removed"] >= spikes - 2
    # With it, only the first spike (before any node was added) makes the agent evict.
    assert 0 < on["qos"]["evictions"] <= 3
    assert on["qos"]["evictions"] < off["qos"]["evictions"] / 3
    assert on["qos"]["seconds_over_watermark"] < off["qos"]["seconds_over_watermark"]
    assert on["scale_down"]["nodes_removed"] == 0
    assert (
        on["qos"]["scale_down_guard"]["evictions_per_spike"]
        < off["qos"]["scale_down_guard"]["evictions_per_spike"]
    )


def test_the_kept_node_says_why(runs):
    sim, _ = runs[True]
    plan = sim.autoscaler.planner.last_plan
    why = [f"{status.reason} {status.detail}" for status in plan.nodes.values()]
    guarded = [text for text in why if GUARD_REASON in text]
    assert len(guarded) == 1 and "NodeQOS workers-cpu rule cpu-80" in guarded[0], why


def test_the_example_compares_the_guard_on_and_off(runs, tmp_path):
    scenario = load_scenario(EXAMPLE)  # spec.compare: guard-on (the scenario's own), guard-off
    variants = scenario_variants(scenario)
    assert [v.name for v in variants] == ["guard-on", "guard-off"]
    results = run_variants(scenario, None, variants, tmp_path, LocalEngine(2))
    columns = {
        entry["name"]: entry["qos"] for entry in comparison(scenario, scenario.seed, results)["settings"]
    }
    on, off = columns["guard-on"], columns["guard-off"]
    assert (on["respect_qos_watermarks"], off["respect_qos_watermarks"]) == (True, False)
    for column, guard in ((on, True), (off, False)):  # each column is the lone run with that flag
        alone = runs[guard][1]
        assert column["evictions"] == alone["qos"]["evictions"]
        assert column["evictions_per_spike"] == alone["qos"]["scale_down_guard"]["evictions_per_spike"]
        assert (
            column["cost"] == alone["cost"]
            and column["nodes_removed"] == alone["scale_down"]["nodes_removed"]
        )
    assert on["evictions"] < off["evictions"]


def test_no_guard_summary_without_scale_down():
    scenario = load_scenario(EXAMPLE)
    scenario = dataclasses.replace(
        scenario,
        options=scenario.options.with_values(scale_down_enabled=False),
        compare=[],
        duration=600.0,
    )
    assert "scale_down_guard" not in Simulation(scenario).run().summary["qos"]


def test_spikes_are_counted_from_the_profiles():
    scenario = load_scenario(EXAMPLE)
    # every 20m from 10m, for 2h: 10, 30, 50, 70, 90, 110 minutes
    assert scenario.qos.usage.spike_starts(scenario.duration) == [600.0 + 1200.0 * k for k in range(6)]
    summary = {"qos": {"evictions": 3}}
    assert guard_summary(scenario, summary)["evictions_per_spike"] == 0.5


def test_ceilings_are_the_lowest_evict_or_throttle_watermark_per_resource():
    from fractions import Fraction

    from kubetide.model import Node, ObjectMeta
    from kubetide.qos import AvoidanceAction, CpuThrottle, NodeQOS, QosConfig, Rule
    from kubetide.qos.ceilings import node_ceilings

    def rule(name, action, metric, value, strategy="None"):
        return Rule(name, action, metric, value, Fraction(value), strategy=strategy)

    config = QosConfig.build(
        [
            NodeQOS(
                "a",
                (
                    rule("cpu-90", "evict", "cpu_total_utilization", 90),
                    rule("cpu-70-preview", "evict", "cpu_total_utilization", 70, strategy="Preview"),
                    rule("cpu-60-taint", "taint", "cpu_total_utilization", 60),
                    rule("mem-80", "evict", "memory_total_utilization", 80),
                ),
            ),
            NodeQOS("b", (rule("cpu-abs", "throttle", "cpu_total_usage", 6500),)),
        ],
        [
            AvoidanceAction("evict", evicts=True),
            AvoidanceAction("throttle", throttle=CpuThrottle()),
            AvoidanceAction("taint"),
        ],
    )
    alloc = {"cpu": 8000, "memory": 32 * 2**30}
    worker = Node(ObjectMeta("w"), alloc, dict(alloc))
    found = {c.resource: c for c in node_ceilings(config, worker)}
    # cpu: 90% of 8 cores is 7200m, the absolute 6500m is lower; Preview and disable-scheduling
    # rules evict nothing and do not count.
    assert found["cpu"].amount == 6500 and "NodeQOS b rule cpu-abs" in found["cpu"].source
    assert found["memory"].amount == int(0.8 * 32 * 2**30)
