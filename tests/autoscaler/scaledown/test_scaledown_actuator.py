"""Budgets, StartDeletion and the per-node deletion state machine, soft taints, restart safety."""

import dataclasses
import math

import pytest
from scaledown_fakes import DeletionWorld, FakeActions, node, pod, workload

from kubetide.autoscaler.inputs import LoopInputs
from kubetide.autoscaler.options import AutoscalerOptions
from kubetide.autoscaler.ports import DELETION_CANDIDATE_TAINT, TO_BE_DELETED_TAINT, EvictionOutcome
from kubetide.autoscaler.scaledown.actuation.actuator import DELAY_DELETION_PREFIX, Phase
from kubetide.autoscaler.scaledown.actuation.restart import recover
from kubetide.autoscaler.scaledown.actuation.softtaint import SoftTaintMemo, update_soft_taints
from kubetide.autoscaler.scaledown.planning.budgets import crop
from kubetide.autoscaler.scaledown.planning.eligibility import SCALE_DOWN_DISABLED_ANNOTATION
from kubetide.clock import WorkTimer
from kubetide.model import Taint

BLOCKED = EvictionOutcome.BLOCKED_BY_PDB
RS = [workload("ReplicaSet", "rs", 100)]
KEEP = {SCALE_DOWN_DISABLED_ANNOTATION: "true"}


# -- budgets --------------------------------------------------------------------------------------
def opts(**kw):
    return AutoscalerOptions().with_values(**kw)


def test_empty_nodes_first_then_drains_within_both_budgets():
    d = crop(["e1", "e2"], ["d1", "d2", "d3"], opts(max_scale_down_parallelism=4, max_drain_parallelism=3))
    assert (d.empty, d.drain, d.left_out, d.throttled) == (["e1", "e2"], ["d1", "d2"], ["d3"], True)


def test_deletions_in_progress_count_against_both_budgets():
    o = opts(max_scale_down_parallelism=5, max_drain_parallelism=2)
    d = crop(["e1"], ["d1", "d2"], o, empty_in_progress=1, drain_in_progress=1)
    assert (d.empty, d.drain) == (["e1"], ["d1"])
    # d2 waits for max-drain-parallelism alone: the overall budget still has room.
    assert d.left_out == ["d2"] and d.throttled and d.drain_only


@pytest.mark.parametrize(
    ("empty", "drain", "parallelism", "drain_parallelism", "in_progress", "throttled", "drain_only"),
    [
        # (removable empty, removable drain, max-scale-down-parallelism, max-drain-parallelism,
        #  (empty, drain) in progress, ScaleDownThrottled, held back by max-drain-parallelism alone)
        (["e1"], ["d1"], 2, 10, (0, 2), True, False),  # both budgets spent
        ([], [], 2, 10, (0, 2), False, False),  # nothing waits
        ([], ["d1", "d2"], 10, 1, (0, 0), True, True),  # CA's default: one drain at a time
        ([], ["d1"], 10, 1, (0, 1), True, True),  # the one drain slot is taken
        (["e1", "e2"], [], 1, 10, (0, 0), True, False),  # an empty node waits: parallelism
        ([], ["d1"], 10, 2, (0, 1), False, False),  # everything starts
        (["e1", "e2"], ["d1"], 2, 5, (0, 0), True, False),  # the empties used the whole budget
    ],
)
def test_scale_down_throttled_whenever_a_budget_holds_nodes_back(
    empty, drain, parallelism, drain_parallelism, in_progress, throttled, drain_only
):
    o = opts(max_scale_down_parallelism=parallelism, max_drain_parallelism=drain_parallelism)
    d = crop(empty, drain, o, empty_in_progress=in_progress[0], drain_in_progress=in_progress[1])
    assert (d.throttled, d.drain_only) == (throttled, drain_only)
    if drain_only:
        assert "max-drain-parallelism" in d.message() and "max-scale-down-parallelism has room" in d.message()
    elif throttled:
        assert "max-scale-down-parallelism" in d.message()


