"""The planner (UpdateUnneededNodes): candidate sets, hints, re-validation, recent evictions,
timers, pauses, limits and the explanation of every node."""

import dataclasses
import json

import pytest
from scaledown_fakes import FakeCloud, FakeGroup, cloud_for, node, pdb, pod, snapshot_of, state, workload

from kubetide.autoscaler.inputs import LoopInputs
from kubetide.autoscaler.options import AutoscalerOptions, ResourceRange
from kubetide.autoscaler.ports import TO_BE_DELETED_TAINT
from kubetide.autoscaler.scaledown.planning.eligibility import SCALE_DOWN_DISABLED_ANNOTATION
from kubetide.autoscaler.scaledown.planning.planner import Planner
from kubetide.autoscaler.scaledown.reasons import NodeReason, PodReason
from kubetide.clock import WorkTimer
from kubetide.model import Taint

OPTS = AutoscalerOptions()
RS = [workload("ReplicaSet", "rs", 100)]
BUSY = {SCALE_DOWN_DISABLED_ANNOTATION: "true"}  # a destination that is never a candidate
SAFE_TO_EVICT = "cluster-autoscaler.kubernetes.io/safe-to-evict"


def plan_for(nodes, pods, planner=None, now=0.0, cloud=None, resume=(), **kw):
    s = snapshot_of(nodes, pods)
    planner = planner or Planner(OPTS, timer=WorkTimer(1e-3), timers_expired=True)
    cloud = cloud or cloud_for(*[n.name for n in nodes])
    kw.setdefault("workloads", RS)
    before = state(s)
    plan = planner.update(LoopInputs(now, s, **kw), cloud=cloud, resume=resume)
    assert state(s) == before, "the snapshot must be left as found"
    return plan


def test_two_half_empty_nodes_that_can_only_absorb_each_other_give_one_candidate():
    nodes = [node("a"), node("b"), node("full", annotations=BUSY)]
    pods = [pod("pa", "a", 400), pod("pb", "b", 400), pod("pf", "full", 1000)]
    plan = plan_for(nodes, pods)
    assert plan.candidate_set == ["a"]
    assert plan.destinations == {"default/pa": "b"}
    # b may be a candidate too, as in CA, but then a's pod, received, must move on as well.
    b = plan.nodes["b"]
    assert (b.status, b.reason) == ("unremovable", NodeReason.NO_PLACE_TO_MOVE_PODS)
    assert "moved here from a" in b.detail or "default/pb" in b.detail


def test_a_node_whose_pods_fit_nowhere_is_no_place_to_move():
    nodes = [node("a"), node("full", annotations=BUSY)]
    plan = plan_for(nodes, [pod("pa", "a", 400), pod("pf", "full", 900)])
    assert plan.candidate_set == []
    a = plan.nodes["a"]
    assert (a.reason, a.blocking_pod) == (NodeReason.NO_PLACE_TO_MOVE_PODS, None)
    assert "default/pa" in a.detail


def test_candidates_are_removable_together_and_share_destinations():
    nodes = [node("a"), node("b"), node("c"), node("d", annotations=BUSY)]
    pods = [pod("pa", "a", 300), pod("pb", "b", 300), pod("pc", "c", 300), pod("pd", "d", 200)]
    plan = plan_for(nodes, pods)
    # d has room for 800: two of the three, and the third has nowhere else to go.
    assert plan.candidate_set == ["a", "b"]
    assert set(plan.destinations.values()) == {"d"}
    assert plan.nodes["c"].reason is NodeReason.NO_PLACE_TO_MOVE_PODS


def test_blocking_pod_is_reported_with_its_reason():
    nodes = [node("a"), node("b", annotations=BUSY)]
    pods = [pod("ok", "a", 100), pod("metrics", "a", 100, namespace="kube-system", created=0.0)]
    plan = plan_for(nodes, pods, workloads=[*RS, workload("ReplicaSet", "rs", 1, namespace="kube-system")])
    a = plan.nodes["a"]
    assert a.reason is NodeReason.BLOCKED_BY_POD
    assert a.blocking_pod.reason is PodReason.UNMOVABLE_KUBE_SYSTEM_POD
    assert plan.to_json()["nodes"]["a"] == {
        "status": "unremovable",
        "empty": False,
        "utilization": 0.2,
        "reason": "BlockedByPod",
        "blocking_pod": {"pod": "kube-system/metrics", "reason": "UnmovableKubeSystemPod"},
        "blocking_pods": [{"pod": "kube-system/metrics", "reason": "UnmovableKubeSystemPod"}],
        "estimated_drain_seconds": None,
        "drain_estimate": None,
        "unblock": None,
    }


def test_pdb_budget_is_consumed_across_candidates():
    nodes = [node("a"), node("b"), node("d", annotations=BUSY)]
    pods = [pod("pa", "a", 100), pod("pb", "b", 100)]
    plan = plan_for(nodes, pods, pdbs=[pdb("web", "rs", allowed=1)])
    assert plan.candidate_set == ["a"]
    b = plan.nodes["b"]
    assert (b.reason, b.blocking_pod.reason, b.blocking_pod.pod.name) == (
        NodeReason.BLOCKED_BY_POD,
        PodReason.NOT_ENOUGH_PDB,
        "pb",
    )
    assert plan.pdb_remaining == {"default/web": 0}


