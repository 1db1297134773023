"""Differential test of the scale-up estimate against the real Cluster Autoscalers 1.30.7 and
1.36.1 (../shared/ca-oracle: BinpackingNodeEstimator on a template copied from each group's first
node), one kubetide plan per cluster, both oracles on the same dump.

CA's estimator is not deterministic in either version (it meets equivalence groups in Go map
order), so its answer is the set of outcomes over ORACLE_RUNS runs of each version. For every node
group, kubetide helps the same pods, and asks for a node count that version reached in one of its
runs, or for fewer: the deliberate class `fewer_nodes_than_ca` (kubetide's estimator tries CA's
first-fit-decreasing order and a few others and keeps the best; docs/differences.md). The pods here
have no init containers or overhead, so 1.33's new pod order (which counts them) sorts them as
1.30's did; 1.36's first-fit that resumes on the newest node rather than wrapping back is inside
the spread the runs show.
"""

from __future__ import annotations

import json
import random

import pytest
from ca_oracle import GROUP_LABEL, kubetide_json, node, oracles_for, pod, replicaset, run_oracle, write_dump

CLUSTERS = 20
CLUSTERS_1_30 = 8  # of them, also against CA 1.30 (ca_oracle.oracles_for)
ORACLE_RUNS = 10  # per CA version: enough to see the spread of its outcomes
HOSTNAME = "kubernetes.io/hostname"


def cluster(seed: int) -> list[dict]:
    """Two groups (4 and 8 cpu) whose nodes are full, and 10-40 pending pods of 2-4 shapes; some
    shapes want the big group, some one node each (hostname anti-affinity)."""
    rng = random.Random(seed)
    items: list[dict] = []
    for group, cpu, count in (("general", "4", rng.randint(2, 3)), ("big", "8", rng.randint(1, 2))):
        for i in range(count):
            name = f"{group}-{i}"
            items.append(node(name, group, cpu=cpu, memory="32Gi"))
            items += [
                pod(f"fill-{name}-{j}", name, "fill", "1950m" if cpu == "4" else "3950m") for j in range(2)
            ]
    items.append(replicaset("fill", sum(1 for i in items if i["kind"] == "Pod")))
    for s in range(rng.randint(2, 4)):
        app = f"shape{s}"
        replicas = rng.randint(3, 12)
        cpu = rng.choice(["300m", "700m", "1100m", "2500m", "3"])
        memory = rng.choice(["256Mi", "1Gi", "6Gi"])
        spec: dict = {}
        roll = rng.random()
        if roll < 0.25:
            spec["nodeSelector"] = {GROUP_LABEL: "big"}
        elif roll < 0.4:
            replicas = min(replicas, 6)
            term = {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": HOSTNAME}
            spec["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
        items += [pod(f"{app}-{i}", None, app, cpu, memory=memory, spec=spec) for i in range(replicas)]
        items.append(replicaset(app, replicas))
    return items


@pytest.mark.parametrize("seed", range(CLUSTERS))
def test_every_estimate_is_one_of_the_cluster_autoscalers_or_fewer_nodes(oracles, tmp_path, seed):
    items = cluster(seed)
    path = write_dump(tmp_path, items)
    pending = {
        f"prod/{i['metadata']['name']}" for i in items if i["kind"] == "Pod" and "nodeName" not in i["spec"]
    }
    groups = tmp_path / "groups.json"  # no group limit cuts an estimate short: CA's -max-nodes is 1000
    groups.write_text(json.dumps({"nodeGroups": [{"name": g, "maxSize": 1000} for g in ("general", "big")]}))
    plan = kubetide_json("plan", str(path), "--node-groups", str(groups))["scale_up"]
    assert set(plan["pending"]) == pending  # nothing fits the full nodes: both estimate every pod
    ours = {o["node_group"]: o for o in plan["options"]}
    for version, oracle in oracles_for(oracles, seed, CLUSTERS_1_30).items():
        outcomes: dict[str, set[tuple[int, frozenset[str]]]] = {}
        for _ in range(ORACLE_RUNS):
            for estimate in run_oracle(oracle, path, "estimate", "-group-templates")["estimate"]:
                group = estimate["template"].removeprefix("template-node-for-")
                outcomes.setdefault(group, set()).add((estimate["nodes"], frozenset(estimate["scheduled"])))
        assert set(outcomes) == {"general", "big"}, version
        for group, theirs in outcomes.items():
            helped = frozenset(ours[group]["pods"]) if group in ours else frozenset()
            count = ours[group]["node_count"] if group in ours else 0
            assert {scheduled for _, scheduled in theirs} == {helped}, (version, group)
            counts = {nodes for nodes, _ in theirs}
            assert count in counts or count < min(counts), (version, group, count, sorted(counts))
