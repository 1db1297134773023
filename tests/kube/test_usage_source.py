"""`kubetide run --usage-metrics-interval`: the UsageSource from metrics.k8s.io and crane's NodeQOS,
against a fake API client (what it lists, how often, and what a failed read does)."""

from __future__ import annotations

import logging

from kubetide.kube.client import ApiError
from kubetide.kube.usage import AVOIDANCE_ACTIONS, NODE_METRICS, NODEQOS, POD_METRICS, KubeUsageSource
from kubetide.model import Node, ObjectMeta, Pod
from kubetide.snapshot import ClusterSnapshot

ALLOC = {"cpu": 8000, "memory": 32 * 2**30, "pods": 110}
CRANE = "ensurance.crane.io/v1alpha1"


def node(name, pool):
    return Node(ObjectMeta(name, labels={"pool": pool}), dict(ALLOC), dict(ALLOC))


def pod(name, host):
    return Pod(ObjectMeta(name, "shop", f"uid-{name}"), {"cpu": 500}, {}, node_name=host, phase="Running")


SNAPSHOT = ClusterSnapshot(
    [node("w1", "workers"), node("s1", "system")], [pod("batch-1", "w1"), pod("web-1", "s1")]
)

OBJECTS = {
    POD_METRICS.list_path: [
        {
            "metadata": {"name": "batch-1", "namespace": "shop"},
            "containers": [{"name": "c", "usage": {"cpu": "650m", "memory": "1Gi"}}],
        },
        {
            "metadata": {"name": "gone", "namespace": "shop"},
            "containers": [{"name": "c", "usage": {"cpu": "1"}}],
        },
    ],
    NODE_METRICS.list_path: [{"metadata": {"name": "w1"}, "usage": {"cpu": "1200m", "memory": "3Gi"}}],
    NODEQOS.list_path: [
        {
            "apiVersion": CRANE,
            "kind": "NodeQOS",
            "metadata": {"name": "workers-cpu"},
            "spec": {
                "selector": {"matchLabels": {"pool": "workers"}},
                "rules": [
                    {
                        "name": "cpu-80",
                        "actionName": "evict",
                        "metricRule": {"name": "cpu_total_utilization", "value": 80},
                    }
                ],
            },
        }
    ],
    AVOIDANCE_ACTIONS.list_path: [
        {
            "apiVersion": CRANE,
            "kind": "AvoidanceAction",
            "metadata": {"name": "evict"},
            "spec": {"eviction": {}},
        }
    ],
}


class FakeClient:
    source = "fake"
    server = "https://fake"

    def __init__(self, objects, fail=None):
        self.objects = objects
        self.fail = fail
        self.lists = []

    def list_pages(self, path, **_):
        self.lists.append(path)
        if self.fail is not None:
            raise self.fail
        yield {"items": self.objects.get(path, [])}


class Clock:
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t


def test_a_sample_has_pod_and_node_usage_and_the_ceilings_of_selected_nodes():
    source = KubeUsageSource(FakeClient(OBJECTS), lambda: SNAPSHOT, 60.0, Clock())
    sample = source.sample()
    assert sample.pods == {"uid-batch-1": {"cpu": 650, "memory": 2**30}}  # "gone" is not in the cache
    assert sample.nodes == {"w1": {"cpu": 1200, "memory": 3 * 2**30}}
    assert list(sample.ceilings) == ["w1"]  # the NodeQOS selects pool=workers only
    (ceiling,) = sample.ceilings["w1"]
    assert (ceiling.resource, ceiling.amount) == ("cpu", 6400)
    assert "NodeQOS workers-cpu rule cpu-80" in ceiling.source


def test_the_api_is_read_at_most_once_per_interval():
    client, clock = FakeClient(OBJECTS), Clock()
    source = KubeUsageSource(client, lambda: SNAPSHOT, 60.0, clock)
    first = source.sample()
    reads = len(client.lists)
    clock.t = 59.0
    assert source.sample() is first and len(client.lists) == reads
    clock.t = 60.0
    source.sample()
    assert len(client.lists) == 2 * reads


def test_a_failed_read_turns_the_guard_off_and_is_logged_once(caplog):
    client, clock = (
        FakeClient(
            OBJECTS, fail=ApiError(404, "NotFound", "the server could not find the requested resource")
        ),
        Clock(),
    )
    source = KubeUsageSource(client, lambda: SNAPSHOT, 10.0, clock)
    with caplog.at_level(logging.WARNING):
        for t in (0.0, 10.0, 20.0):
            clock.t = t
            sample = source.sample()
            assert (sample.pods, sample.nodes, sample.ceilings) == ({}, {}, {})
    assert len([r for r in caplog.records if "guard off" in r.getMessage()]) == 1
    client.fail = None
    clock.t = 30.0
    assert source.sample().ceilings  # back once the API answers
