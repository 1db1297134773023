"""Scale-down's QoS watermark guard reading a real API server (`kubetide run --usage-metrics-interval`):
metrics.k8s.io's PodMetrics and NodeMetrics and crane's NodeQOS / AvoidanceAction, listed by the
same paths as on a cluster with metrics-server and crane. metrics-server itself is an aggregated
API that needs kubelets, so tests/kube/data/metrics-crds.yaml serves the same group, version,
resources and object shape as CustomResourceDefinitions."""

from __future__ import annotations

import logging
from pathlib import Path

import kubernetes
import pytest
from controlplane import installed_crds

from kubetide.kube.client import connect
from kubetide.kube.resources import parser_for
from kubetide.kube.usage import KubeUsageSource
from kubetide.snapshot import ClusterSnapshot

pytestmark = pytest.mark.controlplane

DATA = Path(__file__).parent / "data"
CRANE = ("ensurance.crane.io", "v1alpha1")
METRICS = ("metrics.k8s.io", "v1beta1")
NODE = "usage-w1"


def _cluster(kube) -> ClusterSnapshot:
    """The test's node and pod as kubetide's adapter parses them."""
    serialize = kube.api_client.sanitize_for_serialization
    node = parser_for("Node", "test")(serialize(kube.core.read_node(NODE)))
    pods = [
        parser_for("Pod", "test")(serialize(p)) for p in kube.core.list_namespaced_pod(kube.namespace).items
    ]
    return ClusterSnapshot([node], pods)


def test_usage_and_ceilings_come_from_the_api_and_a_missing_api_turns_the_guard_off(kube, caplog):
    kube.create_fake_node(NODE, cpu="8", memory="32Gi", labels={"pool": "usage-workers"})
    pod = kube.core.create_namespaced_pod(
        kube.namespace,
        {
            "metadata": {"name": "batch-1"},
            "spec": {
                "nodeName": NODE,
                "terminationGracePeriodSeconds": 0,
                "containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "500m"}}}],
            },
        },
    )
    client = connect(str(kube.control_plane.kubeconfig_path))
    snapshot = _cluster(kube)
    custom = kubernetes.client.CustomObjectsApi(kube.api_client)
    # The objects below go with their CRDs when each block ends.
    with installed_crds(kube.control_plane, DATA / "crane-crds.yaml"):
        # No metrics API yet (no metrics-server): no usage at all, the guard is off, one warning.
        with caplog.at_level(logging.WARNING):
            empty = KubeUsageSource(client, lambda: snapshot, 0.0).sample()
        assert (empty.pods, empty.nodes, empty.ceilings) == ({}, {}, {})
        warned = [r.getMessage() for r in caplog.records if "guard off" in r.getMessage()]
        assert len(warned) == 1
        assert "404 NotFound: pods.metrics.k8s.io is not served (metrics-server not installed?)" in warned[0]

        with installed_crds(kube.control_plane, DATA / "metrics-crds.yaml"):
            custom.create_cluster_custom_object(
                *CRANE,
                "nodeqoss",
                {
                    "apiVersion": "/".join(CRANE),
                    "kind": "NodeQOS",
                    "metadata": {"name": "usage-workers-cpu"},
                    "spec": {
                        "selector": {"matchLabels": {"pool": "usage-workers"}},
                        "rules": [
                            {
                                "name": "cpu-80",
                                "actionName": "usage-evict",
                                "metricRule": {"name": "cpu_total_utilization", "value": 80},
                            }
                        ],
                    },
                },
            )
            custom.create_cluster_custom_object(
                *CRANE,
                "avoidanceactions",
                {
                    "apiVersion": "/".join(CRANE),
                    "kind": "AvoidanceAction",
                    "metadata": {"name": "usage-evict"},
                    "spec": {"eviction": {}},
                },
            )
            stamp = {"timestamp": "2026-11-24T05:00:00Z", "window": "30s"}
            custom.create_cluster_custom_object(
                *METRICS,
                "nodes",
                {
                    "apiVersion": "/".join(METRICS),
                    "kind": "NodeMetrics",
                    "metadata": {"name": NODE},
                    **stamp,
                    "usage": {"cpu": "1200m", "memory": "3Gi"},
                },
            )
            custom.create_namespaced_custom_object(
                *METRICS,
                kube.namespace,
                "pods",
                {
                    "apiVersion": "/".join(METRICS),
                    "kind": "PodMetrics",
                    "metadata": {"name": "batch-1"},
                    **stamp,
                    "containers": [{"name": "c", "usage": {"cpu": "650m", "memory": "1Gi"}}],
                },
            )

            sample = KubeUsageSource(client, lambda: snapshot, 0.0).sample()

    assert sample.pods == {pod.metadata.uid: {"cpu": 650, "memory": 2**30}}
    assert sample.nodes[NODE] == {"cpu": 1200, "memory": 3 * 2**30}
    (ceiling,) = sample.ceilings[NODE]
    assert (ceiling.resource, ceiling.amount) == ("cpu", 6400)  # 80% of 8 cpus
    assert "NodeQOS usage-workers-cpu rule cpu-80" in ceiling.source
