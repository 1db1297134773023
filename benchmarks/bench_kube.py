"""`kubetide run` on a real control plane (issue 11): `python -m benchmarks kube`, or
`python -m benchmarks.bench_kube --keep-logs` to keep kubetide's log and the audit log.

The whole command users run, as a subprocess, against the tests' control plane (kube-apiserver
v1.36.2, etcd, controller-manager, scheduler, KWOK; tests/kube/controlplane.py) holding 500 fake
KWOK nodes and 10 000 running pods, with the default scan interval (10 s) and client rate limits.
Measured, against the issue's targets:

1. scale-up latency: 100 new pods that fit only the (empty) `burst` group are created; the time
   from the first creation (and from the first PodScheduled=False/Unschedulable, and from the last
   creation) to the first Node of that group, seen by a watch of ours (target <= 12 s);
2. loop duration at steady state: every loop's duration from kubetide's --v=4 log, median and max
   over 12 steady loops, and the `function_duration_seconds{function="main"}` histogram's mean over
   the same window from its /metrics (target <= 1 s);
3. API requests per steady loop: the API server's `apiserver_request_total` delta over the window,
   by verb and resource. That metric has no client label, so a window with no kubetide running
   comes first (the background: KWOK heartbeats, controllers), and an audit log
   of kubetide's own user (and nobody else's) attributes every request exactly (target: no LIST,
   writes only when something changed);
4. kubetide's RSS at the end of the window, VmRSS and VmHWM (peak) from /proc (target <= 400 MB).

Building the cluster is not measured. It bypasses the controllers (the controller-manager's
client is limited to ~20 QPS: 10 000 pods through ReplicaSets would take minutes): Nodes and
pods are created directly, pods already bound (spec.nodeName) and owned by a ReplicaSet whose
replicas equal them. The ReplicaSet's template names a ServiceAccount that does not exist, so the
ReplicaSet controller cannot race us by creating pods of its own before ours are in; once they
are, it has nothing to do. The run waits until KWOK has made every pod Running before measuring.
Everything started (control plane, kubetide) is stopped on the way out, failures included.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import os
import random
import re
import shutil
import signal
import ssl
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families
from rich.console import Console
from rich.table import Table

from kubetide.kube.client import ApiError, KubeClient, connect

# The tests' helpers have no package: imported by module name, as tests/kube/conftest.py does.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "kube"))
from controlplane import ControlPlane, free_loopback_port

NODES = 500
PODS = 10_000
REPLICASETS = 20  # of PODS / REPLICASETS pods each
# 450 nodes hold 21 pods (79% of their CPU) and 50 hold 11 (41%, under CA's scale-down threshold
# of 0.5): every steady loop has 50 unneeded candidates to simulate draining, as a real cluster
# has, and removes none (scale-down-unneeded-time is 10 minutes, longer than the run).
LIGHT_NODES, LIGHT_PODS, FULL_PODS = 50, 11, 21
BURST_PODS = 100
SCAN_INTERVAL = 10.0
# The first loops fill the scale-down planner's state and meet KWOK's last status updates.
WARMUP_LOOPS = 3
STEADY_LOOPS = 12
BASELINE_LOOPS = 6
NAMESPACE = "bench"
GROUP, BURST_GROUP = "general", "burst"
GROUP_LABEL = "kubetide.io/node-group"
KUBETIDE_USER = "kubetide"
# Setup threads: enough to keep the API server busy on two cores without starving it.
WRITERS = 6
# 600m of 16 CPUs, 20 per node: 75% used, above CA's scale-down threshold (0.5), so a steady
# loop finds nothing to remove and any write it makes is one it should not.
POD_CPU, POD_MEMORY = "600m", "1Gi"
BURST_POD_CPU = "2"
NODE_RESOURCES = {"cpu": "16", "memory": "64Gi", "pods": "110"}

TARGET_SCALE_UP_SECONDS = 12.0
TARGET_LOOP_SECONDS = 1.0
TARGET_RSS_MB = 400.0

GROUPS_YAML = f"""\
nodeGroups:
- name: {GROUP}
  minSize: 0
  maxSize: 600
  price: 1.0
  template:
    metadata:
      labels: {{kubernetes.io/os: linux, {GROUP_LABEL}: {GROUP}}}
    status:
      allocatable: {{cpu: "16", memory: 64Gi, pods: "110"}}
