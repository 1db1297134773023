"""`kubetide plan --usage`: real usage and crane's watermarks from files, and scale-down keeps
destinations under them as `kubetide run --usage-metrics-interval` does on a live cluster."""

import json

import pytest

import kubetide.cli.main as cli_main

# `a`'s batch pod (400m requested) fits on `busy` (500m requested) by requests, but it uses 600m
# and busy's web pod 300m: 900m on a 1-core node whose NodeQOS evicts above 80%.
CLUSTER = """\
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Node
  metadata:
    name: a
    labels: {pool: workers, kubetide.io/node-group: workers}
    creationTimestamp: "2026-11-24T00:00:00Z"
  status:
    allocatable: {cpu: "1", memory: 4Gi, pods: "110"}
    capacity: {cpu: "1", memory: 4Gi, pods: "110"}
    conditions: [{type: Ready, status: "True"}]
- apiVersion: v1
  kind: Node
  metadata:
    name: busy
    labels: {pool: workers, kubetide.io/node-group: workers}
    annotations: {cluster-autoscaler.kubernetes.io/scale-down-disabled: "true"}
    creationTimestamp: "2026-11-24T00:00:00Z"
  status:
    allocatable: {cpu: "1", memory: 4Gi, pods: "110"}
    capacity: {cpu: "1", memory: 4Gi, pods: "110"}
    conditions: [{type: Ready, status: "True"}]
- apiVersion: apps/v1
  kind: ReplicaSet
  metadata: {name: batch, namespace: default, uid: rs-batch}
  spec:
    replicas: 1
    selector: {matchLabels: {app: batch}}
    template:
      metadata: {labels: {app: batch}}
      spec: {containers: [{name: c, resources: {requests: {cpu: 400m}}}]}
- apiVersion: apps/v1
  kind: ReplicaSet
  metadata: {name: web, namespace: default, uid: rs-web}
  spec:
    replicas: 1
    selector: {matchLabels: {app: web}}
    template:
      metadata: {labels: {app: web}}
      spec: {containers: [{name: c, resources: {requests: {cpu: 500m}}}]}
- apiVersion: v1
  kind: Pod
  metadata:
    name: batch-1
    namespace: default
    uid: pod-batch-1
    labels: {app: batch}
    ownerReferences: [{apiVersion: apps/v1, kind: ReplicaSet, name: batch, uid: rs-batch, controller: true}]
    creationTimestamp: "2026-11-24T01:00:00Z"
  spec: {nodeName: a, containers: [{name: c, resources: {requests: {cpu: 400m}}}]}
  status: {phase: Running}
- apiVersion: v1
  kind: Pod
  metadata:
    name: web-1
    namespace: default
    uid: pod-web-1
    labels: {app: web}
    ownerReferences: [{apiVersion: apps/v1, kind: ReplicaSet, name: web, uid: rs-web, controller: true}]
    creationTimestamp: "2026-11-24T01:00:00Z"
  spec: {nodeName: busy, containers: [{name: c, resources: {requests: {cpu: 500m}}}]}
  status: {phase: Running}
"""

USAGE = """\
apiVersion: v1
kind: List
items:
- apiVersion: ensurance.crane.io/v1alpha1
  kind: NodeQOS
  metadata: {name: workers-cpu}
  spec:
    selector: {matchLabels: {pool: workers}}
    rules: [{name: cpu-80, actionName: evict, metricRule: {name: cpu_total_utilization, value: 80}}]
- apiVersion: ensurance.crane.io/v1alpha1
  kind: AvoidanceAction
  metadata: {name: evict}
  spec: {eviction: {}}
- apiVersion: metrics.k8s.io/v1beta1
  kind: PodMetrics
  metadata: {name: batch-1, namespace: default}
  timestamp: "2026-11-24T02:00:00Z"
  window: 30s
  containers: [{name: c, usage: {cpu: 600m, memory: 100Mi}}]
- apiVersion: metrics.k8s.io/v1beta1
  kind: PodMetrics
  metadata: {name: web-1, namespace: default}
  timestamp: "2026-11-24T02:00:00Z"
  window: 30s
  containers: [{name: c, usage: {cpu: 300m, memory: 100Mi}}]
"""


@pytest.fixture
def plan(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(cli_main, "COMMANDS", ("plan",))
    (tmp_path / "cluster.yaml").write_text(CLUSTER)
    (tmp_path / "usage.yaml").write_text(USAGE)
    monkeypatch.chdir(tmp_path)

    def run(*argv):
        code = cli_main.main(["plan", "cluster.yaml", *argv])
        out, err = capsys.readouterr()
        return code, out, err

    return run


def nodes(plan, *argv):
    code, out, err = plan("--json", *argv)
    assert code == 0 and err == "", err
    return json.loads(out)["scale_down"]["nodes"]


def test_without_usage_the_node_is_packed_by_requests(plan):
    assert nodes(plan)["a"]["status"] == "removable"


def test_with_usage_a_destination_over_its_watermark_is_refused(plan):
    a = nodes(plan, "--usage", "usage.yaml")["a"]
    assert (a["status"], a["reason"]) == ("unremovable", "NoPlaceToMovePodsBelowQOSWatermark")
    assert "busy: cpu usage 900m > 800m (NodeQOS workers-cpu rule cpu-80" in a["why"]


def test_the_guard_can_be_turned_off(plan):
    argv = ("--usage", "usage.yaml", "--set", "scale-down-respect-qos-watermarks=false")
    assert nodes(plan, *argv)["a"]["status"] == "removable"


def test_the_table_says_why(plan):
    code, out, _ = plan("--usage", "usage.yaml")
    assert code == 0 and "NoPlaceToMovePodsBelowQOSWatermark 1" in out and "would delete: nothing" in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--usage", "cluster.yaml"], "cluster.yaml: is a cluster dump"),
        (["--usage", "missing.yaml"], "missing.yaml: no such file"),
    ],
)
def test_bad_usage_files_are_one_line_and_exit_2(plan, argv, message):
    code, out, err = plan(*argv)
    assert code == 2 and out == "" and err.count("\n") == 1 and message in err
