"""Registry behaviour beyond the use cases: S1/S2 thresholds, scale-up request bookkeeping,
unregistered removal limits, size fixes and the summary counters."""

import pytest
from clusterstate_fakes import (
    STOCKOUT,
    T0,
    FakeCloud,
    FakeGroup,
    group_with_nodes,
    make_registry,
    node,
    pid,
)
from hypothesis import example, given, settings
from hypothesis import strategies as st

from kubetide.autoscaler.clusterstate import ClusterStateRegistry
from kubetide.autoscaler.clusterstate.readiness import Readiness
from kubetide.autoscaler.options import AutoscalerOptions
from kubetide.autoscaler.ports import InstanceState

P = 900.0


def build_group(ready=0, unready=0, not_started=0, long_unregistered=0, target=None):
    """A group with nodes in each state at `now` (returned), the unregistered ones seen at T0."""
    now = T0 + 10_000
    group = FakeGroup("ng")
    nodes = []
    for i in range(ready):
        group.add(f"r{i}")
        nodes.append(node(f"r{i}"))
    for i in range(unready):
        group.add(f"u{i}")
        nodes.append(node(f"u{i}", ready=False, transition=T0 + 5000))
    for i in range(not_started):
        group.add(f"s{i}")
        nodes.append(node(f"s{i}", created=now - 60, ready=False))
    for i in range(long_unregistered):
        group.add(f"g{i}")
    group.target = len(group.listed) if target is None else target
    return group, nodes, now


@pytest.mark.parametrize(
    ("ready", "unready", "not_started", "long_unregistered", "ok", "pct", "healthy"),
    [
        (10, 3, 0, 0, 3, 45, True),  # at ok-total-unready-count
        (1, 4, 0, 0, 3, 45, False),  # 4 > 3 and 4 > 45% of 5
        (10, 4, 0, 0, 3, 45, True),  # 4 > 3 but 4 < 45% of 14
        (4, 4, 0, 0, 3, 45, False),  # 4 > 3.6
        (0, 0, 20, 0, 0, 0, True),  # starting nodes never count
        (0, 2, 0, 2, 3, 45, False),  # never-registered instances count (S2: "not present at all")
        (5, 2, 0, 0, 1, 30, True),  # 2 > 1 but 2 < 30% of 7 = 2.1
        (5, 3, 0, 0, 1, 30, False),  # 3 > 1 and 3 > 30% of 8 = 2.4
    ],
)
def test_s2_node_group_health(ready, unready, not_started, long_unregistered, ok, pct, healthy):
    registry = make_registry(ok_total_unready_count=ok, max_total_unready_percentage=pct)
    group, nodes, now = build_group(ready, unready, not_started, long_unregistered)
    cloud = FakeCloud(group)
    registry.update(nodes, cloud, T0)
    registry.update(nodes, cloud, now)
    assert registry.is_node_group_healthy("ng") is healthy
    record = registry.node_group_health("ng")
    assert record.unready == unready + long_unregistered
    assert record.total == ready + unready + not_started + long_unregistered


@pytest.mark.parametrize(
    ("registered_unready", "total", "healthy"),
    [(3, 4, True), (4, 100, True), (4, 8, False), (45, 100, True), (46, 100, False)],
)
def test_s1_cluster_health_needs_both_thresholds(registered_unready, total, healthy):
    registry = make_registry()
    group = FakeGroup("ng", target=total)
    nodes = []
    for i in range(total):
        group.add(f"n{i}")
        nodes.append(node(f"n{i}", ready=i >= registered_unready, transition=T0 + 10))
    registry.update(nodes, FakeCloud(group), T0 + 5000)
    assert registry.is_cluster_healthy() is healthy
    assert registry.cluster_health().message.startswith(f"ready={total - registered_unready} ")


def test_cluster_health_record_keeps_transition_time():
    registry = make_registry()
    group, nodes = group_with_nodes("ng", 5)
    cloud = FakeCloud(group)
    registry.update(nodes, cloud, T0 + 10)
    registry.update(nodes, cloud, T0 + 20)
    record = registry.cluster_health()
    assert (record.healthy, record.last_probe_time, record.last_transition_time) == (True, T0 + 20, T0 + 10)


