"""Issue 38 item 2: Karpenter's NodePools (`spec.nodePools`): requirements choose each pool's node
groups, provisioning tries pools by weight within their limits, budgets count per pool, and
spot-to-spot consolidation waits for its feature gate and 15 cheaper instance types.

The cluster: two node groups of 4-cpu nodes, `od` (on-demand, $0.20) and `spot` ($0.08), and
a Deployment of 10 pods of 1.5 cpu (two per node: five nodes in all)."""

from __future__ import annotations

import copy
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubetide.autoscaler.karpenter.nodepools import (
    MIN_SPOT_TO_SPOT_TYPES,
    Budgets,
    NodePool,
    by_weight,
    first_pool,
    spot_replacements,
)
from kubetide.model.nodepool import NodePoolSettings, parse_budgets
from kubetide.model.selectors import Requirement
from kubetide.sim import Simulation
from kubetide.sim.spec.errors import ScenarioError
from kubetide.sim.spec.scenario import parse_scenario

ROOT = Path(__file__).resolve().parents[3]
ON_DEMAND = {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]}
SPOT = {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot"]}


def group(name: str, price: float, capacity_type: str) -> dict:
    return {
        "name": name,
        "maxSize": 10,
        "price": price,
        "provisioningDelay": "30s",
        "template": {
            "metadata": {"labels": {"karpenter.sh/capacity-type": capacity_type}},
            "status": {"allocatable": {"cpu": "4", "memory": "16Gi"}},
        },
    }


BASE = {
    "apiVersion": "kubetide.io/v1alpha1",
    "kind": "Scenario",
    "metadata": {"name": "pools"},
    "spec": {
        "duration": "20m",
        "autoscaler": {"policy": "karpenter"},
        "nodeGroups": [group("od", 0.20, "on-demand"), group("spot", 0.08, "spot")],
        "objects": [
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {"name": "web"},
                "spec": {
                    "replicas": 10,
                    "selector": {"matchLabels": {"app": "web"}},
                    "template": {
                        "metadata": {"labels": {"app": "web"}},
                        "spec": {
                            "containers": [
                                {"name": "web", "resources": {"requests": {"cpu": "1500m", "memory": "1Gi"}}}
                            ]
                        },
                    },
                },
            }
        ],
    },
}


def scenario(pools: list[dict] | None, node_selector: dict | None = None):
    data = copy.deepcopy(BASE)
    if pools is not None:
        data["spec"]["nodePools"] = pools
    if node_selector is not None:
        data["spec"]["objects"][0]["spec"]["template"]["spec"]["nodeSelector"] = node_selector
    return parse_scenario(data, "s.yaml", base_dir=ROOT)


def pool(name: str, weight: int, requirement: dict, **fields) -> dict:
    # WhenEmpty: the counts are provisioning's, not a later consolidation's
    return {
        "name": name,
        "weight": weight,
        "requirements": [requirement],
        "disruption": {"consolidationPolicy": "WhenEmpty"},
        **fields,
    }


# -- parsing and validation ----------------------------------------------------------------------------
def test_node_pools_are_read_with_their_requirements_limits_weights_and_disruption():
    loaded = scenario(
        [
            {
                "name": "reserved",
                "weight": 50,
                "requirements": [ON_DEMAND, {"key": "kubernetes.io/arch", "operator": "DoesNotExist"}],
                "limits": {"cpu": "8", "memory": "32Gi"},
                "disruption": {
                    "consolidateAfter": "5m",
                    "budgets": [
                        {"nodes": "20%"},
                        {
                            "nodes": "0",
                            "reasons": ["Underutilized"],
                            "schedule": "0 9 * * 1-5",
                            "duration": "8h",
                        },
                    ],
                },
                "terminationGracePeriod": "1h",
            },
            {"name": "spot", "requirements": [SPOT]},
        ]
    )
    reserved, spot = loaded.node_pools
    assert (reserved.name, reserved.weight, spot.weight) == ("reserved", 50, 0)
    assert reserved.requirements[0] == Requirement("karpenter.sh/capacity-type", "In", ("on-demand",))
    assert dict(reserved.limits) == {"cpu": 8000, "memory": 32 * 2**30}
    flags = NodePoolSettings(consolidation_policy="WhenEmpty", consolidate_after=60.0)
    own = reserved.settings(flags)
    # what the pool sets is its own; what it leaves out is the karpenter-* flags'
    assert (own.consolidate_after, own.termination_grace_period, own.consolidation_policy) == (
        300.0,
        3600.0,
        "WhenEmpty",
    )
    assert [b.percent for b in own.budgets] == [20, None] and own.budgets[1].reasons == ("Underutilized",)
    assert spot.settings(flags) == flags


