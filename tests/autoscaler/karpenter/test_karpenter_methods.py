"""Issue 38 item 2: each of Karpenter's disruption methods decides as Karpenter's does, table by table.

Instance types: large (8 cpu, $0.40), medium (4 cpu, $0.20), small (2 cpu, $0.10); nodes and
pods are built with the project's parsers, the decisions made on a real snapshot and checker.
"""

from __future__ import annotations

import dataclasses

import pytest

from kubetide.autoscaler.karpenter.cost import savings_ratio
from kubetide.autoscaler.karpenter.methods import (
    Candidate,
    Context,
    Drift,
    Emptiness,
    MultiNodeConsolidation,
    SingleNodeConsolidation,
    filter_out_same_type,
    first_command,
)
from kubetide.autoscaler.karpenter.scheduling import InstanceType, simulate
from kubetide.autoscaler.scaleup.template import build_template
from kubetide.model import Node, Pod, load_documents
from kubetide.scheduling import PredicateChecker
from kubetide.snapshot import ClusterSnapshot

CPUS = {"large": "8", "medium": "4", "small": "2"}
PRICES = {"large": 0.40, "medium": 0.20, "small": 0.10}


def node(name: str, kind: str) -> Node:
    doc = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubetide.io/node-group": kind}},
        "status": {"allocatable": {"cpu": CPUS[kind], "memory": "64Gi", "pods": "110"}},
    }
    return load_documents([doc], "t.yaml").nodes[0]


def pod(name: str, cpu: str, node_name: str = "") -> Pod:
    doc = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
        "spec": {
            "nodeName": node_name,
            "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}}}],
        },
    }
    return load_documents([doc], "t.yaml").pods[0]


def cluster(layout: dict[str, tuple[str, list[str]]], types=("large", "medium", "small")):
    """layout: node name -> (kind, [cpu of each pod on it])."""
    nodes = [node(name, kind) for name, (kind, _) in layout.items()]
    snapshot = ClusterSnapshot(nodes)
    for name, (_, cpus) in layout.items():
        for i, cpu in enumerate(cpus):
            snapshot.add_pod(pod(f"{name}-p{i}", cpu, name), name)
    checker = PredicateChecker(snapshot)
    kinds = [
        InstanceType(
            kind, PRICES[kind], build_template(kind, node(f"t-{kind}", kind), [], snapshot, checker), 10
        )
        for kind in types
    ]
    candidates = []
    for name, (kind, _) in layout.items():
        pods = tuple(snapshot.pods_on(name).values())
        candidates.append(
            Candidate(
                snapshot.node(name), kind, PRICES[kind], pods, savings_ratio(PRICES[kind], pods), 0.0, True
            )
        )
    return snapshot, checker, kinds, candidates


def context(snapshot, checker, kinds, budget=10) -> Context:
    budgets = {"Empty": budget, "Drifted": budget, "Underutilized": budget}
    return Context(snapshot, checker, kinds, budgets, frozenset())


def decide(method, layout, budget=10, types=("large", "medium", "small")):
    snapshot, checker, kinds, candidates = cluster(layout, types)
    version = snapshot.version
    ctx = context(snapshot, checker, kinds, budget)
    command = method.compute(ctx, candidates)
    assert snapshot.version == version and snapshot.depth == 0  # left as found
    if command is None:
        return None, ctx.blocked
    return (sorted(command.names), [r.group_id for r in command.replacements]), ctx.blocked


# -- emptiness ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("layout", "budget", "expected"),
    [
        # every empty node within budget, in one command; the dearest (most saved) first
        ({"a": ("large", []), "b": ("small", []), "c": ("medium", ["1"])}, 10, (["a", "b"], [])),
        ({"a": ("large", []), "b": ("small", []), "c": ("medium", [])}, 2, (["a", "c"], [])),
        ({"a": ("large", []), "b": ("small", [])}, 0, None),
        ({"a": ("large", ["1"])}, 10, None),
    ],
)
def test_emptiness(layout, budget, expected):
    assert decide(Emptiness(), layout, budget)[0] == expected


def test_emptiness_says_which_nodes_the_budget_held_back():
    _, blocked = decide(Emptiness(), {"a": ("large", []), "b": ("small", [])}, budget=1)
    assert blocked == {"b": "disruption budget for Empty reached"}


# -- single-node consolidation -------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("layout", "types", "expected"),
    [
        # its pods fit elsewhere: delete
        ({"a": ("large", ["1"]), "b": ("large", ["6"])}, ("large", "medium", "small"), (["a"], [])),
        # they do not: replace with the cheapest strictly cheaper type that holds them
        (
            {"a": ("large", ["1500m"]), "b": ("large", ["7"])},
            ("large", "medium", "small"),
            (["a"], ["small"]),
        ),
        ({"a": ("large", ["3"]), "b": ("large", ["7"])}, ("large", "medium", "small"), (["a"], ["medium"])),
        # only a type as dear as the node would do: nothing
        ({"a": ("small", ["1500m"]), "b": ("small", ["1800m"])}, ("small",), None),
        # its pods would need two new nodes: Karpenter never splits one node into several
        ({"a": ("large", ["1500m", "1500m"]), "b": ("large", ["7"])}, ("large", "small"), None),
        # a pod that fits nowhere, even on a new node: nothing
        ({"a": ("medium", ["3"]), "b": ("medium", ["3500m"])}, ("small",), None),
    ],
)
def test_single_node_consolidation(layout, types, expected):
    assert decide(SingleNodeConsolidation(), layout, types=types)[0] == expected


