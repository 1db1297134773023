"""The precise executor: act on just enough pods to get back under the watermarks.

1. Gaps, per action kind and metric, kept in separate maps (crane writes the throttle-down and the
   throttle-up gaps into one map, so one overwrites or deletes the other). Evict and ThrottleDown:
   usage - watermark; ThrottleUp: watermark - usage (the headroom a restore may use). Percentage
   metrics convert to absolute amounts (millicores, bytes) first. The execute-excess margin (10%)
   widens the avoidance gaps (act a little more than the bare gap) and narrows the restore gap
   (give back a little less than the headroom): the margin is on the safe side both ways.
2. Per kind, in the order Evict, ThrottleDown, ThrottleUp: if a metric with a gap is not quantified
   for the kind, or the NODE's usage of it is missing (its gap is unknown), or `precise` is off
   (crane's old behaviour), act on ALL candidates with the highest-priority metric that can take
   the action. Otherwise, metric by metric (highest action priority first), sort the candidates
   with the metric's sorter (the general one when it has none) and act in order until the gap is
   closed, subtracting what each action released. A pod is acted on at most once per round;
   a throttle is one quota write, but it may take several steps of stepCPURatio: ThrottleDown
   goes pass after pass over the sorted pods, one step per pod per pass, each from the quota the
   previous pass planned, until the gap is closed or every pod is at its floor (the design's
   `for !TargetGapsRemoved(m) { for each pod: ThrottleFunc }`). Crane's code makes one pass and
   steps again next sample; kubetide holds an action for its coolDown after acting, so one
   step per pod would leave most of a large gap open for the whole coolDown.
   A pod without usage data (one started seconds ago, or usage unreadable) does not stop precise
   execution: the sorters count it as using nothing, so it comes last among its class and
   priority. Throttling it counts as releasing nothing. Evicting it is different: an eviction
   cannot be undone, and one that releases "nothing" never closes the gap, so every such pod
   would go (with pod usage unreadable, the whole node). At most ONE pod of unknown usage is
   evicted per round (`UNKNOWN_USAGE_EVICTIONS_PER_ROUND`), after it in the order the others
   are skipped: the next sample's node usage measures what that eviction released, so the
   agent advances one pod per sample on evidence instead of emptying the node on none.
   Evict goes first: a pod is acted on once per round, so throttle steps taken first would use up
   the low-priority pods and push the evictions onto more important ones.
3. What an eviction releases also comes off the ThrottleDown gaps (the node's usage drops), so a
   node brought back under by evictions is not throttled as well. Restores wait for a round
   without any Evict or ThrottleDown gap on the same resource.

4. Crane's disable-scheduling action: while a rule using it is in force the node gets the taint
   `SCHEDULING_TAINT` (NoSchedule, so the scheduler places no new pod there; crane uses
   PreferNoSchedule, which a busy cluster ignores); once none is and the analyzer lets it go
   (coolDown), the taint is removed. Whether the node carries it comes with the NodeState, so
   nothing about it is remembered here.

Candidates: never a pod at or above system-cluster-critical, a terminating one, a static (mirror)
pod or a DaemonSet pod. Never evicted unless a PodQOS selects it and allows the eviction: a pod
without a controller, or annotated safe-to-evict "false", "on-completion" (while it runs) or
karpenter.sh/do-not-disrupt (while it protects the pod at the round's time) (protection.py). Without PodQOS objects every other pod is a candidate for every action;
with them, a pod is a candidate for a watermark when a PodQOS that selects it allows one of the
AvoidanceActions behind that watermark (podqos.py). ThrottleUp acts only on the throttled pods,
the list it is given (crane hands its restore the throttle-down list), most important first: the
reverse of the avoidance order.

Every action, done or not, is a `Decision` with its reason, for the CLI and the simulator; a taint
added or removed is the execution's `scheduling` change.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Protocol

from kubetide.model import Node, Pod, Taint
from kubetide.qos.actions import ActionContext, Effect
from kubetide.qos.analyzer import Watermark, Watermarks
from kubetide.qos.config import EVICT, THROTTLE_DOWN, THROTTLE_UP
from kubetide.qos.metrics import Metric, MetricRegistry, sorter_for
from kubetide.qos.podqos import PodQOS, scope_refusal
from kubetide.qos.protection import protected_refusal
from kubetide.qos.state import CRITICAL_PRIORITY, NodeState, PodState

DEFAULT_EXECUTE_EXCESS_PERCENT = 10
# Evictions of pods whose usage is unknown, per round: what they release cannot be counted, so
# the gap never shows them enough; one per round lets the next sample measure the effect.
UNKNOWN_USAGE_EVICTIONS_PER_ROUND = 1

VERB = {EVICT: "evict", THROTTLE_DOWN: "throttle", THROTTLE_UP: "restore"}

DONE = "done"
REFUSED = "refused"  # the eviction was refused (a PodDisruptionBudget): nothing released
PREVIEW = "preview"  # a Preview rule: recorded, not carried out

Gaps = dict[str, dict[str, Fraction | None]]  # kind -> metric -> absolute gap; None = usage missing

# The taint of crane's disable-scheduling action (its key; NoSchedule rather than crane's
# PreferNoSchedule, so that the node really takes no new pods while it is over the watermark).
SCHEDULING_TAINT = Taint(key="ensurance.crane.io/analyzed-pressure", effect="NoSchedule")
DISABLE_SCHEDULING = "DisableScheduling"
RESTORE_SCHEDULING = "RestoreScheduling"


class QosActuator(Protocol):
    """How the agent changes the node. The simulator and a real node agent implement it."""

    def throttle(self, pod: Pod, quota_millicores: int) -> None:
        """Set the pod's CFS quota."""
        ...

    def restore(self, pod: Pod, quota_millicores: int | None) -> None:
        """Raise the pod's CFS quota; None removes it (the pod's own limit applies again)."""
        ...

    def evict(self, pod: Pod, grace_seconds: int) -> bool:
        """Evict through the Eviction API; False when refused (a PodDisruptionBudget)."""
        ...

    def taint_node(self, node: Node, taint: Taint) -> None:
        """Add the taint to the node object (disable-scheduling)."""
        ...

    def untaint_node(self, node: Node, taint: Taint) -> None:
        """Remove the taint (same key and effect) from the node object."""
        ...


