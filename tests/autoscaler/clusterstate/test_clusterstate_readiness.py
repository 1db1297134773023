"""Per-node readiness classification, its edge cases and the times it reports."""

import pytest
import yaml
from clusterstate_fakes import T0, FakeCloud, FakeGroup, make_registry, node, pid

from kubetide.autoscaler.clusterstate import Readiness
from kubetide.autoscaler.clusterstate.readiness import STATUS_SETTLE_SECONDS, classify
from kubetide.autoscaler.ports import InstanceState
from kubetide.model import load_documents
from kubetide.model.reader import parse_time

STARTUP = 900.0
R, NS, U, D = Readiness.READY, Readiness.NOT_STARTED, Readiness.UNREADY, Readiness.BEING_DELETED


@pytest.mark.parametrize(
    ("ready", "deleting", "age", "transition_after_creation", "seen_ready", "expected"),
    [
        (True, False, 10, 0, False, R),
        (True, True, 10, 0, True, D),  # ready but tainted: going away, not capacity
        (False, True, 5000, 10, True, D),  # unready and tainted: not unready either (UC7)
        (False, False, 0, 0, False, NS),
        (False, False, STARTUP - 0.001, 0, False, NS),
        (False, False, STARTUP, 0, False, U),  # exactly max-node-startup-time: no longer starting
        (False, False, STARTUP + 1, 0, False, U),
        (False, False, 100, None, False, NS),  # no Ready condition yet
        (False, False, 100, STATUS_SETTLE_SECONDS, False, NS),  # first status, posted late
        (False, False, 200, STATUS_SETTLE_SECONDS + 1, False, U),  # NotReady again: it was Ready
        (False, False, 100, 0, True, U),  # the registry saw it Ready earlier
    ],
)
def test_classify(ready, deleting, age, transition_after_creation, seen_ready, expected):
    created = T0
    transition = None if transition_after_creation is None else created + transition_after_creation
    readiness, reason = classify(
        ready=ready,
        being_deleted=deleting,
        created=created,
        ready_transition=transition,
        seen_ready=seen_ready,
        now=created + age,
        max_node_startup_time=STARTUP,
    )
    assert readiness is expected
    assert reason


def test_startup_boundary_follows_the_option():
    registry = make_registry(max_node_startup_time=60.0)
    group = FakeGroup("ng", target=1)
    group.add("n")
    cloud = FakeCloud(group)
    registry.update([node("n", ready=False)], cloud, T0 + 59.5)
    assert registry.node("n").readiness is NS
    registry.update([node("n", ready=False)], cloud, T0 + 60)
    assert registry.node("n").readiness is U


def test_registry_remembers_a_node_was_ready():
    """A young node that was Ready and went NotReady is broken, not starting, even when its
    condition's transition time looks like a first status."""
    registry = make_registry()
    group = FakeGroup("ng", target=1)
    group.add("n")
    cloud = FakeCloud(group)
    registry.update([node("n", ready=True, transition=T0 + 30)], cloud, T0 + 40)
    registry.update([node("n", ready=False, transition=T0 + 50)], cloud, T0 + 60)
    record = registry.node("n")
    assert record.readiness is U
    assert record.unready_since == T0 + 50


def test_recreated_node_with_the_same_name_starts_over():
    registry = make_registry()
    group = FakeGroup("ng", target=1)
    group.add("n")
    cloud = FakeCloud(group)
    registry.update([node("n", ready=True)], cloud, T0 + 100)
    registry.update([node("n", created=T0 + 200, ready=False)], cloud, T0 + 210)
    assert registry.node("n").readiness is NS


def test_times_come_from_manifests():
    documents = list(
        yaml.safe_load_all(
            f"""
kind: Node
apiVersion: v1
metadata: {{name: broken, creationTimestamp: "2026-01-01T00:00:00Z"}}
spec:
  providerID: {pid("broken")}
status:
  allocatable: {{cpu: "4", memory: 16Gi, pods: "110"}}
  conditions:
  - {{type: Ready, status: "False", lastTransitionTime: "2026-01-01T01:00:00Z"}}
---
kind: Node
apiVersion: v1
metadata: {{name: leaving, creationTimestamp: "2026-01-01T00:00:00Z"}}
spec:
  providerID: {pid("leaving")}
  taints:
  - {{key: ToBeDeletedByClusterAutoscaler, value: "1767229200", effect: NoSchedule}}
status:
  allocatable: {{cpu: "4", memory: 16Gi, pods: "110"}}
  conditions:
  - {{type: Ready, status: "True", lastTransitionTime: "2026-01-01T00:01:00Z"}}
---
kind: Node
apiVersion: v1
metadata: {{name: booting, creationTimestamp: "2026-01-01T01:59:00Z"}}
spec:
  providerID: {pid("booting")}
status:
  allocatable: {{cpu: "4", memory: 16Gi, pods: "110"}}
  conditions:
  - {{type: Ready, status: "False", lastTransitionTime: "2026-01-01T01:59:05Z"}}
"""
        )
    )
    nodes = load_documents(documents, "nodes.yaml").nodes
    group = FakeGroup("ng", target=3)
    for name in ("broken", "leaving", "booting"):
        group.add(name)
    registry = make_registry()
    registry.update(nodes, FakeCloud(group), T0 + 7200)

    broken, leaving, booting = (registry.node(n) for n in ("broken", "leaving", "booting"))
    assert (broken.readiness, broken.created, broken.unready_since) == (U, T0, T0 + 3600)
    assert (leaving.readiness, leaving.deletion_since) == (D, T0 + 3600)
    assert (booting.readiness, booting.unready_since) == (NS, T0 + 7145)
    assert all(r.group_id == "ng" for r in registry.nodes())


