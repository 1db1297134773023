"""Issue 29's "done when": a dump of a real cluster with an HPA and a CronJob (`kubectl get -o
yaml` from the real control plane, metrics served as metrics-server serves them) becomes a scenario
that holds still with no events and, given a usage trace, moves replicas as the HPA controller
would and nodes as the autoscaler would.

The real kube-controller-manager's HPA controller reads the same PodMetrics first: its reading and
decision are checked against kubetide's arithmetic (workloads/hpa.py) on the same pods."""

from __future__ import annotations

import datetime
import subprocess
import sys
import time
from pathlib import Path

import kubernetes
import pytest
import yaml
from controlplane import installed_crds, wait_until
from kubetide_process import create_deployment, running, wait_running
from test_kubectl_yaml_live import run_kubectl

from kubetide.kube.resources import parser_for
from kubetide.sim.runtime.simulation import Simulation
from kubetide.sim.spec.scenario import load_scenario
from kubetide.workloads.hpa import HpaState, PodSample, Settings

pytestmark = pytest.mark.controlplane

DATA = Path(__file__).parent / "data"
NODE = "hpa-night-a"
POOL = "hpa-night"
APP = "hpa-web"
USAGE = "260m"  # of a 500m request: 52% against a 50% target, within the 10% tolerance


def _hpa(namespace: str) -> dict:
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": APP, "namespace": namespace},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": APP},
            "minReplicas": 2,
            "maxReplicas": 10,
            "metrics": [
                {
                    "type": "Resource",
                    "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}},
                }
            ],
        },
    }


def _cronjob(namespace: str) -> dict:
    return {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": "nightly-report", "namespace": namespace},
        "spec": {
            "schedule": "0 0 1 1 *",  # once a year: never within the test or the simulated hour
            "timeZone": "Etc/UTC",
            "concurrencyPolicy": "Forbid",
            "jobTemplate": {
                "spec": {
                    "template": {
                        "spec": {
                            "restartPolicy": "Never",
                            "containers": [
                                {
                                    "name": "report",
                                    "image": "busybox",
                                    "resources": {"requests": {"cpu": "1"}},
                                }
                            ],
                        }
                    }
                }
            },
        },
    }


def _pod_metrics(pod, usage: str) -> dict:
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {
        "apiVersion": "metrics.k8s.io/v1beta1",
        "kind": "PodMetrics",
        "metadata": {
            "name": pod.metadata.name,
            "namespace": pod.metadata.namespace,
            "labels": dict(pod.metadata.labels),
        },
        "timestamp": now,
        "window": "15s",
        "containers": [{"name": "pause", "usage": {"cpu": usage, "memory": "32Mi"}}],
    }


