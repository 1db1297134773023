"""Exponential scale-up backoff: growth, cap, renewal, reset, and the time it accumulates."""

import pytest
from clusterstate_fakes import T0, FakeCloud, group_with_nodes, make_registry, node

from kubetide.autoscaler.clusterstate import ExponentialBackoff
from kubetide.autoscaler.ports import InstanceError

ERR = InstanceError("OtherError", "timeout", "Scale-up timed out")


def fresh() -> ExponentialBackoff:
    return ExponentialBackoff(initial=300, maximum=1800, reset_timeout=10800)


def test_doubles_after_each_expired_backoff_up_to_the_maximum():
    backoff, now, durations = fresh(), T0, []
    for _ in range(6):
        until = backoff.backoff("ng", ERR, now)
        durations.append(until - now)
        now = until + 1  # fail again just after it expired
    assert durations == [300, 600, 1200, 1800, 1800, 1800]


def test_failures_while_backed_off_renew_without_doubling():
    backoff = fresh()
    backoff.backoff("ng", ERR, T0)
    assert backoff.backoff("ng", ERR, T0 + 100) == T0 + 400
    assert backoff.status("ng", T0 + 100).duration == 300
    assert backoff.backed_off_seconds("ng", T0 + 1000) == 400  # one interval, extended


def test_expiry_is_strict():
    backoff = fresh()
    until = backoff.backoff("ng", ERR, T0)
    assert backoff.is_backed_off("ng", until - 0.001)
    assert not backoff.is_backed_off("ng", until)
    status = backoff.status("ng", until)
    assert not status.backed_off and status.error == ERR  # the last error stays visible


@pytest.mark.parametrize(("quiet", "expected"), [(10800, 600), (10800.5, 300)])
def test_reset_after_node_group_backoff_reset_timeout_without_failures(quiet, expected):
    backoff = fresh()
    backoff.backoff("ng", ERR, T0)
    later = T0 + quiet
    backoff.remove_stale(later)
    assert backoff.backoff("ng", ERR, later) - later == expected


def test_backed_off_seconds_counts_each_interval_once_and_stops_at_removal():
    backoff = fresh()
    backoff.backoff("ng", ERR, T0)  # [T0, T0+300)
    assert backoff.backed_off_seconds("ng", T0 + 100) == 100
    backoff.backoff("ng", ERR, T0 + 1000)  # [T0+1000, T0+1600)
    backoff.remove("ng", T0 + 1200)  # a scale-up succeeded
    assert backoff.backed_off_seconds("ng", T0 + 5000) == 300 + 200
    assert backoff.backed_off_seconds("other", T0 + 5000) == 0


def test_registry_backs_off_on_increase_size_errors_and_clears_on_success():
    registry = make_registry()
    group, nodes = group_with_nodes("ng", 1)
    cloud = FakeCloud(group)
    registry.update(nodes, cloud, T0)

    registry.register_failed_scale_up("ng", "CloudProviderError", T0, "quota exceeded")
    status = registry.backoff_status("ng", T0)
    assert status.backed_off and (status.error.code, status.error.message) == (
        "CloudProviderError",
        "quota exceeded",
    )
    assert not registry.is_node_group_safe_to_scale_up("ng", T0 + 299)
    assert registry.is_node_group_safe_to_scale_up("ng", T0 + 300)

    registry.register_failed_scale_up("ng", "CloudProviderError", T0 + 400)
    assert registry.backoff_status("ng", T0 + 400).until == T0 + 400 + 600  # doubled

    # A scale-up that registers fully clears the backoff (Cluster Autoscaler's RemoveBackoff).
    group.increase_size(1)
    registry.register_scale_up("ng", 1, T0 + 1100)
    group.add("ng-new")
    registry.update([*nodes, node("ng-new", created=T0 + 1150)], cloud, T0 + 1160)
    assert registry.scale_up_request("ng") is None
    assert registry.backoff_status("ng", T0 + 1160) == registry.backoff_status("never", T0)
    assert registry.backoff.backed_off_seconds("ng", T0 + 5000) == 300 + 600
