"""Crane's disable-scheduling action: the node is tainted NoSchedule while a rule using it is in
force, and untainted after restoreThreshold quiet samples once the action's coolDown has passed."""

import pytest
from qos_factories import Recorder, config, pod, ps, rules, state

from kubetide.qos import AgentOptions, QosAgent
from kubetide.qos.executor import DISABLE_SCHEDULING, PREVIEW, RESTORE_SCHEDULING, SCHEDULING_TAINT

TAINT = {"key": SCHEDULING_TAINT.key, "effect": "NoSchedule"}


def disable_scheduling(cool_down=0, strategy="None", avoid=2, restore=2):
    return config(
        f"""
kind: NodeQOS
metadata: {{name: q}}
spec:
  rules:
  - name: busy
    actionName: disablescheduling
    avoidanceThreshold: {avoid}
    restoreThreshold: {restore}
    strategy: {strategy}
    metricRule: {{name: cpu_total_usage, value: 3000}}
---
kind: AvoidanceAction
metadata: {{name: disablescheduling}}
spec: {{coolDownSeconds: {cool_down}}}
"""
    )


def play(cfg, samples):
    """Step one agent through (time, cpu) samples; the node carries the taint the actuator set.
    Returns [(time, "taint" | "untaint")]."""
    agent, tainted, changes = QosAgent(cfg), False, []
    for now, cpu in samples:
        port = Recorder()
        agent.step(state(ps(pod("a"), cpu=cpu), taints=[TAINT] if tainted else []), port, now=now)
        for verb, node, taint in port.calls:
            assert (node, taint) == ("n1", f"{SCHEDULING_TAINT.key}:NoSchedule")
            tainted = verb == "taint"
            changes.append((now, verb))
    return changes


HOT, COOL = 3500, 1000


@pytest.mark.parametrize(
    ("cool_down", "samples", "expected"),
    [
        # two samples over: tainted; two quiet samples: untainted
        (0, [(0, HOT), (10, HOT), (20, HOT), (30, COOL), (40, COOL)], [(10, "taint"), (40, "untaint")]),
        # one quiet sample is not enough; a hot one in between starts the count again
        (
            0,
            [(0, HOT), (10, HOT), (20, COOL), (30, HOT), (40, COOL), (50, COOL)],
            [(10, "taint"), (50, "untaint")],
        ),
        # one sample over is not enough (avoidanceThreshold 2)
        (0, [(0, HOT), (10, COOL), (20, HOT), (30, COOL)], []),
        # coolDown: 30 s after the last sample over the watermark (20 s), not before
        (
            30,
            [(0, HOT), (10, HOT), (20, HOT), (30, COOL), (40, COOL), (50, COOL)],
            [(10, "taint"), (50, "untaint")],
        ),
    ],
)
def test_taint_while_in_force_untaint_after_restore_threshold(cool_down, samples, expected):
    assert play(disable_scheduling(cool_down), samples) == expected


def test_the_change_is_reported_and_not_repeated_on_a_tainted_node():
    agent = QosAgent(disable_scheduling(avoid=1), AgentOptions(one_sample=True))
    first = agent.step(state(ps(pod("a"), cpu=HOT)), Recorder(), now=0)
    assert first.execution.scheduling.kind == DISABLE_SCHEDULING
    assert first.execution.scheduling.rules == ("q/busy",)
    port = Recorder()
    again = agent.step(state(ps(pod("a"), cpu=HOT), taints=[TAINT]), port, now=10)
    assert again.execution.scheduling is None and port.calls == []


def test_a_leftover_taint_is_removed_when_no_rule_needs_it():
    port = Recorder()
    result = QosAgent(disable_scheduling()).step(state(ps(pod("a"), cpu=COOL), taints=[TAINT]), port, now=0)
    assert result.execution.scheduling.kind == RESTORE_SCHEDULING
    assert port.calls == [("untaint", "n1", f"{SCHEDULING_TAINT.key}:NoSchedule")]


def test_preview_records_the_taint_without_setting_it():
    port = Recorder()
    agent = QosAgent(disable_scheduling(strategy="Preview", avoid=1))
    result = agent.step(state(ps(pod("a"), cpu=HOT)), port, now=0)
    assert port.calls == [] and result.execution.scheduling is None
    assert (result.preview.scheduling.kind, result.preview.scheduling.outcome) == (
        DISABLE_SCHEDULING,
        PREVIEW,
    )


def test_disable_scheduling_and_eviction_act_together():
    cfg = rules(
        "{name: evict, actionName: evict, metricRule: {name: cpu_total_usage, value: 3000}}",
        "{name: busy, actionName: ds, metricRule: {name: cpu_total_usage, value: 3000}}",
        actions="---\nkind: AvoidanceAction\nmetadata: {name: ds}\nspec: {coolDownSeconds: 0}",
    )
    port = Recorder()
    QosAgent(cfg, AgentOptions(one_sample=True)).step(state(ps(pod("a"), cpu=HOT)), port, now=0)
    assert [c[0] for c in port.calls] == ["taint", "evict"]
