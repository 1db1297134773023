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

A change that alters the cluster every simulation starts from (a new node: the placement search
and the free room change everywhere), a usage-guarded search, or a change of any flag other than
those `REPLAYABLE_OPTIONS` lists is simulated in full (still stopping at the verdict). The
property test (tests/autoscaler/scaledown/test_scaledown_unblock_narrow.py) compares every answer
with the whole re-plan's on random clusters.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from kubetide.autoscaler.options import AutoscalerOptions
from kubetide.autoscaler.scaledown.planning.candidates import Removal, simulate_removal
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


class Recording:
    """`simulate_removal` for the search without changes, keeping every step."""

    def __init__(self) -> None:
        self.steps: list[Step] = []
        self.options: AutoscalerOptions | None = None
        self.pdbs: tuple[PodDisruptionBudget, ...] = ()
        self.nodes = 0  # the snapshot's size during the search
        self.guarded = False
        self.deleted: frozenset[str] = frozenset()  # the nodes being deleted, out of every search

    def __call__(self, u: Update, name: str, drain: NodeDrain, to_move: list[Received]) -> Removal:
        if self.options is None:
            self.options, self.pdbs, self.nodes = u.options, tuple(u.ctx.pdbs.pdbs), len(u.snapshot)
            self.guarded = u.mover.guard is not None
            self.deleted = frozenset(u.deleted | u.resume)
        before = u.mover.pointer
        removal = simulate_removal(u, name, drain, to_move)
        self.steps.append(Step(name, tuple(to_move), before, u.mover.pointer, removal, _given(to_move)))
        return removal


class Decided(Exception):
    """The node asked about has its verdict; the search is left there."""

    def __init__(self, plan: ScaleDownPlan):
        super().__init__()
        self.plan = plan


class Replay:
    """`simulate_removal` for a search with changes, answering from `recording` while in step,
    and raising `Decided` once node `node` has its verdict. `replayable`: False when the
    changes alter the cluster every simulation starts from (then every node is simulated)."""

    def __init__(self, recording: Recording | None, node: str, *, replayable: bool = True):
        self.node = node
        self.steps: list[Step] = recording.steps if recording is not None and replayable else []
        self._recording = recording
        self._next = 0
        self._in_step = bool(self.steps)
        self._ready = False
        self._changed: frozenset[int] = frozenset()  # indexes of the budgets the changes altered
        self._surge_changed = False
        self.replayed = self.simulated = 0
        self.placed = 0  # pods given to the simulated removals: the check's work (clock.spend)

    def __call__(self, u: Update, name: str, drain: NodeDrain, to_move: list[Received]) -> Removal:
        status = u.plan.nodes.get(self.node)
        if status is not None and (status.status == REMOVABLE or status.reason is not None):
            raise Decided(u.plan)
        if not self._ready:
            self._ready = True
            self._in_step = self._in_step and self._comparable(u)
        step = self._step(u, name)
        if step is not None and self._given_same(u, drain, to_move, step):
            self.replayed += 1
            return _replayed(u, drain, step)
        self.simulated += 1
        self.placed += len(to_move)
        removal = simulate_removal(u, name, drain, to_move)
        self._in_step = step is not None and _same_outcome(step, removal, u.mover.pointer)
        return removal

    def _comparable(self, u: Update) -> bool:
        """Whether this search starts where the recorded one did, but for the changes."""
        recording = self._recording
        if recording is None or recording.options is None or recording.guarded or u.mover.guard is not None:
            return False
        pdbs = u.ctx.pdbs.pdbs
        if len(pdbs) != len(recording.pdbs) or len(u.snapshot) != recording.nodes:
            return False
        if frozenset(u.deleted | u.resume) != recording.deleted:
            return False
        old, new = recording.options, u.options
        if old is not new:
            differ = {f.name for f in dataclasses.fields(new) if getattr(old, f.name) != getattr(new, f.name)}
            if not differ <= REPLAYABLE_OPTIONS:
                return False
            self._surge_changed = "surge_before_evict" in differ
        self._changed = frozenset(i for i, (a, b) in enumerate(zip(recording.pdbs, pdbs)) if a is not b)
        return True

    def _step(self, u: Update, name: str) -> Step | None:
        """The recorded step this call stands for, if the searches are still in step."""
        if not self._in_step or self._next >= len(self.steps):
            self._in_step = False
            return None
        step = self.steps[self._next]
        self._next += 1
        if step.node != name or step.pointer_before != u.mover.pointer:
            self._in_step = False
            return None
        return step

    def _given_same(self, u: Update, drain: NodeDrain, to_move: list[Received], step: Step) -> bool:
        """The node is given what the recorded step was: the same pod objects from the same
        sources (in any order), no budget the changes altered among its own pods', and (if the flag changed)
        no budget refusing it for good, where surge-before-evict would be read."""
        if len(step.to_move) != len(to_move) or _given(to_move) != step.given:
            return False
        if self._changed:
            if step.budgets is None:
                matching = u.ctx.pdbs.matching
                step.budgets = frozenset(i for pod in drain.movable for i in matching(pod))
            if step.budgets & self._changed:
                return False
        # In step, with its budgets unchanged, the node's budgets refuse it as they did then.
        return not (self._surge_changed and step.read_surge_flag)


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
