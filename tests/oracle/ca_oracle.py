"""The Cluster Autoscaler oracles (../shared/ca-oracle: CA 1.30.7 and CA 1.36.1) and kubetide, run
on the same dump.

Each oracle is CA's own Go code behind a small front end, the same command line for both: it reads
a kubectl List (JSON) and prints its predicates, estimates and scale-down decisions (its README says
which functions). Tests here build random dumps with the builders below, evaluate kubetide once,
run every oracle on the same dump, and check that every difference falls in a documented,
deliberate class for that CA version (deliberate.py; docs/differences.md lists them, each with its
reason). Where the two versions differ, kubetide follows 1.36.
"""

from __future__ import annotations

import contextlib
import io
import json
import lzma
import os
import random
import subprocess
from pathlib import Path
from typing import Any

import pytest

from kubetide.autoscaler.options import AutoscalerOptions
from kubetide.cli.main import main as kubetide_main

ORACLE_DIRECTORY = Path(__file__).resolve().parents[2].parent / "shared" / "ca-oracle"
CA_1_30 = "1.30.7"
CA_1_36 = "1.36.1"
# CA version -> its archive; the oldest first (tests report differences in this order).
ARCHIVES = {CA_1_30: "ca-oracle.xz", CA_1_36: "ca-oracle-1.36.1.xz"}
REQUIRE_VARIABLE = "KUBETIDE_REQUIRE_CA_ORACLE"
GROUP_LABEL = "kubetide.io/node-group"
ZONE_LABEL = "topology.kubernetes.io/zone"
SAFE_TO_EVICT = "cluster-autoscaler.kubernetes.io/safe-to-evict"
OLD = "2026-11-26T00:00:00Z"  # every object's age: well past every scale-down timer
Doc = dict[str, Any]


def unpack(directory: Path, version: str) -> Path:
    """The oracle binary of CA `version`, unpacked into `directory`; skips (or fails, where CI
    requires the oracles) when its archive is not on this machine."""
    archive = ORACLE_DIRECTORY / ARCHIVES[version]
    if not archive.exists():
        reason = f"the Cluster Autoscaler {version} oracle is not here: {archive}"
        if os.environ.get(REQUIRE_VARIABLE) == "1":
            pytest.fail(f"{reason} ({REQUIRE_VARIABLE}=1)", pytrace=False)
        pytest.skip(reason)
    binary = directory / f"ca-oracle-{version}"
    binary.write_bytes(lzma.decompress(archive.read_bytes()))
    binary.chmod(0o755)
    return binary


# One Go thread and no garbage collector per run: a run reads one small dump and exits within
# tens of milliseconds, and the suite shares two cores. About a third less CPU time than Go's
# defaults, the same answers (Go's map order, the oracles' one source of variety, is per run).
ORACLE_ENVIRONMENT = {**os.environ, "GOMAXPROCS": "1", "GOGC": "off"}


def oracles_for(oracles: dict[str, Path], seed: int, clusters_1_30: int) -> dict[str, Path]:
    """The oracles random cluster `seed` is compared with: CA 1.36, the version kubetide follows,
    on every cluster; CA 1.30 on the first `clusters_1_30` (the suite's time is shared, and 1.30's
    differences are named classes already seen on that many)."""
    return {v: binary for v, binary in oracles.items() if v != CA_1_30 or seed < clusters_1_30}


def run_oracle(binary: Path, dump: Path, what: str, *args: str) -> dict:
    """One run of the oracle: `what` is predicates, estimate or scaledown (comma-separated)."""
    out = subprocess.run(
        [str(binary), "-what", what, *args, str(dump)],
        capture_output=True,
        text=True,
        check=True,
        env=ORACLE_ENVIRONMENT,
    )
    return json.loads(out.stdout)


def ca_scaledown(binary: Path, dump: Path, order: list[str], *args: str) -> dict:
    """CA's scale-down planner on `dump`, its candidates met in `order` (the greedy search is
    order-dependent: give CA kubetide's order), the unneeded set uncapped.

    Like with like: kubetide's `plan`, with timers taken as run out (its default, and how these
    tests run it), never applies CA's cap on the unneeded set (scaledown/planning/limit.py; the planner
    answers for every node), so CA runs uncapped too (-max-scale-down-parallelism 0). The size
    check below is stricter than that needs: it keeps these clusters under the cap a first loop
    of `kubetide run` or `plan --no-expire-timers` would apply (2 x max-scale-down-parallelism,
    20 by default)."""
    cap = 2 * AutoscalerOptions().max_scale_down_parallelism
    assert len(order) < cap, f"{len(order)} nodes: kubetide's unneeded-nodes cap ({cap}) could bite"
    order_file = dump.with_suffix(".order")
    order_file.write_text("\n".join(order) + "\n")
    limits = ("-max-scale-down-parallelism", "0", "-order", str(order_file))
    return run_oracle(binary, dump, "scaledown", *limits, *args)["scaledown"]