def test_without_node_pools_the_scenario_has_the_one_default_pool():
    assert scenario(None).node_pools == ()


@pytest.mark.parametrize(
    ("pools", "field", "said"),
    [
        ([{"name": "a", "weigth": 5}], "spec.nodePools[0].weigth", 'did you mean "weight"'),
        (
            [{"name": "a", "requirements": [{**ON_DEMAND, "minValues": 2}]}],
            "spec.nodePools[0].requirements[0].minValues",
            "",
        ),
        (
            [{"name": "a", "requirements": [{**ON_DEMAND, "operator": "Equals"}]}],
            "spec.nodePools[0].requirements[0].operator",
            'unknown operator "Equals"',
        ),
        (
            [{"name": "a", "requirements": [{"key": "x", "operator": "In"}]}],
            "spec.nodePools[0].requirements[0].values",
            "at least one value",
        ),
        (
            [{"name": "a", "requirements": [{"key": "x", "operator": "Gt", "values": ["big"]}]}],
            "spec.nodePools[0].requirements[0].values",
            "needs an integer",
        ),
        (
            [{"name": "a", "requirements": [{**SPOT, "values": ["reserved"]}]}],
            "spec.nodePools[0].requirements",
            "select no node group",
        ),
        ([{"name": "a", "limits": {"cpu": "-2"}}], "spec.nodePools[0].limits.cpu", "must not be negative"),
        (
            [{"name": "a", "limits": {"memory": "lots"}}],
            "spec.nodePools[0].limits.memory",
            "invalid quantity",
        ),
        ([{"name": "a", "weight": 101}], "spec.nodePools[0].weight", "100"),
        ([{"name": "a"}, {"name": "a"}], "spec.nodePools[1].name", 'duplicate NodePool "a"'),
        (
            [{"name": "a", "disruption": {"consolidationPolicy": "Always"}}],
            "spec.nodePools[0].disruption.consolidationPolicy",
            "WhenEmpty",
        ),
        (
            [{"name": "a", "disruption": {"budgets": [{"nodes": "ten"}]}}],
            "spec.nodePools[0].disruption.budgets[0]",
            "count or a percentage",
        ),
        (
            [{"name": "a", "disruption": {"budgets": [{"nodes": "1", "schedule": "0 9 * * *"}]}}],
            "spec.nodePools[0].disruption.budgets[0]",
            "both or neither",
        ),
        (
            [{"name": "a", "disruption": {"budgets": [{"reasons": ["Idle"]}]}}],
            "spec.nodePools[0].disruption.budgets[0].reasons[0]",
            "Underutilized",
        ),
    ],
)
def test_bad_node_pools_are_refused_naming_the_field(pools, field, said):
    with pytest.raises(ScenarioError) as error:
        scenario(pools)
    message = str(error.value)
    assert message.startswith(f"s.yaml: {field}: "), message
    assert said in message and "\n" not in message


def test_simulate_refuses_a_bad_node_pool_in_one_line_with_exit_2(tmp_path):
    import yaml

    data = copy.deepcopy(BASE)
    data["spec"]["nodePools"] = [{"name": "a", "requirements": [{**ON_DEMAND, "operator": "Equal"}]}]
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(data))
    result = subprocess.run(
        [sys.executable, "-m", "kubetide", "simulate", str(path)], capture_output=True, text=True, cwd=ROOT
    )
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert str(path) in lines[0] and "spec.nodePools[0].requirements[0].operator" in lines[0]


# -- provisioning: weights, limits, requirements ----------------------------------------------------------
@dataclass(frozen=True)
class Offer:
    """An instance type as the pools read it."""

    group_id: str
    price: float
    pool: str
    cpu: int
    capacity_type: str = "on-demand"
    instance_type: str = ""

    @property
    def capacity(self) -> dict[str, int]:
        return {"cpu": self.cpu}


