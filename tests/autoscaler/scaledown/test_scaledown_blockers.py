"""The blocker line and its annotation in the simulated cluster: with
--annotate-scale-down-blockers the loop writes kubetide.io/scale-down-blocker on the node a bare
pod blocks (the node object changes, through the ClusterActions port), the status lists the node
with the first blocking pod and what would unblock it, and nodes that are not blocked carry none."""

from __future__ import annotations

from pathlib import Path

from kubetide.autoscaler.scaledown.unblock_answer import BLOCKER_ANNOTATION
from kubetide.sim import Simulation
from kubetide.sim.spec.scenario import parse_scenario


def scenario(annotate: bool):
    web = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {
                    "containers": [
                        {"name": "c", "resources": {"requests": {"cpu": "2500m", "memory": "1Gi"}}}
                    ]
                },
            },
        },
    }
    solo = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "solo", "namespace": "default"},
        "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}]},
    }
    group = {
        "name": "general",
        "minSize": 0,
        "maxSize": 5,
        "initialSize": 3,
        "price": 0.2,
        "template": {"status": {"allocatable": {"cpu": "4", "memory": "16Gi", "pods": "110"}}},
    }
    data = {
        "apiVersion": "kubetide.io/v1alpha1",
        "kind": "Scenario",
        "metadata": {"name": "blockers"},
        "spec": {
            "duration": "10m",
            "seed": 1,
            "nodeGroups": [group],
            "objects": [web, solo],
            "autoscaler": {"annotate-scale-down-blockers": annotate, "scale-down-unneeded-time": "30m"},
        },
    }
    return parse_scenario(data, "blockers.yaml", Path("."))


def run(annotate: bool, seconds: float = 120.0) -> Simulation:
    sim = Simulation(scenario(annotate))
    sim.setup()
    sim.engine.run_until(sim.engine.now() + seconds)
    return sim


def test_the_blocked_node_carries_the_line_and_the_status_lists_it():
    sim = run(annotate=True)
    solo = next(p for p in sim.world.pods() if p.name == "solo")
    lines = {n.name: n.meta.annotations.get(BLOCKER_ANNOTATION) for n in sim.world.nodes()}
    assert lines[solo.node_name] == (
        "BlockedByPod by default/solo (NotReplicated); to unblock: pod default/solo is bare:"
        ' give it a controller or annotate cluster-autoscaler.kubernetes.io/safe-to-evict: "true"'
    )
    # The web pods' nodes are busy (0.62 of 4 cores): blocked too, with their own line, or none
    # at all while they wait out a timer; never the bare pod's.
    for name, line in lines.items():
        if name != solo.node_name and line is not None:
            assert line.startswith("NotUnderutilized"), line
    status = sim.world.autoscaler_status
    unremovable = {u.node: u for u in status.cluster_wide.scale_down.unremovable}
    entry = unremovable[solo.node_name]
    # CA's reason: RecentlyUnremovable between rechecks (the annotation names what failed instead)
    assert entry.reason in ("BlockedByPod", "RecentlyUnremovable")
    assert entry.blocking_pods == "default/solo (NotReplicated)"
    assert entry.unblock.startswith("pod default/solo is bare")


def test_without_the_flag_nothing_is_written_and_the_status_still_names_the_pod():
    sim = run(annotate=False)
    assert all(BLOCKER_ANNOTATION not in n.meta.annotations for n in sim.world.nodes())
    (entry,) = sim.world.autoscaler_status.cluster_wide.scale_down.unremovable
    assert (entry.blocking_pods, entry.unblock) == ("default/solo (NotReplicated)", "")