# -- a small world ---------------------------------------------------------------------------------
class World(DeletionWorld):
    """DeletionWorld, planned by the real planner."""

    def __init__(self, nodes, pods, options=None, groups=None):
        super().__init__(nodes, pods, options or opts(node_delete_delay_after_taint=5))

    def plan(self, now=0.0):
        return self.planner.update(
            LoopInputs(now, self.snapshot, workloads=RS, being_deleted=self.actuator.being_deleted()),
            cloud=self.cloud,
        )

    def start(self, now=0.0):
        return self.actuator.start(self.plan(now), self.snapshot, now)

    def tick(self, now):
        result = self.actuator.tick(self.snapshot, now, workloads=RS)
        for name in result.deleted:
            if name in self.snapshot:
                self.snapshot.remove_node(name)
        return result

    def pod_gone(self, name):
        self.snapshot.remove_pod(f"uid-default-{name}")

    def evictions(self):
        return [c for c in self.actions.calls if c[0] == "evict"]


def two_node_world(pods_on_a=None, **kw):
    pods = pods_on_a if pods_on_a is not None else [pod("pa", "a", 300, grace=60)]
    return World([node("a"), node("d", annotations=KEEP)], pods, **kw)


def test_start_taints_the_chosen_nodes_and_emits_events():
    w = two_node_world()
    result = w.start(now=100)
    assert result.started_drain == ["a"]
    taint = w.actions.taints["a"][TO_BE_DELETED_TAINT]
    assert (taint.effect, taint.value) == ("NoSchedule", "100")
    assert (
        "Node",
        "a",
        "Normal",
        "ScaleDown",
        "marked the node as toBeDeleted/unschedulable",
    ) in w.actions.events
    assert w.actuator.being_deleted() == {"a"}
    assert w.actuator.in_progress() == (0, 1)


def test_scale_down_throttled_is_reported():
    w = World(
        [node("a"), node("b"), node("d", annotations=KEEP)],
        [pod("pa", "a", 100), pod("pb", "b", 100)],
        options=opts(max_scale_down_parallelism=1, max_drain_parallelism=1),
    )
    first = w.start()
    assert first.started_drain == ["a"] and first.throttled
    assert "ScaleDownThrottled" in w.actions.reasons()
    assert w.actions.events[0][:2] == ("ConfigMap", "kube-system/cluster-autoscaler-status")


def test_a_taint_failure_rolls_back_every_taint():
    w = World([node("a"), node("b"), node("c")], [])
    w.actions.fail_taint_on = {"b"}
    result = w.start(now=50)
    assert result.failed.keys() == {"b"}
    assert w.actions.calls == [
        ("add_taint", "a", TO_BE_DELETED_TAINT),
        ("add_taint", "b", TO_BE_DELETED_TAINT),
        ("remove_taint", "a", TO_BE_DELETED_TAINT),
    ]
    assert w.actuator.being_deleted() == set()
    assert "ScaleDownFailed" in w.actions.reasons()
    assert w.planner.last_failure == 50


def test_waits_for_the_taint_delay_then_evicts_waits_and_deletes():
    w = two_node_world()
    w.start(now=0)
    assert w.tick(4).deleted == [] and w.evictions() == []
    w.tick(5)
    assert w.evictions() == [("evict", "default/pa", 60)]
    assert w.actuator.deletions["a"].phase is Phase.WAITING
    assert "uid-default-pa" in w.planner.recent_evictions.by_uid
    assert w.tick(15).deleted == []  # the pod is still terminating
    w.pod_gone("pa")
    result = w.tick(25)
    assert result.deleted == ["a"] and w.group.deleted == ["a"]
    assert ("Node", "a", "Normal", "ScaleDown", "nodes removed by cluster autoscaler") in w.actions.events
    # scale-down-delay-after-delete counts from the start of the deletion (CA), not its end.
    assert w.planner.last_deletion == 0


def test_refused_evictions_are_retried_every_ten_seconds():
    w = two_node_world()
    w.actions.outcomes["default/pa"] = [BLOCKED, BLOCKED, EvictionOutcome.EVICTED]
    w.start(now=0)
    attempts = []
    for t in (5, 10, 15, 20, 25):
        w.tick(t)
        attempts.append(len(w.evictions()))
    assert attempts == [1, 1, 2, 2, 3]  # at 5, 15 and 25: every 10 s, not every tick
    assert w.actuator.deletions["a"].phase is Phase.WAITING


def test_eviction_gives_up_after_max_pod_eviction_time_and_untaints():
    w = two_node_world(options=opts(node_delete_delay_after_taint=0, max_pod_eviction_time=120))
    w.actions.outcomes["default/pa"] = [BLOCKED]
    w.start(now=0)
    for t in range(0, 120, 10):
        assert w.tick(t).failed == {}
    assert len(w.evictions()) == 12
    result = w.tick(120)
    assert "max-pod-eviction-time" in result.failed["a"]
    assert ("remove_taint", "a", TO_BE_DELETED_TAINT) in w.actions.calls
    assert "ScaleDownFailed" in w.actions.reasons()
    assert w.actuator.being_deleted() == set()
    # A drain failing after it started does not pause scale-down (CA: only start failures do).
    assert w.planner.last_failure == -math.inf


