"""The precise executor: gaps, sorting, acting until the gap is closed, the fallbacks, and a
regression test for each of crane's defects."""

from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from qos_factories import Recorder, pod, ps, rules, state

from kubetide.qos import (
    EVICT,
    METRICS,
    THROTTLE_DOWN,
    THROTTLE_UP,
    AgentOptions,
    AvoidanceAction,
    Metric,
    QosAgent,
    Watermark,
    compute_gaps,
    evict_pod,
    over_evictions,
)
from kubetide.qos.executor import PREVIEW, REFUSED

GU = {"cpu": "1", "cpu_limit": "1", "memory": "1Gi", "memory_limit": "1Gi"}


def once(cfg, st_, *, precise=True, port=None, excess=10):
    agent = QosAgent(cfg, AgentOptions(precise=precise, execute_excess_percent=excess, one_sample=True))
    return agent.step(st_, port if port is not None else Recorder(), now=0.0)


def acted(result):
    return [(d.action, d.pod) for d in result.decisions]


# -- gaps -------------------------------------------------------------------------------------

EVICTING = AvoidanceAction("e", evicts=True)


@pytest.mark.parametrize(
    ("kind", "metric", "watermark", "expected"),
    [
        # Evict / ThrottleDown: usage - watermark, +10%
        (EVICT, "cpu_total_usage", 3000, Fraction(400 * 11, 10)),
        (THROTTLE_DOWN, "cpu_total_usage", 3000, Fraction(440)),
        # ThrottleUp: watermark - usage, -10% (restore a little less than the headroom)
        (THROTTLE_UP, "cpu_total_usage", 4000, Fraction(600 * 9, 10)),
        # percentages become absolute: (85% - 80%) of 4 cores = 200m, +10%
        (EVICT, "cpu_total_utilization", 80, Fraction(220)),
        (THROTTLE_UP, "cpu_total_utilization", 90, Fraction(180)),
        # memory: (50% - 25%) of 16Gi = 4Gi, +10%
        (EVICT, "memory_total_utilization", 25, Fraction(4 * 2**30 * 11, 10)),
        (EVICT, "memory_total_usage", 6 * 2**30, Fraction(2 * 2**30 * 11, 10)),
    ],
)
def test_gap_per_kind_and_metric(kind, metric, watermark, expected):
    st_ = state(ps(pod("a"), cpu=3400, memory=8 * 2**30))  # 85% cpu, 50% memory
    marks = {kind: {metric: Watermark(metric, Fraction(watermark), "q/r", EVICTING)}}
    assert compute_gaps(st_, marks, METRICS, 10) == {kind: {metric: expected}}


def test_no_gap_when_within_the_watermark_and_none_when_usage_is_missing():
    marks = {EVICT: {"cpu_total_usage": Watermark("cpu_total_usage", Fraction(4000), "q/r", EVICTING)}}
    assert compute_gaps(state(ps(pod("a"), cpu=3000)), marks, METRICS) == {}
    assert compute_gaps(state(ps(pod("a"), cpu=None)), marks, METRICS) == {EVICT: {"cpu_total_usage": None}}


def test_down_and_up_gaps_are_kept_apart_crane_regression():
    """Crane writes throttle-down and throttle-up gaps into one map: with a rule in force at 3000m and
    a lifted one at 3500m, one gap overwrites the other. Both survive here, and the restore waits
    while the throttle-down gap on the same resource is open."""
    cfg = rules(
        "{name: low, actionName: throttle, metricRule: {name: cpu_total_usage, value: 3000}}",
        "{name: high, actionName: throttle, metricRule: {name: cpu_total_usage, value: 3500}}",
    )
    st_ = state(
        ps(pod("hot"), cpu=2000),
        ps(pod("throttled", cpu="100m"), cpu=1200, quota=1200),
    )
    result = once(cfg, st_)
    # usage 3200m: the 3000m rule is in force (down gap 220m), the 3500m one is lifted (up gap 270m)
    assert result.gaps == {THROTTLE_DOWN: {"cpu_total_usage": 220}, THROTTLE_UP: {"cpu_total_usage": 270}}
    assert acted(result) == [("throttle", "default/hot")]


# -- evictions --------------------------------------------------------------------------------


def evict_scene():
    return state(
        ps(pod("crit", priority=2_000_000_000), cpu=300),
        ps(pod("web", priority=1000, **GU), cpu=1200),
        ps(pod("batch-a"), cpu=500),
        ps(pod("batch-b"), cpu=800),
        ps(pod("batch-c", cpu="100m"), cpu=600),
    )  # 3400m of 4 cores = 85%


