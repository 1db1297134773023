"""One test per use case of the cluster-state-registry design (UC1-UC8)."""

from clusterstate_fakes import STOCKOUT, T0, FakeCloud, FakeGroup, group_with_nodes, make_registry, node

from kubetide.autoscaler.clusterstate import Readiness
from kubetide.autoscaler.ports import InstanceState

P = 900.0  # max-node-provision-time and max-node-startup-time defaults


def test_uc1_requested_nodes_count_as_upcoming():
    registry = make_registry()
    group, nodes = group_with_nodes("ng", 1)
    cloud = FakeCloud(group)
    registry.update(nodes, cloud, T0)
    assert registry.upcoming_nodes() == {}

    group.increase_size(3)
    registry.register_scale_up("ng", 3, T0 + 1)
    assert registry.is_node_group_scaling_up("ng")  # before the registry has seen the new target
    registry.update(nodes, cloud, T0 + 10)
    assert registry.upcoming_nodes() == {"ng": 3}  # requested, no instance yet
    assert registry.node_group("ng").missing == 3

    for name in ("ng-1", "ng-2", "ng-3"):
        group.add(name, InstanceState.CREATING)
    registry.update(nodes, cloud, T0 + 60)
    assert registry.upcoming_nodes() == {"ng": 3}  # created, not registered
    assert registry.node_counts().unregistered == 3

    nodes = nodes + [node(f"ng-{i}", created=T0 + 120, ready=False) for i in (1, 2, 3)]
    registry.update(nodes, cloud, T0 + 130)
    assert registry.upcoming_nodes() == {"ng": 3}  # registered, not started
    assert registry.is_node_group_scaling_up("ng")

    nodes = [node(n.name, created=n.meta.creation_timestamp) for n in nodes]
    registry.update(nodes, cloud, T0 + 200)
    assert registry.upcoming_nodes() == {}
    assert not registry.is_node_group_scaling_up("ng")
    assert registry.scale_up_request("ng") is None  # fulfilled
    assert registry.take_events() == []


def test_uc2_registered_but_not_ready_nodes_are_upcoming_not_unready():
    registry = make_registry(ok_total_unready_count=0)
    group, nodes = group_with_nodes("ng", 2)
    group.target = 4
    group.add("new-1")
    group.add("new-2")
    nodes += [node("new-1", created=T0 + 100, ready=False), node("new-2", created=T0 + 100, ready=False)]
    registry.update(nodes, FakeCloud(group), T0 + 150)

    assert [r.readiness for r in registry.nodes()] == [Readiness.READY] * 2 + [Readiness.NOT_STARTED] * 2
    assert registry.node("new-1").unready_since == T0 + 100
    assert registry.node_counts().not_started == 2 and registry.node_counts().unready == 0
    assert registry.is_cluster_healthy()  # starting nodes are justified even with ok count 0
    assert registry.is_node_group_healthy("ng")
    assert registry.upcoming_nodes() == {"ng": 2}


def test_uc3_nodes_that_never_become_ready_make_the_group_unhealthy():
    registry = make_registry()
    healthy, healthy_nodes = group_with_nodes("ok", 10)
    broken = FakeGroup("broken", target=0)
    cloud = FakeCloud(healthy, broken)
    registry.update(healthy_nodes, cloud, T0)

    broken.increase_size(5)
    registry.register_scale_up("broken", 5, T0)
    for i in range(5):
        broken.add(f"broken-{i}")
    stuck = [node(f"broken-{i}", created=T0 + 60, ready=False) for i in range(5)]

    registry.update(healthy_nodes + stuck, cloud, T0 + 60 + P - 1)
    assert registry.node_counts().not_started == 5
    assert registry.is_node_group_healthy("broken")
    assert registry.upcoming_nodes() == {"broken": 5}
    # Not started after max-node-provision-time is also a timed-out scale-up (as in CA).
    assert [e.reason for e in registry.take_events()] == ["ScaleUpTimedOut"]

    registry.update(healthy_nodes + stuck, cloud, T0 + 60 + P)  # exactly max-node-startup-time
    assert len(registry.nodes_in(Readiness.UNREADY)) == 5
    assert registry.node("broken-0").reason == "never became Ready within max-node-startup-time"
    assert not registry.is_node_group_healthy("broken")  # 5 > 3 and 5 > 45% of 5
    assert not registry.is_node_group_safe_to_scale_up("broken", T0 + 60 + P)
    assert registry.is_node_group_safe_to_scale_up("ok", T0 + 60 + P)
    assert registry.is_cluster_healthy()  # 5 of 15 is below 45%
    assert registry.upcoming_nodes() == {}


