"""Random clusters for the plan-is-the-loop test and the golden outputs (pure `random`, so the
same seed draws the same cluster on every library release): two node groups with min sizes,
nodes Ready or recently NotReady, ReplicaSet pods of several sizes, a bare pod now and then,
PodDisruptionBudgets, pending pods that need a new node, and flags that vary the pause after a
scale-up, enforce-node-group-min-size, the parallelism budgets and the threshold."""

from __future__ import annotations

import random

OLD = "2026-11-20T00:00:00Z"
NOW = "2026-11-26T12:00:00Z"  # the newest timestamp of every generated dump: plan's and the sim's now
GROUP_LABEL = "kubetide.io/node-group"
SHAPES = {"a": ("4", "16Gi"), "b": ("8", "32Gi")}
# Pending pods select a label only group b's new nodes carry. Pods that fit an existing node are
# bound by the simulated scheduler (by its scores) before the first loop, while plan binds them
# where filter-out-schedulable finds room: they would differ by where the pods are, not by what
# is decided. So the pending pods here need a new node (group b).
BURST = {"kubetide.io/burst": "true"}


# -- random clusters ------------------------------------------------------------------------------


def random_cluster(seed: int) -> tuple[dict, list[dict], dict]:
    """(dump, node groups, flags)."""
    rng = random.Random(seed)
    items: list[dict] = []
    groups = []
    nodes: list[str] = []
    unready = rng.choice([0.15] * 9 + [0.8])  # now and then an outage: the loop halts
    for name, (cpu, memory) in SHAPES.items():
        count = rng.randint(1 if name == "a" else 0, 5)
        groups.append(
            {
                "name": name,
                "minSize": rng.choice([0, 1, 2, count + 1]),
                "maxSize": 10,
                "price": 0.1 * int(cpu),
                "initialSize": count,
                "template": {
                    "metadata": {"labels": {GROUP_LABEL: name, **(BURST if name == "b" else {})}},
                    "status": {"allocatable": {"cpu": cpu, "memory": memory, "pods": "110"}},
                },
            }
        )
        for i in range(count):
            node = f"{name}-{i}"
            nodes.append(node)
            items.append(node_item(node, name, cpu, memory, ready=rng.random() > unready))
    apps = [f"app{i}" for i in range(rng.randint(1, 4))]
    for app in apps:
        replicas = rng.randint(1, 5)
        cpu = rng.choice(["100m", "300m", "700m", "1500m"])
        for i in range(replicas):
            items.append(pod_item(f"{app}-{i}", rng.choice(nodes), app, cpu))
        items.append(replicaset_item(app, replicas))
        if rng.random() < 0.5:
            budget = rng.choice([{"maxUnavailable": 1}, {"maxUnavailable": 0}, {"minAvailable": "50%"}])
            items.append(pdb_item(app, budget, replicas))
    if rng.random() < 0.3:
        items.append(pod_item("bare", rng.choice(nodes), None, "200m"))
    pending = rng.randint(0, 4)
    if pending:
        cpu = rng.choice(["500m", "3", "6"])
        items += [pod_item(f"burst-{i}", None, "burst", cpu, selector=BURST) for i in range(pending)]
        items.append(replicaset_item("burst", pending))
    flags = {
        "scale-down-unneeded-time": rng.choice(["0s", "0s", "10m"]),
        "scale-down-unready-time": rng.choice(["0s", "20m"]),
        "scale-down-delay-after-add": rng.choice(["0s", "10m"]),
        "enforce-node-group-min-size": rng.choice([True, False]),
        "max-drain-parallelism": rng.choice([1, 3]),
        "max-scale-down-parallelism": rng.choice([2, 10]),
        "scale-down-utilization-threshold": rng.choice([0.5, 0.7]),
    }
    return {"apiVersion": "v1", "kind": "List", "items": items}, groups, flags


def node_item(name: str, group: str, cpu: str, memory: str, *, ready: bool) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {"kubernetes.io/hostname": name, GROUP_LABEL: group},
            "creationTimestamp": OLD,
        },
        "spec": {"providerID": f"kubetide://{group}/{name}"},
        "status": {
            "allocatable": {"cpu": cpu, "memory": memory, "pods": "110"},
            "capacity": {"cpu": cpu, "memory": memory, "pods": "110"},
            # NotReady for a minute: the node controller has not evicted its pods yet.
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True" if ready else "False",
                    "lastTransitionTime": OLD if ready else NOW,
                }
            ],
        },
    }


def pod_item(name: str, node: str | None, app: str | None, cpu: str, selector: dict | None = None) -> dict:
    meta: dict = {"name": name, "namespace": "prod", "uid": f"uid-{name}", "creationTimestamp": OLD}
    if app is not None:
        meta["labels"] = {"app": app}
        meta["ownerReferences"] = [
            {
                "apiVersion": "apps/v1",
                "kind": "ReplicaSet",
                "name": app,
                "uid": f"uid-rs-{app}",
                "controller": True,
            }
        ]
    scheduled = (
        {"type": "PodScheduled", "status": "True", "lastTransitionTime": OLD}
        if node
        else {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "lastTransitionTime": OLD}
    )
    spec: dict = {
        "containers": [
            {"name": "c", "image": "app", "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}}}
        ]
    }
    if node:
        spec["nodeName"] = node
    if selector:
        spec["nodeSelector"] = selector
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": spec,
        "status": {
            "phase": "Running" if node else "Pending",
            "conditions": [
                scheduled,
                {"type": "Ready", "status": "True" if node else "False", "lastTransitionTime": OLD},
            ],
        },
    }


def replicaset_item(app: str, replicas: int) -> dict:
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
        "status": {"replicas": replicas, "readyReplicas": replicas, "availableReplicas": replicas},
    }


def pdb_item(app: str, budget: dict, replicas: int) -> dict:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": app, "namespace": "prod", "uid": f"uid-pdb-{app}", "creationTimestamp": OLD},
        "spec": {"selector": {"matchLabels": {"app": app}}, **budget},
    }
