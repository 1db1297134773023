"""The ReplicaSet controller's related pods (upstream's getIndirectlyRelatedPods)."""

from __future__ import annotations

import pytest
from sim_helpers import deployment, group, make_scenario

import kubetide.sim.replicaset as replicaset_module
from kubetide.model.node import ZONE_LABEL
from kubetide.sim import NoAutoscaler, Simulation


def web_pods_by_zone(sim) -> dict[str, int]:
    snapshot = sim.world.snapshot
    counts: dict[str, int] = {}
    for node in snapshot.nodes():
        zone = node.labels.get(ZONE_LABEL, "")
        counts.setdefault(zone, 0)
        for pod in snapshot.pods_on(node.name).values():
            if pod.labels.get("app") == "web" and not pod.is_terminating and pod.phase == "Running":
                counts[zone] += 1
    return dict(sorted(counts.items()))


# -- related pods ------------------------------------------------------------------------------
def two_replicasets_of_one_deployment(crowded_zone: str):
    """Deployment web (2 pods, one per zone) and a second ReplicaSet of the same Deployment (the
    previous rollout's, 2 pods pinned to `crowded_zone`)."""
    web = deployment("web", 2, cpu="1")
    web["metadata"]["uid"] = "web-deployment-uid"
    web["spec"]["template"]["spec"]["topologySpreadConstraints"] = [
        {
            "maxSkew": 1,
            "topologyKey": ZONE_LABEL,
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": "web"}},
        }
    ]
    old = deployment("web-old", 2, cpu="1", labels={"app": "web-old"})
    old["kind"] = "ReplicaSet"
    old["metadata"]["ownerReferences"] = [
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "name": "web",
            "uid": "web-deployment-uid",
            "controller": True,
        }
    ]
    old["spec"]["template"]["spec"]["nodeSelector"] = {ZONE_LABEL: crowded_zone}
    zones = [
        group(
            zone,
            size=1,
            min_size=1,
            template={
                "metadata": {"labels": {ZONE_LABEL: zone}},
                "status": {"allocatable": {"cpu": "4", "memory": "16Gi", "pods": "110"}},
            },
        )
        for zone in ("zone-a", "zone-b")
    ]
    return make_scenario(
        groups=zones,
        objects=[old, web],
        events=[{"at": "10m", "scale": {"kind": "Deployment", "name": "web", "replicas": 1}}],
        duration="15m",
    )


@pytest.mark.parametrize("crowded", ["zone-a", "zone-b"])
def test_scale_down_counts_the_pods_of_every_replicaset_of_the_deployment(crowded):
    # Rank (related pods on the pod's node) comes before age: the web pod sharing its node with
    # the old ReplicaSet's two pods goes, whichever zone that is. Counting only the ReplicaSet's
    # own pods, both web pods rank 1 and the same one (by UID) would go in both runs.
    sim = Simulation(two_replicasets_of_one_deployment(crowded), autoscaler_factory=NoAutoscaler)
    sim.setup()
    assert web_pods_by_zone(sim) == {"zone-a": 1, "zone-b": 1}
    sim.run()
    assert web_pods_by_zone(sim) == {"zone-a": int(crowded != "zone-a"), "zone-b": int(crowded != "zone-b")}


def test_the_controller_passes_related_pods_to_the_ranking(monkeypatch):
    seen = []
    real = replicaset_module.pods_to_delete

    def spy(pods, diff, now, related_pods=None, **kw):
        seen.append((list(pods), None if related_pods is None else list(related_pods)))
        return real(pods, diff, now, related_pods, **kw)

    monkeypatch.setattr(replicaset_module, "pods_to_delete", spy)
    sim = Simulation(two_replicasets_of_one_deployment("zone-a"), autoscaler_factory=NoAutoscaler)
    sim.run()
    (pods, related), *_ = seen
    names = sorted(p.name.rsplit("-", 1)[0] for p in related)
    assert len(pods) == 2 and {p.uid for p in pods} <= {p.uid for p in related}
    assert sum(1 for name in names if name.startswith("web-old")) == 2  # the other ReplicaSet's pods
