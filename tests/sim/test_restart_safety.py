"""Restart safety in the simulator (issue 7 item 4), with the autoscalerRestart fault."""

from __future__ import annotations

import functools

from sim_doubles import RecklessDouble
from sim_helpers import advance, deployment, group, make_scenario, simulate


def test_the_simulator_counts_pods_that_land_on_a_node_the_cloud_is_terminating():
    # Regression for the measurement: the invariants were checked only when the autoscaler asked
    # the cloud to delete a node, so pods bound during the deletionDelay vanished uncounted.
    sc = make_scenario(
        groups=[group("general", size=2, max_size=2, deletionDelay="5m")],
        objects=[deployment("web", 1, cpu="3")],
    )
    probe = simulate(sc)
    busy = {p.node_name for p in probe.world.pods()}
    empty = [n.name for n in probe.world.snapshot.nodes() if n.name not in busy]
    assert len(empty) == 1
    victim = empty[0]
    sim = simulate(sc, functools.partial(RecklessDouble, victims=[victim]))
    advance(sim, 20)  # an empty node: deleting it is fine
    assert sim.metrics.c.nodes_deleted_with_pods == 0
    # Untainted, the dying node is the only one with room for a second web pod.
    key = next(k for k, w in sim.world.workloads.items() if w.kind == "Deployment")
    sim.replicasets.scale(key, 2)
    advance(sim, 60)
    assert any(p.node_name == victim and p.phase == "Running" for p in sim.world.pods())
    advance(sim, 900)  # the cloud removes the node at 5m; its pod has had 5 minutes to come back
    c = sim.metrics.c
    assert victim not in sim.world.snapshot
    assert c.nodes_deleted_with_pods == 1
    assert c.pods_lost == 1  # no room anywhere for its replacement
    reasons = {e.get("invariant") for e in sim.log.entries if e["reason"] == "InvariantViolated"}
    assert reasons == {"nodes_deleted_with_pods", "pods_lost"}
