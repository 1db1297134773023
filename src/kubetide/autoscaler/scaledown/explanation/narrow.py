"""Checking a suggested change without simulating the whole cluster again (issue 30).

`find_unblocks` asks, for each change it suggests, whether a fresh planner would then find the
node removable. The candidate search that answers is greedy and sequential: the eligible nodes
in a fixed order, each removal simulated on the cluster the removals before it left (their pods
on their destinations, their budgets charged, the placement pointer where the last pod landed,
which a removal that fails moves too). A change touches only part of that: a pod's annotation
one node's drain, a budget the nodes with pods under it, a threshold which nodes are eligible.
Up to the first node whose removal the change alters, the search with the change does exactly
what the search without it did.

So the search without changes is recorded once (`Recording`: per simulated node, the pods it
was given, what it found, and the pointer before and after; `kubetide plan` records its loop's
own, used only if it started from the same options, budgets, nodes and nodes being deleted), and
a search with changes runs with a `Replay` standing in for `simulate_removal`. While every node
so far was simulated in step with the recording, a node given the same pods (the same objects,
in any order), under budgets the change left alone, gets the recorded answer: a node that stays
costs nothing (its trial would be undone; only the pointer moves), a node that goes has its
budgets charged and its pods put on their recorded destinations, with no placement search. A
node given something else (another drain, a changed budget among its pods', a surge-before-evict
its budgets consult) is simulated; if it finds what was recorded (it stays, or it goes with the
same pods to the same nodes, and the pointer ends in the same place), the two searches are still
in step, their states differing only by the change itself. The first difference ends the
replay: every later node is simulated.

The search also stops as soon as the node asked about has its verdict (`Decided`): the nodes
after it in the order cannot change it (a later removal never gives room back to, or takes a
candidate out of, the nodes before it).

Replaying a node still costs the search's visit (its room and limits checks, the what-if, its
status), so a check does not visit what it shares: the recording keeps the search's order, each
node with its drain, and the search asks the `Replay` where to start (`Replay.start`, through
candidates.py's `Resumable`). Up to the first position where the orders part, a drain differs,
a node's budgets were changed, a node read a changed surge-before-evict, or the node asked about
comes, the search with changes would do exactly what the recorded one did; of those nodes only
the removals kept change the state the rest starts from, so the search visits only them (made
again as replayed) and ends at the verdict (the statuses of the nodes skipped are not written).
Each check's search is kept the same way (`Replay.trace`, as far as it went, sharing with the
search without changes what it skipped), and a later check starts from whichever recording it
shares the most with: a check with a higher threshold goes on where one with a lower threshold
stopped, the nodes the lower one made eligible coming first in both.

A change that alters the cluster every simulation starts from (a new node: the placement search
and the free room change everywhere), a usage-guarded search, or a change of any flag other than
those `REPLAYABLE_OPTIONS` lists is simulated in full (still stopping at the verdict). The
property test (tests/autoscaler/scaledown/test_scaledown_unblock_narrow.py) compares every answer
with the whole re-plan's on random clusters.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

from kubetide.autoscaler.options import AutoscalerOptions
from kubetide.autoscaler.scaledown.planning.candidates import (
    Eligible,
    Removal,
    Resumable,
    Skip,
    simulate_removal,
)
from kubetide.autoscaler.scaledown.planning.drainability import NodeDrain
from kubetide.autoscaler.scaledown.planning.plan import REMOVABLE, ScaleDownPlan
from kubetide.autoscaler.scaledown.planning.update import Received, Update, pod_order
from kubetide.model import PodDisruptionBudget

# Flags a replayed search may differ in: they decide which nodes are eligible, what a drain
# holds and which limits apply (all read outside `simulate_removal`, so a difference shows as a
# node simulated out of step or given other pods), or, surge-before-evict, what a removal does
# when a budget refuses it for good (checked node by node).
REPLAYABLE_OPTIONS = frozenset(
    {
        "scale_down_utilization_threshold",
        "scale_down_gpu_utilization_threshold",
        "scale_down_unready_enabled",
        "cores_total",
        "memory_total",
        "min_replica_count",
        "skip_nodes_with_custom_controller_pods",
        "surge_before_evict",
    }
)
# Of those, the flags every node's removal limits read: a search with one changed visits every node.
LIMIT_OPTIONS = frozenset({"cores_total", "memory_total"})


@dataclass(slots=True)
class Step:
    """One simulated removal of the recorded search."""

    node: str
    to_move: tuple[Received, ...]
    pointer_before: int
    pointer_after: int
    removal: Removal
    # The pods given, as (object id, source): a removal moves and charges them in `pod_order`,
    # so the order they come in (a node's pods, which an undone trial reorders) does not count.
    given: frozenset[tuple[int, str | None]] = frozenset()
    # The budgets (tracker indexes) the node's own pods match, found by the first replay that
    # needs them: the pods are the same objects in every search, and so are their budgets'.
    budgets: frozenset[int] | None = None

    @property
    def read_surge_flag(self) -> bool:
        """Whether the removal read surge-before-evict: only when a budget refused the node for
        good (then it surged, or failed with that refusal)."""
        refusal = self.removal.charge.refusal
        return self.removal.surge is not None or (refusal is not None and not refusal.waiting)


class Recording(Resumable):
    """`simulate_removal` for the search without changes, keeping every step, and the search's
    order: each node with its drain. A check's search is kept the same way (`Replay.trace`), for
    the checks after it."""

    def __init__(self) -> None:
        self.steps: list[Step] = []
        self.order: list[tuple[str, NodeDrain]] | None = None
        self.visited = 0  # the positions of `order` the search got past (a check stops early)
        self.shared = 0  # the positions it shares with the search without changes
        self.cloud: object = None  # the cloud the search asked (a check's own, if it changed groups)
        self.options: AutoscalerOptions | None = None
        self.pdbs: tuple[PodDisruptionBudget, ...] = ()
        self.nodes = 0  # the snapshot's size during the search
        self.guarded = False
        self.deleted: frozenset[str] = frozenset()  # the nodes being deleted, out of every search
        self._at: dict[str, int] | None = None

    def __call__(self, u: Update, name: str, drain: NodeDrain, to_move: list[Received]) -> Removal:
        if self.options is None:
            self._read(u)
        before = u.mover.pointer
        removal = simulate_removal(u, name, drain, to_move)
        self.steps.append(Step(name, tuple(to_move), before, u.mover.pointer, removal, _given(to_move)))
        return removal

    def start(self, u: Update, order: Sequence[Eligible]) -> Skip:
        self._read(u)
        self.order = [(item.node.name, item.drain) for item in order]
        self.visited = self.shared = len(order)
        return Skip()

    def _read(self, u: Update) -> None:
        """What a search must share with this one to replay it (`_diff`)."""
        self.options, self.pdbs, self.nodes = u.options, tuple(u.ctx.pdbs.pdbs), len(u.snapshot)
        self.guarded = u.mover.guard is not None
        self.deleted = frozenset(u.deleted | u.resume)
        self.cloud = u.cloud

    def at(self) -> dict[str, int]:
        """Each simulated node's index in `steps` (a search simulates a node at most once)."""
        if self._at is None:
            self._at = {step.node: i for i, step in enumerate(self.steps)}
        return self._at


