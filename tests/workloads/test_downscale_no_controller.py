"""KEP-2185 rank for a ReplicaSet or ReplicationController with no controlling owner.

kube-controller-manager lists related pods through the ReplicaSet's controller
(getReplicaSetsWithSameController); without one it lists none, so every pod's rank is 0 and
criterion 5 never decides. A pod sharing its node with siblings is then not deleted first.
"""

from __future__ import annotations

import pytest
from downscale_factory import DAY, HOUR, NOW, pod
from test_downscale_owners import manifests, pod_doc, rs_doc

from kubetide.model.meta import OwnerReference
from kubetide.workloads import pods_to_delete, rank, rank_pods_for_deletion
from kubetide.workloads.owners import find_targets

STANDALONE = OwnerReference("ReplicaSet", "standalone", "uid-standalone", controller=True)


def crowded_and_lone():
    # Two old pods share node-1; a young one is alone on node-2.
    shared = [
        pod(f"shared-{i}", node="node-1", owner=STANDALONE, ready_at=NOW - DAY, created=NOW - DAY)
        for i in range(2)
    ]
    lone = pod("lone", node="node-2", owner=STANDALONE, ready_at=NOW - HOUR, created=NOW - HOUR)
    return [*shared, lone]


@pytest.mark.parametrize(
    ("owner_has_controller", "first"),
    [
        (True, "shared-0"),  # rank 2 on node-1 beats age
        (False, "lone"),  # every rank 0: the younger pod goes first
    ],
)
def test_rank_counts_no_related_pods_without_a_controlling_owner(owner_has_controller, first):
    pods = crowded_and_lone()
    ranking = rank(pods, NOW, owner_has_controller=owner_has_controller)
    assert ranking.order[0].name == first
    expected = (
        {"shared-0": 2, "shared-1": 2, "lone": 1}
        if owner_has_controller
        else dict.fromkeys(("shared-0", "shared-1", "lone"), 0)
    )
    assert {p.name: ranking.rank_of(p) for p in pods} == expected
    order = rank_pods_for_deletion(pods, NOW, owner_has_controller=owner_has_controller)
    assert order[0].name == first
    assert pods_to_delete(pods, 1, NOW, owner_has_controller=owner_has_controller)[0].name == first


def test_related_pods_without_a_controller_is_a_contradiction():
    pods = crowded_and_lone()
    with pytest.raises(ValueError, match="controller"):
        rank(pods, NOW, pods, owner_has_controller=False)


@pytest.mark.parametrize(
    ("documents", "target_name", "controlled"),
    [
        (rs_doc("web-new", "web") + pod_doc("a", "ReplicaSet", "web-new"), "web-new", True),
        (pod_doc("a", "ReplicaSet", "web-7f9c", "7f9c"), "web-7f9c", True),  # hash naming: a Deployment's
        (rs_doc("solo") + pod_doc("a", "ReplicaSet", "solo"), "solo", False),
        (pod_doc("a", "ReplicaSet", "plain"), "plain", False),
        (pod_doc("a", "ReplicationController", "legacy"), "legacy", False),
    ],
)
def test_targets_know_whether_their_owner_has_a_controller(documents, target_name, controlled):
    (target,) = [t for t in find_targets(manifests(documents)) if t.name == target_name]
    assert target.has_controller is controlled
    assert bool(target.related) is controlled  # no controller: kube-controller-manager lists none
