"""How long a node takes to empty once its drain starts, estimated before it starts.

A drain runs in budget waves (PdbTracker.waves): the first wave's pods are evicted once
node-delete-delay-after-taint has passed; each later wave waits until the replacements of the wave
before are Ready (only then does the PodDisruptionBudget allow the next eviction), and the 429s in
between are retried every EVICTION_RETRY_INTERVAL, so a wave lasts the replacement's time to Ready
rounded up to that interval. The node is empty when the last wave's pods have had their grace
period (terminationGracePeriodSeconds, capped by max-graceful-termination-sec: an upper bound,
since most processes exit sooner).

A replacement's time to Ready is read from the node's pods themselves: the time from being bound
(PodScheduled) to Ready of each pod that never restarted, the slowest of them, since the wave waits
for all its replacements. Where no pod has that history (a hand-written manifest), the documented
default DEFAULT_REPLACEMENT_READY is used and the estimate says so.

The whole scale-down is scheduled on paper the same way (`schedule_drains`): the candidates in the
plan's order, then the nodes waiting for budget, each once its unneeded time has run, at most max-drain-parallelism drains at a time
(a node empty frees its slot for the next), every PodDisruptionBudget starting from the
disruptions it allows now. A pod is evicted at a retry when each of its budgets has a disruption
left; the disruption comes back when its replacement is Ready (REPLACEMENT_LAG plus the pod's
own readiness history, else the default). A pod its Deployment surges leaves once its
replacement is Ready, without a budget. Drains already under way are not in the schedule: their
evictions show in the budgets' disruptionsAllowed.
"""

from __future__ import annotations

import heapq
import math
import weakref
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol

from kubetide.autoscaler.options import AutoscalerOptions
from kubetide.autoscaler.scaledown.planning.drainability import (
    DrainContext,
    DrainRules,
    KeptDrains,
    NodeDrain,
    index_workloads,
)
from kubetide.autoscaler.scaledown.planning.pdb import PdbTracker, is_healthy
from kubetide.durations import format_duration
from kubetide.model import Pod, PodDisruptionBudget, Workload
from kubetide.snapshot import ClusterSnapshot

# The Cluster Autoscaler retries a refused eviction every 10 s.
EVICTION_RETRY_INTERVAL = 10.0
# A replacement's time from being bound to Ready when no pod of the node shows it.
DEFAULT_REPLACEMENT_READY = 30.0
# Between an eviction and the replacement being bound: the ReplicaSet controller and the scheduler.
REPLACEMENT_LAG = 2.0


@dataclass(frozen=True, slots=True)
class DrainEstimate:
    seconds: float  # from the taint to the node empty
    waves: int
    wave_seconds: float  # one wave: eviction to the replacements Ready, in retry intervals
    grace_seconds: float  # the last wave's pods terminating
    replacement_ready_seconds: float
    from_history: bool  # replacement_ready_seconds read from the pods, not the default

    def to_json(self) -> dict[str, Any]:
        return {
            "waves": self.waves,
            "wave_seconds": self.wave_seconds,
            "grace_seconds": self.grace_seconds,
            "replacement_ready_seconds": round(self.replacement_ready_seconds, 1),
            "replacement_ready_from": "readiness history" if self.from_history else "default",
        }

    def words(self) -> str:
        grace = f"{format_duration(self.grace_seconds)} grace"
        if self.waves == 1:
            return f"empties in about {format_duration(self.seconds)} ({grace})"
        source = "the pods' readiness history" if self.from_history else "default"
        return (
            f"empties in about {format_duration(self.seconds)}: {self.waves} waves of"
            f" {format_duration(self.wave_seconds)} (replacements Ready in"
            f" {format_duration(round(self.replacement_ready_seconds))}, {source}) + {grace}"
        )


def estimate_drain(pods: Sequence[Pod], waves: int, options: AutoscalerOptions) -> DrainEstimate:
    """The estimate for draining `pods` (a node's pods to evict) in `waves` budget waves."""
    longest = max((p.termination_grace_period for p in pods), default=0)
    grace = float(min(longest, options.max_graceful_termination_sec))
    known = [t for t in map(_bound_to_ready, pods) if t is not None]
    ready = max(known) if known else DEFAULT_REPLACEMENT_READY
    wave = EVICTION_RETRY_INTERVAL * math.ceil((ready + REPLACEMENT_LAG) / EVICTION_RETRY_INTERVAL)
    seconds = options.node_delete_delay_after_taint + (waves - 1) * wave + grace
    return DrainEstimate(seconds, waves, wave, grace, ready, bool(known))


