"""Differential test of the scheduler predicates against the real Cluster Autoscalers 1.30.7 and
1.36.1 (../shared/ca-oracle: CA's SchedulerBasedPredicateChecker on its vendored kube-scheduler's
default profile), on random clusters: for every (pending pod, node) pair, kubetide's
PredicateChecker gives the same verdict as each, and when the pod does not fit, the same first
failing plugin and reasons, or the reasons in other words (`taint_named`, 1.36).
"""

from __future__ import annotations

import json
import random

import pytest
from ca_oracle import ZONE_LABEL, node, pod, run_oracle, write_dump
from deliberate import taint_named

from kubetide.model import load_documents
from kubetide.scheduling import PredicateChecker
from kubetide.snapshot import ClusterSnapshot

CLUSTERS = 25
HOSTNAME = "kubernetes.io/hostname"
GPU_TAINT = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}


def cluster(seed: int) -> list[dict]:
    """4-7 nodes over two zones, some tainted or labelled; bound pods of three apps; 6-10 pending
    pods, each with a few of the constraints kube-scheduler's default filters check."""
    rng = random.Random(seed)
    items: list[dict] = []
    names = []
    for i in range(rng.randint(4, 7)):
        name = f"n{i}"
        names.append(name)
        tainted = rng.random() < 0.2
        labels = {"disk": "ssd"} if rng.random() < 0.4 else {}
        items.append(
            node(
                name,
                "gpu" if tainted else "general",
                cpu=rng.choice(["2", "4"]),
                memory=rng.choice(["4Gi", "8Gi"]),
                zone=rng.choice(["a", "b"]),
                taints=[GPU_TAINT] if tainted else None,
                labels=labels,
            )
        )
    for i in range(rng.randint(3, 12)):
        app = rng.choice(["api", "web", "db"])
        ports = (
            {"containers": [_container(rng.choice(["100m", "500m"]), host_port=8080)]}
            if rng.random() < 0.15
            else None
        )
        items.append(pod(f"{app}-{i}", rng.choice(names), app, rng.choice(["100m", "500m", "1"]), spec=ports))
    for i in range(rng.randint(6, 10)):
        items.append(_pending(f"pending-{i}", rng))
    return items


def _container(cpu: str, host_port: int | None = None) -> dict:
    container: dict = {
        "name": "c",
        "image": "app",
        "resources": {"requests": {"cpu": cpu, "memory": "256Mi"}},
    }
    if host_port:
        container["ports"] = [{"containerPort": host_port, "hostPort": host_port, "protocol": "TCP"}]
    return container


def _pending(name: str, rng: random.Random) -> dict:
    app = rng.choice(["api", "web", "db", "batch"])
    spec: dict = {}
    if rng.random() < 0.2:
        spec["nodeSelector"] = {"disk": "ssd"}
    if rng.random() < 0.25:
        spec["tolerations"] = [
            {"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}
        ]
    if rng.random() < 0.2:
        zone = rng.choice(["a", "b"])
        term = {"matchExpressions": [{"key": ZONE_LABEL, "operator": "In", "values": [zone]}]}
        spec["affinity"] = {
            "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}
        }
    roll = rng.random()
    other = rng.choice(["api", "web", "db"])
    selector = {"matchLabels": {"app": other}}
    if roll < 0.2:
        term = {"labelSelector": selector, "topologyKey": HOSTNAME}
        spec.setdefault("affinity", {})["podAntiAffinity"] = {
            "requiredDuringSchedulingIgnoredDuringExecution": [term]
        }
    elif roll < 0.35:
        term = {"labelSelector": selector, "topologyKey": ZONE_LABEL}
        spec.setdefault("affinity", {})["podAffinity"] = {
            "requiredDuringSchedulingIgnoredDuringExecution": [term]
        }
    elif roll < 0.5:
        spec["topologySpreadConstraints"] = [
            {
                "maxSkew": 1,
                "topologyKey": rng.choice([ZONE_LABEL, HOSTNAME]),
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {"app": app}},
            }
        ]
    if rng.random() < 0.15:
        spec["containers"] = [_container(rng.choice(["100m", "1"]), host_port=8080)]
    return pod(
        name,
        None,
        app,
        rng.choice(["100m", "500m", "1500m", "3"]),
        memory=rng.choice(["256Mi", "3Gi"]),
        spec=spec,
    )


def kubetide_predicates(items: list[dict]) -> dict[tuple[str, str], tuple[str, tuple[str, ...]] | None]:
    """(pod, node) -> None when the pod fits there, else (first failing plugin, its reasons)."""
    manifests = load_documents(json.loads(json.dumps(items)), "cluster.json")
    snapshot = ClusterSnapshot(manifests.nodes)
    pending = []
    for p in manifests.pods:
        if p.node_name:
            snapshot.add_pod(p, p.node_name)
        else:
            pending.append(p)
    verdicts = {}
    with PredicateChecker(snapshot) as checker:
        for p in pending:
            for n in manifests.nodes:
                unfit = checker.fits(p, n.name)
                verdicts[p.key, n.name] = None if unfit is None else (unfit.plugin, tuple(unfit.reasons))
    return verdicts


@pytest.mark.parametrize("seed", range(CLUSTERS))
def test_every_predicate_verdict_agrees_with_the_cluster_autoscaler(oracles, tmp_path, seed):
    items = cluster(seed)
    dump = write_dump(tmp_path, items)
    ours = kubetide_predicates(items)
    differ: dict[str, dict] = {}
    for version, oracle in oracles.items():
        ca = run_oracle(oracle, dump, "predicates")["predicates"]
        assert len(ca) == len(ours), version
        for pair in ca:
            theirs = None if pair["fit"] else (pair["plugin"], tuple(pair["reasons"]))
            mine = ours[pair["pod"], pair["node"]]
            if mine != theirs and not taint_named(version, mine, theirs):
                differ.setdefault(version, {})[pair["pod"], pair["node"]] = (mine, theirs)
    assert differ == {}