class _Diff(NamedTuple):
    """How a search with changes differs from a recorded one where `simulate_removal` looks."""

    budgets: frozenset[int]  # indexes of the budgets changed
    surge: bool  # surge-before-evict changed
    limits: bool  # a flag every node's removal limits read changed


def _diff(recording: Recording, u: Update) -> _Diff | None:
    """How this search differs from the recorded one, if it starts where that did but for the
    changes: None when it does not (another snapshot, nodes being deleted, a flag replays cannot
    follow, a usage guard)."""
    if recording.options is None or recording.guarded or u.mover.guard is not None:
        return None
    pdbs = u.ctx.pdbs.pdbs
    if len(pdbs) != len(recording.pdbs) or len(u.snapshot) != recording.nodes:
        return None
    if frozenset(u.deleted | u.resume) != recording.deleted:
        return None
    old, new = recording.options, u.options
    differ: set[str] = set()
    if old is not new:
        differ = {f.name for f in dataclasses.fields(new) if getattr(old, f.name) != getattr(new, f.name)}
        if not differ <= REPLAYABLE_OPTIONS:
            return None
    changed = frozenset(i for i, (a, b) in enumerate(zip(recording.pdbs, pdbs)) if a is not b)
    return _Diff(changed, "surge_before_evict" in differ, bool(differ & LIMIT_OPTIONS))


class Decided(Exception):
    """The node asked about has its verdict; the search is left there."""

    def __init__(self, plan: ScaleDownPlan):
        super().__init__()
        self.plan = plan


