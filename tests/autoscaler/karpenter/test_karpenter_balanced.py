"""consolidationPolicy Balanced (Karpenter v1.14): a consolidation goes only when its saving clears
the Balanced score (autoscaler/consolidation.py, the module kubetide's own replacement uses)
against the NodePool's totals, candidates or not."""

from __future__ import annotations

import dataclasses

import pytest
from test_karpenter_methods import cluster, context

from kubetide.autoscaler.consolidation import reschedule_cost
from kubetide.autoscaler.karpenter.methods import SingleNodeConsolidation
from kubetide.autoscaler.options import CONSOLIDATION_POLICIES, parse_options

# a: a large node with one 1-cpu pod (replaceable by a small one, or deletable onto b);
# b: a busy large node; c: the rest of the pool, which only counts in its totals.
LAYOUT = {"a": ("large", ["1"]), "b": ("large", ["6"]), "c": ("large", ["7", "7m"])}


def totals(candidates, extra_cost=0.0):
    cost = sum(c.price for c in candidates) + extra_cost
    return cost, sum(reschedule_cost(c.pods) for c in candidates)


@pytest.mark.parametrize(
    ("pool", "expected"),
    [
        # No score (WhenEmptyOrUnderutilized): a's pod moves to b and a is deleted.
        (None, (["a"], [])),
        # The pool's own totals: deleting a saves 1/3 of the cost for 2/7 of the disruption.
        ("own", (["a"], [])),
        # A pool twenty times as dear (nodes of other kinds): the saving is too small a share.
        ("dear", None),
    ],
)
def test_balanced_approves_or_rejects_a_consolidation(pool, expected):
    snapshot, checker, kinds, candidates = cluster(LAYOUT)
    ctx = context(snapshot, checker, kinds)
    if pool is not None:
        ctx = dataclasses.replace(ctx, pool=totals(candidates, 0.0 if pool == "own" else 23.0))
    command = SingleNodeConsolidation().compute(ctx, candidates)
    assert (
        None if command is None else (sorted(command.names), [r.group_id for r in command.replacements])
    ) == (expected)
    if expected is None:
        assert "below the Balanced threshold" in ctx.blocked["a"]


def test_balanced_is_a_consolidation_policy():
    assert "Balanced" in CONSOLIDATION_POLICIES
    assert parse_options(
        {"karpenter-consolidation-policy": "Balanced"}, "s.yaml"
    ).karpenter_consolidation_policy == ("Balanced")
