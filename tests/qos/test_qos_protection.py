"""Evictions the agent never makes on its own judgement (issue #26, item 8): pods without a
controller or annotated not to be disrupted, unless a PodQOS selects them for eviction; and pods
of unknown usage, at most one per sample (what they release cannot close a gap)."""

import dataclasses

import pytest
from qos_factories import Recorder, pod, ps, rules, state

from kubetide.qos import EVICT, THROTTLE_DOWN, AgentOptions, QosAgent
from kubetide.qos.executor import UNKNOWN_USAGE_EVICTIONS_PER_ROUND
from kubetide.qos.protection import DO_NOT_DISRUPT, SAFE_TO_EVICT, eviction_protection

EVICT_AT_2000 = "{name: r, actionName: evict, metricRule: {name: cpu_total_usage, value: 2000}}"
THROTTLE_AT_2000 = "{name: t, actionName: throttle, metricRule: {name: cpu_total_usage, value: 2000}}"
PODQOS_EVICTS_PINNED = """---
kind: PodQOS
metadata: {name: pinned}
spec:
  allowedActions: [evict]
  labelSelector: {matchLabels: {app: pinned}}
"""
PODQOS_OTHER_ACTION = PODQOS_EVICTS_PINNED.replace("[evict]", "[throttle]")
PODQOS_SELECTS_NOTHING_HERE = PODQOS_EVICTS_PINNED.replace("app: pinned", "app: elsewhere")


def step(cfg, *pods, node_cpu=3000, now=0.0):
    st_ = state(*pods, usage={"cpu": node_cpu, "memory": 0})
    recorder = Recorder()
    result = QosAgent(cfg, AgentOptions(one_sample=True)).step(st_, recorder, now=now)
    return result, recorder


def labelled(name, **kwargs):
    """A pod labelled app=pinned (what PODQOS_EVICTS_PINNED selects)."""
    p = pod(name, **kwargs)
    p.meta.labels["app"] = "pinned"
    return p


@pytest.mark.parametrize(
    ("protected", "why"),
    [
        (pod("bare", owner=None), "no controller"),
        (pod("opted-out", annotations={SAFE_TO_EVICT: "false"}), "safe-to-evict"),
        (pod("opted-out-caps", annotations={SAFE_TO_EVICT: "False"}), "safe-to-evict"),
        (pod("karpenter", annotations={DO_NOT_DISRUPT: "true"}), "do-not-disrupt"),
        (pod("karpenter-for-a-while", annotations={DO_NOT_DISRUPT: "30m"}), "do-not-disrupt"),
        (pod("finishing", annotations={SAFE_TO_EVICT: "on-completion"}), "on-completion"),
    ],
)
def test_a_protected_pod_is_never_evicted_without_a_podqos_even_when_it_is_the_best_choice(protected, why):
    assert why in (eviction_protection(protected, 0.0) or "")
    # The protected pod is BestEffort, low priority and the heaviest: first in every order.
    result, recorder = step(
        rules(EVICT_AT_2000),
        ps(protected, cpu=1500),
        ps(pod("replica", priority=100, cpu="100m"), cpu=1500),
    )
    assert [c[:2] for c in recorder.calls] == [("evict", "default/replica")]
    assert why in result.execution.skipped[protected.key]


@pytest.mark.parametrize(
    "annotations",
    [{SAFE_TO_EVICT: "true"}, {DO_NOT_DISRUPT: "false"}, {}],
    ids=["safe-to-evict-true", "do-not-disrupt-false", "none"],
)
def test_a_replica_without_a_blocking_annotation_is_evictable(annotations):
    p = pod("replica", annotations=annotations)
    assert eviction_protection(p, 0.0) is None
    _, recorder = step(rules(EVICT_AT_2000), ps(p, cpu=1500))
    assert [c[:2] for c in recorder.calls] == [("evict", "default/replica")]


@pytest.mark.parametrize(
    ("podqos", "evicted"),
    [
        (PODQOS_EVICTS_PINNED, True),  # selected, eviction allowed: the owner chose
        (PODQOS_OTHER_ACTION, False),  # selected, but only for throttling
        (PODQOS_SELECTS_NOTHING_HERE, False),  # some PodQOS exists, none selects it
        ("", False),  # no PodQOS at all
    ],
    ids=["selected-for-evict", "selected-for-throttle", "not-selected", "no-podqos"],
)
@pytest.mark.parametrize(
    "kwargs",
    [
        {"owner": None},
        {"annotations": {SAFE_TO_EVICT: "false"}},
        {"annotations": {DO_NOT_DISRUPT: "true"}},
        {"annotations": {SAFE_TO_EVICT: "on-completion"}},
    ],
    ids=["bare", "safe-to-evict-false", "do-not-disrupt", "on-completion"],
)
def test_only_a_podqos_that_selects_a_protected_pod_for_eviction_lets_it_go(podqos, evicted, kwargs):
    pinned = labelled("pinned", **kwargs)
    _, recorder = step(rules(EVICT_AT_2000, actions=podqos), ps(pinned, cpu=1500))
    assert (("evict", "default/pinned") in [c[:2] for c in recorder.calls]) == evicted


