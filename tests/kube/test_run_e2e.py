"""`kubetide run` end to end on a real control plane: what the API server shows afterwards."""

from __future__ import annotations

import itertools
import re
import time
import urllib.request

import kubernetes
import pytest
import yaml
from controlplane import KubeTestContext, wait_until
from kubetide_process import (
    FAST_FLAGS,
    Kubetide,
    create_deployment,
    group_nodes,
    kwok_run_args,
    running,
    scale,
    tainted_for_deletion,
    wait_running,
    write_groups,
)

from kubetide.autoscaler.scaledown.planning.estimate import EVICTION_RETRY_INTERVAL

pytestmark = pytest.mark.controlplane


def base_args(kube: KubeTestContext, groups, name: str) -> list[str]:
    return [
        *kwok_run_args(kube, groups),
        f"--status-config-map-name={name}-status",
        f"--leader-elect-resource-name={name}",
        *FAST_FLAGS,
    ]


def test_pending_pods_scale_up_the_right_group_and_the_scheduler_binds_them(kube, tmp_path):
    groups = write_groups(tmp_path)
    # 30 pods of 500m: only the "small" group's label is allowed, so "large" (cheaper per pod
    # here is irrelevant) must not grow.
    create_deployment(kube, "web", 30, "500m", node_selector={"size": "small"})
    kubetide = Kubetide(kube, tmp_path, *base_args(kube, groups, "scaleup"), "--leader-elect=false").start()

    placed = wait_running(kube, "web", 30, timeout=90)
    nodes = {p.spec.node_name for p in placed}
    small = {n.metadata.name for n in group_nodes(kube, "small")}
    assert nodes <= small, kubetide.log()
    assert len(small) == 8  # 4 pods of 500m per 2-cpu node, 30 pods: ceil(30 / 4)
    assert not group_nodes(kube, "large")
    for node in group_nodes(kube, "small"):
        assert node.metadata.annotations["kwok.x-k8s.io/node"] == "fake"
        assert node.spec.provider_id == f"kwok://{node.metadata.name}"

    status = kube.core.read_namespaced_config_map("scaleup-status", "kube-system")
    assert "autoscalerStatus: Running" in status.data["status"]
    events = kube.core.list_namespaced_event(kube.namespace, field_selector="reason=TriggeredScaleUp").items
    assert events, kubetide.log()
    assert all(e.involved_object.kind == "Pod" for e in events)
    assert kubetide.terminate() == 0
    assert "Traceback" not in kubetide.log()


