""" "pod X fits on no other node": the answer names the kube-scheduler filter that refuses the pod
on each other node, in kube-scheduler's words with the nodes it refuses it on (and the term, for
inter-pod affinity), and keeps "one more node of group g would take it" when the planner found
that; the change, applied to the dump, makes the node removable."""

from __future__ import annotations

import pytest
from unblock_cluster import SCALE_DOWN_DISABLED, Cluster

KEPT = {SCALE_DOWN_DISABLED: "true"}  # the other node: room, never a candidate itself
ONE_MORE = "one more node of group general would take it"


def base() -> Cluster:
    c = Cluster()
    c.group("general", 0)
    c.node("a")
    c.node("b", **KEPT)
    return c


def spec_of(c: Cluster, pod: str) -> dict:
    return next(i for i in c.items if i["kind"] == "Pod" and i["metadata"]["name"] == pod)["spec"]


def own_anti_affinity(c: Cluster) -> None:
    c.replicaset("web", 2)
    c.pod("web-1", "a", app="web", anti_affinity=True)
    c.pod("web-2", "b", app="web", anti_affinity=True)


def existing_anti_affinity(c: Cluster) -> None:
    c.replicaset("web", 1)
    c.replicaset("guard", 1)
    c.pod("web-1", "a", app="web")
    c.pod("guard-1", "b", app="guard")
    spec_of(c, "guard-1")["affinity"] = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "kubernetes.io/hostname"}
            ]
        }
    }


def insufficient_cpu(c: Cluster) -> None:
    c.flags["scale-down-utilization-threshold"] = "0.9"
    c.replicaset("batch", 1)
    c.replicaset("filler", 1)
    c.pod("batch-1", "a", "3", app="batch")
    c.pod("filler-1", "b", "2", app="filler")


def untolerated_taint(c: Cluster) -> None:
    b = next(i for i in c.items if i["kind"] == "Node" and i["metadata"]["name"] == "b")
    b["spec"]["taints"] = [{"key": "dedicated", "value": "tools", "effect": "NoSchedule"}]
    c.replicaset("web", 1)
    c.pod("web-1", "a", app="web")


def node_selector(c: Cluster) -> None:
    a = next(i for i in c.items if i["kind"] == "Node" and i["metadata"]["name"] == "a")
    a["metadata"]["labels"]["disk"] = "ssd"
    c.replicaset("db", 1)
    c.pod("db-1", "a", app="db")
    spec_of(c, "db-1")["nodeSelector"] = {"disk": "ssd"}


CASES = [
    (
        "its own anti-affinity term",
        own_anti_affinity,
        "pod prod/web-1 fits on no other node (1 node(s) didn't match pod anti-affinity rules"
        " (term app=web on kubernetes.io/hostname): b)",
    ),
    (
        "another pod's anti-affinity term",
        existing_anti_affinity,
        "pod prod/web-1 fits on no other node (1 node(s) didn't satisfy existing pods anti-affinity"
        " rules (pod prod/guard-1's term app=web on kubernetes.io/hostname): b)",
    ),
    ("too little cpu", insufficient_cpu, "pod prod/batch-1 fits on no other node (1 Insufficient cpu: b)"),
    (
        "an untolerated taint",
        untolerated_taint,
        "pod prod/web-1 fits on no other node (1 node(s) had untolerated taint {dedicated: tools}: b)",
    ),
    (
        "a node selector",
        node_selector,
        "pod prod/db-1 fits on no other node (1 node(s) didn't match Pod's node affinity/selector: b)",
    ),
]


@pytest.mark.parametrize(("build", "words"), [case[1:] for case in CASES], ids=[case[0] for case in CASES])
def test_fits_nowhere_names_the_filter_and_the_nodes(tmp_path, build, words):
    cluster = base()
    build(cluster)
    a = cluster.plan(tmp_path)["scale_down"]["nodes"]["a"]
    assert (a["status"], a["reason"]) == ("unremovable", "NoPlaceToMovePods")
    unblock = a["unblock"]
    assert unblock["text"] == f"{words}: {ONE_MORE}"
    assert unblock["removable"] is True and [c["kind"] for c in unblock["changes"]] == ["add-node"]
    after = cluster.applied(unblock["changes"]).plan(tmp_path)["scale_down"]
    assert "a" in after["candidate_set"], after["nodes"]["a"]


def test_a_pod_that_would_fit_alone_says_the_nodes_other_pods_take_the_room(tmp_path):
    """Two pods of 1.5 cpu on a; b has 2 cpu free: the first moves there, the second then fits
    nowhere, though alone it would fit on b."""
    cluster = base()
    cluster.replicaset("batch", 2)
    cluster.replicaset("filler", 1)
    cluster.pod("batch-1", "a", "1500m", app="batch")
    cluster.pod("batch-2", "a", "1500m", app="batch")
    cluster.pod("filler-1", "b", "2", app="filler")
    cluster.flags["scale-down-utilization-threshold"] = "0.9"
    a = cluster.plan(tmp_path)["scale_down"]["nodes"]["a"]
    assert a["reason"] == "NoPlaceToMovePods"
    assert "alone it fits on b, but the node's other pods take that room first" in a["unblock"]["text"]
    assert a["unblock"]["text"].endswith(ONE_MORE)