def test_unhealthy_pods_do_not_spend_the_budget_again():
    nodes = [node("a"), node("b"), node("d", annotations=BUSY)]
    pods = [pod("pa", "a", 100, ready=False), pod("pb", "b", 100), pod("pc", "d", 100)]
    # Status: 2 healthy, 1 desired -> 1 allowed (the unready pod already spent its share).
    plan = plan_for(nodes, pods, pdbs=[pdb("web", "rs", allowed=1, current_healthy=2, desired_healthy=1)])
    assert plan.candidate_set == ["a", "b"]


# maxUnavailable 1 over ten replicas, all healthy; and the same with one replica out.
ONE_LEFT = {"allowed": 1, "current_healthy": 10, "desired_healthy": 9, "expected_pods": 10}
NONE_LEFT_FOR_NOW = {"allowed": 0, "current_healthy": 9, "desired_healthy": 9, "expected_pods": 10}


def test_a_node_with_more_pods_of_a_budget_than_it_has_left_is_removable_and_risky():
    """CA's rule (core/scaledown/pdb CanRemovePods): blocked only below one disruption left."""
    nodes = [node("a"), node("d", annotations=BUSY)]
    pods = [pod("p1", "a", 100), pod("p2", "a", 100)]
    plan = plan_for(nodes, pods, pdbs=[pdb("web", "rs", **ONE_LEFT)])
    assert plan.candidate_set == ["a"] and set(plan.risky) == {"a"}
    assert plan.pdb_remaining == {"default/web": -1}  # charged all its pods
    why = plan.explain("a")
    assert "risky: PodDisruptionBudget default/web has 1 disruption left for its 2 pods here" in why
    assert "drained pod by pod in 2 waves (eviction deadline 2 x max-pod-eviction-time)" in why


def test_risky_nodes_are_drained_after_the_others():
    nodes = [node("a"), node("b"), node("d", cpu=4000, annotations=BUSY)]
    # a is the less utilized, so the search takes it first; the drains start with b all the same.
    pods = [pod("p1", "a", 100), pod("p2", "a", 100), pod("q", "b", 300, labels={"app": "other"})]
    plan = plan_for(nodes, pods, pdbs=[pdb("web", "rs", **ONE_LEFT)])
    assert plan.candidate_set == ["a", "b"] and set(plan.risky) == {"a"}
    assert plan.drain_to_delete == ["b", "a"]


@pytest.mark.parametrize(
    ("pods", "status"),
    [
        (
            [pod("g1", "a", 100, labels={"app": "g"})],
            {"allowed": 0, "current_healthy": 1, "desired_healthy": 1, "expected_pods": 1},
        ),
        ([pod("g1", "a", 100, labels={"app": "g"}, annotations={SAFE_TO_EVICT: "true"})], {"allowed": 0}),
    ],
    ids=["a single replica with minAvailable 1", "safe-to-evict true is checked too (CA would not)"],
)
def test_a_budget_that_allows_no_disruption_even_when_healthy_blocks_for_good(pods, status):
    nodes = [node("a"), node("sink", cpu=4000, annotations=BUSY)]
    plan = plan_for(nodes, pods, pdbs=[pdb("pdb-g", "g", **status)])
    assert plan.candidate_set == [] and plan.waiting_for_budget == []
    a = plan.nodes["a"]
    assert (a.reason, a.blocking_pod.reason) == (NodeReason.BLOCKED_BY_POD, PodReason.NOT_ENOUGH_PDB)
    assert (
        "PodDisruptionBudget default/pdb-g allows no disruption even with all its pods healthy" in a.explain()
    )


def test_a_node_waiting_for_budget_keeps_its_unneeded_time_and_goes_when_the_budget_is_back():
    """kubetide's own: CA sends it to the non-candidate set for the recheck time and restarts its
    timer, so PDB-paced drains wait unneeded + recheck time for every node."""
    planner = Planner(OPTS, timer=WorkTimer(1e-3))
    nodes = [node("a"), node("b"), node("d", cpu=4000, annotations=BUSY)]
    pods = [pod("pa", "a", 100), pod("pb", "b", 100)]
    first = plan_for(nodes, pods, planner, now=0.0, pdbs=[pdb("web", "rs", **ONE_LEFT)])
    assert first.candidate_set == ["a"] and first.waiting_for_budget == ["b"]
    b = first.nodes["b"]
    assert (b.reason, b.blocking_pod.reason) == (NodeReason.BLOCKED_BY_POD, PodReason.NOT_ENOUGH_PDB)
    assert "waiting for budget" in b.detail
    assert planner.unneeded_since == {"a": 0.0, "b": 0.0}
    assert "b" not in planner.unremovable
    # a is being drained: its pod is out, the budget is used up for now.
    later = OPTS.scale_down_unneeded_time + 10
    draining = plan_for(
        nodes, pods, planner, now=later, pdbs=[pdb("web", "rs", **NONE_LEFT_FOR_NOW)], being_deleted=["a"]
    )
    assert draining.waiting_for_budget == ["b"] and planner.unneeded_since["b"] == 0.0
    # a is gone and its pod's replacement Ready elsewhere: b goes at once, its timer long run out.
    gone = [node("b"), node("d", cpu=4000, annotations=BUSY)]
    after = plan_for(
        gone, [pod("pb", "b", 100)], planner, now=later + 60, pdbs=[pdb("web", "rs", **ONE_LEFT)]
    )
    assert after.drain_to_delete == ["b"]


