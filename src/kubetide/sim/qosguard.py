"""summary.json `qos.scale_down_guard`: what scale-down's QoS watermark guard changed.

Present when the scenario has spec.qos and scale-down on. Per run: whether the guard was on
(scale-down-respect-qos-watermarks), how many usage spikes the profiles declare (distinct
generator spike starts within the run) and the agent's evictions per spike. With
`spec.qos.compare` the scenario also runs again with the guard flipped (same seed, same
autoscaler), and `comparison` holds {"on": ..., "off": ...}: the agent's counts, nodes added and
removed, cost and pending pod-seconds of each run, so the price of the evictions avoided is there
next to them.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from kubetide.sim.qos import mode_counts


def guard_summary(simulation: Any, summary: dict[str, Any]) -> dict[str, Any]:
    scenario = simulation.scenario
    spikes = len(scenario.qos.usage.spike_starts(scenario.duration))
    evictions = summary["qos"]["evictions"]
    return {
        "respect_qos_watermarks": scenario.options.scale_down_respect_qos_watermarks,
        "spikes": spikes,
        "evictions_per_spike": round(evictions / spikes, 2) if spikes else None,
    }


def _counts(summary: dict[str, Any]) -> dict[str, Any]:
    counts = mode_counts(summary)
    counts["nodes_removed"] = summary["scale_down"]["nodes_removed"]
    counts["evictions_per_spike"] = summary["qos"]["scale_down_guard"]["evictions_per_spike"]
    return counts


def compare_guard(simulation: Any, summary: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Run the scenario again with the guard flipped; {"on": counts, "off": counts}."""
    scenario = simulation.scenario
    on = scenario.options.scale_down_respect_qos_watermarks
    other = dataclasses.replace(
        scenario,
        options=scenario.options.with_values(scale_down_respect_qos_watermarks=not on),
        qos=dataclasses.replace(scenario.qos, compare=False),
    )
    run = type(simulation)(
        other,
        seed=simulation.seed,
        autoscaler_factory=simulation.factory,
        autoscaler_name=simulation.autoscaler_name,
    ).run()
    mine, theirs = _counts(summary), _counts(run.summary)
    return {"on": mine, "off": theirs} if on else {"on": theirs, "off": mine}