def test_load_drop_drains_through_the_eviction_api_within_pdb_and_parallelism(kube, tmp_path):
    groups = write_groups(tmp_path)
    create_deployment(kube, "web", 16, "500m", node_selector={"size": "small"})
    policy = kubernetes.client.PolicyV1Api(kube.api_client)
    policy.create_namespaced_pod_disruption_budget(
        kube.namespace,
        # The most common budget: a node holding two of its pods is drained pod by pod (a second
        # eviction the budget refuses is retried until the first one's replacement is Ready).
        {
            "metadata": {"name": "web"},
            "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app": "web"}}},
        },
    )
    kubetide = Kubetide(
        kube,
        tmp_path,
        *base_args(kube, groups, "drain"),
        "--leader-elect=false",
        "--max-drain-parallelism=2",
        # Six pods of 500m on 2-cpu nodes sit at 50% when spread 2/2/2: CA's default threshold
        # (0.5) keeps all three; 0.6 lets two go.
        "--scale-down-utilization-threshold=0.6",
    ).start()
    wait_running(kube, "web", 16, timeout=90)
    before = {n.metadata.name for n in group_nodes(kube, "small")}
    assert len(before) == 4, kubetide.log()

    # Load drops to 6 pods (two nodes' worth): the autoscaler must drain the rest.
    scale(kube, "web", 6)
    most_tainted = 0
    least_healthy = 6
    deadline = time.monotonic() + 120
    # node -> its estimatedDrainSeconds in the status, the last one written before its taint
    estimates: dict[str, int] = {}
    while time.monotonic() < deadline:
        tainted = tainted_for_deletion(kube)
        most_tainted = max(most_tainted, len(tainted))
        written = kube.core.read_namespaced_config_map("drain-status", "kube-system").data["status"]
        for drain in yaml.safe_load(written)["clusterWide"]["scaleDown"].get("drains", []):
            if drain["node"] not in tainted:
                estimates[drain["node"]] = drain["estimatedDrainSeconds"]
        status = policy.read_namespaced_pod_disruption_budget("web", kube.namespace).status
        if status.observed_generation:
            least_healthy = min(least_healthy, status.current_healthy)
        if len(group_nodes(kube, "small")) == 2 and len(running(kube, "web")) == 6:
            break
        time.sleep(0.2)
    remaining = {n.metadata.name for n in group_nodes(kube, "small")}
    budget = policy.read_namespaced_pod_disruption_budget("web", kube.namespace).status
    where = [(p.metadata.name, p.spec.node_name, p.status.phase) for p in running(kube, "web")]
    assert len(remaining) == 2, f"{budget}\n{where}\n{kubetide.log()}"
    assert most_tainted <= 2  # --max-drain-parallelism=2
    assert least_healthy >= 5  # maxUnavailable 1 of 6: the budget held throughout
    assert all(p.spec.node_name in remaining for p in running(kube, "web"))
    assert not tainted_for_deletion(kube)
    # The drain estimate against the real drain, by the Events' timestamps (the taint's
    # ScaleDown, then the removal's): within one eviction retry (the estimate counts whole 10 s
    # waves, a real 429 is retried on the next retry), plus a scan interval for the loop that
    # sees the node empty and deletes it and a second for the Events' whole-second timestamps.
    compared = 0
    for node in before - remaining:
        events = kube.core.list_namespaced_event(
            "default", field_selector=f"involvedObject.name={node}"
        ).items
        times = {
            e.message: (e.first_timestamp or e.event_time).timestamp()
            for e in events
            if e.reason == "ScaleDown"
        }
        marked, gone = (
            times.get("marked the node as toBeDeleted/unschedulable"),
            times.get("nodes removed by cluster autoscaler"),
        )
        if marked is None or gone is None or node not in estimates:
            continue  # emptied by the scale-in itself: no drain to estimate
        assert abs((gone - marked) - estimates[node]) <= EVICTION_RETRY_INTERVAL + 1 + 1, (
            node,
            estimates,
            times,
        )
        compared += 1
    assert compared >= 1, (estimates, kubetide.log())
    # The live ledger: every eviction the log lists, counted under the pods' controller kind.
    port = re.search(r"serving /metrics and /health-check on port (\d+)", kubetide.log())
    assert port is not None, kubetide.log()
    with urllib.request.urlopen(f"http://127.0.0.1:{port.group(1)}/metrics", timeout=10) as response:
        exposition = response.read().decode()
    logged = sum(int(n) for n in re.findall(r"\] Scale-down: (\d+) pods evicted: ", kubetide.log()))
    assert f'kubetide_evictions_total{{workload_kind="ReplicaSet"}} {float(logged)}' in exposition, exposition
    assert kubetide.terminate() == 0
    log = kubetide.log()
    # What an operator sees at --v=0 (each line is INFO or WARNING, shown at every verbosity):
    # the scale-up with its counts, each node marked with its kind and reason, the evictions,
    # and each removal with the reason scaled_down_nodes_total counts it under.
    # One scale-up for all 16 pods, or a chain of them when the ReplicaSet had not created every
    # pod by the first loop: each step starts at the size the last one set, the chain ends at 4.
    steps = re.findall(
        r"\] Scale-up: setting group small size to (\d+) instead of (\d+) \(max: 12\) for (\d+) pods", log
    )
    sizes = [(int(previous), int(new)) for new, previous, _ in steps]
    assert sizes and sizes[0][0] == 0 and sizes[-1][1] == 4, log
    assert all(a[1] == b[0] for a, b in itertools.pairwise(sizes)), log
    assert 1 <= sum(int(pods) for *_, pods in steps) <= 16, log
    removed = sorted(before - remaining)
    drained = 0
    for node in removed:
        # A node whose pods the scale-in itself deleted goes empty; the others are drained.
        marked = re.search(
            rf"\] Scale-down: marked node {node} toBeDeleted \((drain, underutilized|empty, empty), utilization",
            log,
        )
        assert marked is not None, log
        reason = "underutilized" if marked.group(1).startswith("drain") else "empty"
        drained += reason == "underutilized"
        assert f"] Scale-down: node {node} removed ({reason})" in log, log
    evicted = sum(int(n) for n in re.findall(r"\] Scale-down: (\d+) pods evicted: ", log))
    assert drained >= 1 and evicted >= drained, log  # each drained node's pods evicted at least once
    assert "Scale-down: abandoned" not in log and "Loop halted" not in log