def test_uc4_stockout_fixes_target_and_backs_off_so_another_group_is_used():
    registry = make_registry()
    a, a_nodes = group_with_nodes("a", 2)
    b, b_nodes = group_with_nodes("b", 2)
    cloud = FakeCloud(a, b)
    registry.update(a_nodes + b_nodes, cloud, T0)

    a.increase_size(3)
    registry.register_scale_up("a", 3, T0)
    for i in range(3):
        a.add(f"a-new-{i}", InstanceState.CREATING, STOCKOUT)
    registry.update(a_nodes + b_nodes, cloud, T0 + 10)

    status = registry.backoff_status("a", T0 + 10)
    assert status.backed_off and status.until == T0 + 10 + 300
    assert (status.error.error_class, status.error.code) == ("OutOfResources", "STOCKOUT")
    assert [e.reason for e in registry.take_events()] == ["ScaleUpFailed"]
    assert registry.upcoming_nodes() == {}  # failed instances are not coming capacity
    assert not registry.is_node_group_safe_to_scale_up("a", T0 + 10)
    assert registry.is_node_group_safe_to_scale_up("b", T0 + 10)  # scale-up takes the pods there

    (fix,) = registry.size_fixes(T0 + 10)
    assert (fix.group_id, fix.decrease, fix.delta, fix.reason) == ("a", 3, -3, "STOCKOUT")
    a.decrease_target_size(fix.delta)
    a.listed = [i for i in a.listed if i.error is None]  # the cloud drops the failed requests
    registry.record_target_size_fixed("a", fix.decrease, T0 + 10)
    assert registry.size_fixes(T0 + 10) == []  # not twice before the next update

    registry.update(a_nodes + b_nodes, cloud, T0 + 20)
    assert a.target == 2 and registry.size_fixes(T0 + 20) == []
    assert registry.is_backed_off("a", T0 + 20)  # the fix does not end the backoff
    assert registry.backoff.backed_off_seconds("a", T0 + 100) == 90.0


def test_uc4_scale_up_that_never_arrives_times_out_then_target_is_fixed():
    registry = make_registry()
    group, nodes = group_with_nodes("ng", 1)
    cloud = FakeCloud(group)
    group.increase_size(2)
    registry.register_scale_up("ng", 2, T0)
    for t in range(10, int(P) + 1, 10):
        registry.update(nodes, cloud, T0 + t)
        assert registry.upcoming_nodes() == {"ng": 2}
    assert not registry.is_backed_off("ng", T0 + P)

    registry.update(nodes, cloud, T0 + P + 10)  # the request expired at T0 + P
    status = registry.backoff_status("ng", T0 + P + 10)
    assert status.backed_off and status.error.code == "timeout"
    assert "timed out" in status.error.message
    assert [e.reason for e in registry.take_events()] == ["ScaleUpTimedOut"]
    assert registry.upcoming_nodes() == {}  # a failed group's missing slots are not coming
    assert registry.size_fixes(T0 + P + 10) == []  # short since T0 + 10: not yet P

    registry.update(nodes, cloud, T0 + P + 20)
    (fix,) = registry.size_fixes(T0 + P + 20)
    assert (fix.decrease, fix.reason) == (2, "timeout")


