"""kubetide's cheaper-group replacement (planning/replacement.py) and the Balanced score it clears
(autoscaler/consolidation.py): when it replaces, when it refuses, and that the nodes it replaces
are drained only once their replacement is Ready."""

from __future__ import annotations

import pytest
from scaledown_fakes import FakeCloud, FakeGroup, node, pdb, pod, snapshot_of, workload

from kubetide.autoscaler.consolidation import balanced_approves, balanced_score
from kubetide.autoscaler.inputs import LoopInputs
from kubetide.autoscaler.options import AutoscalerOptions
from kubetide.autoscaler.scaledown.planning import (
    CA_METHODS,
    KUBETIDE_METHODS,
    CheaperGroupReplacement,
    PendingReplacement,
    Planner,
    Replacement,
)
from kubetide.autoscaler.scaledown.reasons import NodeReason
from kubetide.clock import WorkTimer

OPTS = AutoscalerOptions()
LARGE, SMALL = 8000, 2000  # millicores


class PricedGroup(FakeGroup):
    def __init__(self, id: str, price: float, cpu: int, max_size: int = 100, min_size: int = 0):
        super().__init__(id, min_size=min_size, max_size=max_size)
        self.price = price
        self.cpu = cpu

    def template_node(self):
        return node(f"template-{self.id}", self.cpu, 32 * 2**30)

    def price_per_hour(self) -> float:
        return self.price


def cluster(
    on_a: int = 4,
    on_b: int = 5,
    *,
    small_price: float = 0.10,
    small_cpu: int = SMALL,
    small_max: int = 100,
    pod_cpu: int = 1000,
):
    """Two large nodes (group large, $0.40) running `on_a` and `on_b` pods of app web, and an
    empty group small; neither large node's pods fit on the other."""
    cloud = FakeCloud()
    cloud.add(PricedGroup("large", 0.40, LARGE), "a", "b")
    cloud.add(PricedGroup("small", small_price, small_cpu, max_size=small_max))
    nodes = [node("a", LARGE, 32 * 2**30), node("b", LARGE, 32 * 2**30)]
    pods = [pod(f"web-a{i}", "a", pod_cpu, owner=("ReplicaSet", "web")) for i in range(on_a)]
    pods += [pod(f"web-b{i}", "b", pod_cpu, owner=("ReplicaSet", "web")) for i in range(on_b)]
    return cloud, nodes, pods


def plan_of(
    cloud,
    nodes,
    pods,
    *,
    pdbs=(),
    options=OPTS,
    planner=None,
    methods=KUBETIDE_METHODS,
    now=0.0,
    expired=True,
):
    planner = planner or Planner(options, timer=WorkTimer(1e-3), timers_expired=expired, methods=methods)
    inputs = LoopInputs(
        now, snapshot_of(nodes, pods), pdbs=list(pdbs), workloads=[workload("ReplicaSet", "web", len(pods))]
    )
    return planner.update(inputs, cloud=cloud), planner


@pytest.mark.parametrize(
    ("case", "kwargs", "pdbs", "options", "expected"),
    [
        # a's 4 pods fit on b's 3 free cores plus one small node: $0.40 replaced by $0.10.
        ("replaced", {}, [], OPTS, [Replacement(("a",), "small")]),
        # Saving $0.05 of $0.80 for 5 of 11 units of disruption: score 0.14, below 1/2.
        ("score too low", {"small_price": 0.35}, [], OPTS, []),
        # A budget with no disruption left refuses a's pods: no money buys a PDB's minimum.
        ("PDB at its minimum", {}, [pdb("web", "web", allowed=0)], OPTS, []),
        # A small node of half a core takes none of a's pods; one stays homeless.
        ("pods do not fit", {"small_cpu": 500}, [], OPTS, []),
        # The cheaper group is at its max size: no node can be launched.
        ("no room in the group", {"small_max": 0}, [], OPTS, []),
        ("turned off", {}, [], OPTS.with_values(consolidate_onto_cheaper_groups=False), []),
        # Two cores of pods on a: b takes them all, a is a plain candidate (nothing to replace).
        ("plain removal", {"on_a": 2}, [], OPTS, []),
    ],
)
def test_replacement_onto_a_cheaper_group(case, kwargs, pdbs, options, expected):
    plan, _ = plan_of(*cluster(**kwargs), pdbs=pdbs, options=options)
    assert plan.replacements == expected, case
    assert "a" not in plan.drain_to_delete or case == "plain removal"
    if expected:
        assert plan.to_json()["replace"] == [{"nodes": ["a"], "with": "small"}]
    else:
        assert "replace" not in plan.to_json()


def test_a_budget_with_fewer_disruptions_than_pods_lets_the_replacement_go_pod_by_pod():
    """One disruption left for a's 4 pods: the drain waits for the budget pod by pod (the
    Eviction API keeps the minimum), as CA drains a risky node; a refusal is only for none left."""
    plan, _ = plan_of(*cluster(), pdbs=[pdb("web", "web", allowed=1)])
    assert plan.replacements == [Replacement(("a",), "small")]


