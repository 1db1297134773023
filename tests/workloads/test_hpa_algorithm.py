"""The HPA's arithmetic (workloads/hpa.py) against upstream's documented examples and test cases
(kube-controller-manager's replica_calculator_test.go, horizontal_test.go and the HPA
documentation's walkthroughs), each expected count computed by hand in the comment beside it."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubetide.model.hpa import (
    DEFAULT_SCALE_DOWN,
    DEFAULT_SCALE_UP,
    Behavior,
    HorizontalPodAutoscaler,
    ResourceMetric,
    ScalingPolicy,
    ScalingRules,
)
from kubetide.model.meta import ObjectMeta
from kubetide.workloads.hpa import (
    HpaState,
    MetricError,
    PodSample,
    Settings,
    Tolerances,
    resource_replicas,
)

NOW = 1_000_000.0
LONG_AGO = NOW - 3600.0
TEN_PERCENT = Tolerances(0.1, 0.1)
DEFAULTS = Settings()


def pods(levels, requests=1000, ready=None, phase="Running", start=LONG_AGO):
    """Pods as upstream's test fixture makes them: one per level (None: no metric)."""
    out = []
    for i, level in enumerate(levels):
        is_ready = True if ready is None else ready[i]
        out.append(
            PodSample(
                name=f"pod-{i}",
                phase=phase if not isinstance(phase, list) else phase[i],
                ready=is_ready,
                ready_transition=start,
                start_time=start,
                request=requests if not isinstance(requests, list) else requests[i],
                metric=level,
                metric_time=NOW,
                metric_window=60.0,
            )
        )
    return out


def cpu(utilization=None, value=None):
    return ResourceMetric("cpu", utilization=utilization, average_value=value)


@pytest.mark.parametrize(
    ("case", "current", "metric", "samples", "expected", "reading"),
    [
        # TestReplicaCalcScaleUp: 3 x 1 cpu at 300m/500m/700m = 50%, target 30%: ceil(5/3 x 3) = 5
        ("scale up", 3, cpu(30), pods([300, 500, 700]), 5, 50),
        # TestReplicaCalcScaleDown: 1 400m / 5 000m = 28% of a 50% target: ceil(0.56 x 5) = 3
        ("scale down", 5, cpu(50), pods([100, 300, 500, 250, 250]), 3, 28),
        # within tolerance: 52% of 50% is 1.04: no change
        ("tolerance", 4, cpu(50), pods([520, 520, 520, 520]), 4, 52),
        # TestReplicaCalcScaleUpUnreadyLessScale: the unready pod's 300m is left out (1 200 / 2 000
        # = 60%), then counted at 0 on the way up: 1 200 / 3 000 = 40% of 30%: ceil(4/3 x 3) = 4
        ("unready on scale up", 3, cpu(30), pods([300, 500, 700], ready=[False, True, True]), 4, 60),
        # TestReplicaCalcScaleUpUnreadyNoScale: the ready pods' 40% is 1.33 x target, with the
        # unready one at 0: 1 200/3 000... here levels 400/500/700 target 40: ready 60% ratio 1.5;
        # at 0 the unready pod gives 1 200/3 000 = 40% = 1.0: within tolerance, no change
        ("unready cancels", 3, cpu(40), pods([400, 500, 700], ready=[False, True, True]), 3, 60),
        # TestReplicaCalcScaleDownIncludeUnreadyPods-like: on a scale-down unready pods are only
        # left out: 1 000m / 3 000m = 33% of 50%: ceil(0.66 x 3) = 2 (ready pods only)
        (
            "unready on scale down",
            5,
            cpu(50),
            pods([100, 300, 500, 250, 250], ready=[False, False, True, True, True]),
            2,
            33,
        ),
        # missing metrics on a scale-down count at 100% of their request: 2 with 100m each and
        # 2 missing: 200 / 2 000 = 10% of 50%: recomputed (200 + 2 000) / 4 000 = 55% = 1.1
        # within tolerance: no change (upstream's TestReplicaCalcMissingMetricsNoChangeEq shape)
        ("missing on scale down", 4, cpu(50), pods([100, 100, None, None]), 4, 10),
        # missing metrics on a scale-up count at 0: 2 x 900m = 90% of 50% (1.8); with two at 0:
        # 1 800 / 4 000 = 45% = 0.9, a change of direction: no change
        ("missing on scale up flips", 4, cpu(50), pods([900, 900, None, None]), 4, 90),
        # missing on a scale-up that stays up: 2 x 1 500m (150% of 50% = 3.0); with two at 0:
        # 3 000 / 4 000 = 75% = 1.5: ceil(1.5 x 4) = 6
        ("missing on scale up", 4, cpu(50), pods([1500, 1500, None, None]), 6, 150),
        # a target above 100%: missing pods on a scale-down count at the target (150%):
        # 2 x 500m = 50% of 150% (0.33); (1 000 + 3 000) / 4 000 = 100% = 0.67: ceil(2.67) = 3
        ("missing at a high target", 4, cpu(150), pods([500, 500, None, None]), 3, 50),
        # Pending pods are unready, Failed and deleted ones ignored: 2 x 800m = 80% of 50% = 1.6,
        # the Pending pod at 0: 1 600 / 3 000 = 53% = 1.066: within tolerance: no change
        (
            "pending pods",
            3,
            cpu(50),
            pods([800, 800, None], phase=["Running", "Running", "Pending"]),
            3,
            80,
        ),
        # AverageValue: 3 pods average 600m against 200m: ceil(3 x 3) = 9
        ("average value", 3, cpu(value=200), pods([500, 600, 700]), 9, 600),
        # AverageValue with a missing pod on a scale-down counts it at the target: average of
        # 100m and 100m = 100m of 400m (0.25); with 400m: 200m = 0.5: ceil(0.5 x 3) = 2
        ("average value missing", 3, cpu(value=400), pods([100, 100, None]), 2, 100),
        # memory ignores readiness: the unready pod's 3 GiB counts: 6 GiB / 3 pods... 2 GiB
        # average against 1 GiB: ceil(2 x 3) = 6
        (
            "memory counts unready pods",
            3,
            ResourceMetric("memory", average_value=2**30),
            pods([2**30, 2**30, 4 * 2**30], ready=[True, True, False]),
            6,
            2 * 2**30,
        ),
    ],
)
def test_resource_replicas(case, current, metric, samples, expected, reading):
    result = resource_replicas(metric, current, samples, NOW, DEFAULTS, TEN_PERCENT)
    assert (result.replicas, result.current) == (expected, reading), case