def test_register_scale_up_merges_and_shrinks_like_cluster_autoscaler():
    registry = make_registry()
    registry.register_scale_up("ng", 0, T0)
    assert registry.scale_up_request("ng") is None
    registry.register_scale_up("ng", 2, T0)
    registry.register_scale_up("ng", 3, T0 + 100)  # another raise: deadline moves
    request = registry.scale_up_request("ng")
    assert (request.increase, request.time, request.expected_add_time) == (5, T0 + 100, T0 + 100 + P)
    registry.register_scale_up("ng", -1, T0 + 200)  # a decrease keeps the deadline
    assert (request.increase, request.expected_add_time) == (4, T0 + 100 + P)
    registry.register_scale_up("ng", -4, T0 + 300)
    assert registry.scale_up_request("ng") is None


def test_partial_stockout_reduces_the_request_and_the_rest_still_counts():
    registry = make_registry()
    group, nodes = group_with_nodes("ng", 1)
    cloud = FakeCloud(group)
    group.increase_size(3)
    registry.register_scale_up("ng", 3, T0)
    group.add("ok-1", InstanceState.CREATING)
    group.add("ok-2", InstanceState.CREATING)
    group.add("bad", InstanceState.CREATING, STOCKOUT)
    registry.update(nodes, cloud, T0 + 10)
    assert registry.scale_up_request("ng").increase == 2
    assert registry.is_backed_off("ng", T0 + 10)
    assert registry.upcoming_nodes() == {"ng": 2}
    (fix,) = registry.size_fixes(T0 + 10)
    assert fix.decrease == 1

    # The same failed instance seen again is not a new failure.
    registry.take_events()
    registry.update(nodes, cloud, T0 + 20)
    assert registry.take_events() == []
    assert registry.backoff_status("ng", T0 + 20).until == T0 + 10 + 300


def test_size_fix_never_goes_below_what_exists():
    """A cloud that lowers the target but keeps listing the failed instances gets one fix only."""
    registry = make_registry()
    group, nodes = group_with_nodes("ng", 2)
    cloud = FakeCloud(group)
    group.increase_size(2)
    registry.register_scale_up("ng", 2, T0)
    group.add("bad-1", InstanceState.CREATING, STOCKOUT)
    group.add("bad-2", InstanceState.CREATING, STOCKOUT)
    registry.update(nodes, cloud, T0 + 10)
    (fix,) = registry.size_fixes(T0 + 10)
    group.decrease_target_size(fix.delta)
    registry.record_target_size_fixed("ng", fix.decrease, T0 + 10)
    registry.update(nodes, cloud, T0 + 20)
    assert group.target == 2
    assert registry.size_fixes(T0 + 20) == []
    assert registry.size_fixes(T0 + 20 + 10 * P) == []


def test_registry_events_target_the_status_configmap():
    registry = make_registry()
    group, nodes = group_with_nodes("ng", 1)
    group.increase_size(1)
    registry.register_scale_up("ng", 1, T0)
    registry.update(nodes, FakeCloud(group), T0 + P + 1)
    (event,) = registry.take_events()
    assert (event.kind, event.key) == ("ConfigMap", "kube-system/cluster-autoscaler-status")
    assert (event.type, event.reason, event.at) == ("Warning", "ScaleUpTimedOut", T0 + P + 1)
    assert event.message == "Nodes added to group ng failed to register within 15m1s"


def test_registry_events_follow_the_status_configmap_options():
    registry = make_registry(namespace="kubetide", status_config_map_name="kubetide-status")
    group, nodes = group_with_nodes("ng", 1)
    group.increase_size(1)
    registry.register_scale_up("ng", 1, T0)
    registry.update(nodes, FakeCloud(group), T0 + P + 1)
    (event,) = registry.take_events()
    assert (event.kind, event.key) == ("ConfigMap", "kubetide/kubetide-status")
    assert event.message == "Nodes added to group ng failed to register within 15m1s"


def test_unregistered_removal_never_goes_below_min_size():
    registry = make_registry()
    group, nodes = group_with_nodes("ng", 2, min_size=3)
    for name in ("ghost-1", "ghost-2"):
        group.add(name)
    group.target = 4
    cloud = FakeCloud(group)
    registry.update(nodes, cloud, T0)
    registry.update(nodes, cloud, T0 + P + 1)
    assert [u.instance_id for u in registry.unregistered_nodes_to_delete(T0 + P + 1)["ng"]] == [
        "fake:///ghost-1"
    ]
    placeholder = registry.unregistered_nodes_to_delete(T0 + P + 1)["ng"][0].node
    assert (placeholder.name, placeholder.provider_id) == ("fake:///ghost-1", "fake:///ghost-1")


