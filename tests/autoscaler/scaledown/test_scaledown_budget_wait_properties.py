"""Nodes waiting for budget, loop after loop (issue 24), over random small clusters (hypothesis).

A node whose pods fit elsewhere but whose PodDisruptionBudget is used up for now (by drains under
way or by earlier candidates) while allowing at least one disruption with all its pods healthy is
*waiting for budget*. Over several consecutive planner loops, at increasing times, with the PDB
statuses changing between loops (a budget used up by a drain, then coming back), nodes starting
to drain, finishing or being abandoned:

- a node waiting in a loop that was a candidate or waiting in the previous loop keeps exactly its
  earlier unneeded-since time (a new one starts its time now);
- a waiting node is never in `planner.unremovable` (the non-candidate set);
- a waiting node is never in the same loop's candidate set;
- with scale-down-budget-wait-keeps-unneeded-time false (CA's way) nothing is ever waiting.

Found meanwhile, and fixed (restart.py): after a restart, a risky drain caught between two budget
waves was waiting for budget, so recover() untainted it instead of resuming it.
"""

from __future__ import annotations

import dataclasses

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from scaledown_fakes import FakeActions, FakeCloud, FakeGroup, node, pdb, pod, workload
from test_scaledown_properties import APPS, OPTIONS, WORKLOADS, clusters

from kubetide.autoscaler.inputs import LoopInputs
from kubetide.autoscaler.ports import TO_BE_DELETED_TAINT
from kubetide.autoscaler.scaledown.actuation.actuator import Actuator
from kubetide.autoscaler.scaledown.actuation.restart import recover
from kubetide.autoscaler.scaledown.planning.planner import Planner
from kubetide.clock import WorkTimer
from kubetide.model import Taint
from kubetide.snapshot import ClusterSnapshot

EXPECTED = 10  # WORKLOADS' replicas: what every budget expects
KEEPS = OPTIONS.with_values(scale_down_unneeded_time=60, unremovable_node_recheck_timeout=300)
AS_CA = KEEPS.with_values(scale_down_budget_wait_keeps_unneeded_time=False)


def budget(app: str, full: int, allowed: int):
    """A maxUnavailable `full` budget over EXPECTED pods with `allowed` disruptions left now (the
    others used by pods being drained or not Ready yet), as its status says."""
    desired = EXPECTED - full
    return pdb(
        f"pdb-{app}",
        app,
        allowed=allowed,
        max_unavailable=full,
        current_healthy=desired + allowed,
        desired_healthy=desired,
        expected_pods=EXPECTED,
    )


@st.composite
def statuses(draw, fulls, draining):
    """One loop's PDB statuses: each budget's full allowance (0 refuses for good) less what the
    drains under way use (`draining`: their healthy pods per app) and what pods not Ready yet use
    (replacements of finished drains, drawn)."""
    return [
        budget(app, full, max(0, full - draining.get(app, 0) - draw(st.integers(0, 1))))
        for app, full in fulls.items()
    ]


STEP = st.tuples(
    st.sampled_from([5.0, 30.0, 70.0, 400.0]),  # time to the next loop
    st.sampled_from(["start", "start", "finish", "abandon", "none"]),  # what a drain does meanwhile
    st.integers(0, 99),
)


def _taint(n, on: bool):
    taints = tuple(t for t in n.taints if t.key != TO_BE_DELETED_TAINT)
    if on:
        taints += (Taint(TO_BE_DELETED_TAINT, "0"),)
    return dataclasses.replace(n, taints=taints)


def run_loops(cluster, data, planner_options, check):
    """Run 3-6 loops over one evolving cluster; `check(planner, plan, before, kept)` after each,
    with `before` the unneeded-since times before the loop and `kept` last loop's candidates and
    waiting nodes."""
    nodes, pods, _, min_size, _ = cluster
    apps = sorted({p.labels["app"] for p in pods} | {APPS[0]})
    fulls = {app: data.draw(st.sampled_from([0, 1, 1, 2]), label=f"budget of {app}") for app in apps}
    cloud = FakeCloud()
    group = cloud.add(FakeGroup("g", min_size=min_size), *[n.name for n in nodes])
    planner = Planner(planner_options, timer=WorkTimer(1e-3))
    nodes = {n.name: n for n in nodes}
    deleting: set[str] = set()
    now = 0.0
    kept: set[str] = set()
    for loop, (gap, action, pick) in enumerate(data.draw(st.lists(STEP, min_size=3, max_size=6))):
        draining: dict[str, int] = {}
        for p in pods:
            if p.node_name in deleting and p.ready:
                draining[p.labels["app"]] = draining.get(p.labels["app"], 0) + 1
        pdbs = data.draw(statuses(fulls, draining), label=f"pdbs at loop {loop}")
        snapshot = ClusterSnapshot(list(nodes.values()), [p for p in pods if p.node_name in nodes])
        before = dict(planner.unneeded_since)
        plan = planner.update(
            LoopInputs(now, snapshot, pdbs=pdbs, workloads=WORKLOADS, being_deleted=deleting), cloud=cloud
        )
        check(planner, plan, before, kept)
        kept = set(plan.candidate_set) | set(plan.waiting_for_budget)
        # Between loops: a drain starts (the actuator taints a removable node), one under way
        # finishes (the node and its pods go) or is abandoned (untainted); time passes.
        if action == "start" and plan.removable_now():
            name = plan.removable_now()[pick % len(plan.removable_now())]
            deleting.add(name)
            nodes[name] = _taint(nodes[name], True)
        elif action in ("finish", "abandon") and deleting:
            name = sorted(deleting)[pick % len(deleting)]
            deleting.discard(name)
            if action == "finish":
                del nodes[name]
                group.members.remove(name)
            else:
                nodes[name] = _taint(nodes[name], False)
        now += gap