def test_cpu_initialization_period():
    """A pod started 1 min ago that became ready before its last metric window is counted; one
    whose readiness changed after the sample's window started is not (it may be warming up)."""
    young = NOW - 60.0
    counted = PodSample(
        "a",
        "Running",
        ready=True,
        ready_transition=young,
        start_time=young,
        request=1000,
        metric=900,
        metric_time=NOW,
        metric_window=30.0,
    )
    warming = PodSample(
        "b",
        "Running",
        ready=True,
        ready_transition=NOW - 10.0,
        start_time=young,
        request=1000,
        metric=900,
        metric_time=NOW,
        metric_window=30.0,
    )
    result = resource_replicas(cpu(50), 2, [counted, warming], NOW, DEFAULTS, TEN_PERCENT)
    # ready: only "a" at 90% of 50% (1.8); "b" at 0 on the way up: 900/2 000 = 45%: flips: 2
    assert result.replicas == 2


def test_errors():
    with pytest.raises(MetricError, match="no pods"):
        resource_replicas(cpu(50), 3, [], NOW, DEFAULTS, TEN_PERCENT)
    with pytest.raises(MetricError, match="missing request"):
        resource_replicas(cpu(50), 1, pods([100], requests=0), NOW, DEFAULTS, TEN_PERCENT)
    with pytest.raises(MetricError, match="did not receive metrics"):
        resource_replicas(cpu(50), 1, pods([None], phase="Pending"), NOW, DEFAULTS, TEN_PERCENT)


# -- behavior and normalisation -----------------------------------------------------------------


CPU_50 = (cpu(50),)


def hpa(min_replicas=1, max_replicas=100, behavior=None, metrics=CPU_50, unsupported=()):
    return HorizontalPodAutoscaler(
        meta=ObjectMeta("web", "default"),
        target_kind="Deployment",
        target_name="web",
        min_replicas=min_replicas,
        max_replicas=max_replicas,
        metrics=tuple(metrics),
        unsupported_metrics=tuple(unsupported),
        behavior=behavior,
    )


def at_utilization(count, percent):
    return pods([10 * percent] * count)


