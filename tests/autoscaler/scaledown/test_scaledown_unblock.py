"""What would unblock a node (issue 27 item 1) and every blocking pod named in CA's order (issue 28
item 6), through `kubetide plan --json`: each case's suggestion is checked the only way that
counts, by applying it to the dump (or the groups file, or a flag) and planning again."""

from __future__ import annotations

import pytest
from unblock_cluster import SAFE_TO_EVICT, SCALE_DOWN_DISABLED, Cluster

KEPT = {SCALE_DOWN_DISABLED: "true"}  # the destination node: room, never a candidate itself


def two_nodes(min_size: int = 0) -> Cluster:
    c = Cluster()
    c.group("general", min_size)
    c.node("a")
    c.node("b", **KEPT)
    return c


def bare(c: Cluster) -> None:
    c.pod("debug", "a")


def not_safe(c: Cluster) -> None:
    c.replicaset("web", 1)
    c.pod("web-1", "a", app="web", annotations={SAFE_TO_EVICT: "false"})


def do_not_disrupt(c: Cluster) -> None:
    c.replicaset("web", 1)
    c.pod("web-1", "a", app="web", annotations={"karpenter.sh/do-not-disrupt": "true"})


def kube_system(c: Cluster) -> None:
    c.replicaset("dns", 1, namespace="kube-system")
    c.pod("dns-1", "a", app="dns", namespace="kube-system")


def local_storage(c: Cluster) -> None:
    c.replicaset("cache", 1)
    c.pod("cache-1", "a", app="cache", volumes=[{"name": "scratch", "emptyDir": {}}])


def budget(c: Cluster) -> None:
    c.replicaset("api", 1)
    c.pod("api-1", "a", app="api")
    c.pdb("api", {"minAvailable": 1}, healthy=1, expected=1)


def busy(c: Cluster) -> None:
    c.replicaset("batch", 1)
    c.pod("batch-1", "a", "2200m", app="batch")  # 0.55 of 4 cores: within 0.1 of the threshold


def anti_affinity(c: Cluster) -> None:
    c.replicaset("web", 2)
    c.pod("web-1", "a", app="web", anti_affinity=True)
    c.pod("web-2", "b", app="web", anti_affinity=True)


def disabled(c: Cluster) -> None:
    c.items[0]["metadata"]["annotations"] = dict(KEPT)  # node a
    c.replicaset("web", 1)
    c.pod("web-1", "a", app="web")


def min_size(c: Cluster) -> None:
    c.replicaset("web", 1)
    c.pod("web-1", "a", app="web")


def two_blockers(c: Cluster) -> None:
    c.pod("debug-1", "a")
    c.pod("debug-2", "a")


# (case, cluster builder, min size of the group, reason, change kinds, words in the line)
CASES = [
    ("bare pod", bare, 0, "BlockedByPod", ["safe-to-evict"], "pod prod/debug is bare: give it a controller"),
    ("safe-to-evict false", not_safe, 0, "BlockedByPod", ["safe-to-evict"], 'safe-to-evict: "false"'),
    (
        "karpenter do-not-disrupt",
        do_not_disrupt,
        0,
        "BlockedByPod",
        ["safe-to-evict"],
        "karpenter.sh/do-not-disrupt",
    ),
    ("kube-system pod", kube_system, 0, "BlockedByPod", ["safe-to-evict"], "has no PodDisruptionBudget"),
    ("local storage", local_storage, 0, "BlockedByPod", ["safe-to-evict-local-volumes"], '"scratch"'),
    (
        "budget that allows nothing",
        budget,
        0,
        "BlockedByPod",
        ["pdb"],
        "PodDisruptionBudget prod/api needs 1 more disruption (minAvailable 0)",
    ),
    (
        "busy node",
        busy,
        0,
        "NotUnderutilized",
        ["flag"],
        "utilization 0.55: 0.05 above the threshold 0.5 (scale-down-utilization-threshold=0.55",
    ),
    (
        "anti-affinity: fits nowhere",
        anti_affinity,
        0,
        "NoPlaceToMovePods",
        ["add-node"],
        "pod prod/web-1 fits on no other node (1 node(s) didn't match pod anti-affinity rules"
        " (term app=web on kubernetes.io/hostname): b): one more node of group general would take it",
    ),
    ("scale-down-disabled", disabled, 0, "ScaleDownDisabledAnnotation", ["node-annotation"], "remove it"),
    (
        "group at its min size",
        min_size,
        2,
        "NodeGroupMinSizeReached",
        ["node-group-min-size"],
        "node group general is at its min size 2: lower it to 1",
    ),
    ("two bare pods", two_blockers, 0, "BlockedByPod", ["safe-to-evict", "safe-to-evict"], "2 changes: "),
]