def _bound_to_ready(pod: Pod) -> float | None:
    bound, ready = pod.scheduled_transition, pod.ready_transition
    if not pod.ready or pod.restarts or bound is None or ready is None or ready < bound:
        return None
    return ready - bound


@dataclass(frozen=True, slots=True)
class NodeToDrain:
    """A node of the schedule: the pods to evict, and those its Deployments surge instead."""

    name: str
    pods: Sequence[Pod]
    surged: Collection[str] = frozenset()  # pod UIDs
    not_before: float = 0.0  # seconds from now until it may go (its unneeded time still running)


@dataclass(frozen=True, slots=True)
class ScheduledDrain:
    node: str
    starts: float  # seconds from now: its taint goes on
    empties: float  # seconds from now: its last pod has gone

    @property
    def seconds(self) -> float:
        return self.empties - self.starts


@dataclass(frozen=True, slots=True)
class ScaleDownSchedule:
    drains: dict[str, ScheduledDrain] = field(default_factory=dict)
    unfinished: tuple[str, ...] = ()  # nodes whose budget never lets their pods go
    from_history: bool = False  # some pod's readiness history was read (else only the default)

    @property
    def seconds_to_last_removal(self) -> float:
        return max((d.empties for d in self.drains.values()), default=0.0)

    def words(self) -> str:
        """One line for `plan`'s text: the whole scale-down's time ('' with nothing to drain)."""
        if not self.drains and not self.unfinished:
            return ""
        source = (
            "the pods' readiness history" if self.from_history else f"default {DEFAULT_REPLACEMENT_READY:g}s"
        )
        line = (
            f"scale-down of {len(self.drains)} node(s) done in about"
            f" {format_duration(round(self.seconds_to_last_removal))} (the drains' waves under the"
            f" PodDisruptionBudgets and max-drain-parallelism; replacements Ready as in {source})"
        )
        if self.unfinished:
            line += f"; never, for {', '.join(self.unfinished)}: a budget that does not come back"
        return line

    def to_json(self) -> dict[str, Any]:
        return {
            "estimated_seconds_to_last_removal": round(self.seconds_to_last_removal, 1),
            "replacement_ready_from": "readiness history" if self.from_history else "default",
            "drains": {
                name: {"starts_in_seconds": round(d.starts, 1), "empties_in_seconds": round(d.empties, 1)}
                for name, d in self.drains.items()
            },
            "unfinished": list(self.unfinished),
        }


def plan_schedule(
    candidates: Sequence[str],
    waiting: Sequence[str],
    drains: Mapping[str, NodeDrain],
    surged: Mapping[str, Collection[str]],
    snapshot: ClusterSnapshot,
    pdbs: Sequence[PodDisruptionBudget],
    workloads: Sequence[Workload] | None,
    options: AutoscalerOptions,
    now: float,
    removable_at: Callable[[str], float],
    memo: ScheduleMemo | None = None,
) -> ScaleDownSchedule:
    """The schedule of a plan's drains: its candidates (their drains as the planner found them),
    then its nodes waiting for budget (their pods sorted by the drainability rules here), under
    the budgets as the cluster's PodDisruptionBudgets state them now. `memo`: what the last
    loop's call kept (a loop's `LoopState` keeps one), else everything is computed afresh."""
    if not candidates and not waiting:
        return ScaleDownSchedule()  # most loops: nothing to drain, no budget to read
    memo = memo if memo is not None else ScheduleMemo()
    index = index_workloads(workloads) if workloads is not None else None
    tracker = PdbTracker(pdbs, snapshot.pods(), index)
    ctx = DrainContext(DrainRules.from_options(options), tracker, now, index)
    tag = memo.context_tag((options, tuple(pdbs), None if workloads is None else tuple(workloads)))
    nodes = [
        NodeToDrain(name, drains[name].movable, surged.get(name, ()), max(0.0, removable_at(name) - now))
        for name in candidates
    ]
    memo.waiting_drains.new_pass(ctx)
    nodes += [
        NodeToDrain(
            name,
            memo.waiting_drains.drain(name, tuple(snapshot.pods_on(name).values()), ctx).movable,
            (),
            max(0.0, removable_at(name) - now),
        )
        for name in waiting
        if name in snapshot
    ]
    kept = memo.reusable(nodes, tag, tracker.initial, snapshot)
    if kept is not None:
        memo.reused += 1
        return kept
    facts = memo.pod_facts.of_pass(
        (pod for n in nodes for pod in n.pods), pdbs, tracker.matching, options.max_graceful_termination_sec
    )
    owners = {f.owner for f in facts.values() if f.owner is not None}
    slowest = memo.history.slowest(snapshot, owners) if owners else {}
    # Drains start in the order their nodes may go (the plan's order among equals).
    order = sorted(nodes, key=lambda n: n.not_before)
    paper = _run_paper(order, tracker.initial, options, _facts_with_history(facts, slowest))
    return memo.keep(nodes, tag, tracker.initial, owners, slowest, paper)


