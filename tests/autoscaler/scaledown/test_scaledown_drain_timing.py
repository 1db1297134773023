"""Issue 24 items 2 and 6: PDB-paced drains, restart deadlines, and actuation timing as CA's."""

import dataclasses
import math

import pytest
from scaledown_fakes import (
    DeletionWorld,
    node,
    pdb,
    pod,
    snapshot_of,
    workload,
)

from kubetide.autoscaler.options import AutoscalerOptions, parse_options
from kubetide.autoscaler.ports import TO_BE_DELETED_TAINT, EvictionOutcome
from kubetide.autoscaler.scaledown.actuation.actuator import Phase
from kubetide.autoscaler.scaledown.actuation.restart import recover
from kubetide.autoscaler.scaledown.actuation.soledestination import sole_destinations
from kubetide.autoscaler.scaledown.planning.eligibility import SCALE_DOWN_DISABLED_ANNOTATION
from kubetide.autoscaler.scaledown.planning.pdb import PdbTracker
from kubetide.autoscaler.scaledown.planning.plan import REMOVABLE, NodeStatus, ScaleDownPlan
from kubetide.errors import ManifestError
from kubetide.model import Taint
from kubetide.scheduling.checker import PredicateChecker

BLOCKED = EvictionOutcome.BLOCKED_BY_PDB
EVICTED = EvictionOutcome.EVICTED
# The web pods' ReplicaSet wants the three pods the tests give it (an evicted one is replaced at
# once, Ready, on node d: World.tick), so drains are paced here by the PDB's answers alone.
RS = [workload("ReplicaSet", "rs", 100), workload("ReplicaSet", "web", 3)]
KEEP = {SCALE_DOWN_DISABLED_ANNOTATION: "true"}


def opts(**kw):
    return AutoscalerOptions().with_values(**kw)


def web(name, node_name="a", *, ready=True):
    return pod(name, node_name, 100, owner=("ReplicaSet", "web"), ready=ready)


def web_pdb(*, expected=None, desired=None, allowed=None, name="web", app="web"):
    return dataclasses.replace(
        pdb(name, app, allowed=allowed, desired_healthy=desired), expected_pods=expected
    )


# -- waves ------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("pods", "pdbs", "expected"),
    [
        # (the node's pods, the PDBs, budget waves)
        ([], [], 1),  # nothing to evict: one wave
        ([web("w1"), web("w2"), web("w3")], [], 1),  # no PDB
        ([web("w1"), web("w2"), web("w3")], [web_pdb(expected=5, desired=4, allowed=0)], 3),  # 1 at a time
        ([web("w1"), web("w2"), web("w3")], [web_pdb(expected=5, desired=3, allowed=1)], 2),  # full budget 2
        ([web("w1"), web("w2")], [web_pdb(expected=10, desired=5, allowed=0)], 1),  # budget > pods
        ([web("w1"), web("w2"), web("w3")], [web_pdb(allowed=2)], 2),  # no status counts: disruptionsAllowed
        ([web("w1"), web("w2"), web("w3")], [web_pdb(allowed=0)], 3),  # at least 1 in the division
        ([web("w1"), web("w2"), web("w3")], [web_pdb()], 3),  # no status at all: slowest
        ([web("w1"), web("w2"), web("w3", ready=False)], [web_pdb(allowed=1)], 2),  # unhealthy: free
        ([web("w1"), web("w2")], [web_pdb(allowed=1, app="other")], 1),  # the PDB selects none of them
        (  # the slowest PDB decides
            [web("w1"), web("w2"), web("w3"), pod("p1", "a"), pod("p2", "a")],
            [web_pdb(allowed=3), web_pdb(name="rs", app="rs", allowed=1)],
            2,
        ),
    ],
)
def test_waves_count_the_budget_rounds_a_nodes_pods_need(pods, pdbs, expected):
    assert PdbTracker(pdbs, ()).waves(pods) == expected