EVICT_AT_60 = "{name: r, actionName: evict, metricRule: {name: cpu_total_utilization, value: 60}}"


def test_precise_eviction_stops_when_the_gap_is_closed():
    port = Recorder()
    result = once(rules(EVICT_AT_60), evict_scene(), port=port)
    # gap: (85% - 60%) of 4000m = 1000m, +10% = 1100m. BestEffort batch-b (800m) then batch-a (500m).
    assert result.gaps == {EVICT: {"cpu_total_utilization": 1100}}
    assert acted(result) == [("evict", "default/batch-b"), ("evict", "default/batch-a")]
    assert [d.released for d in result.decisions] == [800, 500]
    assert [d.gap_before for d in result.decisions] == [1100, 300]
    assert port.calls == [("evict", "default/batch-b", 5), ("evict", "default/batch-a", 5)]  # action's grace
    assert result.execution.remaining[EVICT]["cpu_total_utilization"] == -200
    assert result.counts() == {"throttles": 0, "restores": 0, "evictions": 2}
    assert result.over_evictions() == 0


def test_not_precise_acts_on_every_candidate_like_crane_did():
    precise = once(rules(EVICT_AT_60), evict_scene())
    everyone = once(rules(EVICT_AT_60), evict_scene(), precise=False)
    assert acted(everyone) == [
        ("evict", "default/batch-b"),
        ("evict", "default/batch-a"),
        ("evict", "default/batch-c"),
        ("evict", "default/web"),
    ]  # still never the critical pod
    assert not any(d.precise for d in everyone.decisions)
    assert (precise.counts()["evictions"], everyone.counts()["evictions"]) == (2, 4)
    # web's 1200m alone would have closed the 1100m gap: three of the four were too many
    assert (precise.over_evictions(), everyone.over_evictions()) == (0, 3)


def test_refused_eviction_moves_on_to_the_next_pod():
    port = Recorder(refuse=("default/batch-b",))
    result = once(rules(EVICT_AT_60), evict_scene(), port=port)
    assert [(d.pod, d.outcome, d.released) for d in result.decisions] == [
        ("default/batch-b", REFUSED, 0),
        ("default/batch-a", "done", 500),
        ("default/batch-c", "done", 600),
    ]
    assert result.counts()["evictions"] == 2


def test_critical_daemonset_mirror_and_terminating_pods_are_not_evicted():
    st_ = state(
        ps(pod("crit", priority=2_000_001_000), cpu=2000),
        ps(pod("ds", owner="DaemonSet"), cpu=1500),
        ps(pod("static", annotations={"kubernetes.io/config.mirror": "x"}), cpu=1500),
        ps(pod("leaving", deleting=True), cpu=1500),
        ps(pod("batch", priority=5), cpu=100),
    )
    result = once(rules(EVICT_AT_60), st_, precise=False)
    assert acted(result) == [("evict", "default/batch")]
    skipped = result.execution.skipped
    assert skipped["default/crit"].startswith("critical")
    assert skipped["default/ds"].startswith("DaemonSet pod")
    assert skipped["default/static"].startswith("static (mirror) pod")
    assert skipped["default/leaving"] == "already terminating"


def test_memory_cannot_be_throttled_so_a_memory_rule_evicts_crane_regression():
    """Crane puts a memory metric into the throttle watermarks, finds it not throttle-quantified and
    throttles every pod's cpu. Memory has no throttle: a rule on it only ever evicts, by the memory
    sorter, even with an action that can do both."""
    cfg = rules("{name: mem, actionName: both, metricRule: {name: memory_total_usage, value: 4Gi}}")
    gi = 2**30
    st_ = state(
        ps(pod("small"), cpu=1500, memory=1 * gi),
        ps(pod("big"), cpu=100, memory=3 * gi),
        ps(pod("web", priority=100), cpu=1000, memory=2 * gi),
    )  # 6Gi used: gap 2Gi, +10%
    port = Recorder()
    result = once(cfg, st_, port=port)
    assert set(result.gaps) == {EVICT}
    assert acted(result) == [("evict", "default/big")]
    assert not [c for c in port.calls if c[0] == "throttle"]


def test_evictions_also_close_the_throttle_down_gap():
    cfg = rules(
        EVICT_AT_60, "{name: t, actionName: throttle, metricRule: {name: cpu_total_usage, value: 3000}}"
    )
    result = once(cfg, evict_scene())
    assert result.gaps[THROTTLE_DOWN] == {"cpu_total_usage": 440}
    assert [d.kind for d in result.decisions] == [EVICT, EVICT]  # 1300m released: nothing left to throttle
    assert result.execution.remaining[THROTTLE_DOWN]["cpu_total_usage"] == 440 - 1300


