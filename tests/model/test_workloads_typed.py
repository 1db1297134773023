"""Workloads, CronJobs, HorizontalPodAutoscalers and ConfigMaps through the wire schema
(model/wire_workloads.py, model/workloads_typed.py, model/hpa_typed.py, model/policy_typed.py) are
what the path-aware Reader returns, or the Reader's turn (never an error of their own): from JSON
text as from parsed values, and what the Reader refuses is refused in its words."""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime
from functools import partial

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mutations import assert_reader_or_nothing, mutated, odd_values, paths

from kubetide.model import hpa_typed, policy_typed, workloads_typed
from kubetide.model.cronjob import parse_cronjob
from kubetide.model.hpa import parse_hpa
from kubetide.model.hpa_typed import decode_hpa, parse_hpa_typed
from kubetide.model.policy import parse_configmap
from kubetide.model.policy_typed import decode_configmap, parse_configmap_typed
from kubetide.model.reader import Reader
from kubetide.model.typed_kinds import wire_parser
from kubetide.model.wire_workloads import (
    ConfigMapWire,
    CronJobWire,
    HorizontalPodAutoscalerWire,
    WorkloadWire,
)
from kubetide.model.workloads import parse_workload
from kubetide.model.workloads_typed import (
    WORKLOAD_DECODERS,
    WORKLOAD_PARSERS,
    decode_cronjob,
    parse_cronjob_typed,
)

WHERE = "items[0] (x)"

TEMPLATE = {
    "metadata": {
        "labels": {"app": "web", "pod-template-hash": "7d9f8"},
        "annotations": {"kubectl.kubernetes.io/restartedAt": "2026-11-01T00:00:00Z"},
    },
    "spec": {
        "containers": [
            {
                "name": "app",
                "image": "web:v1",
                "env": [{"name": "MODE", "value": "prod"}],
                "ports": [{"containerPort": 8080, "protocol": "TCP"}],
                "resources": {"requests": {"cpu": "250m", "memory": "64Mi"}, "limits": {"memory": "128Mi"}},
                "readinessProbe": {"httpGet": {"path": "/", "port": 8080}, "periodSeconds": 5},
            }
        ],
        "nodeSelector": {"kubernetes.io/os": "linux"},
        "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "web", "effect": "NoSchedule"}],
        "terminationGracePeriodSeconds": 45,
        "priorityClassName": "high",
        "restartPolicy": "Always",
        "dnsPolicy": "ClusterFirst",
    },
}

META = {
    "name": "web",
    "namespace": "shop",
    "uid": "wl-uid",
    "generation": 4,
    "resourceVersion": "77",
    "creationTimestamp": "2026-11-01T00:00:00Z",
    "labels": {"app": "web"},
    "annotations": {"deployment.kubernetes.io/revision": "3"},
    "ownerReferences": [
        {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "uid": "d", "controller": True}
    ],
    "managedFields": [{"manager": "kube-controller-manager", "fieldsV1": {"f:spec": {}}}],
}

SELECTOR = {
    "matchLabels": {"app": "web"},
    "matchExpressions": [{"key": "pod-template-hash", "operator": "In", "values": ["7d9f8"]}],
}


def workload(kind: str) -> dict:
    spec: dict = {"selector": SELECTOR, "template": TEMPLATE}
    if kind in ("Deployment", "ReplicaSet", "StatefulSet"):
        spec["replicas"] = 3
    if kind == "Deployment":
        spec.update(
            minReadySeconds=10,
            revisionHistoryLimit=10,
            strategy={"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": "10%"}},
        )
    if kind == "StatefulSet":
        spec.update(podManagementPolicy="Parallel", serviceName="web")
    if kind == "Job":
        spec.update(parallelism=2, completions=6, backoffLimit=4)
        del spec["selector"]  # the Job's selector is its template's labels then
        spec["template"] = copy.deepcopy(TEMPLATE)
        spec["template"]["spec"]["restartPolicy"] = "Never"  # a Job's pods end
    return {
        "apiVersion": "batch/v1" if kind == "Job" else "apps/v1",
        "kind": kind,
        "metadata": copy.deepcopy(META),
        "spec": copy.deepcopy(spec),
        "status": {
            "replicas": 3,
            "readyReplicas": 2,
            "availableReplicas": 2,
            "updatedReplicas": 3,
            "observedGeneration": 4,
            "conditions": [{"type": "Available", "status": "True"}],
        },
    }


