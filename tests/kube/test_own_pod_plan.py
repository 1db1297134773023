"""kubetide's own pod never pins its node: `kubetide plan` on a dump holding the pods the rendered
install (deploy/) makes, one replica per node, as the API server would return them.

The pod mounts an emptyDir for /tmp. Without `cluster-autoscaler.kubernetes.io/safe-to-evict-local-volumes`
naming it, the Cluster Autoscaler, and kubetide's own scale-down, refuse to drain its node
(LocalStorageRequested): two nodes of every cluster kept for the autoscaler's two replicas.

Needs kubectl (its kustomize renders deploy/), as test_deploy_rbac.py does; no control plane.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import yaml
from test_deploy_rbac import DEPLOY, PROVIDER, one, render

import kubetide.cli.main as cli_main
from kubetide.autoscaler.scaledown.planning.drainability import SAFE_TO_EVICT_LOCAL_VOLUMES

NOW = "2026-03-10T14:00:00Z"
CREATED = "2026-03-01T00:00:00Z"
GROUP_LABEL = "eks.amazonaws.com/nodegroup"  # plan infers node groups from it
NODES = ("general-a", "general-b")
POD_TEMPLATE_HASH = "7c9d5f6b8"
# What the priority admission plugin writes into a pod of priorityClassName system-cluster-critical.
SYSTEM_CLUSTER_CRITICAL = 2000000000


def node(name: str) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "creationTimestamp": CREATED,
            "labels": {GROUP_LABEL: "general", "kubernetes.io/hostname": name, "kubernetes.io/os": "linux"},
        },
        "spec": {"providerID": f"aws:///eu-west-1a/i-{name}"},
        "status": {
            "allocatable": {"cpu": "3920m", "memory": "15076808Ki", "pods": "58"},
            "capacity": {"cpu": "4", "memory": "16093640Ki", "pods": "58"},
            "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": CREATED}],
        },
    }


def install_dump(objects: list[dict]) -> dict:
    """The nodes, the Deployment's ReplicaSet, its two pods (one per node) and the install's
    PodDisruptionBudget with the status its controller gives it."""
    deployment = one(objects, "Deployment")
    namespace, name = deployment["metadata"]["namespace"], deployment["metadata"]["name"]
    template = deployment["spec"]["template"]
    labels = {**template["metadata"]["labels"], "pod-template-hash": POD_TEMPLATE_HASH}
    replicaset_name = f"{name}-{POD_TEMPLATE_HASH}"
    replicaset = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {
            "name": replicaset_name,
            "namespace": namespace,
            "creationTimestamp": CREATED,
            "labels": labels,
            "uid": "replicaset-uid",
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "Deployment",
                    "name": name,
                    "uid": "deployment-uid",
                    "controller": True,
                }
            ],
        },
        "spec": {
            "replicas": deployment["spec"]["replicas"],
            "selector": {"matchLabels": labels},
            "template": {**template, "metadata": {**template["metadata"], "labels": labels}},
        },
        "status": {"replicas": 2, "readyReplicas": 2, "availableReplicas": 2},
    }
    pods = []
    for index, node_name in enumerate(NODES):
        spec = copy.deepcopy(template["spec"])
        spec |= {"nodeName": node_name, "priority": SYSTEM_CLUSTER_CRITICAL}
        pods.append(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    "name": f"{replicaset_name}-{index}",
                    "namespace": namespace,
                    "creationTimestamp": CREATED,
                    "labels": labels,
                    "annotations": dict(template["metadata"].get("annotations", {})),
                    "ownerReferences": [
                        {
                            "apiVersion": "apps/v1",
                            "kind": "ReplicaSet",
                            "name": replicaset_name,
                            "uid": "replicaset-uid",
                            "controller": True,
                        }
                    ],
                },
                "spec": spec,
                "status": {
                    "phase": "Running",
                    "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": CREATED}],
                },
            }
        )
    pdb = copy.deepcopy(one(objects, "PodDisruptionBudget"))
    pdb["metadata"]["creationTimestamp"] = CREATED
    pdb["status"] = {"currentHealthy": 2, "desiredHealthy": 1, "disruptionsAllowed": 1, "expectedPods": 2}
    items = [*(node(n) for n in NODES), replicaset, *pods, pdb]
    return {"apiVersion": "v1", "kind": "List", "items": items}


def plan_nodes(dump: dict, path: Path, monkeypatch, capsys) -> dict:
    path.write_text(yaml.safe_dump(dump))
    monkeypatch.setattr(cli_main, "COMMANDS", ("plan",))
    code = cli_main.main(["plan", str(path), "--json", "--now", NOW])
    out, err = capsys.readouterr()
    assert code == 0 and err == "", err
    return json.loads(out)["scale_down"]["nodes"]


@pytest.fixture(scope="module")
def rendered() -> list[dict]:
    return render(DEPLOY)


@pytest.mark.parametrize("variant", sorted(PROVIDER))
def test_every_install_names_every_local_volume_of_its_pod_safe_to_evict(variant):
    # Every overlay, since an overlay may add volumes (kwok mounts its node groups' ConfigMap).
    template = one(render(DEPLOY / variant), "Deployment")["spec"]["template"]
    local = {
        v["name"]
        for v in template["spec"]["volumes"]
        if "hostPath" in v or ("emptyDir" in v and v["emptyDir"].get("medium") != "Memory")
    }
    listed = template["metadata"]["annotations"][SAFE_TO_EVICT_LOCAL_VOLUMES].split(",")
    assert local and set(listed) == local


def test_plan_does_not_see_kubetide_s_own_pod_pinning_its_node(rendered, tmp_path, monkeypatch, capsys):
    dump = install_dump(rendered)
    nodes = plan_nodes(dump, tmp_path / "installed.yaml", monkeypatch, capsys)
    for name in NODES:
        assert nodes[name]["blocking_pods"] == [], nodes[name]
        assert nodes[name]["reason"] != "BlockedByPod", nodes[name]
    # Either node could go, its replica moving to the other one (the anti-affinity is only
    # preferred); once one goes, the other has nowhere to move its replicas.
    statuses = sorted((nodes[name]["status"], nodes[name]["reason"]) for name in NODES)
    assert statuses == [("removable", None), ("unremovable", "NoPlaceToMovePods")], statuses


def test_without_the_annotation_the_same_pods_pin_their_nodes(rendered, tmp_path, monkeypatch, capsys):
    # The check above is the annotation's doing: the same dump without it blocks both nodes.
    dump = install_dump(rendered)
    for item in dump["items"]:
        if item["kind"] == "Pod":
            del item["metadata"]["annotations"][SAFE_TO_EVICT_LOCAL_VOLUMES]
    nodes = plan_nodes(dump, tmp_path / "unannotated.yaml", monkeypatch, capsys)
    for name in NODES:
        (pod,) = [
            p["metadata"] for p in dump["items"] if p["kind"] == "Pod" and p["spec"]["nodeName"] == name
        ]
        assert nodes[name]["status"] == "unremovable"
        assert nodes[name]["blocking_pod"] == {
            "pod": f"{pod['namespace']}/{pod['name']}",
            "reason": "LocalStorageRequested",
        }