def test_not_found_counts_as_evicted():
    w = two_node_world()
    w.actions.outcomes["default/pa"] = [EvictionOutcome.NOT_FOUND]
    w.start(now=0)
    assert w.tick(5).deleted == ["a"]


def test_pods_that_do_not_disappear_within_grace_plus_30s_abort_the_deletion():
    w = two_node_world()
    w.start(now=0)
    w.tick(5)  # evicted; grace 60 -> wait until 95
    assert w.tick(94).failed == {}
    result = w.tick(95)
    assert "grace period + 30s" in result.failed["a"]
    assert ("remove_taint", "a", TO_BE_DELETED_TAINT) in w.actions.calls
    assert w.group.deleted == []


def test_grace_is_capped_by_max_graceful_termination_sec():
    w = two_node_world([pod("pa", "a", 300, grace=3600)], options=opts(max_graceful_termination_sec=600))
    w.start(now=0)
    w.tick(5)
    assert w.evictions() == [("evict", "default/pa", 600)]
    assert w.actuator.deletions["a"].wait_until == 5 + 600 + 30


def test_a_pod_that_now_blocks_aborts_before_any_eviction():
    w = two_node_world()
    w.start(now=0)
    w.snapshot.add_pod(pod("bare", "a", 10, owner=None), "a")
    result = w.tick(5)
    assert "default/bare" in result.failed["a"] and w.evictions() == []


def test_delay_deletion_annotation_holds_deletion_until_removed():
    w = two_node_world([])
    w.start(now=0)
    annotated = dataclasses.replace(
        w.snapshot.node("a"),
        meta=dataclasses.replace(w.snapshot.node("a").meta, annotations={DELAY_DELETION_PREFIX + "lb": "x"}),
    )
    w.snapshot.replace_node(annotated)
    assert w.tick(5).deleted == []
    assert w.actuator.deletions["a"].phase is Phase.DELAYED
    assert w.tick(60).deleted == []
    w.snapshot.replace_node(node("a"))
    assert w.tick(70).deleted == ["a"]


def test_delay_deletion_times_out():
    w = two_node_world([], options=opts(node_delete_delay_after_taint=5, node_deletion_delay_timeout=120))
    w.start(now=0)
    w.snapshot.replace_node(node("a", annotations={DELAY_DELETION_PREFIX + "lb": "x"}))
    w.tick(5)
    assert w.tick(124).deleted == []
    assert w.tick(125).deleted == ["a"]
    assert any("delay-deletion" in e[4] for e in w.actions.events)


@pytest.mark.parametrize(
    ("pods_on_a", "flags", "evicted"),
    [
        ([pod("pa", "a", 100)], {}, ["default/pa", "default/ds"]),  # occupied: DaemonSet pods go too
        ([pod("pa", "a", 100)], {"daemonset_eviction_for_occupied_nodes": False}, ["default/pa"]),
        ([], {}, []),  # empty: DaemonSet pods stay by default
        ([], {"daemonset_eviction_for_empty_nodes": True}, ["default/ds"]),
    ],
)
def test_daemonset_pods_follow_the_eviction_flags(pods_on_a, flags, evicted):
    ds = pod("ds", "a", 10, owner=("DaemonSet", "ds"))
    w = two_node_world([*pods_on_a, ds], options=opts(node_delete_delay_after_taint=0, **flags))
    w.start(now=0)
    w.tick(0)
    assert sorted(c[1] for c in w.evictions()) == sorted(evicted)


def test_an_empty_node_tells_its_marking_and_its_removal_apart_stamped_when_they_happen():
    w = two_node_world([])
    assert w.start(now=0).started_empty == ["a"]
    assert w.tick(5).deleted == ["a"]
    # CA's events: ScaleDown on the node twice, with distinct messages (so neither overwrites
    # the other), and ScaleDownEmpty on the status ConfigMap.
    assert w.actions.events == [
        ("Node", "a", "Normal", "ScaleDown", "marked the node as toBeDeleted/unschedulable"),
        ("Node", "a", "Normal", "ScaleDown", "nodes removed by cluster autoscaler"),
        (
            "ConfigMap",
            "kube-system/cluster-autoscaler-status",
            "Normal",
            "ScaleDownEmpty",
            "Scale-down: empty node a removed",
        ),
    ]
    assert w.actions.event_times == [0, 5, 5]


