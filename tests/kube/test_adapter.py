"""The kube adapter's pieces on a real API server: the view's caches, the actions' fault paths."""

from __future__ import annotations

import os

import kubernetes
import pytest
from controlplane import KubeTestContext, wait_until
from kubetide_process import create_deployment, running, wait_running

from kubetide.autoscaler.clusterstate.status import ClusterAutoscalerStatus
from kubetide.autoscaler.events import Event
from kubetide.autoscaler.ports import ActionError, EvictionOutcome
from kubetide.clock import ManualClock
from kubetide.kube.actions import KubeClusterActions
from kubetide.kube.client import ApiError, connect
from kubetide.kube.informer import Informer
from kubetide.kube.resources import NODES
from kubetide.kube.view import KubeClusterView
from kubetide.model import Taint

pytestmark = pytest.mark.controlplane


@pytest.fixture
def client(kube: KubeTestContext):
    client = connect(str(kube.control_plane.kubeconfig_path), qps=100, burst=200)
    yield client
    client.close()


@pytest.fixture
def view(client):
    view = KubeClusterView(client)
    view.start()
    assert view.wait_for_sync(30) == []
    yield view
    view.stop()


def synced_until(view: KubeClusterView, condition, what: str):
    def check():
        view.sync()
        return condition()

    return wait_until(check, timeout=30, what=what)


def test_view_follows_nodes_and_pods_incrementally(kube, view):
    snapshot = view.snapshot()
    kube.create_fake_node("view-a", cpu="2")
    create_deployment(kube, "web", 3, "500m")
    create_deployment(kube, "huge", 1, "64")  # fits no node: pending, then unschedulable
    wait_running(kube, "web", 3)

    synced_until(view, lambda: len(view.snapshot().pods_on("view-a")) == 3, "3 pods on view-a")
    pending = synced_until(
        view, lambda: [p for p in view.pending_pods() if p.is_unschedulable], "an unschedulable pod"
    )
    assert [p.labels["app"] for p in pending] == ["huge"]
    assert view.snapshot() is snapshot  # one snapshot, changed in place, never rebuilt
    assert view.new_unschedulable.is_set()
    assert {w.kind for w in view.workloads()} >= {"Deployment", "ReplicaSet"}

    victim = running(kube, "web")[0]
    kube.core.delete_namespaced_pod(victim.metadata.name, kube.namespace, grace_period_seconds=0)
    synced_until(view, lambda: not view.snapshot().has_pod(victim.metadata.uid), "the deleted pod gone")
    kube.core.delete_node("view-a")
    synced_until(view, lambda: "view-a" not in view.snapshot(), "the node gone")


def cached(view: KubeClusterView):
    """What the autoscaler reads of a view: pods by node with their nodes' requests, and pending pods."""
    snapshot = view.snapshot()
    return (
        {n.name: (sorted(snapshot.pods_on(n.name)), snapshot.requested(n.name)) for n in snapshot.nodes()},
        sorted(p.uid for p in view.pending_pods()),
    )


def test_a_burst_of_deletions_synced_at_once_leaves_what_a_fresh_list_finds(kube, client, view):
    # view.sync takes a run of pod deletions off the snapshot node by node; here they arrive
    # between two syncs together with the ReplicaSet's replacements, as after a load drop.
    for name in ("burst-a", "burst-b"):
        kube.create_fake_node(name, cpu="4")
    create_deployment(kube, "burst", 10, "300m")
    first = wait_running(kube, "burst", 10)
    synced_until(view, lambda: view.snapshot().pod_count() >= 10, "10 pods bound in the view")
    victims = {p.metadata.uid for p in first[:7]}
    for p in first[:7]:
        kube.core.delete_namespaced_pod(p.metadata.name, kube.namespace, grace_period_seconds=0)
    wait_until(
        lambda: len(found := running(kube, "burst")) == 10 and not victims & {p.metadata.uid for p in found},
        timeout=30,
        what="7 replacements running",
    )
    fresh = KubeClusterView(client)
    fresh.start()
    try:
        assert fresh.wait_for_sync(30) == []
        synced_until(view, lambda: cached(view) == cached(fresh), "the view to agree with a fresh list")
    finally:
        fresh.stop()
    assert not any(view.snapshot().has_pod(uid) for uid in victims)


