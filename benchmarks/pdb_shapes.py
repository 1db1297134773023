"""A scale-down dump with many budgets (issue 30): 2,000 nodes x 20 pods of 20 shapes, 250
PodDisruptionBudgets. `python -m benchmarks.pdb_shapes --out DIR [--format json|yaml]` writes
DIR/pdb-shapes.<fmt>; `kubetide plan` on it is a bench_whole case (target: under 3 s).

Written apart from the benchmarks' uniform clusters: four node groups (two machine sizes in two
zones), 250 ReplicaSets in 10 namespaces whose pods take one of 20 request shapes, dealt at random
20 to a node (utilisation spread around the scale-down threshold), every ReplicaSet behind a budget (maxUnavailable
1, maxUnavailable 10%, or minAvailable 90%) with the status the disruption controller writes, and
pods carrying what the API server gives them: owner references, labels, conditions, uids.
"""

from __future__ import annotations

import argparse
import random
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from benchmarks.dumps import write_list

NODES = 2000
PODS_PER_NODE = 20
SHAPES = [(cpu, mem) for cpu in (20, 50, 80, 120, 200) for mem in (64, 128, 256, 512)]  # 20 shapes
REPLICASETS = 250
NAMESPACES = [f"team-{i}" for i in range(10)]
CREATED = "2026-11-01T00:00:00Z"


def _node(index: int) -> dict[str, Any]:
    big = index % 4 >= 2
    zone = "zone-a" if index % 2 else "zone-b"
    group = f"{'m8' if big else 'm4'}-{zone}"
    name = f"ip-10-{index // 250}-{index % 250}.ec2.internal"
    cpu, memory = ("8", "32Gi") if big else ("4", "16Gi")
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "uid": f"node-{index:05d}",
            "resourceVersion": str(1000 + index),
            "creationTimestamp": CREATED,
            "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "node.kubernetes.io/instance-type": "m6i.2xlarge" if big else "m6i.xlarge",
                "topology.kubernetes.io/zone": zone,
                "eks.amazonaws.com/nodegroup": group,
            },
        },
        "spec": {"providerID": f"aws:///{zone}/i-{index:017x}"},
        "status": {
            "capacity": {"cpu": cpu, "memory": memory, "pods": "110"},
            "allocatable": {"cpu": cpu, "memory": memory, "pods": "110"},
            "conditions": [
                {"type": t, "status": "False", "reason": f"KubeletHas{t.removesuffix('Pressure')}"}
                for t in ("MemoryPressure", "DiskPressure", "PIDPressure")
            ]
            + [{"type": "Ready", "status": "True", "reason": "KubeletReady", "lastTransitionTime": CREATED}],
        },
    }


def _replicaset(index: int, replicas: int) -> tuple[dict[str, Any], tuple[int, int]]:
    namespace = NAMESPACES[index % len(NAMESPACES)]
    name = f"svc-{index:03d}-7d9f8c6b5"
    labels = {"app.kubernetes.io/name": f"svc-{index:03d}", "pod-template-hash": "7d9f8c6b5"}
    shape = SHAPES[index % len(SHAPES)]
    rs = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": f"rs-{index:05d}",
            "creationTimestamp": CREATED,
            "labels": labels,
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "Deployment",
                    "name": f"svc-{index:03d}",
                    "uid": f"dep-{index:05d}",
                    "controller": True,
                }
            ],
        },
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "app", "image": "registry.example/app:1.4.2"}]},
            },
        },
        "status": {"replicas": replicas, "readyReplicas": replicas, "availableReplicas": replicas},
    }
    return rs, shape


def _pdb(index: int, rs: dict[str, Any], replicas: int, rng: random.Random) -> dict[str, Any]:
    kind = rng.choice(("max1", "max10", "min90"))
    if kind == "max1":
        spec, allowed = {"maxUnavailable": 1}, 1
    elif kind == "max10":
        spec, allowed = {"maxUnavailable": "10%"}, max(1, replicas // 10)
    else:
        spec, allowed = {"minAvailable": "90%"}, replicas - -(-replicas * 9 // 10)
    meta = rs["metadata"]
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {
            "name": f"svc-{index:03d}",
            "namespace": meta["namespace"],
            "uid": f"pdb-{index:05d}",
            "creationTimestamp": CREATED,
        },
        "spec": {
            **spec,
            "selector": {"matchLabels": {"app.kubernetes.io/name": meta["labels"]["app.kubernetes.io/name"]}},
        },
        "status": {
            "currentHealthy": replicas,
            "desiredHealthy": replicas - allowed,
            "disruptionsAllowed": allowed,
            "expectedPods": replicas,
            "observedGeneration": 1,
        },
    }


def items(seed: int = 30) -> Iterator[dict[str, Any]]:
    rng = random.Random(seed)
    nodes = [_node(i) for i in range(NODES)]
    yield from nodes
    total = NODES * PODS_PER_NODE
    replicas = [total // REPLICASETS] * REPLICASETS
    sets = [_replicaset(i, n) for i, n in enumerate(replicas)]
    # Every node gets 20 pods dealt at random from all ReplicaSets: half the nodes are 4-cpu (about
    # half full), half 8-cpu (about a quarter full), so utilisation varies around the threshold.
    slots = [n for n in range(NODES) for _ in range(PODS_PER_NODE)]
    rng.shuffle(slots)
    slot = 0
    for (rs, (cpu, mem)), count in zip(sets, replicas):
        meta = rs["metadata"]
        for k in range(count):
            host = nodes[slots[slot]]["metadata"]["name"]
            slot += 1
            name = f"{meta['name']}-{k:05x}"
            yield {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    "name": name,
                    "namespace": meta["namespace"],
                    "uid": f"pod-{meta['uid']}-{k:05d}",
                    "resourceVersion": str(10_000 + slot),
                    "creationTimestamp": CREATED,
                    "labels": dict(meta["labels"]),
                    "ownerReferences": [
                        {
                            "apiVersion": "apps/v1",
                            "kind": "ReplicaSet",
                            "name": meta["name"],
                            "uid": meta["uid"],
                            "controller": True,
                            "blockOwnerDeletion": True,
                        }
                    ],
                },
                "spec": {
                    "nodeName": host,
                    "containers": [
                        {
                            "name": "app",
                            "image": "registry.example/app:1.4.2",
                            "resources": {"requests": {"cpu": f"{cpu}m", "memory": f"{mem}Mi"}},
                        }
                    ],
                },
                "status": {
                    "phase": "Running",
                    "conditions": [
                        {"type": t, "status": "True", "lastTransitionTime": CREATED}
                        for t in (
                            "PodReadyToStartContainers",
                            "Initialized",
                            "Ready",
                            "ContainersReady",
                            "PodScheduled",
                        )
                    ],
                },
            }
    for index, ((rs, _), count) in enumerate(zip(sets, replicas)):
        yield rs
        yield _pdb(index, rs, count, rng)


def write(directory: str | Path, fmt: str = "json") -> Path:
    return write_list(Path(directory) / f"pdb-shapes.{fmt}", items(), fmt)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.pdb_shapes", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--format", choices=("json", "yaml"), default="json")
    args = parser.parse_args(argv)
    print(write(args.out, args.format))
    return 0


if __name__ == "__main__":
    sys.exit(main())