class ScheduleMemo:
    """What `plan_schedule` keeps between loops (a loop's `LoopState` keeps one), so that the
    schedule costs nothing when nothing it reads changed and little when a few nodes did:

    - each waiting node's drain (drainability.KeptDrains): a loop sorts the pods of the nodes
      that changed;
    - each scheduled pod's facts for the paper run (`KeptPodFacts`): a loop looks up the budgets
      and the controller of the pods that changed only;
    - the controllers' readiness history (`ReadinessHistory`);
    - the last schedule, under all it read but the clock: the nodes in the plan's order with the
      pods they evict and those surged, the rules' context, the disruptions each budget allows,
      and the readiness of the pods' controllers. `now` enters only through each node's wait
      for its unneeded time (`NodeToDrain.not_before`), and the schedule on paper is the same
      drains shifted in time when every wait moved by the same amount (the waits of nodes that
      became unneeded together, as the clock runs): paper time stands still until the first
      node may go, and from there on every step compares and adds times. So a loop whose waits
      are the last ones shifted by `d` takes the last schedule `d` earlier, where that shift is
      exact (`_Exact`), and computes it afresh otherwise.
    """

    def __init__(self) -> None:
        self.history = ReadinessHistory()
        self.waiting_drains = KeptDrains()
        self.pod_facts = KeptPodFacts()
        self._context: tuple[object, ...] | None = None
        self._tag = object()
        self._last: _KeptSchedule | None = None
        self.reused = 0  # schedules taken from the loop before, as they were or shifted

    def context_tag(self, context: tuple[object, ...]) -> object:
        """A token that stays the same while `context` (what the rules read besides a node's
        pods and the clock) is equal to the last call's."""
        if context != self._context:
            self._context, self._tag = context, object()
        return self._tag

    def reusable(
        self, nodes: Sequence[NodeToDrain], tag: object, allowed: tuple[int, ...], snapshot: ClusterSnapshot
    ) -> ScaleDownSchedule | None:
        """The last schedule, shifted to this loop's waits, when nothing else it read changed."""
        last = self._last
        if last is None or last.tag is not tag or last.allowed != allowed or len(last.nodes) != len(nodes):
            return None
        if last.nodes != _drains_of(nodes):
            return None
        if last.owners:  # (a walk of the nodes that changed, for nothing when no pod reads it)
            slowest = self.history.slowest(snapshot, last.owners)
            if tuple(slowest.get(owner) for owner in last.owners) != last.readiness:
                return None
        waits = tuple(n.not_before for n in nodes)
        if waits == last.waits:
            return last.schedule
        shift = last.exact.shift(last.waits, waits) if last.exact is not None else None
        if shift is None:
            return None
        schedule = last.schedule
        return ScaleDownSchedule(
            {
                name: ScheduledDrain(name, d.starts - shift, d.empties - shift)
                for name, d in schedule.drains.items()
            },
            schedule.unfinished,
            schedule.from_history,
        )

    def keep(
        self,
        nodes: Sequence[NodeToDrain],
        tag: object,
        allowed: tuple[int, ...],
        owners: Iterable[_Owner],
        slowest: Mapping[_Owner, float],
        paper: _Paper,
    ) -> ScaleDownSchedule:
        """The schedule `paper` made, kept for the next loop under what it read."""
        schedule = ScaleDownSchedule(paper.drains, tuple(paper.unfinished), paper.history)
        owners = tuple(owners)
        waits = tuple(n.not_before for n in nodes)
        self._last = _KeptSchedule(
            _drains_of(nodes),
            tag,
            allowed,
            owners,
            tuple(slowest.get(owner) for owner in owners),
            waits,
            schedule,
            _Exact.of(paper, waits),
        )
        return schedule


