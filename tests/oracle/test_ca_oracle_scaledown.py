"""Differential test of the scale-down verdicts against the real Cluster Autoscalers 1.30.7 and
1.36.1 (../shared/ca-oracle), both ways, on random clusters with what blocks a drain in practice:
PodDisruptionBudgets, kube-system pods, bare pods, local storage, safe-to-evict annotations
("on-completion" included), two node groups over two zones.

For every node, kubetide and CA agree (both remove it; or both keep it for the same reason and, when
a pod blocks it, CA's pod is among those kubetide names), or the difference falls in one of the
deliberate classes of deliberate.py for that version. A node's difference must show in every one
of ORACLE_RUNS runs: CA's greedy search meets nodes sharing a budget, and places moved pods, in Go
map order, so one run may disagree where the next agrees (see test_ca_oracle_pdb.py).

kubetide follows 1.36: its plan is held to 1.36 directly. 1.30 reads the cluster by older rules
(kube-system pods of any age block; "on-completion" is a value it does not know), so kubetide with
those rules restored (the kube-system flag, the annotation dropped) is held to 1.30, and kubetide's
own plan differs from 1.30 only on nodes whose verdict those rules change: the named 1.30 classes.
On-completion pods are running ones: CA lists no terminal pods, the oracle reads every pod of the
dump, and a completed on-completion pod is covered by the planner's own tests.
"""

from __future__ import annotations

import copy
import random
from pathlib import Path

import pytest
from ca_oracle import (
    CA_1_30,
    CA_1_36,
    SAFE_TO_EVICT,
    ca_scaledown,
    kubetide_json,
    node,
    pdb,
    pod,
    replicaset,
    write_dump,
)
from deliberate import (
    ON_COMPLETION,
    another_blocker_named,
    at_threshold_1_30,
    budget_used_in_this_pass,
    kube_system_1_30,
    old_kube_system_pods_1_30,
    on_completion_1_30,
    risky_node,
    safe_to_evict_at_zero,
    waiting_for_budget,
)

CLUSTERS = 30
ORACLE_RUNS = 8
NOW = "2026-11-26T02:00:00Z"  # two hours after every object was made: kube-system pods are old
SYSTEM_POD_RULE_OF_1_30 = "blocking-system-pod-distruption-timeout=24h"
ON_COMPLETION_BLOCKED = "BlockedByOnCompletionPod"


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
    # Jobs left to finish, some bare or in kube-system (1.30 blocks or moves those, 1.36 waits).
    batch = 0
    for name in names:
        if rng.random() < 0.3:
            batch += 1
            namespace = "kube-system" if rng.random() < 0.2 else "prod"
            owner = None if rng.random() < 0.2 else ("Job", "batch")
            items.append(
                pod(
                    f"batch-{name}",
                    name,
                    "batch",
                    rng.choice(["300m", "1500m"]),
                    namespace=namespace,
                    owner=owner,
                    annotations={SAFE_TO_EVICT: ON_COMPLETION},
                )
            )
    if batch:
        items += [job("batch", "prod"), job("batch", "kube-system")]
    return items


def job(name: str, namespace: str) -> dict:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": namespace, "uid": f"uid-job-{namespace}-{name}"},
        "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "job"}]}}},
    }


def read_by_1_30(items: list[dict]) -> list[dict]:
    """The cluster as CA 1.30 reads it: "on-completion" is no safe-to-evict value it knows."""
    items = copy.deepcopy(items)
    for item in items:
        annotations = item["metadata"].get("annotations", {})
        if annotations.get(SAFE_TO_EVICT) == ON_COMPLETION:
            del annotations[SAFE_TO_EVICT]
    return items