- name: {BURST_GROUP}
  minSize: 0
  maxSize: 50
  price: 2.0
  template:
    metadata:
      labels: {{kubernetes.io/os: linux, {GROUP_LABEL}: {BURST_GROUP}}}
    status:
      allocatable: {{cpu: "16", memory: 64Gi, pods: "110"}}
"""

# kubetide's klog header (kube/logs.py): "I1127 03:52:38.283175 4242 kubetide.run] ...", UTC.
LOOP_LINE = re.compile(r"^[DIW](\d{4} \S+) \d+ kubetide\.run\] loop (\d+\.\d+)s: ")
SCALE_UP_LINE = re.compile(r"^I(\d{4} \S+) \d+ kubetide\.run\] Scale-up: ")


class AuditedControlPlane(ControlPlane):
    """The tests' control plane, plus an audit log of kubetide's user's requests and nobody else's:
    apiserver_request_total cannot tell clients apart, the audit log can."""

    def __init__(self) -> None:
        super().__init__()
        self.audit_log = self.directory / "kubetide-audit.log"
        self.kubetide_kubeconfig = self._client_kubeconfig("kubetide", KUBETIDE_USER, "system:masters")

    def _apiserver_arguments(self, token_file: Path) -> list[str]:
        policy = self.directory / "audit-policy.yaml"
        rules = [{"level": "Metadata", "users": [KUBETIDE_USER]}, {"level": "None"}]
        # ResponseStarted stays: it is when a watch is logged; a watch's completion comes minutes later.
        policy.write_text(
            json.dumps(
                {
                    "apiVersion": "audit.k8s.io/v1",
                    "kind": "Policy",
                    "omitStages": ["RequestReceived"],
                    "rules": rules,
                }
            )
        )
        return [
            *super()._apiserver_arguments(token_file),
            f"--audit-policy-file={policy}",
            f"--audit-log-path={self.audit_log}",
        ]


# -- the cluster -----------------------------------------------------------------------------------
def node_manifest(name: str) -> dict:
    return {
        "metadata": {
            "name": name,
            "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", GROUP_LABEL: GROUP},
            "annotations": {"kwok.x-k8s.io/node": "fake"},
        },
        "spec": {"providerID": f"kwok://{name}"},
        "status": {"allocatable": NODE_RESOURCES, "capacity": NODE_RESOURCES},
    }


def pod_spec(cpu: str) -> dict:
    return {
        "containers": [
            {
                "name": "pause",
                "image": "registry.k8s.io/pause:3.10",
                "resources": {"requests": {"cpu": cpu, "memory": POD_MEMORY}},
            }
        ],
        "terminationGracePeriodSeconds": 0,
    }


def create_replicaset(client: KubeClient, name: str, replicas: int, spec: dict) -> str:
    """A ReplicaSet that cannot make pods of its own (see the module docstring); its uid."""
    template_spec = {**spec, "serviceAccountName": "no-such-account"}
    body = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": template_spec},
        },
    }
    created = client.request("POST", f"/apis/apps/v1/namespaces/{NAMESPACE}/replicasets", body=body)
    return created["metadata"]["uid"]


def pod_manifest(rs: str, uid: str, index: int, spec: dict) -> dict:
    return {
        "metadata": {
            "name": f"{rs}-{index:05d}",
            "labels": {"app": rs},
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "ReplicaSet",
                    "name": rs,
                    "uid": uid,
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": spec,
    }


def post_all(client: KubeClient, path: str, bodies: list[dict]) -> None:
    with ThreadPoolExecutor(WRITERS) as pool:
        for _ in pool.map(lambda body: client.request("POST", path, body=body), bodies):
            pass


def count(client: KubeClient, path: str) -> int:
    """How many objects `path` lists, from one item and the server's remainingItemCount (which
    the API server gives only for lists without selectors)."""
    page = client.request("GET", path, query={"limit": "1"})
    return len(page.get("items") or ()) + int((page.get("metadata") or {}).get("remainingItemCount") or 0)


def none_match(client: KubeClient, path: str, field_selector: str) -> bool:
    return not client.request("GET", path, query={"fieldSelector": field_selector, "limit": "1"})["items"]


def wait_for(what: str, condition, timeout: float, interval: float = 1.0):
    deadline = time.monotonic() + timeout
    while True:
        result = condition()
        if result:
            return result
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(interval)


def build_cluster(client: KubeClient, console: Console) -> dict[str, float]:
    timings = {}
    started = time.monotonic()
    client.request("POST", "/api/v1/namespaces", body={"metadata": {"name": NAMESPACE}})

    def account_exists() -> bool:
        try:
            client.request("GET", f"/api/v1/namespaces/{NAMESPACE}/serviceaccounts/default")
        except ApiError as exc:
            if exc.status == 404:
                return False
            raise
        return True

    names = [f"{GROUP}-{i:03d}" for i in range(NODES)]
    post_all(client, "/api/v1/nodes", [node_manifest(n) for n in names])
    wait_for("the namespace's default ServiceAccount", account_exists, 60, 0.2)

    def ready_nodes() -> bool:
        ready = 0
        for page in client.list_pages("/api/v1/nodes"):
            for node in page["items"]:
                conditions = {c["type"]: c["status"] for c in node["status"].get("conditions") or ()}
                ready += conditions.get("Ready") == "True"
        return ready >= NODES

    # Pods bound to a node KWOK has not made Ready yet would be evicted by the taint manager.
    wait_for(f"{NODES} Ready nodes", ready_nodes, 180, 2.0)
    timings["nodes"] = time.monotonic() - started
    console.print(f"{NODES} nodes Ready after {timings['nodes']:.0f}s", highlight=False)

    started = time.monotonic()
    spec = pod_spec(POD_CPU)
    per_set = PODS // REPLICASETS
    slots = [n for i, n in enumerate(names) for _ in range(LIGHT_PODS if i < LIGHT_NODES else FULL_PODS)]
    assert len(slots) == PODS
    # Each node holds pods of several ReplicaSets, as the scheduler's spreading would leave them.
    random.Random(0).shuffle(slots)
    bodies = []
    for r in range(REPLICASETS):
        rs = f"app-{r:02d}"
        uid = create_replicaset(client, rs, per_set, spec)
        for i in range(per_set):
            pod = pod_manifest(rs, uid, i, {**spec, "nodeName": slots[r * per_set + i]})
            bodies.append(pod)
    post_all(client, f"/api/v1/namespaces/{NAMESPACE}/pods", bodies)
    timings["pods created"] = time.monotonic() - started
    console.print(f"{PODS} pods created in {timings['pods created']:.0f}s", highlight=False)
    path = f"/api/v1/namespaces/{NAMESPACE}/pods"
    wait_for(
        "KWOK to make every pod Running",
        lambda: none_match(client, path, "status.phase!=Running"),
        400,
        3.0,
    )
    timings["pods running"] = time.monotonic() - started
    total = count(client, path)
    if total != PODS:
        raise RuntimeError(f"expected {PODS} pods, found {total}: a ReplicaSet made pods of its own")
    console.print(f"{PODS} pods Running after {timings['pods running']:.0f}s", highlight=False)
    return timings


# -- what the API server says ------------------------------------------------------------------------
def apiserver_requests(plane: ControlPlane) -> Counter:
    """apiserver_request_total, summed by (verb, resource[/subresource])."""
    request = urllib.request.Request(
        f"{plane.server}/metrics", headers={"Authorization": f"Bearer {plane.admin_token}"}
    )
    context = ssl.create_default_context(cafile=str(plane.ca_path))
    with urllib.request.urlopen(request, timeout=30, context=context) as response:
        text = response.read().decode()
    totals: Counter = Counter()
    for family in text_string_to_metric_families(text):
        if family.name != "apiserver_request":
            continue
        for sample in family.samples:
            if sample.name != "apiserver_request_total":
                continue
            labels = sample.labels
            resource = labels.get("resource") or "(non-resource)"
            if labels.get("subresource"):
                resource += "/" + labels["subresource"]
            totals[(labels.get("verb", "?"), resource)] += sample.value
    return totals


def audit_requests(path: Path, since: float, until: float) -> Counter:
    """kubetide's requests received in [since, until), by (VERB, resource[/subresource])."""
    counts: Counter = Counter()
    if not path.exists():
        return counts
    for line in path.read_text().splitlines():
        event = json.loads(line)
        verb = event.get("verb", "?")
        # A watch is logged at ResponseStarted and again when it ends: count it once.
        if event.get("stage") != ("ResponseStarted" if verb == "watch" else "ResponseComplete"):
            continue
        received = datetime.datetime.fromisoformat(event["requestReceivedTimestamp"]).timestamp()
        if not since <= received < until:
            continue
        ref = event.get("objectRef") or {}
        resource = ref.get("resource") or event.get("requestURI", "?").split("?")[0]
        if ref.get("subresource"):
            resource += "/" + ref["subresource"]
        counts[(verb.upper(), resource)] += 1
    return counts


