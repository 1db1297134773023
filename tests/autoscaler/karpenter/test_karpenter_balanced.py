"""Karpenter's Balanced consolidation policy (v1.14) per NodePool: a consolidation move is taken
only when its score, (savings / pool's total cost) / (move's disruption / pool's total
disruption), reaches 1/k with k = 2; the pool totals count every node of the pool, candidates or
not; a move from several pools needs every Balanced source pool's approval; a candidate whose
full delete cannot pass is not simulated.

The method cases use test_karpenter_methods' cluster: large (8 cpu, $0.40), medium (4 cpu,
$0.20), small (2 cpu, $0.10); pods of default priority cost 1 each to evict, so a node's
disruption is 1 + its pods."""

from __future__ import annotations

import copy
import dataclasses
from pathlib import Path

import pytest
from test_karpenter_methods import cluster, context

from kubetide.autoscaler.karpenter.methods import (
    UNDERUTILIZED,
    MultiNodeConsolidation,
    PoolTotals,
    SingleNodeConsolidation,
)
from kubetide.autoscaler.karpenter.nodepools import Budgets
from kubetide.autoscaler.options import parse_options
from kubetide.errors import ManifestError
from kubetide.sim import Simulation
from kubetide.sim.spec.errors import ScenarioError
from kubetide.sim.spec.scenario import parse_scenario


def balanced_decide(method, layout, totals, pools=None):
    """The method's command on `layout` with the pools in `totals` Balanced (`pools`: node ->
    pool, `default` otherwise), and the moves it scored."""
    snapshot, checker, kinds, candidates = cluster(layout)
    pools = pools or {}
    candidates = [dataclasses.replace(c, pool=pools.get(c.name, "default")) for c in candidates]
    budgets = Budgets({p: {UNDERUTILIZED: 10} for p in {"default", *pools.values()}})
    ctx = dataclasses.replace(
        context(snapshot, checker, kinds),
        budgets=budgets,
        balanced={p: PoolTotals(*t) for p, t in totals.items()},
    )
    command = method.compute(ctx, candidates)
    decided = None if command is None else (sorted(command.names), [r.group_id for r in command.replacements])
    return decided, dict(ctx.balanced_moves), ctx.blocked


# -- single node: a large node with one 1-cpu pod, replaced by a small one ($0.30 saved, disruption 2)
# score = (0.30 / pool cost) / (2 / pool disruption); approved from 0.5
@pytest.mark.parametrize(
    ("cost", "disruption", "score"),
    [
        (0.40, 2.0, 0.75),  # the large node alone in its pool
        (0.30 / 0.51, 2.0, 0.51),  # just above 1/k: approved
        (0.30 / 0.49, 2.0, 0.49),  # just below: refused
        # the pool's other nodes (non-candidates too) make the saving a smaller share ...
        # (a full delete, 0.40 / 0.70, would pass: the candidate is tried)
        (0.70, 2.0, 0.43),
        # ... and their pods make the move's disruption a smaller share
        (1.20, 6.0, 0.75),
    ],
)
def test_single_node_balanced_score_near_the_threshold(cost, disruption, score):
    decided, moves, blocked = balanced_decide(
        SingleNodeConsolidation(), {"a": ("large", ["1"])}, {"default": (cost, disruption)}
    )
    if score >= 0.5:
        assert decided == (["a"], ["small"]) and moves == {("approved", "default"): 1}
    else:
        assert decided is None and moves == {("rejected", "default"): 1}
        assert f"score {score:.2f} < threshold 0.50" in blocked["a"], blocked


def test_a_pool_that_is_not_balanced_is_not_scored():
    decided, moves, _ = balanced_decide(
        SingleNodeConsolidation(), {"a": ("large", ["1"])}, {"other": (100.0, 1.0)}
    )
    assert decided == (["a"], ["small"]) and moves == {}