# -- throttling -------------------------------------------------------------------------------

THROTTLE_AT_3000 = "{name: t, actionName: throttle, metricRule: {name: cpu_total_usage, value: 3000}}"


def test_precise_throttle_steps_in_cpu_order_until_the_gap_is_closed():
    st_ = state(
        ps(pod("a"), cpu=1000),
        ps(pod("b"), cpu=600),
        ps(pod("c", cpu="500m"), cpu=700),
        ps(pod("web", priority=1000, cpu="500m"), cpu=1000),
    )  # 3300m: gap 300m +10% = 330m; step 20%, floors: request and 10% of the limit
    port = Recorder()
    result = once(rules(THROTTLE_AT_3000), st_, port=port)
    assert port.calls == [
        ("throttle", "default/a", 800),  # releases 200m
        ("throttle", "default/b", 480),  # releases 120m
        ("throttle", "default/c", 560),  # releases 140m: the gap is closed
    ]
    assert [d.released for d in result.decisions] == [200, 120, 140]
    assert result.counts() == {"throttles": 3, "restores": 0, "evictions": 0}


def test_pods_at_their_floor_are_skipped_and_daemonsets_are_never_throttled():
    st_ = state(
        ps(pod("floored", cpu="1"), cpu=1000),
        ps(pod("ds", owner="DaemonSet", priority=10), cpu=2500),
        ps(pod("batch", cpu="100m"), cpu=300),
    )
    result = once(rules(THROTTLE_AT_3000), st_)
    assert acted(result) == [("throttle", "default/batch")]
    assert "floor" in result.execution.skipped["default/floored"]
    assert result.execution.skipped["default/ds"].startswith("DaemonSet pod")


# -- restoring --------------------------------------------------------------------------------


def restore_scene(total_extra=0):
    return state(
        ps(pod("a"), cpu=400, quota=400),
        ps(pod("b", priority=100, cpu="100m", cpu_limit="1"), cpu=500, quota=500),
        ps(pod("c"), cpu=1100 + total_extra),
        ps(pod("crit", priority=2_000_000_000), cpu=0, quota=100),
    )  # 2000m: the 3000m throttle rule is lifted, headroom 1000m -10% = 900m


@pytest.mark.parametrize("precise", [True, False])
def test_restore_acts_on_the_throttled_pods_most_important_first_crane_regression(precise):
    """Crane's restore is handed the throttle-down list instead of the throttle-up one. Here only the
    throttled pods are restored, never `c` (a throttle-down candidate that is not throttled), in
    either mode, and never the critical pod."""
    port = Recorder()
    result = once(rules(THROTTLE_AT_3000), restore_scene(), port=port, precise=precise)
    assert result.gaps == {THROTTLE_UP: {"cpu_total_usage": 900}}
    assert port.calls == [("restore", "default/b", 600), ("restore", "default/a", 480)]
    assert result.counts()["restores"] == 2


def test_restore_stops_when_the_headroom_is_used():
    # 2950m: headroom 50m -10% = 45m; b's step takes 100m, and then nothing is left for a
    result = once(rules(THROTTLE_AT_3000), restore_scene(total_extra=950))
    assert acted(result) == [("restore", "default/b")]


# -- the fallbacks ----------------------------------------------------------------------------


def unmeasured_scene(node_cpu):
    return state(
        ps(pod("web", priority=1000, **GU), cpu=1200),
        ps(pod("batch-a"), cpu=500),
        ps(pod("batch-b"), cpu=800),
        ps(pod("new-batch", start="2024-01-01T00:00:50Z"), cpu=None),  # started seconds ago: no metrics
        usage={"cpu": node_cpu, "memory": 0},  # NodeMetrics: the node's usage is known
    )


@pytest.mark.parametrize(
    ("node_cpu", "expected"),
    [
        # 85%: gap 1100m. Two measured batch pods close it; the unmeasured pod and web stay.
        (3400, ["default/batch-b", "default/batch-a"]),
        # 97.5%: gap 1650m. After 1300m from the measured batch pods, the unmeasured one (zero usage,
        # so last of the BestEffort pods) goes, releasing nothing counted; then web closes the gap.
        (3900, ["default/batch-b", "default/batch-a", "default/new-batch", "default/web"]),
    ],
)
def test_a_pod_without_metrics_counts_as_zero_usage_and_the_rest_stays_precise(node_cpu, expected):
    """Issue 18: one pod without usage data used to make the agent evict every candidate,
    Guaranteed high-priority pods included. Only the NODE's missing usage does that now."""
    result = once(rules(EVICT_AT_60), unmeasured_scene(node_cpu))
    assert [p for _, p in acted(result)] == expected
    assert all(d.precise for d in result.decisions)
    unmeasured = [d for d in result.decisions if d.pod == "default/new-batch"]
    assert all(d.released is None and "usage is unknown" in d.reason for d in unmeasured)


