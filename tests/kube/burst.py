"""A pod burst, then its scale-down, under `kubetide run` on the real control plane: what the
Events and the log say about every node afterwards. Shared by tests/kube/test_run_events.py
(500 pods) and benchmarks/bench_events.py (2,000 pods).

Every node the burst added and the scale-down removed must have, on the API server:
- a ScaleDown "marked the node as toBeDeleted/unschedulable" Event whose firstTimestamp is
  within one loop of the node's ToBeDeleted taint (the taint's value is the Unix second it went
  on, written by the same decision);
- a ScaleDown "nodes removed by cluster autoscaler" Event whose timestamp is within one loop of
  when a watch of ours saw the Node disappear;
and the --v=0 log a line for its marking and its removal.

"Within one loop": an Event carries the time its loop (or drive between loops) decided, and the
action happens during that loop, which under load takes seconds. So the marking must be within
the scan interval (plus the second Event timestamps round to) of the taint, and the deletion our
watch saw must fall between the removal Event's time and the end of the loop that did it (its
log line), plus the same slack.
"""

from __future__ import annotations

import calendar
import re
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import kubernetes
from controlplane import KubeTestContext, wait_until
from kubetide_process import TO_BE_DELETED, Kubetide, create_deployment, group_nodes, running, scale

BURST_GROUPS_YAML = """\
nodeGroups:
- name: burst
  minSize: 0
  maxSize: 60
  price: 0.5
  template:
    metadata:
      labels: {kubernetes.io/os: linux, size: burst}
    status:
      allocatable: {cpu: "16", memory: 64Gi, pods: "110"}
"""
SCAN_INTERVAL = 2.0
MARKED = "marked the node as toBeDeleted/unschedulable"
REMOVED = "nodes removed by cluster autoscaler"


@dataclass
class BurstRun:
    pods: int
    nodes_added: int = 0
    scale_up_seconds: float = 0.0  # first pod created -> every pod Running
    scale_down_seconds: float = 0.0  # replicas lowered -> every removable node gone
    taints: dict[str, float] = field(default_factory=dict)  # node -> taint value (Unix seconds)
    gone: dict[str, float] = field(default_factory=dict)  # node -> when our watch saw it deleted
    events: dict[str, dict[str, kubernetes.client.CoreV1Event]] = field(default_factory=dict)
    metrics: str = ""  # /metrics just before SIGTERM
    log: str = ""

    def scaled_down(self) -> dict[str, float]:
        """cluster_autoscaler_scaled_down_nodes_total by reason, from `metrics`."""
        found = re.findall(
            r'^cluster_autoscaler_scaled_down_nodes_total\{reason="(\w+)"\} ([0-9.]+)$', self.metrics, re.M
        )
        return {reason: float(count) for reason, count in found}

    def missing_events(self) -> dict[str, list[str]]:
        """node -> the messages it lacks (marked, removed), for every node removed."""
        return {
            node: [m for m in (MARKED, REMOVED) if m not in self.events.get(node, {})]
            for node in self.gone
            if not all(m in self.events.get(node, {}) for m in (MARKED, REMOVED))
        }

    def removal_logged(self) -> dict[str, float]:
        """node -> when kubetide logged its removal (the end of the loop or drive that did it)."""
        year = time.gmtime().tm_year
        found = {}
        for stamp, node in re.findall(
            r"^I(\d{4} \S+) \d+ kubetide\.run\] Scale-down: node (\S+) removed", self.log, re.M
        ):
            found[node] = calendar.timegm(time.strptime(f"{year}{stamp[:-7]}", "%Y%m%d %H:%M:%S")) + float(
                stamp[-7:]
            )
        return found

    def late(self, slack: float) -> dict[str, str]:
        """node -> why its Events are not within one loop of what they report (see the module)."""
        logged = self.removal_logged()
        found = {}
        for node, (marked, removed) in self.lateness().items():
            removed_at = self.events[node][REMOVED].first_timestamp.timestamp()
            loop_end = logged.get(node, removed_at)
            if abs(marked) > slack:
                found[node] = f"marked {marked:+.1f}s from its taint"
            elif not removed_at - 1 <= self.gone[node] <= loop_end + slack:
                found[node] = (
                    f"deleted {-removed:+.1f}s after its Event, its loop ended {loop_end - removed_at:.1f}s after"
                )
        return found

    def lateness(self) -> dict[str, tuple[float, float]]:
        """node -> (marked Event time - taint time, removed Event time - deletion seen), seconds."""
        result = {}
        for node, seen in self.gone.items():
            events = self.events.get(node, {})
            if MARKED in events and REMOVED in events and node in self.taints:
                marked = events[MARKED].first_timestamp.timestamp() - self.taints[node]
                removed = events[REMOVED].first_timestamp.timestamp() - seen
                result[node] = (marked, removed)
        return result


