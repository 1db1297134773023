"""`kubetide qos-agent` on a real control plane: crane's CRDs (tests/kube/data/crane-crds.yaml),
a KWOK node with pods, and a fake /proc and cgroup tree the test writes between samples. The
agent evicts through the real Eviction API (a PodDisruptionBudget holds), taints the node,
throttles and restores through the cgroup files, and records events; the process runs under the
RBAC of deploy/qos-agent and restores every throttled pod on SIGTERM."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import urllib.request
from pathlib import Path

import kubernetes
import pytest
import yaml
from controlplane import KubeTestContext, installed_crds, wait_until

from kubetide.agent.actuator import NodeActuator, node_events
from kubetide.agent.cgroups import detect_layout
from kubetide.agent.loop import NodeAgentLoop
from kubetide.agent.permissions import AGENT_PERMISSIONS
from kubetide.agent.throttle import CgroupThrottler
from kubetide.agent.usage import CgroupUsageSource
from kubetide.agent.watch import NodeWatch
from kubetide.autoscaler.events import Event, EventType
from kubetide.clock import ManualClock
from kubetide.kube.client import connect
from kubetide.qos.config import EVICT, THROTTLE_DOWN, THROTTLE_UP
from kubetide.qos.executor import DONE, PREVIEW, REFUSED, SCHEDULING_TAINT

ROOT = Path(__file__).resolve().parents[2]
CRDS = Path(__file__).parent / "data" / "crane-crds.yaml"
GROUP, VERSION = "ensurance.crane.io", "v1alpha1"
NODE_CPU_TICKS_PER_SAMPLE = 1000  # both cpus' ticks in one fake sample


@pytest.fixture(scope="module")
def crane_crds(control_plane):
    with installed_crds(control_plane, CRDS):
        yield


def test_the_test_crds_are_the_installed_ones():
    assert CRDS.read_text() == (ROOT / "deploy" / "qos-agent" / "crds.yaml").read_text()


def test_the_install_renders_grants_what_the_agent_checks_and_is_accepted(kube, crane_crds, tmp_path):
    if shutil.which("kubectl") is None:
        pytest.skip("kubectl (kustomize) is not installed")
    rendered = subprocess.run(
        ["kubectl", "kustomize", str(ROOT / "deploy" / "qos-agent")],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    objects = [d for d in yaml.safe_load_all(rendered) if d]
    by_kind = {d["kind"]: d for d in objects if d["kind"] not in ("ClusterRole", "ClusterRoleBinding")}
    roles = {d["metadata"]["name"]: d for d in objects if d["kind"] == "ClusterRole"}
    # The agent's permissions, and the mark its node confinement knows it by (node-confinement.yaml).
    assert sorted(roles) == ["kubetide-qos-agent", "kubetide-qos-agent-own-node"]
    assert sorted(d["roleRef"]["name"] for d in objects if d["kind"] == "ClusterRoleBinding") == sorted(roles)
    assert roles["kubetide-qos-agent-own-node"]["rules"] == [
        {"apiGroups": ["admission.kubetide.io"], "resources": ["nodes"], "verbs": ["own-node-only"]}
    ]
    assert sorted({*by_kind, "ClusterRole", "ClusterRoleBinding"}) == sorted(
        [
            "CustomResourceDefinition",
            "Namespace",
            "ServiceAccount",
            "ClusterRole",
            "ClusterRoleBinding",
            "DaemonSet",
            "NetworkPolicy",
            # Its Node writes confined to its own Node (tests/kube/test_install_live.py).
            "ValidatingAdmissionPolicy",
            "ValidatingAdmissionPolicyBinding",
        ]
    )
    # The ClusterRole grants every permission the agent checks at start, and no other.
    granted = {
        (group, resource, verb)
        for rule in roles["kubetide-qos-agent"]["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }
    assert granted == {(p.group, p.resource, v) for p in AGENT_PERMISSIONS for v in p.verbs}
    pod = by_kind["DaemonSet"]["spec"]["template"]["spec"]
    container = pod["containers"][0]
    mounts = {m["name"]: m.get("readOnly", False) for m in container["volumeMounts"]}
    assert mounts == {"proc": True, "cgroup": False, "state": False}
    assert not pod.get("hostPID") and not pod.get("hostNetwork")
    assert container["env"] == [
        {"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}
    ]
    # The API server accepts it (a server-side dry run, in the test's namespace).
    for obj in objects:
        if obj["metadata"].get("namespace"):
            obj["metadata"]["namespace"] = kube.namespace
        for subject in obj.get("subjects", ()):
            subject["namespace"] = kube.namespace
    path = tmp_path / "install.yaml"
    path.write_text(yaml.safe_dump_all([o for o in objects if o["kind"] != "Namespace"]))
    applied = subprocess.run(
        [
            "kubectl",
            f"--kubeconfig={kube.control_plane.kubeconfig_path}",
            "apply",
            "--dry-run=server",
            "-f",
            str(path),
        ],
        capture_output=True,
        text=True,
    )
    assert applied.returncode == 0, applied.stderr


class FakeHost:
    """/proc and a cgroup tree for one node with two cpus, written anew for every sample."""

    def __init__(self, root: Path, version: int, driver: str):
        self.proc, self.cgroup = root / "proc", root / "cgroup"
        self.version, self.driver = version, driver
        self.proc.mkdir(parents=True)
        self.cgroup.mkdir(parents=True)
        if version == 2:
            (self.cgroup / "cgroup.controllers").write_text("cpu memory\n")
        top = "kubepods.slice" if driver == "systemd" else "kubepods"
        for controller in ("",) if version == 2 else ("cpu", "cpuacct", "memory"):
            (self.cgroup / controller / top).mkdir(parents=True)
        self.busy = self.total = 0
        self.pod_ns: dict[str, int] = {}
        self.write_node(0)

    def _dirs(self, pod) -> list[Path]:
        uid, qos = pod.metadata.uid, pod.status.qos_class
        escaped = uid.replace("-", "_")
        if self.driver == "cgroupfs":
            relative = f"kubepods/pod{uid}" if qos == "Guaranteed" else f"kubepods/{qos.lower()}/pod{uid}"
        elif qos == "Guaranteed":
            relative = f"kubepods.slice/kubepods-pod{escaped}.slice"
        else:
            tier = qos.lower()
            relative = f"kubepods.slice/kubepods-{tier}.slice/kubepods-{tier}-pod{escaped}.slice"
        if self.version == 2:
            return [self.cgroup / relative]
        return [self.cgroup / c / relative for c in ("cpu", "cpuacct", "memory")]

    def add_pod(self, pod, quota: str) -> Path:
        """The kubelet's cgroup for the pod; returns its quota file."""
        for d in self._dirs(pod):
            d.mkdir(parents=True, exist_ok=True)
        cpu = self._dirs(pod)[0]
        if self.version == 2:
            (cpu / "cpu.max").write_text(quota + "\n")
            return cpu / "cpu.max"
        (cpu / "cpu.cfs_quota_us").write_text(quota + "\n")
        (cpu / "cpu.cfs_period_us").write_text("100000\n")
        return cpu / "cpu.cfs_quota_us"

    def write_node(self, millicores: int) -> None:
        """The next /proc/stat: `millicores` busy over one sample (2 cpus)."""
        self.total += NODE_CPU_TICKS_PER_SAMPLE
        self.busy += NODE_CPU_TICKS_PER_SAMPLE * millicores // 2000
        idle = self.total - self.busy
        publish(self.proc / "stat", f"cpu  {self.busy} 0 0 {idle} 0 0 0 0 0 0\ncpu0 0\ncpu1 0\n")
        publish(self.proc / "meminfo", "MemTotal: 8388608 kB\nMemAvailable: 7340032 kB\n")

    def write_pod(self, pod, millicores: int, seconds: float) -> None:
        """The pod used `millicores` over the last `seconds`."""
        uid = pod.metadata.uid
        self.pod_ns[uid] = self.pod_ns.get(uid, 0) + int(millicores * seconds * 1e6)
        dirs = self._dirs(pod)
        acct, memory = (dirs[0], dirs[0]) if self.version == 2 else (dirs[1], dirs[2])
        if self.version == 2:
            publish(acct / "cpu.stat", f"usage_usec {self.pod_ns[uid] // 1000}\n")
            publish(memory / "memory.current", "104857600\n")
            publish(memory / "memory.stat", "inactive_file 0\n")
        else:
            publish(acct / "cpuacct.usage", f"{self.pod_ns[uid]}\n")
            publish(memory / "memory.usage_in_bytes", "104857600\n")
            publish(memory / "memory.stat", "total_inactive_file 0\n")


