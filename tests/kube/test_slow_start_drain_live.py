"""Parallel drains of a slow-starting Deployment on a real control plane (issue 37): while several
nodes are drained at once, the Deployment's Ready pods, watched from their Ready conditions, never
fall below what its PodDisruptionBudget guarantees, although each replacement takes seconds to
become Ready (KWOK's slow-start stage, see controlplane.write_kwok_stages)."""

from __future__ import annotations

import threading
import time

import kubernetes
import pytest
import urllib3
from controlplane import START_DELAY_ANNOTATION, KubeTestContext, wait_until
from kubetide_process import (
    FAST_FLAGS,
    Kubetide,
    create_deployment,
    group_nodes,
    kwok_run_args,
    scale,
    tainted_for_deletion,
    wait_running,
    write_groups,
)

pytestmark = pytest.mark.controlplane

REPLICAS = 6
START_DELAY_SECONDS = 5


def is_ready(pod) -> bool:
    """Ready and not on its way out: what a PodDisruptionBudget counts as healthy."""
    return pod.metadata.deletion_timestamp is None and any(
        c.type == "Ready" and c.status == "True" for c in pod.status.conditions or []
    )


class ReadyWatch:
    """Watches a Deployment's pods in a thread and records how many are Ready after every change."""

    def __init__(self, kube: KubeTestContext, app: str):
        listed = kube.core.list_namespaced_pod(kube.namespace, label_selector=f"app={app}")
        self.ready = {p.metadata.name: is_ready(p) for p in listed.items}
        self.counts = [sum(self.ready.values())]
        self.pods: dict[str, object] = {}  # every pod seen, as last seen
        # The nodes pods were evicted from, in spells during which fewer than all pods were Ready:
        # more than one node in a spell is drains overlapping on this Deployment.
        self.spells: list[set[str]] = [set()]
        self._evicted: set[str] = set()
        self._watch = kubernetes.watch.Watch()
        self._stream = self._watch.stream(
            kube.core.list_namespaced_pod,
            kube.namespace,
            label_selector=f"app={app}",
            resource_version=listed.metadata.resource_version,
            timeout_seconds=600,
        )
        self._stopped = False
        self._thread = threading.Thread(target=self._follow, daemon=True)
        self._thread.start()

    def _follow(self) -> None:
        try:
            for event in self._stream:
                pod = event["object"]
                self.pods[pod.metadata.name] = pod
                if pod.metadata.deletion_timestamp is not None and pod.metadata.name not in self._evicted:
                    self._evicted.add(pod.metadata.name)
                    self.spells[-1].add(pod.spec.node_name)
                self.ready[pod.metadata.name] = event["type"] != "DELETED" and is_ready(pod)
                self.counts.append(sum(self.ready.values()))
                if self.counts[-1] == REPLICAS and self.spells[-1]:
                    self.spells.append(set())
        except urllib3.exceptions.ProtocolError:
            # stop() closes the connection under the stream; anything else ends the watch early,
            # which the test sees as a watch that is no longer alive.
            if not self._stopped:
                raise

    def alive(self) -> bool:
        return self._thread.is_alive()

    def stop(self) -> None:
        self._stopped = True
        self._watch.stop()
        self._thread.join(timeout=10)


def ready_after_creation(pod) -> float | None:
    """Seconds from the pod's creation to its Ready condition turning True (API timestamps)."""
    for condition in pod.status.conditions or []:
        if condition.type == "Ready" and condition.status == "True":
            return (condition.last_transition_time - pod.metadata.creation_timestamp).total_seconds()
    return None