@pytest.mark.parametrize(
    ("build", "min_size", "reason", "kinds", "words"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_the_suggestion_applied_makes_the_node_removable(tmp_path, build, min_size, reason, kinds, words):
    cluster = two_nodes(min_size)
    build(cluster)
    a = cluster.plan(tmp_path)["scale_down"]["nodes"]["a"]
    assert (a["status"], a["reason"]) == ("unremovable", reason)
    unblock = a["unblock"]
    assert unblock["removable"] is True
    assert [c["kind"] for c in unblock["changes"]] == kinds
    assert words in unblock["text"]
    after = cluster.applied(unblock["changes"]).plan(tmp_path)["scale_down"]
    assert "a" in after["candidate_set"], after["nodes"]["a"]


def test_every_blocking_pod_is_named_in_cas_pod_order(tmp_path):
    """CA walks a node's pods in order and names the first that blocks, whatever the rule (its
    budget check is the last rule of each pod): a pod its budget pins comes before a bare pod
    listed after it, although the bare pod's rule comes first in the rule order."""
    cluster = two_nodes()
    budget(cluster)  # prod/api-1, pinned by its budget, first on the node
    cluster.pod("debug", "a")  # then a bare pod
    cluster.pod("zz-debug", "a")
    a = cluster.plan(tmp_path)["scale_down"]["nodes"]["a"]
    assert a["blocking_pods"] == [
        {"pod": "prod/api-1", "reason": "NotEnoughPdb", "pdb": "prod/api"},
        {"pod": "prod/debug", "reason": "NotReplicated"},
        {"pod": "prod/zz-debug", "reason": "NotReplicated"},
    ]
    assert a["blocking_pod"] == a["blocking_pods"][0]
    text = " ".join(cluster.plan_text(tmp_path, "--node", "a").split())
    assert "why: blocked by prod/api-1 (NotEnoughPdb) +2 more:" in text
    assert "prod/debug: blocks the drain (NotReplicated)" in text
    assert "what would unblock it: 3 changes:" in text
    # Unblocking takes all three.
    assert a["unblock"]["removable"] is True
    assert sorted(c["kind"] for c in a["unblock"]["changes"]) == ["pdb", "safe-to-evict", "safe-to-evict"]
    after = cluster.applied(a["unblock"]["changes"]).plan(tmp_path)["scale_down"]
    assert "a" in after["candidate_set"]


def test_a_node_not_autoscaled_has_nothing_to_change(tmp_path):
    cluster = two_nodes()
    cluster.node("lonely", group="unlisted")
    a = cluster.plan(tmp_path)["scale_down"]["nodes"]["lonely"]
    assert a["reason"] == "NotAutoscaled"
    assert a["unblock"] == {
        "removable": False,
        "waiting": False,
        "text": "not in any autoscaled node group: add it to one (GROUPS.yaml, or the cloud's group)",
        "changes": [],
    }


@pytest.mark.parametrize(
    ("requests", "utilization"),
    [("4", 1.0), ("3960m", 0.99), ("2440m", 0.61)],
    ids=["full", "99%", "just past the rule"],
)
def test_a_busy_node_is_not_offered_a_threshold_far_above_the_one_in_effect(tmp_path, requests, utilization):
    """A node more than 0.1 above the threshold is needed, not blocked: no threshold change is
    offered (a threshold near 1 would keep every busy node a candidate), and the answer says so."""
    cluster = two_nodes()
    cluster.replicaset("batch", 1)
    cluster.pod("batch-1", "a", requests, app="batch")
    a = cluster.plan(tmp_path)["scale_down"]["nodes"]["a"]
    assert a["reason"] == "NotUnderutilized"
    assert a["utilization"] == utilization
    assert a["unblock"] == {
        "removable": False,
        "waiting": False,
        "text": "in use, not blocked: more than 0.1 above the threshold 0.5;"
        " no threshold suggested (freeing its pods' requests would let it go)",
        "changes": [],
    }
