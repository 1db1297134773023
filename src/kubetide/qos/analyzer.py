"""The analyzer: NodeQOS rules -> watermarks, one sample at a time.

Every collect interval each rule compares its metric's current value with its watermark and
counts consecutive samples: `avoidanceThreshold` samples over it put the rule in force,
`restoreThreshold` samples at or under it lift it (and, for a throttling action, make it a
restore watermark). Rules in force contribute a watermark to each action kind their action takes
(Evict, ThrottleDown); lifted throttling rules contribute to ThrottleUp. Per kind and metric the
lowest watermark wins: it is the one that asks the most.

An AvoidanceAction's coolDownSeconds starts when the executor carries out an avoidance with it;
until it has passed, the action's rules contribute nothing (neither more avoidance nor restore:
the last action's effect has to show in the samples first). Preview rules go into a separate set
that the executor plans without acting on.

Rules whose action is crane's disable-scheduling action (neither throttle nor eviction) add no
watermark: while one is in force the node must carry the scheduling taint (`disable_scheduling`).
Once none is, the taint may go when every such action's coolDownSeconds has passed since the last
sample over the watermark with the rule in force (`scheduling_held` lists those still cooling), as
crane waits its coolDown before it lets pods be scheduled again.

A metric whose value cannot be measured this sample leaves its rules' counters alone. A rule
already in force keeps its watermark, and the executor, finding the usage missing, falls back to
acting on all candidates, as the design prescribes.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from fractions import Fraction

from kubetide.qos.config import EVICT, THROTTLE_DOWN, THROTTLE_UP, AvoidanceAction, QosConfig, Rule
from kubetide.qos.state import NodeState


@dataclass(frozen=True, slots=True)
class Watermark:
    """The lowest watermark in force for one action kind and metric. `action` is its rule's
    AvoidanceAction (its parameters apply); `actions` names every AvoidanceAction whose rules in
    force put a watermark on this kind and metric: a pod any of them may touch (PodQOS) is a
    candidate, as crane merges the candidate lists of all triggered actions."""

    metric: str
    value: Fraction  # in the metric's terms: a percentage, or an absolute amount
    rule: str  # "nodeqos/rule"
    action: AvoidanceAction
    actions: tuple[str, ...] = ()  # empty: just `action`

    def __post_init__(self) -> None:
        if not self.actions:
            object.__setattr__(self, "actions", (self.action.name,))


# kind -> metric -> the lowest watermark
Watermarks = dict[str, dict[str, Watermark]]


@dataclass
class RuleState:
    above: int = 0  # consecutive samples over the watermark
    below: int = 0  # consecutive samples at or under it
    in_force: bool = False


@dataclass
class Analysis:
    watermarks: Watermarks = field(default_factory=dict)
    preview: Watermarks = field(default_factory=dict)
    values: dict[str, Fraction | None] = field(default_factory=dict)
    cooling: list[str] = field(default_factory=list)  # rules held back by their action's coolDown
    over: list[str] = field(default_factory=list)  # rules (not Preview) over their watermark now
    disable_scheduling: list[str] = field(default_factory=list)  # rules in force asking for the taint
    preview_disable_scheduling: list[str] = field(default_factory=list)  # the same, Preview rules
    scheduling_held: list[str] = field(default_factory=list)  # actions whose coolDown keeps the taint

    @property
    def scheduling_restorable(self) -> bool:
        """Whether the scheduling taint may be lifted now."""
        return not self.disable_scheduling and not self.scheduling_held


def _add(target: Watermarks, kind: str, mark: Watermark) -> None:
    by_metric = target.setdefault(kind, {})
    current = by_metric.get(mark.metric)
    if current is None:
        by_metric[mark.metric] = mark
        return
    lowest = mark if mark.value < current.value else current
    actions = tuple(dict.fromkeys((*lowest.actions, *current.actions, *mark.actions)))
    by_metric[mark.metric] = dataclasses.replace(lowest, actions=actions)


class Analyzer:
    """Rule counters and cooldowns for one node. Time only ever comes in as an argument."""

    def __init__(self, config: QosConfig):
        self.config = config
        self.rules: dict[tuple[str, str], RuleState] = {}
        self.last_acted: dict[str, float] = {}  # AvoidanceAction name -> when it last acted
        # disable-scheduling AvoidanceAction name -> its last sample over a watermark while in force
        self.last_disabled: dict[str, float] = {}

    def analyze(self, state: NodeState, now: float, *, one_sample: bool = False) -> Analysis:
        """Count this sample and return the watermarks in force. With `one_sample` every threshold
        counts as reached after this one sample (`kubetide qos` looks at one instant)."""
        analysis = Analysis()
        registry = self.config.registry
        for qos in self.config.for_node(state.node):
            for rule in qos.rules:
                metric = registry[rule.metric]
                if rule.metric not in analysis.values:
                    analysis.values[rule.metric] = metric.value(state)
                value = analysis.values[rule.metric]
                counters = self.rules.setdefault((qos.name, rule.name), RuleState())
                over = value is not None and value > rule.watermark
                if value is not None:
                    self._count(counters, rule, over, one_sample)
                    if over and not rule.preview:
                        analysis.over.append(f"{qos.name}/{rule.name}")
                action = self.config.actions[rule.action_name]
                restoring = (
                    not counters.in_force
                    and counters.below >= (1 if one_sample else rule.restore_threshold)
                    and action.throttles
                    and metric.throttleable
                )
                if not counters.in_force and not restoring:
                    continue
                label = f"{qos.name}/{rule.name}"
                if action.disables_scheduling:
                    if rule.preview:
                        analysis.preview_disable_scheduling.append(label)
                    else:
                        analysis.disable_scheduling.append(label)
                        if over:
                            self.last_disabled[action.name] = now
                    continue
                if self.cooling(action, now):
                    analysis.cooling.append(label)
                    continue
                target = analysis.preview if rule.preview else analysis.watermarks
                mark = Watermark(rule.metric, rule.watermark, label, action)
                for kind in action.kinds(metric) if counters.in_force else (THROTTLE_UP,):
                    _add(target, kind, mark)
        analysis.scheduling_held = [
            name
            for name, last in self.last_disabled.items()
            if now - last < self.config.actions[name].cool_down_seconds
        ]
        return analysis

    @staticmethod
    def _count(counters: RuleState, rule: Rule, over: bool, one_sample: bool) -> None:
        if over:
            counters.above += 1
            counters.below = 0
            if counters.above >= (1 if one_sample else rule.avoidance_threshold):
                counters.in_force = True
        else:
            counters.below += 1
            counters.above = 0
            if counters.below >= (1 if one_sample else rule.restore_threshold):
                counters.in_force = False

    def cooling(self, action: AvoidanceAction, now: float) -> bool:
        last = self.last_acted.get(action.name)
        return last is not None and now - last < action.cool_down_seconds

    def acted(self, action_name: str, now: float) -> None:
        """The executor carried out an avoidance with this action: its coolDown starts now."""
        self.last_acted[action_name] = now


__all__ = ["EVICT", "THROTTLE_DOWN", "THROTTLE_UP", "Analysis", "Analyzer", "RuleState", "Watermark"]
