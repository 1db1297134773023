"""The drains' schedule kept between loops (estimate.ScheduleMemo) is the schedule computed afresh.

The stateful test reuses the incremental planner's random loops (test_scaledown_incremental's
events: pods and nodes come and go, taints, PDB statuses, budgets used up for now or for good,
terminating pods, kube-system pods aging, evictions, time passing) and adds pods whose readiness
history changes, pods with other grace periods and clock steps off the whole second. After every
step a loop plans, and its schedule is computed twice on the same plan: through the memo kept
since the first loop, and from nothing. They must be equal, drains in the same order. The loops
where the memo takes the last schedule as it was or shifted in time are counted (`event`).
"""

from __future__ import annotations

import dataclasses

from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import invariant, rule
from scaledown_fakes import node, pdb, pod, snapshot_of
from test_scaledown_incremental import APPS, OPTIONS, WORKLOADS, IncrementalEqualsFull

from kubetide.autoscaler.decision import drain_schedule
from kubetide.autoscaler.inputs import LoopInputs
from kubetide.autoscaler.scaledown.planning import Planner, ScheduleMemo, plan_schedule
from kubetide.autoscaler.scaledown.planning.drainability import NodeDrain
from kubetide.autoscaler.scaledown.planning.estimate import ScaleDownSchedule
from kubetide.snapshot import ClusterSnapshot

# Two drains at a time and a taint delay: the paper schedule has waves, slots and waits to keep.
SCHEDULE_OPTIONS = OPTIONS.with_values(max_drain_parallelism=2, node_delete_delay_after_taint=5)


def _schedule(planner: Planner, plan, inputs: LoopInputs, memo) -> ScaleDownSchedule:
    """The schedule as the loop's decision asks for it."""
    return drain_schedule(plan, planner, inputs, SCHEDULE_OPTIONS, memo)


def _facts(schedule: ScaleDownSchedule):
    return schedule, list(schedule.drains), schedule.to_json()


class KeptScheduleEqualsFresh(IncrementalEqualsFull):
    """The incremental planner's loops; the reference planner of the parent is left idle."""

    def __init__(self) -> None:
        super().__init__()
        self.memo = ScheduleMemo()
        self.last: dict | None = None

    @rule(data=st.data(), ready_after=st.sampled_from([0.0, 3.0, 17.0, 45.0, 12.25]))
    def a_pod_shows_its_time_to_ready(self, data, ready_after):
        uids = sorted(p.uid for p in self.snapshot.pods())
        if not uids:
            return
        old = self.snapshot.pod(data.draw(st.sampled_from(uids)))
        bound = self.now - 100.0
        self.snapshot.update_pod(
            dataclasses.replace(old, scheduled_transition=bound, ready_transition=bound + ready_after)
        )

    @rule(data=st.data(), grace=st.sampled_from([0, 5, 120]), app=st.sampled_from(APPS))
    def add_pod_with_grace(self, data, grace, app):
        target = data.draw(st.sampled_from(self._nodes()))
        name = self._name("g")
        self.snapshot.add_pod(pod(name, target, 50, owner=("ReplicaSet", app), grace=grace), target)

    @rule(seconds=st.sampled_from([0.1, 1 / 3, 2.5]))
    def the_clock_moves_off_the_second(self, seconds):
        self.now += seconds

    @invariant()
    def a_loop_plans_alike(self):  # replaces the parent's comparison of two planners
        inputs = self.next_loop()
        plan = self.incremental.update(inputs, cloud=self.cloud)
        reused = self.memo.reused
        kept = _schedule(self.incremental, plan, inputs, self.memo)
        fresh = _schedule(self.incremental, plan, inputs, None)
        assert _facts(kept) == _facts(fresh)
        if self.memo.reused > reused:
            event(
                "the last schedule, the same" if kept.to_json() == self.last else "the last schedule, shifted"
            )
        elif kept.drains:
            event("computed")
        self.last = kept.to_json()


KeptScheduleEqualsFresh.TestCase.settings = settings(
    max_examples=60, stateful_step_count=25, suppress_health_check=[HealthCheck.too_slow]
)
test_kept_schedule_equals_fresh = KeptScheduleEqualsFresh.TestCase


def _ready(p, after: float):
    return dataclasses.replace(p, scheduled_transition=0.0, ready_transition=after)


def _cluster():
    web = [_ready(pod(f"w{i}", f"n{i}", 100, owner=("ReplicaSet", "web")), 7.0) for i in range(3)]
    return snapshot_of([node(f"n{i}") for i in range(3)], web)


