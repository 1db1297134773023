"""kubetide's validation against the API server's own, on the same objects (issue 36 item 3).

Every case is one HorizontalPodAutoscaler (autoscaling/v2), CronJob (batch/v1), Deployment
(its strategy and the fields checked with it) or PodDisruptionBudget (policy/v1), valid or not.
The live test creates each with dryRun=All on the test control plane's real kube-apiserver and
asserts its verdict is the one the table records; the offline test asserts kubetide's: the
same accept or refuse, on both of its parsers (the wire-schema decoder a List dump is streamed
through, and the Reader that words every error), and a refusal names the field. Between them,
kubetide accepts what the API server accepts and refuses what it refuses.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from controlplane import KubeTestContext

from kubetide.errors import ManifestError
from kubetide.model import load_documents, load_file

CONTAINER = {"name": "c", "image": "registry.example.com/app:1", "resources": {"requests": {"cpu": "100m"}}}
HPA = {
    "apiVersion": "autoscaling/v2",
    "kind": "HorizontalPodAutoscaler",
    "metadata": {"name": "web"},
    "spec": {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
        "minReplicas": 2,
        "maxReplicas": 10,
        "metrics": [
            {
                "type": "Resource",
                "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 60}},
            }
        ],
    },
}
CRONJOB = {
    "apiVersion": "batch/v1",
    "kind": "CronJob",
    "metadata": {"name": "report"},
    "spec": {
        "schedule": "*/5 * * * *",
        "jobTemplate": {
            "spec": {"template": {"spec": {"restartPolicy": "OnFailure", "containers": [CONTAINER]}}}
        },
    },
}
DEPLOYMENT = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "web"},
    "spec": {
        "replicas": 2,
        "selector": {"matchLabels": {"app": "web"}},
        "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [CONTAINER]}},
    },
}
PDB = {
    "apiVersion": "policy/v1",
    "kind": "PodDisruptionBudget",
    "metadata": {"name": "web"},
    "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}},
}
METRIC = "spec.metrics.0"
TARGET = f"{METRIC}.resource.target"
ROLLING = "spec.strategy.rollingUpdate"
JOB_POD = "spec.jobTemplate.spec.template.spec"
BEHAVIOR = "spec.behavior.scaleDown"


def changed(obj: dict, *changes: tuple[str, object]) -> dict:
    """A copy of obj with each dotted path set to its value (`a.0.b`: 0 indexes a list; the value
    DELETE removes the key)."""
    result = copy.deepcopy(obj)
    for path, value in changes:
        *parents, last = path.split(".")
        here = result
        for part in parents:
            here = here[int(part)] if part.isdigit() else here.setdefault(part, {})
        if value is DELETE:
            del here[last]
        elif last.isdigit():
            here[int(last)] = value
        else:
            here[last] = value
    return result


DELETE = object()

# name -> (object, None when the API server accepts it, else the field kubetide's error names)
CASES: dict[str, tuple[dict, str | None]] = {
    # HorizontalPodAutoscaler, autoscaling/v2
    "HPA as written": (HPA, None),
    "HPA minReplicas left out": (changed(HPA, ("spec.minReplicas", DELETE)), None),
    "HPA minReplicas 0": (changed(HPA, ("spec.minReplicas", 0)), "spec.minReplicas"),
    "HPA minReplicas -1": (changed(HPA, ("spec.minReplicas", -1)), "spec.minReplicas"),
    "HPA maxReplicas 0": (changed(HPA, ("spec.maxReplicas", 0)), "spec.maxReplicas"),
    "HPA maxReplicas below minReplicas": (
        changed(HPA, ("spec.minReplicas", 5), ("spec.maxReplicas", 3)),
        "spec.maxReplicas",
    ),
    "HPA maxReplicas 2^31": (changed(HPA, ("spec.maxReplicas", 2**31)), "spec.maxReplicas"),
    "HPA empty scaleTargetRef name": (
        changed(HPA, ("spec.scaleTargetRef.name", "")),
        "spec.scaleTargetRef.name",
    ),
    "HPA empty scaleTargetRef kind": (
        changed(HPA, ("spec.scaleTargetRef.kind", "")),
        "spec.scaleTargetRef.kind",
    ),
    "HPA scaleTargetRef name with a slash": (
        changed(HPA, ("spec.scaleTargetRef.name", "a/b")),
        "spec.scaleTargetRef.name",
    ),
    "HPA metric type Bogus": (changed(HPA, (f"{METRIC}.type", "Bogus")), "spec.metrics[0].type"),
    "HPA Resource metric without its source": (
        changed(HPA, (f"{METRIC}.resource", DELETE)),
        "spec.metrics[0].resource",
    ),
    "HPA Resource metric with a second source": (
        changed(
            HPA,
            (
                f"{METRIC}.pods",
                {"metric": {"name": "q"}, "target": {"type": "AverageValue", "averageValue": "1"}},
            ),
        ),
        "spec.metrics[0].pods",
    ),
    "HPA target type Bogus": (
        changed(HPA, (f"{TARGET}.type", "Bogus")),
        "spec.metrics[0].resource.target.type",
    ),
    "HPA averageUtilization 0": (
        changed(HPA, (f"{TARGET}.averageUtilization", 0)),
        "spec.metrics[0].resource.target.averageUtilization",
    ),
    "HPA averageUtilization 150": (changed(HPA, (f"{TARGET}.averageUtilization", 150)), None),
    "HPA averageUtilization and averageValue": (
        changed(HPA, (f"{TARGET}.averageValue", "100m")),
        "spec.metrics[0].resource.target.averageValue",
    ),
    "HPA Resource target with no value": (
        changed(HPA, (f"{TARGET}.averageUtilization", DELETE)),
        "spec.metrics[0].resource.target.averageUtilization",
    ),
    "HPA averageValue -1": (
        changed(
            HPA,
            (f"{TARGET}.averageUtilization", DELETE),
            (f"{TARGET}.type", "AverageValue"),
            (f"{TARGET}.averageValue", "-1"),
        ),
        "spec.metrics[0].resource.target.averageValue",
    ),
    "HPA memory AverageValue": (
        changed(
            HPA,
            (
                f"{METRIC}.resource",
                {"name": "memory", "target": {"type": "AverageValue", "averageValue": "500Mi"}},
            ),
        ),
        None,
    ),
    "HPA cpu target type Value with averageValue": (
        changed(
            HPA, (f"{METRIC}.resource", {"name": "cpu", "target": {"type": "Value", "averageValue": "500m"}})
        ),
        None,
    ),
    "HPA ephemeral-storage metric": (
        changed(
            HPA,
            (
                f"{METRIC}.resource",
                {"name": "ephemeral-storage", "target": {"type": "AverageValue", "averageValue": "1Gi"}},
            ),
        ),
        None,
    ),
    # The API server takes any resource name but an empty one; the metric then never has a value.
    "HPA resource name Bogus": (changed(HPA, (f"{METRIC}.resource.name", "Bogus")), None),
    "HPA empty resource name": (
        changed(HPA, (f"{METRIC}.resource.name", "")),
        "spec.metrics[0].resource.name",
    ),
    "HPA Pods metric": (
        changed(
            HPA,
            (
                METRIC,
                {
                    "type": "Pods",
                    "pods": {
                        "metric": {"name": "rps"},
                        "target": {"type": "AverageValue", "averageValue": "10"},
                    },
                },
            ),
        ),
        None,
    ),
    "HPA Pods metric without averageValue": (
        changed(
            HPA,
            (
                METRIC,
                {
                    "type": "Pods",
                    "pods": {
                        "metric": {"name": "rps"},
                        "target": {"type": "Utilization", "averageUtilization": 5},
                    },
                },
            ),
        ),
        "spec.metrics[0].pods.target.averageValue",
    ),
    "HPA External metric": (
        changed(
            HPA,
            (
                METRIC,
                {
                    "type": "External",
                    "external": {"metric": {"name": "queue"}, "target": {"type": "Value", "value": "30"}},
                },
            ),
        ),
        None,
    ),
    "HPA External metric without a name": (
        changed(
            HPA,
            (
                METRIC,
                {
                    "type": "External",
                    "external": {"metric": {"name": ""}, "target": {"type": "Value", "value": "30"}},
                },
            ),
        ),
        "spec.metrics[0].external.metric.name",
    ),
    "HPA stabilizationWindowSeconds 3601": (
        changed(HPA, (f"{BEHAVIOR}.stabilizationWindowSeconds", 3601)),
        f"{BEHAVIOR}.stabilizationWindowSeconds",
    ),
    "HPA policy periodSeconds 1801": (
        changed(HPA, (f"{BEHAVIOR}.policies", [{"type": "Pods", "value": 1, "periodSeconds": 1801}])),
        f"{BEHAVIOR}.policies[0].periodSeconds",
    ),
    "HPA scaleDown with no policies": (changed(HPA, (f"{BEHAVIOR}.policies", [])), f"{BEHAVIOR}.policies"),
    "HPA tolerance -1": (changed(HPA, (f"{BEHAVIOR}.tolerance", "-1")), f"{BEHAVIOR}.tolerance"),
    "HPA selectPolicy Bogus": (
        changed(HPA, (f"{BEHAVIOR}.selectPolicy", "Bogus")),
        f"{BEHAVIOR}.selectPolicy",
    ),
    # CronJob, batch/v1
    "CronJob as written": (CRONJOB, None),
    "CronJob that never fires": (changed(CRONJOB, ("spec.schedule", "0 0 31 2 *")), None),
    "CronJob @hourly": (changed(CRONJOB, ("spec.schedule", "@hourly")), None),
    "CronJob @every 90m": (changed(CRONJOB, ("spec.schedule", "@every 90m")), None),
    "CronJob name of 52 characters": (changed(CRONJOB, ("metadata.name", "a" * 52)), None),
    "CronJob name of 53 characters": (changed(CRONJOB, ("metadata.name", "a" * 53)), "metadata.name"),
    "CronJob restartPolicy Always": (
        changed(CRONJOB, (f"{JOB_POD}.restartPolicy", "Always")),
        f"{JOB_POD}.restartPolicy",
    ),
    "CronJob restartPolicy Never": (changed(CRONJOB, (f"{JOB_POD}.restartPolicy", "Never")), None),
    "CronJob minute 61": (changed(CRONJOB, ("spec.schedule", "61 * * * *")), "spec.schedule"),
    "CronJob TZ= in the schedule": (changed(CRONJOB, ("spec.schedule", "TZ=UTC 0 * * * *")), "spec.schedule"),
    "CronJob unknown timeZone": (changed(CRONJOB, ("spec.timeZone", "Bogus/Zone")), "spec.timeZone"),
    "CronJob timeZone Europe/Paris": (changed(CRONJOB, ("spec.timeZone", "Europe/Paris")), None),
    "CronJob concurrencyPolicy Bogus": (
        changed(CRONJOB, ("spec.concurrencyPolicy", "Bogus")),
        "spec.concurrencyPolicy",
    ),
    "CronJob startingDeadlineSeconds -1": (
        changed(CRONJOB, ("spec.startingDeadlineSeconds", -1)),
        "spec.startingDeadlineSeconds",
    ),
    "CronJob successfulJobsHistoryLimit -1": (
        changed(CRONJOB, ("spec.successfulJobsHistoryLimit", -1)),
        "spec.successfulJobsHistoryLimit",
    ),
    # Deployment: the strategy and the fields the API server checks with it
    "Deployment as written": (DEPLOYMENT, None),
    "Deployment revisionHistoryLimit -1": (
        changed(DEPLOYMENT, ("spec.revisionHistoryLimit", -1)),
        "spec.revisionHistoryLimit",
    ),
    "Deployment maxSurge 2^31": (changed(DEPLOYMENT, (f"{ROLLING}.maxSurge", 2**31)), f"{ROLLING}.maxSurge"),
    "Deployment maxSurge and maxUnavailable 0": (
        changed(DEPLOYMENT, (f"{ROLLING}.maxSurge", 0), (f"{ROLLING}.maxUnavailable", 0)),
        f"{ROLLING}.maxUnavailable",
    ),
    "Deployment maxUnavailable 101%": (
        changed(DEPLOYMENT, (f"{ROLLING}.maxUnavailable", "101%")),
        f"{ROLLING}.maxUnavailable",
    ),
    "Deployment maxSurge 150%": (changed(DEPLOYMENT, (f"{ROLLING}.maxSurge", "150%")), None),
    "Deployment maxSurge -1": (changed(DEPLOYMENT, (f"{ROLLING}.maxSurge", -1)), f"{ROLLING}.maxSurge"),
    "Deployment maxUnavailable abc": (
        changed(DEPLOYMENT, (f"{ROLLING}.maxUnavailable", "abc")),
        f"{ROLLING}.maxUnavailable",
    ),
    "Deployment maxUnavailable 100% and maxSurge 0": (
        changed(DEPLOYMENT, (f"{ROLLING}.maxSurge", 0), (f"{ROLLING}.maxUnavailable", "100%")),
        None,
    ),
    "Deployment Recreate with rollingUpdate": (
        changed(DEPLOYMENT, ("spec.strategy.type", "Recreate"), (f"{ROLLING}.maxSurge", 1)),
        ROLLING,
    ),
    "Deployment strategy Bogus": (changed(DEPLOYMENT, ("spec.strategy.type", "Bogus")), "spec.strategy.type"),
    "Deployment minReadySeconds 599": (changed(DEPLOYMENT, ("spec.minReadySeconds", 599)), None),
    "Deployment minReadySeconds 600 (the default progress deadline)": (
        changed(DEPLOYMENT, ("spec.minReadySeconds", 600)),
        "spec.progressDeadlineSeconds",
    ),
    "Deployment progressDeadlineSeconds equal to minReadySeconds": (
        changed(DEPLOYMENT, ("spec.minReadySeconds", 10), ("spec.progressDeadlineSeconds", 10)),
        "spec.progressDeadlineSeconds",
    ),
    "Deployment template restartPolicy Never": (
        changed(DEPLOYMENT, ("spec.template.spec.restartPolicy", "Never")),
        "spec.template.spec.restartPolicy",
    ),
    "Deployment empty selector": (changed(DEPLOYMENT, ("spec.selector", {})), "spec.selector"),
    # PodDisruptionBudget, policy/v1
    "PDB as written": (PDB, None),
    "PDB minAvailable and maxUnavailable": (changed(PDB, ("spec.maxUnavailable", 1)), "spec"),
    "PDB minAvailable -1": (changed(PDB, ("spec.minAvailable", -1)), "spec.minAvailable"),
    "PDB minAvailable 150%": (changed(PDB, ("spec.minAvailable", "150%")), "spec.minAvailable"),
    "PDB minAvailable 0%": (changed(PDB, ("spec.minAvailable", "0%")), None),
    "PDB maxUnavailable 50%": (
        changed(PDB, ("spec.minAvailable", DELETE), ("spec.maxUnavailable", "50%")),
        None,
    ),
    "PDB maxUnavailable abc%": (
        changed(PDB, ("spec.minAvailable", DELETE), ("spec.maxUnavailable", "abc%")),
        "spec.maxUnavailable",
    ),
    "PDB maxUnavailable 2^31": (
        changed(PDB, ("spec.minAvailable", DELETE), ("spec.maxUnavailable", 2**31)),
        "spec.maxUnavailable",
    ),
    "PDB unhealthyPodEvictionPolicy Bogus": (
        changed(PDB, ("spec.unhealthyPodEvictionPolicy", "Bogus")),
        "spec.unhealthyPodEvictionPolicy",
    ),
    "PDB selector operator Bogus": (
        changed(
            PDB,
            ("spec.selector", {"matchExpressions": [{"key": "app", "operator": "Bogus", "values": ["web"]}]}),
        ),
        "spec.selector.matchExpressions[0].operator",
    ),
}


def kubetide_verdicts(obj: dict, tmp_path: Path) -> list[str | None]:
    """kubetide's verdict on both parsers: None (accepted), or the error's text."""
    verdicts: list[str | None] = []
    try:
        load_documents([copy.deepcopy(obj)], "case.yaml")
        verdicts.append(None)
    except ManifestError as refused:
        verdicts.append(str(refused))
    # A List dump of two: the first item is streamed through the wire-schema decoder.
    path = tmp_path / "case.json"
    second = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "after"}}
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [obj, second]}))
    try:
        load_file(path)
        verdicts.append(None)
    except ManifestError as refused:
        verdicts.append(str(refused))
    return verdicts


@pytest.mark.parametrize("name", list(CASES))
def test_kubetide_accepts_and_refuses_as_the_api_server(name, tmp_path):
    obj, field = CASES[name]
    for verdict in kubetide_verdicts(obj, tmp_path):
        if field is None:
            assert verdict is None, verdict
        else:
            assert verdict is not None, "accepted"
            assert f": {field}: " in verdict or verdict.endswith(f": {field}"), verdict
            assert verdict.count("\n") == 0


def api_server_verdict(kube: KubeTestContext, obj: dict) -> str | None:
    """None when the API server takes the object (dryRun=All: nothing is stored), else its
    message; only a validation refusal (422) or a body it cannot decode (400) counts as one."""
    import kubernetes

    body = changed(obj, ("metadata.namespace", kube.namespace))
    client = kube.api_client
    create = {
        "HorizontalPodAutoscaler": kubernetes.client.AutoscalingV2Api(
            client
        ).create_namespaced_horizontal_pod_autoscaler,
        "CronJob": kubernetes.client.BatchV1Api(client).create_namespaced_cron_job,
        "Deployment": kubernetes.client.AppsV1Api(client).create_namespaced_deployment,
        "PodDisruptionBudget": kubernetes.client.PolicyV1Api(client).create_namespaced_pod_disruption_budget,
    }[obj["kind"]]
    try:
        create(kube.namespace, body, dry_run="All", _preload_content=False)
    except kubernetes.client.ApiException as refused:
        assert refused.status in (400, 422), f"{refused.status}: {refused.body}"
        return json.loads(refused.body).get("message", refused.body)
    return None


def test_the_api_server_accepts_and_refuses_as_the_table_says(kube):
    """Every case in one test: a namespace (and its ServiceAccount wait) once, not per case."""
    wrong = []
    for name, (obj, field) in CASES.items():
        verdict = api_server_verdict(kube, obj)
        if (verdict is None) != (field is None):
            wrong.append(
                f"{name}: the API server {'accepted' if verdict is None else 'refused'} it: {verdict}"
            )
    assert not wrong, "\n".join(wrong)


def test_the_table_has_cases_of_every_kind_both_ways():
    kinds = {(obj["kind"], field is None) for obj, field in CASES.values()}
    assert kinds == {
        (kind, ok)
        for kind in ("HorizontalPodAutoscaler", "CronJob", "Deployment", "PodDisruptionBudget")
        for ok in (True, False)
    }
    assert len(CASES) >= 37