def publish(path: Path, text: str) -> None:
    """Write a file the agent process reads as the kernel would show it: whole, never empty
    (write_text truncates first, and a loaded machine let the agent read the empty file)."""
    partial = path.with_name(path.name + ".partial")
    partial.write_text(text)
    os.replace(partial, path)


class Ticker:
    def __init__(self):
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def create_crane_objects(kube: KubeTestContext, objects: list[dict]) -> None:
    custom = kubernetes.client.CustomObjectsApi(kube.api_client)
    plurals = {"NodeQOS": "nodeqoss", "AvoidanceAction": "avoidanceactions", "PodQOS": "podqoss"}
    for obj in objects:
        plural = plurals[obj["kind"]]
        body = {"apiVersion": f"{GROUP}/{VERSION}", **obj}
        custom.create_cluster_custom_object(GROUP, VERSION, plural, body)
        name = obj["metadata"]["name"]
        kube.add_cleanup(
            lambda plural=plural, name=name: custom.delete_cluster_custom_object(GROUP, VERSION, plural, name)
        )


def owning_replicaset(kube: KubeTestContext, name: str, labels: dict) -> dict:
    """A ReplicaSet of one that owns the pod the test creates: the agent evicts no pod without a
    controller (unless a PodQOS selects it). Its template names a ServiceAccount that does not
    exist, so it can never create a pod of its own, before or after an eviction."""
    apps = kubernetes.client.AppsV1Api(kube.api_client)
    replicaset = apps.create_namespaced_replica_set(
        kube.namespace,
        {
            "metadata": {"name": f"{name}-rs"},
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": labels},
                "template": {
                    "metadata": {"labels": labels},
                    "spec": {
                        "serviceAccountName": "no-such-account",
                        "containers": [{"name": "c", "image": "busybox"}],
                    },
                },
            },
        },
    )
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "name": replicaset.metadata.name,
        "uid": replicaset.metadata.uid,
        "controller": True,
    }