def test_registered_instance_is_not_unregistered_and_errors_are_not_unregistered():
    registry = make_registry()
    group, nodes = group_with_nodes("ng", 2)
    group.add("failed", InstanceState.CREATING, STOCKOUT)
    group.add("gone", InstanceState.DELETING)
    group.target = 3
    registry.update(nodes, FakeCloud(group), T0)
    registry.update(nodes, FakeCloud(group), T0 + 5 * P)
    assert registry.unregistered_nodes_to_delete(T0 + 5 * P) == {}
    state = registry.node_group("ng")
    assert (state.unregistered, state.long_unregistered, len(state.errored), state.missing) == ((), (), 1, 0)


def test_upcoming_is_never_negative():
    registry = make_registry()
    group, nodes = group_with_nodes("ng", 3)
    group.target = 1  # the cloud already lowered the target; nodes not yet gone
    registry.update(nodes, FakeCloud(group), T0)
    assert registry.upcoming_nodes() == {}
    assert registry.node_group("ng").upcoming == 0


def test_size_fix_waits_for_a_stable_shortfall():
    registry = make_registry()
    group, nodes = group_with_nodes("ng", 1)
    group.target = 3  # someone raised the target outside the autoscaler: no request to time out
    cloud = FakeCloud(group)
    registry.update(nodes, cloud, T0)
    registry.update(nodes, cloud, T0 + P)
    assert registry.size_fixes(T0 + P) == []
    group.target = 4  # the shortfall changed: observed anew
    registry.update(nodes, cloud, T0 + P + 10)
    assert registry.size_fixes(T0 + P + 10) == []
    registry.update(nodes, cloud, T0 + 2 * P + 11)
    (fix,) = registry.size_fixes(T0 + 2 * P + 11)
    assert (fix.decrease, fix.reason) == (3, "timeout")


def test_time_cannot_go_backwards():
    registry = make_registry()
    group, nodes = group_with_nodes("ng", 1)
    registry.update(nodes, FakeCloud(group), T0 + 10)
    with pytest.raises(ValueError, match="backwards"):
        registry.update(nodes, FakeCloud(group), T0)


# -- Ready nodes seen again as the same Node object reuse their record (see _classify_nodes) -----


class _Uncached(ClusterStateRegistry):
    """The same registry, made to forget which Node objects it saw: every node is classified."""

    def update(self, nodes, cloud, now):
        self._ready.clear()
        return super().update(nodes, cloud, now)


def _answers(registry, now):
    return (
        registry.nodes(),
        registry.node_counts(),
        registry.node_groups(),
        registry.cluster_health(),
        [registry.node_group_health(g.id) for g in registry.node_groups()],
        registry.upcoming_nodes(),
        registry.being_deleted_nodes(),
        registry.unready_nodes_at_target(),
        registry.size_fixes(now),
        registry.unregistered_nodes_to_delete(now),
    )


def test_the_same_ready_node_object_is_reclassified_when_the_cloud_deletes_it():
    registry = make_registry()
    group, nodes = group_with_nodes("ng", 3)
    cloud = FakeCloud(group)
    registry.update(nodes, cloud, T0)
    record = registry.node("ng-0")
    registry.update(nodes, cloud, T0 + 10)
    assert registry.node("ng-0") is record  # nothing changed: reused
    group.delete_nodes([nodes[0]])  # same Node object, instance now DELETING
    registry.update(nodes, cloud, T0 + 20)
    assert registry.node("ng-0").readiness is Readiness.BEING_DELETED
    assert registry.node_counts().being_deleted == 1
    assert registry.node("ng-0").deletion_since == T0 + 20