@pytest.mark.parametrize(
    "kwargs",
    [
        {"owner": None},
        {"annotations": {SAFE_TO_EVICT: "on-completion"}},
        {"annotations": {DO_NOT_DISRUPT: "1h"}},
    ],
    ids=["bare", "on-completion", "do-not-disrupt-duration"],
)
def test_protected_pods_may_still_be_throttled(kwargs):
    protected = pod("protected", cpu="100m", cpu_limit="2", **kwargs)
    _, recorder = step(rules(THROTTLE_AT_2000), ps(protected, cpu=1500))
    assert [c[:2] for c in recorder.calls] == [("throttle", "default/protected")]


# The qos_factories pods start at 2024-01-01T00:00:00Z.
STARTED = 1_704_067_200.0


@pytest.mark.parametrize(
    ("value", "seconds_after_start", "evicted"),
    [
        ("30m", 0, False),
        ("30m", 1799, False),
        ("30m", 1800, True),  # the protection has run out: an ordinary replica again
        ("1h30m", 5399, False),
        ("1h30m", 5400, True),
        ("true", 10**8, False),
        ("0s", 0, True),  # invalid values are read as no annotation, as Karpenter reads them
        ("soon", 0, True),
    ],
)
def test_a_do_not_disrupt_duration_protects_until_start_plus_duration(value, seconds_after_start, evicted):
    p = pod("timed", annotations={DO_NOT_DISRUPT: value})
    now = STARTED + seconds_after_start
    assert (eviction_protection(p, now) is None) == evicted
    _, recorder = step(rules(EVICT_AT_2000), ps(p, cpu=1500), now=now)
    assert (("evict", "default/timed") in [c[:2] for c in recorder.calls]) == evicted


def test_an_on_completion_pod_is_protected_only_while_it_runs():
    running = pod("finishing", annotations={SAFE_TO_EVICT: "on-completion"})
    assert "left to finish" in (eviction_protection(running, 0.0) or "")
    for phase in ("Succeeded", "Failed"):
        assert eviction_protection(dataclasses.replace(running, phase=phase), 0.0) is None


def seventeen_pods_without_usage():
    """Issue #26's node: 16 replicas and a bare pod annotated safe-to-evict "false", no pod usage
    readable, the node far over its watermark."""
    replicas = [ps(pod(f"r{i:02}", cpu="100m"), cpu=None) for i in range(16)]
    bare = ps(pod("bare", owner=None, annotations={SAFE_TO_EVICT: "false"}), cpu=None)
    return [bare, *replicas]


@pytest.mark.parametrize(
    ("known", "expected"),
    [
        # nothing known: one eviction of unknown effect, the rest wait for the next sample
        ([], ["default/r00"]),
        # a known pod that does not close the gap, then one unknown
        ([ps(pod("big", cpu="100m"), cpu=400)], ["default/big", "default/r00"]),
        # known pods that close the gap: no unknown one at all
        ([ps(pod("big", cpu="100m"), cpu=1200)], ["default/big"]),
    ],
    ids=["only-unknown", "known-short-of-the-gap", "known-enough"],
)
def test_at_most_one_pod_of_unknown_usage_is_evicted_per_sample(known, expected):
    result, recorder = step(rules(EVICT_AT_2000), *known, *seventeen_pods_without_usage())
    evicted = [c[1] for c in recorder.calls if c[0] == "evict"]
    assert sorted(evicted) == sorted(expected)
    unknown = [d for d in result.decisions if d.kind == EVICT and d.released is None]
    assert len(unknown) <= UNKNOWN_USAGE_EVICTIONS_PER_ROUND
    assert "default/bare" not in evicted
    if len(unknown) == 1:
        others = [key for key, why in result.execution.skipped.items() if "usage is unknown" in why]
        assert len(others) == 15  # the other replicas wait; the bare pod is refused earlier
        assert "safe-to-evict" in result.execution.skipped["default/bare"]


def test_seventeen_pods_over_seventeen_samples_never_empty_the_node_or_touch_the_bare_pod():
    """Sample after sample with usage still unreadable, one replica goes per sample (the cooldown
    of 0 lets every sample act); the bare pod stays whatever happens."""
    cfg = rules("{name: r, actionName: both, metricRule: {name: cpu_total_usage, value: 2000}}")
    agent = QosAgent(cfg, AgentOptions(one_sample=True))
    pods = seventeen_pods_without_usage()
    evicted: list[str] = []
    for sample in range(20):
        alive = [p for p in pods if p.key not in evicted]
        recorder = Recorder()
        agent.step(state(*alive, usage={"cpu": 3000, "memory": 0}), recorder, now=float(sample))
        this_sample = [c[1] for c in recorder.calls if c[0] == "evict"]
        assert len(this_sample) <= 1
        evicted += this_sample
    assert "default/bare" not in evicted
    assert len(evicted) == 16


def test_throttling_of_unknown_usage_pods_is_not_limited():
    """A throttle is undone by a restore: the limit is on evictions only."""
    pods = [ps(pod(f"r{i}", cpu="100m", cpu_limit="1"), cpu=None) for i in range(3)]
    result, _ = step(rules(THROTTLE_AT_2000), *pods)
    assert sum(d.kind == THROTTLE_DOWN for d in result.decisions) == 3
