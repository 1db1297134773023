"""Differential test against the real Cluster Autoscalers 1.30.7 and 1.36.1 (../shared/ca-oracle)
on random clusters of blocked nodes (issue 28 item 6): wherever both find a node BlockedByPod, kubetide's
`blocking_pod` is the pod CA names, with the same reason, and CA's pod is among kubetide's
`blocking_pods`. Nodes hold, in random dump order, pods of every blocking kind: bare,
safe-to-evict "false", young kube-system pods without a budget, local storage, and pods a budget
of minAvailable 1 pins (CA's PDB rule, the last of each pod's rules). Before kubetide walked the
pods in CA's order, about one node in ten named another pod. Both versions name the same pods here:
the kube-system pods are younger than 1.36's 1h timeout, and no pod is "on-completion"."""

from __future__ import annotations

import random

import pytest
from ca_oracle import SAFE_TO_EVICT, kubetide_json, node, oracles_for, pod, replicaset, run_oracle, write_dump

CLUSTERS = 30
CLUSTERS_1_30 = 15  # of them, also against CA 1.30 (ca_oracle.oracles_for)
KINDS = ("replicated", "replicated", "bare", "not-safe", "kube-system", "local-storage", "pinned")
NOW = "2026-11-26T00:30:00Z"  # every object is 30 minutes old: kube-system pods still block


def pinning_pdb(app: str) -> dict:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": app, "namespace": "prod"},
        "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": app}}},
        "status": {"disruptionsAllowed": 0, "currentHealthy": 1, "desiredHealthy": 1, "expectedPods": 1},
    }


def cluster(seed: int) -> list[dict]:
    rng = random.Random(seed)
    nodes = [f"n{i}" for i in range(rng.randint(3, 6))]
    items = [node(name) for name in nodes]
    for i in range(rng.randint(4, 14)):
        host, kind, name, app = (
            rng.choice(nodes),
            rng.choice(KINDS),
            f"p{i:02d}-{rng.randint(0, 999)}",
            f"app{i}",
        )
        if kind == "bare":
            items.append(pod(name, host, app, "200m", owner=None))
        elif kind == "kube-system":
            items += [
                replicaset(app, 1, "kube-system"),
                pod(name, host, app, "200m", namespace="kube-system"),
            ]
        else:
            annotations = {SAFE_TO_EVICT: "false"} if kind == "not-safe" else None
            volumes = {"volumes": [{"name": "scratch", "emptyDir": {}}]} if kind == "local-storage" else None
            items += [replicaset(app, 1), pod(name, host, app, "200m", annotations=annotations, spec=volumes)]
            if kind == "pinned":
                items.append(pinning_pdb(app))
    rng.shuffle(items)  # the dump's order is each node's pod order, for CA and kubetide alike
    return items


@pytest.mark.parametrize("seed", range(CLUSTERS))
def test_the_blocking_pod_is_the_one_the_cluster_autoscaler_names(oracles, tmp_path, seed):
    dump = write_dump(tmp_path, cluster(seed))
    ours = kubetide_json("plan", str(dump), "--now", NOW)["scale_down"]["nodes"]
    args = ("-now", NOW, "-max-scale-down-parallelism", "0")
    for version, oracle in oracles_for(oracles, seed, CLUSTERS_1_30).items():
        theirs = run_oracle(oracle, dump, "scaledown", *args)["scaledown"]["unremovable"] or {}
        compared = 0
        for name, ca in theirs.items():
            if ca.get("reason") != "BlockedByPod" or ours[name]["reason"] != "BlockedByPod":
                continue
            compared += 1
            named = {"pod": ca["blocking_pod"], "reason": ca["pod_reason"]}
            first = ours[name]["blocking_pod"]
            assert {"pod": first["pod"], "reason": first["reason"]} == named, (version, name)
            assert named["pod"] in [b["pod"] for b in ours[name]["blocking_pods"]], (version, name)
        assert compared or not any(n["reason"] == "BlockedByPod" for n in ours.values()), version