def test_missing_node_usage_while_a_rule_is_in_force_acts_on_all_candidates():
    cfg = rules(
        "{name: r, actionName: evict0, metricRule: {name: cpu_total_usage, value: 2000}}",
        actions="---\nkind: AvoidanceAction\nmetadata: {name: evict0}\nspec: {coolDownSeconds: 0, eviction: {}}",
    )
    agent = QosAgent(cfg)
    first = agent.step(state(ps(pod("a"), cpu=2500), ps(pod("b"), cpu=10)), Recorder(), now=0)
    assert acted(first) == [("evict", "default/a")]
    blind = agent.step(state(ps(pod("b"), cpu=None), ps(pod("c"), cpu=None)), Recorder(), now=10)
    assert blind.gaps == {EVICT: {"cpu_total_usage": None}}
    assert acted(blind) == [("evict", "default/b"), ("evict", "default/c")]
    assert "the node's cpu_total_usage usage is missing" in blind.decisions[0].reason


@pytest.fixture
def unquantified_metric():
    metric = Metric(
        name="test_cpu_unquantified",
        resource="cpu",
        action_priority=7,
        evictable=True,
        evict_quantified=False,
        evict=evict_pod,
    )
    METRICS.register(metric)
    yield metric
    METRICS.unregister(metric.name)


def test_a_metric_that_is_not_quantified_makes_the_agent_act_on_all_candidates(unquantified_metric):
    cfg = rules(
        EVICT_AT_60,
        "{name: u, actionName: evict, metricRule: {name: test_cpu_unquantified, value: 1000}}",
    )
    result = once(cfg, evict_scene())
    # the highest action priority among the evictable metrics: the unquantified one (7 > 5)
    assert {d.metric for d in result.decisions} == {"test_cpu_unquantified"}
    assert len(result.decisions) == 4
    assert "test_cpu_unquantified is not quantified for evict" in result.decisions[0].reason


# -- over-evictions ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("gap", "released", "over"),
    [
        (1100, [800, 500], 0),
        (1100, [800, 500, 600, 1200], 3),
        (1000, [1000], 0),
        (1001, [1000], 0),  # not even all of them closed it
        (0, [10, 20], 2),  # nothing was needed
        (-5, [], 0),
        (Fraction(2199, 2), [600, 500, 100], 1),
        (Fraction(2201, 2), [600, 500, 100], 0),
    ],
)
def test_over_evictions(gap, released, over):
    assert over_evictions(gap, released) == over


# -- the property ------------------------------------------------------------------------------

pods_strategy = st.lists(
    st.tuples(st.integers(0, 3), st.integers(0, 2000), st.booleans()), min_size=1, max_size=8
)


@settings(max_examples=60)
@given(pods=pods_strategy, watermark=st.integers(0, 12000))
def test_precise_eviction_closes_the_gap_when_it_can_and_never_acts_after(pods, watermark):
    states = [
        ps(pod(f"p{i}", priority=2_000_000_000 if critical else priority), cpu=usage)
        for i, (priority, usage, critical) in enumerate(pods)
    ]
    cfg = rules(f"{{name: r, actionName: evict, metricRule: {{name: cpu_total_usage, value: {watermark}}}}}")
    result = once(cfg, state(*states, cpu="16"))
    gap = result.gaps.get(EVICT, {}).get("cpu_total_usage")
    if gap is None:
        assert result.decisions == []
        return
    candidates = sum(s.usage["cpu"] for s in states if not s.critical)
    remaining = result.execution.remaining[EVICT]["cpu_total_usage"]
    if candidates >= gap:
        assert remaining <= 0
    assert all(d.gap_before > 0 for d in result.decisions)  # never acts once the gap is closed
    assert all(d.released > 0 for d in result.decisions)
    assert len({d.pod for d in result.decisions}) == len(result.decisions)
    assert gap - sum(d.released for d in result.decisions) == remaining


def test_preview_decisions_are_recorded_not_carried_out():
    cfg = rules(
        "{name: r, actionName: evict, strategy: Preview, metricRule: {name: cpu_total_utilization, value: 60}}"
    )
    port = Recorder()
    result = once(cfg, evict_scene(), port=port)
    assert port.calls == [] and result.decisions == []
    assert [(d.pod, d.outcome) for d in result.preview.decisions] == [
        ("default/batch-b", PREVIEW),
        ("default/batch-a", PREVIEW),
    ]