class ExpiringClient:
    """The real client, except that its watches answer 410 Gone (the resourceVersion was compacted
    away) until told otherwise: a fault the API server gives only after etcd compaction outran
    its watch cache, injected here so that the re-list runs against the real server."""

    def __init__(self, client):
        self.client, self.expire, self.server = client, True, client.server

    def request(self, *args, **kwargs):
        return self.client.request(*args, **kwargs)

    def list_pages(self, *args, **kwargs):
        return self.client.list_pages(*args, **kwargs)

    def watch(self, path, **kwargs):
        if self.expire:
            raise ApiError(410, "Expired", "too old resource version")
        return self.client.watch(path, **kwargs)


def test_informer_relists_after_410_gone_and_reports_only_the_differences(kube, client):
    import queue

    kube.create_fake_node("relist-kept")
    kube.create_fake_node("relist-gone")
    changes: queue.SimpleQueue = queue.SimpleQueue()
    expiring = ExpiringClient(client)
    informer = Informer(expiring, NODES, changes)  # type: ignore[arg-type]
    informer.start()
    try:
        wait_until(lambda: informer.relists >= 1, timeout=30, what="a re-list after 410")
        first = set()
        while not changes.empty():
            change = changes.get()
            first.add((change.type, change.key))
        assert {("ADDED", "relist-kept"), ("ADDED", "relist-gone")} <= first

        kube.core.delete_node("relist-gone")
        kube.create_fake_node("relist-new")
        relists = informer.relists
        wait_until(lambda: informer.relists > relists + 1, timeout=30, what="another re-list")
        expiring.expire = False
        later = set()
        wait_until(lambda: not changes.empty(), timeout=30, what="the differences")
        while not changes.empty():
            change = changes.get()
            later.add((change.type, change.key))
        assert ("DELETED", "relist-gone") in later
        assert ("ADDED", "relist-new") in later
        assert not any(key == "relist-kept" and kind == "ADDED" for kind, key in later)
    finally:
        informer.stop()


class ConflictingClient:
    """The real client, but someone else writes the Node between our read and our write, once."""

    def __init__(self, client, kube: KubeTestContext):
        self.client, self.kube, self.conflicts = client, kube, 0

    def request(self, method, path, **kwargs):
        if method == "PUT" and self.conflicts == 0:
            self.conflicts += 1
            self.kube.core.patch_node(path.rsplit("/", 1)[1], {"metadata": {"labels": {"touched": "yes"}}})
        return self.client.request(method, path, **kwargs)


def test_taint_update_retries_on_conflict_and_loses_no_concurrent_change(kube, client):
    kube.create_fake_node("conflict-a")
    # The node controller removes its not-ready taint once KWOK reports the node Ready.
    wait_until(lambda: not kube.core.read_node("conflict-a").spec.taints, timeout=60, what="no taints")
    conflicting = ConflictingClient(client, kube)
    actions = KubeClusterActions(conflicting, ManualClock(1_800_000_000))  # type: ignore[arg-type]
    actions.add_taint("conflict-a", Taint("ToBeDeletedByClusterAutoscaler", "1800000000", "NoSchedule"))

    node = kube.core.read_node("conflict-a")
    assert conflicting.conflicts == 1
    assert node.metadata.labels["touched"] == "yes"
    assert [t.key for t in node.spec.taints] == ["ToBeDeletedByClusterAutoscaler"]
    actions.remove_taint("conflict-a", "ToBeDeletedByClusterAutoscaler")
    assert not kube.core.read_node("conflict-a").spec.taints
    actions.remove_taint("conflict-a", "ToBeDeletedByClusterAutoscaler")  # absent: nothing written
    with pytest.raises(ActionError, match="not found"):
        actions.add_taint("no-such-node", Taint("x"))


def test_eviction_outcomes_follow_the_api(kube, client, view):
    kube.create_fake_node("evict-a")
    create_deployment(kube, "web", 2, "100m")
    policy = kubernetes.client.PolicyV1Api(kube.api_client)
    policy.create_namespaced_pod_disruption_budget(
        kube.namespace,
        {
            "metadata": {"name": "web"},
            "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}},
        },
    )
    wait_running(kube, "web", 2)
    wait_until(
        lambda: (
            (s := policy.read_namespaced_pod_disruption_budget("web", kube.namespace).status)
            and s.disruptions_allowed == 1
        ),
        timeout=30,
        what="the disruption controller's status",
    )
    pods = synced_until(
        view,
        lambda: (
            (found := [p for p in view.snapshot().pods() if p.namespace == kube.namespace])
            and len(found) == 2
            and found
        ),
        "both pods in the view",
    )
    # Cordoned, so the ReplicaSet's replacement stays pending and the budget stays used up.
    kube.core.patch_node("evict-a", {"spec": {"unschedulable": True}})
    actions = KubeClusterActions(client, ManualClock(0))
    assert actions.evict(pods[0], 0) is EvictionOutcome.EVICTED
    assert actions.evict(pods[1], 0) is EvictionOutcome.BLOCKED_BY_PDB  # 429
    assert actions.evict(pods[0], 0) is EvictionOutcome.NOT_FOUND  # gone, or replaced: UID precondition
    not_leader = KubeClusterActions(client, ManualClock(0), may_write=lambda: False)
    assert not_leader.evict(pods[1], 0) is EvictionOutcome.FAILED
    with pytest.raises(ActionError, match="not the leader"):
        not_leader.add_taint("evict-a", Taint("x"))