# -- a world driven by hand ---------------------------------------------------------------------------
class World(DeletionWorld):
    def __init__(self, nodes, pods, options=None, pdbs=(), workloads=RS, replacements_ready=True):
        super().__init__(nodes, pods, options or opts(), pdbs)
        self.workloads = workloads
        self.replacements_ready = replacements_ready

    def start(self, now=0.0, *, drain=(), empty=()):
        """Start deletions as a plan asking for them would (the planner side is not under test)."""
        plan = ScaleDownPlan(now, empty_to_delete=list(empty), drain_to_delete=list(drain))
        return self.actuator.start(plan, self.snapshot, now)

    def tick(self, now):
        result = self.actuator.tick(self.snapshot, now, pdbs=self.pdbs, workloads=self.workloads)
        for name in result.deleted:
            if name in self.snapshot:
                self.snapshot.remove_node(name)
        for key in [*result.evicted]:
            name = key.split("/")[1]
            uid = f"uid-default-{name}"
            if self.snapshot.node_of(uid) is not None:
                self.snapshot.remove_pod(uid)  # evicted pods leave at once here
                if name.startswith("w") and "d" in self.snapshot:
                    replacement = web(f"{name}-replacement", "d", ready=self.replacements_ready)
                    self.snapshot.add_pod(replacement, "d")
        return result

    def evictions(self):
        return [c[1] for c in self.actions.calls if c[0] == "evict"]


def risky_world(options=None):
    """Node a holds three pods of a PDB that lets one go at a time (expected 5, desiredHealthy 4)."""
    budget = web_pdb(expected=5, desired=4, allowed=1)
    return World(
        [node("a"), node("d", annotations=KEEP)],
        [web("w1"), web("w2"), web("w3")],
        options or opts(node_delete_delay_after_taint=5, max_pod_eviction_time=120),
        pdbs=[budget],
    )


def test_a_risky_node_is_drained_pod_by_pod_within_one_eviction_time_per_wave():
    w = risky_world()
    w.actions.outcomes = {
        "default/w1": [EVICTED],
        "default/w2": [BLOCKED] * 12 + [EVICTED],  # refused until the first replacement is healthy
        "default/w3": [BLOCKED] * 24 + [EVICTED],
    }
    w.start(0, drain=["a"])
    w.tick(5)
    d = w.actuator.deletions["a"]
    assert (d.phase, d.waves, d.eviction_deadline) == (Phase.EVICTING, 3, 5 + 3 * 120)
    deleted_at = None
    for t in range(15, 400, 10):  # retried every 10 s, past one max-pod-eviction-time (125)
        result = w.tick(t)
        assert result.failed == {}
        if result.deleted:
            deleted_at = t
            break
    assert deleted_at is not None and 125 < deleted_at < 365
    assert w.evictions().count("default/w3") == 25


def test_a_stuck_risky_drain_is_still_abandoned_at_its_deadline():
    w = risky_world()
    w.actions.outcomes = {"default/w1": [EVICTED], "default/w2": [BLOCKED], "default/w3": [BLOCKED]}
    w.start(0, drain=["a"])
    w.tick(5)
    for t in range(15, 365, 10):
        assert w.tick(t).failed == {}
    failed = w.tick(365).failed
    assert "3 PDB budget waves x max-pod-eviction-time (120s)" in failed["a"]
    assert ("remove_taint", "a", TO_BE_DELETED_TAINT) in w.actions.calls


def test_a_drain_without_pdbs_keeps_one_eviction_time():
    w = risky_world()
    w.pdbs = []
    w.actions.outcomes = {"default/w1": [BLOCKED]}
    w.start(0, drain=["a"])
    w.tick(5)
    assert w.actuator.deletions["a"].eviction_deadline == 125
    assert "a" in w.tick(125).failed


# -- kubetide's pacing: displaced pods Ready first, StatefulSets one at a time, largest first ----------
def _ready_again(w, name, node_name="d"):
    """The starting replacement `name` turns Ready."""
    uid = f"uid-default-{name}"
    old = w.snapshot.remove_pod(uid)
    w.snapshot.add_pod(dataclasses.replace(old, ready=True), node_name)