def test_without_keeping_timers_a_node_waiting_for_budget_is_treated_as_ca_treats_it():
    options = dataclasses.replace(OPTS, scale_down_budget_wait_keeps_unneeded_time=False)
    planner = Planner(options, timer=WorkTimer(1e-3))
    nodes = [node("a"), node("b"), node("d", cpu=4000, annotations=BUSY)]
    pods = [pod("pa", "a", 100), pod("pb", "b", 100)]
    first = plan_for(nodes, pods, planner, now=0.0, pdbs=[pdb("web", "rs", **ONE_LEFT)])
    assert first.candidate_set == ["a"] and first.waiting_for_budget == []
    assert planner.unneeded_since == {"a": 0.0} and "b" in planner.unremovable
    assert "as in CA" in first.nodes["b"].detail


def test_a_waiting_node_whose_pods_do_not_fit_is_no_place_to_move():
    nodes = [node("a"), node("b"), node("d", cpu=1150, annotations=BUSY)]
    pods = [pod("pa", "a", 100), pod("pb", "b", 200), pod("pd", "d", 1000)]
    plan = plan_for(nodes, pods, pdbs=[pdb("web", "rs", **ONE_LEFT)])
    assert plan.candidate_set == ["a"] and plan.waiting_for_budget == []
    assert plan.nodes["b"].reason is NodeReason.NO_PLACE_TO_MOVE_PODS


def test_hints_are_reused():
    nodes = [node("a"), node("d1", annotations=BUSY), node("d2", annotations=BUSY)]
    pods = [pod("pa", "a", 300), pod("x1", "d1", 600), pod("x2", "d2", 600)]
    planner = Planner(OPTS, timer=WorkTimer(1e-3))
    first = plan_for(nodes, pods, planner)
    assert first.destinations == {"default/pa": "d2"}  # the search starts at the last node
    assert planner.hints == {"a": {"uid-default-pa": "d2"}}
    # A new node at the end would now be the search's first pick; the hint keeps pa on d2.
    nodes.append(node("d3", annotations=BUSY))
    again = plan_for(nodes, [*pods, pod("x3", "d3", 600)], planner, now=10)
    assert again.destinations == {"default/pa": "d2"}
    fresh = plan_for(nodes, [*pods, pod("x3", "d3", 600)])
    assert fresh.destinations == {"default/pa": "d3"}


def test_empty_nodes_come_first():
    group = FakeGroup("g", min_size=2)
    cloud = FakeCloud()
    cloud.add(group, "busy", "empty", "keeper")
    nodes = [node("busy"), node("empty"), node("keeper", annotations=BUSY)]
    pods = [pod("p", "busy", 100), pod("ds", "empty", 50, owner=("DaemonSet", "ds"))]
    plan = plan_for(nodes, pods, cloud=cloud)
    assert plan.candidate_set == ["empty"]
    assert plan.nodes["empty"].empty
    assert plan.nodes["busy"].reason is NodeReason.NODE_GROUP_MIN_SIZE_REACHED
    assert plan.empty_to_delete == ["empty"] and plan.drain_to_delete == []


def test_group_min_size_counts_nodes_being_deleted():
    group = FakeGroup("g", min_size=1)
    cloud = FakeCloud()
    cloud.add(group, "a", "b", "c")
    nodes = [node("a"), node("b"), node("c")]
    plan = plan_for(nodes, [], cloud=cloud, being_deleted={"c"})
    assert plan.candidate_set == ["a"]
    assert plan.nodes["b"].reason is NodeReason.NODE_GROUP_MIN_SIZE_REACHED
    assert plan.nodes["c"].status == "being_deleted"
    assert plan.nodes["c"].reason is NodeReason.CURRENTLY_BEING_DELETED


def test_cluster_minimum_resources_limit_the_candidate_set():
    nodes = [node("a"), node("b"), node("c")]  # one core each
    planner = Planner(
        AutoscalerOptions(cores_total=ResourceRange(2, 100)), timer=WorkTimer(1e-3), timers_expired=True
    )
    plan = plan_for(nodes, [], planner)
    assert plan.candidate_set == ["a"]
    assert plan.nodes["b"].reason is NodeReason.MINIMAL_RESOURCE_LIMIT_EXCEEDED


def test_footnote_reasons_each_reported():
    cloud = cloud_for("deleting", "annotated", "busy", "low", "dest")
    nodes = [
        node("deleting"),
        node("unmanaged"),
        node("annotated", annotations=BUSY),
        node("busy"),
        node("low"),
        node("dest"),
    ]
    pods = [
        pod("p1", "busy", 800),
        pod("p2", "low", 200),
        pod("p3", "dest", 300),
        pod("p4", "annotated", 100),
    ]
    plan = plan_for(nodes, pods, cloud=cloud, being_deleted={"deleting"})
    reasons = {name: s.reason for name, s in plan.nodes.items()}
    assert reasons == {
        "deleting": NodeReason.CURRENTLY_BEING_DELETED,
        "unmanaged": NodeReason.NOT_AUTOSCALED,
        "annotated": NodeReason.SCALE_DOWN_DISABLED_ANNOTATION,
        "busy": NodeReason.NOT_UNDERUTILIZED,
        "low": None,
        "dest": None,  # took low's pod, and both its pods fit elsewhere (as CA allows)
    }
    assert plan.destinations == {"default/p2": "unmanaged", "default/p3": "unmanaged"}