def test_two_replicas_one_leader_takes_over_when_the_other_dies(kube, tmp_path):
    groups = write_groups(tmp_path)
    election = (
        "--leader-elect-lease-duration=4s",
        "--leader-elect-renew-deadline=3s",
        "--leader-elect-retry-period=1s",
    )
    args = (*base_args(kube, groups, "ha"), *election)
    first = Kubetide(kube, tmp_path, *args, name="first").start()
    coordination = kubernetes.client.CoordinationV1Api(kube.api_client)
    holder = wait_until(lambda: _holder(coordination, "ha"), timeout=30, what="a lease holder")
    second = Kubetide(kube, tmp_path, *args, name="second").start()
    time.sleep(3)
    assert _holder(coordination, "ha") == holder  # the first keeps the lease while it renews

    create_deployment(kube, "web", 8, "500m", node_selector={"size": "small"})
    wait_running(kube, "web", 8, timeout=90)
    assert len(group_nodes(kube, "small")) == 2  # one leader scaled up, not two
    assert "became the leader" in first.log() and "became the leader" not in second.log()

    first.kill()  # SIGKILL: no release, the lease must expire
    last_renewal = coordination.read_namespaced_lease("ha", "kube-system").spec.renew_time
    wait_until(lambda: (h := _holder(coordination, "ha")) and h != holder, timeout=30, what="a new holder")
    # Taken over only once the dead holder's lease had expired: the second saw the last renewal
    # at or after it was written and waits a whole lease duration from then (as client-go does).
    acquired = coordination.read_namespaced_lease("ha", "kube-system").spec.acquire_time
    assert (acquired - last_renewal).total_seconds() >= 4, (last_renewal, acquired)
    wait_until(lambda: "became the leader" in second.log(), timeout=10, what="the second replica leading")

    # The new leader acts: the load drops and it scales down, deleting each node once.
    scale(kube, "web", 2)
    wait_until(lambda: len(group_nodes(kube, "small")) == 1, timeout=90, what="scale-down to 1 node")
    assert second.terminate() == 0
    names = re.findall(r"Scale-down: node (\S+) removed \(", second.log())
    assert len(names) == len(set(names)) == 1, second.log()
    assert not tainted_for_deletion(kube)


def _holder(coordination, name: str) -> str | None:
    try:
        lease = coordination.read_namespaced_lease(name, "kube-system")
    except kubernetes.client.ApiException:
        return None
    return lease.spec.holder_identity or None


def test_sigkill_mid_drain_then_restart_leaves_no_taint(kube, tmp_path):
    groups = write_groups(tmp_path)
    create_deployment(kube, "web", 8, "500m", node_selector={"size": "small"})
    args = [*base_args(kube, groups, "kill"), "--leader-elect=false"]
    # A long delay between the taint and the node's deletion holds the drain mid-way.
    first = Kubetide(kube, tmp_path, *args, "--node-delete-delay-after-taint=120s", name="first").start()
    wait_running(kube, "web", 8, timeout=90)
    scale(kube, "web", 2)
    wait_until(lambda: tainted_for_deletion(kube), timeout=60, what="a node tainted for deletion")
    first.kill()
    assert tainted_for_deletion(kube)  # the taint a killed process leaves behind

    second = Kubetide(kube, tmp_path, *args, name="second").start()
    wait_until(
        lambda: not tainted_for_deletion(kube) and len(group_nodes(kube, "small")) == 1,
        timeout=90,
        what="the drain finished or released and no taint left",
    )
    assert len(running(kube, "web")) == 2
    assert second.terminate() == 0


