"""Issue 38 item 4: every arm keeps the invariants on random clusters (tests/shared/random_clusters.py:
bare pods, StatefulSets, budgets, local storage, priorities, several node groups), each made a
two-hour scenario by `scenario from-cluster` and run under the cluster-autoscaler and karpenter
policies (kubetide's own is the golden outputs' run of the same clusters)."""

from __future__ import annotations

from pathlib import Path

import pytest
from golden_outputs import random_scenario

from kubetide.sim import Simulation, load_scenario

SEEDS = range(20)


def scenario_of(seed: int, tmp: Path, policy: str) -> Path:
    return random_scenario(seed, tmp, policy=policy)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("policy", ("cluster-autoscaler", "karpenter"))
def test_random_clusters_keep_the_invariants(seed, policy, tmp_path):
    summary = Simulation(load_scenario(scenario_of(seed, tmp_path, policy))).run().summary
    assert summary["autoscaler"] == policy
    assert summary["invariants"] == {"pdb_violations": 0, "pods_lost": 0, "nodes_deleted_with_pods": 0}