def kubetide_metrics(port: int) -> dict[str, float]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        text = response.read().decode()
    values = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name.startswith("cluster_autoscaler_function_duration_seconds_"):
                if sample.labels.get("function") == "main" and sample.name[-4:] in ("_sum", "ount"):
                    values[sample.name.rsplit("_", 1)[1]] = sample.value
            elif sample.name == "process_resident_memory_bytes":
                values["rss"] = sample.value
    return values


def proc_status(pid: int) -> dict[str, float]:
    """VmRSS and VmHWM in MB."""
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            fields[key] = int(value.split()[0]) / 1024
    return fields


# -- kubetide ---------------------------------------------------------------------------------------
class KubetideProcess:
    def __init__(self, plane: AuditedControlPlane, groups: Path, log_path: Path, port: int):
        self.log_path = log_path
        self.port = port
        self._log = log_path.open("wb")
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "kubetide.cli.main",
                "run",
                f"--kubeconfig={plane.kubetide_kubeconfig}",
                "--cloud-provider=kwok",
                f"--node-groups={groups}",
                "--leader-elect=false",
                f"--address=127.0.0.1:{port}",
                "--v=4",
            ],
            stdout=self._log,
            stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def loops(self) -> list[tuple[float, float]]:
        """(time logged, duration) of every finished loop so far, wherever it did something or not."""
        found = []
        for line in self.log().splitlines():
            match = LOOP_LINE.match(line)
            if match is not None:
                found.append((log_time(match.group(1)), float(match.group(2))))
        return found

    def wait_loops(self, count: int, timeout: float) -> list[tuple[float, float]]:
        def enough():
            if self.process.poll() is not None:
                raise RuntimeError(f"kubetide exited with {self.process.returncode}:\n{self.log()[-3000:]}")
            loops = self.loops()
            return loops if len(loops) >= count else None

        return wait_for(f"{count} kubetide loops", enough, timeout, 0.2)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._log.close()


