"""Helpers for end-to-end tests: `kubetide run` as a real process, and the objects it acts on."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import kubernetes
from controlplane import KubeTestContext, wait_until

TO_BE_DELETED = "ToBeDeletedByClusterAutoscaler"

# Loop settings that make a test take seconds, not minutes. The autoscaler's decisions are the
# same as with CA's defaults; only the waits are shorter.
FAST_FLAGS = (
    "--scan-interval=1s",
    "--scale-down-unneeded-time=3s",
    # A node the autoscaler just added is empty until KWOK reports it Ready and the scheduler
    # binds pods to it (seconds on a loaded machine): it must not look unneeded meanwhile.
    "--scale-down-delay-after-add=5s",
    "--node-delete-delay-after-taint=0s",
    "--unremovable-node-recheck-timeout=2s",
    "--kube-client-qps=100",
    "--kube-client-burst=200",
    "--v=4",  # every loop in the log a failing test prints
)

GROUPS_YAML = """\
nodeGroups:
- name: small
  minSize: 0
  maxSize: 12
  price: 0.1
  template:
    metadata:
      labels: {kubernetes.io/os: linux, size: small}
    status:
      allocatable: {cpu: "2", memory: 4Gi, pods: "110"}
- name: large
  minSize: 0
  maxSize: 4
  price: 1.0
  template:
    metadata:
      labels: {kubernetes.io/os: linux, size: large}
    status:
      allocatable: {cpu: "8", memory: 16Gi, pods: "110"}
"""


def write_groups(directory: Path, text: str = GROUPS_YAML) -> Path:
    path = directory / "groups.yaml"
    path.write_text(text)
    return path


# What `--v=4` (FAST_FLAGS) logs at the end of every loop, even one with nothing to do.
LOOP_LINE = re.compile(r"\bloop \d+\.\d+s: \d+ actions")


class Kubetide:
    """One `kubetide run` process; its output goes to a log file the failure message shows."""

    def __init__(self, kube: KubeTestContext, directory: Path, *args: str, name: str = "kubetide"):
        self.log_path = directory / f"{name}-{uuid.uuid4().hex[:6]}.log"
        self.args = args
        self.kube = kube
        self.process: subprocess.Popen | None = None

    def start(self) -> Kubetide:
        self._log = self.log_path.open("wb")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "kubetide.cli.main", "run", *self.args],
            stdout=self._log,
            stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        self.kube.add_cleanup(self.kill)
        return self

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def loops(self) -> int:
        """How many loops the process has finished (with FAST_FLAGS, which log each one)."""
        return len(LOOP_LINE.findall(self.log()))

    def wait_loops(self, count: int, timeout: float = 60.0) -> None:
        """Wait until the process has finished `count` more loops: "a few more loops" counted
        rather than guessed from a sleep."""
        target = self.loops() + count
        wait_until(lambda: self.loops() >= target, timeout=timeout, what=f"{count} more loops of kubetide")

    def terminate(self, timeout: float = 30.0) -> int:
        assert self.process is not None
        self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout)
        finally:
            self._log.close()

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        with contextlib.suppress(Exception):
            self._log.close()

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None


def kwok_run_args(kube: KubeTestContext, groups: Path) -> list[str]:
    """The flags a `kubetide run` on the test cluster starts with: its kubeconfig, KWOK node
    groups from `groups` (write_groups), and a free port for the health and metrics endpoint."""
    return [
        f"--kubeconfig={kube.control_plane.kubeconfig_path}",
        "--cloud-provider=kwok",
        f"--node-groups={groups}",
        "--address=127.0.0.1:0",
    ]


def run_kubetide(*args: str, timeout: float = 60.0) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "kubetide.cli.main", "run", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def apps(kube: KubeTestContext) -> kubernetes.client.AppsV1Api:
    return kubernetes.client.AppsV1Api(kube.api_client)


def create_deployment(
    kube: KubeTestContext,
    name: str,
    replicas: int,
    cpu: str,
    *,
    node_selector: dict[str, str] | None = None,
    pod_annotations: dict[str, str] | None = None,
) -> None:
    labels = {"app": name}
    template_metadata: dict = {"labels": labels}
    if pod_annotations:
        template_metadata["annotations"] = pod_annotations
    spec: dict = {
        "containers": [
            {
                "name": "pause",
                "image": "registry.k8s.io/pause:3.10",
                "resources": {"requests": {"cpu": cpu, "memory": "64Mi"}},
            }
        ],
        "terminationGracePeriodSeconds": 0,
    }
    if node_selector:
        spec["nodeSelector"] = node_selector
    apps(kube).create_namespaced_deployment(
        kube.namespace,
        {
            "metadata": {"name": name},
            "spec": {
                "replicas": replicas,
                "selector": {"matchLabels": labels},
                "template": {"metadata": template_metadata, "spec": spec},
            },
        },
    )


def scale(kube: KubeTestContext, name: str, replicas: int) -> None:
    apps(kube).patch_namespaced_deployment_scale(name, kube.namespace, {"spec": {"replicas": replicas}})


def pods(kube: KubeTestContext, app: str) -> list:
    return kube.core.list_namespaced_pod(kube.namespace, label_selector=f"app={app}").items


def running(kube: KubeTestContext, app: str) -> list:
    return [
        p
        for p in pods(kube, app)
        if p.status.phase == "Running" and p.metadata.deletion_timestamp is None and p.spec.node_name
    ]


def group_nodes(kube: KubeTestContext, group: str) -> list:
    return kube.core.list_node(label_selector=f"kubetide.io/node-group={group}").items


def tainted_for_deletion(kube: KubeTestContext) -> list[str]:
    return [
        n.metadata.name
        for n in kube.core.list_node().items
        if any(t.key == TO_BE_DELETED for t in (n.spec.taints or []))
    ]


def wait_running(kube: KubeTestContext, app: str, count: int, timeout: float = 60.0) -> list:
    return wait_until(
        lambda: (found := running(kube, app)) and len(found) == count and found,
        timeout=timeout,
        what=f"{count} running pods of {app}",
    )


def run_bare_pod(
    kube: KubeTestContext,
    name: str,
    node: str,
    what: str,
    *,
    annotations: dict[str, str] | None = None,
    **spec: object,
) -> None:
    """A pod no controller owns, bound to `node` (100m, 64Mi; `spec` adds fields), waited for
    until it runs."""
    metadata: dict = {"name": name}
    if annotations:
        metadata["annotations"] = annotations
    kube.core.create_namespaced_pod(
        kube.namespace,
        {
            "metadata": metadata,
            "spec": {
                "nodeName": node,
                **spec,
                "containers": [
                    {
                        "name": "pause",
                        "image": "registry.k8s.io/pause:3.10",
                        "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}},
                    }
                ],
            },
        },
    )
    wait_until(
        lambda: kube.core.read_namespaced_pod(name, kube.namespace).status.phase == "Running",
        timeout=30,
        what=what,
    )
