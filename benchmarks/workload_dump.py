"""A dump heavy in controllers, for the wire schema of the workload kinds (issue 30 item 1): what
`kubectl get nodes,deploy,rs,sts,ds,job,cronjob,hpa,cm -A -o json` prints for a cluster of
2,000 Deployments, each keeping its last 10 ReplicaSets (`revisionHistoryLimit`'s default: a real
cluster's ReplicaSets outnumber its Deployments ten to one, all but the newest scaled to zero),
200 StatefulSets, 100 DaemonSets, 100 CronJobs with 5 Jobs each, 500 HPAs and 1,000 ConfigMaps,
over 200 nodes, with the metadata the API server writes (managedFields, annotations, owner
references, conditions) and pod templates as Deployments carry them (images, env, probes,
volumes).

    python -m benchmarks.workload_dump --format json|yaml --out PATH [--deployments N]

Deterministic: the same arguments give the same bytes.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from benchmarks.dumps import FORMATS, write_list

NAMESPACES = 20
HISTORY = 10  # ReplicaSets kept per Deployment
CREATED = "2026-11-01T00:00:00Z"


def _uid(kind: int, index: int) -> str:
    digits = f"{kind:04x}{index:028x}"
    return f"{digits[:8]}-{digits[8:12]}-{digits[12:16]}-{digits[16:20]}-{digits[20:]}"


def _meta(name: str, namespace: str, uid: str, manager: str, **extra: Any) -> dict[str, Any]:
    return {
        "name": name,
        "namespace": namespace,
        "uid": uid,
        "resourceVersion": str(1000 + int(uid.replace("-", "")[-12:], 16)),
        "generation": 3,
        "creationTimestamp": CREATED,
        "managedFields": [
            {
                "apiVersion": "apps/v1",
                "fieldsType": "FieldsV1",
                "fieldsV1": {
                    "f:spec": {f"f:field-{i}": {} for i in range(10)},
                    "f:metadata": {"f:labels": {}},
                },
                "manager": manager,
                "operation": "Update",
                "time": CREATED,
            }
        ],
        **extra,
    }


def _template(app: str, revision: int, index: int) -> dict[str, Any]:
    cpu = (100, 250, 500, 1000)[index % 4]
    return {
        "metadata": {"labels": {"app": app, "tier": ("web", "api", "worker")[index % 3]}},
        "spec": {
            "containers": [
                {
                    "name": "app",
                    "image": f"registry.example.com/{app}:v{revision}",
                    "imagePullPolicy": "IfNotPresent",
                    "args": ["--port=8080", f"--revision={revision}"],
                    "env": [{"name": f"SETTING_{i}", "value": str(i * index)} for i in range(5)],
                    "ports": [{"containerPort": 8080, "name": "http", "protocol": "TCP"}],
                    "resources": {
                        "requests": {"cpu": f"{cpu}m", "memory": f"{cpu * 2}Mi"},
                        "limits": {"memory": f"{cpu * 4}Mi"},
                    },
                    "readinessProbe": {"httpGet": {"path": "/ready", "port": 8080}, "periodSeconds": 5},
                    "livenessProbe": {"httpGet": {"path": "/live", "port": 8080}, "periodSeconds": 10},
                    "volumeMounts": [{"mountPath": "/etc/app", "name": "config"}],
                    "terminationMessagePath": "/dev/termination-log",
                    "terminationMessagePolicy": "File",
                },
                {
                    "name": "proxy",
                    "image": "registry.example.com/proxy:1.4",
                    "resources": {"requests": {"cpu": "50m", "memory": "64Mi"}},
                },
            ],
            "volumes": [{"name": "config", "configMap": {"name": f"{app}-config", "defaultMode": 420}}],
            "nodeSelector": {"kubernetes.io/os": "linux"},
            "tolerations": [
                {"key": "dedicated", "operator": "Equal", "value": "apps", "effect": "NoSchedule"}
            ],
            "restartPolicy": "Always",
            "dnsPolicy": "ClusterFirst",
            "schedulerName": "default-scheduler",
            "securityContext": {},
            "terminationGracePeriodSeconds": 30,
        },
    }


def _conditions(*types: str) -> list[dict[str, Any]]:
    return [
        {
            "type": kind,
            "status": "True",
            "lastTransitionTime": CREATED,
            "lastUpdateTime": CREATED,
            "reason": "Ok",
        }
        for kind in types
    ]


def _deployment_and_replicasets(index: int) -> Iterator[dict[str, Any]]:
    namespace = f"team-{index % NAMESPACES}"
    app = f"app-{index}"
    replicas = 1 + index % 5
    yield {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": _meta(
            app,
            namespace,
            _uid(1, index),
            "kubectl-client-side-apply",
            labels={"app": app},
            annotations={"deployment.kubernetes.io/revision": str(HISTORY)},
        ),
        "spec": {
            "replicas": replicas,
            "revisionHistoryLimit": HISTORY,
            "progressDeadlineSeconds": 600,
            "selector": {"matchLabels": {"app": app}},
            "strategy": {
                "type": "RollingUpdate",
                "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"},
            },
            "template": _template(app, HISTORY, index),
        },
        "status": {
            "observedGeneration": 3,
            "replicas": replicas,
            "readyReplicas": replicas,
            "availableReplicas": replicas,
            "updatedReplicas": replicas,
            "conditions": _conditions("Available", "Progressing"),
        },
    }
    for revision in range(1, HISTORY + 1):
        current = revision == HISTORY
        template = _template(app, revision, index)
        template_hash = f"{index:05x}{revision:05x}"
        template["metadata"]["labels"]["pod-template-hash"] = template_hash
        owner = {"apiVersion": "apps/v1", "kind": "Deployment", "name": app, "uid": _uid(1, index)}
        yield {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": _meta(
                f"{app}-{template_hash}",
                namespace,
                _uid(2, index * HISTORY + revision),
                "kube-controller-manager",
                labels=dict(template["metadata"]["labels"]),
                annotations={
                    "deployment.kubernetes.io/desired-replicas": str(replicas),
                    "deployment.kubernetes.io/max-replicas": str(replicas + 1),
                    "deployment.kubernetes.io/revision": str(revision),
                },
                ownerReferences=[{**owner, "blockOwnerDeletion": True, "controller": True}],
            ),
            "spec": {
                "replicas": replicas if current else 0,
                "selector": {"matchLabels": {"app": app, "pod-template-hash": template_hash}},
                "template": template,
            },
            "status": {
                "observedGeneration": 3,
                "replicas": replicas if current else 0,
                "fullyLabeledReplicas": 0,
            },
        }


def _others(deployments: int) -> Iterator[dict[str, Any]]:
    scale = max(1, deployments // 10)  # the shapes below for 2,000 Deployments: 200 StatefulSets...
    for index in range(scale):
        app = f"db-{index}"
        yield {
            "apiVersion": "apps/v1",
            "kind": "StatefulSet",
            "metadata": _meta(
                app, f"team-{index % NAMESPACES}", _uid(3, index), "kubectl", labels={"app": app}
            ),
            "spec": {
                "replicas": 3,
                "serviceName": app,
                "podManagementPolicy": "OrderedReady",
                "selector": {"matchLabels": {"app": app}},
                "template": _template(app, 1, index),
            },
            "status": {"replicas": 3, "readyReplicas": 3, "observedGeneration": 3},
        }
    for index in range(scale // 2):
        app = f"agent-{index}"
        yield {
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "metadata": _meta(app, "kube-system", _uid(4, index), "kubectl", labels={"app": app}),
            "spec": {"selector": {"matchLabels": {"app": app}}, "template": _template(app, 1, index)},
            "status": {"currentNumberScheduled": 200, "desiredNumberScheduled": 200, "numberReady": 200},
        }
    for index in range(scale // 2):
        name = f"report-{index}"
        namespace = f"team-{index % NAMESPACES}"
        job_spec = {"backoffLimit": 2, "template": _template(name, 1, index)}
        job_spec["template"]["spec"]["restartPolicy"] = "Never"
        yield {
            "apiVersion": "batch/v1",
            "kind": "CronJob",
            "metadata": _meta(name, namespace, _uid(5, index), "kubectl"),
            "spec": {
                "schedule": f"{index % 60} * * * *",
                "concurrencyPolicy": "Forbid",
                "jobTemplate": {"metadata": {"labels": {"cron": name}}, "spec": job_spec},
            },
            "status": {"lastScheduleTime": CREATED},
        }
        for run in range(5):
            job = f"{name}-{29_000_000 + run}"
            labels = {"job-name": job, "batch.kubernetes.io/job-name": job}
            template = _template(name, 1, index)
            template["metadata"]["labels"] = labels
            template["spec"]["restartPolicy"] = "Never"
            yield {
                "apiVersion": "batch/v1",
                "kind": "Job",
                "metadata": _meta(
                    job,
                    namespace,
                    _uid(6, index * 5 + run),
                    "kube-controller-manager",
                    labels=labels,
                    ownerReferences=[
                        {
                            "apiVersion": "batch/v1",
                            "kind": "CronJob",
                            "name": name,
                            "uid": _uid(5, index),
                            "controller": True,
                        }
                    ],
                ),
                "spec": {
                    "parallelism": 1,
                    "completions": 1,
                    "backoffLimit": 2,
                    "selector": {
                        "matchLabels": {"batch.kubernetes.io/controller-uid": _uid(6, index * 5 + run)}
                    },
                    "template": template,
                },
                "status": {"succeeded": 1, "conditions": _conditions("Complete")},
            }
    for index in range(scale * 5 // 2):
        app = f"app-{index}"
        yield {
            "apiVersion": "autoscaling/v2",
            "kind": "HorizontalPodAutoscaler",
            "metadata": _meta(app, f"team-{index % NAMESPACES}", _uid(7, index), "kubectl"),
            "spec": {
                "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": app},
                "minReplicas": 1,
                "maxReplicas": 10,
                "metrics": [
                    {
                        "type": "Resource",
                        "resource": {
                            "name": "cpu",
                            "target": {"type": "Utilization", "averageUtilization": 70},
                        },
                    }
                ],
            },
            "status": {
                "currentReplicas": 2,
                "desiredReplicas": 2,
                "currentMetrics": [
                    {
                        "type": "Resource",
                        "resource": {
                            "name": "cpu",
                            "current": {"averageUtilization": 40, "averageValue": "100m"},
                        },
                    }
                ],
                "conditions": _conditions("AbleToScale", "ScalingActive"),
            },
        }
    for index in range(scale * 5):
        yield {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": _meta(f"app-{index}-config", f"team-{index % NAMESPACES}", _uid(8, index), "kubectl"),
            "data": {f"setting-{i}": f"value-{i}" * 4 for i in range(8)},
        }


def _nodes(count: int) -> Iterator[dict[str, Any]]:
    for index in range(count):
        name = f"node-{index}"
        yield {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": name,
                "uid": _uid(9, index),
                "creationTimestamp": CREATED,
                "labels": {
                    "kubernetes.io/hostname": name,
                    "topology.kubernetes.io/zone": f"zone-{index % 3}",
                },
            },
            "spec": {"providerID": f"kwok://{name}"},
            "status": {
                "capacity": {"cpu": "16", "memory": "64Gi", "pods": "110"},
                "allocatable": {"cpu": "15800m", "memory": "62Gi", "pods": "110"},
                "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": CREATED}],
            },
        }


def items(deployments: int) -> Iterator[dict[str, Any]]:
    yield from _nodes(max(1, deployments // 10))
    for index in range(deployments):
        yield from _deployment_and_replicasets(index)
    yield from _others(deployments)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.workload_dump", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--format", choices=FORMATS, default="json")
    parser.add_argument("--out", required=True)
    parser.add_argument("--deployments", type=int, default=2_000)
    args = parser.parse_args(argv)
    print(write_list(Path(args.out), items(args.deployments), args.format))
    return 0


if __name__ == "__main__":
    sys.exit(main())