def kubetide_json(*argv: str) -> dict:
    """A kubetide command's --json document, run in this process (no interpreter start per case)."""
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        code = kubetide_main([*argv, "--json"])
    assert code == 0, stderr.getvalue()
    return json.loads(stdout.getvalue())


def write_dump(directory: Path, items: list[Doc]) -> Path:
    path = directory / "cluster.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    return path


# -- builders: objects as kubectl writes them --------------------------------------------------------


def node(
    name: str,
    group: str = "general",
    cpu: str = "4",
    memory: str = "16Gi",
    zone: str | None = None,
    taints: list[Doc] | None = None,
    labels: dict[str, str] | None = None,
) -> Doc:
    all_labels = {"kubernetes.io/hostname": name, GROUP_LABEL: group, **(labels or {})}
    if zone:
        all_labels[ZONE_LABEL] = zone
    resources = {"cpu": cpu, "memory": memory, "pods": "110"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": all_labels, "creationTimestamp": OLD},
        "spec": {"taints": taints} if taints else {},
        "status": {
            "allocatable": resources,
            "capacity": resources,
            "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": OLD}],
        },
    }


def pod(
    name: str,
    node_name: str | None,
    app: str,
    cpu: str,
    *,
    memory: str = "512Mi",
    namespace: str = "prod",
    owner: tuple[str, str] | None = ("ReplicaSet", ""),
    annotations: dict[str, str] | None = None,
    spec: Doc | None = None,
) -> Doc:
    """A pod of `app`, bound to `node_name` and running, or pending when it is None. `owner` is
    (kind, name) of its controller (name defaults to the app); None makes it bare."""
    meta: Doc = {
        "name": name,
        "namespace": namespace,
        "uid": f"uid-{namespace}-{name}",
        "labels": {"app": app},
        "annotations": dict(annotations or {}),
        "creationTimestamp": OLD,
    }
    if owner is not None:
        kind, owner_name = owner
        owner_name = owner_name or app
        api = "batch/v1" if kind == "Job" else "apps/v1"
        meta["ownerReferences"] = [
            {
                "apiVersion": api,
                "kind": kind,
                "name": owner_name,
                "uid": f"uid-{kind.lower()}-{namespace}-{owner_name}",
                "controller": True,
            }
        ]
    body: Doc = {
        "containers": [
            {"name": "c", "image": "app", "resources": {"requests": {"cpu": cpu, "memory": memory}}}
        ],
        **(spec or {}),
    }
    if node_name is None:
        status: Doc = {
            "phase": "Pending",
            "conditions": [
                {
                    "type": "PodScheduled",
                    "status": "False",
                    "reason": "Unschedulable",
                    "lastTransitionTime": OLD,
                }
            ],
        }
    else:
        body["nodeName"] = node_name
        status = {
            "phase": "Running",
            "conditions": [
                {"type": "PodScheduled", "status": "True", "lastTransitionTime": OLD},
                {"type": "Ready", "status": "True", "lastTransitionTime": OLD},
            ],
        }
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": body, "status": status}


def replicaset(app: str, replicas: int, namespace: str = "prod") -> Doc:
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {
            "name": app,
            "namespace": namespace,
            "uid": f"uid-replicaset-{namespace}-{app}",
            "creationTimestamp": OLD,
        },
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


def pdb(app: str, expected: int, healthy: int, rng: random.Random, namespace: str = "prod") -> Doc:
    """A PodDisruptionBudget over `app` with the status the disruption controller would write."""
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
        "metadata": {"name": app, "namespace": namespace, "creationTimestamp": OLD},
        "spec": {kind: value, "selector": {"matchLabels": {"app": app}}},
        "status": {
            "disruptionsAllowed": max(0, healthy - desired),
            "currentHealthy": healthy,
            "desiredHealthy": desired,
            "expectedPods": expected,
            "observedGeneration": 1,
        },
    }