def test_a_cloud_refusal_aborts_and_untaints():
    w = two_node_world([])
    w.group.fail_delete = True
    w.start(now=0)
    result = w.tick(5)
    assert "refused" in result.failed["a"]
    assert ("remove_taint", "a", TO_BE_DELETED_TAINT) in w.actions.calls


def test_nodes_being_deleted_are_not_chosen_again_and_count_in_the_budget():
    w = World(
        [node("a"), node("b"), node("d", annotations=KEEP)],
        [pod("pa", "a", 100), pod("pb", "b", 100)],
        options=opts(max_drain_parallelism=1),
    )
    assert w.start(now=0).started_drain == ["a"]
    again = w.start(now=10)
    assert again.started_drain == [] and again.budget.left_out == ["b"]
    assert w.plan(20).nodes["a"].status == "being_deleted"


# -- soft taints ------------------------------------------------------------------------------------
def soft(name):
    return node(name, taints=[Taint(DELETION_CANDIDATE_TAINT, "0", "PreferNoSchedule")])


def test_soft_taints_follow_the_candidate_set_within_the_count_budget():
    actions = FakeActions()
    nodes = [soft("needed1"), soft("needed2"), node("u1"), node("u2"), node("u3")]
    result = update_soft_taints(
        actions, nodes, {"u1", "u2", "u3"}, 100, opts(max_bulk_soft_taint_count=3), timer=WorkTimer(1e-3)
    )
    assert result.removed == ["needed1", "needed2"]  # removals first
    assert result.added == ["u1"] and result.skipped == 2
    assert actions.taints["u1"][DELETION_CANDIDATE_TAINT].effect == "PreferNoSchedule"


def test_soft_taints_stop_when_the_time_budget_is_spent():
    result = update_soft_taints(
        FakeActions(),
        [node(f"u{i}") for i in range(5)],
        {f"u{i}" for i in range(5)},
        0,
        opts(max_bulk_soft_taint_time=3),
        timer=WorkTimer(2),  # each change costs one reading, 2 s: a 3 s budget allows two
    )
    assert result.added == ["u0", "u1"] and result.skipped == 3


def test_soft_taints_leave_nodes_being_deleted_alone():
    doomed = node("x", taints=[Taint(TO_BE_DELETED_TAINT, "0", "NoSchedule")])
    result = update_soft_taints(FakeActions(), [doomed], {"x"}, 0, opts(), timer=WorkTimer(1e-3))
    assert result.added == [] and result.removed == []


def test_soft_taint_memo_skips_only_a_pass_that_would_do_nothing():
    memo, actions, o = SoftTaintMemo(), FakeActions(), opts(max_bulk_soft_taint_count=1)

    def run(nodes, unneeded):
        before = len(actions.calls)
        result = update_soft_taints(actions, nodes, unneeded, 0, o, timer=WorkTimer(1e-3), memo=memo)
        same = FakeActions()
        same.fail_taint_on = actions.fail_taint_on
        fresh = update_soft_taints(
            same, nodes, unneeded, 0, o, timer=WorkTimer(1e-3)
        )  # what the full pass says
        assert (result.added, result.removed, result.skipped) == (fresh.added, fresh.removed, fresh.skipped)
        return actions.calls[before:]

    nodes = [node("a"), node("b"), node("c")]
    assert run(nodes, {"a", "b"}) == [("add_taint", "a", DELETION_CANDIDATE_TAINT)]  # b left over
    assert run(nodes, {"a", "b"}) == [("add_taint", "a", DELETION_CANDIDATE_TAINT)]  # not skipped
    done = [soft("a"), soft("b"), node("c")]
    assert run(done, {"a", "b"}) == []  # nothing to do: remembered
    assert run(list(done), {"b", "a"}) == []  # same objects, same set: skipped
    assert run(done, {"a"}) == [("remove_taint", "b", DELETION_CANDIDATE_TAINT)]  # set changed
    assert run(done, {"a", "b"}) == []
    replaced = [soft("a"), node("b"), node("c")]  # someone removed b's taint: a new object
    assert run(replaced, {"a", "b"}) == [("add_taint", "b", DELETION_CANDIDATE_TAINT)]
    assert run([*done, node("d")], {"a", "b"}) == []  # a new node
    assert run([*done, soft("d")], {"a", "b"}) == [("remove_taint", "d", DELETION_CANDIDATE_TAINT)]
    actions.fail_taint_on = {"c"}
    assert run(done, {"a", "b", "c"}) == [("add_taint", "c", DELETION_CANDIDATE_TAINT)]
    assert run(done, {"a", "b", "c"}) == [("add_taint", "c", DELETION_CANDIDATE_TAINT)]  # errors retried