@pytest.mark.parametrize("covered", [True, False])
def test_no_pod_of_a_budgeted_workload_goes_while_a_displaced_one_is_not_ready(covered):
    """w1's replacement is still starting (not Ready): the drain of b keeps w3 (the budget would
    let it go) until the replacement is Ready. Without a PDB, pods are not held back."""
    w = World(
        [node("a"), node("b"), node("d", annotations=KEEP)],
        [web("w1"), web("w2", "d"), web("w3", "b")],
        opts(node_delete_delay_after_taint=5, max_pod_eviction_time=120),
        pdbs=[web_pdb(expected=3, desired=1, allowed=2)] if covered else [],
        replacements_ready=False,
    )
    w.start(0, drain=["a"])
    w.tick(5)
    assert w.evictions() == ["default/w1"]
    w.start(20, drain=["b"])
    for t in (25, 35, 45):
        w.tick(t)
    assert ("default/w3" in w.evictions()) is not covered
    _ready_again(w, "w1-replacement")
    w.tick(55)
    assert "default/w3" in w.evictions()


def test_an_ordered_statefulset_loses_one_pod_per_wave():
    """db-0 and db-1 share node a (no PDB): one goes, the other only once the first is Ready
    again; the drain gets one eviction time per pod of the StatefulSet."""
    sts = workload("StatefulSet", "db", 3)
    db = [pod(f"db-{i}", "a", owner=("StatefulSet", "db")) for i in range(2)]
    w = World(
        [node("a"), node("d", annotations=KEEP)],
        [*db, pod("db-2", "d", owner=("StatefulSet", "db"))],
        opts(node_delete_delay_after_taint=5, max_pod_eviction_time=120),
        workloads=[*RS, sts],
    )
    w.start(0, drain=["a"])
    w.tick(5)
    assert w.actuator.deletions["a"].waves == 2
    assert w.evictions() == ["default/db-0"]
    for t in (15, 25, 35):
        w.tick(t)
    assert w.evictions() == ["default/db-0"]  # db-0 is not back: db-1 waits
    w.snapshot.add_pod(pod("db-0", "d", owner=("StatefulSet", "db")), "d")  # recreated, Ready
    w.tick(45)
    assert w.evictions() == ["default/db-0", "default/db-1"]


@pytest.mark.parametrize("parallel", [False, True])
def test_statefulset_pacing_follows_its_pod_management_policy(parallel):
    sts = dataclasses.replace(
        workload("StatefulSet", "db", 3), pod_management_policy="Parallel" if parallel else "OrderedReady"
    )
    w = World(
        [node("a"), node("d", annotations=KEEP)],
        [pod(f"db-{i}", "a", owner=("StatefulSet", "db")) for i in range(3)],
        opts(node_delete_delay_after_taint=5),
        workloads=[*RS, sts],
    )
    w.start(0, drain=["a"])
    w.tick(5)
    assert len(w.evictions()) == (3 if parallel else 1)


def test_the_largest_pods_of_a_priority_are_evicted_a_round_before_the_others():
    """So that their replacements are older: the scheduler takes them first, as the planner's
    simulation placed them (pod_order). A higher priority goes first in the queue anyway."""
    pods = [
        pod("small1", "a", 300),
        pod("big", "a", 1500),
        pod("small2", "a", 300),
        pod("urgent", "a", 100, priority=1000),
    ]
    w = World([node("a"), node("d", annotations=KEEP)], pods, opts(node_delete_delay_after_taint=5))
    w.start(0, drain=["a"])
    w.tick(5)
    assert w.evictions() == ["default/urgent", "default/big"]
    w.tick(15)
    assert w.evictions()[2:] == ["default/small1", "default/small2"]


# -- room for a pod with one possible destination (soledestination.py) ---------------------------
@pytest.mark.parametrize(
    ("cpu", "deleting", "expected"),
    [
        # (the pod's cpu, the nodes being deleted besides its own, its only destination or None)
        (1500, set(), None),  # x (2500 free) and z (3000 free): two destinations
        (1500, {"z"}, "x"),  # z is being deleted too: x only
        (2800, set(), "z"),  # too big for x: z only
        (900, {"z"}, None),  # x and y (1300 free)
        (3500, set(), None),  # fits nowhere: not for this check to say
    ],
)
def test_a_pod_with_one_destination_is_found_with_that_destination(cpu, deleting, expected):
    snapshot = snapshot_of(
        [node(n, 4000) for n in ("a", "x", "y", "z")],
        [pod("fill-x", "x", 1500), pod("fill-y", "y", 2700), pod("fill-z", "z", 1000), pod("p", "a", cpu)],
    )
    checker = PredicateChecker(snapshot)
    found = sole_destinations(checker, [snapshot.pod("uid-default-p")], {"a", *deleting})
    assert found == ({"uid-default-p": expected} if expected else {})