def test_the_cluster_autoscaler_methods_never_replace():
    plan, _ = plan_of(*cluster(), methods=CA_METHODS)
    assert plan.replacements == []


def test_the_replaced_node_is_drained_only_once_its_replacement_is_ready():
    cloud, nodes, pods = cluster()
    plan, planner = plan_of(cloud, nodes, pods)
    assert plan.replacements == [Replacement(("a",), "small")]
    # The loop launched it (loop.py): until a new Ready node of group small joins, a waits, and
    # no second replacement is proposed.
    planner.note_replacement(("a",), PendingReplacement("small", 0.0, frozenset()))
    plan, _ = plan_of(cloud, nodes, pods, planner=planner)
    assert (plan.replacements, plan.drain_to_delete) == ([], [])
    joining = node("small-1", SMALL, 8 * 2**30, ready=False)
    cloud.groups["small"].members.append("small-1")
    plan, _ = plan_of(cloud, [*nodes, joining], pods, planner=planner)
    assert (plan.replacements, plan.drain_to_delete) == ([], [])
    ready = node("small-1", SMALL, 8 * 2**30)
    plan, _ = plan_of(cloud, [*nodes, ready], pods, planner=planner)
    assert plan.drain_to_delete == ["a"]
    assert plan.replacements == []


def test_a_replaced_node_whose_pods_no_longer_fit_waits():
    """The replacement joined, but b filled up meanwhile: a's pods would not all find a place."""
    cloud, nodes, pods = cluster()
    _, planner = plan_of(cloud, nodes, pods)
    planner.note_replacement(("a",), PendingReplacement("small", 0.0, frozenset()))
    cloud.groups["small"].members.append("small-1")
    crowded = [*pods, *(pod(f"other-{i}", "b", 1000, owner=("ReplicaSet", "web")) for i in range(3))]
    plan, _ = plan_of(cloud, [*nodes, node("small-1", SMALL, 8 * 2**30)], crowded, planner=planner)
    assert plan.drain_to_delete == []


@pytest.mark.parametrize(
    ("savings", "pool_cost", "disruption", "pool_disruption", "approved"),
    [
        (0.30, 0.80, 5.0, 11.0, True),  # 0.375 / 0.45 = 0.83
        (0.05, 0.80, 5.0, 11.0, False),  # 0.0625 / 0.45 = 0.14
        # A uniform pool: replacing one of n equal nodes by one half its price scores exactly 1/2
        # whatever n (k = 2 is the smallest integer letting such a replace through).
        (0.5, 4.0, 1.0, 4.0, True),
        (0.49, 4.0, 1.0, 4.0, False),
        (0.0, 1.0, 1.0, 1.0, False),  # nothing saved
    ],
)
def test_the_balanced_score(savings, pool_cost, disruption, pool_disruption, approved):
    assert balanced_approves(balanced_score(savings, pool_cost, disruption, pool_disruption)) is approved


def test_the_method_is_named_and_last():
    assert [m.name for m in KUBETIDE_METHODS] == ["empty", "underutilized", "replace"]
    assert isinstance(KUBETIDE_METHODS[-1], CheaperGroupReplacement)


def test_a_node_is_replaced_only_once_it_has_been_removable_but_for_room_for_the_unneeded_time():
    """CA's wait before a removal holds for a replacement too, and restarts when the cluster was
    unhealthy (Planner.clear)."""
    cloud, nodes, pods = cluster()
    wait = OPTS.scale_down_unneeded_time
    plan, planner = plan_of(cloud, nodes, pods, expired=False, now=1000.0)
    assert plan.replacements == []
    plan, _ = plan_of(cloud, nodes, pods, planner=planner, now=1000.0 + wait - 10)
    assert plan.replacements == []
    plan, _ = plan_of(cloud, nodes, pods, planner=planner, now=1000.0 + wait)
    assert plan.replacements == [Replacement(("a",), "small")]
    planner.clear()
    plan, _ = plan_of(cloud, nodes, pods, planner=planner, now=1000.0 + wait + 10)
    assert plan.replacements == []


# -- busy nodes ---------------------------------------------------------------------------------
def busy_cluster(on=(5, 5, 5), *, large_min: int = 0, bare_on: str = ""):
    """Three large nodes a, b, c ($0.40, 8 cores) running `on` one-core pods of app web: each
    above the 0.5 utilization threshold, so CA's rule removes none; and an empty group small
    ($0.10, 2 cores). The first pod of each node in `bare_on` has no controller."""
    cloud = FakeCloud()
    cloud.add(PricedGroup("large", 0.40, LARGE, min_size=large_min), "a", "b", "c")
    cloud.add(PricedGroup("small", 0.10, SMALL))
    nodes = [node(name, LARGE, 32 * 2**30) for name in "abc"]
    pods = [
        pod(
            f"web-{name}{i}",
            name,
            1000,
            owner=None if name in bare_on and i == 0 else ("ReplicaSet", "web"),
        )
        for name, count in zip("abc", on, strict=True)
        for i in range(count)
    ]
    return cloud, nodes, pods