def test_single_node_consolidation_takes_the_best_savings_first_and_one_node_only():
    # c (large, 1 cpu) saves most per disruption; a and b could go too, but one node per loop
    layout = {
        "a": ("medium", ["1", "1"]),
        "b": ("medium", ["1", "1"]),
        "c": ("large", ["1"]),
        "d": ("large", ["4"]),
    }
    assert decide(SingleNodeConsolidation(), layout)[0] == (["c"], [])


def test_single_node_consolidation_needs_underutilized_budget():
    assert (
        decide(SingleNodeConsolidation(), {"a": ("large", ["1"]), "b": ("large", ["1"])}, budget=0)[0] is None
    )


# -- multi-node consolidation ----------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("layout", "types", "expected"),
    [
        # three large nodes, 3 cpu each: all three would need one node of 9 cpu (none; a large
        # is as dear as a candidate and filtered out anyway); the binary search settles on two:
        # a's pod goes to c, b's to a new medium
        (
            {"a": ("large", ["3"]), "b": ("large", ["3"]), "c": ("large", ["3"])},
            ("large", "medium", "small"),
            (["a", "b"], ["medium"]),
        ),
        # 2 cpu each: the first two's pods fit on the third: delete both
        (
            {"a": ("large", ["2"]), "b": ("large", ["2"]), "c": ("large", ["2"])},
            ("large", "medium", "small"),
            (["a", "b"], []),
        ),
        # a single candidate is single-node consolidation's
        ({"a": ("large", ["1"]), "b": ("small", [])}, ("large", "small"), None),
    ],
)
def test_multi_node_consolidation(layout, types, expected):
    assert decide(MultiNodeConsolidation(), layout, types=types)[0] == expected


def test_multi_node_consolidation_stays_within_budget():
    layout = {name: ("large", ["1"]) for name in "abcd"}
    layout["e"] = ("large", ["4"])
    decided, _ = decide(MultiNodeConsolidation(), layout, budget=2)
    assert decided is not None and len(decided[0]) == 2


def test_filter_out_same_instance_type():
    _, _, kinds, candidates = cluster({"a": ("large", ["1"]), "b": ("small", ["1"])})
    by_id = {k.group_id: k for k in kinds}
    # a replacement that could be a large (as dear as candidate a) or a small (as dear as b) is
    # refused: deleting them would do; a medium alone is kept only if cheaper than the small: no
    assert filter_out_same_type(candidates, [by_id["large"], by_id["small"]]) == []
    assert filter_out_same_type(candidates, [by_id["medium"]]) == [by_id["medium"]]


# -- drift ----------------------------------------------------------------------------------------------
def test_drift_replaces_a_drifted_node_by_what_its_pods_need():
    snapshot, checker, kinds, candidates = cluster({"a": ("large", ["3"]), "b": ("large", ["7"])})
    drifted = [dataclasses.replace(c, drifted=c.name == "a") for c in candidates]
    command = Drift().compute(context(snapshot, checker, kinds), drifted)
    assert command is not None and command.names == ("a",)
    assert [r.group_id for r in command.replacements] == ["medium"]


def test_the_first_method_that_decides_wins():
    snapshot, checker, kinds, candidates = cluster(
        {"a": ("large", []), "b": ("large", ["1"]), "c": ("large", ["2"])}
    )
    command = first_command(context(snapshot, checker, kinds), candidates)
    assert command is not None and command.method == "emptiness" and command.names == ("a",)


# -- the scheduling simulation ----------------------------------------------------------------------------
def test_provisioning_packs_pending_pods_onto_the_cheapest_types_that_fit():
    snapshot, checker, kinds, _ = cluster({"a": ("small", ["2"])})
    pending = [pod(f"new-{i}", "1") for i in range(5)]
    outcome = simulate(snapshot, checker, kinds, pending)
    assert not outcome.unschedulable and not outcome.destinations
    # five 1-cpu pods: one claim that could still be a large (8) once a medium no longer holds them
    assert [sorted(k.group_id for k in c.options) for c in outcome.claims] == [["large"]]
    assert outcome.claims[0].cheapest().group_id == "large"
    three = simulate(snapshot, checker, kinds, pending[:3])
    assert [c.cheapest().group_id for c in three.claims] == ["medium"]


def test_pods_waiting_for_room_take_it_before_a_candidates_pods():
    """A pending pod (or one of a node being drained) needs b's last cpu: a's pod can no longer go
    there, so a is replaced by a small node rather than deleted (the deletion would strand a pod)."""
    layout = {"a": ("large", ["1"]), "b": ("large", ["6"])}
    snapshot, checker, kinds, candidates = cluster(layout)
    assert (
        SingleNodeConsolidation().compute(context(snapshot, checker, kinds), candidates[:1]).decision
        == "delete"
    )
    ctx = context(snapshot, checker, kinds)
    ctx.reserved = [pod("waiting", "1500m")]
    command = SingleNodeConsolidation().compute(ctx, candidates[:1])
    assert command is not None and command.decision == "replace"
    assert [r.group_id for r in command.replacements] == ["small"]