def log_time(text: str) -> float:
    # klog's "MMDD HH:MM:SS.micro", UTC, this year.
    year = datetime.datetime.now(datetime.UTC).year
    moment = datetime.datetime.strptime(f"{year}{text}", "%Y%m%d %H:%M:%S.%f")
    return moment.replace(tzinfo=datetime.UTC).timestamp()


class FirstSeen(threading.Thread):
    """Watches `path` from `resource_version` and records when the first object passing `test`
    arrives (our clock, at receipt)."""

    def __init__(self, client: KubeClient, path: str, query: dict[str, str], test):
        super().__init__(daemon=True)
        self.client, self.path, self.query, self.test = client, path, query, test
        self.at: float | None = None
        self.name_seen = ""
        self._response = None

    def run(self) -> None:
        with contextlib.suppress(Exception):
            for event in self.client.watch(self.path, query=self.query, on_open=self._opened):
                obj = event.get("object") or {}
                if event.get("type") in ("ADDED", "MODIFIED") and self.test(obj):
                    self.at = time.time()
                    self.name_seen = obj["metadata"]["name"]
                    return

    def _opened(self, response) -> None:
        self._response = response

    def close(self) -> None:
        if self._response is not None:
            with contextlib.suppress(Exception):
                self._response.shutdown()


