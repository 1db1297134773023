"""Differential test against the real Cluster Autoscaler 1.30.7 (../shared/ca-oracle) on random
clusters of blocked nodes (issue 28 item 6): wherever both find a node BlockedByPod, kubetide's
`blocking_pod` is the pod CA names, with the same reason, and CA's pod is among kubetide's
`blocking_pods`. Nodes hold, in random dump order, pods of every blocking kind: bare,
safe-to-evict "false", young kube-system pods without a budget, local storage, and pods a budget
of minAvailable 1 pins (CA's PDB rule, the last of each pod's rules). Before kubetide walked the
pods in CA's order, about one node in ten named another pod. Skips where the oracle is absent;
KUBETIDE_REQUIRE_CA_ORACLE=1 (.ci/run) makes it mandatory."""

from __future__ import annotations

import json
import lzma
import os
import random
import subprocess
from pathlib import Path

import pytest
from unblock_cluster import NOW, SAFE_TO_EVICT, Cluster

ORACLE_ARCHIVE = Path(__file__).resolve().parents[3].parent / "shared" / "ca-oracle" / "ca-oracle.xz"
CLUSTERS = 30
KINDS = ("replicated", "replicated", "bare", "not-safe", "kube-system", "local-storage", "pinned")


@pytest.fixture(scope="module")
def oracle(tmp_path_factory) -> Path:
    if not ORACLE_ARCHIVE.exists():
        reason = f"the Cluster Autoscaler oracle is not here: {ORACLE_ARCHIVE}"
        if os.environ.get("KUBETIDE_REQUIRE_CA_ORACLE") == "1":
            pytest.fail(f"{reason} (KUBETIDE_REQUIRE_CA_ORACLE=1)", pytrace=False)
        pytest.skip(reason)
    binary = tmp_path_factory.mktemp("ca-oracle") / "ca-oracle"
    binary.write_bytes(lzma.decompress(ORACLE_ARCHIVE.read_bytes()))
    binary.chmod(0o755)
    return binary


def cluster(seed: int) -> Cluster:
    rng = random.Random(seed)
    c = Cluster()
    c.group("general", 0)
    nodes = [f"n{i}" for i in range(rng.randint(3, 6))]
    for name in nodes:
        c.node(name)
    for i in range(rng.randint(4, 14)):
        node, kind, name = rng.choice(nodes), rng.choice(KINDS), f"p{i:02d}-{rng.randint(0, 999)}"
        app = f"app{i}"
        if kind == "bare":
            c.pod(name, node, "200m")
        elif kind == "kube-system":
            c.replicaset(app, 1, namespace="kube-system")
            c.pod(name, node, "200m", app=app, namespace="kube-system")
        else:
            c.replicaset(app, 1)
            annotations = {SAFE_TO_EVICT: "false"} if kind == "not-safe" else None
            volumes = [{"name": "scratch", "emptyDir": {}}] if kind == "local-storage" else None
            c.pod(name, node, "200m", app=app, annotations=annotations, volumes=volumes)
            if kind == "pinned":
                c.pdb(app, {"minAvailable": 1}, healthy=1, expected=1)
    rng.shuffle(c.items)  # the dump's order is each node's pod order, for CA and kubetide alike
    return c


@pytest.mark.parametrize("seed", range(CLUSTERS))
def test_the_blocking_pod_is_the_one_the_cluster_autoscaler_names(oracle, tmp_path, seed):
    c = cluster(seed)
    ours = c.plan(tmp_path)["scale_down"]["nodes"]
    dump = tmp_path / "dump.json"
    dump.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": c.items}))
    out = subprocess.run(
        [str(oracle), "-what", "scaledown", "-now", NOW, "-max-scale-down-parallelism", "0", str(dump)],
        capture_output=True,
        text=True,
        check=True,
    )
    theirs = json.loads(out.stdout)["scaledown"]["unremovable"] or {}
    compared = 0
    for node, ca in theirs.items():
        if ca.get("reason") != "BlockedByPod" or ours[node]["reason"] != "BlockedByPod":
            continue
        compared += 1
        named = {"pod": ca["blocking_pod"], "reason": ca["pod_reason"]}
        first = ours[node]["blocking_pod"]
        assert {"pod": first["pod"], "reason": first["reason"]} == named, node
        assert named["pod"] in [b["pod"] for b in ours[node]["blocking_pods"]]
    assert compared or not any(n["reason"] == "BlockedByPod" for n in ours.values())