def bound_pod(
    kube: KubeTestContext,
    name: str,
    node: str,
    resources: dict | None = None,
    labels=None,
    *,
    owned: bool = True,
    annotations: dict | None = None,
):
    labels = labels or {"app": name}
    metadata: dict = {"name": name, "labels": labels, "annotations": annotations or {}}
    if owned:
        metadata["ownerReferences"] = [owning_replicaset(kube, name, labels)]
    return kube.core.create_namespaced_pod(
        kube.namespace,
        {
            "metadata": metadata,
            "spec": {
                "nodeName": node,
                "terminationGracePeriodSeconds": 0,
                "containers": [{"name": "c", "image": "busybox", "resources": resources or {}}],
            },
        },
    )


def running_pod(kube: KubeTestContext, name: str):
    def check():
        pod = kube.core.read_namespaced_pod(name, kube.namespace)
        return pod if pod.status.phase == "Running" else None

    return wait_until(check, timeout=30, what=f"pod {name} Running")


def events_for(kube: KubeTestContext, namespace: str, name: str) -> set[str]:
    items = kube.core.list_namespaced_event(namespace, field_selector=f"involvedObject.name={name}").items
    return {e.reason for e in items}


def node_taints(kube: KubeTestContext, name: str) -> set[tuple[str, str]]:
    """The node's taints but the node controller's (not-ready lingers a moment after KWOK's
    first heartbeat): what the agent put there."""
    taints = kube.core.read_node(name).spec.taints or []
    return {(t.key, t.effect) for t in taints if not t.key.startswith("node.kubernetes.io/")}


def make_loop(kube, host: FakeHost, node: str, state_file: Path, clock: ManualClock, ticker: Ticker):
    client = connect(str(kube.control_plane.kubeconfig_path), qps=100, burst=200)
    layout = detect_layout(host.cgroup)
    assert (layout.version, layout.driver) == (host.version, host.driver)
    throttler = CgroupThrottler(lambda pod: layout.pod(pod.uid, pod.qos_class), state_file)
    watch = NodeWatch(client, node)
    assert watch.start(30) == []
    loop = NodeAgentLoop(
        watch,
        CgroupUsageSource(host.proc, layout, ticker),
        throttler,
        NodeActuator(client, clock, throttler),
        node_events(client, clock, node),
        clock,
    )
    return loop, watch, client


def settle(watch: NodeWatch, condition, what: str):
    """Let the informers deliver what the test just changed."""

    def check():
        watch.refresh()
        return condition()

    return wait_until(check, timeout=30, what=what)


