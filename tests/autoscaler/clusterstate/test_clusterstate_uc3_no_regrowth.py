"""UC3 (issue 42 item 3): a group holding a node that registered and never became Ready is not
expanded again, also once the backoff of its timed-out scale-up has ended, until the node turns
Ready or is gone. One row per fate of that node after the backoff; the registry's answer, its
health text and the status document are checked for each.

The group stays healthy throughout (1 unready node is within ok-total-unready-count), so only the
UC3 rule can refuse it once the backoff is over: before the fix it was grown again then.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pytest
import yaml
from clusterstate_fakes import T0, FakeCloud, FakeGroup, group_with_nodes, node, pid, scaling_up_by_one

from kubetide.autoscaler.clusterstate import Readiness, StatusBuilder, status_yaml
from kubetide.autoscaler.clusterstate.registry import ClusterStateRegistry
from kubetide.autoscaler.options import AutoscalerOptions
from kubetide.autoscaler.ports import Instance, InstanceState
from kubetide.model import Node

SCAN = 10.0
PROVISION = 600.0  # max-node-provision-time
STARTUP = 480.0  # max-node-startup-time
REGISTERED = 60.0  # the new node's Node appears this long after the scale-up
NEW = "ng-new"


@dataclass(frozen=True)
class World:
    group: FakeGroup
    cloud: FakeCloud
    old: list[Node]
    stuck: Node  # the new node: registered, NotReady since creation


def broken_scale_up() -> tuple[ClusterStateRegistry, World, float]:
    """A group of one Ready node grown by one whose node registers and never turns Ready, run
    loop by loop until its request has timed out and the backoff that followed has ended.
    Returns the registry, the world and the first loop time after the backoff."""
    registry, group, cloud, old = scaling_up_by_one(PROVISION, STARTUP)
    group.add(NEW)
    stuck = node(NEW, created=T0 + REGISTERED, ready=False)
    world = World(group, cloud, old, stuck)
    timed_out_at = None
    t = SCAN
    while timed_out_at is None:
        registry.update(old + ([stuck] if t >= REGISTERED else []), cloud, T0 + t)
        if "ScaleUpTimedOut" in [e.reason for e in registry.take_events()]:
            timed_out_at = T0 + t
        t += SCAN
    backoff = registry.backoff_status("ng", timed_out_at)
    assert (
        backoff.backed_off
        and backoff.until == timed_out_at + registry.options.initial_node_group_backoff_duration
    )
    after = backoff.until
    registry.update([*old, stuck], cloud, after)
    return registry, world, after


def still_never_ready(world: World, now: float) -> list[Node]:
    return [*world.old, world.stuck]


def turned_ready(world: World, now: float) -> list[Node]:
    return [*world.old, node(NEW, created=world.stuck.meta.creation_timestamp, ready=True, transition=now)]


def gone(world: World, now: float) -> list[Node]:
    world.group.drop(NEW)
    world.group.target -= 1
    return world.old


def tainted_for_deletion(world: World, now: float) -> list[Node]:
    tainted = node(NEW, created=world.stuck.meta.creation_timestamp, ready=False, deleting_since=now)
    return [*world.old, tainted]


def cloud_deleting(world: World, now: float) -> list[Node]:
    world.group.listed = [
        Instance(i.id, InstanceState.DELETING) if i.id == pid(NEW) else i for i in world.group.listed
    ]
    return [*world.old, world.stuck]


@dataclass(frozen=True)
class Fate:
    name: str
    nodes: Callable[[World, float], list[Node]]
    readiness: Readiness | None  # the new node's class (None: no Node any more)
    held: bool  # scale-up still refused


FATES = [
    Fate("still never Ready", still_never_ready, Readiness.UNREADY, held=True),
    Fate("turned Ready", turned_ready, Readiness.READY, held=False),
    Fate("gone", gone, None, held=False),
    Fate("tainted ToBeDeleted by the autoscaler", tainted_for_deletion, Readiness.BEING_DELETED, held=False),
    Fate("its instance being deleted by the cloud", cloud_deleting, Readiness.BEING_DELETED, held=False),
]


@pytest.mark.parametrize("fate", FATES, ids=[f.name for f in FATES])
def test_a_group_holding_a_never_ready_node_is_not_grown_after_its_backoff(fate):
    registry, world, after = broken_scale_up()
    # Right after the backoff, before the node's fate: the backoff is over and the group is
    # healthy, yet it is not safe to grow, and the reason names the node.
    assert not registry.is_backed_off("ng", after)
    assert registry.is_node_group_healthy("ng")
    assert registry.never_ready_nodes("ng") == (NEW,)
    assert not registry.is_node_group_safe_to_scale_up("ng", after)

    now = after + SCAN
    registry.update(fate.nodes(world, now), world.cloud, now)
    record = registry.node(NEW)
    assert (record.readiness if record is not None else None) == fate.readiness
    assert registry.is_node_group_healthy("ng") and not registry.is_backed_off("ng", now)
    assert registry.is_node_group_safe_to_scale_up("ng", now) is not fate.held
    assert registry.never_ready_nodes("ng") == ((NEW,) if fate.held else ())

    health = registry.node_group_health("ng")
    status = StatusBuilder().build(registry, now).node_group("ng")
    scale_up = yaml.safe_load(status_yaml(StatusBuilder().build(registry, now)))["nodeGroups"][0]["scaleUp"]
    if fate.held:
        assert f"neverReady=1 ({NEW})" in health.message and "not scaled up" in health.message
        assert status.scale_up.never_ready is not None and NEW in status.scale_up.never_ready
        assert scale_up["neverReady"] == status.scale_up.never_ready
    else:
        assert "neverReady" not in health.message
        assert status.scale_up.never_ready is None and "neverReady" not in scale_up


def test_a_node_still_starting_or_broken_after_being_ready_does_not_hold_its_group():
    """Only UC3's nodes hold a group: one within max-node-startup-time is coming (UC2), one that
    was Ready and broke was delivered (UC6)."""
    registry = ClusterStateRegistry(AutoscalerOptions().with_values(max_node_startup_time=STARTUP))
    group, old = group_with_nodes("ng", 2)
    group.add("starting")
    group.add("broke")
    group.target += 2
    now = T0 + 3600
    nodes = [
        *old,
        node("starting", created=now - STARTUP + SCAN, ready=False),
        node("broke", created=T0, ready=False, transition=now - 600),
    ]
    registry.update(nodes, FakeCloud(group), now)
    assert registry.node("starting").readiness is Readiness.NOT_STARTED
    assert registry.node("broke").readiness is Readiness.UNREADY
    assert registry.never_ready_nodes("ng") == ()
    assert registry.is_node_group_safe_to_scale_up("ng", now)

    later = now + SCAN  # the starting node is now past max-node-startup-time, never Ready
    registry.update(nodes, FakeCloud(group), later)
    assert registry.node("starting").reason == "never became Ready within max-node-startup-time"
    assert registry.never_ready_nodes("ng") == ("starting",)
    assert not registry.is_node_group_safe_to_scale_up("ng", later)


def test_the_health_text_names_a_few_never_ready_nodes_and_counts_the_rest():
    registry = ClusterStateRegistry(AutoscalerOptions().with_values(ok_total_unready_count=10))
    group, old = group_with_nodes("ng", 10)
    now = T0 + 7200
    stuck = [f"stuck-{i}" for i in range(5)]
    for name in stuck:
        group.add(name)
    group.target += len(stuck)
    registry.update(old + [node(name, created=T0, ready=False) for name in stuck], FakeCloud(group), now)
    assert registry.never_ready_nodes("ng") == tuple(stuck)
    message = registry.node_group_health("ng").message
    assert "neverReady=5 (stuck-0, stuck-1, stuck-2 +2 more)" in message
    assert registry.is_node_group_healthy("ng") and not registry.is_node_group_safe_to_scale_up("ng", now)
