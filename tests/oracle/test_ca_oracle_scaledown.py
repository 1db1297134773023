"""Differential test of the scale-down verdicts against the real Cluster Autoscaler 1.30.7
(../shared/ca-oracle), both ways, on random clusters with what blocks a drain in practice:
PodDisruptionBudgets, kube-system pods, bare pods, local storage, safe-to-evict annotations, two
node groups over two zones.

For every node, kubetide and CA agree (both remove it; or both keep it for the same reason and, when
a pod blocks it, CA's pod is among those kubetide names), or the difference falls in one of the
deliberate classes of deliberate.py. A node's difference must show in every one of ORACLE_RUNS runs: CA's
greedy search meets nodes sharing a budget, and places moved pods, in Go map order, so one run
may disagree where the next agrees (see test_ca_oracle_pdb.py).
"""

from __future__ import annotations

import random

import pytest
from ca_oracle import SAFE_TO_EVICT, ca_scaledown, kubetide_json, node, pdb, pod, replicaset, write_dump
from deliberate import (
    another_blocker_named,
    budget_used_in_this_pass,
    kube_system_1_30,
    risky_node,
    safe_to_evict_at_zero,
    waiting_for_budget,
)

CLUSTERS = 30
ORACLE_RUNS = 8
NOW = "2026-11-26T02:00:00Z"  # two hours after every object was made: kube-system pods are old
SYSTEM_POD_RULE_OF_1_30 = "blocking-system-pod-distruption-timeout=24h"


def cluster(seed: int) -> list[dict]:
    rng = random.Random(seed)
    nodes: list[tuple[str, str]] = []  # (name, group)
    for i in range(rng.randint(3, 6)):
        nodes.append((f"g{i}", "general"))
    for i in range(rng.randint(1, 3)):
        nodes.append((f"b{i}", "big"))
    items: list[dict] = [
        node(name, group, cpu="4" if group == "general" else "8", zone="a" if i % 2 else "b")
        for i, (name, group) in enumerate(nodes)
    ]
    names = [name for name, _ in nodes]
    for name in rng.sample(names, k=rng.randint(1, max(1, len(names) // 2))):
        items += [pod(f"fill-{name}-{i}", name, "fill", "1200m") for i in range(2)]
    fill = sum(1 for i in items if i["kind"] == "Pod")
    items.append(replicaset("fill", fill))
    for app in ("api", "web", "db"):
        replicas = rng.randint(1, 5)
        for i in range(replicas):
            annotations = {SAFE_TO_EVICT: "true"} if rng.random() < 0.1 else None
            items.append(
                pod(
                    f"{app}-{i}",
                    rng.choice(names),
                    app,
                    rng.choice(["200m", "400m"]),
                    annotations=annotations,
                )
            )
        items.append(replicaset(app, replicas))
        if rng.random() < 0.7:
            items.append(pdb(app, replicas, replicas, rng))
    # What blocks a drain in CA's rules, a few of each, on random nodes.
    system = 0
    for name in names:
        roll = rng.random()
        if roll < 0.12:
            system += 1
            items.append(pod(f"coredns-{system}", name, "coredns", "100m", namespace="kube-system"))
        elif roll < 0.2:
            items.append(pod(f"bare-{name}", name, "bare", "100m", owner=None))
        elif roll < 0.28:
            volume = {"volumes": [{"name": "scratch", "emptyDir": {}}]}
            items.append(
                pod(f"scratch-{name}", name, "scratch", "100m", owner=("ReplicaSet", "fill"), spec=volume)
            )
        elif roll < 0.33:
            items.append(
                pod(
                    f"pinned-{name}",
                    name,
                    "pinned",
                    "100m",
                    owner=("ReplicaSet", "fill"),
                    annotations={SAFE_TO_EVICT: "false"},
                )
            )
    if system:
        items.append(replicaset("coredns", system, namespace="kube-system"))
    return items


def differences(items: list[dict], ours: dict, ca: dict, system_rule_of_1_30: bool) -> dict[str, str]:
    """Node -> what differs, for the differences in no deliberate class."""
    found: dict[str, str] = {}
    for name, verdict in ours["nodes"].items():
        removable, ca_removable = name in ours["candidate_set"], name in ca["unneeded"]
        theirs = ca["unremovable"].get(name, {})
        if ca_removable and not removable:
            if not (safe_to_evict_at_zero(items, name, verdict["why"]) or waiting_for_budget(ours, name)):
                found[name] = f"CA removes it; kubetide: {verdict['why']}"
        elif removable and not ca_removable:
            if not (
                risky_node(ours, name, theirs)
                or budget_used_in_this_pass(items, theirs)
                or (kube_system_1_30(theirs) and not system_rule_of_1_30)
            ):
                found[name] = f"kubetide removes it; CA: {theirs}"
        elif not removable and not ca_removable and name not in ours["waiting_for_budget"]:
            if budget_used_in_this_pass(items, theirs):
                continue
            if kube_system_1_30(theirs) and not system_rule_of_1_30:
                continue
            if verdict["reason"] != theirs.get("reason"):
                found[name] = f"kubetide: {verdict['reason']} ({verdict['why']}); CA: {theirs}"
            elif theirs.get("blocking_pod") and not another_blocker_named(verdict, theirs):
                found[name] = f"kubetide: {verdict['why']}; CA: {theirs}"
    return found


def compare(oracle, tmp_path, items: list[dict], *flags: str) -> tuple[dict[str, str], dict]:
    """The differences in no deliberate class, and kubetide's scale-down plan."""
    path = write_dump(tmp_path, items)
    sets = [arg for flag in flags for arg in ("--set", flag)]
    system_rule_of_1_30 = SYSTEM_POD_RULE_OF_1_30 in flags
    ours = kubetide_json("plan", str(path), "--now", NOW, *sets)["scale_down"]
    names = [i["metadata"]["name"] for i in items if i["kind"] == "Node"]
    first = [*ours["candidate_set"], *ours["waiting_for_budget"]]
    order = first + [n for n in names if n not in first]
    found = differences(items, ours, ca_scaledown(oracle, path, order, "-now", NOW), system_rule_of_1_30)
    for _ in range(ORACLE_RUNS - 1):
        if not found:
            break
        again = differences(items, ours, ca_scaledown(oracle, path, order, "-now", NOW), system_rule_of_1_30)
        found = {node: why for node, why in found.items() if node in again}
    return found, ours


def verdict(plan: dict, node: str) -> tuple:
    return (
        node in plan["candidate_set"],
        node in plan["waiting_for_budget"],
        plan["nodes"][node]["reason"],
        plan["nodes"][node]["blocking_pod"],
    )


@pytest.mark.parametrize("seed", range(CLUSTERS))
def test_every_scale_down_difference_from_the_cluster_autoscaler_is_deliberate(oracle, tmp_path, seed):
    """With CA 1.30's kube-system rule restored, every difference is in a deliberate class. With
    kubetide's defaults, so is every difference, or it is on a node whose verdict changes with that
    rule alone (the kube_system_1_30 class and what follows from it: the pods kubetide moves off
    such a node, the budget its drain uses)."""
    items = cluster(seed)
    found, as_1_30 = compare(oracle, tmp_path, items, SYSTEM_POD_RULE_OF_1_30)
    assert found == {}, "with CA 1.30's kube-system rule"
    found, ours = compare(oracle, tmp_path, items)
    assert {n: why for n, why in found.items() if verdict(ours, n) == verdict(as_1_30, n)} == {}