def test_evicts_precisely_through_the_eviction_api_and_disables_scheduling(kube, crane_crds, tmp_path):
    node = "qos-evict"
    kube.create_fake_node(node, cpu="2", memory="8Gi")
    kube.wait_node_ready(node)
    create_crane_objects(
        kube,
        [
            {
                "kind": "AvoidanceAction",
                "metadata": {"name": "evict"},
                "spec": {"coolDownSeconds": 0, "eviction": {"terminationGracePeriodSeconds": 0}},
            },
            {
                "kind": "AvoidanceAction",
                "metadata": {"name": "no-scheduling"},
                "spec": {"coolDownSeconds": 0},
            },
            {
                "kind": "NodeQOS",
                "metadata": {"name": "busy"},
                "spec": {
                    "rules": [
                        {
                            "name": "cpu-evict",
                            "actionName": "evict",
                            "metricRule": {"name": "cpu_total_usage", "value": 1500},
                        },
                        {
                            "name": "cpu-taint",
                            "actionName": "no-scheduling",
                            "metricRule": {"name": "cpu_total_usage", "value": 1200},
                        },
                    ]
                },
            },
        ],
    )
    # b is the busiest BestEffort pod, so it comes first, and its PDB refuses; a closes the gap.
    for name in ("a", "b"):
        bound_pod(kube, name, node)
    bound_pod(kube, "c", node, {"requests": {"cpu": "100m"}})
    policy = kubernetes.client.PolicyV1Api(kube.api_client)
    policy.create_namespaced_pod_disruption_budget(
        kube.namespace,
        {"metadata": {"name": "b"}, "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "b"}}}},
    )
    wait_until(
        lambda: policy.read_namespaced_pod_disruption_budget("b", kube.namespace).status.expected_pods == 1,
        timeout=30,
        what="the PDB's status",
    )
    pods = {name: running_pod(kube, name) for name in ("a", "b", "c")}
    host = FakeHost(tmp_path / "host", version=1, driver="cgroupfs")
    for pod in pods.values():
        host.add_pod(pod, "-1")
    clock, ticker = ManualClock(1_700_000_000), Ticker()
    loop, watch, client = make_loop(kube, host, node, tmp_path / "state.json", clock, ticker)
    try:
        settle(
            watch, lambda: len(watch.of("Pod")) == 3 and len(watch.of("NodeQOS")) == 1, "the agent's caches"
        )
        usage = {"a": 600, "b": 900, "c": 300}
        for name, pod in pods.items():
            host.write_pod(pod, usage[name], 10)
        first = loop.sample()
        assert first.result is None and "no cpu rate" in first.skipped  # acting would mean acting on all
        assert node_taints(kube, node) == set()

        def next_sample():
            clock.advance(10)
            ticker.now += 10
            host.write_node(1850)
            for name, pod in pods.items():
                host.write_pod(pod, usage[name], 10)
            return loop.sample()

        # The first sample with a rate only looks: the same decisions, none carried out.
        looked = next_sample()
        assert looked.result is not None and "analyze only" in looked.skipped
        # (b's PDB is only met when acting: in preview b alone would close the gap.)
        assert [(d.pod.split("/")[1], d.outcome) for d in looked.result.decisions] == [("b", PREVIEW)]
        assert node_taints(kube, node) == set()
        sample = next_sample()
        assert sample.result is not None
        decisions = [(d.kind, d.pod.split("/")[1], d.outcome) for d in sample.result.decisions]
        # gap (1850 - 1500) * 1.1 = 385m: b (900m) is refused by its PDB, a (600m) closes it; c stays.
        assert decisions == [(EVICT, "b", REFUSED), (EVICT, "a", DONE)]
        wait_until(
            lambda: "a" not in {p.metadata.name for p in kube.core.list_namespaced_pod(kube.namespace).items},
            timeout=30,
            what="pod a evicted",
        )
        assert kube.core.read_namespaced_pod("b", kube.namespace).metadata.deletion_timestamp is None
        assert (SCHEDULING_TAINT.key, SCHEDULING_TAINT.effect) in node_taints(kube, node)
        assert {"AvoidanceEvict"} <= events_for(kube, kube.namespace, "a")
        assert {"AvoidanceEvictRefused"} <= events_for(kube, kube.namespace, "b")
        assert {"AvoidanceTriggered", "DisableScheduling"} <= events_for(kube, "default", node)
        metrics = loop.metrics.exposition()[0].decode()
        assert 'kubetide_qos_agent_actions_total{action="evict"} 1.0' in metrics
        assert 'kubetide_qos_agent_actions_total{action="evict_refused"} 1.0' in metrics
        assert 'kubetide_qos_agent_watermark_crossed{rule="busy/cpu-evict"} 1.0' in metrics

        # Quiet again: the rules are lifted and the taint goes (coolDownSeconds 0).
        settle(watch, lambda: len(watch.of("Pod")) == 2, "pod a gone from the cache")
        clock.advance(10)
        ticker.now += 10
        host.write_node(500)
        for name in ("b", "c"):
            host.write_pod(pods[name], 200, 10)
        quiet = loop.sample()
        assert quiet.result is not None and quiet.result.decisions == []
        assert node_taints(kube, node) == set()
        assert {"RestoreTriggered", "RestoreScheduling"} <= events_for(kube, "default", node)
    finally:
        watch.stop()
        client.close()


def test_throttles_through_cgroup_v2_systemd_and_restores_step_by_step(kube, crane_crds, tmp_path):
    node = "qos-throttle"
    kube.create_fake_node(node, cpu="4", memory="8Gi")
    kube.wait_node_ready(node)
    create_crane_objects(
        kube,
        [
            {
                "kind": "AvoidanceAction",
                "metadata": {"name": "throttle"},
                "spec": {
                    "coolDownSeconds": 0,
                    "throttle": {"cpuThrottle": {"minCPURatio": 10, "stepCPURatio": 50}},
                },
            },
            {
                "kind": "NodeQOS",
                "metadata": {"name": "hot"},
                "spec": {
                    "rules": [
                        {
                            "name": "cpu",
                            "actionName": "throttle",
                            "metricRule": {"name": "cpu_total_usage", "value": 2000},
                        }
                    ]
                },
            },
        ],
    )
    bound_pod(kube, "x", node, {"requests": {"cpu": "100m"}, "limits": {"cpu": "2"}})
    pod = running_pod(kube, "x")
    host = FakeHost(tmp_path / "host", version=2, driver="systemd")
    quota_file = host.add_pod(pod, "200000 100000")
    clock, ticker = ManualClock(1_700_000_000), Ticker()
    state = tmp_path / "state.json"
    loop, watch, client = make_loop(kube, host, node, state, clock, ticker)

    def next_sample(node_millicores: int, pod_millicores: int):
        clock.advance(10)
        ticker.now += 10
        host.write_node(node_millicores)
        host.write_pod(pod, pod_millicores, 10)
        sample = loop.sample()
        assert sample.result is not None
        return [(d.kind, d.quota) for d in sample.result.decisions]

    try:
        settle(
            watch, lambda: len(watch.of("Pod")) == 1 and len(watch.of("NodeQOS")) == 1, "the agent's caches"
        )
        host.write_pod(pod, 0, 10)
        assert loop.sample().result is None
        assert next_sample(2600, 2500) == [(THROTTLE_DOWN, 1250)]  # the analyze-only sample
        assert quota_file.read_text().strip() == "200000 100000"
        # 2600m over 2000m: x (2500m) is stepped down 50% to 1250m.
        assert next_sample(2600, 2500) == [(THROTTLE_DOWN, 1250)]
        assert quota_file.read_text().strip() == "125000 100000"
        assert "200000 100000" in state.read_text()  # the original, for a restarted agent
        # Quiet: restored a step (1250 * 1.5 = 1875m), then to the kubelet's own value.
        assert next_sample(1100, 1000) == [(THROTTLE_UP, 1875)]
        assert quota_file.read_text().strip() == "187500 100000"
        assert next_sample(1100, 1000) == [(THROTTLE_UP, None)]
        assert quota_file.read_text().strip() == "200000 100000"
        assert {"AvoidanceThrottle", "AvoidanceRestore"} <= events_for(kube, kube.namespace, "x")
    finally:
        watch.stop()
        client.close()


def test_a_rule_on_an_unknown_metric_is_an_event_on_its_nodeqos_and_the_others_apply(
    kube, crane_crds, tmp_path
):
    """One mistyped metric used to make the agent reject every rule (after a fresh start it
    enforced nothing). Now the rule is skipped, with a Warning event on its NodeQOS."""
    node = "qos-typo"
    kube.create_fake_node(node, cpu="2", memory="8Gi")
    kube.wait_node_ready(node)
    create_crane_objects(
        kube,
        [
            {
                "kind": "AvoidanceAction",
                "metadata": {"name": "throttle-typo"},
                "spec": {"coolDownSeconds": 0, "throttle": {"cpuThrottle": {"stepCPURatio": 50}}},
            },
            {
                "kind": "NodeQOS",
                "metadata": {"name": "typo"},
                "spec": {
                    "rules": [
                        {
                            "name": "misspelt",
                            "actionName": "throttle-typo",
                            "metricRule": {"name": "cpu_total_utilisation", "value": 50},
                        },
                        {
                            "name": "cpu",
                            "actionName": "throttle-typo",
                            "metricRule": {"name": "cpu_total_usage", "value": 1500},
                        },
                    ]
                },
            },
        ],
    )
    host = FakeHost(tmp_path / "host", version=2, driver="systemd")
    clock, ticker = ManualClock(1_700_000_000), Ticker()
    loop, watch, client = make_loop(kube, host, node, tmp_path / "state.json", clock, ticker)
    try:
        settle(watch, lambda: any(q.name == "typo" for q in watch.of("NodeQOS")), "the agent's caches")
        loop.sample()
        (typo,) = [q for q in loop.agent.config.nodeqos if q.name == "typo"]
        assert [r.name for r in typo.rules] == ["cpu"]
        events = kube.core.list_namespaced_event("default", field_selector="involvedObject.name=typo").items
        (event,) = [e for e in events if e.reason == "UnknownMetric"]
        assert (event.type, event.involved_object.kind) == ("Warning", "NodeQOS")
        assert event.involved_object.api_version == "ensurance.crane.io/v1alpha1"
        assert 'unknown metric "cpu_total_utilisation"' in event.message
        assert 'rule "misspelt" skipped, the other rules apply' in event.message
    finally:
        watch.stop()
        client.close()


def test_repeated_events_are_one_event_with_a_count(kube):
    client = connect(str(kube.control_plane.kubeconfig_path))
    clock = ManualClock(1_700_000_000)
    events = node_events(client, clock, "some-node")
    key = f"{kube.namespace}/blocked"
    try:
        for _ in range(3):  # a PDB refusing the same eviction sample after sample
            events.record(
                Event("Pod", key, EventType.WARNING, "AvoidanceEvictRefused", "eviction refused", clock.now())
            )
            clock.advance(30)
    finally:
        client.close()
    items = kube.core.list_namespaced_event(
        kube.namespace, field_selector="involvedObject.name=blocked"
    ).items
    assert [(e.reason, e.count, e.source.component) for e in items] == [
        ("AvoidanceEvictRefused", 3, "kubetide-qos-agent")
    ]


# -- the process, under deploy/qos-agent's RBAC -----------------------------------------------


def agent_kubeconfig(kube: KubeTestContext) -> Path:
    """A token of a ServiceAccount bound to deploy/qos-agent's ClusterRole (renamed per test)."""
    rbac = kubernetes.client.RbacAuthorizationV1Api(kube.api_client)
    role = next(
        d
        for d in yaml.safe_load_all((ROOT / "deploy/qos-agent/rbac.yaml").read_text())
        if d["kind"] == "ClusterRole"
    )
    name = f"qos-agent-{kube.namespace}"
    role["metadata"] = {"name": name}
    rbac.create_cluster_role(role)
    kube.add_cleanup(lambda: rbac.delete_cluster_role(name))
    kube.core.create_namespaced_service_account(kube.namespace, {"metadata": {"name": "qos-agent"}})
    rbac.create_cluster_role_binding(
        {
            "metadata": {"name": name},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
            "subjects": [{"kind": "ServiceAccount", "name": "qos-agent", "namespace": kube.namespace}],
        }
    )
    kube.add_cleanup(lambda: rbac.delete_cluster_role_binding(name))
    token = kube.core.create_namespaced_service_account_token(
        "qos-agent", kube.namespace, {"spec": {"expirationSeconds": 3600}}
    ).status.token
    return kube.control_plane.write_token_kubeconfig(token, name)


@pytest.mark.parametrize("dry_run", [False, True], ids=["acting", "dry-run"])
def test_the_process_throttles_under_its_rbac_and_restores_on_sigterm(kube, crane_crds, tmp_path, dry_run):
    node = "qos-process-dry" if dry_run else "qos-process"
    kube.create_fake_node(node, cpu="2", memory="8Gi")
    kube.wait_node_ready(node)
    create_crane_objects(
        kube,
        [
            {
                "kind": "AvoidanceAction",
                "metadata": {"name": "throttle-p"},
                "spec": {"coolDownSeconds": 3600, "throttle": {}},
            },
            {
                "kind": "NodeQOS",
                "metadata": {"name": "process"},
                "spec": {
                    "selector": {"matchLabels": {"kubernetes.io/hostname": node}},
                    "rules": [
                        {
                            "name": "cpu",
                            "actionName": "throttle-p",
                            "metricRule": {"name": "cpu_total_usage", "value": 500},
                        }
                    ],
                },
            },
        ],
    )
    bound_pod(kube, "y", node)
    pod = running_pod(kube, "y")
    host = FakeHost(tmp_path / "host", version=1, driver="systemd")
    quota_file = host.add_pod(pod, "-1")
    host.write_node(1800)
    host.write_pod(pod, 1700, 1)
    state = tmp_path / "state.json"
    command = [
        sys.executable, "-m", "kubetide.cli.main", "qos-agent",
        f"--kubeconfig={agent_kubeconfig(kube)}", f"--node-name={node}",
        f"--proc-root={host.proc}", f"--cgroup-root={host.cgroup}", "--interval=0.5s",
        "--address=127.0.0.1:0", f"--state-file={state}", *(["--dry-run"] if dry_run else []),
    ]  # fmt: skip
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(process.stdout or ()), daemon=True)
    reader.start()
    try:
        # The process keeps sampling the busy node and a busy pod.
        def throttled():
            host.write_node(1800)
            host.write_pod(pod, 1700, 0.5)
            assert process.poll() is None, "".join(lines)
            return quota_file.read_text().strip() != "-1"

        if dry_run:
            wait_until(
                lambda: throttled() or any("[dry run]" in line for line in lines),
                timeout=60,
                interval=0.25,
                what="a dry-run decision logged",
            )
            assert quota_file.read_text().strip() == "-1" and not state.exists()
            process.send_signal(signal.SIGTERM)
            assert process.wait(timeout=30) == 0, "".join(lines)
            assert quota_file.read_text().strip() == "-1" and not state.exists()
            return
        wait_until(throttled, timeout=60, interval=0.25, what="the pod throttled")
        assert int(quota_file.read_text()) > 0
        assert '"original": "-1"' in state.read_text()
        port = next(int(m[1]) for line in lines if (m := re.search(r"metrics on port (\d+)", line)))
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
            metrics = response.read().decode()
        assert 'kubetide_qos_agent_actions_total{action="throttle"} 1.0' in metrics
        assert "kubetide_qos_agent_throttled_pods 1.0" in metrics
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 0, "".join(lines)
        reader.join(timeout=10)
        assert quota_file.read_text().strip() == "-1"
        assert any("restored the cpu quota of" in line for line in lines)
        assert state.read_text().strip() == "{}"
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


