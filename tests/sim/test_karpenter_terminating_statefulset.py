"""The karpenter policy and StatefulSet pods still terminating on a node it is disrupting.

A StatefulSet replaces a pod under the same name, so only once the old pod is gone: while it winds
down (its terminationGracePeriodSeconds) no pending pod stands for it. Karpenter's scheduling
simulation counts such pods as reschedulable (pod.IsReschedulable: active pods, and StatefulSet
pods that are terminating) and keeps room for them. The arm counted only active pods, so a second
consolidation gave the room away and the replacement waited for a new node (issue 38: the karpenter
arm's kafka pods on nightly-scale-down x8.34)."""

from sim_helpers import deployment, group, make_scenario, workload

from kubetide.sim import Simulation

GRACE = 120  # db-0 terminates for two minutes after its eviction


def _scenario():
    # Three 4-CPU nodes: db-0 (2 CPU) alone on one, web and cache (750m each) on the two others.
    # The first command removes db-0's node (db-0 fits beside web and cache). While db-0
    # terminates, removing one of the two others looks possible (1.5 CPU fits on the third) when
    # db-0 is forgotten, and leaves no 2 CPU anywhere for its replacement; the budgets (100%) let
    # both commands run at once, and a new node takes 10 minutes.
    return make_scenario(
        groups=[group(size=3, min_size=0, cpu="4", provisioningDelay="10m")],
        objects=[
            workload("StatefulSet", "db", 1, cpu="2", memory="1Gi", grace=GRACE),
            deployment("web", 2, cpu="750m"),
            deployment("cache", 2, cpu="750m"),
        ],
        autoscaler={"policy": "karpenter", "karpenter-budgets": "100%"},
        duration="15m",
    )


def test_room_is_kept_for_a_terminating_statefulset_pod_of_a_node_being_disrupted():
    sim = Simulation(_scenario())
    result = sim.run()
    unplaced = [
        e
        for e in sim.log.entries
        if e["reason"] == "FailedScheduling" and e["object"].startswith("Pod/default/db-")
    ]
    assert unplaced == []
    assert result.summary["invariants"]["pods_lost"] == 0
    # the one removal that leaves db-0's replacement a place: two nodes stay, and db-0 is Running
    assert len(sim.world.snapshot) == 2
    db = [p for p in sim.world.pods() if p.labels.get("app") == "db"]
    assert [(p.name, p.phase, p.ready) for p in db] == [("db-0", "Running", True)]