@pytest.mark.parametrize(
    ("left", "expected", "left_after"),
    [
        # the first pool (options come by weight) with a type within its limits wins
        ({}, ["a-small", "a-large"], {}),
        ({"a": {"cpu": 8000}}, ["a-small", "a-large"], {"a": {"cpu": 0}}),  # the most over the kept types
        ({"a": {"cpu": 4000}}, ["a-small"], {"a": {"cpu": 0}}),
        ({"a": {"cpu": 3999}}, ["b-small"], {"a": {"cpu": 3999}}),  # nothing fits: the next pool
        ({"a": {"cpu": 0}, "b": {"cpu": 0}}, [], {"a": {"cpu": 0}, "b": {"cpu": 0}}),
    ],
)
def test_a_new_nodeclaim_goes_to_the_first_pool_by_weight_within_its_limits(left, expected, left_after):
    options = [
        Offer("small", 0.1, "a", 4000),
        Offer("large", 0.2, "a", 8000),
        Offer("small", 0.1, "b", 4000),
    ]
    chosen = first_pool(options, left)
    assert [f"{o.pool}-{o.group_id}" for o in chosen] == expected
    assert left == left_after


@settings(max_examples=60)
@given(
    st.lists(st.tuples(st.sampled_from("abc"), st.integers(1, 16)), min_size=1, max_size=8),
    st.dictionaries(st.sampled_from("abc"), st.integers(0, 40)),
)
def test_claims_never_take_a_pool_past_its_limits(offers, limits):
    """However many NodeClaims are opened, the capacity taken from a pool with limits (the most
    of its kept options, each time) stays within them, and each claim's options are one pool's:
    the first, in the options' order, with a type that fits."""
    options = sorted(
        [Offer(f"g{i}", 0.1, pool, cpu * 1000) for i, (pool, cpu) in enumerate(offers)],
        key=lambda o: o.pool,
    )
    left = {pool: {"cpu": cpu * 1000} for pool, cpu in limits.items()}
    taken: dict[str, int] = {}
    for _ in range(10):
        expected = next(
            (o.pool for o in options if o.pool not in left or o.capacity["cpu"] <= left[o.pool]["cpu"]),
            None,
        )
        chosen = first_pool(options, left)
        assert (chosen[0].pool if chosen else None) == expected
        if not chosen:
            break
        assert {o.pool for o in chosen} == {expected}
        taken[expected] = taken.get(expected, 0) + max(o.capacity["cpu"] for o in chosen)
    for pool, cpu in limits.items():
        assert taken.get(pool, 0) <= cpu * 1000


def test_pools_are_tried_by_weight_then_name():
    pools = [NodePool("b", 10), NodePool("z", 50), NodePool("a", 10)]
    assert [p.name for p in by_weight(pools)] == ["z", "a", "b"]


def peaks(loaded) -> tuple[int, int, int, int]:
    """(od peak, spot peak, od final, spot final) nodes of a run; every pod running at the end."""
    result = Simulation(loaded).run()
    summary = result.summary
    assert summary["pods"]["pending_at_end"] == 0
    assert summary["invariants"] == {"pdb_violations": 0, "pods_lost": 0, "nodes_deleted_with_pods": 0}
    return (
        max(row["od_total"] for row in result.timeline),
        max(row["spot_total"] for row in result.timeline),
        summary["groups"]["od"]["final"],
        summary["groups"]["spot"]["final"],
    )


@pytest.mark.parametrize(
    ("pools", "node_selector", "expected"),
    [
        # one default pool: every pod on the cheapest type that fits
        (None, None, (0, 5)),
        # the heavier pool first, dearer as it is, until its limit (8 cpu: two 4-cpu nodes)
        ([pool("reserved", 50, ON_DEMAND, limits={"cpu": "8"}), pool("spot", 10, SPOT)], None, (2, 3)),
        ([pool("reserved", 50, ON_DEMAND, limits={"cpu": "16"}), pool("spot", 10, SPOT)], None, (4, 1)),
        ([pool("reserved", 50, ON_DEMAND), pool("spot", 10, SPOT)], None, (5, 0)),
        # the weights the other way round
        ([pool("reserved", 10, ON_DEMAND), pool("spot", 50, SPOT)], None, (0, 5)),
        # a limit of 0 launches nothing in that pool
        ([pool("reserved", 50, ON_DEMAND, limits={"cpu": "0"}), pool("spot", 10, SPOT)], None, (0, 5)),
        # the pods' nodeSelector only fits the lighter pool's requirements
        (
            [pool("reserved", 50, ON_DEMAND), pool("spot", 10, SPOT)],
            {"karpenter.sh/capacity-type": "spot"},
            (0, 5),
        ),
    ],
)
def test_two_pools_with_weights_and_limits_give_the_expected_node_counts(pools, node_selector, expected):
    od, spot, od_final, spot_final = peaks(scenario(pools, node_selector))
    assert (od, spot) == expected
    assert (od_final, spot_final) == expected  # WhenEmpty: nothing consolidated away