# -- throttling closes the gap within the round (issue #28 item 4) ------------------------------

STEP_10 = """
kind: AvoidanceAction
metadata: {name: throttle-10}
spec: {coolDownSeconds: 300, throttle: {cpuThrottle: {minCPURatio: 0, stepCPURatio: 10}}}
"""
THROTTLE_10_AT_4000 = "{name: t, actionName: throttle-10, metricRule: {name: cpu_total_usage, value: 4000}}"
# web uses 3800m and requests it all: its floor, it cannot be throttled. 5300m in all: gap
# (5300m - 4000m) +10% = 1430m.
WEB_AT_ITS_FLOOR = ps(pod("web", priority=1000, cpu="3800m"), cpu=3800)


@pytest.mark.parametrize(
    ("name", "pods", "throttled", "still_open"),
    [
        (
            # The numbers: one 10% step took 150m and left 1280m open until the 300 s
            # coolDown. Step after step from the planned quota, 29 steps of 10% take 1434m.
            "one pod, stepped until the gap closes",
            [ps(pod("batch"), cpu=1500)],
            [("default/batch", 66, 1434, 29)],
            0,
        ),
        (
            "the request is the floor: what is left stays open",
            [ps(pod("batch", cpu="1"), cpu=1500)],
            [("default/batch", 1000, 500, 4)],  # 1350, 1215, 1093, then the 1000m request
            930,
        ),
        (
            "no request: down to the kernel's minimum quota (10m), what is left stays open",
            [ps(pod("batch"), cpu=1000), ps(pod("pinned", cpu="500m"), cpu=500)],
            [("default/batch", 10, 990, 40)],
            440,
        ),
        (
            "pass after pass over the sorted pods, one step each per pass",
            [ps(pod("a"), cpu=1000), ps(pod("b"), cpu=500)],
            [("default/a", 48, 952, 28), ("default/b", 22, 478, 28)],
            0,
        ),
    ],
)
def test_throttle_steps_until_the_gap_is_closed_within_the_round(name, pods, throttled, still_open):
    """Crane's design loops `for !TargetGapsRemoved(m) { for each pod: ThrottleFunc }`; its code
    (throttle.go) makes one pass, one step per pod, and steps again next round, since crane holds
    only the scheduling restore for coolDownSeconds. kubetide holds the action's rules for the
    coolDown after acting, so it closes the gap in the round, as the design's loop does, each
    step from the quota the previous one planned, and each pod gets one quota write."""
    cfg = rules(THROTTLE_10_AT_4000, actions="---\n" + STEP_10)
    port = Recorder()
    result = once(cfg, state(*pods, WEB_AT_ITS_FLOOR, cpu="8"), port=port)
    assert result.gaps == {THROTTLE_DOWN: {"cpu_total_usage": Fraction(1430)}}, name
    got = [(d.pod, d.quota, d.released, d.reason) for d in result.decisions]
    assert [(pod_, quota, released) for pod_, quota, released, _ in got] == [t[:3] for t in throttled]
    for (_, _, _, reason), (_, _, _, steps) in zip(got, throttled, strict=True):
        assert f"{steps} steps of 10%" in reason
    assert port.calls == [("throttle", p, q) for p, q, _, _ in throttled]  # one write per pod
    left = result.execution.remaining[THROTTLE_DOWN]["cpu_total_usage"]
    assert max(left, 0) == still_open


@pytest.mark.parametrize(
    ("usage", "cpu", "memory", "cpu_source", "memory_source"),
    [
        ({"cpu": 3800, "memory": 2**30}, 3800, 2**30, "NodeMetrics", "NodeMetrics"),
        ({"cpu": 3800}, 3800, 7, "NodeMetrics", "sum of its pods"),  # memory falls back
        (None, 2500, 7, "sum of its pods", "sum of its pods"),
    ],
)
def test_node_usage_is_its_own_measurement_and_says_when_it_is_the_pods_sum(
    usage, cpu, memory, cpu_source, memory_source
):
    """A node whose pods use 2500m uses 3800m with the kubelet, the runtime and daemons."""
    st_ = state(ps(pod("a"), cpu=1500, memory=3), ps(pod("b"), cpu=1000, memory=4), usage=usage)
    st_ = type(st_)(st_.node, st_.pods, st_.usage, "NodeMetrics")
    assert (st_.used("cpu"), st_.used("memory")) == (cpu, memory)
    assert (st_.source_of("cpu"), st_.source_of("memory")) == (cpu_source, memory_source)