def test_uc5_instances_that_never_register_are_deleted_after_provision_time():
    registry = make_registry()
    group, nodes = group_with_nodes("ng", 2, min_size=2)
    group.target = 4
    group.add("ghost-1")
    group.add("ghost-2", InstanceState.CREATING)
    cloud = FakeCloud(group)

    registry.update(nodes, cloud, T0)
    registry.update(nodes, cloud, T0 + P)  # exactly max-node-provision-time: not yet
    assert registry.unregistered_nodes_to_delete(T0 + P) == {}
    assert registry.node_counts().unregistered == 2

    registry.update(nodes, cloud, T0 + P + 10)
    found = registry.unregistered_nodes_to_delete(T0 + P + 10)
    assert [(u.instance_id, u.since) for u in found["ng"]] == [
        ("fake:///ghost-1", T0),
        ("fake:///ghost-2", T0),
    ]
    assert registry.node_counts().long_unregistered == 2
    assert registry.upcoming_nodes() == {}  # they are not coming

    group.delete_nodes([u.node for u in found["ng"]])
    registry.record_unregistered_removed("ng", [u.instance_id for u in found["ng"]], T0 + P + 10)
    registry.record_unregistered_removed("ng", [found["ng"][0].instance_id], T0 + P + 10)
    assert registry.unregistered_removed_total == 2  # each instance once
    registry.update(nodes, cloud, T0 + P + 20)
    assert registry.unregistered_nodes_to_delete(T0 + P + 20) == {}
    assert group.target == 2


def test_uc6_an_unready_node_of_a_group_at_target_is_a_uc6_node():
    registry = make_registry()
    group, nodes = group_with_nodes("ng", 3)
    cloud = FakeCloud(group)
    registry.update(nodes, cloud, T0 + 3600)
    assert registry.unready_nodes_at_target() == set()
    died = T0 + 4000
    nodes[0] = node("ng-0", ready=False, transition=died)

    registry.update(nodes, cloud, died + 10)
    assert registry.node("ng-0").readiness is Readiness.UNREADY
    assert registry.node("ng-0").reason == "NotReady after having been Ready"
    assert registry.node("ng-0").unready_since == died
    # How long is scale-down's timer (scale-down-unready-time); the registry names the node at once.
    assert registry.unready_nodes_at_target() == {"ng-0"}


def test_uc6_is_not_claimed_while_the_group_is_away_from_its_target():
    registry = make_registry()
    group, nodes = group_with_nodes("ng", 3)
    cloud = FakeCloud(group)
    nodes[0] = node("ng-0", ready=False, transition=T0 + 4000)
    group.increase_size(1)  # a node is coming: the group is not at its target
    registry.update(nodes, cloud, T0 + 4010)
    assert registry.node("ng-0").readiness is Readiness.UNREADY
    assert registry.unready_nodes_at_target() == set()


def test_uc7_nodes_being_deleted_count_as_neither_unready_nor_capacity():
    registry = make_registry(ok_total_unready_count=0)
    group, nodes = group_with_nodes("ng", 6)
    for i in range(4):
        nodes[i] = node(f"ng-{i}", ready=False, transition=T0 + 5000, deleting_since=T0 + 4990)
    registry.update(nodes, FakeCloud(group), T0 + 9000)

    counts = registry.node_counts()
    assert (counts.being_deleted, counts.unready, counts.ready) == (4, 0, 2)
    assert registry.being_deleted_nodes() == {"ng-0", "ng-1", "ng-2", "ng-3"}
    assert registry.node("ng-0").deletion_since == T0 + 4990  # the taint's value
    assert registry.is_cluster_healthy() and registry.is_node_group_healthy("ng")
    assert registry.unready_nodes_at_target() == set()
    assert registry.upcoming_nodes() == {}  # in the target until deleted, but never coming


def test_uc8_zone_wide_notready_halts_then_recovers():
    registry = make_registry()
    group, nodes = group_with_nodes("ng", 10)
    cloud = FakeCloud(group)
    zone_a = range(6)
    history = []
    for step in range(0, 61):  # one loop every 10 s
        now = T0 + 3600 + 10 * step
        outage = 10 <= step < 40
        current = [
            node(n.name, ready=False, transition=T0 + 3600 + 100) if outage and i in zone_a else n
            for i, n in enumerate(nodes)
        ]
        registry.update(current, cloud, now)
        history.append(registry.is_cluster_healthy())

    assert history == [True] * 10 + [False] * 30 + [True] * 21  # halts, then resumes by itself
    health = registry.cluster_health()
    assert health.healthy and health.last_transition_time == T0 + 3600 + 400
    assert health.last_probe_time == T0 + 3600 + 600
