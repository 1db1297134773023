"""RunOnce's order (issue 42 item 4): a loop that scales up starts no scale-down, whatever
scale-down-delay-after-add is. The Cluster Autoscaler returns from RunOnce after a scale-up ("No
scale down in this iteration"); before the fix kubetide, with the delay at 0, tainted a node
ToBeDeleted in the same loop (the same second) as an IncreaseSize.

The scenario keeps scale-up busy every loop for a while (one more pod that needs a new node of
group "special" every scan-interval) while two empty nodes of group "general" become removable
in the middle of it: they are tainted only in the first loop after the scale-ups stop.
"""

from __future__ import annotations

import pytest
from loop_recorder import recording_autoscaler
from sim_helpers import deployment, group, make_scenario

from kubetide.autoscaler.loop import LoopResult
from kubetide.autoscaler.scaledown.planning.timers import SCALED_UP_THIS_LOOP
from kubetide.cli.run_log import loop_lines
from kubetide.sim import Simulation

SCAN = 10.0
GROW_FROM, GROW_UNTIL = 20, 200  # seconds: one more "special" pod every scan-interval


def scenario(delay_after_add: str):
    special = group(
        "special",
        size=0,
        max_size=40,
        template={
            "metadata": {"labels": {"pool": "special"}},
            "status": {"allocatable": {"cpu": "4", "memory": "16Gi", "pods": "110"}},
        },
    )
    grow = [
        {"at": f"{t}s", "scale": {"kind": "Deployment", "name": "grow", "replicas": i + 1}}
        for i, t in enumerate(range(GROW_FROM, GROW_UNTIL + 1, int(SCAN)))
    ]
    return make_scenario(
        groups=[group("general", size=2, min_size=0), special],
        # Each pod takes a whole "special" node, so every new one asks for another.
        objects=[deployment("grow", 0, cpu="3", pod_extra={"nodeSelector": {"pool": "special"}})],
        events=grow,
        autoscaler={
            "scan-interval": f"{SCAN:g}s",
            "scale-down-unneeded-time": "1m",
            "scale-down-delay-after-add": delay_after_add,
        },
        duration="8m",
    )


def loop_times(sim, reason, match=""):
    return sorted({e["time"] for e in sim.log.entries if e["reason"] == reason and match in e["message"]})


@pytest.mark.parametrize("delay_after_add", ["0s", "1s"])
def test_no_node_is_tainted_for_deletion_in_a_loop_that_scaled_up(delay_after_add):
    loops: list[LoopResult] = []
    factory = recording_autoscaler(loops, seed=1)

    sim = Simulation(scenario(delay_after_add), autoscaler_factory=factory)
    sim.setup()
    # In a loop that scaled up, the status says why nothing was started.
    sim.engine.run_until(sim.engine.start + GROW_FROM + 2 * SCAN)
    assert sim.world.autoscaler_status.message == SCALED_UP_THIS_LOOP
    sim.run()
    increases = loop_times(sim, "IncreaseSize")
    tainted = loop_times(sim, "ScaleDown", "marked")
    # Scale-up ran every loop while pods kept coming, well past the empty nodes' unneeded time.
    assert len(increases) >= (GROW_UNTIL - GROW_FROM) / SCAN
    assert increases[0] <= GROW_FROM + SCAN and increases[-1] >= GROW_UNTIL
    assert not set(increases) & set(tainted), "a node was tainted ToBeDeleted in a loop that scaled up"
    # Both empty general nodes go, in the first loop after the scale-ups stopped (delay 0) or
    # one scan later at most (a 1s delay after the last scale-up has run out by the next loop).
    assert len(tainted) >= 1 and increases[-1] < tainted[0] <= increases[-1] + 2 * SCAN
    removed = [e for e in sim.log.entries if e["reason"] == "DeleteNodes" and "general" in e["object"]]
    assert removed
    assert sim.world.autoscaler_status.message == ""  # a loop that did not scale up says nothing
    # `kubetide run` logs it for every loop that scaled up, and for no other.
    for result in loops:
        said = [line.message for line in loop_lines(result, {})]
        assert (SCALED_UP_THIS_LOOP in said) == bool(result.scaled_up), (result.now, said)
        assert (result.scale_down_skipped is not None) == bool(result.scaled_up)