def test_v1_style_scale_up_is_at_most_double_or_four():
    """No behavior: a scale-up goes to max(2 x current, 4) at most (horizontal.go's
    calculateScaleUpLimit): 3 pods at 500% of 50% want 30, get 6."""
    state = HpaState()
    assert state.reconcile(hpa(), 3, at_utilization(3, 250), NOW, DEFAULTS).desired == 6
    assert state.reconcile(hpa(), 1, at_utilization(1, 250), NOW, DEFAULTS).desired == 4


def test_downscale_stabilization_window():
    """No behavior: the highest recommendation of the last 5 minutes wins, so a drop at t=0
    takes effect once the window has passed, not before."""
    state = HpaState()
    state.reconcile(hpa(), 10, at_utilization(10, 50), NOW, DEFAULTS)  # recommends 10
    low = at_utilization(10, 10)  # recommends ceil(0.2 x 10) = 2
    assert state.reconcile(hpa(), 10, low, NOW + 15, DEFAULTS).desired == 10
    assert state.reconcile(hpa(), 10, low, NOW + 299, DEFAULTS).desired == 10
    assert state.reconcile(hpa(), 10, low, NOW + 301, DEFAULTS).desired == 2


def test_bounds_first():
    assert HpaState().reconcile(hpa(max_replicas=5), 8, [], NOW, DEFAULTS).desired == 5
    assert HpaState().reconcile(hpa(min_replicas=3), 2, [], NOW, DEFAULTS).desired == 3
    # scaled to 0 by hand with minReplicas > 0: autoscaling is off
    assert HpaState().reconcile(hpa(min_replicas=1), 0, [], NOW, DEFAULTS).desired == 0


def test_partial_metrics_never_scale_down():
    """One metric unreadable: the others may scale up, never down (computeReplicasForMetrics)."""
    both = (cpu(50), ResourceMetric("memory", average_value=1000))
    down = pods([100, 100])  # cpu 10% of 50% and memory 100 of 1 000 each want ceil(0.2 x 2) = 1
    decision = HpaState().reconcile(hpa(metrics=both, unsupported=("External",)), 2, down, NOW, DEFAULTS)
    assert decision.desired == 2 and decision.reason == "FailedGetResourceMetric"
    up = pods([1000, 1000])
    behavior = Behavior(DEFAULT_SCALE_UP, DEFAULT_SCALE_DOWN)
    decision = HpaState().reconcile(
        hpa(metrics=both, unsupported=("External",), behavior=behavior), 2, up, NOW, DEFAULTS
    )
    assert decision.desired == 4  # cpu 100% of 50%: ceil(2 x 2) = 4


def test_documented_scale_down_percent_policy():
    """The HPA documentation's example: Percent 10 per 60 s from 80 replicas, target 10: 8 go in
    the first step (80 -> 72), then int(72 x 0.9) = 64 (8 more) a period later."""
    rules = ScalingRules(0, "Max", (ScalingPolicy("Percent", 10, 60),))
    auto = hpa(behavior=Behavior(DEFAULT_SCALE_UP, rules))
    state = HpaState()
    low = at_utilization(80, 5)  # wants ceil(0.1 x 80) = 8
    assert state.reconcile(auto, 80, low, NOW, DEFAULTS).desired == 72
    assert state.reconcile(auto, 72, at_utilization(72, 5), NOW + 15, DEFAULTS).desired == 72  # same period
    assert state.reconcile(auto, 72, at_utilization(72, 5), NOW + 61, DEFAULTS).desired == 64


def test_default_scale_up_policies():
    """Default scaleUp: the larger of +4 pods and +100% per 15 s: from 2, 6 (4 beats 2); from
    10, 20; the next step within the same 15 s adds nothing."""
    auto = hpa(behavior=Behavior(DEFAULT_SCALE_UP, DEFAULT_SCALE_DOWN), max_replicas=1000)
    assert HpaState().reconcile(auto, 2, at_utilization(2, 1000), NOW, DEFAULTS).desired == 6
    state = HpaState()
    assert state.reconcile(auto, 10, at_utilization(10, 1000), NOW, DEFAULTS).desired == 20
    assert state.reconcile(auto, 20, at_utilization(20, 1000), NOW + 5, DEFAULTS).desired == 20
    assert state.reconcile(auto, 20, at_utilization(20, 1000), NOW + 16, DEFAULTS).desired == 40