@dataclass(frozen=True, slots=True)
class Decision:
    kind: str  # Evict | ThrottleDown | ThrottleUp
    pod: str  # namespace/name
    metric: str
    released: int | None  # toward `metric`, in its absolute units (millicores, bytes); None = unknown
    reason: str
    outcome: str = DONE  # done | refused | preview
    action_name: str = ""  # the AvoidanceAction
    rule: str = ""  # "nodeqos/rule" whose watermark this serves
    quota: int | None = None  # throttle / restore: the new quota (None on restore: quota removed)
    gap_before: Fraction | None = None  # the metric's remaining gap when the action was chosen
    precise: bool = True  # False: one of "act on all candidates" (the reason says why)

    @property
    def action(self) -> str:
        """evict | throttle | restore."""
        return VERB[self.kind]


@dataclass(frozen=True, slots=True)
class SchedulingChange:
    """The node's scheduling taint added (DisableScheduling) or removed (RestoreScheduling)."""

    kind: str  # DisableScheduling | RestoreScheduling
    rules: tuple[str, ...]  # "nodeqos/rule" in force that asked for the taint (none on restore)
    outcome: str = DONE  # done | preview


@dataclass
class Execution:
    gaps: Gaps = field(default_factory=dict)  # as computed before acting (margin included)
    decisions: list[Decision] = field(default_factory=list)
    remaining: Gaps = field(default_factory=dict)  # what is left after acting
    skipped: dict[str, str] = field(default_factory=dict)  # pod -> why it was not acted on
    scheduling: SchedulingChange | None = None


def compute_gaps(
    state: NodeState,
    watermarks: Watermarks,
    registry: MetricRegistry,
    excess_percent: int = DEFAULT_EXECUTE_EXCESS_PERCENT,
) -> Gaps:
    """Absolute gaps per kind and metric (only positive ones; None when the usage is missing)."""
    gaps: Gaps = {}
    for kind in (EVICT, THROTTLE_DOWN, THROTTLE_UP):
        for name, mark in watermarks.get(kind, {}).items():
            metric = registry[name]
            value = metric.value(state)
            if value is None:
                gaps.setdefault(kind, {})[name] = None
                continue
            raw = mark.value - value if kind == THROTTLE_UP else value - mark.value
            if raw <= 0:
                continue
            margin = -excess_percent if kind == THROTTLE_UP else excess_percent
            gaps.setdefault(kind, {})[name] = metric.to_absolute(raw, state) * (100 + margin) / 100
    return gaps


def over_evictions(gap: Fraction | int, released: Iterable[int]) -> int:
    """Evictions beyond the fewest that would have closed `gap`, given what each eviction released.

    The fewest take the largest releases first. When even all of them do not close the gap, none
    was one too many.
    """
    amounts = sorted(released, reverse=True)
    if gap <= 0:
        return len(amounts)
    total = 0
    for count, amount in enumerate(amounts, start=1):
        total += amount
        if total >= gap:
            return len(amounts) - count
    return 0


