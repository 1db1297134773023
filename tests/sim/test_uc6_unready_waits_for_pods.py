"""UC6 (issue 17 item 5): an unready node of a group at its target size is removed only once the
node controller has removed its pods, as the cluster-state-registry design says; scale-down
does not drain it while a pod that needs a home is still on it."""

from __future__ import annotations

from sim_helpers import deployment, group, make_scenario

from kubetide.sim import Simulation

TOLERATION = 1800  # the web pods ride out a NotReady node for 30 minutes
DIES_AT = 120.0


def scenario():
    tolerate = [
        {"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": TOLERATION}
        for key in ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable")
    ]
    spread = [
        {
            "maxSkew": 1,
            "topologyKey": "kubernetes.io/hostname",
            "whenUnsatisfiable": "ScheduleAnyway",
            "labelSelector": {"matchLabels": {"app": "web"}},
        }
    ]
    web = deployment(
        "web", 2, cpu="500m", pod_extra={"tolerations": tolerate, "topologySpreadConstraints": spread}
    )
    return make_scenario(
        groups=[group("general", size=1, min_size=1), group("fragile", size=1, min_size=0)],
        objects=[web],
        events=[{"at": f"{int(DIES_AT)}s", "fault": {"type": "nodeNotReady", "nodeGroup": "fragile"}}],
        duration="50m",
        autoscaler={"scale-down-unready-time": "5m", "scale-down-unneeded-time": "5m"},
    )


def test_an_unready_node_at_target_waits_until_its_pods_are_gone():
    result = Simulation(scenario()).run()
    (dead,) = [e["object"].removeprefix("Node/") for e in result.events if e["reason"] == "NodeNotReady"]
    assert dead.startswith("fragile")
    removals = [e for e in result.events if e["reason"] == "DeleteNodes" and dead in e["message"]]
    assert removals, "the dead node is removed in the end"
    # Not drained by the autoscaler: the node controller removed the pods, then the node went.
    assert removals[0]["time"] >= DIES_AT + TOLERATION
    assert not [e for e in result.events if e["message"] == f"Scale-down: node {dead} removed with drain"]
    assert [e for e in result.events if e["message"] == f"Scale-down: empty node {dead} removed"]
    assert result.summary["invariants"]["pods_lost"] == 0
