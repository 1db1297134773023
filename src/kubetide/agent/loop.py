"""One sample of the node agent, and the metrics it exports.

Every interval: apply the watches' changes; rebuild the QosConfig when a crane object changed
(a broken reference keeps the previous configuration, with a warning; a rule on an unknown
metric is skipped, the others apply, and a Warning event `UnknownMetric` on its NodeQOS says
so); read usage; build the
NodeState (the Node object, its running pods with their usage and the quota the agent holds them
at); and hand it to `QosAgent.step`, the same call `kubetide qos` and the simulator make. Then
record events and metrics.

No rate, no action: until the usage source has a cpu rate for the node (the cgroup source's first
sample), the node's cpu is missing, and the executor would act on every candidate. The sample is
then only counted, and neither the analyzer's counters nor any pod are touched.

The first sample after start that is analyzed is analyze-only: the rules count it, its decisions
are logged ("[analyze only]"), nothing is done. What the agent sees right after a (re)start is
the least trustworthy: caches just listed, a rate over a single interval, and no memory of what
the previous agent did a moment ago; one interval of looking before acting costs 10 s.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from prometheus_client import CollectorRegistry, generate_latest

from kubetide.agent.actuator import (
    REASONS,
    REFUSED_REASON,
    RESTORED_REASON,
    TRIGGERED_REASON,
    UNKNOWN_METRIC_REASON,
)
from kubetide.agent.throttle import CgroupThrottler
from kubetide.agent.usage import UsageSource
from kubetide.agent.watch import NodeWatch
from kubetide.autoscaler.events import Event, EventType
from kubetide.clock import Clock
from kubetide.errors import ManifestError
from kubetide.kube.events import EventRecorder
from kubetide.kube.metrics import TEXT_CONTENT_TYPE, MetricMaker
from kubetide.model import Node
from kubetide.model.quantity import CPU, MEMORY
from kubetide.qos import AgentOptions, NodeState, PodState, QosActuator, QosAgent, QosConfig, RoundResult
from kubetide.qos.config import EVICT, THROTTLE_DOWN
from kubetide.qos.executor import DISABLE_SCHEDULING, DONE, PREVIEW, REFUSED

log = logging.getLogger("kubetide.agent")

ACTIONS = ("evict", "evict_refused", "throttle", "restore", "disable_scheduling", "restore_scheduling")


class AgentMetrics:
    """On a registry of their own, as the autoscaler's (kube/metrics.py)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        metrics = MetricMaker(self.registry, "kubetide_qos_agent")
        self.samples = metrics.counter("samples", "Samples taken.")
        self.samples_without_rate = metrics.counter(
            "samples_without_rate",
            "Samples without a node cpu rate yet (the first one): nothing analyzed or done.",
        )
        self.actions = metrics.counter("actions", "Actions carried out.", ["action"])
        # A dry run (no --act) decides the same actions and carries out none: counted here,
        # never as carried out, so a dashboard of the real agent is not fooled by a preview.
        self.dry_run_actions = metrics.counter(
            "dry_run_actions", "Actions a dry run decided and did not carry out.", ["action"]
        )
        for action in ACTIONS:
            self.actions.labels(action)
            self.dry_run_actions.labels(action)
        self.last_sample = metrics.gauge("last_sample_timestamp_seconds", "When the last sample was taken.")
        self.watermark_crossed = metrics.gauge(
            "watermark_crossed",
            "1 while the rule's metric is over its watermark at the last sample.",
            ["rule"],
        )
        self.throttled_pods = metrics.gauge("throttled_pods", "Pods the agent holds at a CFS quota.")

    def exposition(self) -> tuple[bytes, str]:
        return generate_latest(self.registry), TEXT_CONTENT_TYPE


@dataclass
class Sample:
    """What one sample did: None `result` when it could not act (the reason says why)."""

    result: RoundResult | None
    skipped: str = ""