def unschedulable(pod: dict) -> bool:
    return any(
        c.get("type") == "PodScheduled" and c.get("status") == "False" and c.get("reason") == "Unschedulable"
        for c in (pod.get("status") or {}).get("conditions") or ()
    )


def measure_scale_up(client: KubeClient, kubetide: KubetideProcess) -> dict[str, float | str]:
    resource_version = client.request("GET", "/api/v1/nodes", query={"limit": "1"})["metadata"][
        "resourceVersion"
    ]
    nodes = FirstSeen(
        client,
        "/api/v1/nodes",
        {"resourceVersion": resource_version, "labelSelector": f"{GROUP_LABEL}={BURST_GROUP}"},
        lambda obj: True,
    )
    pods_path = f"/api/v1/namespaces/{NAMESPACE}/pods"
    pods = FirstSeen(
        client,
        pods_path,
        {"resourceVersion": resource_version, "labelSelector": "app=burst"},
        unschedulable,
    )
    nodes.start()
    pods.start()
    spec = {**pod_spec(BURST_POD_CPU), "nodeSelector": {GROUP_LABEL: BURST_GROUP}}
    uid = create_replicaset(client, "burst", BURST_PODS, spec)
    bodies = [pod_manifest("burst", uid, i, spec) for i in range(BURST_PODS)]
    # Just after a loop, so that the early wake-up, not the scan interval, is what is measured:
    # the worst case CA's own loop has.
    loops_before = len(kubetide.loops())
    kubetide.wait_loops(loops_before + 1, 3 * SCAN_INTERVAL)
    first_created = time.time()
    post_all(client, pods_path, bodies)
    last_created = time.time()
    try:
        wait_for("the first node of the burst group", lambda: nodes.at, 60, 0.05)
    finally:
        nodes.close()
        pods.close()
    # Every pod of the namespace is Running by now except the burst's.
    wait_for(
        f"all {BURST_PODS} burst pods Running",
        lambda: none_match(client, pods_path, "status.phase!=Running"),
        180,
        0.5,
    )
    all_running = time.time()
    # The loops answering the burst may still be writing their events: let the current one end.
    kubetide.wait_loops(len(kubetide.loops()) + 1, 6 * SCAN_INTERVAL)
    # The loop that scaled the burst group up: its Scale-up line, then (--v=4) its loop line.
    scale_up_logged = []
    seen_scale_up = False
    for line in kubetide.log().splitlines():
        if SCALE_UP_LINE.match(line) and f"group {BURST_GROUP} " in line:
            seen_scale_up = True
        elif seen_scale_up and (m := LOOP_LINE.match(line)):
            scale_up_logged.append((log_time(m.group(1)), float(m.group(2))))
            seen_scale_up = False
    result: dict[str, float | str] = {
        "first created": first_created,
        "last created": last_created,
        "first unschedulable": pods.at or float("nan"),
        "first node": nodes.at,
        "all running": all_running,
    }
    if scale_up_logged:
        logged, duration = scale_up_logged[0]
        result["loop start"] = logged - duration
        result["loop end"] = logged
    lines = [x.split("] ", 1)[-1] for x in kubetide.log().splitlines() if SCALE_UP_LINE.match(x)]
    result["log lines"] = "; ".join(lines)
    return result


