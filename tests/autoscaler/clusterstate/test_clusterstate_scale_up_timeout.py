"""A scale-up whose nodes do not arrive times out at max-node-provision-time and backs the group
off (issue 28 item 1, UC3), one row per way a node can fail to arrive.

Cluster Autoscaler's rule, with kubetide's reading of "arrived": a node has arrived once it has
been Ready. A node that registered but never became Ready has not, whatever max-node-startup-time
says, so the request stays open (and the pods it was for are not asked for again) until it times
out; then a ScaleUpTimedOut event, a backoff of initial-node-group-backoff-duration, and the group
is skipped. A node that was Ready and then broke was delivered: no timeout, no backoff (UC6).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import pytest
from clusterstate_fakes import T0, FakeCloud, group_with_nodes, node, scaling_up_by_one

from kubetide.autoscaler.clusterstate import ClusterStateRegistry, Readiness
from kubetide.autoscaler.options import AutoscalerOptions
from kubetide.autoscaler.ports import InstanceState
from kubetide.model import Node

SCAN = 10.0
CREATED = 30.0  # the cloud lists the new instance
REGISTERED = 60.0  # its Node appears (paths that register)
READY = 80.0  # ready_then_not_ready: Ready ...
BROKE = 200.0  # ... then NotReady


@dataclass(frozen=True)
class Path:
    name: str
    registers: bool
    ready_at: float | None = None
    not_ready_at: float | None = None

    def nodes(self, t: float) -> list[Node]:
        """The new node as the API server shows it `t` seconds after the scale-up."""
        if not self.registers or t < REGISTERED:
            return []
        created = T0 + REGISTERED
        if self.ready_at is None or t < self.ready_at:
            return [node("ng-new", created=created, ready=False)]
        if self.not_ready_at is None or t < self.not_ready_at:
            return [node("ng-new", created=created, ready=True, transition=T0 + self.ready_at)]
        return [node("ng-new", created=created, ready=False, transition=T0 + self.not_ready_at)]


@dataclass(frozen=True)
class Expect:
    timed_out: bool  # one ScaleUpTimedOut, the group backed off for the initial duration
    readiness_at_end: Readiness | None  # the new node's class at the end (None: no Node)


PATHS = [
    (Path("never registers", registers=False), Expect(True, None)),
    (Path("registers, never Ready", registers=True), Expect(True, Readiness.UNREADY)),
    (
        Path("Ready, then NotReady", registers=True, ready_at=READY, not_ready_at=BROKE),
        Expect(False, Readiness.UNREADY),
    ),
]

# (max-node-provision-time, max-node-startup-time): the defaults, and a startup time shorter than
# the provision time, where a never-Ready node is past its startup time before the request's
# deadline (UC3's scenario: Cluster Autoscaler counts it as provisioned then).
TIMERS = [(900.0, 900.0), (600.0, 480.0)]


def run(path: Path, provision: float, startup: float):
    registry, group, cloud, old = scaling_up_by_one(provision, startup)
    timeline = []  # (t, upcoming, events) per loop
    end = provision + 6 * SCAN
    t = SCAN
    while t <= end:
        if t >= CREATED and not group.listed[1:]:
            group.add("ng-new", InstanceState.CREATING)
        if t >= REGISTERED and path.registers:
            group.listed[1:] = [dataclasses.replace(group.listed[1], state=InstanceState.RUNNING)]
        registry.update(old + path.nodes(t), cloud, T0 + t)
        reasons = [e.reason for e in registry.take_events()]
        timeline.append((t, registry.upcoming_nodes().get("ng", 0), reasons))
        t += SCAN
    return registry, timeline, T0 + end


@pytest.mark.parametrize("provision, startup", TIMERS, ids=["default-timers", "startup<provision"])
@pytest.mark.parametrize("path, expect", PATHS, ids=[p.name for p, _ in PATHS])
def test_scale_up_request_times_out_unless_its_node_arrived(path, expect, provision, startup):
    registry, timeline, end = run(path, provision, startup)
    events = [(t, reason) for t, _, reasons in timeline for reason in reasons]
    new = registry.node("ng-new")
    assert (new.readiness if new is not None else None) == expect.readiness_at_end

    if not expect.timed_out:
        assert events == []
        assert not registry.is_backed_off("ng", end)
        assert registry.scale_up_request("ng") is None  # fulfilled when the node turned Ready
        assert all(upcoming == 0 for t, upcoming, _ in timeline if t >= READY)
        assert registry.is_node_group_safe_to_scale_up("ng", end)  # 1 unready of 2: healthy
        return

    # Times out at the first loop strictly after max-node-provision-time, once.
    first_after_deadline = min(t for t, _, _ in timeline if t > provision)
    assert events == [(first_after_deadline, "ScaleUpTimedOut")]
    # Until then the node it waits for is coming capacity: the pods are not asked for again.
    assert all(upcoming == 1 for t, upcoming, _ in timeline if t <= provision)
    status = registry.backoff_status("ng", end)
    assert status.backed_off and status.error is not None and status.error.code == "timeout"
    assert status.until == T0 + first_after_deadline + registry.options.initial_node_group_backoff_duration
    assert not registry.is_node_group_safe_to_scale_up("ng", end)
    assert registry.scale_up_request("ng") is None
    assert registry.upcoming_nodes().get("ng", 0) == 0  # nothing is coming any more


def test_a_re_grown_group_does_not_count_old_stalled_nodes_as_coming():
    """Stalled nodes from an earlier request count as coming only up to what the open request
    still waits for."""
    options = AutoscalerOptions().with_values(max_node_provision_time=600.0, max_node_startup_time=300.0)
    registry = ClusterStateRegistry(options)
    group, old = group_with_nodes("ng", 8)
    cloud = FakeCloud(group)
    stalled = []
    for i in range(2):  # two nodes of an earlier scale-up that never started
        group.add(f"stuck-{i}")
        stalled.append(node(f"stuck-{i}", created=T0 - 3600, ready=False))
    group.target = 10
    registry.update(old + stalled, cloud, T0)
    assert registry.upcoming_nodes() == {}  # no request: they are not coming
    assert registry.node_group("ng").arrived == 8

    group.increase_size(1)
    registry.register_scale_up("ng", 1, T0)
    registry.update(old + stalled, cloud, T0 + SCAN)
    assert registry.upcoming_nodes() == {"ng": 1}  # the requested slot; the old two add nothing
    group.add("ng-new")
    fresh = node("ng-new", created=T0 + 20, ready=False)
    registry.update(old + stalled + [fresh], cloud, T0 + 20 + 301)  # the new one stalls too
    assert registry.node("ng-new").readiness is Readiness.UNREADY
    assert registry.upcoming_nodes() == {"ng": 1}  # still only what the request waits for
    assert registry.is_node_group_scaling_up("ng")


def test_an_unhealthy_groups_stalled_nodes_are_not_coming():
    """Once the stalled nodes make the group unhealthy, the pods may go elsewhere before the
    request times out; the timeout still backs the group off."""
    registry = ClusterStateRegistry(
        AutoscalerOptions().with_values(max_node_provision_time=600.0, max_node_startup_time=300.0)
    )
    group, old = group_with_nodes("ng", 2)
    cloud = FakeCloud(group)
    group.increase_size(4)
    registry.register_scale_up("ng", 4, T0)
    stuck = []
    for i in range(4):
        group.add(f"stuck-{i}")
        stuck.append(node(f"stuck-{i}", created=T0 + 60, ready=False))
    registry.update(old + stuck, cloud, T0 + 120)
    assert registry.upcoming_nodes() == {"ng": 4}  # not started yet
    registry.update(old + stuck, cloud, T0 + 60 + 300)
    assert not registry.is_node_group_healthy("ng")  # 4 unready of 6
    assert registry.upcoming_nodes() == {}
    assert registry.scale_up_request("ng") is not None and registry.take_events() == []
    registry.update(old + stuck, cloud, T0 + 610)
    assert [e.reason for e in registry.take_events()] == ["ScaleUpTimedOut"]
    assert registry.is_backed_off("ng", T0 + 610)