def test_status_written_only_when_it_changes_and_events_are_aggregated(kube, client):
    clock = ManualClock(1_800_000_000)
    actions = KubeClusterActions(client, clock, status_configmap="aggregation-status")
    kube.add_cleanup(lambda: kube.core.delete_namespaced_config_map("aggregation-status", "kube-system"))
    running_status = ClusterAutoscalerStatus(autoscaler_status="Running", time="t1")
    actions.write_status(running_status)
    clock.advance(10)
    actions.write_status(ClusterAutoscalerStatus(autoscaler_status="Running", time="t2"))  # probe time only
    assert actions.status_writes == 1
    actions.write_status(ClusterAutoscalerStatus(autoscaler_status="Initializing", time="t3"))
    assert actions.status_writes == 2
    stored_map = kube.core.read_namespaced_config_map("aggregation-status", "kube-system")
    assert "autoscalerStatus: Initializing" in stored_map.data["status"]
    # CA's annotation, in Go's time layout, at the Clock's time of the write.
    assert stored_map.metadata.annotations["cluster-autoscaler.kubernetes.io/last-updated"] == (
        "2027-01-15 08:00:10 +0000 UTC"
    )

    key = f"{kube.namespace}/some-pod"
    for _ in range(5):
        actions.emit_event(Event.not_trigger_scale_up(key, "pod didn't trigger scale-up", clock.now()))
        clock.advance(10)
    assert actions.events.writes == 1  # one Event; the repeats wait for the refresh interval
    clock.advance(300)
    actions.events.flush()
    events = kube.core.list_namespaced_event(kube.namespace, field_selector="reason=NotTriggerScaleUp").items
    assert len(events) == 1
    assert events[0].count == 5
    assert events[0].involved_object.name == "some-pod"


def test_background_events_leave_the_caller_free_and_write_everything(kube):
    from kubetide.kube.events import BackgroundEvents, EventRecorder

    # Three requests a second: written inline, twelve events would hold the caller for ~4 s and
    # take twelve requests before it returned (the test waits as long for them to be written: a
    # slower client or more events would only wait longer).
    slow = connect(str(kube.control_plane.kubeconfig_path), qps=3, burst=1)
    events = BackgroundEvents(EventRecorder(slow, ManualClock(1_800_000_000)))
    actions = KubeClusterActions(slow, ManualClock(1_800_000_000), events=events)
    for index in range(12):
        actions.emit_event(
            Event.triggered_scale_up(f"{kube.namespace}/pod-{index}", "{g 0->1 (max: 5)}", 1e9)
        )
    assert slow.requests < 5  # the caller returned long before the events were written
    assert events.wait_idle(timeout=120)
    written = kube.core.list_namespaced_event(kube.namespace, field_selector="reason=TriggeredScaleUp").items
    assert len(written) == 12
    events.close()


def test_a_nodes_marking_and_removal_stay_two_events_stamped_when_they_happened(kube, client):
    # The clock the recorder writes with runs an hour late: the Events must carry the decision's
    # own times, not the time they reached the API server.
    clock = ManualClock(1_800_003_600)
    actions = KubeClusterActions(client, clock)
    node = f"gone-{kube.namespace}"
    actions.emit_event(Event.node_marked_for_deletion(node, 1_800_000_000))
    actions.emit_event(Event.node_removed(node, 1_800_000_007))
    items = kube.core.list_namespaced_event("default", field_selector=f"involvedObject.name={node}").items
    kube.add_cleanup(lambda: [kube.core.delete_namespaced_event(e.metadata.name, "default") for e in items])
    by_message = {e.message: e for e in items}
    assert set(by_message) == {
        "marked the node as toBeDeleted/unschedulable",
        "nodes removed by cluster autoscaler",
    }
    assert all(e.reason == "ScaleDown" and e.count == 1 for e in items)
    marked = by_message["marked the node as toBeDeleted/unschedulable"]
    removed = by_message["nodes removed by cluster autoscaler"]
    assert marked.first_timestamp.timestamp() == 1_800_000_000
    assert removed.first_timestamp.timestamp() == removed.last_timestamp.timestamp() == 1_800_000_007