# -- the run ----------------------------------------------------------------------------------------
def per_loop(delta: Counter, loops: float) -> dict[tuple[str, str], float]:
    return {key: value / loops for key, value in sorted(delta.items()) if value > 0}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks kube", description=__doc__.splitlines()[0])
    parser.add_argument("--keep-logs", action="store_true", help="keep kubetide's log and the audit log")
    # Under `python -m benchmarks kube` the benchmark names are in sys.argv too: options only.
    args = parser.parse_args([a for a in argv if a.startswith("-")])
    console = Console(width=160)
    console.print(
        f"{os.cpu_count()} cores, load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}, "
        f"{datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC",
        highlight=False,
    )
    work = Path(tempfile.mkdtemp(prefix="kubetide-bench-kube-"))
    plane = AuditedControlPlane()
    kubetide = None
    started = time.monotonic()
    try:
        plane.start()
        console.print(f"control plane up in {time.monotonic() - started:.0f}s", highlight=False)
        client = connect(str(plane.kubeconfig_path), qps=2000, burst=2000)
        build_cluster(client, console)
        groups = work / "groups.yaml"
        groups.write_text(GROUPS_YAML)

        # The background: the cluster as it is with no kubetide, per scan interval.
        before = apiserver_requests(plane)
        time.sleep(BASELINE_LOOPS * SCAN_INTERVAL)
        background = apiserver_requests(plane) - before
        load_before = os.getloadavg()

        kubetide = KubetideProcess(plane, groups, work / "kubetide.log", free_loopback_port())
        launched_at = time.time()
        first_loops = kubetide.wait_loops(WARMUP_LOOPS, 180)
        filled = next(
            (log_time(line[1:21]) for line in kubetide.log().splitlines() if "caches filled" in line),
            launched_at,
        )
        console.print(
            f"kubetide: caches filled {filled - launched_at:.1f}s after launch (permission checks included); "
            f"first loops (not in the window) {', '.join(f'{d:.2f}s' for _, d in first_loops)}",
            highlight=False,
        )
        window_start_loops = len(kubetide.loops())
        since = time.time()
        api_before = apiserver_requests(plane)
        metrics_before = kubetide_metrics(kubetide.port)
        loops = kubetide.wait_loops(window_start_loops + STEADY_LOOPS, (STEADY_LOOPS + 3) * SCAN_INTERVAL)
        loops = loops[window_start_loops : window_start_loops + STEADY_LOOPS]
        api_delta = apiserver_requests(plane) - api_before
        until = time.time()
        metrics_after = kubetide_metrics(kubetide.port)
        memory = proc_status(kubetide.process.pid)
        load_steady = os.getloadavg()
        elapsed_loops = (until - since) / SCAN_INTERVAL
        own = audit_requests(plane.audit_log, since, until)

        scale_up = measure_scale_up(client, kubetide)
        during = audit_requests(plane.audit_log, scale_up["first created"], scale_up["all running"] + 1)
        console.print(
            "kubetide's requests from the burst to all its pods Running (audit): "
            + ", ".join(f"{n} {verb} {resource}" for (verb, resource), n in sorted(during.items())),
            highlight=False,
        )
        report(
            console,
            background,
            api_delta,
            own,
            elapsed_loops,
            loops,
            metrics_before,
            metrics_after,
            memory,
            scale_up,
            (load_before, load_steady, os.getloadavg()),
        )
    finally:
        if kubetide is not None:
            kubetide.stop()
            if args.keep_logs:
                shutil.copy(plane.audit_log, work / "kubetide-audit.log")
        plane.stop()
        if args.keep_logs:
            console.print(f"logs kept in {work}", highlight=False)
        else:
            shutil.rmtree(work, ignore_errors=True)
    console.print(f"total {time.monotonic() - started:.0f}s", highlight=False)
    return 0


