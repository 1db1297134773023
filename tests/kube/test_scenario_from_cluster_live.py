"""`kubetide scenario from-cluster --kubeconfig`: a live cluster as a scenario that starts from it."""

from __future__ import annotations

import subprocess
import sys

import pytest
from kubetide_process import apps, create_deployment, wait_running, write_groups

from kubetide.sim.runtime.simulation import NoAutoscaler, Simulation
from kubetide.sim.spec.scenario import load_scenario

pytestmark = pytest.mark.controlplane


def test_from_cluster_reads_the_live_cluster_and_the_simulator_adopts_it(kube, tmp_path):
    kube.create_fake_node("scenario-a", cpu="2", labels={"kubetide.io/node-group": "small"})
    create_deployment(kube, "tonight", 2, "100m", node_selector={"kubernetes.io/hostname": "scenario-a"})
    wait_running(kube, "tonight", 2)
    before = {n.metadata.name: n.metadata.resource_version for n in kube.core.list_node().items}
    out = tmp_path / "live.yaml"

    result = from_cluster(kube, tmp_path, out)
    assert result.returncode == 0, result.stderr
    live = {
        (p.metadata.name, p.spec.node_name)
        for p in kube.core.list_namespaced_pod(kube.namespace, label_selector="app=tonight").items
    }
    assert {n.metadata.name for n in kube.core.list_node().items} == set(before)  # read-only

    sim = Simulation(load_scenario(out), autoscaler_factory=NoAutoscaler)
    sim.setup()
    adopted = {(p.name, p.node_name) for p in sim.world.pods() if p.labels.get("app") == "tonight"}
    assert adopted == live
    assert "scenario-a" in {i.node_name for i in sim.cloud.groups["small"].sim_instances()}
    # Nothing created in this test's namespace. (Not `sim.replicasets.created == 0`: the shared
    # control plane holds other tests' namespaces, and a ReplicaSet whose pods are terminating
    # there rightly gets replacements in the simulator.)
    in_namespace = {p.name for p in sim.world.pods() if p.namespace == kube.namespace}
    assert in_namespace == {p.metadata.name for p in kube.core.list_namespaced_pod(kube.namespace).items}


def from_cluster(kube, tmp_path, out, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "kubetide.cli.main",
            "scenario",
            "from-cluster",
            "--kubeconfig",
            str(kube.control_plane.kubeconfig_path),
            "--node-groups",
            str(write_groups(tmp_path)),
            "--out",
            str(out),
            *extra,
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_live_containers_lose_env_values_command_and_args_unless_kept(kube, tmp_path):

    kube.create_fake_node("secret-a", cpu="2", labels={"kubetide.io/node-group": "small"})
    container = {
        "name": "api",
        "image": "registry.k8s.io/pause:3.10",
        "command": ["/pause", "--password=s3cr3t-command"],
        "args": ["--token=s3cr3t-args"],
        "env": [{"name": "DB_PASSWORD", "value": "s3cr3t-env"}],
        "resources": {"requests": {"cpu": "100m"}},
    }
    labels = {"app": "secrets"}
    apps(kube).create_namespaced_deployment(
        kube.namespace,
        {
            "metadata": {"name": "secrets"},
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": labels},
                "template": {
                    "metadata": {"labels": labels},
                    "spec": {
                        "containers": [container],
                        "nodeSelector": {"kubernetes.io/hostname": "secret-a"},
                    },
                },
            },
        },
    )
    wait_running(kube, "secrets", 1)

    shared = tmp_path / "shared.yaml"
    result = from_cluster(kube, tmp_path, shared)
    assert result.returncode == 0, result.stderr
    text = shared.read_text()
    assert "s3cr3t" not in text  # the Deployment's template, its ReplicaSet's and the pod's
    assert "DB_PASSWORD" in text  # names are kept
    load_scenario(shared)

    kept = tmp_path / "kept.yaml"
    result = from_cluster(kube, tmp_path, kept, "--keep-env")
    assert result.returncode == 0, result.stderr
    # Three copies of each: the Deployment, its ReplicaSet and the pod.
    for secret in ("s3cr3t-command", "s3cr3t-args", "s3cr3t-env"):
        assert kept.read_text().count(secret) == 3, secret
