"""Related pods are the pods of every ReplicaSet with the same controller, whatever its kind.

kube-controller-manager's getReplicaSetsWithSameController looks the ReplicaSet's controller
ownerReference up by UID (its controllerUIDIndex), so an Argo Rollout's canary and stable
ReplicaSets are siblings exactly as a Deployment's old and new ones are. Table-driven in the style
of upstream's replica_set_test.go: each case lists ReplicaSets (name, controller), pods (name,
ReplicaSet) and the related pods the target ReplicaSet must see.
"""

from __future__ import annotations

import datetime

import pytest
import yaml

from kubetide.cli import main as cli_main
from kubetide.model import load_documents
from kubetide.workloads import pods_to_delete
from kubetide.workloads.owners import find_targets

NOW = "2026-11-22T12:00:00Z"
NOW_S = 1795348800.0  # NOW in Unix seconds


def _rs(name: str, controller: tuple[str, str, str] | None, namespace: str = "default") -> dict:
    meta: dict = {"name": name, "namespace": namespace, "uid": f"uid-{name}"}
    if controller is not None:
        kind, owner, uid = controller
        ref = {"apiVersion": "argoproj.io/v1alpha1", "kind": kind, "name": owner, "controller": True}
        if uid:
            ref["uid"] = uid
        meta["ownerReferences"] = [ref]
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": meta,
        "spec": {
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c"}]}},
        },
    }


def _pod(
    name: str, replicaset: str, node: str, ready_ago: float = 86400.0, namespace: str = "default"
) -> dict:
    stamp = _rfc3339(NOW_S - ready_ago)
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": f"uid-{name}",
            "labels": {"app": "web"},
            "creationTimestamp": stamp,
            "ownerReferences": [
                {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": replicaset, "controller": True}
            ],
        },
        "spec": {"nodeName": node, "containers": [{"name": "c"}]},
        "status": {
            "phase": "Running",
            "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": stamp}],
        },
    }