class Replay(Resumable):
    """`simulate_removal` for a search with changes, answering from `recording` while in step,
    and raising `Decided` once node `node` has its verdict. `replayable`: False when the
    changes alter the cluster every simulation starts from (then every node is simulated).

    The search skips the nodes before the first one the changes can alter (`start`): its state
    there is the recorded search's, which only the removals kept before it made, so those are
    made again (replayed) and nothing else is visited. `traces`: earlier checks' searches
    (`trace`), which may share more of this one's order than the search without changes does
    (a higher threshold's check goes on where a lower one's stopped)."""

    def __init__(
        self,
        recording: Recording | None,
        node: str,
        *,
        replayable: bool = True,
        traces: Sequence[Recording] = (),
    ):
        self.node = node
        self.steps: list[Step] = recording.steps if recording is not None and replayable else []
        self._recording = recording
        self._traces = traces
        self._next = 0
        self._in_step = bool(self.steps)
        self._ready = False
        self._diff = _Diff(frozenset(), False, False)
        self._resume_at = -1  # the index in `steps` of the first step after the nodes skipped
        self._pointer_at_resume = 0
        self.trace: Recording | None = None  # this search, as far as it went
        self._first = 0
        self.replayed = self.simulated = 0
        self.skipped = 0  # nodes the search did not visit
        self.placed = 0  # pods given to the simulated removals: the check's work (clock.spend)

    def __call__(self, u: Update, name: str, drain: NodeDrain, to_move: list[Received]) -> Removal:
        status = u.plan.nodes.get(self.node)
        if status is not None and (status.status == REMOVABLE or status.reason is not None):
            raise Decided(u.plan)
        if not self._ready:
            self._ready = True
            diff = _diff(self._recording, u) if self._in_step and self._recording is not None else None
            self._in_step = diff is not None
            if diff is not None:
                self._diff = diff
        kept = self._next < self._resume_at  # a removal before the nodes skipped, made again
        step = self._step(u, name)
        before = u.mover.pointer
        if step is not None and self._given_same(u, drain, to_move, step):
            self.replayed += 1
            removal = _replayed(u, drain, step)
        else:
            assert not kept, f"{name}: skipped up to it, yet given other pods or budgets"
            self.simulated += 1
            self.placed += len(to_move)
            removal = simulate_removal(u, name, drain, to_move)
            self._in_step = step is not None and _same_outcome(step, removal, u.mover.pointer)
            step = Step(name, tuple(to_move), before, u.mover.pointer, removal, _given(to_move))
        if self.trace is not None and not kept:
            self.trace.steps.append(step)
        return removal

    def start(self, u: Update, order: Sequence[Eligible]) -> Skip:
        """The nodes before the first one the changes can alter, the node asked about or the
        first where the two orders part: each is the recorded search's node at that position,
        with the same drain, under budgets the changes left alone, and not reading a changed
        surge-before-evict; the search did there what the recorded one did, on the same state.
        Of them the search visits only the recorded removals kept, which make that state."""
        baseline = self._recording
        if not self.steps or baseline is None or baseline.order is None:
            return Skip()
        self._ready = True
        diff = _diff(baseline, u)
        self._in_step = diff is not None
        if diff is None:
            return Skip()
        self._diff = diff
        if diff.limits or u.cloud is not baseline.cloud:
            return Skip()
        source, first = baseline, self._prefix(u, order, baseline, diff, 0)
        for trace in self._traces:
            # A trace is the search without changes up to `shared`: past `first` only if it
            # got there with it.
            if trace.shared < first or trace.visited <= first:
                continue
            other = _diff(trace, u)
            if other is None or other.limits or u.cloud is not trace.cloud:
                continue
            further = self._prefix(u, order, trace, other, first)
            if further > first:
                source, first, self._diff = trace, further, other
        self.trace = trace = Recording()
        trace._read(u)
        trace.order = [(item.node.name, item.drain) for item in order]
        trace.shared = min(first, source.shared)
        self._first = first
        assert source.order is not None
        steps, at = source.steps, source.at()
        done = [i for i in (at.get(name) for name, _ in source.order[:first]) if i is not None]
        trace.steps = steps[: len(done)]
        if first == 0:
            return Skip()
        kept = [i for i in done if steps[i].removal.removable]
        self.skipped = first - len(kept)
        resumed = len(done)  # the recorded steps after the nodes skipped start here
        self._pointer_at_resume = steps[resumed - 1].pointer_after if done else u.mover.pointer
        self.steps = [steps[i] for i in kept] + steps[resumed:]
        self._resume_at = len(kept)
        position = {name: p for p, (name, _) in enumerate(source.order[:first])}
        return Skip(first, frozenset(position[steps[i].node] for i in kept))

    def _prefix(
        self, u: Update, order: Sequence[Eligible], source: Recording, diff: _Diff, first: int
    ) -> int:
        """How far from `first` on `order` goes as `source`'s did, unaltered by `diff`."""
        assert source.order is not None
        recorded, steps, at = source.order, source.steps, source.at()
        end = min(len(order), len(recorded), source.visited)
        while first < end:
            name, drain = recorded[first]
            if name == self.node or order[first].node.name != name:
                break
            if drain is not order[first].drain:
                if not _same_drain(order[first].drain, drain):
                    break
                # The checks share their drains (planner.NodeFacts): the next compares objects.
                recorded[first] = (name, order[first].drain)
            i = at.get(name)
            if i is not None and not _unaltered(u, diff, drain, steps[i]):
                break
            first += 1
        return first

    def finished(self) -> Recording | None:
        """This search, for the checks after it: as far as it visited nodes."""
        trace = self.trace
        if trace is None or trace.order is None:
            return None
        last = trace.steps[-1].node if len(trace.steps) else None
        trace.visited = self._first
        if last is not None:
            trace.visited = max(
                self._first, 1 + next(p for p, (name, _) in enumerate(trace.order) if name == last)
            )
        return trace

    def searched(self, u: Update) -> None:
        """A search that skipped nodes leaves their statuses unwritten: it ends at the verdict
        (every node from the first it visited on has one by now)."""
        if self._resume_at >= 0:
            raise Decided(u.plan)

    def _step(self, u: Update, name: str) -> Step | None:
        """The recorded step this call stands for, if the searches are still in step."""
        if self._next == self._resume_at:  # the first node after those skipped
            u.mover.pointer = self._pointer_at_resume
        if not self._in_step or self._next >= len(self.steps):
            self._in_step = False
            self._next += 1
            return None
        step = self.steps[self._next]
        if self._next < self._resume_at:
            u.mover.pointer = step.pointer_before  # where it was: the trials between are skipped
        self._next += 1
        if step.node != name or step.pointer_before != u.mover.pointer:
            self._in_step = False
            return None
        return step

    def _given_same(self, u: Update, drain: NodeDrain, to_move: list[Received], step: Step) -> bool:
        """The node is given what the recorded step was: the same pod objects from the same
        sources (in any order), and in step, with its budgets unchanged, its budgets refuse it
        as they did then."""
        if len(step.to_move) != len(to_move) or _given(to_move) != step.given:
            return False
        return _unaltered(u, self._diff, drain, step)