# A node's part of the schedule's key: its name, the pods its drain evicts, those surged.
_NodeKey = tuple[str, tuple[Pod, ...], Collection[str]]


def _drains_of(nodes: Iterable[NodeToDrain]) -> tuple[_NodeKey, ...]:
    return tuple((n.name, tuple(n.pods), n.surged) for n in nodes)


# Paper times are kept exactly on this grid: multiples of 2^-24 s below 2^28 s (8.5 years) take
# 52 bits, so sums and differences of them are exact floats. A clock's reading near 1.7e9 s is a
# multiple of 2^-22 s, and so is the difference of two of them (a wait, a time to Ready).
_GRID = 2.0**24
_HORIZON = 2.0**28


def _on_grid(values: Iterable[float]) -> bool:
    return all((v * _GRID).is_integer() for v in values)


@dataclass(frozen=True, slots=True)
class _Exact:
    """A schedule on paper computed in exact arithmetic: every time it read (the waits, the
    taint delay, each pod's time to Ready and grace) on the grid, and every time it computed
    within `horizon` of zero (at most its last step's time plus the longest a step adds)."""

    horizon: float

    @classmethod
    def of(cls, paper: _Paper, waits: Sequence[float]) -> _Exact | None:
        if not (paper.on_grid and _on_grid(waits) and _on_grid((paper.delay,))):
            return None
        horizon = (
            max(paper.now, *waits, 0.0)
            + abs(paper.delay)
            + REPLACEMENT_LAG
            + paper.reach
            + EVICTION_RETRY_INTERVAL
        )
        return cls(horizon) if horizon < _HORIZON else None

    def shift(self, before: Sequence[float], after: Sequence[float]) -> float | None:
        """`d` when every wait of `after` is its wait in `before` minus d, and the schedule from
        `after` is computed exactly too (so it is this one's times minus d, to the bit)."""
        if not after or not _on_grid(after):
            return None
        d = before[0] - after[0]
        if self.horizon + abs(d) >= _HORIZON or any(b - d != a for b, a in zip(before, after)):
            return None
        return d


@dataclass(frozen=True, slots=True)
class _KeptSchedule:
    nodes: tuple[_NodeKey, ...]  # in the plan's order, before the sort by wait
    tag: object  # the rules' context (ScheduleMemo.context_tag)
    allowed: tuple[int, ...]  # the disruptions each budget allowed
    owners: tuple[_Owner, ...]  # the controllers of the pods evicted
    readiness: tuple[float | None, ...]  # their slowest bound-to-Ready
    waits: tuple[float, ...]  # each node's `not_before`, in the plan's order
    schedule: ScaleDownSchedule
    exact: _Exact | None  # None: the schedule is reused only for the very same waits