def test_deleted_nodes_are_revalidated_and_their_pods_take_room_first():
    nodes = [node("x"), node("a"), node("d", annotations=BUSY)]
    pods = [pod("px", "x", 500), pod("pa", "a", 400), pod("pd", "d", 400)]
    plan = plan_for(nodes, pods, being_deleted={"x"})
    # px takes d's room (or a's) first, so a is not removable any more.
    assert plan.validation_failure is None
    assert plan.candidate_set == []
    assert plan.destinations["default/px"] == "d"


def test_revalidation_failure_stops_new_candidates():
    nodes = [node("x", cpu=2000), node("empty"), node("d", annotations=BUSY)]
    pods = [pod("px", "x", 1500), pod("pd", "d", 400)]
    planner = Planner(OPTS, timer=WorkTimer(1e-3), timers_expired=True)
    plan = plan_for(nodes, pods, planner, being_deleted={"x"})
    # px (1500 m) fits nowhere: "empty" would be removable, but not this loop.
    assert plan.validation_failure is not None and "default/px" in plan.validation_failure
    assert plan.candidate_set == [] and plan.removable_now() == []
    assert plan.nodes["empty"].reason is NodeReason.NOT_UNNEEDED_OTHER_REASON
    assert any("no new scale-down candidates" in line for line in plan.summary())


def test_nodes_tainted_by_someone_count_as_being_deleted():
    tainted = node("t", taints=[Taint(TO_BE_DELETED_TAINT, "0", "NoSchedule")])
    plan = plan_for([tainted, node("d", annotations=BUSY)], [pod("pt", "t", 100)])
    assert plan.nodes["t"].status == "being_deleted"
    assert plan.destinations == {"default/pt": "d"}


def test_recent_evictions_are_injected_until_the_owner_has_its_replicas():
    nodes = [node("a"), node("d", annotations=BUSY)]
    pods = [pod("pa", "a", 400), pod("pd", "d", 300)]
    evicted = pod("gone", "old-node", 400)
    planner = Planner(
        OPTS.with_values(unremovable_node_recheck_timeout=0), timer=WorkTimer(1e-3), timers_expired=True
    )
    planner.record_eviction(evicted, now=0)
    # The ReplicaSet wants 3 and has 2: the evicted pod is injected and takes d's room.
    plan = plan_for(nodes, pods, planner, now=10, workloads=[workload("ReplicaSet", "rs", 3)])
    assert plan.injected == {"default/gone": "d"}
    assert plan.candidate_set == []
    # Its replacement exists now (3 of 3): nothing to inject, a can go.
    plan = plan_for(
        nodes, [*pods, pod("new", "d", 0)], planner, now=20, workloads=[workload("ReplicaSet", "rs", 3)]
    )
    assert plan.injected == {}
    assert plan.candidate_set == ["a"]


def test_at_most_target_minus_current_per_owner():
    planner = Planner(OPTS, timer=WorkTimer(1e-3), timers_expired=True)
    for name in ("e1", "e2", "e3"):
        planner.record_eviction(pod(name, "old", 100), now=0)
    nodes = [node("d", annotations=BUSY)]
    plan = plan_for(nodes, [pod("p", "d", 100)], planner, now=1, workloads=[workload("ReplicaSet", "rs", 3)])
    assert sorted(plan.injected) == ["default/e1", "default/e2"]


def test_pods_without_a_known_owner_are_always_injected_and_expire_with_the_ttl():
    planner = Planner(OPTS.with_values(recent_evictions_ttl=60), timer=WorkTimer(1e-3), timers_expired=True)
    planner.record_eviction(pod("bare", "old", 100, owner=None), now=0)
    nodes = [node("d", annotations=BUSY)]
    assert plan_for(nodes, [], planner, now=59).injected == {"default/bare": "d"}
    assert plan_for(nodes, [], planner, now=60).injected == {}
    assert len(planner.recent_evictions) == 0


def test_an_injected_pod_that_fits_nowhere_stops_new_candidates():
    planner = Planner(OPTS, timer=WorkTimer(1e-3), timers_expired=True)
    planner.record_eviction(pod("huge", "old", 2000, owner=None), now=0)
    plan = plan_for([node("a"), node("b")], [], planner, now=1)
    assert "default/huge" in plan.validation_failure
    assert plan.candidate_set == []


def test_unneeded_timer_runs_and_resets_when_the_node_leaves_the_set():
    o = OPTS.with_values(scale_down_unneeded_time=600)
    planner = Planner(o, timer=WorkTimer(1e-3))
    nodes = [node("a"), node("d", annotations=BUSY)]
    pods = [pod("pa", "a", 100)]
    assert plan_for(nodes, pods, planner, now=0).nodes["a"].reason is NodeReason.NOT_UNNEEDED_LONG_ENOUGH
    assert plan_for(nodes, pods, planner, now=599).removable_now() == []
    assert plan_for(nodes, pods, planner, now=600).drain_to_delete == ["a"]
    # A pod that blocks arrives: a leaves the set; when it goes again the timer starts over.
    blocked = plan_for(nodes, [*pods, pod("bare", "a", 100, owner=None)], planner, now=700)
    assert blocked.candidate_set == [] and "a" not in planner.unneeded_since
    back = plan_for(nodes, pods, planner, now=1000 + o.unremovable_node_recheck_timeout)
    assert back.candidate_set == ["a"] and back.removable_now() == []
    assert planner.unneeded_since["a"] == 1000 + o.unremovable_node_recheck_timeout


