"""Issue 40 item 1: Karpenter's disruption methods are the scale-down planner's `DisruptionMethod`,
tried by the same `try_in_order`; the first command wins because each later method proposes
nothing (and marks nothing in the loop's context) once an earlier one did.

A small node (2 cpu, $0.10) stands empty; two large ones (8 cpu, $0.40) carry a 5-cpu pod each,
which fits neither the other large node nor the small one, and only large nodes can be launched.
"""

from __future__ import annotations

import pytest

from kubetide.autoscaler.karpenter.cost import savings_ratio
from kubetide.autoscaler.karpenter.methods import (
    Candidate,
    Context,
    Emptiness,
    Inputs,
    MultiNodeConsolidation,
    SingleNodeConsolidation,
    first_command,
)
from kubetide.autoscaler.karpenter.scheduling import InstanceType
from kubetide.autoscaler.scaledown.planning import try_in_order
from kubetide.autoscaler.scaleup.template import build_template
from kubetide.model import load_documents
from kubetide.scheduling import PredicateChecker
from kubetide.snapshot import ClusterSnapshot

CPUS, PRICES = {"large": "8", "small": "2"}, {"large": 0.40, "small": 0.10}
LAYOUT = {"a": ("small", None), "b": ("large", "5"), "c": ("large", "5")}


def _node(name: str, kind: str):
    return load_documents(
        [
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": name, "labels": {"kubetide.io/node-group": kind}},
                "status": {"allocatable": {"cpu": CPUS[kind], "memory": "64Gi", "pods": "110"}},
            }
        ],
        "t.yaml",
    ).nodes[0]


def _pod(name: str, cpu: str, node_name: str):
    return load_documents(
        [
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
                "spec": {
                    "nodeName": node_name,
                    "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}}}],
                },
            }
        ],
        "t.yaml",
    ).pods[0]


def _loop() -> tuple[Context, list[Candidate]]:
    snapshot = ClusterSnapshot([_node(name, kind) for name, (kind, _) in LAYOUT.items()])
    for name, (_, cpu) in LAYOUT.items():
        if cpu is not None:
            snapshot.add_pod(_pod(f"{name}-p", cpu, name), name)
    checker = PredicateChecker(snapshot)
    large = InstanceType(
        "large", PRICES["large"], build_template("large", _node("t", "large"), [], snapshot, checker), 10
    )
    candidates = []
    for name, (kind, _) in LAYOUT.items():
        pods = tuple(snapshot.pods_on(name).values())
        ratio = savings_ratio(PRICES[kind], pods)
        candidates.append(Candidate(snapshot.node(name), kind, PRICES[kind], pods, ratio, 0.0, True))
    budgets = {"Empty": 10, "Drifted": 10, "Underutilized": 10}
    return Context(snapshot, checker, [large], budgets, frozenset()), candidates


WHY = "can't replace with a cheaper node"


@pytest.mark.parametrize(
    ("order", "command", "blocked"),
    [
        # Emptiness wins; single-node consolidation is not tried, so it marks nothing.
        ((Emptiness(), SingleNodeConsolidation()), ("emptiness", ("a",)), {}),
        # Single-node consolidation goes first, finds nothing and says why; emptiness then wins.
        ((SingleNodeConsolidation(), Emptiness()), ("emptiness", ("a",)), {"b": WHY, "c": WHY}),
        ((MultiNodeConsolidation(), SingleNodeConsolidation()), None, {"b": WHY, "c": WHY}),
        ((), None, {}),
    ],
)
def test_the_first_command_wins_and_later_methods_are_not_tried(order, command, blocked):
    ctx, candidates = _loop()
    found = first_command(ctx, candidates, order)
    assert (found and (found.method, found.names)) == command
    assert ctx.blocked == blocked


def test_try_in_order_keeps_only_the_first_karpenter_command():
    """The planner's `try_in_order` runs Karpenter's methods as they are: at most one command."""
    ctx, candidates = _loop()
    order = (SingleNodeConsolidation(), Emptiness(), Emptiness())
    commands = try_in_order(order, lambda earlier: Inputs(ctx, candidates, earlier))
    assert [(c.method, c.names) for c in commands] == [("emptiness", ("a",))]