def test_select_policy_min_and_disabled():
    """selectPolicy Min takes the smaller change (Pods 4 vs Percent 100 from 10: +4); Disabled
    never moves in that direction."""
    up = ScalingRules(0, "Min", (ScalingPolicy("Pods", 4, 60), ScalingPolicy("Percent", 100, 60)))
    auto = hpa(behavior=Behavior(up, DEFAULT_SCALE_DOWN))
    assert HpaState().reconcile(auto, 10, at_utilization(10, 1000), NOW, DEFAULTS).desired == 14
    off = ScalingRules(0, "Disabled", ())
    auto = hpa(behavior=Behavior(DEFAULT_SCALE_UP, off))
    assert HpaState().reconcile(auto, 10, at_utilization(10, 5), NOW, DEFAULTS).desired == 10


def test_scale_up_stabilization_window():
    """scaleUp.stabilizationWindowSeconds 60: the lowest recommendation of the last minute wins."""
    up = ScalingRules(60, "Max", DEFAULT_SCALE_UP.policies)
    auto = hpa(behavior=Behavior(up, ScalingRules(0, "Max", DEFAULT_SCALE_DOWN.policies)))
    state = HpaState()
    assert state.reconcile(auto, 4, at_utilization(4, 50), NOW, DEFAULTS).desired == 4
    assert state.reconcile(auto, 4, at_utilization(4, 100), NOW + 15, DEFAULTS).desired == 4
    assert state.reconcile(auto, 4, at_utilization(4, 100), NOW + 61, DEFAULTS).desired == 8


def test_per_direction_tolerance():
    """behavior.scaleUp.tolerance 0 (KEP-4951): 52% of 50% scales up; the default would not."""
    up = ScalingRules(0, "Max", DEFAULT_SCALE_UP.policies, tolerance=0.0)
    auto = hpa(behavior=Behavior(up, DEFAULT_SCALE_DOWN))
    assert HpaState().reconcile(auto, 10, at_utilization(10, 52), NOW, DEFAULTS).desired == 11
    assert HpaState().reconcile(hpa(), 10, at_utilization(10, 52), NOW, DEFAULTS).desired == 10


# -- properties ------------------------------------------------------------------------------

policies = st.lists(
    st.builds(
        ScalingPolicy,
        st.sampled_from(["Pods", "Percent"]),
        st.integers(1, 200),
        st.integers(1, 300),
    ),
    min_size=1,
    max_size=3,
)
rules = st.builds(ScalingRules, st.integers(0, 600), st.sampled_from(["Max", "Min", "Disabled"]), policies)


def _allowed(history, policy, current, now, up):
    """An independent reading of one policy: the count it allows now, from the changes made."""
    start = current
    for when, old, new in history:
        if when > now - policy.period_seconds:
            start -= new - old
    if up:
        return start + policy.value if policy.type == "Pods" else math.ceil(start * (1 + policy.value / 100))
    return start - policy.value if policy.type == "Pods" else int(start * (1 - policy.value / 100))


@settings(max_examples=150)
@given(
    up=rules,
    down=rules,
    bounds=st.tuples(st.integers(1, 20), st.integers(0, 80)),
    loads=st.lists(st.integers(0, 500), min_size=1, max_size=40),
    steps=st.lists(st.integers(1, 120), min_size=40, max_size=40),
)
def test_replicas_stay_in_bounds_and_respect_every_policy(up, down, bounds, loads, steps):
    """Whatever the load, the count stays within [min, max], never moves in a Disabled direction,
    and each change is within every policy's allowance (selectPolicy Min) or at least one's (Max)."""
    minimum, extra = bounds
    maximum = minimum + extra
    auto = hpa(min_replicas=minimum, max_replicas=maximum, behavior=Behavior(up, down))
    state = HpaState()
    current, now, history = minimum, NOW, []
    for load, step in zip(loads, steps, strict=False):
        now += step
        desired = state.reconcile(auto, current, at_utilization(current, load), now, DEFAULTS).desired
        assert minimum <= desired <= maximum
        if desired != current:
            rules_ = up if desired > current else down
            assert rules_.select_policy != "Disabled"
            allowed = [_allowed(history, p, current, now, desired > current) for p in rules_.policies]
            if desired > current:
                ok = [desired <= max(a, current) for a in allowed]
            else:
                ok = [desired >= min(a, current) for a in allowed]
            assert all(ok) if rules_.select_policy == "Min" else any(ok), (desired, current, allowed)
            history.append((now, current, desired))
        current = desired
