"""`kubetide scenario from-cluster --kubeconfig`: a live cluster as a scenario that starts from it."""

from __future__ import annotations

import re
import subprocess
import sys

import kubernetes
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


def test_live_objects_lose_everything_the_simulator_does_not_read(kube, tmp_path):
    """Env, command lines, probes and their headers, hooks and annotations, in a Deployment (its
    ReplicaSet and pod too) and a CronJob: none is exported; --keep-env adds the env values."""
    kube.create_fake_node("secret-a", cpu="2", labels={"kubetide.io/node-group": "small"})
    container = {
        "name": "api",
        "image": "registry.k8s.io/pause:3.10",
        "command": ["/pause", "--password=s3cr3t-command"],
        "args": ["--token=s3cr3t-args"],
        "env": [{"name": "DB_PASSWORD", "value": "s3cr3t-env"}],
        "resources": {"requests": {"cpu": "100m"}},
        "readinessProbe": {"exec": {"command": ["check", "--key=s3cr3t-probe"]}},
        "livenessProbe": {
            "httpGet": {
                "path": "/",
                "port": 80,
                "httpHeaders": [{"name": "Authorization", "value": "s3cr3t-header"}],
            }
        },
        "lifecycle": {"preStop": {"exec": {"command": ["logout", "s3cr3t-hook"]}}},
    }
    labels = {"app": "secrets"}
    annotations = {"example.com/token": "s3cr3t-annotation"}
    apps(kube).create_namespaced_deployment(
        kube.namespace,
        {
            "metadata": {"name": "secrets", "annotations": annotations},
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": labels},
                "template": {
                    "metadata": {"labels": labels, "annotations": annotations},
                    "spec": {
                        "containers": [container],
                        "nodeSelector": {"kubernetes.io/hostname": "secret-a"},
                    },
                },
            },
        },
    )
    nightly = {**container, "env": [{"name": "CRON_PASSWORD", "value": "s3cr3t-cron-env"}]}
    kubernetes.client.BatchV1Api(kube.api_client).create_namespaced_cron_job(
        kube.namespace,
        {
            "metadata": {"name": "nightly"},
            "spec": {
                "schedule": "0 3 * * *",
                "suspend": True,
                "jobTemplate": {
                    "spec": {"template": {"spec": {"containers": [nightly], "restartPolicy": "Never"}}}
                },
            },
        },
    )
    wait_running(kube, "secrets", 1)

    shared = tmp_path / "shared.yaml"
    result = from_cluster(kube, tmp_path, shared)
    assert result.returncode == 0, result.stderr
    text = shared.read_text()
    assert "s3cr3t" not in text and "PASSWORD" not in text
    assert "name: nightly" in text  # the CronJob is exported, without its secrets
    load_scenario(shared)

    kept = tmp_path / "kept.yaml"
    result = from_cluster(kube, tmp_path, kept, "--keep-env")
    assert result.returncode == 0, result.stderr
    found = sorted(set(re.findall(r"s3cr3t-[a-z-]+", kept.read_text())))
    assert found == ["s3cr3t-cron-env", "s3cr3t-env"]
    # Three copies of the Deployment's: the Deployment, its ReplicaSet and the pod.
    assert kept.read_text().count("s3cr3t-env") == 3