class ReadinessHistory:
    """Each controller's slowest bound-to-Ready over the cluster's pods, the history a
    replacement's time to Ready is read from (`plan_schedule`), kept between loops: each node's
    part under the node's snapshot stamp, and the maximum over the nodes per controller, redone
    only for the controllers of the nodes that changed. A loop walks the pods of those nodes,
    and the nodes' stamps only when the snapshot's version moved."""

    def __init__(self) -> None:
        self._nodes: dict[str, tuple[int, dict[_Owner, float]]] = {}  # name -> stamp, its part
        self._by_owner: dict[_Owner, dict[str, float]] = {}  # owner -> node -> its slowest there
        self._slowest: dict[_Owner, float] = {}
        self._seen: tuple[weakref.ref[ClusterSnapshot], int] | None = None  # snapshot and version

    def slowest(self, snapshot: ClusterSnapshot, owners: Iterable[_Owner]) -> dict[_Owner, float]:
        """The slowest bound-to-Ready of each of `owners` that shows one."""
        self._refresh(snapshot)
        kept = self._slowest
        return {owner: kept[owner] for owner in owners if owner in kept}

    def _refresh(self, snapshot: ClusterSnapshot) -> None:
        seen = self._seen
        if seen is not None and seen[0]() is snapshot and seen[1] == snapshot.version:
            return
        nodes, by_owner = self._nodes, self._by_owner
        touched: set[_Owner] = set()
        present = 0
        for name, stamp, pods in snapshot.pods_by_node():
            present += 1
            entry = nodes.get(name)
            if entry is not None and entry[0] == stamp:
                continue
            part = _slowest_by_owner(pods.values())
            for owner in entry[1] if entry is not None else ():
                if owner not in part:
                    del by_owner[owner][name]
                    touched.add(owner)
            for owner, known in part.items():
                by_owner.setdefault(owner, {})[name] = known
                touched.add(owner)
            nodes[name] = (stamp, part)
        if present < len(nodes):  # nodes gone
            for name in [n for n in nodes if n not in snapshot]:
                for owner in nodes.pop(name)[1]:
                    del by_owner[owner][name]
                    touched.add(owner)
        for owner in touched:
            of_owner = by_owner.get(owner)
            if of_owner:
                self._slowest[owner] = max(of_owner.values())
            else:
                by_owner.pop(owner, None)
                self._slowest.pop(owner, None)
        self._seen = (weakref.ref(snapshot), snapshot.version)


def _slowest_by_owner(pods: Iterable[Pod]) -> dict[_Owner, float]:
    slowest: dict[_Owner, float] = {}
    for pod in pods:
        if (known := _bound_to_ready(pod)) is not None:
            owner = _owner(pod)
            slowest[owner] = max(slowest.get(owner, 0.0), known)
    return slowest


_Owner = tuple[str, str, str]  # (namespace, controller kind, name); a pod without one: ("", its name)


def _owner(pod: Pod) -> _Owner:
    ref = pod.controller
    return (pod.namespace, ref.kind, ref.name) if ref is not None else (pod.namespace, "", pod.name)


class _PodFacts(NamedTuple):
    """What the paper run reads of a pod besides the clock and its controller's readiness
    history: the budgets its eviction takes (none when it is not healthy: the disruption
    controller counts Ready pods), its controller (None without one), its replacement's time to
    Ready from its own history (else the default) and its grace period, capped."""

    pod: Pod
    budgets: tuple[int, ...]
    owner: _Owner | None
    own_ready: tuple[float, bool]
    grace: float


def _pod_facts(pod: Pod, budgets_of: Callable[[Pod], tuple[int, ...]], grace_cap: int) -> _PodFacts:
    return _PodFacts(
        pod,
        budgets_of(pod) if is_healthy(pod) else (),
        _owner(pod) if pod.controller is not None else None,
        _replacement_ready(pod),
        float(min(pod.termination_grace_period, grace_cap)),
    )


class KeptPodFacts:
    """The scheduled pods' facts (`_PodFacts`) kept between loops, so that a loop whose nodes
    lost or gained a few pods looks up the budgets and controllers of those pods only. Each is
    kept under the pod object itself (the snapshot holds a new object for every new version of a
    pod) and what the facts read besides the pod: each budget's namespace and selector, in the
    order their indexes point into (not their status, which changes with every eviction), and
    the grace cap. A pod no schedule asked for in the last pass is forgotten."""

    def __init__(self) -> None:
        self._kept: dict[int, _PodFacts] = {}  # id(pod) -> its facts, which hold the pod
        self._key: tuple[object, ...] | None = None

    def of_pass(
        self,
        pods: Iterable[Pod],
        pdbs: Sequence[PodDisruptionBudget],
        budgets_of: Callable[[Pod], tuple[int, ...]],
        grace_cap: int,
    ) -> dict[int, _PodFacts]:
        """The facts of `pods` by the pods' identity (`budgets_of`: the indexes in `pdbs` of the
        budgets selecting a pod), kept for the next pass, and only theirs. (A kept entry holds
        its pod, so no other object can have its id meanwhile.)"""
        key = (tuple((pdb.meta.namespace, pdb.selector) for pdb in pdbs), grace_cap)
        kept = self._kept if key == self._key else {}
        facts: dict[int, _PodFacts] = {}
        for pod in pods:
            known = kept.get(id(pod))
            if known is None or known.pod is not pod:
                known = _pod_facts(pod, budgets_of, grace_cap)
            facts[id(pod)] = known
        self._kept, self._key = facts, key
        return facts