@pytest.mark.parametrize(
    ("budget", "least_ready", "drains_overlap"),
    [
        # The common budget: its one disruption is taken by the first drain, so kubetide's planner
        # holds the other nodes back until the replacement is Ready (no overlap on this Deployment).
        ({"maxUnavailable": 1}, REPLICAS - 1, False),
        # Room for four disruptions: two drains of two-pod nodes go at once, and their evictions
        # leave replacements starting on every side.
        ({"minAvailable": 2}, 2, True),
    ],
    ids=["maxUnavailable-1", "minAvailable-2"],
)
def test_parallel_drains_of_a_slow_starting_deployment_keep_the_budget_minimum_ready(
    kube, tmp_path, budget, least_ready, drains_overlap
):
    groups = write_groups(tmp_path)
    # 16 pods of 450m fill four 2-cpu nodes to 1.8 cpu: the slow pods (100m) then fit at most two
    # per node, so the scheduler has to spread them over at least three nodes.
    create_deployment(kube, "load", 16, "450m", node_selector={"size": "small"})
    kubetide = Kubetide(
        kube,
        tmp_path,
        *kwok_run_args(kube, groups),
        "--status-config-map-name=slowstart-status",
        "--leader-elect-resource-name=slowstart",
        "--leader-elect=false",
        "--max-drain-parallelism=3",
        *FAST_FLAGS,
    ).start()
    wait_running(kube, "load", 16, timeout=120)
    assert len(group_nodes(kube, "small")) == 4, kubetide.log()

    policy = kubernetes.client.PolicyV1Api(kube.api_client)
    policy.create_namespaced_pod_disruption_budget(
        kube.namespace,
        {
            "metadata": {"name": "slow"},
            "spec": {**budget, "selector": {"matchLabels": {"app": "slow"}}},
        },
    )
    create_deployment(
        kube,
        "slow",
        REPLICAS,
        "100m",
        node_selector={"size": "small"},
        pod_annotations={START_DELAY_ANNOTATION: f"{START_DELAY_SECONDS}s"},
    )

    def ready_slow_pods() -> list:
        found = [p for p in kube.core.list_namespaced_pod(kube.namespace, label_selector="app=slow").items]
        ready = [p for p in found if is_ready(p)]
        return ready if len(ready) == REPLICAS else []

    first = wait_until(ready_slow_pods, timeout=90, what=f"{REPLICAS} Ready pods of slow")
    assert len({p.spec.node_name for p in first}) >= 3
    # The precondition that makes the test mean something: KWOK holds these pods back.
    assert all(ready_after_creation(p) >= START_DELAY_SECONDS - 2 for p in first), [
        ready_after_creation(p) for p in first
    ]
    wait_until(
        lambda: (
            policy.read_namespaced_pod_disruption_budget("slow", kube.namespace).status.current_healthy
            == REPLICAS
        ),
        timeout=30,
        what="the budget's status to count every pod healthy",
    )

    watch = ReadyWatch(kube, "slow")
    scale(kube, "load", 0)
    # The most nodes tainted for deletion at once (any reason, empty nodes included).
    most_tainted = 0
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        most_tainted = max(most_tainted, len(tainted_for_deletion(kube)))
        if len(group_nodes(kube, "small")) == 1 and len(ready_slow_pods()) == REPLICAS:
            break
        time.sleep(0.2)
    # The watch followed every change up to now (a watch that ended early missed some).
    assert watch.alive(), watch.counts
    watch.stop()
    remaining = {n.metadata.name for n in group_nodes(kube, "small")}
    replacements = [p for name, p in watch.pods.items() if name not in {q.metadata.name for q in first}]
    overlap = max(len(nodes) for nodes in watch.spells)
    seen = (
        f"most nodes tainted at once: {most_tainted}; nodes evicted from while replacements were "
        f"not Ready: {watch.spells}; Ready counts: {watch.counts}; "
        f"replacements Ready after (s): {sorted(ready_after_creation(p) or -1 for p in replacements)}"
    )
    print(seen)
    assert len(remaining) == 1, f"{seen}\n{kubetide.log()}"
    assert min(watch.counts) >= least_ready, f"{seen}\n{kubetide.log()}"
    assert (overlap >= 2) == drains_overlap, seen
    # The slow pods were moved (not all on the remaining node from the start), by evictions whose
    # replacements KWOK held back.
    assert replacements, seen
    assert all((ready_after_creation(p) or 0) >= START_DELAY_SECONDS - 2 for p in replacements if is_ready(p))
    assert not tainted_for_deletion(kube)
    assert kubetide.terminate() == 0
    assert "Traceback" not in kubetide.log()
