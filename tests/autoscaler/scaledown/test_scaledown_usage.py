"""Scale-down with a usage source: destinations stay under their QoS watermarks (issue 18 item 3),
and the candidate search's pre-check and far-end filling (issue 17's regression)."""

from __future__ import annotations

import pytest
from scaledown_fakes import cloud_for, node, pod, snapshot_of, state, workload

from kubetide.autoscaler.inputs import LoopInputs
from kubetide.autoscaler.options import AutoscalerOptions
from kubetide.autoscaler.ports import UsageCeiling, UsageSample
from kubetide.autoscaler.scaledown.planning import placement
from kubetide.autoscaler.scaledown.planning.eligibility import SCALE_DOWN_DISABLED_ANNOTATION
from kubetide.autoscaler.scaledown.planning.planner import Planner
from kubetide.autoscaler.scaledown.reasons import NodeReason
from kubetide.cli.plan_words import node_detail
from kubetide.clock import WorkTimer

OPTS = AutoscalerOptions()
BUSY = {SCALE_DOWN_DISABLED_ANNOTATION: "true"}
WORKLOADS = [workload("ReplicaSet", name, 100) for name in ("batch", "web", "rs")]
CEILING = UsageCeiling("cpu", 800, "NodeQOS workers rule cpu-80: cpu_total_utilization above 80%")


def cluster():
    """`a` (400m requested by a batch pod) could move onto `busy` (500m requested): it fits by
    requests, but at its peak the batch pod uses 600m, and busy's web pod 300m."""
    nodes = [node("a"), node("busy", annotations=BUSY)]
    pods = [
        pod("batch-1", "a", 400, owner=("ReplicaSet", "batch")),
        pod("web-1", "busy", 500, owner=("ReplicaSet", "web")),
    ]
    return nodes, pods


def sample(batch: int, web: int = 300, ceilings=None, nodes=None) -> UsageSample:
    return UsageSample(
        pods={"uid-default-batch-1": {"cpu": batch}, "uid-default-web-1": {"cpu": web}},
        nodes=nodes or {},
        ceilings={"busy": (CEILING,)} if ceilings is None else ceilings,
    )


def plan(planner, usage, now=0.0, nodes_pods=None):
    nodes, pods = nodes_pods or cluster()
    s = snapshot_of(nodes, pods)
    before = state(s)
    result = planner.update(
        LoopInputs(now, s, workloads=WORKLOADS, usage=usage), cloud=cloud_for("a", "busy")
    )
    assert state(s) == before
    return result


def planner(options=OPTS):
    return Planner(options, timer=WorkTimer(1e-3), timers_expired=True)


def test_without_usage_the_node_is_packed_by_requests():
    assert plan(planner(), None).candidate_set == ["a"]


def test_a_destination_its_usage_would_push_over_the_watermark_is_refused():
    result = plan(planner(), sample(batch=600))
    assert result.candidate_set == []
    a = result.nodes["a"]
    assert a.reason is NodeReason.NO_PLACE_TO_MOVE_PODS_BELOW_QOS_WATERMARK
    assert "default/batch-1" in a.detail and "busy" in a.detail and "cpu usage 900m > 800m" in a.detail
    assert "NodeQOS workers rule cpu-80" in a.detail


def test_kubetide_plan_explains_the_reason():
    status = plan(planner(), sample(batch=600)).nodes["a"]
    why = node_detail(status, None, OPTS)
    assert why.startswith(status.detail)
    assert "NodeQOS" in why and "scale-down-respect-qos-watermarks=false" in why


def test_under_the_watermark_the_move_is_allowed():
    # 300m + 500m = 800m: the agent acts strictly above its watermark.
    assert plan(planner(), sample(batch=500)).candidate_set == ["a"]


def test_a_quiet_sample_does_not_hide_the_last_spike():
    p = planner()
    assert plan(p, sample(batch=600), now=0.0).candidate_set == []
    assert plan(p, sample(batch=100), now=600.0).candidate_set == []  # the peak is remembered
    # Once the spike is older than scale-down-usage-window, the quiet usage counts.
    assert plan(p, sample(batch=100), now=600.0 + OPTS.scale_down_usage_window).candidate_set == ["a"]


def test_a_replacement_pod_inherits_its_workloads_peak():
    p = planner()
    plan(p, sample(batch=600), now=0.0)
    nodes, pods = cluster()
    pods[0] = pod("batch-2", "a", 400, owner=("ReplicaSet", "batch"))  # new UID, same controller
    quiet = UsageSample({"uid-default-batch-2": {"cpu": 100}}, {}, {"busy": (CEILING,)})
    assert plan(p, quiet, now=10.0, nodes_pods=(nodes, pods)).candidate_set == []