def differences(version: str, items: list[dict], ours: dict, ca: dict) -> dict[str, str]:
    """Node -> what differs between kubetide's plan `ours` and CA `version`'s verdicts `ca`, for
    the differences in no deliberate class of that version."""
    found: dict[str, str] = {}
    for name, verdict in ours["nodes"].items():
        removable, ca_removable = name in ours["candidate_set"], name in ca["unneeded"]
        theirs = ca["unremovable"].get(name, {})
        if ca_removable and not removable:
            if not (
                safe_to_evict_at_zero(version, items, name, verdict["why"])
                or waiting_for_budget(version, ours, name)
            ):
                found[name] = f"CA removes it; kubetide: {verdict['why']}"
        elif removable and not ca_removable:
            if not (
                risky_node(version, ours, name, theirs)
                or budget_used_in_this_pass(version, items, theirs)
                or kube_system_1_30(version, theirs)
                or at_threshold_1_30(version, verdict, theirs)
            ):
                found[name] = f"kubetide removes it; CA: {theirs}"
        elif removable and ca_removable:
            # Unneeded for both: deleted by neither while an on-completion pod runs there.
            if (verdict["reason"] == ON_COMPLETION_BLOCKED) != (
                theirs.get("reason") == ON_COMPLETION_BLOCKED
            ):
                found[name] = f"kubetide: {verdict['reason']} ({verdict['why']}); CA: {theirs}"
        elif name not in ours["waiting_for_budget"]:
            if (
                budget_used_in_this_pass(version, items, theirs)
                or kube_system_1_30(version, theirs)
                or at_threshold_1_30(version, verdict, theirs)
            ):
                continue
            if verdict["reason"] != theirs.get("reason"):
                found[name] = f"kubetide: {verdict['reason']} ({verdict['why']}); CA: {theirs}"
            elif theirs.get("blocking_pod") and not another_blocker_named(version, verdict, theirs):
                found[name] = f"kubetide: {verdict['why']}; CA: {theirs}"
    return found


def plan(tmp_path: Path, items: list[dict], *flags: str) -> tuple[dict, Path, list[str]]:
    """kubetide's scale-down plan of `items`, their dump, and the order CA is to meet the nodes in."""
    path = write_dump(tmp_path, items)
    sets = [arg for flag in flags for arg in ("--set", flag)]
    ours = kubetide_json("plan", str(path), "--now", NOW, *sets)["scale_down"]
    names = [i["metadata"]["name"] for i in items if i["kind"] == "Node"]
    first = [*ours["candidate_set"], *ours["waiting_for_budget"]]
    return ours, path, first + [n for n in names if n not in first]


def compare(version: str, oracle: Path, items: list[dict], ours: dict, path: Path, order: list[str]) -> dict:
    """The differences in no deliberate class of `version` that every one of ORACLE_RUNS runs shows."""
    found = differences(version, items, ours, ca_scaledown(oracle, path, order, "-now", NOW))
    for _ in range(ORACLE_RUNS - 1):
        if not found:
            break
        again = differences(version, items, ours, ca_scaledown(oracle, path, order, "-now", NOW))
        found = {node: why for node, why in found.items() if node in again}
    return found


@pytest.mark.parametrize("seed", range(CLUSTERS))
def test_every_scale_down_difference_from_the_cluster_autoscaler_is_deliberate(oracles, tmp_path, seed):
    """kubetide's plan against 1.36, every difference in a deliberate class. kubetide with 1.30's
    rules restored against 1.30, likewise. kubetide's plan against 1.30: every difference is in a
    deliberate class, or on a node whose verdict 1.30's rules alone change (the named 1.30
    classes: `kube_system_1_30` and what follows from it, `on_completion_1_30`)."""
    items = cluster(seed)
    (tmp_path / "as-1.30").mkdir()
    as_1_30, _, order_1_30 = plan(tmp_path / "as-1.30", read_by_1_30(items), SYSTEM_POD_RULE_OF_1_30)
    ours, path, order = plan(tmp_path, items)  # CA 1.30 reads this dump as kubetide did the other
    assert compare(CA_1_36, oracles[CA_1_36], items, ours, path, order) == {}, "CA 1.36"
    found = compare(CA_1_30, oracles[CA_1_30], items, as_1_30, path, order_1_30)
    assert found == {}, "CA 1.30, kubetide with its rules"
    found = compare(CA_1_30, oracles[CA_1_30], items, ours, path, order)
    named = {
        n
        for n in found
        if on_completion_1_30(CA_1_30, items, n, ours, as_1_30)
        or old_kube_system_pods_1_30(CA_1_30, items, n, ours, as_1_30)
    }
    assert {n: why for n, why in found.items() if n not in named} == {}, "CA 1.30, kubetide's own rules"