def _loops(snapshot: ClusterSnapshot, nows, memo: ScheduleMemo, waits=None):
    """plan_schedule over every node of `snapshot` as a candidate, each removable at 600 + the
    given wait offset, at each of `nows`; the schedules."""
    names = [n.name for n in snapshot.nodes()]
    drains = {n: NodeDrain(movable=list(snapshot.pods_on(n).values())) for n in names}
    offsets = waits or {}
    return [
        plan_schedule(
            names,
            [],
            drains,
            {},
            snapshot,
            [],
            WORKLOADS,
            SCHEDULE_OPTIONS,
            now,
            lambda name: 600.0 + offsets.get(name, 0.0),
            memo,
        )
        for now in nows
    ]


def test_the_clock_shifts_the_kept_schedule_and_a_change_recomputes_it():
    snapshot, memo = _cluster(), ScheduleMemo()
    first, same, later = _loops(snapshot, [100.0, 100.0, 130.0], memo)
    assert memo.reused == 2
    assert same is first
    assert {n: (d.starts, d.empties) for n, d in later.drains.items()} == {
        n: (d.starts - 30.0, d.empties - 30.0) for n, d in first.drains.items()
    }
    assert later == _loops(snapshot, [130.0], ScheduleMemo())[0]
    # A pod's readiness history is read: a change to it is a new schedule.
    pod_uid = next(iter(snapshot.pods_on("n0")))
    snapshot.update_pod(_ready(snapshot.pod(pod_uid), 40.0))
    (changed,) = _loops(snapshot, [130.0], memo)
    assert memo.reused == 2
    assert changed == _loops(snapshot, [130.0], ScheduleMemo())[0]


def test_waits_that_move_apart_or_off_the_grid_recompute():
    snapshot, memo = _cluster(), ScheduleMemo()
    _loops(snapshot, [100.0], memo, waits={"n1": 20.0})
    _loops(snapshot, [100.0], memo, waits={"n1": 30.0})  # n1's wait moved, the others' did not
    assert memo.reused == 0
    _loops(snapshot, [100.1], memo, waits={"n1": 30.0})  # 0.1 s is off the 2^-24 s grid
    assert memo.reused == 0


def _schedule_of(snapshot, now, memo, *, candidates=(), waiting=(), pdbs=()):
    drains = {n: NodeDrain(movable=list(snapshot.pods_on(n).values())) for n in candidates}
    return plan_schedule(
        list(candidates),
        list(waiting),
        drains,
        {},
        snapshot,
        list(pdbs),
        WORKLOADS,
        SCHEDULE_OPTIONS,
        now,
        lambda name: 600.0,
        memo,
    )


def test_a_waiting_node_whose_terminating_pod_is_gone_by_now_is_recomputed():
    """Rule 2 reads the clock: a pod terminating past its grace period + 30 s is no longer
    evicted, and its 120 s grace no longer delays the node's end."""
    web = pod("w", "n0", 100, owner=("ReplicaSet", "web"), grace=0)
    slow = pod("t", "n0", 100, owner=("ReplicaSet", "web"), deleted=0.0, grace=120)
    snapshot, memo = snapshot_of([node("n0")], [web, slow]), ScheduleMemo()
    before = _schedule_of(snapshot, 100.0, memo, waiting=["n0"])
    after = _schedule_of(snapshot, 200.0, memo, waiting=["n0"])
    assert after == _schedule_of(snapshot, 200.0, ScheduleMemo(), waiting=["n0"])
    assert after.drains["n0"].seconds < before.drains["n0"].seconds


def test_a_budget_without_a_status_counts_pods_outside_the_schedule():
    """A PDB without a status allows what its healthy pods allow, wherever they run: a pod of
    another node turning unready is a new schedule though no scheduled node changed."""
    pods = [pod(f"w{i}", f"n{i}", 100, owner=("ReplicaSet", "web")) for i in range(2)]
    snapshot, memo = snapshot_of([node("n0"), node("n1")], pods), ScheduleMemo()
    budget = pdb("web", "web", min_available=1)
    first = _schedule_of(snapshot, 100.0, memo, candidates=["n0"], pdbs=[budget])
    snapshot.update_pod(dataclasses.replace(snapshot.pod(pods[1].uid), ready=False))
    second = _schedule_of(snapshot, 110.0, memo, candidates=["n0"], pdbs=[budget])
    assert second == _schedule_of(snapshot, 110.0, ScheduleMemo(), candidates=["n0"], pdbs=[budget])
    assert first.drains and second.unfinished == ("n0",)