def test_a_pod_never_measured_counts_at_its_request():
    no_metrics = UsageSample({}, {}, {"busy": (CEILING,)})
    # busy: web 500m (request) + batch 400m (request) = 900m > 800m
    assert (
        plan(planner(), no_metrics).nodes["a"].reason is NodeReason.NO_PLACE_TO_MOVE_PODS_BELOW_QOS_WATERMARK
    )


def test_node_usage_beyond_its_pods_counts():
    # 450m on busy beyond its pods (system daemons): 450 + 300 + 100 > 800.
    overhead = sample(batch=100, nodes={"busy": {"cpu": 750}})
    assert plan(planner(), overhead).candidate_set == []
    assert plan(planner(), sample(batch=100)).candidate_set == ["a"]


def test_nodes_without_ceilings_are_not_guarded():
    assert plan(planner(), sample(batch=600, ceilings={})).candidate_set == ["a"]


def test_the_guard_can_be_turned_off():
    off = OPTS.with_values(scale_down_respect_qos_watermarks=False)
    assert plan(planner(off), sample(batch=600)).candidate_set == ["a"]


def test_a_node_that_fits_nowhere_by_requests_keeps_the_old_reason():
    nodes = [node("a"), node("busy", annotations=BUSY)]
    pods = [
        pod("batch-1", "a", 450, owner=("ReplicaSet", "batch")),
        pod("web-1", "busy", 600, owner=("ReplicaSet", "web")),
    ]
    result = plan(planner(), sample(batch=600), nodes_pods=(nodes, pods))
    assert result.nodes["a"].reason is NodeReason.NO_PLACE_TO_MOVE_PODS


def test_a_failed_candidate_gives_its_usage_room_back():
    """`a` fails (its second pod has no room), so what its first pod took on `d` in the
    simulation must be free again for `b`, whose pod needs exactly that room under the ceiling."""
    nodes = [node("a"), node("b"), node("d", annotations=BUSY)]
    pods = [
        pod("a-big", "a", 700, owner=("ReplicaSet", "batch")),
        pod("a-small", "a", 200, owner=("ReplicaSet", "web")),
        pod("b-1", "b", 300, owner=("ReplicaSet", "web")),
        pod("d-1", "d", 100, owner=("ReplicaSet", "other")),
    ]
    usage = UsageSample(
        {"uid-default-a-big": {"cpu": 700}, "uid-default-a-small": {"cpu": 200}},
        {},
        {"d": (UsageCeiling("cpu", 800, "test"),), "b": (UsageCeiling("cpu", 800, "test"),)},
    )
    s = snapshot_of(nodes, pods)
    result = Planner(OPTS, timer=WorkTimer(1e-3), timers_expired=True).update(
        LoopInputs(0.0, s, workloads=WORKLOADS, usage=usage), cloud=cloud_for("a", "b", "d")
    )
    assert "a" not in result.candidate_set
    assert "b" in result.candidate_set


# -- the pre-check and far-end filling (issue 17) ------------------------------------------------


def test_a_node_whose_pods_exceed_all_free_room_is_not_simulated():
    nodes = [node("a"), node("b"), node("full", annotations=BUSY)]
    pods = [pod("pa", "a", 600), pod("pb", "b", 600), pod("pf", "full", 900)]
    s = snapshot_of(nodes, pods)
    options = OPTS.with_values(scale_down_utilization_threshold=0.7)
    result = planner(options).update(
        LoopInputs(0.0, s, workloads=WORKLOADS), cloud=cloud_for("a", "b", "full")
    )
    assert result.candidate_set == []
    assert result.simulated == 0  # 600m each, 400m + 100m free elsewhere
    assert "600m cpu" in result.nodes["a"].detail and "default/pa" in result.nodes["a"].detail


@pytest.mark.parametrize("count", [10, 30])
def test_destinations_fill_from_the_far_end_so_no_pod_moves_twice(monkeypatch, count):
    """Uniform nodes at 40%: candidates come from the front, destinations from the back. A
    forward scan wrapped onto the next candidates, which then carried their received pods on."""
    nodes = [node(f"n{i:02d}") for i in range(count)]
    pods = [pod(f"p{i}-{j}", f"n{i:02d}", 100) for i in range(count) for j in range(4)]
    moves = []
    real = placement.PodMover.move

    def counted(self, uid, *args, **kw):
        moves.append(uid)
        return real(self, uid, *args, **kw)

    monkeypatch.setattr(placement.PodMover, "move", counted)
    s = snapshot_of(nodes, pods)
    result = planner().update(
        LoopInputs(0.0, s, workloads=WORKLOADS), cloud=cloud_for(*[n.name for n in nodes])
    )
    assert len(result.candidate_set) == count * 6 // 10
    assert len(moves) == len(set(moves)) == 4 * len(result.candidate_set)
