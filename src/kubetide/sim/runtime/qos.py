"""The node QoS agent (kubetide.qos) on every simulated node.

`spec.qos` turns it on:

    qos:
      collectInterval: 10s         # one sample per node this often
      precise: true                # false: crane's old behaviour, act on every candidate pod
      executeExcessPercent: 10
      compare: false               # true: run both `precise` modes side by side (sweep/compare.py)
      objects:                     # NodeQOS, AvoidanceAction and PodQOS, inline or {file: path}
      - {apiVersion: ensurance.crane.io/v1alpha1, kind: NodeQOS, ...}

Every collect interval, on every Ready node some NodeQOS selects, `NodeAgents` builds the node's
`NodeState` from the world (each pod's usage from its profile, spec/profiles.py, capped at its limit
and at the agent's CFS quota; node usage = the sum over its pods) and steps that node's `QosAgent`.
It is the agent's `QosActuator`: throttle and restore record the quota per pod, which caps the
pod's cpu usage from the next sample on; evict goes through the simulator's Eviction API, so PDBs
apply (a refusal returns False) and the evicted pod is recreated by its controller and scheduled
anew, possibly onto a node the autoscaler adds for it; taint_node / untaint_node (crane's
disable-scheduling action) change the node object in the world, so the simulated scheduler's taint
filter keeps new pods off the node while it carries the taint. The agent's evictions are not the
autoscaler's: they count in `qos`, not in the summary's `evictions` or the autoscaler invariants.

Reports: summary.json `qos` (throttles, restores, evictions, over_evictions, seconds_over_watermark,
evictions_refused, nodes_over_watermark_at_end, scheduling_disabled, precise; with `compare`, each
mode's run has its own directory and compare.json's settings[].qos holds its counts), timeline.csv columns `qos_*`, events.jsonl records from source
`qos-agent` (crane's node events AvoidanceTriggered / RestoreTriggered when a rule comes into force
or is lifted; DisableScheduling / RestoreScheduling when the node's taint is added or removed; one
AvoidanceEvict / AvoidanceEvictRefused / AvoidanceThrottle / AvoidanceRestore / AvoidancePreview
per decision), and a QoS panel in report.html. A scenario without `spec.qos` builds none of this.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from kubetide.autoscaler.ports import EvictionOutcome
from kubetide.model import Node, Pod, Taint
from kubetide.model.quantity import format_units
from kubetide.qos import NodeState, PodState, QosAgent, RoundResult
from kubetide.qos.config import EVICT, THROTTLE_DOWN, THROTTLE_UP
from kubetide.qos.executor import (
    DISABLE_SCHEDULING,
    DONE,
    PREVIEW,
    REFUSED,
    Decision,
    SchedulingChange,
    gap_units,
)
from kubetide.sim.runtime.engine import Engine
from kubetide.sim.runtime.events import EventLog
from kubetide.sim.runtime.eviction import EvictionApi
from kubetide.sim.runtime.world import World, WorldObserver
from kubetide.sim.spec.qos import QosSettings

SOURCE = "qos-agent"
REASONS = {EVICT: "AvoidanceEvict", THROTTLE_DOWN: "AvoidanceThrottle", THROTTLE_UP: "AvoidanceRestore"}
REFUSED_REASON = "AvoidanceEvictRefused"
PREVIEW_REASON = "AvoidancePreview"


# -- the component ----------------------------------------------------------------------------


@dataclass
class QosCounters:
    throttles: int = 0
    restores: int = 0
    evictions: int = 0
    evictions_refused: int = 0
    over_evictions: int = 0
    seconds_over_watermark: float = 0.0
    previews: int = 0
    scheduling_disabled: int = 0  # times a node got the disable-scheduling taint


class NodeAgents(WorldObserver):
    """One QosAgent per node, stepped every collect interval; the agents' QosActuator."""

    def __init__(
        self,
        engine: Engine,
        world: World,
        eviction: EvictionApi,
        log: EventLog,
        settings: QosSettings,
        end: float,
    ):
        self.engine = engine
        self.world = world
        self.eviction = eviction
        self.log = log
        self.settings = settings
        self.end = end
        self.config = settings.config
        self.options = settings.options()
        # Per run: the profile cache is keyed by pod UID, which another run reuses.
        self.usage = dataclasses.replace(settings.usage, owners=self.world.owners, _resolved={})
        self.agents: dict[str, QosAgent] = {}
        self.quotas: dict[str, int] = {}  # pod UID -> CFS quota (millicores) the agent set
        self.over: set[str] = set()  # nodes over a watermark at their last sample
        self.peaks: dict[str, float] = {}  # resource -> the hottest node's usage, % of capacity
        self.c = QosCounters()
        self.samples = 0
        self.evicting = False  # an eviction of ours is in the Eviction API right now
        self._actions = {(q.name, r.name): r.action_name for q in self.config.nodeqos for r in q.rules}
        world.subscribe(self)

    def start(self) -> None:
        """First sample now (the warm start), then every collect interval."""
        self.engine.at(self.engine.now(), self._tick)

    # -- world -------------------------------------------------------------------------------
    def pod_removed(self, pod: Pod) -> None:
        self.quotas.pop(pod.uid, None)
        self.usage.forget(pod.uid)

    def node_removed(self, node: Node) -> None:
        self.agents.pop(node.name, None)
        self.over.discard(node.name)

    # -- QosActuator -------------------------------------------------------------------------
    def throttle(self, pod: Pod, quota_millicores: int) -> None:
        self.quotas[pod.uid] = quota_millicores

    def restore(self, pod: Pod, quota_millicores: int | None) -> None:
        if quota_millicores is None:
            self.quotas.pop(pod.uid, None)
        else:
            self.quotas[pod.uid] = quota_millicores

    def evict(self, pod: Pod, grace_seconds: int) -> bool:
        self.evicting = True
        try:
            outcome = self.eviction.evict(pod.uid, grace_seconds)
        finally:
            self.evicting = False
        return outcome is EvictionOutcome.EVICTED

    def taint_node(self, node: Node, taint: Taint) -> None:
        self._retaint(node, taint, (taint,))

    def untaint_node(self, node: Node, taint: Taint) -> None:
        self._retaint(node, taint, ())

    def _retaint(self, node: Node, taint: Taint, added: tuple[Taint, ...]) -> None:
        """Replace the world's node with one whose taints of `taint`'s key and effect are `added`."""
        current = self.world.node(node.name)
        if current is None:
            return
        kept = tuple(t for t in current.taints if (t.key, t.effect) != (taint.key, taint.effect))
        if (*kept, *added) != current.taints:
            self.world.update_node(dataclasses.replace(current, taints=(*kept, *added)))

    # -- sampling ----------------------------------------------------------------------------
    def _tick(self) -> None:
        now = self.engine.now()
        t = now - self.engine.start
        interval = self.settings.collect_interval
        span = max(0.0, min(interval, self.end - now))
        snapshot = self.world.snapshot
        usage = self.usage
        quotas = self.quotas
        peaks: dict[str, float] = {}
        self.samples += 1
        for node in list(snapshot.nodes()):
            if not node.ready or not self.config.for_node(node):
                self.over.discard(node.name)  # no agent here (or its kubelet is down): no sample
                continue
            agent = self.agents.get(node.name)
            if agent is None:
                agent = self.agents[node.name] = QosAgent(self.config, self.options)
            pods = []
            for pod in snapshot.pods_on(node.name).values():
                if pod.is_terminal:
                    continue
                quota = quotas.get(pod.uid)
                pods.append(PodState(pod, usage.usage(pod, t, quota), quota))
            state = NodeState(node, tuple(pods))
            for resource in self.settings.resources:
                capacity = state.capacity(resource)
                if capacity:
                    used = sum(p.usage.get(resource, 0) for p in pods if p.usage is not None)
                    peaks[resource] = max(peaks.get(resource, 0.0), round(100 * used / capacity, 2))
            before = {key: rs.in_force for key, rs in agent.analyzer.rules.items()}
            result = agent.step(state, self, now)
            self._record(node, result, before, span)
        self.peaks = peaks
        self.engine.after(interval, self._tick)

    def _record(self, node: Node, result: RoundResult, before: dict, span: float) -> None:
        for key, rule_state in self.agents[node.name].analyzer.rules.items():
            was = before.get(key, False)
            if rule_state.in_force == was:
                continue
            action = self._actions.get(key, "")
            label = f"{key[0]}/{key[1]}"
            if rule_state.in_force:
                self.log.record(
                    "Node",
                    node.name,
                    "Warning",
                    "AvoidanceTriggered",
                    f"{label} triggered action {action}",
                    SOURCE,
                )
            else:
                self.log.record(
                    "Node",
                    node.name,
                    "Normal",
                    "RestoreTriggered",
                    f"{label} restored action {action}",
                    SOURCE,
                )
        for decision in result.decisions:
            if decision.outcome == REFUSED:
                self.c.evictions_refused += 1
            elif decision.outcome == DONE:
                if decision.kind == EVICT:
                    self.c.evictions += 1
                elif decision.kind == THROTTLE_DOWN:
                    self.c.throttles += 1
                else:
                    self.c.restores += 1
            self._event(node, decision)
        for decision in result.preview.decisions:
            self.c.previews += 1
            self._event(node, decision)
        for change in (result.execution.scheduling, result.preview.scheduling):
            if change is not None:
                self._scheduling_event(node, change)
        self.c.over_evictions += result.over_evictions()
        if result.over_watermark:
            self.c.seconds_over_watermark += span
            self.over.add(node.name)
        else:
            self.over.discard(node.name)

    def _scheduling_event(self, node: Node, change: SchedulingChange) -> None:
        disable = change.kind == DISABLE_SCHEDULING
        rules = ", ".join(change.rules)
        if change.outcome == PREVIEW:
            self.log.record(
                "Node",
                node.name,
                "Normal",
                PREVIEW_REASON,
                f"would disable scheduling (Preview, {rules})",
                SOURCE,
            )
            return
        if disable:
            self.c.scheduling_disabled += 1
        self.log.record(
            "Node",
            node.name,
            "Warning" if disable else "Normal",
            change.kind,
            f"scheduling disabled: {rules}" if disable else "scheduling restored",
            SOURCE,
        )

    def _event(self, node: Node, d: Decision) -> None:
        metric = self.config.registry.get(d.metric)
        released = (
            "unknown" if d.released is None or metric is None else format_units(metric.resource, d.released)
        )
        gap = gap_units(d.gap_before)
        extra: dict[str, Any] = {
            "node": node.name,
            "action": d.action,
            "metric": d.metric,
            "rule": d.rule,
            "released": d.released,
            "gap": gap,
            "precise": d.precise,
        }
        if d.kind != EVICT:
            extra["quota"] = d.quota
        verb = {EVICT: "evicted", THROTTLE_DOWN: "throttled", THROTTLE_UP: "restored"}[d.kind]
        quota = ""
        if d.kind != EVICT:
            quota = f" to a cpu quota of {d.quota}m" if d.quota is not None else " (quota removed)"
        if d.outcome == REFUSED:
            self.log.record(
                "Pod",
                d.pod,
                "Warning",
                REFUSED_REASON,
                f"eviction from {node.name} refused: {d.reason}",
                SOURCE,
                **extra,
            )
        elif d.outcome == PREVIEW:
            self.log.record(
                "Pod",
                d.pod,
                "Normal",
                PREVIEW_REASON,
                f"would be {verb} on {node.name}{quota} (Preview, {d.reason}), releasing {released}",
                SOURCE,
                **extra,
            )
        else:
            self.log.record(
                "Pod",
                d.pod,
                "Warning" if d.kind == EVICT else "Normal",
                REASONS[d.kind],
                f"{verb} on {node.name}{quota}: {d.reason}; releases {released}",
                SOURCE,
                **extra,
            )

    # -- reports -----------------------------------------------------------------------------
    def timeline_columns(self, row: dict) -> None:
        row["qos_nodes_over_watermark"] = len(self.over)
        row["qos_evictions_total"] = self.c.evictions
        row["qos_throttles_total"] = self.c.throttles
        row["qos_throttled_pods"] = len(self.quotas)
        for resource in self.settings.resources:
            row[f"qos_peak_{resource}_pct"] = self.peaks.get(resource, 0.0)

    def summary(self) -> dict[str, Any]:
        c = self.c
        return {
            "throttles": c.throttles,
            "restores": c.restores,
            "evictions": c.evictions,
            "over_evictions": c.over_evictions,
            "seconds_over_watermark": round(c.seconds_over_watermark, 3),
            "evictions_refused": c.evictions_refused,
            "nodes_over_watermark_at_end": len(self.over),
            "scheduling_disabled": c.scheduling_disabled,
            "precise": self.settings.precise,
        }
