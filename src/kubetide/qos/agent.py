"""The node QoS agent: analyzer + precise executor for one node, one sample at a time.

The simulator creates one `QosAgent` per node and calls `step` every collect interval (10 s by
default) with the node's state and its `QosActuator`; a real node agent does the same on wall
time. The agent keeps only the rule counters and the cooldowns; everything about the node
(usage, which pods are throttled and at what quota) comes in with each state.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction

from kubetide.clock import Clock
from kubetide.qos.analyzer import Analysis, Analyzer
from kubetide.qos.config import EVICT, THROTTLE_DOWN, THROTTLE_UP, QosConfig
from kubetide.qos.executor import (
    DEFAULT_EXECUTE_EXCESS_PERCENT,
    DONE,
    Decision,
    Execution,
    Executor,
    Gaps,
    QosActuator,
    over_evictions,
)
from kubetide.qos.state import NodeState


@dataclass(frozen=True, slots=True)
class AgentOptions:
    precise: bool = True  # False: crane's old behaviour, act on every candidate
    execute_excess_percent: int = DEFAULT_EXECUTE_EXCESS_PERCENT
    one_sample: bool = False  # thresholds count as reached after one sample (`kubetide qos`)


@dataclass
class RoundResult:
    """What one step decided, for reports."""

    node: str
    now: float
    values: dict[str, Fraction | None] = field(default_factory=dict)  # metric -> value
    execution: Execution = field(default_factory=Execution)
    preview: Execution = field(default_factory=Execution)
    analysis: Analysis = field(default_factory=Analysis)

    @property
    def gaps(self) -> Gaps:
        return self.execution.gaps

    @property
    def decisions(self) -> list[Decision]:
        return self.execution.decisions

    @property
    def over_watermark(self) -> bool:
        """Whether this sample was over any (non-Preview) rule's watermark: what a report adds up
        into seconds over the watermark."""
        return bool(self.analysis.over)

    def counts(self) -> dict[str, int]:
        """Carried-out actions: {"throttles", "restores", "evictions"}."""
        done = [d for d in self.decisions if d.outcome == DONE]
        return {
            "throttles": sum(d.kind == THROTTLE_DOWN for d in done),
            "restores": sum(d.kind == THROTTLE_UP for d in done),
            "evictions": sum(d.kind == EVICT for d in done),
        }

    def over_evictions(self) -> int:
        """Evictions beyond the fewest that would have closed each Evict gap (as the executor saw
        it, margin included). Metrics whose gap or releases are unknown count nothing."""
        total = 0
        for metric, gap in self.gaps.get(EVICT, {}).items():
            done = [
                d.released
                for d in self.decisions
                if d.kind == EVICT and d.metric == metric and d.outcome == DONE
            ]
            if gap is None or any(r is None for r in done):
                continue
            total += over_evictions(gap, [r for r in done if r is not None])
        return total


class QosAgent:
    def __init__(self, config: QosConfig, options: AgentOptions | None = None, clock: Clock | None = None):
        self.config = config
        self.options = options or AgentOptions()
        self.clock = clock
        self.analyzer = Analyzer(config)

    def step(
        self,
        state: NodeState,
        actuator: QosActuator | None,
        now: float | None = None,
        *,
        analyze_only: bool = False,
    ) -> RoundResult:
        """One collect interval: count the sample, act through `actuator` (None: plan only), and
        report. `now` defaults to the agent's clock. `analyze_only`: the rules count the sample,
        but every decision is only recorded (outcome preview): nothing is done and no cooldown
        starts (the node agent's first sample after start)."""
        if now is None:
            if self.clock is None:
                raise ValueError("QosAgent.step needs `now` or an agent clock")
            now = self.clock.now()
        analysis = self.analyzer.analyze(state, now, one_sample=self.options.one_sample)
        execution = self._executor(
            state, now, port=None if analyze_only else actuator, preview=analyze_only
        ).run(analysis.watermarks, analysis.disable_scheduling, analysis.scheduling_restorable)
        preview = self._executor(state, now, preview=True).run(
            analysis.preview, analysis.preview_disable_scheduling
        )
        for decision in execution.decisions:
            if decision.outcome == DONE and decision.kind in (EVICT, THROTTLE_DOWN):
                self.analyzer.acted(decision.action_name, now)
        return RoundResult(state.name, now, analysis.values, execution, preview, analysis)

    def _executor(
        self, state: NodeState, now: float, *, port: QosActuator | None = None, preview: bool = False
    ) -> Executor:
        return Executor(
            state,
            self.config.registry,
            podqos=self.config.podqos,
            precise=self.options.precise,
            excess_percent=self.options.execute_excess_percent,
            port=port,
            preview=preview,
            now=now,
        )
