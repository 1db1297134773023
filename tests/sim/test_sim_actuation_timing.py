"""Issue 24 item 6: deletions act on their own timers, not once per loop (CA's goroutines)."""

from __future__ import annotations

import pytest
from sim_helpers import group, make_scenario

from kubetide.sim.runtime.simulation import Simulation


def empty_group_scenario(autoscaler):
    """Two empty nodes of a group with minSize 0: both go once unneeded for a minute."""
    return make_scenario(
        groups=[group("general", size=2, min_size=0, deletionDelay="30s")],
        autoscaler={
            "scale-down-unneeded-time": "1m",
            "scale-down-delay-after-add": "0s",
            "scan-interval": "10s",
            **autoscaler,
        },
        duration="5m",
    )


def times(sim, reason, source=None):
    return [
        e["time"]
        for e in sim.log.entries
        if e["reason"] == reason and (source is None or e["source"] == source)
    ]


@pytest.mark.parametrize(
    ("flags", "taint_to_delete"),
    [
        # (flags, seconds from the ToBeDeleted taint to the cloud's DeleteNodes)
        ({}, 5.0),  # node-delete-delay-after-taint 5s, between two 10 s loops
        ({"node-delete-delay-after-taint": "3s"}, 3.0),
        ({"node-delete-delay-after-taint": "0s"}, 0.0),  # at once, in the loop that tainted
        ({"node-delete-delay-after-taint": "15s"}, 15.0),  # not a loop boundary either
        ({"node-delete-delay-after-taint": "3s", "node-deletion-batcher-interval": "4s"}, 7.0),
    ],
)
def test_an_empty_node_is_deleted_its_delays_after_its_taint(flags, taint_to_delete):
    sim = Simulation(empty_group_scenario(flags))
    sim.run()
    marked = [e["time"] for e in sim.log.entries if e["reason"] == "ScaleDown" and "marked" in e["message"]]
    deleted = times(sim, "DeleteNodes")
    assert marked and deleted
    assert deleted[0] - marked[0] == pytest.approx(taint_to_delete)