def _room_world(y_free, web_selector=None):
    """Two drains at once: db-0 (1500m, a StatefulSet's) on a, w1 and w2 (900m each, with
    `web_selector`) on b; x has 2500m free, y `y_free`, z 1300m; y and z are labelled pool=other."""
    web = [pod(name, "b", 900, owner=("ReplicaSet", "web")) for name in ("w1", "w2")]
    if web_selector is not None:
        web = [dataclasses.replace(p, node_selector=web_selector) for p in web]
    pods = [
        pod("db-0", "a", 1500, owner=("StatefulSet", "db")),
        pod("db-1", "y", 100, owner=("StatefulSet", "db")),
        pod("db-2", "y", 100, owner=("StatefulSet", "db")),
        *web,
        pod("fill-x", "x", 1500),
        pod("fill-y", "y", 3800 - y_free),
        pod("fill-z", "z", 2700),
    ]
    other = {"pool": "other"}
    return World(
        [
            node("a", 4000),
            node("b", 4000),
            node("x", 4000),
            node("y", 4000, labels=other),
            node("z", 4000, labels=other),
        ],
        pods,
        opts(node_delete_delay_after_taint=5, max_pod_eviction_time=60),
        workloads=[*RS, workload("StatefulSet", "db", 3)],
    )


def test_the_wave_leaves_room_for_a_pod_with_one_destination():
    """db-0 fits on x only; w1 and w2 fit on x, y or z, and the scheduler could put them on x (the
    emptiest) before db-0's replacement, created only once db-0 is gone. So db-0 goes, and the
    drain of b evicts nothing until db-0's replacement is on a node; b gets one more wave."""
    w = _room_world(y_free=1300)
    w.start(0, drain=["a", "b"])
    w.tick(5)
    assert w.evictions() == ["default/db-0"]
    assert w.actuator.deletions["b"].waves == 2
    for t in (15, 25, 35):
        w.tick(t)
    assert w.evictions() == ["default/db-0"]  # its replacement has no node yet
    w.snapshot.add_pod(pod("db-0", "x", 1500, owner=("StatefulSet", "db")), "x")
    w.tick(45)
    assert sorted(w.evictions()) == ["default/db-0", "default/w1", "default/w2"]
    assert not w.actuator.awaited


@pytest.mark.parametrize(
    ("y_free", "web_selector"),
    [
        (2600, None),  # db-0 fits on x or y: no pod has a single destination
        (1300, {"pool": "other"}),  # w1 and w2 may not go to x, db-0's only node
    ],
)
def test_nothing_is_held_without_a_pod_whose_only_node_others_could_take(y_free, web_selector):
    w = _room_world(y_free, web_selector)
    w.start(0, drain=["a", "b"])
    w.tick(5)
    assert sorted(w.evictions()) == ["default/db-0", "default/w1", "default/w2"]
    assert w.actuator.deletions["b"].waves == 1


# -- restart: deadlines from the taint ------------------------------------------------------------------
class KeepsA:
    """A planner whose candidate set is node a (a risky node, which the planner side lets through
    now; what it decides is not under test here)."""

    def update(self, inputs, **kw):
        status = NodeStatus("a", REMOVABLE, False, 0.3)
        return ScaleDownPlan(inputs.now, nodes={"a": status}, candidate_set=["a"])


