"""Pods annotated safe-to-evict "on-completion" (CA 1.36): left to finish, never moved; their node
may be unneeded but goes only once they are done (BlockedByOnCompletionPod, no blocking pod), and
empty nodes holding them come after the other empty nodes. tests/oracle holds the same against
CA 1.36.1 on random clusters."""

import pytest
from scaledown_fakes import cloud_for, node, pod, snapshot_of, workload

from kubetide.autoscaler.inputs import LoopInputs
from kubetide.autoscaler.options import AutoscalerOptions
from kubetide.autoscaler.scaledown.planning.drainability import (
    DrainContext,
    DrainRules,
    Outcome,
    PdbTracker,
    index_workloads,
    pods_needing_homes,
    verdict,
)
from kubetide.autoscaler.scaledown.planning.eligibility import SCALE_DOWN_DISABLED_ANNOTATION
from kubetide.autoscaler.scaledown.planning.planner import Planner
from kubetide.autoscaler.scaledown.reasons import NodeReason, PodReason
from kubetide.clock import WorkTimer

SAFE_TO_EVICT = "cluster-autoscaler.kubernetes.io/safe-to-evict"
ON_COMPLETION = {SAFE_TO_EVICT: "on-completion"}
BUSY = {SCALE_DOWN_DISABLED_ANNOTATION: "true"}  # a destination that is never a candidate
JOB = ("Job", "batch")
WORKLOADS = [
    workload("ReplicaSet", "rs", 100),
    workload("Job", "batch", 1),
    workload("Job", "batch", 1, namespace="kube-system"),
]
HELD = NodeReason.BLOCKED_BY_ON_COMPLETION_POD


def plan_for(nodes, pods, *, planner=None, now=0.0, cloud=None):
    planner = planner or Planner(AutoscalerOptions(), timer=WorkTimer(1e-3), timers_expired=True)
    cloud = cloud or cloud_for(*[n.name for n in nodes])
    return planner.update(LoopInputs(now, snapshot_of(nodes, pods), workloads=WORKLOADS), cloud=cloud)


def job(name, host, cpu=100, phase="Running", **kw):
    return pod(name, host, cpu, owner=kw.pop("owner", JOB), annotations=ON_COMPLETION, phase=phase, **kw)


# Node "a" holds the pods of each case; "d" has room for 400m and is never a candidate.
# (case, pods on a, a in the candidate set, its reason, deleted now as empty / drained / not)
CASES = [
    ("running job", [job("j", "a")], True, HELD, None),
    ("completed job", [job("j", "a", phase="Succeeded")], True, None, "empty"),
    ("failed job", [job("j", "a", phase="Failed")], True, None, "empty"),
    ("bare pod", [job("j", "a", owner=None)], True, HELD, None),
    ("young kube-system pod", [job("j", "a", namespace="kube-system")], True, HELD, None),
    ("needs more room than anywhere", [job("j", "a", cpu=450)], True, HELD, None),
    ("with a pod to move", [job("j", "a"), pod("web", "a", 200)], True, HELD, None),
    (
        "completed, with a pod to move",
        [job("j", "a", phase="Succeeded"), pod("web", "a", 200)],
        True,
        None,
        "drain",
    ),
    (
        "with a pod that blocks",
        [job("j", "a"), pod("bare", "a", owner=None)],
        False,
        NodeReason.BLOCKED_BY_POD,
        None,
    ),
    ("its Job is gone", [job("j", "a", owner=("Job", "gone"))], False, NodeReason.BLOCKED_BY_POD, None),
]