def test_single_node_skips_a_candidate_whose_full_delete_cannot_pass():
    """Deleting b outright would save $0.40 of a $10 pool for 2 of its 2 disruption: 0.04, so b is
    not even simulated (no score, no reason); a, in a pool of its own that approves, goes (its pod
    moving to b)."""
    decided, moves, blocked = balanced_decide(
        SingleNodeConsolidation(),
        {"b": ("large", ["1"]), "a": ("large", ["1"])},
        {"poor": (10.0, 2.0), "rich": (0.40, 2.0)},
        pools={"b": "poor", "a": "rich"},
    )
    assert decided == (["a"], [])
    assert moves == {("approved", "rich"): 1} and "b" not in blocked


# -- multi node: two medium nodes, one pod of 1 cpu each, replaced by one small node: saves $0.30 for
# a disruption of 2 + 2; each pool gets the saving's share of its candidates' cost ($0.15 each)
@pytest.mark.parametrize(
    ("totals", "expected", "moves"),
    [
        # one pool of just these two: (0.30 / 0.40) / (4 / 4) = 0.75
        ({"default": (0.40, 4.0)}, (["a", "b"], ["small"]), {("approved", "default"): 1}),
        # one pool of ten such nodes: (0.30 / 2.0) / (4 / 20) = 0.75
        ({"default": (2.0, 20.0)}, (["a", "b"], ["small"]), {("approved", "default"): 1}),
        # a costly pool with few pods: (0.30 / 2.0) / (4 / 4) = 0.15
        ({"default": (2.0, 4.0)}, None, {("rejected", "default"): 1}),
    ],
)
def test_multi_node_balanced_score_in_one_pool(totals, expected, moves):
    layout = {"a": ("medium", ["1"]), "b": ("medium", ["1"])}
    decided, scored, _ = balanced_decide(MultiNodeConsolidation(), layout, totals)
    assert (decided, scored) == (expected, moves)


@pytest.mark.parametrize(
    ("totals", "expected", "moves"),
    [
        # each pool: (0.15 / 0.20) / (2 / 2) = 0.75
        (
            {"x": (0.20, 2.0), "y": (0.20, 2.0)},
            (["a", "b"], ["small"]),
            {("approved", "x"): 1, ("approved", "y"): 1},
        ),
        # y is a large pool: (0.15 / 2.0) / (2 / 2) = 0.075, so the move is refused though x approves
        ({"x": (0.20, 2.0), "y": (2.0, 2.0)}, None, {("approved", "x"): 1, ("rejected", "y"): 1}),
        # y is not Balanced: x's approval is enough
        ({"x": (0.20, 2.0)}, (["a", "b"], ["small"]), {("approved", "x"): 1}),
    ],
)
def test_multi_node_needs_every_balanced_source_pools_approval(totals, expected, moves):
    layout = {"a": ("medium", ["1"]), "b": ("medium", ["1"])}
    decided, scored, _ = balanced_decide(MultiNodeConsolidation(), layout, totals, pools={"a": "x", "b": "y"})
    assert (decided, scored) == (expected, moves)


# -- a run: one large node whose pods come to fit a slightly cheaper type ------------------------------
def scene(policy: str | None, flag: str | None = None):
    """One 8-cpu node ($0.40) for four pods of 1.8 cpu; at 5m the Deployment scales to 3, which a
    6-cpu node ($0.36) holds: a 10% saving for moving every pod."""

    def group(name, cpu, price):
        return {
            "name": name,
            "maxSize": 5,
            "price": price,
            "provisioningDelay": "30s",
            "template": {
                "metadata": {"labels": {"node.kubernetes.io/instance-type": name}},
                "status": {"allocatable": {"cpu": cpu, "memory": "32Gi", "pods": "110"}},
            },
        }

    autoscaler = {"policy": "karpenter"}
    if flag is not None:
        autoscaler["karpenter-consolidation-policy"] = flag
    data = {
        "apiVersion": "kubetide.io/v1alpha1",
        "kind": "Scenario",
        "metadata": {"name": "balanced"},
        "spec": {
            "duration": "30m",
            "autoscaler": autoscaler,
            "nodeGroups": [group("big", "8", 0.40), group("mid", "6", 0.36)],
            "objects": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "Deployment",
                    "metadata": {"name": "web"},
                    "spec": {
                        "replicas": 4,
                        "selector": {"matchLabels": {"app": "web"}},
                        "template": {
                            "metadata": {"labels": {"app": "web"}},
                            "spec": {
                                "containers": [
                                    {
                                        "name": "web",
                                        "resources": {"requests": {"cpu": "1800m", "memory": "1Gi"}},
                                    }
                                ]
                            },
                        },
                    },
                }
            ],
            "events": [{"at": "5m", "scale": {"kind": "Deployment", "name": "web", "replicas": 3}}],
        },
    }
    if policy is not None:
        data["spec"]["nodePools"] = [{"name": "web", "disruption": {"consolidationPolicy": policy}}]
    return data