@pytest.mark.parametrize(
    ("case", "kwargs", "pdbs", "options", "drained", "replaced"),
    [
        # a's 5 pods fit in b's and c's 3 free cores each: a goes, with no new node ($0.40 saved
        # for 6 of 18 units of disruption: score 1).
        ("removed", {}, [], OPTS, ["a"], []),
        # b and c have 2 free cores each: a's 5 pods need one small node too ($0.30 saved).
        ("replaced", {"on": (5, 6, 6)}, [], OPTS, [], [Replacement(("a",), "small")]),
        # A pod with no controller forbids a's drain (CA's drain rule 7): b, next, goes instead.
        ("a pod blocks the drain", {"bare_on": "a"}, [], OPTS, ["b"], []),
        ("PDB at its minimum", {}, [pdb("web", "web", allowed=0)], OPTS, [], []),
        ("group at its minimum size", {"large_min": 3}, [], OPTS, [], []),
        ("turned off", {}, [], OPTS.with_values(consolidate_onto_cheaper_groups=False), [], []),
        ("busy nodes kept", {}, [], OPTS.with_values(consolidate_busy_nodes=False), [], []),
        (
            "busy nodes kept, replacement",
            {"on": (5, 6, 6)},
            [],
            OPTS.with_values(consolidate_busy_nodes=False),
            [],
            [],
        ),
        # Every node full but for a core: nowhere to go, and no cheaper node holds 7 pods.
        ("no room", {"on": (7, 7, 7)}, [], OPTS, [], []),
    ],
)
def test_busy_nodes_are_consolidated_within_cas_rules(case, kwargs, pdbs, options, drained, replaced):
    plan, _ = plan_of(*busy_cluster(**kwargs), pdbs=pdbs, options=options)
    assert plan.candidate_set == [] or case == "removed", case  # CA's rule finds none
    assert (plan.drain_to_delete, plan.replacements) == (drained, replaced), case


def test_a_busy_node_waits_the_unneeded_time_at_an_unchanged_utilization():
    """A pod added or removed restarts the wait (as Karpenter's consolidateAfter does)."""
    cloud, nodes, pods = busy_cluster()
    wait = OPTS.scale_down_unneeded_time
    plan, planner = plan_of(cloud, nodes, pods, expired=False, now=1000.0)
    assert plan.drain_to_delete == []
    one_more = [*pods, pod("web-a9", "a", 1000, owner=("ReplicaSet", "web"))]  # a at 6 of 8 cores
    plan, _ = plan_of(cloud, nodes, one_more, planner=planner, now=1000.0 + wait - 10)
    assert plan.drain_to_delete == []
    plan, _ = plan_of(cloud, nodes, pods, planner=planner, now=1000.0 + wait)
    assert plan.drain_to_delete == ["b"]  # a, the first in line, changed: b and c waited long enough


def test_busy_nodes_wait_while_cas_candidates_wait():
    """An empty node d is a candidate: until CA's rule has removed it the cluster is still
    shrinking, and a busy node replaced meanwhile could be redundant once d is gone."""
    cloud, nodes, pods = busy_cluster()
    cloud.groups["large"].members.append("d")
    wait = OPTS.scale_down_unneeded_time
    plan, planner = plan_of(cloud, [*nodes, node("d", LARGE, 32 * 2**30)], pods, expired=False, now=1000.0)
    plan, _ = plan_of(cloud, [*nodes, node("d", LARGE, 32 * 2**30)], pods, planner=planner, now=1000.0 + wait)
    assert (plan.empty_to_delete, plan.drain_to_delete, plan.replacements) == (["d"], [], [])


def test_a_busy_node_that_becomes_removable_but_for_room_waits_again():
    """a, busy for the unneeded time, loses two pods (b and c full, and pinned by a pod with no
    controller): it is NoPlaceToMovePods from then on, and is replaced only once that lasted the
    unneeded time too."""
    cloud, nodes, pods = busy_cluster((5, 7, 7), bare_on="bc")
    wait = OPTS.scale_down_unneeded_time
    plan, planner = plan_of(cloud, nodes, pods, expired=False, now=1000.0)
    plan, _ = plan_of(cloud, nodes, pods, planner=planner, now=1000.0 + wait)
    assert plan.replacements == []  # busy long enough, but nowhere to go
    fewer = [p for p in pods if p.name not in ("web-a3", "web-a4")]
    plan, _ = plan_of(cloud, nodes, fewer, planner=planner, now=1000.0 + wait + 10)
    assert (plan.nodes["a"].blocked_by, plan.replacements) == (NodeReason.NO_PLACE_TO_MOVE_PODS, [])
    plan, _ = plan_of(cloud, nodes, fewer, planner=planner, now=1000.0 + 2 * wait + 10)
    assert plan.replacements == [Replacement(("a",), "small")]