# A pod's facts as a paper step reads them: budgets, its replacement's time to Ready and whether
# read from history, its grace.
_StepFacts = tuple[tuple[int, ...], float, bool, float]


def _facts_with_history(
    facts: Mapping[int, _PodFacts], slowest: Mapping[_Owner, float]
) -> Callable[[Pod], _StepFacts]:
    """A pod's facts with its replacement's time to Ready: the slowest bound-to-Ready of its
    controller's pods (`slowest`: its replacement is one more of them; a pod that started with
    the cluster may show none), else its own history, else the default."""

    def facts_of(pod: Pod) -> _StepFacts:
        f = facts[id(pod)]
        known = slowest.get(f.owner) if f.owner is not None else None
        ready, from_history = (known, True) if known is not None else f.own_ready
        return f.budgets, ready, from_history, f.grace

    return facts_of


def schedule_drains(
    nodes: Sequence[NodeToDrain],
    budgets_of: Callable[[Pod], tuple[int, ...]],
    allowed: Sequence[int],
    options: AutoscalerOptions,
    healthy: Callable[[Pod], bool],
    ready_of: Callable[[Pod], tuple[float, bool]] | None = None,
) -> ScaleDownSchedule:
    """The drains of `nodes` (in the order they start) on paper. `budgets_of(pod)`: the indexes
    of the budgets selecting it; `allowed[i]`: the disruptions budget i allows now; `healthy`:
    whether evicting the pod takes one of them (the disruption controller counts Ready pods);
    `ready_of(pod)`: its replacement's seconds from bound to Ready and whether from history (by
    default the pod's own history, else DEFAULT_REPLACEMENT_READY)."""
    ready_of = ready_of or _replacement_ready
    cap = options.max_graceful_termination_sec

    def facts_of(pod: Pod) -> _StepFacts:
        ready, from_history = ready_of(pod)
        budgets = budgets_of(pod) if healthy(pod) else ()
        return budgets, ready, from_history, float(min(pod.termination_grace_period, cap))

    paper = _run_paper(nodes, allowed, options, facts_of)
    return ScaleDownSchedule(paper.drains, tuple(paper.unfinished), paper.history)


def _run_paper(
    nodes: Sequence[NodeToDrain],
    allowed: Sequence[int],
    options: AutoscalerOptions,
    facts_of: Callable[[Pod], _StepFacts],
) -> _Paper:
    """`schedule_drains`' steps; the paper as they leave it. `facts_of(pod)`: the budgets its
    eviction takes, its replacement's time to Ready and whether from history, its grace."""
    paper = _Paper(facts_of, allowed, options)
    waiting = list(nodes)[::-1]  # popped from the end: the plan's order
    slots = max(1, options.max_drain_parallelism)
    while waiting or paper.active or paper.finishing:
        paper.finish()
        # An empty node is no drain: it takes no slot of max-drain-parallelism.
        draining = paper.draining()
        while waiting and waiting[-1].not_before <= paper.now and (draining < slots or not waiting[-1].pods):
            draining += bool(waiting[-1].pods)
            paper.start(waiting.pop())
        paper.give_back()
        for name in list(paper.active):
            paper.evict(name)
        times = paper.times()
        if waiting and waiting[-1].not_before > paper.now:
            times.append(waiting[-1].not_before)
        if not times:
            continue  # only nodes still to start: they start now
        paper.now = max(paper.now, min(times))
    return paper


# A pod still to go on paper: the budgets its eviction takes, its replacement's Ready time, grace.
_PaperPod = tuple[tuple[int, ...], float, float]