def _unaltered(u: Update, diff: _Diff, drain: NodeDrain, step: Step) -> bool:
    """No budget the changes altered among the node's own pods', and (if the flag changed) no
    budget refusing it for good, where surge-before-evict would be read."""
    if diff.budgets:
        if step.budgets is None:
            matching = u.ctx.pdbs.matching
            step.budgets = frozenset(i for pod in drain.movable for i in matching(pod))
        if step.budgets & diff.budgets:
            return False
    return not (diff.surge and step.read_surge_flag)


def _same_drain(a: NodeDrain, b: NodeDrain) -> bool:
    """The same pods to move, blocking and left to complete (the same objects: a changed pod is
    a new one; in any order, which an undone trial changes), all the search reads of a drain."""
    return (
        _same_pods(a.movable, b.movable)
        and _same_pods(a.on_completion, b.on_completion)
        and len(a.blockers) == len(b.blockers)
        and all(x.pod is y.pod and x == y for x, y in zip(a.blockers, b.blockers))
    )


def _same_pods(a: Sequence[object], b: Sequence[object]) -> bool:
    return len(a) == len(b) and {id(x) for x in a} == {id(x) for x in b}


def _given(to_move: list[Received]) -> frozenset[tuple[int, str | None]]:
    """The pods given to a removal, by identity (the recording holds them, so no id is reused)."""
    return frozenset((id(r.pod), r.source) for r in to_move)


def _replayed(u: Update, drain: NodeDrain, step: Step) -> Removal:
    """The recorded removal, made again on this search's state (which is the recorded one's)."""
    recorded = step.removal
    u.mover.pointer = step.pointer_after
    if not recorded.removable:
        return recorded  # the search undoes the trial: nothing to do but the pointer
    surge = recorded.surge
    own = [p for p in drain.movable if surge is None or p.uid not in surge.pods]
    charge = u.ctx.pdbs.charge_node(sorted(own, key=pod_order))
    assert charge.refusal is None, f"replaying {step.node}: its budgets refuse it now"
    snapshot = u.snapshot
    for received, dest in recorded.moved:
        snapshot.move_pod(received.pod.uid, dest)
    return Removal(charge=charge, moved=list(recorded.moved), surge=surge)


def _same_outcome(step: Step, removal: Removal, pointer: int) -> bool:
    """Whether a simulated removal left the search where the recorded one did: both stay (their
    trials are undone), or both go with the same pods to the same nodes and the same surge; and
    the pointer ends in the same place."""
    recorded = step.removal
    if pointer != step.pointer_after or removal.removable != recorded.removable:
        return False
    if not removal.removable:
        return True
    if _surged(removal) != _surged(recorded):
        return False
    return [(r.pod.uid, r.source, d) for r, d in removal.moved] == [
        (r.pod.uid, r.source, d) for r, d in recorded.moved
    ]


def _surged(removal: Removal) -> frozenset[str] | None:
    return None if removal.surge is None else frozenset(removal.surge.pods)