def test_unready_nodes_use_the_unready_time():
    o = OPTS.with_values(scale_down_unneeded_time=600, scale_down_unready_time=1200)
    planner = Planner(o, timer=WorkTimer(1e-3))
    nodes = [node("a", ready=False), node("d", annotations=BUSY)]
    plan_for(nodes, [pod("pa", "a", 100)], planner, now=0)
    late = plan_for(nodes, [pod("pa", "a", 100)], planner, now=900)
    assert late.nodes["a"].reason is NodeReason.NOT_UNREADY_LONG_ENOUGH
    assert plan_for(nodes, [pod("pa", "a", 100)], planner, now=1200).drain_to_delete == ["a"]


def test_failed_simulations_are_rechecked_after_the_timeout():
    o = OPTS.with_values(unremovable_node_recheck_timeout=300)
    planner = Planner(o, timer=WorkTimer(1e-3), timers_expired=True)
    nodes = [node("a"), node("d", annotations=BUSY)]
    pods = [pod("pa", "a", 400), pod("pd", "d", 700)]
    assert plan_for(nodes, pods, planner, now=0).nodes["a"].reason is NodeReason.NO_PLACE_TO_MOVE_PODS
    # Room appears on d, but a is not simulated again before the recheck timeout.
    roomy = [pod("pa", "a", 400), pod("pd", "d", 100)]
    recent = plan_for(nodes, roomy, planner, now=299)
    assert recent.nodes["a"].reason is NodeReason.RECENTLY_UNREMOVABLE
    assert "NoPlaceToMovePods" in recent.nodes["a"].detail
    assert recent.simulated == 0
    assert plan_for(nodes, roomy, planner, now=300).candidate_set == ["a"]


def test_pauses_after_scale_up_deletion_and_failure():
    o = OPTS.with_values(
        scale_down_delay_after_add=600, scale_down_delay_after_delete=60, scale_down_delay_after_failure=180
    )
    nodes = [node("a"), node("d", annotations=BUSY)]
    pods = [pod("pa", "a", 100)]
    for note, delay in (("note_scale_up", 600), ("note_deletion", 60), ("note_failure", 180)):
        planner = Planner(o, timer=WorkTimer(1e-3), timers_expired=True)
        getattr(planner, note)(1000)
        paused = plan_for(nodes, pods, planner, now=1000 + delay - 1)
        assert paused.candidate_set == ["a"] and paused.removable_now() == []
        assert paused.cooldown is not None
        assert plan_for(nodes, pods, planner, now=1000 + delay).drain_to_delete == ["a"]


def test_simulation_stops_at_the_time_budget():
    # One reading per node considered, 1 s each: a 2 s budget simulates exactly two nodes.
    planner = Planner(
        OPTS.with_values(scale_down_simulation_timeout=2), timer=WorkTimer(1), timers_expired=True
    )
    nodes = [node(f"n{i}") for i in range(5)]
    plan = plan_for(nodes, [], planner)
    assert plan.timed_out
    assert plan.simulated == 2 and len(plan.candidate_set) == 2
    skipped = [s for s in plan.nodes.values() if s.status == "unremovable"]
    assert skipped and all("timeout" in s.detail for s in skipped)


def test_expendable_pods_neither_block_nor_take_room():
    nodes = [node("a"), node("d", annotations=BUSY)]
    pods = [
        pod("low", "a", 100, owner=None, priority=-100),
        pod("pa", "a", 300),
        pod("filler", "d", 900, priority=-100),
    ]
    plan = plan_for(nodes, pods)
    assert plan.candidate_set == ["a"]
    assert plan.destinations == {"default/pa": "d"}


def test_resumed_nodes_go_first_with_their_timers_run_out():
    tainted = node("t", taints=[Taint(TO_BE_DELETED_TAINT, "0", "NoSchedule")])
    planner = Planner(OPTS, timer=WorkTimer(1e-3))
    plan = plan_for([tainted, node("d", annotations=BUSY)], [pod("pt", "t", 100)], planner, resume={"t"})
    assert plan.candidate_set == ["t"] and plan.drain_to_delete == ["t"]


def test_plan_json_has_the_documented_shape():
    nodes = [node("a"), node("b", annotations=BUSY)]
    plan = plan_for(nodes, [pod("pa", "a", 300)])
    doc = json.loads(json.dumps(plan.to_json()))
    assert doc == {
        "nodes": {
            "a": {
                "status": "removable",
                "empty": False,
                "utilization": 0.3,
                "reason": None,
                "blocking_pod": None,
                "blocking_pods": [],
                # default grace 30 s + node-delete-delay-after-taint 5 s, one wave
                "estimated_drain_seconds": 35.0,
                "drain_estimate": {
                    "waves": 1,
                    "wave_seconds": 40.0,
                    "grace_seconds": 30.0,
                    "replacement_ready_seconds": 30.0,
                    "replacement_ready_from": "default",
                },
                "unblock": None,
            },
            "b": {
                "status": "unremovable",
                "empty": True,
                "utilization": 0.0,
                "reason": "ScaleDownDisabledAnnotation",
                "blocking_pod": None,
                "blocking_pods": [],
                "estimated_drain_seconds": None,
                "drain_estimate": None,
                "unblock": None,
            },
        },
        "candidate_set": ["a"],
        "risky": [],
        "waiting_for_budget": [],
        "surge_before_evict": {},
        "to_delete": {"empty": [], "drain": ["a"]},
        "destinations": {"default/pa": "b"},
    }
    assert plan.explain("a") == "a: removable, utilization 0.30"