def test_a_pool_at_its_limit_launches_nothing_more():
    """Only the limited pool: three nodes' worth of pods stay pending, none is launched past it."""
    loaded = scenario([pool("reserved", 50, ON_DEMAND, limits={"cpu": "8"})])
    result = Simulation(loaded).run()
    assert max(row["od_total"] for row in result.timeline) == 2
    assert max(row["spot_total"] for row in result.timeline) == 0  # in no pool: never launched
    assert result.summary["pods"]["pending_at_end"] == 6


def test_underutilized_nodes_of_a_pool_at_its_limit_are_replaced_in_the_next_pool():
    """With the default policy, a node of the full on-demand pool is replaced by a cheaper spot
    node (the pool's limit counts the candidate, so the replacement goes to the next pool by
    weight); once the on-demand pool has room, its remaining node's replacement would be on-demand
    again, not cheaper: it stays."""
    pools = [pool("reserved", 50, ON_DEMAND, limits={"cpu": "8"}), pool("spot", 10, SPOT)]
    for entry in pools:
        entry.pop("disruption")
    od, spot, od_final, spot_final = peaks(scenario(pools))
    assert (od, spot) == (2, 4)  # the replacement launched before the old node went
    assert (od_final, spot_final) == (1, 4)


# -- budgets per pool -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Node:
    name: str
    pool: str


def test_budgets_count_per_pool():
    budgets = Budgets({"a": {"Empty": 1, "Underutilized": 0}, "b": {"Empty": 2, "Underutilized": 3}})
    nodes = [Node("a1", "a"), Node("b1", "b"), Node("a2", "a"), Node("b2", "b"), Node("b3", "b")]
    assert [n.name for n in budgets.within(nodes, "Empty")] == ["a1", "b1", "b2"]
    assert [n.name for n in budgets.within(nodes, "Underutilized")] == ["b1", "b2", "b3"]
    assert (budgets["Empty"], budgets.left("a", "Underutilized"), budgets.left("c", "Empty")) == (3, 0, 0)
    # a plain {reason: nodes} is the default pool's
    assert Budgets.of({"Empty": 1}).within([Node("x", "default"), Node("y", "default")], "Empty") == [
        Node("x", "default")
    ]


def test_a_pool_budget_of_zero_keeps_its_nodes_while_the_other_pool_consolidates():
    """Both pools' nodes become empty when the load goes; the reserved pool's budget is 0, so
    only the spot pool's nodes are removed."""
    pools = [
        {
            "name": "reserved",
            "weight": 50,
            "requirements": [ON_DEMAND],
            "limits": {"cpu": "8"},
            "disruption": {"budgets": [{"nodes": "0"}]},
        },
        {"name": "spot", "weight": 10, "requirements": [SPOT]},
    ]
    data = copy.deepcopy(BASE)
    data["spec"]["nodePools"] = pools
    data["spec"]["events"] = [{"at": "8m", "scale": {"kind": "Deployment", "name": "web", "replicas": 0}}]
    loaded = parse_scenario(data, "s.yaml", base_dir=ROOT)
    summary = Simulation(loaded).run().summary
    assert (summary["groups"]["od"]["final"], summary["groups"]["spot"]["final"]) == (2, 0)


# -- spot-to-spot ------------------------------------------------------------------------------------------
SPOT_LABELS = {"karpenter.sh/capacity-type": "spot"}


def spot_offers(count: int, start: float = 0.01) -> list[Offer]:
    return [
        Offer(f"s{i}", round(start + 0.001 * i, 4), "default", 4000, "spot", f"type-{i}")
        for i in range(count)
    ]