def check_keeps(planner, plan, before, kept):
    waiting = plan.waiting_for_budget
    assert len(set(waiting)) == len(waiting)
    for name in waiting:
        event("a node waits for budget")
        assert name not in plan.candidate_set, f"{name} is waiting and a candidate"
        assert name not in planner.unremovable, f"{name} is waiting and in the non-candidate set"
        assert name in planner.unneeded_since, f"{name} is waiting without an unneeded time"
        if name in kept:
            event("a node waits for budget again, or after being a candidate")
            assert planner.unneeded_since[name] == before[name], (
                f"{name} lost its unneeded time: {before[name]} -> {planner.unneeded_since[name]}"
            )
        else:
            assert planner.unneeded_since[name] == plan.now
        assert plan.nodes[name].detail.startswith("waiting for budget"), plan.nodes[name].detail


def check_as_ca(planner, plan, before, kept):
    assert plan.waiting_for_budget == []


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(clusters(), st.data())
def test_nodes_waiting_for_budget_keep_their_unneeded_time(cluster, data):
    run_loops(cluster, data, KEEPS, check_keeps)


@settings(max_examples=100, suppress_health_check=[HealthCheck.too_slow])
@given(clusters(), st.data())
def test_as_ca_nothing_waits_for_budget(cluster, data):
    run_loops(cluster, data, AS_CA, check_as_ca)


def test_a_node_waits_through_a_drain_and_goes_when_the_budget_is_back():
    """The properties' story, fixed, so that they are not vacuous: one budget of one disruption
        over a pod on each of three nodes. n0 is a candidate and n1 waits; n0 drains (budget used up),
        n1 still waits with its time; n0 is gone and the budget back: n1 is a candidate with the time
        it first became unneeded, so removable at once. (n2 is no longer waiting: with n1 going, its pod
    has nowhere to go.)"""
    nodes = [node(f"n{i}", cpu=1000) for i in range(3)]
    pods = [pod(f"p{i}", f"n{i}", 200, owner=("ReplicaSet", "web"), labels={"app": "web"}) for i in range(3)]
    cloud = FakeCloud()
    group = cloud.add(FakeGroup("g"), *[n.name for n in nodes])
    planner = Planner(KEEPS, timer=WorkTimer(1e-3))

    plan = planner.update(
        LoopInputs(0.0, ClusterSnapshot(nodes, pods), pdbs=[budget("web", 1, 1)], workloads=WORKLOADS),
        cloud=cloud,
    )
    assert plan.candidate_set == ["n0"] and plan.waiting_for_budget == ["n1", "n2"]
    assert planner.unneeded_since == {"n0": 0.0, "n1": 0.0, "n2": 0.0}

    plan = planner.update(
        LoopInputs(70.0, ClusterSnapshot(nodes, pods), pdbs=[budget("web", 1, 1)], workloads=WORKLOADS),
        cloud=cloud,
    )
    assert plan.removable_now() == ["n0"]
    draining = [_taint(nodes[0], True), *nodes[1:]]
    plan = planner.update(
        LoopInputs(
            80.0,
            ClusterSnapshot(draining, pods),
            pdbs=[budget("web", 1, 0)],
            workloads=WORKLOADS,
            being_deleted={"n0"},
        ),
        cloud=cloud,
    )
    assert plan.candidate_set == [] and plan.waiting_for_budget == ["n1", "n2"]
    assert planner.unneeded_since == {"n1": 0.0, "n2": 0.0}
    assert not set(planner.unremovable) & {"n1", "n2"}

    group.members.remove("n0")
    plan = planner.update(
        LoopInputs(
            90.0, ClusterSnapshot(nodes[1:], pods[1:]), pdbs=[budget("web", 1, 1)], workloads=WORKLOADS
        ),
        cloud=cloud,
    )
    assert plan.candidate_set == ["n1"]
    assert planner.unneeded_since["n1"] == 0.0
    assert plan.removable_now() == ["n1"]


def test_a_restart_between_two_budget_waves_resumes_the_drain():
    """n0 was tainted at t=100 by the previous process to drain its two pods of a maxUnavailable 1
    budget (two waves); the first is gone, its replacement r not Ready yet, so the budget allows
    nothing for now. At t=130 (deadline 100 + 5 + 2 x 120) the new process should resume the drain,
    which can finish once r is Ready, rather than give it up."""
    web = ("ReplicaSet", "web")
    tainted = node("n0", taints=[Taint(TO_BE_DELETED_TAINT, "100", "NoSchedule")])
    nodes = [tainted, node("n1"), node("n2")]
    pods = [
        pod("a", "n0", 200, owner=web, labels={"app": "web"}),
        pod("r", "n1", 200, owner=web, labels={"app": "web"}, ready=False),
        pod("b", "n2", 200, owner=web, labels={"app": "web"}),
    ]
    cloud = FakeCloud()
    cloud.add(FakeGroup("g"), "n0", "n1", "n2")
    options = OPTIONS.with_values(max_pod_eviction_time=120, node_delete_delay_after_taint=5)
    planner = Planner(options, timer=WorkTimer(1e-3))
    actuator = Actuator(options, FakeActions(), cloud, planner)
    report = recover(
        planner,
        actuator,
        ClusterSnapshot(nodes, pods),
        cloud=cloud,
        now=130.0,
        pdbs=[
            pdb(
                "web",
                "web",
                allowed=0,
                max_unavailable=1,
                current_healthy=2,
                desired_healthy=2,
                expected_pods=3,
            )
        ],
        workloads=[workload("ReplicaSet", "web", 3)],
    )
    assert report.plan.waiting_for_budget == ["n0"]
    assert report.resumed == ["n0"], report.released