def test_a_ready_node_that_changes_object_is_classified_again():
    registry = make_registry()
    group, nodes = group_with_nodes("ng", 2)
    cloud = FakeCloud(group)
    registry.update(nodes, cloud, T0)
    broken = node("ng-0", ready=False, transition=T0 + 50)
    registry.update([broken, nodes[1]], cloud, T0 + 60)
    assert registry.node("ng-0").readiness is Readiness.UNREADY
    assert registry.node("ng-0").unready_since == T0 + 50
    tainted = node("ng-1", deleting_since=T0 + 70)
    registry.update([broken, tainted], cloud, T0 + 80)
    assert registry.node("ng-1").readiness is Readiness.BEING_DELETED
    registry.update(nodes, cloud, T0 + 90)
    assert [r.readiness for r in registry.nodes()] == [Readiness.READY, Readiness.READY]


def test_a_node_whose_instance_moves_group_is_counted_in_its_new_group():
    registry = make_registry()
    a, nodes = group_with_nodes("a", 2)
    b = FakeGroup("b", target=0)
    cloud = FakeCloud(a, b)
    registry.update(nodes, cloud, T0)
    a.drop("a-1")
    a.target, b.target = 1, 1
    b.add("a-1")  # the same Node object now belongs to b
    registry.update(nodes, cloud, T0 + 10)
    assert registry.node("a-1").group_id == "b"
    assert registry.node_group("b").counts.ready == 1


STEPS = st.lists(
    st.tuples(
        st.sampled_from(["unready", "ready", "taint", "cloud-delete", "drop", "move", "wait", "same"]),
        st.integers(0, 99),
    ),
    max_size=10,
)


@settings(max_examples=80)
@given(st.integers(1, 5), STEPS)
# A deletion that ends, then another: the memory the first left must not be reused (CI found it).
@example(1, [("move", 0), ("cloud-delete", 0), ("move", 0), ("wait", 0), ("cloud-delete", 0)])
def test_reusing_records_answers_as_classifying_every_node(count, steps):
    """Over random histories (nodes going NotReady and back, tainted, deleted by the cloud, their
    instances dropped or moved to another group, time passing), a registry that reuses records of
    unchanged Ready nodes answers every question exactly as one that classifies every node."""
    a, nodes = group_with_nodes("a", count)
    b = FakeGroup("b", target=0)
    cloud = FakeCloud(a, b)
    cached, uncached = make_registry(), _Uncached(AutoscalerOptions())
    now = T0

    def both():
        cached.update(list(nodes), cloud, now)
        uncached.update(list(nodes), cloud, now)
        assert _answers(cached, now) == _answers(uncached, now)

    both()
    for op, pick in steps:
        i = pick % len(nodes)
        name = nodes[i].name
        if op == "unready":
            nodes[i] = node(name, ready=False, transition=now)
        elif op == "ready":
            nodes[i] = node(name, transition=now)
        elif op == "taint":
            nodes[i] = node(name, deleting_since=now)
        elif op == "cloud-delete":
            for group in (a, b):
                if any(inst.id == pid(name) for inst in group.listed):
                    group.delete_nodes([nodes[i]])
        elif op == "drop":
            for group in (a, b):
                group.drop(name)
        elif op == "move":
            for group in (a, b):
                group.drop(name)
            b.add(name)
        elif op == "wait":
            now += 400.0
        both()


def test_an_all_ready_cluster_that_did_not_change_gives_the_answers_a_fresh_pass_gives():
    """The registry skips its per-node pass when the same Ready nodes come back (registry.py,
    _still_all_ready); a registry seeing only the last loop must answer the same, and a node
    whose instance starts being deleted must still be seen at once."""
    group = FakeGroup("ng")
    nodes = []
    for i in range(5):
        group.add(f"r{i}")
        nodes.append(node(f"r{i}"))
    group.target = 5
    cloud = FakeCloud(group)
    kept = make_registry()
    for step in range(3):
        kept.update(list(nodes), cloud, T0 + 100 + 10 * step)
    fresh = make_registry()
    fresh.update(list(nodes), cloud, T0 + 120)
    assert kept.nodes() == fresh.nodes() and kept.node_counts() == fresh.node_counts()
    assert kept.node_groups() == fresh.node_groups()
    assert [r.readiness for r in kept.nodes()] == [Readiness.READY] * 5
    group.delete_nodes([nodes[2]])
    kept.update(list(nodes), cloud, T0 + 130)
    assert kept.node("r2").readiness is Readiness.BEING_DELETED
    assert kept.node_counts().ready == 4