def run(data):
    simulation = Simulation(parse_scenario(copy.deepcopy(data), "s.yaml", base_dir=Path(".")))
    summary = simulation.run().summary
    return summary, simulation.autoscaler


@pytest.mark.parametrize(
    ("policy", "flag", "big", "mid"),
    [
        ("WhenEmptyOrUnderutilized", None, 0, 1),  # any saving: replaced
        ("Balanced", None, 1, 0),  # 10% of the pool's cost for all its disruption: kept
        (None, "Balanced", 1, 0),  # the flag sets the default pool's policy
    ],
)
def test_balanced_keeps_a_node_that_when_underutilized_replaces(policy, flag, big, mid):
    summary, karpenter = run(scene(policy, flag))
    groups = summary["groups"]
    assert (groups["big"]["final"], groups["mid"]["final"]) == (big, mid)
    assert summary["invariants"] == {"pdb_violations": 0, "pods_lost": 0, "nodes_deleted_with_pods": 0}
    pool = "web" if policy is not None else "default"
    if "Balanced" in (policy, flag):
        assert karpenter.balanced_moves[("rejected", pool)] >= 1
        assert karpenter.balanced_moves[("approved", pool)] == 0
    else:
        assert not karpenter.balanced_moves


# -- parsing -------------------------------------------------------------------------------------------
def test_balanced_is_read_from_a_node_pool_and_from_the_flag():
    pools = parse_scenario(scene("Balanced"), "s.yaml", base_dir=Path(".")).node_pools
    assert pools[0].consolidation_policy == "Balanced"
    assert parse_options(
        {"karpenter-consolidation-policy": "Balanced"}, "s.yaml"
    ).karpenter_consolidation_policy == ("Balanced")


def test_an_unknown_consolidation_policy_is_refused_with_the_list():
    with pytest.raises(ScenarioError) as error:
        parse_scenario(scene("Cheapest"), "s.yaml", base_dir=Path("."))
    assert "spec.nodePools[0].disruption.consolidationPolicy" in str(error.value)
    assert "Balanced" in str(error.value) and "\n" not in str(error.value)
    with pytest.raises(ManifestError) as flag_error:
        parse_options({"karpenter-consolidation-policy": "Cheapest"}, "s.yaml")
    message = str(flag_error.value)
    assert "karpenter-consolidation-policy" in message and "Balanced" in message and "\n" not in message


def test_the_pool_totals_count_the_nodes_that_are_not_candidates():
    """A 6-cpu node holds a pod that must not be disrupted: not a candidate, but its price and
    disruption are the pool's as much as the web node's."""
    data = scene("Balanced")
    db = copy.deepcopy(data["spec"]["objects"][0])
    db["metadata"]["name"] = "db"
    db["spec"]["replicas"] = 1
    db["spec"]["selector"]["matchLabels"] = db["spec"]["template"]["metadata"]["labels"] = {"app": "db"}
    db["spec"]["template"]["metadata"]["annotations"] = {"karpenter.sh/do-not-disrupt": "true"}
    db["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "6"
    data["spec"]["objects"].append(db)
    summary, karpenter = run(data)
    assert (summary["groups"]["big"]["final"], summary["groups"]["mid"]["final"]) == (1, 1)
    snapshot = karpenter.view.snapshot()
    candidates = [c.name for c in karpenter._candidates(snapshot, karpenter.clock.now())]
    assert len(candidates) == 1 and len(list(snapshot.nodes())) == 2
    totals = karpenter._balanced_totals(snapshot)["web"]
    # $0.40 + $0.36; the web node 1 + 3 pods, the db node 1 + 1
    assert totals == PoolTotals(pytest.approx(0.76), 6.0)
