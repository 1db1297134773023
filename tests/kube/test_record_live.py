"""`kubetide record` on the real control plane, then replayed (issue 38, item 5): a Deployment
scaled 2 -> 4 -> 1 while recording (as an HPA or `kubectl scale` would), its pods' PodMetrics
(metrics.k8s.io served by CRDs, as in test_usage_source_live.py), and a Job whose pod KWOK
completes. The replay scales the Deployment as recorded, in order."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import kubernetes
import pytest
import yaml
from controlplane import installed_crds
from kubetide_process import create_deployment, scale, wait_running, write_groups

from kubetide.sim.runtime.simulation import NoAutoscaler, Simulation
from kubetide.sim.spec.scenario import load_scenario

pytestmark = pytest.mark.controlplane

DATA = Path(__file__).parent / "data"
METRICS = ("metrics.k8s.io", "v1beta1")


def _pod_metrics(kube, custom, cpu_by_pod: dict[str, str]) -> None:
    for name, cpu in cpu_by_pod.items():
        custom.create_namespaced_custom_object(
            *METRICS,
            kube.namespace,
            "pods",
            {
                "apiVersion": "/".join(METRICS),
                "kind": "PodMetrics",
                "metadata": {"name": name},
                "timestamp": "2026-12-04T00:00:00Z",
                "window": "30s",
                "containers": [{"name": "pause", "usage": {"cpu": cpu, "memory": "40Mi"}}],
            },
        )


def test_a_live_recording_replays_its_replicas_usage_and_jobs(kube, tmp_path):
    kube.create_fake_node("record-a", cpu="4", labels={"kubetide.io/node-group": "small"})
    create_deployment(kube, "web", 2, "100m", node_selector={"kubernetes.io/hostname": "record-a"})
    pods = wait_running(kube, "web", 2)
    custom = kubernetes.client.CustomObjectsApi(kube.api_client)
    out = tmp_path / "recording"
    with installed_crds(kube.control_plane, DATA / "metrics-crds.yaml"):
        # A metrics adapter's odd sample (a negative usage) is skipped, not averaged in: web's
        # usage is the other pod's 70m, and the recording does not fail.
        first_pod, second_pod = (p.metadata.name for p in pods)
        _pod_metrics(kube, custom, {first_pod: "70m", second_pod: "-30m"})
        recorder = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "kubetide.cli.main",
                "record",
                "--kubeconfig",
                str(kube.control_plane.kubeconfig_path),
                "--node-groups",
                str(write_groups(tmp_path)),
                "--for",
                "14s",
                "--interval",
                "1s",
                "--out",
                str(out),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            assert recorder.stdout is not None
            first = recorder.stdout.readline()
            assert first.startswith("recording "), first + recorder.stderr.read()
            time.sleep(2)
            scale(kube, "web", 4)
            wait_running(kube, "web", 4)
            kubernetes.client.BatchV1Api(kube.api_client).create_namespaced_job(
                kube.namespace,
                {
                    "metadata": {"name": "nightly"},
                    "spec": {
                        "template": {
                            "spec": {
                                "restartPolicy": "Never",
                                "nodeSelector": {"kubernetes.io/hostname": "record-a"},
                                "containers": [{"name": "c", "image": "busybox"}],
                            }
                        }
                    },
                },
            )
            time.sleep(2)
            scale(kube, "web", 1)
            stdout, stderr = recorder.communicate(timeout=60)
        finally:
            recorder.kill()
    assert recorder.returncode == 0, stderr
    assert "replicas: " in stdout and "next: kubetide scenario from-cluster --trace" in stdout

    meta = yaml.safe_load((out / "recording.yaml").read_text())
    ours = [t for t in meta["traces"] if t["namespace"] == kube.namespace]
    assert ours == [
        {
            "kind": "Deployment",
            "namespace": kube.namespace,
            "name": "web",
            "file": f"replicas/deployment-{kube.namespace}-web.csv",
        }
    ]
    rows = [line.split(",") for line in (out / ours[0]["file"]).read_text().splitlines()[1:]]
    assert [int(r) for _, r in rows] == [2, 4, 1]
    assert [float(t) for t, _ in rows] == sorted(float(t) for t, _ in rows)
    usage = (out / "usage.csv").read_text()
    assert f",{kube.namespace}/web,70m," in usage
    assert f",{kube.namespace},nightly," in (out / "jobs.csv").read_text()

    replay = tmp_path / "replay.yaml"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "kubetide.cli.main",
            "scenario",
            "from-cluster",
            "--trace",
            str(out),
            "--out",
            str(replay),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    simulation = Simulation(load_scenario(replay), autoscaler_factory=NoAutoscaler)
    result = simulation.run()
    scaled = [
        e["message"]
        for e in result.events
        if e.get("reason") == "Scaled" and e.get("object", "").endswith(f"{kube.namespace}/web")
    ]
    assert scaled == ["replicas -> 2", "replicas -> 4", "replicas -> 1"]


def test_a_recording_without_watch_permission_is_one_line_and_writes_nothing(kube, tmp_path):
    account = "kubetide-record-none"
    kube.core.create_namespaced_service_account(kube.namespace, {"metadata": {"name": account}})
    token = kube.core.create_namespaced_service_account_token(
        account, kube.namespace, {"spec": {"expirationSeconds": 3600}}
    ).status.token
    kubeconfig = kube.control_plane.write_token_kubeconfig(token, name="record-none")
    out = tmp_path / "recording"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "kubetide.cli.main",
            "record",
            "--kubeconfig",
            str(kubeconfig),
            "--for",
            "1m",
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2, done.stderr
    line = done.stderr.strip()
    assert "\n" not in line and "missing permission" in line and "watch pods" in line, line
    assert not out.exists()