def _rfc3339(seconds: float) -> str:
    return datetime.datetime.fromtimestamp(seconds, datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _manifests(documents: list[dict]):
    return load_documents(documents, "test.yaml")


ROLLOUT = ("Rollout", "web", "rollout-uid-1")
OTHER_ROLLOUT = ("Rollout", "web", "rollout-uid-2")  # same name, another object (recreated)
DEPLOYMENT = ("Deployment", "web", "deploy-uid-1")


@pytest.mark.parametrize(
    ("name", "replicasets", "pods", "target", "related"),
    [
        (
            "a Rollout's two ReplicaSets are siblings",
            [("web-canary", ROLLOUT), ("web-stable", ROLLOUT)],
            [("c1", "web-canary"), ("s1", "web-stable"), ("s2", "web-stable")],
            "web-canary",
            ["c1", "s1", "s2"],
        ),
        (
            "a Deployment's two ReplicaSets are siblings",
            [("web-new", DEPLOYMENT), ("web-old", DEPLOYMENT)],
            [("n1", "web-new"), ("o1", "web-old")],
            "web-new",
            ["n1", "o1"],
        ),
        (
            "same controller name, different UID: not siblings",
            [("web-a", ROLLOUT), ("web-b", OTHER_ROLLOUT)],
            [("a1", "web-a"), ("b1", "web-b")],
            "web-a",
            ["a1"],
        ),
        (
            "same UID under another kind and name: siblings (the UID decides)",
            [("web-a", ROLLOUT), ("web-b", ("Deployment", "renamed", "rollout-uid-1"))],
            [("a1", "web-a"), ("b1", "web-b")],
            "web-a",
            ["a1", "b1"],
        ),
        (
            "no controller: no related pods at all",
            [("solo", None), ("web-stable", ROLLOUT)],
            [("x1", "solo"), ("s1", "web-stable")],
            "solo",
            [],
        ),
        (
            "hand-written references without a UID: by kind and name",
            [
                ("web-a", ("Rollout", "web", "")),
                ("web-b", ("Rollout", "web", "")),
                ("api-a", ("Rollout", "api", "")),
            ],
            [("a1", "web-a"), ("b1", "web-b"), ("p1", "api-a")],
            "web-a",
            ["a1", "b1"],
        ),
    ],
)
def test_related_pods_are_those_of_the_replicasets_with_the_same_controller_uid(
    name, replicasets, pods, target, related
):
    documents = [_rs(rs, controller) for rs, controller in replicasets]
    documents += [_pod(pod, rs, node=f"node-{pod}") for pod, rs in pods]
    (found,) = [t for t in find_targets(_manifests(documents)) if t.name == target]
    assert sorted(p.name for p in found.related) == related, name


def test_a_replicaset_named_by_its_pods_only_joins_the_loaded_siblings_of_its_controller():
    # web-7f9c is known only from its pods (rollouts-pod-template-hash naming); web-stable was
    # loaded and names Rollout/web with its UID: one family.
    pod = _pod("c1", "web-7f9c", "node-1")
    pod["metadata"]["labels"]["rollouts-pod-template-hash"] = "7f9c"
    documents = [_rs("web-stable", ROLLOUT), _pod("s1", "web-stable", "node-1"), pod]
    targets = {t.name: t for t in find_targets(_manifests(documents))}
    inferred = targets["web-7f9c"].controller
    assert (inferred.kind, inferred.name, inferred.source) == (
        "Rollout",
        "web",
        "rollouts-pod-template-hash label",
    )
    assert sorted(p.name for p in targets["web-7f9c"].related) == ["c1", "s1"]


# The case: w1..w4 of a Rollout's canary ReplicaSet; w1 and w3 share their nodes with a
# pod of the stable ReplicaSet; w3 and w4 became ready recently. kube-controller-manager ranks w1
# and w3 first (2 related pods on their node), the younger first: w3, then w1. A ranking that
# does not see the Rollout (no related pods, every rank 0) takes the two youngest, w3 and w4, and
# w4 is the only pod on its node.
W_CASE = [
    _rs("web-canary", ROLLOUT),
    _rs("web-stable", ROLLOUT),
    _pod("w1", "web-canary", "node-1", ready_ago=10 * 86400),
    _pod("w2", "web-canary", "node-2", ready_ago=10 * 86400),
    _pod("w3", "web-canary", "node-3", ready_ago=3600),
    _pod("w4", "web-canary", "node-4", ready_ago=3 * 3600),
    _pod("s1", "web-stable", "node-1", ready_ago=20 * 86400),
    _pod("s3", "web-stable", "node-3", ready_ago=20 * 86400),
]


@pytest.mark.parametrize(
    ("related", "deleted"),
    [
        (True, ["w3", "w1"]),  # kube-controller-manager: the Rollout's related pods count
        (False, ["w3", "w4"]),  # the same pods ranked as controller-less (what kubetide did)
    ],
)
def test_the_rollout_case_deletes_w3_and_w1(related, deleted):
    (target,) = [t for t in find_targets(_manifests(W_CASE)) if t.name == "web-canary"]
    assert target.controller is not None and target.controller.label == "Rollout/web"
    victims = pods_to_delete(
        target.pods,
        2,
        NOW_S,
        target.related if related else None,
        owner_has_controller=related,
    )
    assert [p.name for p in victims] == deleted


def test_downscale_command_names_the_rollout_and_deletes_w3_and_w1(tmp_path, capsys):
    path = tmp_path / "pods.yaml"
    path.write_text(yaml.safe_dump_all(W_CASE))
    code = cli_main.main(
        ["downscale", str(path), "--owner", "rs/web-canary", "--replicas", "2", "--now", NOW, "--json"]
    )
    assert code == 0
    document = yaml.safe_load(capsys.readouterr().out)
    assert document["controller"] == "Rollout/web" and document["deployment"] is None
    assert document["delete"] == ["default/w3", "default/w1"]
    cli_main.main(["downscale", str(path), "--owner", "rs/web-canary", "--replicas", "2", "--now", NOW])
    text = capsys.readouterr().out
    assert "of Rollout web" in text and "web-stable" in text


def test_owner_rollout_means_its_replicaset_with_active_pods(tmp_path, capsys):
    path = tmp_path / "pods.yaml"
    path.write_text(yaml.safe_dump_all([*W_CASE, _rs("web-old", ROLLOUT)]))
    argv = ["downscale", str(path), "--replicas", "2", "--now", NOW, "--json"]
    # both ReplicaSets have active pods: the scale-down would be split, the user names one
    assert cli_main.main([*argv, "--owner", "rollout/web"]) == 2
    assert "Rollout web has active pods in 2 ReplicaSets" in capsys.readouterr().err
    only_canary = [d for d in W_CASE if d["metadata"]["name"] not in ("s1", "s3")]
    path.write_text(yaml.safe_dump_all(only_canary))
    assert cli_main.main([*argv, "--owner", "ro/web"]) == 0
    assert yaml.safe_load(capsys.readouterr().out)["owner"] == "ReplicaSet/default/web-canary"