class _Paper:
    """The state of `schedule_drains`, one step per method: the budgets left, the disruptions
    coming back, the drains evicting (`active`) and those waiting for their pods to go."""

    def __init__(
        self, facts_of: Callable[[Pod], _StepFacts], allowed: Sequence[int], options: AutoscalerOptions
    ):
        self.facts_of = facts_of
        self.left = list(allowed)
        self.returns: list[tuple[float, tuple[int, ...]]] = []  # (when Ready, budgets given back)
        # name -> start, next try, pods still to go, gone, a drain
        self.active: dict[str, tuple[float, float, list[_PaperPod], float, bool]] = {}
        self.finishing: dict[str, tuple[float, float, bool]] = {}  # name -> start, empties, holds a slot
        self.drains: dict[str, ScheduledDrain] = {}
        self.unfinished: list[str] = []
        self.history = False
        # For ScheduleMemo: whether every pod's time to Ready and grace is on the grid, and the
        # longest of them together (see _Exact).
        self.on_grid, self.reach = True, 0.0
        self.delay = options.node_delete_delay_after_taint
        self.now = 0.0

    def finish(self) -> None:
        for name, (start, empties, _) in list(self.finishing.items()):
            if empties <= self.now:
                self.drains[name] = ScheduledDrain(name, start, empties)
                del self.finishing[name]

    def draining(self) -> int:
        return len(self.active) + sum(1 for *_, slot in self.finishing.values() if slot)

    def start(self, node: NodeToDrain) -> None:
        now = self.now
        gone, pods = now + self.delay, []
        for pod in node.pods:  # each pod's facts once
            budgets, ready, known, grace = self.facts_of(pod)
            self.history = self.history or known
            self.reach = max(self.reach, abs(ready) + abs(grace))
            self.on_grid = self.on_grid and (ready * _GRID).is_integer() and (grace * _GRID).is_integer()
            if pod.uid in node.surged:  # its replacement first, then the pod, no budget
                gone = max(gone, now + self.delay + REPLACEMENT_LAG + ready + grace)
            else:
                pods.append((budgets, ready, grace))
        self.active[node.name] = (now, now + self.delay, pods, gone, bool(node.pods))

    def give_back(self) -> None:
        while self.returns and self.returns[0][0] <= self.now:
            for i in heapq.heappop(self.returns)[1]:
                self.left[i] += 1

    def evict(self, name: str) -> None:
        """One try of drain `name`: every pod its budgets let go now goes."""
        start, next_try, pods, gone, drained = self.active[name]
        now, left = self.now, self.left
        if next_try > now:
            return
        kept = []
        for budgets, ready, grace in pods:
            if any(left[i] < 1 for i in budgets):
                kept.append((budgets, ready, grace))
                continue
            for i in budgets:
                left[i] -= 1
            if budgets:
                heapq.heappush(self.returns, (now + REPLACEMENT_LAG + ready, budgets))
            gone = max(gone, now + grace)
        if not kept:
            del self.active[name]
            self.finishing[name] = (start, gone, drained)
        elif not self.returns:  # nothing evicted gives a disruption back: the budget never does
            del self.active[name]
            self.unfinished.append(name)
        else:
            # Retried every EVICTION_RETRY_INTERVAL; the first retry that can succeed is the
            # first after a disruption comes back.
            retries = max(1, math.ceil((self.returns[0][0] - now) / EVICTION_RETRY_INTERVAL))
            self.active[name] = (start, now + retries * EVICTION_RETRY_INTERVAL, kept, gone, drained)

    def times(self) -> list[float]:
        return [t for _, t, *_ in self.active.values()] + [e for _, e, _ in self.finishing.values()]


def _replacement_ready(pod: Pod) -> tuple[float, bool]:
    known = _bound_to_ready(pod)
    return (DEFAULT_REPLACEMENT_READY, False) if known is None else (known, True)


class Estimated(Protocol):
    """A node's status as the planner leaves it (plan.NodeStatus): its drain estimate, if drained."""

    @property
    def estimate(self) -> DrainEstimate | None: ...


def drain_estimates(nodes: Mapping[str, Estimated]) -> dict[str, DrainEstimate]:
    """The drain estimates of a plan's nodes (`ScaleDownPlan.nodes`: the planner's, made as it
    chose the drains), in its order: what `explain` reports beside the unblock answers."""
    return {name: status.estimate for name, status in nodes.items() if status.estimate is not None}
