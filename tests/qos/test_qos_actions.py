"""One action on one pod: CFS throttle steps and their floors, restore steps, eviction."""

import pytest
from qos_factories import pod, ps

from kubetide.qos import ActionContext, evict_pod, restore_cpu, throttle_cpu
from kubetide.qos.actions import cpu_floor

STEP_10 = ActionContext(min_cpu_ratio=0, step_cpu_ratio=10, node_cpu=4000)


@pytest.mark.parametrize(
    ("kwargs", "usage", "quota", "ctx", "new_quota", "released"),
    [
        # unthrottled: start from usage; 1000m * 0.9 = 900m
        ({}, 1000, None, STEP_10, 900, 100),
        # throttled: start from the current quota, not the usage
        ({}, 600, 800, STEP_10, 720, 0),
        ({}, 800, 800, STEP_10, 720, 80),
        # the request is a floor
        ({"cpu": "950m"}, 1000, None, STEP_10, 950, 50),
        # minCPURatio% of the limit is a floor, in millicores: 30% of 2000m = 600m
        (
            {"cpu": "100m", "cpu_limit": "2"},  # (a limit alone would make the request equal it)
            700,
            None,
            ActionContext(min_cpu_ratio=30, step_cpu_ratio=50, node_cpu=4000),
            600,
            100,
        ),
        # the higher of the two floors wins
        (
            {"cpu": "650m", "cpu_limit": "2"},
            700,
            None,
            ActionContext(min_cpu_ratio=30, step_cpu_ratio=50, node_cpu=4000),
            650,
            50,
        ),
        # a big step with no floors
        ({}, 1000, None, ActionContext(step_cpu_ratio=75), 250, 750),
    ],
)
def test_throttle_step(kwargs, usage, quota, ctx, new_quota, released):
    effect = throttle_cpu(ps(pod("p", **kwargs), cpu=usage, quota=quota), ctx)
    assert effect.quota == new_quota
    assert effect.released == {"cpu": released}


def test_min_cpu_ratio_floor_uses_one_unit_crane_regression():
    """Crane checks `limit/1000 * ratio/100` (cores) but assigns `limit * ratio / 1000`: for a 4-core
    limit and 50% it compares against 2 cores and then sets 200 (cores read as millicores: 200m,
    ten times too low). Here the floor is 50% of 4000m = 2000m, and a throttle stops there."""
    p = ps(pod("p", cpu="100m", cpu_limit="4"), cpu=2100)
    ctx = ActionContext(min_cpu_ratio=50, step_cpu_ratio=50)
    assert cpu_floor(p, ctx) == 2000
    assert throttle_cpu(p, ctx).quota == 2000
    # at the floor: no further step
    assert throttle_cpu(ps(p.pod, cpu=2000, quota=2000), ctx) is None


def test_floor_rounds_up():
    # 33% of 1001m is 330.33m: the floor keeps the pod at 331m, never below the ratio
    assert cpu_floor(ps(pod("p", cpu="1m", cpu_limit="1001m")), ActionContext(min_cpu_ratio=33)) == 331


def test_throttle_has_nothing_to_do():
    ctx = STEP_10
    # usage at or below the request: the step cannot go lower
    assert throttle_cpu(ps(pod("p", cpu="500m"), cpu=400), ctx) is None
    # zero usage and no quota: nothing to start from
    assert throttle_cpu(ps(pod("p"), cpu=0), ctx) is None
    # step 0 never lowers anything
    assert throttle_cpu(ps(pod("p"), cpu=1000), ActionContext(step_cpu_ratio=0)) is None


def test_throttle_with_unknown_usage_starts_from_the_quota_or_the_limit():
    effect = throttle_cpu(ps(pod("p", cpu="100m", cpu_limit="1"), cpu=None), STEP_10)
    assert (effect.quota, effect.released) == (900, {})  # released unknown
    assert throttle_cpu(ps(pod("p"), cpu=None), STEP_10) is None


@pytest.mark.parametrize(
    ("kwargs", "usage", "quota", "ctx", "new_quota", "taken"),
    [
        # 500m * 1.2 = 600m, the pod may now use 600 - 500 = 100m more
        ({"cpu_limit": "1"}, 500, 500, ActionContext(step_cpu_ratio=20, node_cpu=4000), 600, 100),
        # reaching the limit removes the quota
        ({"cpu_limit": "1"}, 900, 900, ActionContext(step_cpu_ratio=20, node_cpu=4000), None, 100),
        # no limit: the node's cpu is the ceiling
        ({}, 3500, 3500, ActionContext(step_cpu_ratio=20, node_cpu=4000), None, 500),
        ({}, 1000, 1000, ActionContext(step_cpu_ratio=20, node_cpu=4000), 1200, 200),
        # step 0 restores at once
        ({"cpu_limit": "2"}, 100, 100, ActionContext(step_cpu_ratio=0, node_cpu=4000), None, 1900),
    ],
)
def test_restore_step(kwargs, usage, quota, ctx, new_quota, taken):
    effect = restore_cpu(ps(pod("p", **kwargs), cpu=usage, quota=quota), ctx)
    assert effect.quota == new_quota
    assert effect.released == {"cpu": taken}


def test_restore_steps_reach_the_limit_and_stop():
    p = pod("p", cpu="100m", cpu_limit="1")
    ctx = ActionContext(step_cpu_ratio=50, node_cpu=4000)
    quota, seen = 200, []
    while quota is not None:
        quota = restore_cpu(ps(p, cpu=quota, quota=quota), ctx).quota
        seen.append(quota)
    assert seen == [300, 450, 675, None]
    assert restore_cpu(ps(p, cpu=100, quota=None), ctx) is None  # not throttled: nothing to restore


def test_evict_releases_current_usage():
    assert evict_pod(ps(pod("p"), cpu=700, memory=5), STEP_10).released == {"cpu": 700, "memory": 5}
    assert evict_pod(ps(pod("p"), cpu=None), STEP_10).released == {}