def test_plan_json_can_show_what_the_budgets_let_start():
    from kubetide.autoscaler.scaledown.planning.budgets import crop

    nodes = [node("a"), node("b"), node("c"), node("d", annotations=BUSY)]
    plan = plan_for(nodes, [pod("pa", "a", 100)])
    assert plan.to_json()["to_delete"] == {"empty": ["b", "c"], "drain": ["a"]}
    budget = crop(plan.empty_to_delete, plan.drain_to_delete, OPTS.with_values(max_scale_down_parallelism=2))
    assert plan.to_json(budget)["to_delete"] == {"empty": ["b", "c"], "drain": []}


def test_scale_down_disabled_plans_but_removes_nothing():
    planner = Planner(OPTS.with_values(scale_down_enabled=False), timer=WorkTimer(1e-3), timers_expired=True)
    plan = plan_for([node("a"), node("d", annotations=BUSY)], [], planner)
    assert plan.candidate_set == ["a"] and plan.removable_now() == []
    assert "scale-down-enabled" in plan.cooldown


def test_clear_forgets_unneeded_nodes():
    planner = Planner(OPTS, timer=WorkTimer(1e-3))
    plan_for([node("a"), node("d", annotations=BUSY)], [], planner, now=0)
    assert planner.unneeded_since == {"a": 0}
    planner.clear()
    plan_for([node("a"), node("d", annotations=BUSY)], [], planner, now=500)
    assert planner.unneeded_since == {"a": 500}


def test_an_error_mid_simulation_still_leaves_the_snapshot_as_found():
    class Broken(FakeCloud):
        def node_groups(self):
            raise RuntimeError("cloud API down")

    nodes = [node("a"), node("d", annotations=BUSY)]
    s = snapshot_of(nodes, [pod("pa", "a", 100), pod("low", "a", 10, priority=-100)])
    cloud = Broken()
    cloud.add(FakeGroup("g"), "a", "d")
    before = state(s)
    with pytest.raises(RuntimeError):
        Planner(OPTS, timer=WorkTimer(1e-3)).update(LoopInputs(0, s), cloud=cloud)
    assert state(s) == before and s.depth == 0

    class Exploding:  # fails inside a node's own fork, with a pod already taken off its node
        def fits(self, pod, node_name):
            raise RuntimeError("checker bug")

        find_node = fits

    s = snapshot_of(nodes, [pod("pa", "a", 100)])
    before = state(s)
    with pytest.raises(RuntimeError):
        Planner(OPTS, timer=WorkTimer(1e-3)).update(
            LoopInputs(0, s), cloud=cloud_for("a", "d"), checker=Exploding()
        )
    assert state(s) == before and s.depth == 0


# -- the per-node caches (keyed by the snapshot's change stamps) must never serve a stale answer --


def update_on(planner, s, cloud, now=0.0, **kw):
    """One update on a snapshot and cloud kept across loops (what the loop does; a new cloud
    would mean new node groups, which the caches rightly do not trust), left as found."""
    kw.setdefault("workloads", RS)
    before = state(s)
    plan = planner.update(LoopInputs(now, s, **kw), cloud=cloud)
    assert state(s) == before, "the snapshot must be left as found"
    return plan


def test_cached_utilization_follows_pods_added_and_removed():
    s = snapshot_of([node("a"), node("d", annotations=BUSY)], [pod("pa", "a", 600)])
    planner = Planner(OPTS, timer=WorkTimer(1e-3), timers_expired=True)
    cloud = cloud_for("a", "d")
    busy = update_on(planner, s, cloud).nodes["a"]
    assert (busy.reason, busy.utilization) == (NodeReason.NOT_UNDERUTILIZED, 0.6)

    def cached():
        return planner._checked.get("a", s.stamp("a"), cloud.node_group_for(s.node("a")))

    entry = cached()
    assert entry is not None
    assert update_on(planner, s, cloud).nodes["a"].utilization == 0.6
    assert cached() is entry  # served from the cache: nothing changed
    s.add_pod(pod("more", "a", 300), "a")
    assert update_on(planner, s, cloud).nodes["a"].utilization == 0.9
    s.remove_pod("uid-default-pa")
    plan = update_on(planner, s, cloud)
    assert plan.candidate_set == ["a"] and plan.nodes["a"].utilization == 0.3


def test_a_revert_leaves_no_stale_cache_entry():
    s = snapshot_of([node("a"), node("d", annotations=BUSY)], [pod("pa", "a", 100)])
    planner = Planner(OPTS, timer=WorkTimer(1e-3), timers_expired=True)
    cloud = cloud_for("a", "d")
    s.fork()  # someone's what-if makes a busy, and the planner looks at it then
    s.add_pod(pod("big", "a", 800), "a")
    assert update_on(planner, s, cloud).nodes["a"].reason is NodeReason.NOT_UNDERUTILIZED
    s.revert()  # same pods as before the fork, but a new stamp: recomputed
    assert update_on(planner, s, cloud).candidate_set == ["a"]
    # And the other way round: cached as removable, then a pod arrives inside a fork.
    s.fork()
    s.add_pod(pod("big", "a", 800), "a")
    assert update_on(planner, s, cloud).nodes["a"].reason is NodeReason.NOT_UNDERUTILIZED
    s.revert()


