"""The whole scale-down on paper (estimate.schedule_drains): drains in the plan's order, at most
max-drain-parallelism at a time, each eviction taking a disruption that comes back when its
replacement is Ready, retried every EVICTION_RETRY_INTERVAL; and through `kubetide plan`, an
estimate for every node drained now or once its budget is back."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scaledown_fakes import pod
from unblock_cluster import SCALE_DOWN_DISABLED, Cluster

from kubetide.autoscaler.options import AutoscalerOptions
from kubetide.autoscaler.scaledown.planning.estimate import (
    DEFAULT_REPLACEMENT_READY,
    EVICTION_RETRY_INTERVAL,
    REPLACEMENT_LAG,
    NodeToDrain,
    schedule_drains,
)

DELAY = AutoscalerOptions().node_delete_delay_after_taint


def ready_after(name: str, seconds: float, grace: int = 0):
    """A pod whose own history says its replacement is Ready `seconds` after being bound."""
    p = pod(name, "n", grace=grace)
    return dataclasses.replace(p, scheduled_transition=100.0, ready_transition=100.0 + seconds)


def schedule(nodes, allowed, budgets_of=lambda p: (0,), **options):
    return schedule_drains(
        [NodeToDrain(name, pods, surged) for name, pods, surged in nodes],
        budgets_of,
        allowed,
        AutoscalerOptions(**options),
        lambda p: True,
    )


def retry_after(seconds: float) -> float:
    """When a refused eviction is next tried once a disruption is back after `seconds`."""
    return EVICTION_RETRY_INTERVAL * -(-seconds // EVICTION_RETRY_INTERVAL)


# (description, nodes (name, pods, surged UIDs), disruptions allowed, options, {node: (starts, empties)})
CASES = [
    (
        "one disruption, three nodes: one eviction per retry after the replacement is Ready",
        [(f"n{i}", [ready_after(f"p{i}", 4)], ()) for i in range(3)],
        [1],
        {},
        {f"n{i}": (0.0, DELAY + i * retry_after(REPLACEMENT_LAG + 4)) for i in range(3)},
    ),
    (
        "a slow start paces the waves",
        [(f"n{i}", [ready_after(f"p{i}", 25)], ()) for i in range(3)],
        [1],
        {},
        {f"n{i}": (0.0, DELAY + i * retry_after(REPLACEMENT_LAG + 25)) for i in range(3)},
    ),
    (
        "enough disruptions: every node in the first wave, the grace period last",
        [(f"n{i}", [ready_after(f"p{i}", 4, grace=20)], ()) for i in range(3)],
        [3],
        {},
        {f"n{i}": (0.0, DELAY + 20) for i in range(3)},
    ),
    (
        "max-drain-parallelism 1: the next drain starts when the node before is empty",
        [(f"n{i}", [ready_after(f"p{i}", 4, grace=20)], ()) for i in range(3)],
        [3],
        {"max_drain_parallelism": 1},
        {f"n{i}": (i * (DELAY + 20), (i + 1) * (DELAY + 20)) for i in range(3)},
    ),
    (
        "a surged pod leaves once its replacement is Ready, whatever the budget",
        [("n0", [ready_after("p0", 12, grace=3)], ("uid-default-p0",))],
        [0],
        {},
        {"n0": (0.0, DELAY + REPLACEMENT_LAG + 12 + 3)},
    ),
    (
        "an empty node needs no slot and no budget",
        [("e", [], ()), ("n0", [ready_after("p0", 4)], ())],
        [1],
        {"max_drain_parallelism": 1},
        {"e": (0.0, DELAY), "n0": (0.0, DELAY)},
    ),
]


@pytest.mark.parametrize(
    ("nodes", "allowed", "options", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_the_schedule(nodes, allowed, options, expected):
    result = schedule(nodes, allowed, **options)
    assert {n: (d.starts, d.empties) for n, d in result.drains.items()} == expected
    assert result.seconds_to_last_removal == max(e for _, e in expected.values())
    assert result.unfinished == ()


def test_a_budget_that_never_comes_back_leaves_the_node_unfinished():
    result = schedule([("n0", [ready_after("p0", 4)], ())], [0])
    assert result.drains == {} and result.unfinished == ("n0",)
    assert "never, for n0" in result.words()


def test_without_history_the_default_start_is_used_and_said():
    result = schedule([(f"n{i}", [pod(f"p{i}", "n", grace=0)], ()) for i in range(2)], [1])
    assert not result.from_history
    assert result.drains["n1"].empties == DELAY + retry_after(REPLACEMENT_LAG + DEFAULT_REPLACEMENT_READY)
    assert result.to_json()["replacement_ready_from"] == "default"


@settings(max_examples=40)
@given(
    pods_per_node=st.lists(st.integers(0, 4), min_size=1, max_size=6),
    allowed=st.integers(1, 3),
    ready=st.integers(0, 60),
    parallelism=st.integers(1, 4),
)
def test_budgets_and_parallelism_are_never_exceeded(pods_per_node, allowed, ready, parallelism):
    """Replayed from the schedule: at no time more drains than max-drain-parallelism hold pods,
    and every node is drained (the budget always comes back)."""
    nodes = [
        (f"n{i}", [ready_after(f"p{i}-{j}", ready) for j in range(count)], ())
        for i, count in enumerate(pods_per_node)
    ]
    result = schedule(nodes, [allowed], max_drain_parallelism=parallelism)
    assert set(result.drains) == {name for name, _, _ in nodes}
    busy = [result.drains[name] for name, pods, _ in nodes if pods]
    for d in busy:
        overlapping = sum(1 for o in busy if o.starts <= d.starts < o.empties)
        assert overlapping <= parallelism
    # Each wave evicts at most `allowed` pods, the next not before their replacements are Ready.
    pods = sum(pods_per_node)
    if pods:
        waves = -(-pods // allowed)
        assert result.seconds_to_last_removal >= DELAY + (waves - 1) * (REPLACEMENT_LAG + ready)


def test_plan_estimates_every_node_of_a_pdb_paced_scale_down(tmp_path):
    """Six nodes of one replica each behind maxUnavailable 1: one candidate, five waiting; each
    gets an estimate, and the whole scale-down ends one retry after the other."""
    c = Cluster()
    c.group("general", 0)
    c.node("dest", **{SCALE_DOWN_DISABLED: "true"})
    c.replicaset("web", 6)
    c.pdb("web", {"maxUnavailable": 1}, healthy=6, expected=6)
    for i in range(6):
        c.node(f"n{i}")
        c.pod(f"web-{i}", f"n{i}", app="web")
    down = c.plan(tmp_path)["scale_down"]
    drained = [*down["candidate_set"], *down["waiting_for_budget"]]
    assert sorted(drained) == [f"n{i}" for i in range(6)]
    assert len(down["waiting_for_budget"]) == 5
    assert all(down["nodes"][n]["estimated_drain_seconds"] is not None for n in drained)
    grace = 30  # the pods' default terminationGracePeriodSeconds
    # The dump's pods went Ready the instant they were bound: a disruption is back after the lag.
    wave = retry_after(REPLACEMENT_LAG)
    assert down["estimated_seconds_to_last_removal"] == DELAY + 5 * wave + grace
    assert down["replacement_ready_from"] == "readiness history"
    assert "scale-down of 6 node(s) done in about" in c.plan_text(tmp_path)