@pytest.mark.parametrize(
    ("tainted", "now", "pdbs", "resumed", "deadline"),
    [
        # (taint value, restart time, PDBs, resumed?, eviction deadline of the resumed drain)
        (1000, 1100, [], True, 1000 + 5 + 120),
        (1000, 1125, [], False, None),  # one wave: past taint + 5 s + 2 min
        (1000, 1300, [web_pdb(expected=5, desired=4, allowed=1)], True, 1000 + 5 + 3 * 120),
        (1000, 1365, [web_pdb(expected=5, desired=4, allowed=1)], False, None),
    ],
)
def test_a_restart_resumes_a_drain_with_the_deadline_from_its_taint(tainted, now, pdbs, resumed, deadline):
    doomed = Taint(TO_BE_DELETED_TAINT, str(tainted), "NoSchedule")
    w = World(
        [node("a", taints=[doomed]), node("d", annotations=KEEP)],
        [web("w1"), web("w2"), web("w3")],
        opts(node_delete_delay_after_taint=5, max_pod_eviction_time=120),
        pdbs=pdbs,
    )
    report = recover(KeepsA(), w.actuator, w.snapshot, cloud=w.cloud, now=now, pdbs=pdbs, workloads=RS)
    if not resumed:
        assert report.resumed == [] and "past its deadline" in report.released["a"]
        assert ("remove_taint", "a", TO_BE_DELETED_TAINT) in w.actions.calls
        return
    assert report.resumed == ["a"]
    w.actions.outcomes = {"default/w1": [BLOCKED]}
    w.tick(now)
    assert w.actuator.deletions["a"].eviction_deadline == deadline
    assert w.tick(deadline - 1).failed == {}
    assert "a" in w.tick(deadline).failed


# -- delay-after-failure / -delete --------------------------------------------------------------------
@pytest.mark.parametrize(
    ("failure", "armed"),
    [
        ("taint", True),  # deletions could not start: CA's ScaleDownError
        ("eviction timeout", False),  # asynchronous: one bad node must not pause all scale-down
        ("pods stay", False),
        ("cloud refuses", False),
        ("blocking pod", False),
    ],
)
def test_only_failures_to_start_arm_scale_down_delay_after_failure(failure, armed):
    w = World(
        [node("a"), node("b"), node("d", annotations=KEEP)],
        [pod("pa", "a", 100)],
        opts(node_delete_delay_after_taint=0, max_pod_eviction_time=60),
    )
    if failure == "taint":
        w.actions.fail_taint_on = {"b"}
        w.start(7, drain=["a"], empty=["b"])
    else:
        if failure == "eviction timeout":
            w.actions.outcomes = {"default/pa": [BLOCKED]}
        if failure == "cloud refuses":
            w.group.fail_delete = True
        w.start(7, drain=["a"])
        if failure == "blocking pod":
            w.snapshot.add_pod(pod("bare", "a", 10, owner=None), "a")
        if failure == "pods stay":
            w.actuator.tick(w.snapshot, 7, workloads=RS)  # evicted, but never disappears
            assert w.actuator.deletions["a"].phase is Phase.WAITING
        for t in range(7, 200, 10):
            w.actuator.tick(w.snapshot, t, workloads=RS)
        assert "ScaleDownFailed" in w.actions.reasons() and not w.actuator.deletions
    assert w.planner.last_failure == (7 if armed else -math.inf)


def test_delay_after_delete_counts_from_the_start_of_the_deletion():
    w = World([node("a"), node("d", annotations=KEEP)], [], opts(scale_down_delay_after_delete=60))
    w.start(100, empty=["a"])
    assert w.planner.last_deletion == 100
    w.tick(105)
    assert w.group.deleted == ["a"] and w.planner.last_deletion == 100


# -- wake-ups and the deletion batcher -------------------------------------------------------------------
def test_next_wakeup_names_each_deletions_next_timer():
    w = World(
        [node("a"), node("d", annotations=KEEP)],
        [pod("pa", "a", 100, grace=20)],
        opts(node_delete_delay_after_taint=5, max_pod_eviction_time=120),
    )
    assert w.actuator.next_wakeup() is None
    w.actions.outcomes = {"default/pa": [BLOCKED, EVICTED]}
    w.start(0, drain=["a"])
    assert w.actuator.next_wakeup() == 5  # the taint delay, not the next loop
    w.actuator.tick(w.snapshot, 5, workloads=RS)
    assert w.actuator.next_wakeup() == 15  # the eviction retry
    w.actuator.tick(w.snapshot, 15, workloads=RS)
    assert w.actuator.next_wakeup() == 15 + 20 + 30  # the pod's grace + 30 s
    w.snapshot.remove_pod("uid-default-pa")
    assert w.actuator.tick(w.snapshot, 20, workloads=RS).deleted == ["a"]
    assert w.actuator.next_wakeup() is None


