"""`kubetide plan --usage`: real usage and crane's watermarks from files, and scale-down keeps
destinations under them as `kubetide run --usage-metrics-interval` does on a live cluster."""

import json

import pytest

import kubetide.cli.main as cli_main

CREATED = "2026-11-24T00:00:00Z"


def node(name, **annotations):
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {"pool": "workers", "kubetide.io/node-group": "workers"},
            "annotations": annotations,
            "creationTimestamp": CREATED,
        },
        "status": {
            "allocatable": {"cpu": "1", "memory": "4Gi", "pods": "110"},
            "capacity": {"cpu": "1", "memory": "4Gi", "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def workload(app, node_name, cpu):
    """A one-replica ReplicaSet and its pod, running on `node_name`."""
    containers = [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]
    owner = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "name": app,
        "uid": f"rs-{app}",
        "controller": True,
    }
    replicaset = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": app, "namespace": "default", "uid": f"rs-{app}"},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": app}},
            "template": {"metadata": {"labels": {"app": app}}, "spec": {"containers": containers}},
        },
    }
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"{app}-1",
            "namespace": "default",
            "uid": f"pod-{app}-1",
            "labels": {"app": app},
            "ownerReferences": [owner],
            "creationTimestamp": "2026-11-24T01:00:00Z",
        },
        "spec": {"nodeName": node_name, "containers": containers},
        "status": {"phase": "Running"},
    }
    return [replicaset, pod]


def pod_metrics(app, cpu):
    return {
        "apiVersion": "metrics.k8s.io/v1beta1",
        "kind": "PodMetrics",
        "metadata": {"name": f"{app}-1", "namespace": "default"},
        "timestamp": "2026-11-24T02:00:00Z",
        "window": "30s",
        "containers": [{"name": "c", "usage": {"cpu": cpu, "memory": "100Mi"}}],
    }


def listing(items):
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": items}, indent=2)


# `a`'s batch pod (400m requested) fits on `busy` (500m requested) by requests, but it uses 600m
# and busy's web pod 300m: 900m on a 1-core node whose NodeQOS evicts above 80%.
CLUSTER = listing(
    [
        node("a"),
        node("busy", **{"cluster-autoscaler.kubernetes.io/scale-down-disabled": "true"}),
        *workload("batch", "a", "400m"),
        *workload("web", "busy", "500m"),
    ]
)
USAGE = listing(
    [
        {
            "apiVersion": "ensurance.crane.io/v1alpha1",
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
        },
        {
            "apiVersion": "ensurance.crane.io/v1alpha1",
            "kind": "AvoidanceAction",
            "metadata": {"name": "evict"},
            "spec": {"eviction": {}},
        },
        pod_metrics("batch", "600m"),
        pod_metrics("web", "300m"),
    ]
)


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


def test_a_rule_on_an_unknown_metric_is_skipped_and_said(plan, tmp_path):
    """The other rules still guard (the node stays unremovable); the skipped one is one warning."""
    usage = USAGE.replace(
        '"rules": [',
        '"rules": [{"name": "typo", "actionName": "evict", "metricRule": {"name": "cpu_totl_usage", "value": 1}},',
        1,
    )
    assert usage != USAGE
    (tmp_path / "usage.yaml").write_text(usage)
    code, out, err = plan("--json", "--usage", "usage.yaml")
    assert code == 0
    assert json.loads(out)["scale_down"]["nodes"]["a"]["reason"] == "NoPlaceToMovePodsBelowQOSWatermark"
    warnings = [line for line in err.splitlines() if "cpu_totl_usage" in line]
    assert len(warnings) == 1 and "typo" in warnings[0], err
