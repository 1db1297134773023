"""Issue 24 item 7 for the simulator's cloud: a deletion handed to SimNodeGroup leaves its target at
once and its instance is DELETING until deletionDelay removes the Node, so the min-size check
counts it once (the same table as tests/cloud/test_deletions_counted_once.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from sim_helpers import group, make_scenario, simulate

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "cloud"))
from test_deletions_counted_once import CASES, min_size_verdict


@pytest.mark.parametrize(("min_size", "asked", "expected"), CASES)
def test_sim_cloud(min_size, asked, expected):
    sim = simulate(make_scenario(groups=[group("general", size=2, min_size=min_size, deletionDelay="60s")]))
    a, b = sorted(sim.world.snapshot.nodes(), key=lambda n: n.name)
    (general,) = sim.cloud.node_groups()
    assert min_size_verdict(sim.cloud, a, b, asked=asked) is expected
    assert a.name in sim.world.snapshot  # still there: its Node goes after deletionDelay
    assert general.target_size() == 2 - asked