@pytest.mark.parametrize(
    ("interval", "ready_at", "deleted"),
    [
        # (node-deletion-batcher-interval, when each empty node's taint delay ends, delete calls)
        (0, {"a": 5, "b": 15}, [(5, ["a"]), (15, ["b"])]),
        (30, {"a": 5, "b": 15}, [(35, ["a", "b"])]),  # b joins a's batch
        (30, {"a": 5, "b": 45}, [(35, ["a"]), (75, ["b"])]),  # b opens a new one
    ],
)
def test_node_deletion_batcher_interval_batches_a_groups_deletions(interval, ready_at, deleted):
    w = World(
        [node("a"), node("b"), node("d", annotations=KEEP)],
        [],
        opts(node_delete_delay_after_taint=5, node_deletion_batcher_interval=interval),
    )
    calls = []
    real = w.group.delete_nodes
    w.group.delete_nodes = lambda nodes: (calls.append((now, [n.name for n in nodes])), real(nodes))
    for name, ready in ready_at.items():
        w.start(ready - 5, empty=[name])
    now = 0.0
    while (wake := w.actuator.next_wakeup()) is not None:
        assert wake > now or wake == 0
        now = wake
        w.tick(now)
    assert calls == deleted


# -- flags ------------------------------------------------------------------------------------------
def test_cas_timing_and_pool_flags_are_accepted_with_cas_defaults():
    defaults = AutoscalerOptions()
    assert (
        defaults.node_deletion_batcher_interval,
        defaults.scale_down_candidates_pool_ratio,
        defaults.scale_down_candidates_pool_min_count,
    ) == (0.0, 0.1, 50)
    o = parse_options(
        [
            "--node-deletion-batcher-interval=10s",
            "--scale-down-candidates-pool-ratio=0.5",
            "--scale-down-candidates-pool-min-count=3",
        ],
        "s.yaml",
    )
    assert (
        o.node_deletion_batcher_interval,
        o.scale_down_candidates_pool_ratio,
        o.scale_down_candidates_pool_min_count,
    ) == (10.0, 0.5, 3)


@pytest.mark.parametrize(
    ("flag", "value", "message"),
    [
        ("scale-down-candidates-pool-ratio", "0", "greater than 0 and at most 1"),
        ("scale-down-candidates-pool-ratio", "1.5", "greater than 0 and at most 1"),
        ("scale-down-candidates-pool-ratio", "10%", "expected a number"),
        ("scale-down-candidates-pool-min-count", "-1", "non-negative"),
        ("node-deletion-batcher-interval", "-1s", "non-negative"),
        ("node-deletion-batcher-interval", "soon", ""),
    ],
)
def test_bad_timing_and_pool_flag_values_are_one_line_errors(flag, value, message):
    with pytest.raises(ManifestError) as error:
        parse_options({flag: value}, "s.yaml")
    assert error.value.field == f"spec.autoscaler.{flag}"
    assert message in error.value.message and "\n" not in str(error.value)


def test_scale_down_throttled_event_when_max_drain_parallelism_alone_holds_drains_back():
    w = World(
        [node("a"), node("b"), node("d", annotations=KEEP)],
        [pod("pa", "a", 100), pod("pb", "b", 100)],
        opts(max_scale_down_parallelism=10, max_drain_parallelism=1),  # CA's defaults
    )
    first = w.start(0, drain=["a", "b"])
    assert first.started_drain == ["a"] and first.throttled
    (event,) = [e for e in w.actions.events if e[3] == "ScaleDownThrottled"]
    assert event[:3] == ("ConfigMap", "kube-system/cluster-autoscaler-status", "Normal")
    assert "max-drain-parallelism" in event[4] and "max-scale-down-parallelism has room" in event[4]
    assert w.start(10, drain=["b"]).throttled  # still held back while a drains