@pytest.mark.parametrize("dry_run", [True, False], ids=["dry-run", "acting"])
def test_with_pod_usage_unreadable_the_process_does_not_empty_the_node(kube, crane_crds, tmp_path, dry_run):
    """Issue #26's node: 17 pods, one of them bare and annotated safe-to-evict "false", the node
    over its eviction watermark and no pod's usage readable (no pod cgroup). The agent used to
    evict all 17. Now: the first sample only looks; then one pod of unknown usage per sample at
    most, never the bare one; acting, the AvoidanceAction's cooldown holds the next one back."""
    node = "qos-unreadable-dry" if dry_run else "qos-unreadable"
    kube.create_fake_node(node, cpu="2", memory="8Gi")
    kube.wait_node_ready(node)
    action = f"evict-{node}"
    create_crane_objects(
        kube,
        [
            {
                "kind": "AvoidanceAction",
                "metadata": {"name": action},
                # Dry-run decisions start the cooldown too: 0 there, so that every sample decides.
                "spec": {
                    "coolDownSeconds": 0 if dry_run else 300,
                    "eviction": {"terminationGracePeriodSeconds": 0},
                },
            },
            {
                "kind": "NodeQOS",
                "metadata": {"name": node},
                "spec": {
                    "selector": {"matchLabels": {"kubernetes.io/hostname": node}},
                    "rules": [
                        {
                            "name": "cpu",
                            "actionName": action,
                            "metricRule": {"name": "cpu_total_usage", "value": 1000},
                        }
                    ],
                },
            },
        ],
    )
    replicas = [f"r{i:02}" for i in range(16)]
    for name in replicas:
        bound_pod(kube, name, node)
    bound_pod(
        kube,
        "bare",
        node,
        owned=False,
        annotations={"cluster-autoscaler.kubernetes.io/safe-to-evict": "false"},
    )
    for name in [*replicas, "bare"]:
        running_pod(kube, name)
    host = FakeHost(tmp_path / "host", version=2, driver="systemd")  # no pod cgroup at all
    host.write_node(1900)
    command = [
        sys.executable, "-m", "kubetide.cli.main", "qos-agent",
        f"--kubeconfig={agent_kubeconfig(kube)}", f"--node-name={node}",
        f"--proc-root={host.proc}", f"--cgroup-root={host.cgroup}", "--interval=0.5s",
        "--address=127.0.0.1:0", f"--state-file={tmp_path / 'state.json'}",
        *(["--dry-run"] if dry_run else []),
    ]  # fmt: skip
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(process.stdout or ()), daemon=True)
    reader.start()

    def evictions() -> list[str]:
        return [line for line in lines if re.search(r"\] evict \S+/", line)]

    def decided_after_looking() -> list[str]:
        return [line for line in evictions() if "[analyze only]" not in line]

    def samples_taken() -> int:
        port = next(int(m[1]) for line in lines if (m := re.search(r"metrics on port (\d+)", line)))
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
            text = response.read().decode()
        return int(float(re.search(r"^kubetide_qos_agent_samples_total (\S+)$", text, re.M)[1]))

    def busy_until(condition, what: str):
        def check():
            host.write_node(1900)  # busy, sample after sample
            assert process.poll() is None, "".join(lines)
            return condition()

        try:
            return wait_until(check, timeout=90, interval=0.25, what=what)
        except AssertionError as exc:
            raise AssertionError(f"{exc}\n{''.join(lines[-40:])}") from None

    try:
        # Nothing changes between dry-run samples: each decides the same single eviction.
        busy_until(lambda: len(decided_after_looking()) >= (4 if dry_run else 1), "samples deciding")
        if not dry_run:
            after = samples_taken()
            busy_until(lambda: samples_taken() >= after + 4, "four more samples in the cooldown")
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 0, "".join(lines)
        reader.join(timeout=10)
        text = "".join(lines)
        assert "Traceback" not in text, text
        decided = evictions()
        # The first sample with a rate only looked.
        first_sample = next(
            i for i, line in enumerate(lines) if "first sample after start: analyze only" in line
        )
        looked = [line for line in decided if "[analyze only]" in line]
        assert len(looked) == 1 and lines.index(looked[0]) < first_sample, text
        assert all(lines.index(line) > first_sample for line in decided_after_looking()), text
        assert all("/bare " not in line for line in decided), text
        assert all("usage is unknown: the one such eviction this sample" in line for line in decided), text
        # One pod per sample: every sample's one decision names the same pod (nothing changed).
        assert len({re.search(r"evict (\S+)", line)[1] for line in decided}) == 1, text
        pods = {p.metadata.name for p in kube.core.list_namespaced_pod(kube.namespace).items}
        if dry_run:
            assert pods >= {*replicas, "bare"}
        else:
            acted = [line for line in decided if "[analyze only]" not in line]
            assert len(acted) == 1, text  # the cooldown holds the others
            assert len({*replicas, "bare"} - pods) <= 1 and "bare" in pods
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def test_bad_flags_and_an_unreachable_api_are_one_line_and_exit_2(kube, tmp_path):
    host = FakeHost(tmp_path / "host", version=2, driver="cgroupfs")
    unreachable = kube.control_plane.write_token_kubeconfig("x", "unreachable")
    unreachable.write_text(unreachable.read_text().replace(kube.control_plane.server, "https://127.0.0.1:1"))
    base = [
        sys.executable,
        "-m",
        "kubetide.cli.main",
        "qos-agent",
        f"--proc-root={host.proc}",
        f"--cgroup-root={host.cgroup}",
    ]
    cases = [
        ([f"--kubeconfig={unreachable}", "--node-name=n"], "cannot reach the API server"),
        ([f"--kubeconfig={kube.control_plane.kubeconfig_path}", "--node-name=no-such-node"], "no such Node"),
        (["--node-name=n", "--interval=soon"], "--interval"),
        (["--node-name=n", "--cgroup-driver=openrc"], "invalid choice"),
        (["--node-name=n", "--address=nowhere"], "--address"),
        (["--node-name=n", "--cgroup-root=/nonexistent"], "no such directory"),
    ]
    for flags, message in cases:
        done = subprocess.run([*base, *flags], capture_output=True, text=True, timeout=60)
        assert done.returncode == 2, (flags, done.stderr)
        assert message in done.stderr, (flags, done.stderr)
        assert len(done.stderr.strip().splitlines()) <= 2, done.stderr  # argparse adds its --help hint
