"""The simulator's ReplicaSet controller finds a ReplicaSet's siblings as kube-controller-manager
does (getReplicaSetsWithSameController): by the UID of the controller ownerReference, whatever the
controller's kind, so an Argo Rollout's ReplicaSets rank each other's pods as a Deployment's do."""

from __future__ import annotations

import pytest
from sim_helpers import make_scenario, simulate, workload

from kubetide.sim import NoAutoscaler


def _replicaset(name: str, owner: tuple[str, str, str] | None, replicas: int = 2) -> dict:
    rs = workload("ReplicaSet", name, replicas, labels={"app": name})
    if owner is not None:
        kind, owner_name, uid = owner
        ref = {"apiVersion": "argoproj.io/v1alpha1", "kind": kind, "name": owner_name, "controller": True}
        if uid:
            ref["uid"] = uid
        rs["metadata"]["ownerReferences"] = [ref]
    return rs


@pytest.mark.parametrize(
    ("name", "owners", "related"),
    [
        (
            "a Rollout's ReplicaSets are siblings",
            {"canary": ("Rollout", "web", "r-1"), "stable": ("Rollout", "web", "r-1")},
            {"canary": ["canary", "stable"], "stable": ["canary", "stable"]},
        ),
        (
            "the same name with another UID is another controller",
            {"canary": ("Rollout", "web", "r-1"), "stable": ("Rollout", "web", "r-2")},
            {"canary": ["canary"], "stable": ["stable"]},
        ),
        (
            "references without a UID to different owners are not siblings",
            {"canary": ("Rollout", "web", ""), "stable": ("Rollout", "api", "")},
            {"canary": ["canary"], "stable": ["stable"]},
        ),
        (
            "references without a UID to the same owner are",
            {"canary": ("Rollout", "web", ""), "stable": ("Rollout", "web", "")},
            {"canary": ["canary", "stable"], "stable": ["canary", "stable"]},
        ),
        (
            "no controller: no related pods (every rank 0)",
            {"canary": None, "stable": ("Rollout", "web", "r-1")},
            {"canary": None, "stable": ["stable"]},
        ),
    ],
)
def test_related_pods_follow_the_controller_uid(name, owners, related):
    objects = [_replicaset(rs, owner) for rs, owner in owners.items()]
    sim = simulate(make_scenario(objects=objects), NoAutoscaler)
    for rs_name, expected in related.items():
        rs = sim.world.workloads[f"ReplicaSet/default/{rs_name}"]
        pods = sim.replicasets.related_pods(rs)
        apps = None if pods is None else sorted({p.labels["app"] for p in pods})
        assert apps == expected, name
        if pods is not None:
            assert len(pods) == 2 * len(expected)
