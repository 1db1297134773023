"""summary.json `qos.scale_down_guard`: what scale-down's QoS watermark guard changed.

Present when the scenario has spec.qos and scale-down on. Per run: whether the guard was on
(scale-down-respect-qos-watermarks), how many usage spikes the profiles declare (distinct
generator spike starts within the run) and the agent's evictions per spike. The guard on and off
side by side is a `spec.compare` of two settings of scale-down-respect-qos-watermarks (see
examples/qos-scaledown.yaml): compare.json then shows the evictions avoided next to their price.
"""

from __future__ import annotations

from typing import Any

from kubetide.sim.spec.scenario import Scenario


def guard_summary(scenario: Scenario, summary: dict[str, Any]) -> dict[str, Any]:
    assert scenario.qos is not None, "a QoS guard summary of a scenario without spec.qos"
    spikes = len(scenario.qos.usage.spike_starts(scenario.duration))
    evictions = summary["qos"]["evictions"]
    return {
        "respect_qos_watermarks": scenario.options.scale_down_respect_qos_watermarks,
        "spikes": spikes,
        "evictions_per_spike": round(evictions / spikes, 2) if spikes else None,
    }