def test_a_replaced_node_is_checked_again():
    s = snapshot_of([node("a"), node("d", annotations=BUSY)], [pod("pa", "a", 100)])
    planner = Planner(OPTS, timer=WorkTimer(1e-3), timers_expired=True)
    cloud = cloud_for("a", "d")
    assert update_on(planner, s, cloud).candidate_set == ["a"]
    s.replace_node(node("a", annotations=BUSY))
    assert update_on(planner, s, cloud).nodes["a"].reason is NodeReason.SCALE_DOWN_DISABLED_ANNOTATION
    s.replace_node(node("a", taints=[Taint(TO_BE_DELETED_TAINT, "0", "NoSchedule")]))
    assert update_on(planner, s, cloud).nodes["a"].status == "being_deleted"
    s.replace_node(node("a"))
    assert update_on(planner, s, cloud).candidate_set == ["a"]


def test_a_node_leaving_its_group_is_seen_without_a_snapshot_change():
    s = snapshot_of([node("a"), node("d", annotations=BUSY)], [pod("pa", "a", 100)])
    cloud = cloud_for("a", "d")
    planner = Planner(OPTS, timer=WorkTimer(1e-3), timers_expired=True)
    assert update_on(planner, s, cloud).candidate_set == ["a"]
    cloud.groups["g"].members.remove("a")
    assert update_on(planner, s, cloud).nodes["a"].reason is NodeReason.NOT_AUTOSCALED
    cloud.groups["g"].members.append("a")
    assert update_on(planner, s, cloud).candidate_set == ["a"]


def test_long_terminating_pods_leave_utilization_as_time_passes():
    # A pod deleted at t=0 with 30 s grace stops counting once 60 s have passed (grace + 30 s),
    # with no change to the snapshot in between.
    s = snapshot_of(
        [node("a"), node("d", annotations=BUSY)], [pod("pa", "a", 100), pod("old", "a", 800, deleted=0.0)]
    )
    planner = Planner(OPTS, timer=WorkTimer(1e-3), timers_expired=True)
    cloud = cloud_for("a", "d")
    assert update_on(planner, s, cloud, now=10).nodes["a"].reason is NodeReason.NOT_UNDERUTILIZED
    assert update_on(planner, s, cloud, now=59).nodes["a"].reason is NodeReason.NOT_UNDERUTILIZED
    late = update_on(planner, s, cloud, now=61)
    assert late.nodes["a"].utilization == 0.1


def test_per_loop_flags_are_never_served_from_the_cache():
    o = OPTS.with_values(unremovable_node_recheck_timeout=300)
    s = snapshot_of([node("a"), node("d", annotations=BUSY)], [pod("pa", "a", 400), pod("pd", "d", 700)])
    planner = Planner(o, timer=WorkTimer(1e-3), timers_expired=True)
    cloud = cloud_for("a", "d")
    assert update_on(planner, s, cloud, now=0).nodes["a"].reason is NodeReason.NO_PLACE_TO_MOVE_PODS
    assert update_on(planner, s, cloud, now=299).nodes["a"].reason is NodeReason.RECENTLY_UNREMOVABLE
    s.remove_pod("uid-default-pd")
    assert update_on(planner, s, cloud, now=299).nodes["a"].reason is NodeReason.RECENTLY_UNREMOVABLE
    assert update_on(planner, s, cloud, now=300).candidate_set == ["a"]
    assert update_on(planner, s, cloud, now=310, being_deleted={"a"}).nodes["a"].status == "being_deleted"
    assert update_on(planner, s, cloud, now=320).candidate_set == ["a"]


def test_expendable_pods_are_tracked_as_they_come_and_go():
    s = snapshot_of([node("a"), node("d", annotations=BUSY)], [pod("pa", "a", 300), pod("pd", "d", 700)])
    planner = Planner(OPTS, timer=WorkTimer(1e-3), timers_expired=True)
    cloud = cloud_for("a", "d")
    assert update_on(planner, s, cloud).candidate_set == ["a"]
    s.add_pod(pod("filler", "d", 200), "d")  # d is full: a's pod has nowhere to go
    assert update_on(planner, s, cloud).nodes["a"].reason is NodeReason.NO_PLACE_TO_MOVE_PODS
    planner.unremovable.clear()  # simulate a again at once
    s.update_pod(pod("filler", "d", 200, priority=-100))  # now expendable: its room counts as free
    assert update_on(planner, s, cloud).candidate_set == ["a"]
    s.update_pod(pod("filler", "d", 200))
    planner.unremovable.clear()
    assert update_on(planner, s, cloud).nodes["a"].reason is NodeReason.NO_PLACE_TO_MOVE_PODS


def test_new_options_drop_the_caches():
    s = snapshot_of([node("a"), node("d", annotations=BUSY)], [pod("pa", "a", 300)])
    planner = Planner(OPTS, timer=WorkTimer(1e-3), timers_expired=True)
    cloud = cloud_for("a", "d")
    assert update_on(planner, s, cloud).candidate_set == ["a"]
    planner.options = OPTS.with_values(scale_down_utilization_threshold=0.2)
    assert update_on(planner, s, cloud).nodes["a"].reason is NodeReason.NOT_UNDERUTILIZED