# -- restart safety ---------------------------------------------------------------------------------
def test_restart_resumes_removable_tainted_nodes_and_releases_the_rest():
    doomed = Taint(TO_BE_DELETED_TAINT, "90", "NoSchedule")
    nodes = [
        node("resume", taints=[doomed]),
        node("stuck", taints=[doomed]),
        node("stale-soft", taints=[Taint(DELETION_CANDIDATE_TAINT, "0", "PreferNoSchedule")]),
        node("d", annotations=KEEP),
    ]
    pods = [pod("pr", "resume", 300), pod("ps", "stuck", 100, owner=None), pod("big", "stale-soft", 900)]
    w = World(nodes, pods)
    report = recover(w.planner, w.actuator, w.snapshot, cloud=w.cloud, now=100, workloads=RS)
    assert report.resumed == ["resume"]
    assert "BlockedByPod" in report.released["stuck"]
    assert report.soft_released == ["stale-soft"]
    assert ("remove_taint", "stuck", TO_BE_DELETED_TAINT) in w.actions.calls
    assert ("remove_taint", "resume", TO_BE_DELETED_TAINT) not in w.actions.calls
    # The resumed deletion continues: its taint delay counts from the taint's own timestamp (90).
    assert w.actuator.deletions["resume"].tainted_at == 90
    w.tick(100)
    assert w.evictions() == [("evict", "default/pr", 30)]
    w.pod_gone("pr")
    assert w.tick(110).deleted == ["resume"]


# -- a drain that meets a pod annotated safe-to-evict "on-completion" ------------------------------
ON_COMPLETION = {"cluster-autoscaler.kubernetes.io/safe-to-evict": "on-completion"}


def drain_meeting_a_finishing_pod():
    """Node "a" is chosen for its one movable pod; during the taint delay a pod annotated
    on-completion lands on it (it tolerates the taint, or was annotated meanwhile)."""
    w = two_node_world([pod("pa", "a", 100, grace=10)], options=opts(node_delete_delay_after_taint=5))
    assert w.start(now=0).started_drain == ["a"]
    w.snapshot.add_pod(pod("job", "a", 100, annotations=ON_COMPLETION), "a")
    w.tick(5)  # pa evicted; the job is not
    w.pod_gone("pa")
    return w


@pytest.mark.parametrize("phase", ["Succeeded", "Failed"])
def test_a_drain_waits_for_an_on_completion_pod_and_the_node_goes_once_it_is_done(phase):
    w = drain_meeting_a_finishing_pod()
    # Evictions done at 5, deadline 5 + max-pod-eviction-time (120): the job is waited for.
    for t in (45, 80, 124):
        result = w.tick(t)
        assert (result.deleted, result.failed) == ([], {})
    assert w.actuator.deletions["a"].phase is Phase.DELAYED
    assert w.actuator.next_wakeup() == 125
    done = dataclasses.replace(w.snapshot.pod("uid-default-job"), phase=phase)
    w.snapshot.update_pod(done)
    assert w.tick(124.5).deleted == ["a"]
    assert w.evictions() == [("evict", "default/pa", 10)]  # never the job


def test_a_drain_whose_on_completion_pod_outlives_the_deadline_fails_without_evicting_it():
    w = drain_meeting_a_finishing_pod()
    assert w.tick(124).failed == {}
    result = w.tick(125)
    assert "default/job (safe-to-evict: on-completion) still running" in result.failed["a"]
    assert ("remove_taint", "a", TO_BE_DELETED_TAINT) in w.actions.calls
    assert "ScaleDownFailed" in w.actions.reasons()
    assert w.group.deleted == [] and w.evictions() == [("evict", "default/pa", 10)]
    # Back with the planner, the node is held until the job is done (BlockedByOnCompletionPod).
    assert w.plan(now=200).nodes["a"].reason.value == "BlockedByOnCompletionPod"