def report(
    console,
    background,
    api_delta,
    own,
    elapsed_loops,
    loops,
    metrics_before,
    metrics_after,
    memory,
    scale_up,
    loads,
) -> None:
    durations = [d for _, d in loops]
    count = metrics_after["count"] - metrics_before["count"]
    mean = (metrics_after["sum"] - metrics_before["sum"]) / count if count else float("nan")
    first = scale_up["first created"]
    node_after = scale_up["first node"] - first

    table = Table(title=f"kubetide run: {NODES} nodes, {PODS} pods, scan interval {SCAN_INTERVAL:g}s")
    for column in ("figure", "value", "target", "verdict"):
        table.add_column(column)

    def verdict(ok: bool) -> str:
        return "met" if ok else "MISSED"

    table.add_row(
        f"first {BURST_GROUP} Node seen, after the first of {BURST_PODS} pods was created",
        f"{node_after:.2f} s",
        f"<= {TARGET_SCALE_UP_SECONDS:g} s",
        verdict(node_after <= TARGET_SCALE_UP_SECONDS),
    )
    table.add_row(
        "  same, after the last pod was created (negative: before) / the first was Unschedulable",
        f"{scale_up['first node'] - scale_up['last created']:.2f} s / "
        f"{scale_up['first node'] - scale_up['first unschedulable']:.2f} s",
        "",
        "",
    )
    if "loop start" in scale_up:
        table.add_row(
            "  the first scale-up loop: started / ended, after the first pod was created",
            f"{scale_up['loop start'] - first:.2f} s / {scale_up['loop end'] - first:.2f} s",
            "",
            "",
        )
    table.add_row(
        f"  all {BURST_PODS} pods Running (new nodes Ready, pods bound by kube-scheduler)",
        f"{scale_up['all running'] - first:.1f} s",
        "",
        "",
    )
    table.add_row(
        f"steady loop duration, median (max) of {len(durations)} (--v=4 log)",
        f"{statistics.median(durations):.3f} s ({max(durations):.3f} s)",
        f"<= {TARGET_LOOP_SECONDS:g} s",
        verdict(max(durations) <= TARGET_LOOP_SECONDS),
    )
    table.add_row(
        "  function_duration_seconds{function=main}: mean over the window",
        f"{mean:.3f} s over {count:.0f} loops",
        "",
        "",
    )
    lists = sum(v for (verb, _), v in api_delta.items() if verb == "LIST")
    own_lists = sum(v for (verb, _), v in own.items() if verb == "LIST")
    table.add_row(
        "LISTs in the steady window: all clients (apiserver_request_total) / kubetide (audit)",
        f"{lists:.0f} / {own_lists}",
        "0",
        verdict(own_lists == 0),
    )
    own_total = sum(own.values())
    own_writes = sum(v for (verb, _), v in own.items() if verb not in ("GET", "LIST", "WATCH"))
    table.add_row(
        "kubetide's requests per loop: all / writes (audit)",
        f"{own_total / elapsed_loops:.2f} / {own_writes / elapsed_loops:.2f}",
        "writes only for changes",
        "see below",
    )
    rss = memory.get("VmRSS", float("nan"))
    table.add_row(
        "kubetide RSS at steady state (peak)",
        f"{rss:.0f} MB ({memory.get('VmHWM', float('nan')):.0f} MB); /metrics says "
        f"{metrics_after.get('rss', 0) / 2**20:.0f} MB",
        f"<= {TARGET_RSS_MB:g} MB",
        verdict(rss <= TARGET_RSS_MB),
    )
    console.print(table)

    requests = Table(
        title=f"API requests per loop over the steady window ({elapsed_loops:.1f} scan intervals)"
    )
    for column in (
        "verb",
        "resource",
        "all clients, kubetide running",
        "no kubetide (before)",
        "kubetide (audit)",
    ):
        requests.add_column(column)

    def folded(counts: Counter) -> Counter:
        # Watches re-opened by any component and discovery GETs are one row each, not fifty.
        result: Counter = Counter()
        for (verb, resource), value in counts.items():
            if verb == "WATCH":
                resource = "(every resource)"
            elif resource.startswith("(non-resource)"):
                resource = "(non-resource)"
            result[(verb, resource)] += value
        return result

    api_delta, background, own = folded(api_delta), folded(background), folded(own)
    keys = sorted(set(api_delta) | set(background) | set(own))
    for key in keys:
        values = (api_delta.get(key, 0), background.get(key, 0), own.get(key, 0))
        if not any(values):
            continue
        per = (values[0] / elapsed_loops, values[1] / BASELINE_LOOPS, values[2] / elapsed_loops)
        requests.add_row(key[0], key[1], *(f"{v:.2f}" for v in per))
    console.print(requests)
    console.print(f"scale-up loops: {scale_up['log lines']}", highlight=False)
    console.print(
        "load average (1 min) before kubetide / at the end of the window / at the end: "
        + " / ".join(f"{load[0]:.2f}" for load in loads),
        highlight=False,
    )


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
