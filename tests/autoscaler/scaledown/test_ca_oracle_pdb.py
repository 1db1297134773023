"""Differential test against the real Cluster Autoscaler 1.30.7 planner (../shared/ca-oracle) on
random clusters with PodDisruptionBudgets (issue 24): every node CA finds removable, kubetide finds
removable too, except the documented class of nodes with a safe-to-evict "true" pod whose budget
has no disruption left (CA skips the PDB check for such pods and then meets 429s until
max-pod-eviction-time; kubetide does not plan a drain the API server will refuse).

The greedy search is order-dependent (two nodes sharing a budget of one: whichever comes first
goes), so CA is given kubetide's order: its candidates, then the nodes waiting for budget, then the
rest in dump order. CA 1.30 does not always keep to it (Go map order: about one run in six takes
another node of the same budget first), so a disagreement counts only when every one of
ORACLE_RUNS runs shows it. Skips where the oracle is absent; KUBETIDE_REQUIRE_CA_ORACLE=1 (.ci/run) makes
it mandatory.
"""

from __future__ import annotations

import json
import lzma
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

ORACLE_ARCHIVE = Path(__file__).resolve().parents[3].parent / "shared" / "ca-oracle" / "ca-oracle.xz"
CLUSTERS = 40
ORACLE_RUNS = 12  # a disagreement must show in every run; CA agrees in about half of them on some clusters
SAFE_TO_EVICT = "cluster-autoscaler.kubernetes.io/safe-to-evict"
OLD = "2026-11-26T00:00:00Z"


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


def cluster(seed: int) -> dict:
    """A kubectl List: 4-8 nodes of one group, three ReplicaSets spread over them, some nodes kept
    busy, PodDisruptionBudgets with the status the disruption controller would write."""
    rng = random.Random(seed)
    nodes = [f"n{i}" for i in range(rng.randint(4, 8))]
    items: list[dict] = [_node(name) for name in nodes]
    for name in rng.sample(nodes, k=rng.randint(1, len(nodes) // 2)):
        items += [_pod(f"fill-{name}-{i}", name, "fill", "900m", rng) for i in range(3)]
    for app in ("api", "web", "db"):
        replicas = rng.randint(1, 6)
        hosts = [rng.choice(nodes) for _ in range(replicas)]
        unready = rng.random() < 0.15
        pods = [
            _pod(f"{app}-{i}", host, app, rng.choice(["200m", "300m", "500m"]), rng)
            for i, host in enumerate(hosts)
        ]
        if unready:
            pods[0]["status"]["conditions"][1]["status"] = "False"
        items += pods
        items.append(_replicaset(app, replicas))
        if rng.random() < 0.8:
            items.append(_pdb(app, replicas, replicas - int(unready), rng))
    items.append(_replicaset("fill", sum(1 for i in items if i["metadata"]["name"].startswith("fill-"))))
    return {"apiVersion": "v1", "kind": "List", "items": items}


def _node(name: str) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {"kubernetes.io/hostname": name, "kubetide.io/node-group": "general"},
            "creationTimestamp": OLD,
        },
        "spec": {},
        "status": {
            "allocatable": {"cpu": "4", "memory": "16Gi", "pods": "110"},
            "capacity": {"cpu": "4", "memory": "16Gi", "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": OLD}],
        },
    }


def _pod(name: str, node: str, app: str, cpu: str, rng: random.Random) -> dict:
    annotations = {SAFE_TO_EVICT: "true"} if app != "fill" and rng.random() < 0.1 else {}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "prod",
            "uid": f"uid-{name}",
            "labels": {"app": app},
            "annotations": annotations,
            "creationTimestamp": OLD,
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "ReplicaSet",
                    "name": app,
                    "uid": f"uid-rs-{app}",
                    "controller": True,
                }
            ],
        },
        "spec": {
            "nodeName": node,
            "containers": [
                {"name": "c", "image": "app", "resources": {"requests": {"cpu": cpu, "memory": "512Mi"}}}
            ],
        },
        "status": {
            "phase": "Running",
            "conditions": [
                {"type": "PodScheduled", "status": "True", "lastTransitionTime": OLD},
                {"type": "Ready", "status": "True", "lastTransitionTime": OLD},
            ],
        },
    }


def _replicaset(app: str, replicas: int) -> dict:
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": app, "namespace": "prod", "uid": f"uid-rs-{app}", "creationTimestamp": OLD},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": app}},
            "template": {
                "metadata": {"labels": {"app": app}},
                "spec": {"containers": [{"name": "c", "image": "app"}]},
            },
        },
        "status": {"replicas": replicas},
    }


def _pdb(app: str, expected: int, healthy: int, rng: random.Random) -> dict:
    kind = rng.choice(["maxUnavailable", "maxUnavailable", "minAvailable"])
    if kind == "maxUnavailable":
        value = rng.randint(1, 2)
        desired = max(0, expected - value)
    else:
        value = rng.randint(max(0, expected - 2), expected)
        desired = value
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": app, "namespace": "prod", "creationTimestamp": OLD},
        "spec": {kind: value, "selector": {"matchLabels": {"app": app}}},
        "status": {
            "disruptionsAllowed": max(0, healthy - desired),
            "currentHealthy": healthy,
            "desiredHealthy": desired,
            "expectedPods": expected,
            "observedGeneration": 1,
        },
    }


def kubetide_plan(path: Path) -> dict:
    out = subprocess.run(
        [sys.executable, "-m", "kubetide.cli.main", "plan", str(path), "--json"],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout)["scale_down"]


def ca_unneeded(oracle: Path, path: Path, order: list[str]) -> dict:
    order_file = path.with_suffix(".order")
    order_file.write_text("\n".join(order) + "\n")
    out = subprocess.run(
        [
            str(oracle),
            "-what",
            "scaledown",
            "-max-scale-down-parallelism",
            "0",
            "-order",
            str(order_file),
            str(path),
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout)["scaledown"]


def safe_to_evict_at_zero(dump: dict, node: str, why: str) -> bool:
    """The documented difference: the node holds a safe-to-evict "true" pod of a budget that has no
    disruption left for it (at the start, or after earlier candidates), and that budget is what
    kubetide refuses or waits for."""
    covered = {i["metadata"]["name"] for i in dump["items"] if i["kind"] == "PodDisruptionBudget"}
    return any(
        i["kind"] == "Pod"
        and i["spec"]["nodeName"] == node
        and i["metadata"]["annotations"].get(SAFE_TO_EVICT) == "true"
        and i["metadata"]["labels"]["app"] in covered
        and f"PodDisruptionBudget prod/{i['metadata']['labels']['app']} " in why
        for i in dump["items"]
    )


@pytest.mark.parametrize("seed", range(CLUSTERS))
def test_every_node_the_cluster_autoscaler_removes_kubetide_removes_too(oracle, tmp_path, seed):
    dump = cluster(seed)
    path = tmp_path / "cluster.json"
    path.write_text(json.dumps(dump))
    ours = kubetide_plan(path)
    names = [i["metadata"]["name"] for i in dump["items"] if i["kind"] == "Node"]
    first = [*ours["candidate_set"], *ours["waiting_for_budget"]]
    order = first + [n for n in names if n not in first]
    for _ in range(ORACLE_RUNS):
        ca = ca_unneeded(oracle, path, order)
        missed = [
            n
            for n in ca["unneeded"]
            if n not in ours["candidate_set"] and not safe_to_evict_at_zero(dump, n, ours["nodes"][n]["why"])
        ]
        if not missed:
            break
    assert missed == [], {n: ours["nodes"][n]["why"] for n in missed}