@pytest.mark.parametrize(
    ("candidates", "offers", "enabled", "expected"),
    [
        # off by default: a spot node is never replaced by a spot node
        ([SPOT_LABELS], spot_offers(20), False, "SpotToSpotConsolidation is disabled"),
        # on: a single node needs 15 strictly cheaper types, and the launch keeps the 15 cheapest
        ([SPOT_LABELS], spot_offers(20), True, 15),
        ([SPOT_LABELS], spot_offers(MIN_SPOT_TO_SPOT_TYPES - 1), True, "requires 15 cheaper instance type"),
        # several candidates need no such flexibility
        ([SPOT_LABELS, SPOT_LABELS], spot_offers(3), True, 3),
        ([SPOT_LABELS], spot_offers(20, start=1.0), True, "cheaper spot node"),
        # an on-demand candidate: replaced by what is cheaper, pinned to spot when both are offered
        ([{}], [*spot_offers(2), Offer("od", 0.05, "default", 4000)], False, 2),
        ([{}], [Offer("od", 0.05, "default", 4000)], False, 1),
    ],
)
def test_spot_to_spot_consolidation(candidates, offers, enabled, expected):
    result = spot_replacements(candidates, offers, 0.5, enabled=enabled)
    if isinstance(expected, str):
        assert isinstance(result, str) and expected in result
    else:
        assert isinstance(result, list) and len(result) == expected
        if any(o.capacity_type == "spot" for o in offers):
            assert all(o.capacity_type == "spot" for o in result)
        assert result == sorted(result, key=lambda o: o.price)[:expected]


def test_the_spot_to_spot_flag_is_off_by_default_and_read_like_any_flag():
    from kubetide.autoscaler.options import AutoscalerOptions, parse_options

    assert AutoscalerOptions().karpenter_spot_to_spot_consolidation is False
    options = parse_options({"karpenter-spot-to-spot-consolidation": "true"}, "s.yaml")
    assert options.karpenter_spot_to_spot_consolidation is True


def test_budgets_flag_and_pool_budgets_share_one_reader():
    """The flag's one-line form and a pool's budgets give the same Budget."""
    from kubetide.model.nodepool import budget

    assert parse_budgets("0:Underutilized@0 9 * * 1-5/8h") == (
        budget("0", ("Underutilized",), "0 9 * * 1-5", "8h"),
    )


def spot_catalogue(cheaper_types: int) -> dict:
    """One 8-cpu spot node ($0.50) running one pod of 1 cpu, and `cheaper_types` 2-cpu spot
    instance types from $0.05 up, each its own group."""
    data = copy.deepcopy(BASE)
    big = group("big", 0.50, "spot")
    big["initialSize"] = 1
    big["template"]["status"]["allocatable"]["cpu"] = "8"
    big["template"]["metadata"]["labels"]["node.kubernetes.io/instance-type"] = "big"
    smalls = []
    for i in range(cheaper_types):
        small = group(f"small-{i}", round(0.05 + 0.01 * i, 2), "spot")
        small["template"]["status"]["allocatable"]["cpu"] = "2"
        small["template"]["metadata"]["labels"]["node.kubernetes.io/instance-type"] = f"small-{i}"
        smalls.append(small)
    data["spec"]["nodeGroups"] = [big, *smalls]
    data["spec"]["objects"][0]["spec"]["replicas"] = 1
    data["spec"]["objects"][0]["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"][
        "cpu"
    ] = "1"
    return data


@pytest.mark.parametrize(
    ("cheaper_types", "gate", "replaced"),
    [
        (16, False, False),  # off by default: the spot node stays
        (16, True, True),  # on, with 16 cheaper types: replaced by the cheapest
        (14, True, False),  # on, but fewer than 15 cheaper types
    ],
)
def test_spot_to_spot_consolidation_in_a_run(cheaper_types, gate, replaced):
    data = spot_catalogue(cheaper_types)
    data["spec"]["autoscaler"]["karpenter-spot-to-spot-consolidation"] = gate
    summary = Simulation(parse_scenario(data, "s.yaml", base_dir=ROOT)).run().summary
    groups = summary["groups"]
    assert groups["big"]["final"] == (0 if replaced else 1)
    assert groups["small-0"]["final"] == (1 if replaced else 0)
    assert sum(g["final"] for g in groups.values()) == 1
    assert summary["pods"]["pending_at_end"] == 0


def test_the_bundled_node_pools_example():
    """examples/comparison/karpenter-nodepools.yaml does what its comment says."""
    from kubetide.sim import load_scenario

    result = Simulation(load_scenario(ROOT / "examples" / "comparison" / "karpenter-nodepools.yaml")).run()
    first = next(row for row in result.timeline if row["pending_pods"] == 0 and row["nodes_total"] > 0)
    assert (first["od-8x_total"], first["spot-8x_total"], first["od-4x_total"], first["spot-4x_total"]) == (
        2,
        3,
        0,
        0,
    )
    final = {name: group["final"] for name, group in result.summary["groups"].items()}
    assert final == {"od-4x": 0, "od-8x": 0, "spot-4x": 0, "spot-8x": 2}
    assert result.summary["invariants"] == {"pdb_violations": 0, "pods_lost": 0, "nodes_deleted_with_pods": 0}