CRONJOB = {
    "apiVersion": "batch/v1",
    "kind": "CronJob",
    "metadata": {
        "name": "report",
        "namespace": "shop",
        "uid": "cj",
        "creationTimestamp": "2026-11-01T00:00:00Z",
    },
    "spec": {
        "schedule": "*/15 * * * *",
        "timeZone": "Europe/Paris",
        "concurrencyPolicy": "Forbid",
        "startingDeadlineSeconds": 200,
        "suspend": False,
        "successfulJobsHistoryLimit": 5,
        "failedJobsHistoryLimit": 2,
        "jobTemplate": {
            "metadata": {"labels": {"job": "report"}, "annotations": {"a": "b"}},
            "spec": {
                "parallelism": 1,
                "completions": 1,
                "template": {**TEMPLATE, "spec": {**TEMPLATE["spec"], "restartPolicy": "OnFailure"}},
            },
        },
    },
    "status": {"lastScheduleTime": "2026-11-01T01:00:00Z", "lastSuccessfulTime": "2026-11-01T01:01:00Z"},
}

HPA = {
    "apiVersion": "autoscaling/v2",
    "kind": "HorizontalPodAutoscaler",
    "metadata": {"name": "web", "namespace": "shop", "uid": "h", "resourceVersion": "9"},
    "spec": {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
        "minReplicas": 2,
        "maxReplicas": 10,
        "metrics": [
            {
                "type": "Resource",
                "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 60}},
            },
            {
                "type": "Resource",
                "resource": {"name": "memory", "target": {"type": "AverageValue", "averageValue": "200Mi"}},
            },
            {
                "type": "External",
                "external": {"metric": {"name": "queue"}, "target": {"type": "Value", "value": "30"}},
            },
        ],
        "behavior": {
            "scaleDown": {
                "stabilizationWindowSeconds": 120,
                "policies": [{"type": "Pods", "value": 1, "periodSeconds": 60}],
            }
        },
    },
    "status": {
        "currentReplicas": 3,
        "desiredReplicas": 4,
        "lastScaleTime": "2026-11-01T00:10:00Z",
        "currentMetrics": [
            {
                "type": "Resource",
                "resource": {"name": "cpu", "current": {"averageUtilization": 72, "averageValue": "180m"}},
            },
            {"type": "External", "external": {"metric": {"name": "queue"}, "current": {"value": "12"}}},
        ],
        "conditions": [{"type": "AbleToScale", "status": "True"}],
    },
}

CONFIGMAP = {
    "apiVersion": "v1",
    "kind": "ConfigMap",
    "metadata": {"name": "settings", "namespace": "kube-system", "uid": "cm"},
    "data": {"mode": "fast", "empty": ""},
}

KINDS = ("Deployment", "ReplicaSet", "StatefulSet", "DaemonSet", "Job")
# kind -> (reader path, typed parse, JSON decode)
ENTRIES = {
    **{
        kind: (lambda r, k=kind: parse_workload(r, k), WORKLOAD_PARSERS[kind], WORKLOAD_DECODERS[kind])
        for kind in KINDS
    },
    "CronJob": (parse_cronjob, parse_cronjob_typed, decode_cronjob),
    "HorizontalPodAutoscaler": (parse_hpa, parse_hpa_typed, decode_hpa),
    "ConfigMap": (parse_configmap, parse_configmap_typed, decode_configmap),
}
FULL = {
    **{kind: workload(kind) for kind in KINDS},
    "CronJob": CRONJOB,
    "HorizontalPodAutoscaler": HPA,
    "ConfigMap": CONFIGMAP,
}


def slow(kind, data):
    return ENTRIES[kind][0](Reader(copy.deepcopy(data), "dump.json", WHERE))


def typed(kind, data):
    return ENTRIES[kind][1](Reader(copy.deepcopy(data), "dump.json", WHERE))


