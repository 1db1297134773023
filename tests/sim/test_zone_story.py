"""KEP-2185's zone story (issue 4 item 5) with the real autoscaler running, over several seeds,
and the ReplicaSet controller's related pods (upstream's getIndirectlyRelatedPods).

examples/zone-rebalancing.yaml: 2N pods over zones a and b after zone-c's outage, scale to 3N (the
new pods go to zone-c), back to 2N. With logarithmic buckets each zone keeps about 2N/3; the KEP
says "about", and a random choice of N victims among 3N leaves each zone a hypergeometric count
(mean 2N/3), so "about" is taken as within three standard deviations. Newest-first empties zone-c.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from sim_helpers import deployment, group, make_scenario

import kubetide.sim.runtime.replicaset as replicaset_module
from kubetide.model.node import ZONE_LABEL
from kubetide.sim import NoAutoscaler, Simulation, load_scenario

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "zone-rebalancing.yaml"
SEEDS = (1, 2, 3, 4)
ZERO = {"pdb_violations": 0, "pods_lost": 0, "nodes_deleted_with_pods": 0}


def story():
    scenario = load_scenario(EXAMPLE)
    web = next(w for w in scenario.objects.workloads if w.kind == "Deployment")
    scales = [e for e in scenario.events if e.kind == "scale"]
    two_n = web.replicas
    assert two_n % 2 == 0
    n = two_n // 2
    assert [e.target.replicas for e in scales] == [3 * n, 2 * n], "the story: 2N -> 3N -> 2N"
    return scenario, n, scales[-1].at


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


def run(logarithmic: bool, seed: int):
    scenario, n, downscale_at = story()
    scenario.logarithmic_ranking = logarithmic
    sim = Simulation(scenario, seed=seed)  # the default factory: kubetide's autoscaler
    sim.setup()
    sim.engine.run_until(sim.engine.start + downscale_at - 1)
    before = web_pods_by_zone(sim)
    result = sim.run()
    return n, before, result


def noise(n: int) -> float:
    """Three standard deviations of a zone's remaining pods when N of 3N go at random (N each)."""
    total, removed, in_zone = 3 * n, n, n
    variance = removed * (in_zone / total) * (1 - in_zone / total) * (total - removed) / (total - 1)
    return 3 * math.sqrt(variance)


@pytest.mark.parametrize("seed", SEEDS)
def test_logarithmic_ranking_rebalances_the_zones_with_the_autoscaler_running(seed):
    n, before, result = run(True, seed)
    s = result.summary
    assert s["autoscaler"] == "kubetide" and s["autoscaler_loops"] > 0
    # The story's premise held: the N new pods went to the new zone.
    assert before == {"zone-a": n, "zone-b": n, "zone-c": n}
    zones = s["pods"]["by_zone_at_end"]
    assert sum(zones.values()) == 2 * n
    for zone, count in zones.items():
        assert abs(count - 2 * n / 3) <= noise(n), f"seed {seed}: {zone} has {count} of {2 * n}"
    assert s["invariants"] == ZERO


@pytest.mark.parametrize("seed", SEEDS)
def test_newest_first_empties_the_new_zone_with_the_autoscaler_running(seed):
    n, before, result = run(False, seed)
    s = result.summary
    assert before == {"zone-a": n, "zone-b": n, "zone-c": n}
    assert s["pods"]["by_zone_at_end"] == {"zone-a": n, "zone-b": n, "zone-c": 0}
    assert s["invariants"] == ZERO


# -- related pods ------------------------------------------------------------------------------
def two_replicasets_of_one_deployment(crowded_zone: str):
    """Deployment web (2 pods, one per zone) and a second ReplicaSet of the same Deployment (the
    previous rollout's, 2 pods pinned to `crowded_zone`). The rollout stays under way for the whole
    run: maxSurge 100% lets both new pods start at once, and with maxUnavailable 0 the old pods
    stay until the new ones are available, which minReadySeconds puts after the end."""
    web = deployment(
        "web",
        2,
        cpu="1",
        strategy={"rollingUpdate": {"maxSurge": "100%", "maxUnavailable": 0}},
        minReadySeconds=3600,
        progressDeadlineSeconds=7200,  # the API server wants it above minReadySeconds
    )
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
