"""Issue 38 item 4: every arm keeps the invariants on random clusters (tests/shared/random_clusters.py:
bare pods, StatefulSets, budgets, local storage, priorities, several node groups), each made a
two-hour scenario by `scenario from-cluster` and run under the cluster-autoscaler and karpenter
policies (kubetide's own is the golden outputs' run of the same clusters)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from golden_outputs import run_cli
from random_clusters import random_cluster

from kubetide.sim import Simulation, load_scenario

SEEDS = range(20)


def scenario_of(seed: int, tmp: Path, policy: str) -> Path:
    dump, groups, flags = random_cluster(seed)
    (tmp / "cluster.yaml").write_text(yaml.safe_dump(dump))
    (tmp / "groups.yaml").write_text(yaml.safe_dump({"nodeGroups": groups}))
    out = tmp / "scenario.yaml"
    run_cli(
        "scenario",
        "from-cluster",
        str(tmp / "cluster.yaml"),
        "--node-groups",
        str(tmp / "groups.yaml"),
        "--out",
        str(out),
    )
    scenario = yaml.safe_load(out.read_text())
    scenario["spec"]["duration"] = "2h"
    scenario["spec"]["autoscaler"] = {**flags, "policy": policy}
    scenario["spec"].setdefault("cluster", {})["jobRunDuration"] = "24h"
    out.write_text(yaml.safe_dump(scenario))
    return out


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("policy", ("cluster-autoscaler", "karpenter"))
def test_random_clusters_keep_the_invariants(seed, policy, tmp_path):
    summary = Simulation(load_scenario(scenario_of(seed, tmp_path, policy))).run().summary
    assert summary["autoscaler"] == policy
    assert summary["invariants"] == {"pdb_violations": 0, "pods_lost": 0, "nodes_deleted_with_pods": 0}
