"""The karpenter policy and a node that never registers: Karpenter's liveness check deletes a
NodeClaim whose node has not registered 15 minutes after launch (nodeclaim/lifecycle/liveness.go).
Kept, the claim stood as room for every later consolidation's simulation: on unready-nodes a node
was deleted whose pods could only go to such a claim, and four of them were lost."""

from sim_helpers import advance, deployment, group, make_scenario

from kubetide.sim import Simulation


def _claims(sim) -> set[str]:
    return set(sim.autoscaler.launched)


def _instances(sim) -> set[str]:
    return {i.id for g in sim.cloud.node_groups() for i in g.instances()}


def test_a_nodeclaim_whose_node_never_registers_is_deleted_after_15_minutes():
    scenario = make_scenario(
        groups=[group(size=1, min_size=0, cpu="4")],
        objects=[deployment("web", 1, cpu="3")],
        events=[
            {"at": "1m", "fault": {"type": "nodeNeverRegisters", "nodeGroup": "general", "duration": "30m"}},
            {"at": "2m", "scale": {"kind": "Deployment", "name": "web", "replicas": 2}},
        ],
        autoscaler={"policy": "karpenter"},
        duration="1h",
    )
    sim = Simulation(scenario)
    sim.setup()
    advance(sim, 150)  # the second pod's NodeClaim launched at about 2 minutes
    first = _claims(sim)
    assert len(first) == 1 and first <= _instances(sim)
    advance(sim, 14 * 60)  # 16m30s: 14 minutes and a half since the launch
    assert _claims(sim) == first
    advance(sim, 60)
    assert not first & _claims(sim)  # deleted, and its instance with it
    assert not first & _instances(sim)
    assert len(_claims(sim)) == 1  # the pod still pending: another launch