def test_owner_counts_for_recent_evictions_follow_the_snapshot():
    # The owner check counts bound, not-terminating pods per node, cached under node stamps.
    s = snapshot_of([node("a"), node("d", annotations=BUSY)], [pod("pa", "a", 400), pod("pd", "d", 300)])
    cloud = cloud_for("a", "d")
    rs = [workload("ReplicaSet", "rs", 3)]
    planner = Planner(
        OPTS.with_values(unremovable_node_recheck_timeout=0), timer=WorkTimer(1e-3), timers_expired=True
    )
    planner.record_eviction(pod("gone", "old-node", 400), now=0)
    assert update_on(planner, s, cloud, now=10, workloads=rs).injected == {"default/gone": "d"}
    s.add_pod(pod("new", "d", 0), "d")  # the replacement: 3 of 3
    assert update_on(planner, s, cloud, now=20, workloads=rs).injected == {}
    s.update_pod(pod("new", "d", 0, deleted=15.0))  # terminating: 2 of 3 again
    assert update_on(planner, s, cloud, now=30, workloads=rs).injected == {"default/gone": "d"}
    s.fork()
    s.update_pod(pod("new", "d", 0))
    assert update_on(planner, s, cloud, now=40, workloads=rs).injected == {}
    s.revert()  # back to terminating
    assert update_on(planner, s, cloud, now=50, workloads=rs).injected == {"default/gone": "d"}


@pytest.mark.parametrize(
    "blocker, pdbs, pod_reason",
    [
        (
            pod("own", "d", 200, annotations={SAFE_TO_EVICT: "false"}),
            [],
            PodReason.NOT_SAFE_TO_EVICT_ANNOTATION,
        ),
        (pod("own", "d", 200, owner=None), [], PodReason.NOT_REPLICATED),
        (
            pod("own", "d", 200, labels={"app": "guarded"}),
            [pdb("g", "guarded", allowed=0)],
            PodReason.NOT_ENOUGH_PDB,
        ),
        # a's pod spends the budget first; d's own pod then has none left
        (
            pod("own", "d", 200, labels={"app": "shared"}),
            [pdb("s", "shared", allowed=1)],
            PodReason.NOT_ENOUGH_PDB,
        ),
    ],
    ids=["safe-to-evict false", "bare pod", "no PDB budget", "PDB budget spent by a"],
)
def test_a_destination_blocked_by_its_own_pod_reports_that_pod(blocker, pdbs, pod_reason):
    """Issue 17: the most useful reason is the node's own blocking pod, not "destination for
    pods of a" (a's pod lands on d: the pod search starts at the last node)."""
    nodes = [node("a"), node("sink", cpu=4000, annotations=BUSY), node("d")]
    pods = [pod("pa", "a", 100, labels={"app": "shared"}), blocker]
    plan = plan_for(nodes, pods, pdbs=pdbs)
    assert plan.candidate_set == ["a"] and plan.destinations == {"default/pa": "d"}
    d = plan.nodes["d"]
    assert (d.reason, d.blocking_pod.pod.key, d.blocking_pod.reason) == (
        NodeReason.BLOCKED_BY_POD,
        "default/own",
        pod_reason,
    )
    assert "destination" not in d.explain()


def nominated(name, node_name, cpu):
    """A pending pod the scheduler nominated to `node_name` (after preempting pods there)."""
    return dataclasses.replace(
        pod(name, "", cpu, phase="Pending", ready=False), nominated_node_name=node_name
    )


def test_a_pod_nominated_to_a_node_counts_in_its_utilization():
    nodes = [node("a"), node("sink", cpu=4000, annotations=BUSY)]
    plan = plan_for(nodes, [pod("pa", "a", 100)], pending=[nominated("waiting", "a", 600)])
    a = plan.nodes["a"]
    assert (a.reason, round(a.utilization, 2)) == (NodeReason.NOT_UNDERUTILIZED, 0.7)


def test_a_pod_nominated_to_a_destination_takes_its_room():
    nodes = [node("a"), node("d", annotations=BUSY)]
    pods = [pod("pa", "a", 300), pod("pd", "d", 400)]
    assert plan_for(nodes, pods).candidate_set == ["a"]
    plan = plan_for(nodes, pods, pending=[nominated("waiting", "d", 400)])
    assert plan.candidate_set == []
    assert plan.nodes["a"].reason is NodeReason.NO_PLACE_TO_MOVE_PODS


def test_a_pod_nominated_to_a_candidate_moves_with_its_drain():
    nodes = [node("a"), node("sink", cpu=4000, annotations=BUSY)]
    plan = plan_for(nodes, [pod("pa", "a", 100)], pending=[nominated("waiting", "a", 200)])
    assert plan.candidate_set == ["a"]
    assert plan.destinations == {"default/pa": "sink", "default/waiting": "sink"}


def test_nominations_to_unknown_nodes_and_of_expendable_pods_are_ignored():
    nodes = [node("a"), node("sink", cpu=4000, annotations=BUSY)]
    expendable = dataclasses.replace(nominated("cheap", "a", 900), priority=-100)
    plan = plan_for(nodes, [pod("pa", "a", 100)], pending=[nominated("lost", "gone", 900), expendable])
    assert plan.candidate_set == ["a"]