def test_instance_being_deleted_by_the_cloud_is_being_deleted():
    registry = make_registry(ok_total_unready_count=0)
    group = FakeGroup("ng", target=1)
    group.add("old", InstanceState.DELETING)
    group.add("new")
    registry.update([node("old", ready=False, transition=T0 + 50), node("new")], FakeCloud(group), T0 + 100)
    assert registry.node("old").readiness is D
    assert registry.node("old").deletion_since == T0 + 100  # no taint: first seen
    assert registry.node_group("ng").in_target == 1
    assert registry.upcoming_nodes() == {}


def test_nodes_outside_node_groups_count_for_the_cluster_only():
    registry = make_registry()
    group = FakeGroup("ng", target=0)
    unmanaged = [node(f"static-{i}", ready=False, transition=T0 + 10) for i in range(4)]
    registry.update([*unmanaged, node("static-ok")], FakeCloud(group), T0 + 5000)
    assert all(r.group_id is None for r in registry.nodes())
    assert registry.node_counts().unready == 4
    assert not registry.is_cluster_healthy()  # 4 > 3 and 4 > 45% of 5
    assert registry.node_group("ng").counts.registered == 0


CREATED = "2026-01-01T00:00:00Z"


def node_manifest(conditions=(), taints=()):
    return {
        "kind": "Node",
        "apiVersion": "v1",
        "metadata": {"name": "n", "creationTimestamp": CREATED},
        "spec": {"providerID": pid("n"), "taints": list(taints)},
        "status": {
            "allocatable": {"cpu": "4", "memory": "16Gi", "pods": "110"},
            "conditions": list(conditions),
        },
    }


def condition(kind, status, at="2026-01-01T00:00:30Z"):
    return {"type": kind, "status": status, "lastTransitionTime": at}


def taint(key, at="2026-01-01T00:00:40Z"):
    return {"key": key, "effect": "NoSchedule", "timeAdded": at}


@pytest.mark.parametrize(
    ("conditions", "taints", "ready", "since"),
    [
        ([condition("Ready", "True")], [], True, "00:00:30"),
        ([condition("Ready", "False")], [], False, "00:00:30"),
        ([condition("Ready", "Unknown")], [], False, "00:00:30"),
        # Ready by condition, but the node lifecycle controller has not lifted its taint yet: the
        # scheduler places nothing there, so it is not capacity (Cluster Autoscaler's rule).
        ([condition("Ready", "True")], [taint("node.kubernetes.io/not-ready")], False, "00:00:40"),
        ([condition("Ready", "True")], [taint("node.kubernetes.io/network-unavailable")], False, "00:00:40"),
        ([condition("Ready", "True")], [taint("node.kubernetes.io/disk-pressure")], False, "00:00:40"),
        (
            [condition("Ready", "True"), condition("DiskPressure", "True", "2026-01-01T00:00:50Z")],
            [],
            False,
            "00:00:50",
        ),
        ([condition("Ready", "True"), condition("NetworkUnavailable", "True")], [], False, "00:00:30"),
        (
            [
                condition("Ready", "True"),
                condition("DiskPressure", "False"),
                condition("MemoryPressure", "True"),
            ],
            [],
            True,
            "00:00:30",
        ),
        ([condition("Ready", "True")], [taint("node.kubernetes.io/unschedulable")], True, "00:00:30"),
        ([], [], True, "00:00:00"),  # a hand-written dump without conditions
    ],
)
def test_readiness_follows_the_cluster_autoscalers_rule(conditions, taints, ready, since):
    (parsed,) = load_documents([node_manifest(conditions, taints)], "nodes.yaml").nodes
    assert parsed.ready is ready
    assert parsed.ready_transition == parse_time(f"2026-01-01T{since}Z")


def test_a_new_node_still_tainted_not_ready_is_coming_capacity_not_a_second_request():
    """The e2e race: kubetide asked for a node, it registered Ready with the not-ready taint still
    on, pods could not go there, and counting it as ready capacity asked for another node."""
    manifest = node_manifest(
        [condition("Ready", "True", "2026-01-01T00:00:05Z")],
        [taint("node.kubernetes.io/not-ready", "2026-01-01T00:00:01Z")],
    )
    (fresh,) = load_documents([manifest], "nodes.yaml").nodes
    registry = make_registry()
    group = FakeGroup("ng", target=1)
    group.add("n")
    registry.update([fresh], FakeCloud(group), parse_time("2026-01-01T00:00:10Z"))
    assert registry.node("n").readiness is NS
    assert registry.upcoming_nodes() == {"ng": 1}