def fast(kind, data):
    """The schema path alone, from parsed values and from JSON text: the value, or None."""
    try:
        converted = _schema_only(kind, data)
    except _ReaderUsed:
        converted = None
    try:
        text = json.dumps(data)
    except TypeError:
        return converted  # a value only YAML has (a timestamp): no JSON text to decode
    decoded = ENTRIES[kind][2](text)
    assert (decoded is None) == (converted is None)
    if converted is not None:
        assert decoded[0] == converted
        meta = data["metadata"]
        name = f"{meta['namespace']}/{meta['name']}" if meta.get("namespace") else meta["name"]
        assert decoded[1] == f"{kind} {name}"
    return converted


def parsers(kind):
    """`kind`'s schema path, Reader and typed parser, as assert_reader_or_nothing takes them."""
    return partial(fast, kind), partial(slow, kind), partial(typed, kind)


class _ReaderUsed(Exception):
    pass


def _schema_only(kind, data):
    """The typed parse with the Reader's parser replaced by one that says it was called."""

    def refuse(reader):
        raise _ReaderUsed

    builders = {
        **{k: (WorkloadWire, workloads_typed._workload_builder(k)) for k in KINDS},
        "CronJob": (CronJobWire, workloads_typed._cronjob),
        "HorizontalPodAutoscaler": (HorizontalPodAutoscalerWire, hpa_typed._hpa),
        "ConfigMap": (ConfigMapWire, policy_typed._configmap),
    }
    wire_type, build = builders[kind]
    return wire_parser(wire_type, build, refuse)(Reader(copy.deepcopy(data), "dump.json", WHERE))


@pytest.mark.parametrize("kind", sorted(FULL))
def test_a_full_object_takes_the_schema_path_and_matches_the_reader(kind):
    result = fast(kind, FULL[kind])
    assert result is not None
    assert result == slow(kind, FULL[kind]) == typed(kind, FULL[kind])


def test_a_template_keeps_its_hash_and_a_deployment_its_text():
    deployment = fast("Deployment", FULL["Deployment"])
    replicaset = fast("ReplicaSet", FULL["ReplicaSet"])
    assert deployment.template.spec_hash == replicaset.template.spec_hash != ""
    assert json.loads(deployment.template.spec_text) == TEMPLATE["spec"]  # images and probes too
    assert replicaset.template.spec_text == ""
    assert deployment.template.prototype.requests["cpu"] == 250
    assert (deployment.max_surge, deployment.max_unavailable, deployment.min_ready_seconds) == (1, "10%", 10)
    changed = copy.deepcopy(FULL["Deployment"])
    changed["spec"]["template"]["spec"]["containers"][0]["image"] = "web:v2"
    assert fast("Deployment", changed).template.spec_hash != deployment.template.spec_hash


@pytest.mark.parametrize(
    ("kind", "data"),
    [
        (
            "Deployment",
            {
                "kind": "Deployment",
                "metadata": {"name": "d"},
                "spec": {
                    "selector": {"matchLabels": {"a": "b"}},
                    "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c"}]}},
                },
            },
        ),
        (
            "Job",
            {
                "kind": "Job",
                "metadata": {"name": "j"},
                "spec": {"template": {"spec": {"containers": [{"name": "c"}]}}},
            },
        ),
        (
            "DaemonSet",
            {
                "kind": "DaemonSet",
                "metadata": {"name": "ds"},
                "spec": {
                    "selector": {"matchLabels": {"app": "ds"}},
                    "template": {
                        "metadata": {"labels": {"app": "ds"}},
                        "spec": {"containers": [{"name": "c"}]},
                    },
                },
            },
        ),
        (
            "CronJob",
            {
                "kind": "CronJob",
                "metadata": {"name": "c"},
                "spec": {
                    "schedule": "@hourly",
                    "jobTemplate": {"spec": {"template": {"spec": {"containers": [{"name": "c"}]}}}},
                },
            },
        ),
        (
            "CronJob",
            {
                "kind": "CronJob",
                "metadata": {"name": "e"},
                "spec": {
                    "schedule": "@every 90s",
                    "jobTemplate": {"spec": {"template": {"spec": {"containers": [{"name": "c"}]}}}},
                },
            },
        ),
        (
            "HorizontalPodAutoscaler",
            {
                "kind": "HorizontalPodAutoscaler",
                "metadata": {"name": "h"},
                "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "d"}, "maxReplicas": 3},
            },
        ),
        ("ConfigMap", {"kind": "ConfigMap", "metadata": {"name": "empty"}}),
    ],
)
def test_a_minimal_object_takes_the_schema_path_and_matches_the_reader(kind, data):
    result = fast(kind, data)
    assert result is not None and result == slow(kind, data)