def test_api_server_restart_mid_run_watches_recover_without_duplicate_actions(kube, tmp_path):
    groups = write_groups(tmp_path)
    create_deployment(kube, "web", 4, "500m", node_selector={"size": "small"})
    kubetide = Kubetide(kube, tmp_path, *base_args(kube, groups, "restart"), "--leader-elect=false").start()
    wait_running(kube, "web", 4, timeout=90)
    assert len(group_nodes(kube, "small")) == 1

    kube.control_plane.restart_apiserver()
    # After the restart the caches must follow new events: more load needs exactly one more node.
    scale(kube, "web", 8)
    wait_running(kube, "web", 8, timeout=90)
    kubetide.wait_loops(3)  # a few more loops: a stale cache would now add nodes again
    assert len(group_nodes(kube, "small")) == 2, kubetide.log()
    assert kubetide.running()
    assert kubetide.terminate() == 0


def test_surge_before_evict_moves_a_single_replica_behind_min_available_one(kube, tmp_path):
    """A node whose only pod is a single replica behind minAvailable 1 is drained by restarting
    its Deployment (replacement first): its available pods never drop below 1, watched."""
    groups = write_groups(tmp_path)
    small = {"size": "small"}
    # web fills node A (4 x 500m of 2 cpu); solo then needs node B of its own.
    create_deployment(kube, "web", 4, "500m", node_selector=small)
    kubetide = Kubetide(
        kube,
        tmp_path,
        *base_args(kube, groups, "surge"),
        "--leader-elect=false",
        "--surge-before-evict=true",
        "--scale-down-utilization-threshold=0.6",
    ).start()
    wait_running(kube, "web", 4, timeout=90)
    policy = kubernetes.client.PolicyV1Api(kube.api_client)
    policy.create_namespaced_pod_disruption_budget(
        kube.namespace,
        {
            "metadata": {"name": "solo"},
            "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "solo"}}},
        },
    )
    create_deployment(kube, "solo", 1, "200m", node_selector=small)
    (first,) = wait_running(kube, "solo", 1, timeout=90)
    assert len(group_nodes(kube, "small")) == 2, kubetide.log()

    # Watch solo's pods from now on: the Ready, not terminating ones, at every change.
    available: dict[str, bool] = {p.metadata.name: True for p in running(kube, "solo")}
    least = [len(available)]
    watch = kubernetes.watch.Watch()

    def moved_off_b() -> bool:
        return len(group_nodes(kube, "small")) == 1 and first.metadata.name not in {
            p.metadata.name for p in running(kube, "solo")
        }

    # Load drops: A keeps 2 web pods (50%), B holds solo (10%); solo can only go by a surge.
    scale(kube, "web", 2)
    deadline = time.monotonic() + 150
    # Watched in stretches of 5 s, each from where the last left off, until B is gone: B's removal
    # comes after solo's last event, which one long watch then waited out to its timeout.
    while not moved_off_b() and time.monotonic() < deadline:
        since = {"resource_version": watch.resource_version} if watch.resource_version else {}
        for event in watch.stream(
            kube.core.list_namespaced_pod,
            kube.namespace,
            label_selector="app=solo",
            timeout_seconds=5,
            **since,
        ):
            pod = event["object"]
            ready = any(c.type == "Ready" and c.status == "True" for c in pod.status.conditions or [])
            available[pod.metadata.name] = (
                event["type"] != "DELETED" and ready and pod.metadata.deletion_timestamp is None
            )
            least.append(sum(available.values()))
    wait_until(lambda: len(group_nodes(kube, "small")) == 1, timeout=60, what="node B removed")
    (moved,) = wait_running(kube, "solo", 1)
    assert moved.metadata.name != first.metadata.name
    assert moved.spec.node_name != first.spec.node_name
    assert min(least) >= 1, least  # minAvailable 1 held throughout
    events = kube.core.list_namespaced_event(kube.namespace, field_selector="reason=SurgeBeforeEvict").items
    assert [e.involved_object.name for e in events] == ["solo"], kubetide.log()
    assert not tainted_for_deletion(kube)
    assert kubetide.terminate() == 0