def test_similar_messages_are_combined_after_ten_as_client_go_does(kube, client):
    clock = ManualClock(1_800_000_000)
    actions = KubeClusterActions(client, clock)
    key = f"{kube.namespace}/picky"
    for index in range(14):  # the message differs each time (a different reason text)
        actions.emit_event(
            Event.not_trigger_scale_up(key, f"pod didn't trigger scale-up: reason {index}", clock.now())
        )
        clock.advance(1)
    clock.advance(300)
    actions.events.flush()
    items = kube.core.list_namespaced_event(kube.namespace, field_selector="involvedObject.name=picky").items
    separate = [e for e in items if not e.message.startswith("(combined from similar events): ")]
    combined = [e for e in items if e.message.startswith("(combined from similar events): ")]
    assert len(separate) == 9  # client-go: the tenth similar message within ten minutes combines
    assert len(combined) == 1 and combined[0].count == 5
    assert combined[0].message.endswith("reason 13")


def test_node_events_are_written_before_queued_pod_noise(kube):
    from kubetide.kube.events import BackgroundEvents, EventRecorder

    slow = connect(str(kube.control_plane.kubeconfig_path), qps=2, burst=1)
    events = BackgroundEvents(EventRecorder(slow, ManualClock(1_800_000_000)), max_queued_pod_events=30)
    try:
        for index in range(40):  # more pod noise than the queue holds: the oldest is dropped
            events.record(Event.triggered_scale_up(f"{kube.namespace}/p-{index}", "{g 0->1 (max: 5)}", 1e9))
        node = f"busy-{kube.namespace}"
        events.record(Event.node_marked_for_deletion(node, 1e9))
        # Written within a few requests, not after the forty pod events ahead of it.
        wait_until(
            lambda: (
                kube.core.list_namespaced_event("default", field_selector=f"involvedObject.name={node}").items
            ),
            timeout=10,
            what="the node's event",
        )
        assert events.queued() > 20
        # 40 recorded into a queue of 30 while the writer, at 2 requests a second, takes a few.
        assert events.dropped >= 5
    finally:
        events.close(timeout=0.5)
    left = events.dropped
    assert left >= 10  # what close() could not write in time is counted, not silently lost
    for item in kube.core.list_namespaced_event(
        "default", field_selector=f"involvedObject.name={node}"
    ).items:
        kube.core.delete_namespaced_event(item.metadata.name, "default")


def test_unreachable_api_server_is_an_api_error(tmp_path, kube):
    kubeconfig = kube.control_plane.write_token_kubeconfig("nobody", name="unreachable")
    text = kubeconfig.read_text().replace(kube.control_plane.server, "https://127.0.0.1:1")
    (tmp_path / "unreachable").write_text(text)
    client = connect(str(tmp_path / "unreachable"))
    with pytest.raises(ApiError, match="cannot reach the API server"):
        client.request("GET", "/version")


def test_plan_on_the_live_cluster_explains_and_writes_nothing(kube, tmp_path):
    import subprocess
    import sys

    from kubetide_process import write_groups

    kube.create_fake_node("plan-a", cpu="2", labels={"kubetide.io/node-group": "small"})
    create_deployment(kube, "web", 2, "100m")
    wait_running(kube, "web", 2)
    before = {n.metadata.name: n.metadata.resource_version for n in kube.core.list_node().items}
    groups = write_groups(tmp_path)

    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "kubetide.cli.main",
            "plan",
            "--kubeconfig",
            str(kube.control_plane.kubeconfig_path),
            "--node-groups",
            str(groups),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        # os.environ, not the process's C environment: GNU readline, once loaded in a terminal,
        # exports COLUMNS=80 there, which `plan` would obey and wrap its first line at.
        env=dict(os.environ),
    )
    assert result.returncode == 0, result.stderr
    assert "(wall clock: a live cluster)" in result.stdout
    assert "plan-a" in result.stdout
    after = {n.metadata.name: n.metadata.resource_version for n in kube.core.list_node().items}
    # Nothing written: no node changed (KWOK heartbeats go to Leases, not Nodes) and no taint added.
    assert not any(
        t.key.endswith("ClusterAutoscaler") for n in kube.core.list_node().items for t in n.spec.taints or []
    )
    assert set(after) == set(before)