class NodeAgentLoop:
    def __init__(
        self,
        watch: NodeWatch,
        usage: UsageSource,
        throttler: CgroupThrottler,
        actuator: QosActuator | None,
        events: EventRecorder | None,
        clock: Clock,
        options: AgentOptions | None = None,
    ):
        """`actuator` None: a dry run (decisions logged, nothing changed, no events)."""
        self.watch = watch
        self.usage = usage
        self.throttler = throttler
        self.actuator = actuator
        self.events = events
        self.clock = clock
        self.metrics = AgentMetrics()
        self.agent = QosAgent(QosConfig(), options)
        self._generation = -1
        self._analyzed_once = False  # the first analyzed sample acts on nothing
        self._fallback: tuple[str, ...] = ()  # resources the node's own usage lacked last sample

    # -- configuration -----------------------------------------------------------------------
    def _configure(self) -> None:
        if self.watch.generation == self._generation:
            return
        self._generation = self.watch.generation
        try:
            config = QosConfig.build(
                self.watch.of("NodeQOS"), self.watch.of("AvoidanceAction"), podqos=self.watch.of("PodQOS")
            )
        except ManifestError as exc:
            log.warning("crane objects not applied, keeping the previous ones: %s", exc)
            return
        for warning in config.warnings:
            log.warning("%s", warning)
        if self.events is not None and self.actuator is not None:
            now = self.clock.now()
            for skipped in config.skipped:
                self.events.record(
                    Event(
                        "NodeQOS",
                        skipped.nodeqos,
                        EventType.WARNING,
                        UNKNOWN_METRIC_REASON,
                        skipped.warning,
                        now,
                    )
                )
        # Rule counters and cooldowns carry over; those of actions that are gone are dropped.
        analyzer = self.agent.analyzer
        for memory in (analyzer.last_acted, analyzer.last_disabled):
            for name in [n for n in memory if n not in config.actions]:
                del memory[name]
        self.agent.config = analyzer.config = config

    # -- one sample --------------------------------------------------------------------------
    def sample(self) -> Sample:
        self.watch.refresh()
        self._configure()
        now = self.clock.now()
        self.metrics.samples.inc()
        self.metrics.last_sample.set(now)
        nodes: list[Node] = self.watch.of("Node")
        if not nodes:
            return Sample(None, f"Node {self.watch.node_name} not found")
        node = nodes[0]
        if self.throttler.throttled and not self.agent.config.for_node(node):
            # No rule applies here any more (its NodeQOS deleted or no longer selecting the node):
            # nothing would ever restore these pods, so they get their quotas back now.
            log.info("no NodeQOS selects the node: restored %s", ", ".join(self.restore_all()))
        pods = [p for p in self.watch.of("Pod") if not p.is_terminal]
        self.throttler.forget_missing({p.uid for p in pods})
        usage = self.usage.sample(pods)
        for problem in usage.problems:
            log.warning("usage: %s", problem)
        if CPU not in usage.node:
            self.metrics.samples_without_rate.inc()
            return Sample(None, "no cpu rate yet: nothing analyzed or done")
        state = NodeState(
            node,
            tuple(PodState(p, usage.pods.get(p.uid), self.throttler.quota(p.uid)) for p in pods),
            usage.node,
            self.usage.node_source,
        )
        self._say_fallback(state)
        before = {key: rule.in_force for key, rule in self.agent.analyzer.rules.items()}
        analyze_only = not self._analyzed_once
        self._analyzed_once = True
        result = self.agent.step(state, self.actuator, now, analyze_only=analyze_only)
        self._report(node, result, before)
        return Sample(result, "first sample after start: analyze only" if analyze_only else "")

    def _say_fallback(self, state: NodeState) -> None:
        """Log when the node's own measurement of a resource goes missing (its usage is then the
        sum of its pods', which misses the kubelet, the runtime and system daemons) and when it
        is back: once per change, not every sample."""
        missing = tuple(r for r in (CPU, MEMORY) if not state.measured(r))
        if missing == self._fallback:
            return
        if missing:
            log.warning(
                "node %s usage not measured by %s: using the sum of its pods' usage (misses what runs "
                "outside pods)",
                " and ".join(missing),
                state.usage_source,
            )
        else:
            log.info("node usage measured by %s again", state.usage_source)
        self._fallback = missing

    def _report(self, node: Node, result: RoundResult, before: dict) -> None:
        crossed = set(result.analysis.over)
        for qos in self.agent.config.for_node(node):
            for rule in qos.rules:
                label = f"{qos.name}/{rule.name}"
                self.metrics.watermark_crossed.labels(label).set(1 if label in crossed else 0)
        self.metrics.throttled_pods.set(len(self.throttler.throttled))
        counter = self.metrics.actions if self.actuator is not None else self.metrics.dry_run_actions
        for decision in result.decisions:
            action = "evict_refused" if decision.outcome == REFUSED else decision.action
            if decision.outcome in (DONE, REFUSED):
                counter.labels(action).inc()
            if decision.outcome == PREVIEW:
                mode = " [analyze only]"
            else:
                mode = "" if self.actuator else " [dry run]"
            log.info("%s %s (%s)%s", action, decision.pod, decision.reason, mode)
        change = result.execution.scheduling
        if change is not None and change.outcome == DONE:
            counter.labels(
                "disable_scheduling" if change.kind == DISABLE_SCHEDULING else "restore_scheduling"
            ).inc()
        if self.events is None or self.actuator is None:
            return
        now = result.now
        self._rule_events(node, before, now)
        for d in result.decisions:
            if d.outcome == PREVIEW:
                continue  # analyze only: nothing happened to the pod
            verb = {EVICT: "evicted", THROTTLE_DOWN: "throttled"}.get(d.kind, "restored")
            quota = ""
            if d.kind != EVICT:
                quota = f" to a cpu quota of {d.quota}m" if d.quota is not None else " (quota removed)"
            if d.outcome == REFUSED:
                self.events.record(
                    Event(
                        "Pod", d.pod, EventType.WARNING, REFUSED_REASON, f"eviction refused: {d.reason}", now
                    )
                )
            else:
                kind = EventType.WARNING if d.kind == EVICT else EventType.NORMAL
                self.events.record(
                    Event("Pod", d.pod, kind, REASONS[d.kind], f"{verb}{quota}: {d.reason}", now)
                )
        if change is not None and change.outcome == DONE:
            disable = change.kind == DISABLE_SCHEDULING
            message = f"scheduling disabled: {', '.join(change.rules)}" if disable else "scheduling restored"
            kind = EventType.WARNING if disable else EventType.NORMAL
            self.events.record(Event("Node", node.name, kind, change.kind, message, now))

    def _rule_events(self, node: Node, before: dict, now: float) -> None:
        assert self.events is not None
        actions = {(q.name, r.name): r.action_name for q in self.agent.config.nodeqos for r in q.rules}
        for key, rule in self.agent.analyzer.rules.items():
            if rule.in_force == before.get(key, False) or key not in actions:
                continue
            label = f"{key[0]}/{key[1]}"
            if rule.in_force:
                message = f"{label} triggered action {actions[key]}"
                self.events.record(
                    Event("Node", node.name, EventType.WARNING, TRIGGERED_REASON, message, now)
                )
            else:
                message = f"{label} restored action {actions[key]}"
                self.events.record(Event("Node", node.name, EventType.NORMAL, RESTORED_REASON, message, now))

    def restore_all(self) -> list[str]:
        """Give every throttled pod its original quota back (shutdown)."""
        restored = self.throttler.restore_all()
        self.metrics.throttled_pods.set(0)
        return restored