class NodeWatch:
    """Taint values and deletion times of the group's Nodes, as a watch sees them."""

    def __init__(self, kube: KubeTestContext, group: str):
        self.kube, self.group = kube, group
        self.taints: dict[str, float] = {}
        self.gone: dict[str, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> NodeWatch:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)

    def _run(self) -> None:
        selector = f"kubetide.io/node-group={self.group}"
        version = self.kube.core.list_node(label_selector=selector).metadata.resource_version
        while not self._stop.is_set():
            # Resumed from the last resourceVersion seen, so no deletion falls between two streams.
            watch = kubernetes.watch.Watch()
            try:
                for change in watch.stream(
                    self.kube.core.list_node,
                    label_selector=selector,
                    resource_version=version,
                    timeout_seconds=2,
                ):
                    seen = time.time()
                    node = change["object"]
                    version = node.metadata.resource_version
                    name = node.metadata.name
                    for taint in node.spec.taints or []:
                        if taint.key == TO_BE_DELETED and name not in self.taints and taint.value:
                            self.taints[name] = float(taint.value)
                    if change["type"] == "DELETED" and name not in self.gone:
                        self.gone[name] = seen
                    if self._stop.is_set():
                        break
            except Exception:  # 410 Gone and the like: list again
                time.sleep(0.2)
                version = self.kube.core.list_node(label_selector=selector).metadata.resource_version
            finally:
                watch.stop()


def node_events(kube: KubeTestContext) -> dict[str, dict[str, kubernetes.client.CoreV1Event]]:
    """node -> message -> its ScaleDown Event (Nodes' events are in `default`)."""
    found: dict[str, dict[str, kubernetes.client.CoreV1Event]] = {}
    for event in kube.core.list_namespaced_event("default", field_selector="reason=ScaleDown").items:
        if event.involved_object.kind == "Node":
            found.setdefault(event.involved_object.name, {})[event.message] = event
    return found


def burst_then_scale_down(kube: KubeTestContext, directory: Path, pods: int, *, keep: int = 0) -> BurstRun:
    """`pods` pods of 250m (64 fit a 16-cpu node's cpu, 110 its pod count) appear at once; once
    all run, the Deployment goes down to `keep` and the emptied nodes are removed."""
    groups = directory / "burst-groups.yaml"
    groups.write_text(BURST_GROUPS_YAML)
    run = BurstRun(pods)
    watch = NodeWatch(kube, "burst").start()
    kubetide = Kubetide(
        kube,
        directory,
        f"--kubeconfig={kube.control_plane.kubeconfig_path}",
        "--cloud-provider=kwok",
        f"--node-groups={groups}",
        "--address=127.0.0.1:0",
        "--leader-elect=false",
        f"--status-config-map-name=burst-{kube.namespace}",
        f"--scan-interval={SCAN_INTERVAL:g}s",
        "--scale-down-unneeded-time=3s",
        "--scale-down-delay-after-add=5s",
        "--node-delete-delay-after-taint=0s",
        "--unremovable-node-recheck-timeout=2s",
        # A loop that evicts at the client's default 5 QPS takes seconds, and an action's Event
        # carries the time its loop decided it: 50 QPS keeps a loop (and so the check) short.
        # Events have a client of their own at the same rate, and it is they that must keep up.
        "--kube-client-qps=50",
        "--kube-client-burst=100",
        "--v=0",
        name="burst",
    ).start()
    try:
        started = time.monotonic()
        create_deployment(kube, "burst", pods, "250m", node_selector={"size": "burst"})
        wait_until(
            lambda: len(running(kube, "burst")) == pods,
            timeout=60 + pods / 5,
            interval=1,
            what="burst running",
        )
        run.scale_up_seconds = time.monotonic() - started
        run.nodes_added = len(group_nodes(kube, "burst"))
        lowered = time.monotonic()
        scale(kube, "burst", keep)
        needed = -(-keep // 64)  # nodes `keep` pods need at least
        wait_until(
            lambda: len(group_nodes(kube, "burst")) <= max(needed, 0) + (1 if keep else 0),
            timeout=180,
            interval=1,
            what="the burst's nodes removed",
        )
        run.scale_down_seconds = time.monotonic() - lowered
        # The loop after the last deletion has had time to hand its events to the writer.
        time.sleep(2 * SCAN_INTERVAL)
        port = re.search(r"on port (\d+)", kubetide.log())
        assert port, kubetide.log()
        with urllib.request.urlopen(f"http://127.0.0.1:{port.group(1)}/metrics", timeout=10) as response:
            run.metrics = response.read().decode()
        # SIGTERM: a clean exit (terminate's timeout is only a guard against a hang).
        assert kubetide.terminate() == 0
    finally:
        watch.stop()
        kubetide.kill()
    run.taints, run.gone = dict(watch.taints), dict(watch.gone)
    run.events = node_events(kube)
    run.log = kubetide.log()
    return run