def never_touched(state: PodState) -> str | None:
    """Why no action may ever touch the pod, whatever PodQOS says (None: some action may)."""
    pod = state.pod
    if state.critical:
        return f"critical (priority {pod.priority} >= {CRITICAL_PRIORITY}): never touched"
    if pod.is_terminating:
        return "already terminating"
    if pod.is_mirror:
        return "static (mirror) pod: the kubelet owns it"
    if pod.is_daemonset:
        return "DaemonSet pod: it belongs to this node"
    return None


class Executor:
    """One round on one node. `port` None plans without acting (Preview, dry runs)."""

    def __init__(
        self,
        state: NodeState,
        registry: MetricRegistry,
        *,
        podqos: Sequence[PodQOS] = (),
        precise: bool = True,
        excess_percent: int = DEFAULT_EXECUTE_EXCESS_PERCENT,
        port: QosActuator | None = None,
        preview: bool = False,
        now: float,
    ):
        self.state = state
        self.now = now  # the round's time: when a duration-limited do-not-disrupt has run out
        self.registry = registry
        self.podqos = podqos
        self.precise = precise
        self.excess_percent = excess_percent
        self.port = port
        self.preview = preview
        self.acted: set[str] = set()
        self.unknown_usage_evictions = 0
        self.result = Execution()

    # -- entry point -------------------------------------------------------------------------
    def run(
        self, watermarks: Watermarks, disable_scheduling: Sequence[str] = (), restore_scheduling: bool = False
    ) -> Execution:
        """Act on the watermarks; taint the node while `disable_scheduling` names rules in force,
        untaint it when none does and `restore_scheduling` allows."""
        self._schedule(tuple(disable_scheduling), restore_scheduling)
        gaps = compute_gaps(self.state, watermarks, self.registry, self.excess_percent)
        candidates = self._candidates()
        if not any(p.cpu_quota is not None for p in candidates):
            gaps.pop(THROTTLE_UP, None)  # headroom with nobody throttled is nothing to act on
        self.result.gaps = {kind: dict(by_metric) for kind, by_metric in gaps.items()}
        self.remaining = gaps
        self.result.remaining = gaps
        for kind in (EVICT, THROTTLE_DOWN, THROTTLE_UP):
            if kind == THROTTLE_UP:
                self._hold_restores()
            if gaps.get(kind):
                self._run_kind(kind, watermarks[kind], candidates)
        return self.result

    def _schedule(self, rules: tuple[str, ...], may_restore: bool) -> None:
        node = self.state.node
        tainted = any(
            t.key == SCHEDULING_TAINT.key and t.effect == SCHEDULING_TAINT.effect for t in node.taints
        )
        if rules and not tainted:
            change = SchedulingChange(DISABLE_SCHEDULING, rules)
        elif not rules and tainted and may_restore:
            change = SchedulingChange(RESTORE_SCHEDULING, ())
        else:
            return
        if self.preview:
            change = SchedulingChange(change.kind, change.rules, PREVIEW)
        elif self.port is not None and change.kind == DISABLE_SCHEDULING:
            self.port.taint_node(node, SCHEDULING_TAINT)
        elif self.port is not None:
            self.port.untaint_node(node, SCHEDULING_TAINT)
        self.result.scheduling = change

    # -- candidates --------------------------------------------------------------------------
    def _candidates(self) -> list[PodState]:
        """The pods any action may touch at all (PodQOS narrows them further per action)."""
        result = []
        for p in self.state.pods:
            if not p.pod.is_terminal and not self._skip(p, never_touched(p)):
                result.append(p)
        return result

    def _pool(self, kind: str, mark: Watermark, candidates: list[PodState]) -> list[PodState]:
        """The candidates of one kind and watermark. A restore gives back what a throttle took,
        whatever PodQOS says now: it acts on every throttled pod."""
        if kind == THROTTLE_UP:
            return [p for p in candidates if p.cpu_quota is not None]
        pool = [p for p in candidates if not self._skip(p, scope_refusal(self.podqos, p.pod, mark.actions))]
        if kind == EVICT:
            pool = [
                p
                for p in pool
                if not self._skip(p, protected_refusal(self.podqos, p.pod, mark.actions, self.now))
            ]
        return pool

    def _skip(self, state: PodState, reason: str | None) -> bool:
        if reason:
            self.result.skipped.setdefault(state.key, reason)
        return bool(reason)

    def _hold_restores(self) -> None:
        """No restore on a resource that had an avoidance gap this round: giving cpu back in the
        same round that took it would only oscillate."""
        up = self.remaining.get(THROTTLE_UP)
        if not up:
            return
        pressed = {
            self.registry[m].resource
            for kind in (EVICT, THROTTLE_DOWN)
            for m in self.result.gaps.get(kind, {})
        }
        for name in list(up):
            if self.registry[name].resource in pressed:
                del up[name]

    # -- one kind ----------------------------------------------------------------------------
    def _able(self, kind: str, metric: Metric) -> bool:
        return metric.evictable if kind == EVICT else metric.throttleable

    def _quantified(self, kind: str, metric: Metric) -> bool:
        return metric.evict_quantified if kind == EVICT else metric.throttle_quantified

    def _function(self, kind: str, metric: Metric) -> Callable[[PodState, ActionContext], Effect | None]:
        fn = {EVICT: metric.evict, THROTTLE_DOWN: metric.throttle, THROTTLE_UP: metric.restore}[kind]
        assert fn is not None
        return fn

    def _ordered(self, names: Iterable[str]) -> list[Metric]:
        metrics = [self.registry[n] for n in names]
        return sorted(metrics, key=lambda m: (-m.action_priority, self.registry.rank(m.name)))

    def _run_kind(self, kind: str, marks: dict[str, Watermark], candidates: list[PodState]) -> None:
        gaps = self.remaining[kind]
        metrics = self._ordered(gaps)
        reason = None
        if not self.precise:
            reason = "precise execution off: act on all candidates"
        else:
            for metric in metrics:
                if not self._quantified(kind, metric):
                    reason = f"{metric.name} is not quantified for {VERB[kind]}: act on all candidates"
                elif gaps[metric.name] is None:
                    reason = f"the node's {metric.name} usage is missing: act on all candidates"
                if reason:
                    break
        if reason:
            self._act_on_all(kind, marks, candidates, reason)
            return
        for metric in metrics:
            mark = marks[metric.name]
            self._act_precisely(kind, metric, mark, self._pool(kind, mark, candidates))

    def _act_on_all(
        self, kind: str, marks: dict[str, Watermark], candidates: list[PodState], reason: str
    ) -> None:
        able = [m for m in self._ordered(marks) if self._able(kind, m)]
        if not able:
            return
        metric = able[0]
        mark = marks[metric.name]
        order = sorter_for(metric)(self._pool(kind, mark, candidates))
        if kind == THROTTLE_UP:
            order.reverse()
        for p in order:
            if p.key in self.acted:
                continue
            effect = self._function(kind, metric)(p, self._context(mark))
            if effect is None:
                self._skip(p, f"nothing to {VERB[kind]} (cpu quota at its floor or ceiling)")
                continue
            self._apply(kind, metric, mark, p, effect, reason, precise=False)

    def _throttle_down_precisely(self, metric: Metric, mark: Watermark, pool: list[PodState]) -> None:
        """Step the candidates' quotas down, pass after pass over the sorted pods (one step of
        stepCPURatio per pod per pass, each from the quota the previous pass planned), until the
        gap is closed or no pod can go lower: the design's `for !TargetGapsRemoved(m) { for
        each pod: ThrottleFunc }`. Each pod then gets one decision, its quota after its last step.
        A pod whose usage is unknown takes one step only: what it releases cannot be counted, so
        further steps would only push it to its floor on no evidence."""
        fn = self._function(THROTTLE_DOWN, metric)
        ctx = self._context(mark)
        gap = self.remaining[THROTTLE_DOWN][metric.name]
        order = [p for p in sorter_for(metric)(pool) if p.key not in self.acted]
        stepped: dict[str, PodState] = {}  # pod key -> the pod at its planned quota
        planned: dict[str, tuple[Effect, int]] = {}  # pod key -> (its last step, how many steps)
        done: set[str] = set()  # pods that cannot (or must not) step further this round
        while gap is not None and gap > 0:
            progressed = False
            for p in order:
                if gap <= 0:
                    break
                if p.key in done:
                    continue
                effect = fn(stepped.get(p.key, p), ctx)
                released = None if effect is None else metric.released(p, effect)
                if effect is None or (released is not None and released <= 0):
                    done.add(p.key)
                    if p.key not in planned:
                        why = (
                            "cpu quota at its floor" if effect is None else f"would release no {metric.name}"
                        )
                        self._skip(p, f"nothing to throttle ({why})")
                    continue
                before, steps = planned.get(p.key, (None, 0))
                already = metric.released(p, before) if before is not None else 0
                gap -= (released or 0) - (already or 0)  # a step releases what it adds
                stepped[p.key] = PodState(p.pod, p.usage, effect.quota)
                planned[p.key] = (effect, steps + 1)
                progressed = True
                if released is None:
                    done.add(p.key)
            if not progressed:
                break
        for p in order:
            if p.key not in planned:
                continue
            effect, steps = planned[p.key]
            reason = f"{metric.name} gap {metric.format(self.remaining[THROTTLE_DOWN][metric.name])}"
            reason += f" (watermark from {mark.rule})"
            if steps > 1:
                reason += f"; {steps} steps of {ctx.step_cpu_ratio}%"
            if metric.released(p, effect) is None:
                reason += "; its usage is unknown, counted as releasing nothing"
            first = "none" if p.cpu_quota is None else f"{p.cpu_quota}m"
            detail = f"quota {first} -> {effect.quota}m"
            self._apply(THROTTLE_DOWN, metric, mark, p, Effect(effect.quota, effect.released, detail), reason)

    def _act_precisely(self, kind: str, metric: Metric, mark: Watermark, pool: list[PodState]) -> None:
        if kind == THROTTLE_DOWN:
            self._throttle_down_precisely(metric, mark, pool)
            return
        gaps = self.remaining[kind]
        order = sorter_for(metric)(pool)
        if kind == THROTTLE_UP:
            order.reverse()
        fn = self._function(kind, metric)
        for p in order:
            gap = gaps[metric.name]
            if gap is None or gap <= 0:
                break
            if p.key in self.acted:
                continue
            effect = fn(p, self._context(mark))
            if effect is None:
                self._skip(p, f"nothing to {VERB[kind]} (cpu quota at its floor or ceiling)")
                continue
            released = metric.released(p, effect)
            if kind != THROTTLE_UP and released is not None and released <= 0:
                self._skip(p, f"would release no {metric.name}")
                continue
            reason = f"{metric.name} gap {metric.format(gap)} (watermark from {mark.rule})"
            if released is None and kind == EVICT:
                if self.unknown_usage_evictions >= UNKNOWN_USAGE_EVICTIONS_PER_ROUND:
                    self._skip(
                        p,
                        f"its usage is unknown and {UNKNOWN_USAGE_EVICTIONS_PER_ROUND} such pod is "
                        "evicted per sample at most",
                    )
                    continue
                self.unknown_usage_evictions += 1
                reason += "; its usage is unknown: the one such eviction this sample"
            elif released is None:
                reason += "; its usage is unknown, counted as releasing nothing"
            self._apply(kind, metric, mark, p, effect, reason)

    # -- acting ------------------------------------------------------------------------------
    def _context(self, mark: Watermark) -> ActionContext:
        return mark.action.context(self.state.capacity("cpu"))

    def _apply(
        self,
        kind: str,
        metric: Metric,
        mark: Watermark,
        p: PodState,
        effect: Effect,
        reason: str,
        precise: bool = True,
    ) -> None:
        outcome = PREVIEW if self.preview else DONE
        if self.port is not None and not self.preview:
            if kind == EVICT:
                grace = effect_grace(mark, p)
                if not self.port.evict(p.pod, grace):
                    outcome = REFUSED
            elif kind == THROTTLE_DOWN:
                assert effect.quota is not None
                self.port.throttle(p.pod, effect.quota)
            else:
                self.port.restore(p.pod, effect.quota)
        self.acted.add(p.key)
        gap_before = self.remaining[kind].get(metric.name)
        self.result.decisions.append(
            Decision(
                kind=kind,
                pod=p.key,
                metric=metric.name,
                released=metric.released(p, effect) if outcome != REFUSED else 0,
                reason=reason if outcome != REFUSED else "eviction refused (PodDisruptionBudget)",
                outcome=outcome,
                action_name=mark.action.name,
                rule=mark.rule,
                quota=effect.quota if kind != EVICT else None,
                gap_before=gap_before,
                precise=precise,
            )
        )
        if outcome == REFUSED:
            return
        # What came back lowers every gap it counts toward: the kind's own, and for evictions
        # the ThrottleDown ones too (the node's usage is lower for everyone).
        kinds = (EVICT, THROTTLE_DOWN) if kind == EVICT else (kind,)
        for k in kinds:
            for name, gap in self.remaining.get(k, {}).items():
                if gap is None:
                    continue
                amount = self.registry[name].released(p, effect)
                if amount:
                    self.remaining[k][name] = gap - amount


def effect_grace(mark: Watermark, p: PodState) -> int:
    grace = mark.action.grace_seconds
    return p.pod.termination_grace_period if grace is None else grace


def gap_units(gap: Fraction | None) -> int | None:
    """A gap as the whole number of units (millicores, bytes) reports show, rounded up."""
    return None if gap is None else math.ceil(gap)