def test_a_dump_with_an_hpa_and_a_cronjob_simulates_as_the_controllers_would(kube, tmp_path):
    namespace = kube.namespace
    kube.create_fake_node(NODE, cpu="4", memory="8Gi", labels={"kubetide.io/node-group": POOL})
    kube.wait_node_ready(NODE)
    create_deployment(kube, APP, 4, "500m", node_selector={"kubetide.io/node-group": POOL})
    pods = wait_running(kube, APP, 4)
    custom = kubernetes.client.CustomObjectsApi(kube.api_client)
    autoscaling = kubernetes.client.AutoscalingV2Api(kube.api_client)
    kubernetes.client.BatchV1Api(kube.api_client).create_namespaced_cron_job(namespace, _cronjob(namespace))

    with installed_crds(kube.control_plane, DATA / "metrics-crds.yaml"):
        # The HPA counts a pod's cpu only once a metric window has passed since it became ready
        # (the cpu initialisation rule): wait that long, then serve the samples.
        ready_at = max(c.last_transition_time for p in pods for c in p.status.conditions if c.type == "Ready")
        time.sleep(
            max(
                0.0,
                (
                    ready_at + datetime.timedelta(seconds=16) - datetime.datetime.now(datetime.UTC)
                ).total_seconds(),
            )
        )
        for pod in pods:
            custom.create_namespaced_custom_object(
                "metrics.k8s.io", "v1beta1", namespace, "pods", _pod_metrics(pod, USAGE)
            )
        autoscaling.create_namespaced_horizontal_pod_autoscaler(namespace, _hpa(namespace))

        # The real HPA controller reads them: 4 x 260m of 4 x 500m = 52% (1.04, within tolerance)
        def settled():
            hpa = autoscaling.read_namespaced_horizontal_pod_autoscaler(APP, namespace)
            metrics = hpa.status.current_metrics or []
            return hpa if metrics and metrics[0].resource.current.average_utilization is not None else None

        real = wait_until(settled, timeout=120, what="the HPA controller's first reading")
        reading = real.status.current_metrics[0].resource.current
        # kubetide's arithmetic on the same pods agrees with kube-controller-manager's.
        hpa_model = parser_for("HorizontalPodAutoscaler", "test")(
            kube.api_client.sanitize_for_serialization(real)
        )
        samples = [
            PodSample(
                p.metadata.name, "Running", request=500, metric=260, start_time=0.0, ready_transition=0.0
            )
            for p in pods
        ]
        ours = HpaState().reconcile(hpa_model, 4, samples, 10_000.0, Settings())
        assert (reading.average_utilization, real.status.desired_replicas) == (52, 4)
        assert (ours.metrics["cpu"], ours.desired) == (52, 4)

        # `kubectl get -o yaml`: the node, and the namespace's objects with their status.
        dump = tmp_path / "dump.yaml"
        dump.write_text(
            run_kubectl(kube, "get", f"node/{NODE}", "-o", "yaml")
            + "---\n"
            + run_kubectl(kube, "get", "pods,deploy,rs,hpa,cronjobs", "-n", namespace, "-o", "yaml")
        )
        metrics = tmp_path / "usage.json"  # what metrics-server answers, as `plan --usage` reads it
        metrics.write_text(
            run_kubectl(kube, "get", "--raw", f"/apis/metrics.k8s.io/v1beta1/namespaces/{namespace}/pods")
        )

    scenario_path = tmp_path / "scenario.yaml"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "kubetide.cli.main",
            "scenario",
            "from-cluster",
            str(dump),
            "--usage",
            str(metrics),
            "--duration",
            "30m",
            "--out",
            str(scenario_path),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    exported = yaml.safe_load(scenario_path.read_text())
    kinds = {o["kind"] for o in exported["spec"]["objects"]}
    assert {"HorizontalPodAutoscaler", "CronJob"} <= kinds
    # --usage: the Deployment's pods at their PodMetrics' mean
    assert exported["spec"]["usage"] == [
        {
            "match": {"kind": "Deployment", "namespace": namespace, "name": APP},
            "cpu": "260m",
            "memory": "32Mi",
        }
    ]

    # No events: the HPA holds at the usage read (52%), the CronJob waits for January.
    still = Simulation(load_scenario(scenario_path)).run()
    assert _rescales_of(still) == [] and still.summary["hpa"][f"{namespace}/{APP}"]["final"] == 4
    assert still.summary["cronjobs"] == {"cronjobs": 1, "jobs_started": 0, "missed_schedules": 0}
    assert still.summary["nodes"]["final"] == 1

    # A usage trace: at 10m each pod uses 600m (120% of its request, 2.4 x the target).
    #  600 s: ceil(2.4 x 4) = 10, limited to max(2 x 4, 4) = 8 (no behavior given);
    #  615 s: the 4 new pods started after 600 s have no metric yet; on a scale-up they count at 0:
    #         (4 x 600m) / (8 x 500m) = 60%, 1.2 x the target: ceil(1.2 x 8) = 10 (maxReplicas).
    # 10 x 500m is more than the 4-cpu node: the autoscaler adds a node for the 2 that do not fit.
    (tmp_path / "night.csv").write_text("time,cpu\n0,260m\n10m,600m\n")
    exported["spec"]["usage"] = [{"match": {"kind": "Deployment", "name": APP}, "trace": "night.csv"}]
    traced_path = tmp_path / "traced.yaml"
    traced_path.write_text(yaml.safe_dump(exported, sort_keys=False))
    traced = Simulation(load_scenario(traced_path)).run()
    assert _rescales_of(traced) == [(600.0, 8), (615.0, 10)]
    assert traced.summary["nodes"]["final"] == 2
    assert traced.summary["pods"]["pending_at_end"] == 0
    assert len(running(kube, APP)) == 4  # the real cluster was only read


def _rescales_of(result) -> list[tuple[float, int]]:
    return [
        (e["time"], int(e["message"].split(";")[0].split()[-1]))
        for e in result.events
        if e["reason"] == "SuccessfulRescale"
    ]