CREATED = datetime(2026, 11, 1, tzinfo=UTC)  # as PyYAML reads an unquoted timestamp


@pytest.mark.parametrize(
    ("kind", "path", "value"),
    [
        ("Deployment", ("spec", "replicas"), "3"),  # a number as text: the Reader reads it
        ("Deployment", ("spec", "replicas"), -1),
        ("Deployment", ("spec", "replicas"), 2**31),
        ("Deployment", ("spec", "strategy", "rollingUpdate", "maxSurge"), "3"),
        ("Deployment", ("spec", "strategy", "rollingUpdate", "maxUnavailable"), "150%"),
        ("Deployment", ("spec", "strategy", "type"), "Recreate"),
        ("Deployment", ("spec", "minReadySeconds"), -5),
        ("Deployment", ("spec", "selector", "matchLabels", "app"), "other"),
        ("Deployment", ("spec", "template", "spec", "containers", 0, "resources", "requests", "cpu"), 2),
        ("Deployment", ("spec", "template", "spec", "initContainers"), [{"name": "init"}]),
        ("Deployment", ("spec", "template", "metadata", "labels", "app"), True),
        ("Deployment", ("metadata", "creationTimestamp"), CREATED),
        ("Deployment", ("status", "replicas"), 2**64 - 1),
        ("StatefulSet", ("spec", "podManagementPolicy"), 7),
        ("Job", ("spec", "completions"), -1),
        ("Job", ("spec", "parallelism"), "two"),
        ("ReplicaSet", ("spec", "selector"), None),
        ("ReplicaSet", ("spec", "template"), None),
        ("CronJob", ("spec", "schedule"), "every day"),
        ("CronJob", ("spec", "timeZone"), "Mars/Olympus"),
        ("CronJob", ("spec", "concurrencyPolicy"), "Sometimes"),
        ("CronJob", ("spec", "failedJobsHistoryLimit"), -1),
        ("CronJob", ("spec", "jobTemplate", "metadata", "labels"), {"bad key!": "x"}),
        ("HorizontalPodAutoscaler", ("spec", "maxReplicas"), 1.5),
        ("HorizontalPodAutoscaler", ("spec", "minReplicas"), 20),
        ("HorizontalPodAutoscaler", ("spec", "metrics", 0, "resource", "name"), "gpu"),
        ("HorizontalPodAutoscaler", ("spec", "metrics", 1, "resource", "target", "averageValue"), "-1"),
        ("HorizontalPodAutoscaler", ("spec", "behavior", "scaleDown", "selectPolicy"), "Often"),
        (
            "HorizontalPodAutoscaler",
            ("status", "currentMetrics", 0, "resource", "current", "averageValue"),
            "lots",
        ),
        ("HorizontalPodAutoscaler", ("status", "lastScaleTime"), "yesterday"),
        ("ConfigMap", ("data", "count"), 3),  # a YAML number: the Reader makes it text
        ("ConfigMap", ("data", "list"), [1]),
    ],
)
def test_anything_odd_is_the_readers_and_its_errors_stay_its_own(kind, path, value):
    # Lenient forms the Reader's own parsers read (a strategy's "3") may take the schema path.
    assert_reader_or_nothing(mutated(FULL[kind], [(path, value)]), *parsers(kind))


PATHS = {kind: list(paths(FULL[kind])) for kind in FULL}


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(sorted(FULL)).flatmap(
        lambda kind: st.tuples(
            st.just(kind),
            st.lists(
                st.tuples(
                    st.sampled_from(PATHS[kind]), odd_values("25%", "Recreate", "Resource", "@daily", "cpu")
                ),
                min_size=1,
                max_size=3,
            ),
        )
    )
)
def test_the_schema_path_is_the_reader_or_nothing(case):
    kind, mutations = case
    assert_reader_or_nothing(mutated(FULL[kind], mutations), *parsers(kind))
