"""The karpenter policy and pods still starting (issue 38's finding: on a 500-node day the karpenter
arm held a PDB below its minimum for 37 minutes and evicted five times kubetide's pods).

The Eviction API lets a pod that is not yet running go without asking its budget. Karpenter's
candidate rule (pdb.Limits.CanEvictPods) is the stricter one: a pod whose budget allows no
disruption keeps its node, Ready or not, unless the budget is AlwaysAllow and the pod not Ready.
The arm used the Cluster Autoscaler's rule instead (an unhealthy pod may go while its budget is
not below its minimum), so it deleted nodes on which the replacements of pods it had evicted
were starting, threw them back to pending, and their budgets stayed short."""

from sim_helpers import advance, deployment, group, make_scenario, pdb

from kubetide.sim import Simulation

STARTUP = 600  # every pod takes 10 minutes from binding to Ready
DO_NOT_DISRUPT = "karpenter.sh/do-not-disrupt"


def _scenario(policy=None):
    # Three nodes, one pod each: two of `web` (a budget of minAvailable 2: nothing may go) and one
    # of `other`, protected by do-not-disrupt for its first 5 minutes. At 30 s `web` grows to
    # three: the new pod starts beside `other`, on the least used node, and its budget still allows
    # no disruption (2 healthy of 2 wanted). From 5 minutes on that node could go (both its pods fit
    # on the others) and the Eviction API would let the starting pod go without asking.
    return make_scenario(
        groups=[group(size=3, min_size=0, cpu="4")],
        objects=[
            deployment("web", 2, cpu="1"),
            deployment("other", 1, cpu="500m", annotations={DO_NOT_DISRUPT: "5m"}),
            pdb("web", "web", min_available=2, policy=policy),
        ],
        events=[{"at": "30s", "scale": {"kind": "Deployment", "name": "web", "replicas": 3}}],
        cluster={"podStartupDelay": {"min": f"{STARTUP}s", "max": f"{STARTUP}s"}},
        autoscaler={"policy": "karpenter"},
        duration="1h",
    )


def _evicted(sim, app):
    return [e for e in sim.log.entries if e["reason"] == "Evicted" and f"/{app}-" in e["object"]]


def test_a_node_with_a_starting_pod_of_a_budget_allowing_nothing_is_not_disrupted():
    sim = Simulation(_scenario())
    sim.setup()
    advance(sim, STARTUP)  # the third pod of web is still starting
    assert _evicted(sim, "web") == [] and _evicted(sim, "other") == []
    assert len(sim.world.snapshot) == 3
    assert sim.ledger.result().below_pdb_minimum_seconds == 0


def test_under_always_allow_the_starting_pod_does_not_hold_its_node():
    # AlwaysAllow lets a pod that is not Ready be evicted whatever the budget: Karpenter passes it.
    sim = Simulation(_scenario(policy="AlwaysAllow"))
    sim.setup()
    advance(sim, STARTUP)
    assert len(_evicted(sim, "web")) >= 1 and len(sim.world.snapshot) < 3