@pytest.mark.parametrize(
    ("pods", "candidate", "reason", "deleted"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_a_node_waits_for_its_on_completion_pods_and_goes_once_they_are_done(
    pods, candidate, reason, deleted
):
    plan = plan_for([node("a"), node("d", annotations=BUSY)], [*pods, pod("filler", "d", 600)])
    a = plan.nodes["a"]
    assert ("a" in plan.candidate_set, a.reason) == (candidate, reason)
    assert (
        "empty" if "a" in plan.empty_to_delete else "drain" if "a" in plan.drain_to_delete else None
    ) == deleted
    if reason is HELD:
        assert a.blocking_pod is None and a.blockers == ()
        assert "default/j" in a.detail or "kube-system/j" in a.detail
        assert plan.to_json()["nodes"]["a"]["reason"] == "BlockedByOnCompletionPod"
    # An on-completion pod is never moved: no destination is planned for it.
    assert not any(key.endswith("/j") for key in plan.destinations)


def test_the_node_keeps_its_unneeded_time_while_it_waits():
    """Unneeded at 0, held past scale-down-unneeded-time while the job runs, deleted at the first
    loop after the job completed, without its timer starting again."""
    options = AutoscalerOptions()
    planner = Planner(options, timer=WorkTimer(1e-3))
    cloud = cloud_for("a", "d")
    nodes = [node("a"), node("d", annotations=BUSY)]
    first = plan_for(nodes, [job("j", "a")], planner=planner, cloud=cloud)
    assert first.candidate_set == ["a"] and first.nodes["a"].reason is NodeReason.NOT_UNNEEDED_LONG_ENOUGH
    later = options.scale_down_unneeded_time + 60
    held = plan_for(nodes, [job("j", "a")], planner=planner, cloud=cloud, now=later)
    assert held.nodes["a"].reason is HELD and held.removable_now() == []
    assert planner.unneeded_since["a"] == 0.0
    done = plan_for(nodes, [job("j", "a", phase="Succeeded")], planner=planner, cloud=cloud, now=later + 10)
    assert done.empty_to_delete == ["a"] and done.nodes["a"].reason is None


def test_empty_nodes_holding_on_completion_pods_come_after_the_other_empty_nodes():
    """Three empty nodes in a group that may lose one: the one without an on-completion pod is the
    candidate, whatever the nodes' order."""
    for names in (("a", "b", "c"), ("c", "b", "a")):
        nodes = [node(name) for name in names]
        pods = [job("ja", "a"), job("jc", "c")]  # b is empty; a and c only hold jobs
        plan = plan_for(nodes, pods, cloud=cloud_for(*names, min_size=2))
        assert plan.candidate_set == ["b"], names
        assert {plan.nodes[n].reason for n in ("a", "c")} == {NodeReason.NODE_GROUP_MIN_SIZE_REACHED}


RULES = DrainRules()


@pytest.mark.parametrize(
    ("made", "outcome", "reason"),
    [
        (job("j", "a"), Outcome.ON_COMPLETION, None),
        (job("j", "a", phase="Succeeded"), Outcome.DONE, None),
        (job("j", "a", owner=None), Outcome.ON_COMPLETION, None),
        (job("j", "a", owner=("Job", "gone")), Outcome.BLOCK, PodReason.CONTROLLER_NOT_FOUND),
        (job("j", "a", owner=("DaemonSet", "ds")), Outcome.DAEMONSET, None),
        (pod("p", "a", annotations={SAFE_TO_EVICT: "true"}), Outcome.MOVE, None),
    ],
    ids=["running", "completed", "bare", "controller-gone", "daemonset", "safe-to-evict-true"],
)
def test_the_on_completion_rule_comes_after_the_controller_check_and_terminal_pods(made, outcome, reason):
    ctx = DrainContext(RULES, PdbTracker([], [made], None), 0.0, index_workloads(WORKLOADS))
    v = verdict(made, ctx)
    assert (v.outcome, v.reason) == (outcome, reason)


def test_a_drain_under_way_finds_no_home_for_a_running_on_completion_pod():
    """A drain never evicts an on-completion pod (it waits for it, or gives up): it needs no home
    elsewhere, running or done."""
    ctx = DrainContext(RULES, PdbTracker([], [], None), 0.0, index_workloads(WORKLOADS))
    running, done, moved = job("j", "a"), job("k", "a", phase="Succeeded"), pod("m", "a")
    assert pods_needing_homes([running, done, moved], ctx) == [moved]
