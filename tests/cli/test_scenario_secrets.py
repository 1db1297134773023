"""`kubetide scenario from-cluster` exports no secret (issue 36, item 2).

Random dumps of every exported kind (and some it does not export: a Secret, a Service, another
ConfigMap) carry a unique marker (`zq<n>x`) in every string the simulator does not read: env
names and values, command lines, images, probes and their HTTP headers, lifecycle hooks, volume
sources and mounts, termination messages and paths, every status message and reason it does not
read, managedFields, annotations (keys and values) but the ones kubetide interprets, kubectl's
last-applied-configuration; and, at random, extra fields with marker keys and marker values
(nested) in every mapping that is not a free map of names (labels, selectors, resource amounts).
What the export keeps by design holds no marker: names (objects, namespaces, containers, volumes,
label keys and values, node names), amounts, enumerations, times, and the interpreted
annotations, which carry settings ("true", a cost, a duration).

The export must hold no marker at all, and with --keep-env exactly the env markers. It must also
load back into the same model objects as the dump (annotations but the interpreted ones aside,
and a template's digest of its whole spec): the allow-list drops nothing the simulator reads.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import re
from typing import Any

import pytest
import yaml
from cli_subcommand import subcommand
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from kubetide.cli.scenario import export_scenario
from kubetide.model import load_documents

MARKER = re.compile(r"zq\d+x")
T0 = "2026-03-10T12:00:00Z"
T1 = "2026-03-10T13:30:00Z"
GROUP = "kubetide.io/node-group"
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
# The annotations kubetide interprets (the test's own list, with values of the kind each takes).
POD_ANNOTATIONS = {
    "cluster-autoscaler.kubernetes.io/safe-to-evict": "false",
    "cluster-autoscaler.kubernetes.io/safe-to-evict-local-volumes": "cache",
    "karpenter.sh/do-not-disrupt": "true",
    "controller.kubernetes.io/pod-deletion-cost": "-5",
    "cluster-autoscaler.kubernetes.io/pod-scale-up-delay": "2m",
    "kubetide.io/usage": '{"cpu": "200m"}',
}
NODE_ANNOTATIONS = {
    "cluster-autoscaler.kubernetes.io/scale-down-disabled": "true",
    "delay-deletion.cluster-autoscaler.kubernetes.io/drain-hook": "true",
    "kubetide.io/scale-down-blocker": "NotSafeToEvictAnnotation",
}
DEPLOYMENT_ANNOTATIONS = {"kubetide.io/surge-before-evict": "true", "deployment.kubernetes.io/revision": "4"}
JOB_ANNOTATIONS = {"kubetide.io/run-duration": "5m"}
# Maps whose keys are names (kept whole by design): no extra field is planted in them.
FREE_MAPS = {"labels", "annotations", "nodeSelector", "matchLabels", "requests", "limits", "overhead"}
FREE_MAPS |= {"capacity", "allocatable", "data", "volumeAttributes"}
NAMES = ("web", "api", "db", "batch", "cache-1", "edge")


class Planter:
    """Unique markers, the env ones (what --keep-env keeps) noted apart."""

    def __init__(self) -> None:
        self.count = 0
        self.env: set[str] = set()

    def __call__(self, env: bool = False) -> str:
        self.count += 1
        marker = f"zq{self.count}x"
        if env:
            self.env.add(marker)
        return marker


def meta(p: Planter, name: str, namespace: str | None, labels: dict, annotations: dict, owner=None) -> dict:
    data: dict[str, Any] = {
        "name": name,
        "uid": f"uid-{name}",
        "labels": dict(labels),
        "annotations": {
            p(): p(),
            LAST_APPLIED: json.dumps({"kind": "Secret", "data": {"password": p()}}),
            **annotations,
        },
        "creationTimestamp": T0,
        "resourceVersion": p(),
        "generateName": p(),
        "finalizers": [p()],
        "managedFields": [{"manager": p(), "fieldsV1": {f"f:{p()}": {}}, "time": T0}],
    }
    if namespace is not None:
        data["namespace"] = namespace
    if owner is not None:
        data["ownerReferences"] = [
            {
                "apiVersion": p(),
                "kind": owner["kind"],
                "name": owner["metadata"]["name"],
                "uid": owner["metadata"]["uid"],
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ]
    return data


def container(draw, p: Planter, name: str, init: bool = False) -> dict:
    cpu = draw(st.integers(1, 900))
    memory = draw(st.integers(1, 900))
    probe_action = draw(st.sampled_from(["exec", "httpGet", "tcpSocket", "grpc"]))
    actions = {
        "exec": lambda: {"exec": {"command": ["sh", "-c", p()]}},
        "httpGet": lambda: {
            "httpGet": {
                "path": p(),
                "port": p(),
                "host": p(),
                "scheme": "HTTPS",
                "httpHeaders": [
                    {"name": "Authorization", "value": f"Bearer {p()}"},
                    {"name": p(), "value": p()},
                ],
            }
        },
        "tcpSocket": lambda: {"tcpSocket": {"port": p(), "host": p()}},
        "grpc": lambda: {"grpc": {"port": 9000, "service": p()}},
    }
    data: dict[str, Any] = {
        "name": name,
        "image": p(),
        "imagePullPolicy": "Always",
        "command": [p(), f"--password={p()}"],
        "args": [p()],
        "workingDir": p(),
        "env": [
            {"name": p(env=True), "value": p(env=True)},
            {"name": p(env=True), "valueFrom": {"secretKeyRef": {"name": p(env=True), "key": p(env=True)}}},
            {"name": p(env=True), "valueFrom": {"fieldRef": {"fieldPath": p(env=True)}}},
        ],
        "envFrom": [{"secretRef": {"name": p()}, "prefix": p()}],
        "resources": {
            "requests": {"cpu": f"{cpu}m", "memory": f"{memory}Mi"},
            "limits": {"memory": f"{memory}Mi"},
        },
        "ports": [{"containerPort": 8080, "name": p(), "protocol": "TCP"}],
        "livenessProbe": {**actions[probe_action](), "initialDelaySeconds": 3, "periodSeconds": 10},
        "readinessProbe": actions["httpGet"](),
        "startupProbe": actions["exec"](),
        "lifecycle": {"postStart": actions["exec"](), "preStop": actions[probe_action]()},
        "terminationMessagePath": p(),
        "terminationMessagePolicy": "FallbackToLogsOnError",
        "volumeMounts": [{"name": "cache", "mountPath": p(), "subPath": p()}],
        "securityContext": {"seLinuxOptions": {"user": p(), "role": p()}, "runAsUser": 1000},
        "stdin": False,
    }
    if draw(st.booleans()):
        data["ports"].append(
            {"containerPort": 9090, "hostPort": draw(st.integers(1, 65535)), "protocol": "UDP"}
        )
    if init and draw(st.booleans()):
        data["restartPolicy"] = "Always"  # a sidecar
    return data


def pod_spec(draw, p: Planter, labels: dict) -> dict:
    app = labels["app"]
    spec: dict[str, Any] = {
        "containers": [container(draw, p, app)],
        "volumes": [
            {
                "name": "cache",
                "emptyDir": {"medium": draw(st.sampled_from(["", "Memory"])), "sizeLimit": "1Gi"},
            },
            {"name": "creds", "secret": {"secretName": p(), "items": [{"key": p(), "path": p()}]}},
            {"name": "settings", "configMap": {"name": p(), "items": [{"key": p(), "path": p()}]}},
            {"name": "host", "hostPath": {"path": p(), "type": "Directory"}},
            {"name": "data", "persistentVolumeClaim": {"claimName": p()}},
            {
                "name": "token",
                "projected": {"sources": [{"serviceAccountToken": {"audience": p(), "path": p()}}]},
            },
            {"name": "csi", "csi": {"driver": p(), "volumeAttributes": {p(): p()}}},
        ],
        "serviceAccountName": p(),
        "imagePullSecrets": [{"name": p()}],
        "hostname": p(),
        "subdomain": p(),
        "hostAliases": [{"ip": p(), "hostnames": [p()]}],
        "dnsConfig": {"nameservers": [p()], "searches": [p()], "options": [{"name": p(), "value": p()}]},
        "readinessGates": [{"conditionType": p()}],
        "runtimeClassName": p(),
        "restartPolicy": "Always",
        "dnsPolicy": "ClusterFirst",
        "terminationGracePeriodSeconds": draw(st.integers(0, 600)),
        "schedulerName": "default-scheduler",
        "priorityClassName": "important",
        "tolerations": [{"key": "workload", "operator": "Equal", "value": "batch", "effect": "NoSchedule"}],
    }
    if draw(st.booleans()):
        spec["initContainers"] = [container(draw, p, f"{app}-init", init=True)]
    if draw(st.booleans()):
        spec["nodeSelector"] = {GROUP: "small"}
    if draw(st.booleans()):
        spec.update(overhead={"cpu": "10m"}, hostNetwork=True, priority=draw(st.integers(-5, 5)))
    if draw(st.booleans()):
        selector = {"matchLabels": {"app": app}, "matchExpressions": [{"key": "tier", "operator": "Exists"}]}
        spec["affinity"] = {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": GROUP, "operator": "In", "values": ["small"]}]},
                        {
                            "matchFields": [
                                {"key": "metadata.name", "operator": "NotIn", "values": ["node-2"]}
                            ]
                        },
                    ]
                },
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 5, "preference": {"matchExpressions": [{"key": "zone", "operator": "Exists"}]}}
                ],
            },
            "podAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "labelSelector": selector,
                        "namespaces": ["shop"],
                        "namespaceSelector": {"matchLabels": {"team": "shop"}},
                        "topologyKey": "zone",
                        "matchLabelKeys": ["tier"],
                    }
                ]
            },
            "podAntiAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "weight": 50,
                        "podAffinityTerm": {
                            "labelSelector": selector,
                            "topologyKey": "kubernetes.io/hostname",
                        },
                    }
                ]
            },
        }
        spec["topologySpreadConstraints"] = [
            {
                "maxSkew": 1,
                "topologyKey": "topology.kubernetes.io/zone",
                "whenUnsatisfiable": "ScheduleAnyway",
                "labelSelector": selector,
            },
            {
                "maxSkew": 2,
                "topologyKey": "zone",
                "whenUnsatisfiable": "DoNotSchedule",
                "minDomains": 2,
                "nodeAffinityPolicy": "Ignore",
                "nodeTaintsPolicy": "Honor",
                "matchLabelKeys": ["tier"],
            },
        ]
    return spec


def template(draw, p: Planter, labels: dict, annotations: dict) -> dict:
    return {
        "metadata": {"labels": dict(labels), "annotations": {p(): p(), LAST_APPLIED: p(), **annotations}},
        "spec": pod_spec(draw, p, labels),
    }


def message_conditions(p: Planter, *types: str) -> list[dict]:
    return [
        {"type": kind, "status": "True", "lastTransitionTime": T0, "reason": p(), "message": p()}
        for kind in types
    ]


def container_status(draw, p: Planter, name: str) -> dict:
    return {
        "name": name,
        "restartCount": draw(st.integers(0, 9)),
        "image": p(),
        "imageID": p(),
        "containerID": p(),
        "ready": True,
        "state": {"running": {"startedAt": T0}},
        "lastState": {
            "terminated": {"exitCode": 1, "reason": p(), "message": p(), "startedAt": T0, "finishedAt": T0}
        },
    }


def pod(draw, p: Planter, name: str, spec_from: dict, owner=None) -> dict:
    spec = copy.deepcopy(spec_from["spec"])
    spec["nodeName"] = "node-1"
    pending = draw(st.booleans())
    nominated: dict[str, str] = {}
    scheduled: dict[str, Any] = {
        "type": "PodScheduled",
        "status": "True",
        "lastTransitionTime": T0,
        "message": p(),
    }
    if pending:
        spec.pop("nodeName")
        scheduled.update(status="False", reason="Unschedulable")
        nominated = {"nominatedNodeName": "node-1"}
    ready = {"type": "Ready", "status": "True", "lastTransitionTime": T1, "reason": p(), "message": p()}
    status = {
        "phase": "Pending" if pending else "Running",
        "conditions": [ready, scheduled, *message_conditions(p, "ContainersReady", p())],
        "message": p(),
        "reason": p(),
        "hostIP": p(),
        "podIP": p(),
        "podIPs": [{"ip": p()}],
        "startTime": T0,
        "qosClass": "Burstable",
        **nominated,
        "containerStatuses": [container_status(draw, p, c["name"]) for c in spec["containers"]],
        "initContainerStatuses": [
            container_status(draw, p, c["name"]) for c in spec.get("initContainers", [])
        ],
    }
    annotations = {**spec_from["metadata"]["annotations"], **draw_annotations(draw, POD_ANNOTATIONS)}
    annotations = {k: v for k, v in annotations.items() if not MARKER.search(k) and k != LAST_APPLIED}
    metadata = meta(p, name, "shop", spec_from["metadata"]["labels"], annotations, owner)
    if draw(st.booleans()):
        metadata["deletionTimestamp"] = T1
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": spec,
        "status": status,
    }


def draw_annotations(draw, choices: dict[str, str]) -> dict[str, str]:
    keys = draw(st.lists(st.sampled_from(sorted(choices)), unique=True))
    return {key: choices[key] for key in keys}


def workload(
    draw, p: Planter, kind: str, name: str, annotations: dict, owner=None, pods=None, **spec: Any
) -> dict:
    """A workload of `kind`; `pods`, a template to take (a ReplicaSet's, from its Deployment)."""
    labels = {"app": name, "tier": draw(st.sampled_from(NAMES))}
    if pods is None:
        pods = template(draw, p, labels, draw_annotations(draw, {**POD_ANNOTATIONS, **JOB_ANNOTATIONS}))
    return {
        "apiVersion": "batch/v1" if kind == "Job" else "apps/v1",
        "kind": kind,
        "metadata": {
            **meta(p, name, "shop", labels, annotations, owner),
            "generation": 2,
        },
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": pods,
            "revisionHistoryLimit": 10,
            **spec,
        },
        "status": {
            "replicas": 2,
            "readyReplicas": 1,
            "observedGeneration": 2,
            "updatedReplicas": 2,
            "availableReplicas": 1,
            "collisionCount": 0,
            "conditions": message_conditions(p, "Available", "Progressing"),
        },
    }


@st.composite
def dumps(draw) -> tuple[dict, Planter]:
    p = Planter()
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": meta(
            p,
            "node-1",
            None,
            {GROUP: "small", "zone": "a", "spare": None},
            draw_annotations(draw, NODE_ANNOTATIONS),
        ),
        "spec": {
            "taints": [
                {"key": "workload", "value": "batch", "effect": "NoSchedule"},
                {"key": "node.kubernetes.io/not-ready", "effect": "NoExecute", "timeAdded": T1},
            ],
            "providerID": "kwok://node-1",
            "podCIDR": p(),
            "podCIDRs": [p()],
            "unschedulable": draw(st.booleans()),
        },
        "status": {
            "capacity": {"cpu": "8", "memory": "32Gi", "pods": "110"},
            "allocatable": {"cpu": "7900m", "memory": "30Gi", "pods": "110"},
            "conditions": [
                {"type": "Ready", "status": "True", "lastTransitionTime": T0, "reason": p(), "message": p()},
                *message_conditions(p, "MemoryPressure", p()),
                {"type": "DiskPressure", "status": "False", "lastTransitionTime": T0, "message": p()},
                {"type": "NetworkUnavailable", "status": "False", "lastTransitionTime": T1, "reason": p()},
            ],
            "addresses": [{"type": "InternalIP", "address": p()}, {"type": "Hostname", "address": p()}],
            "nodeInfo": {"kubeletVersion": p(), "machineID": p(), "bootID": p(), "osImage": p()},
            "images": [{"names": [p(), p()], "sizeBytes": 100}],
            "volumesAttached": [{"name": p(), "devicePath": p()}],
            "volumesInUse": [p()],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
        },
    }
    deployment_annotations = draw_annotations(draw, DEPLOYMENT_ANNOTATIONS)
    deployment = workload(
        draw,
        p,
        "Deployment",
        "web",
        deployment_annotations,
        replicas=draw(st.integers(0, 5)),
        strategy={"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": "25%"}},
        minReadySeconds=draw(st.integers(0, 30)),
        progressDeadlineSeconds=600,
    )
    pods = copy.deepcopy(deployment["spec"]["template"])
    pods["metadata"]["labels"]["pod-template-hash"] = "5d8f"
    replicaset = workload(
        draw, p, "ReplicaSet", "web-5d8f", deployment_annotations, deployment, pods, replicas=2
    )
    replicaset["spec"]["selector"] = {"matchLabels": {"app": "web", "pod-template-hash": "5d8f"}}
    statefulset = workload(
        draw,
        p,
        "StatefulSet",
        "db",
        {},
        replicas=1,
        serviceName=p(),
        podManagementPolicy="Parallel",
        volumeClaimTemplates=[{"metadata": {"name": p()}, "spec": {"storageClassName": p()}}],
        updateStrategy={"type": "RollingUpdate", "rollingUpdate": {"partition": 0}},
    )
    daemonset = workload(draw, p, "DaemonSet", "agent", {}, updateStrategy={"type": "OnDelete"})
    job = workload(
        draw,
        p,
        "Job",
        "report",
        JOB_ANNOTATIONS,
        parallelism=2,
        completions=draw(st.integers(1, 4)),
        backoffLimit=3,
        podFailurePolicy={
            "rules": [{"action": "Ignore", "onExitCodes": {"containerName": p(), "values": [1]}}]
        },
    )
    job["status"].update(active=1, startTime=T0, uncountedTerminatedPods={"failed": [p()]})
    job["spec"]["template"]["spec"]["restartPolicy"] = "OnFailure"  # a Job's pods end (API validation)
    cron_labels = {"app": "nightly"}
    cronjob = {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": meta(p, "nightly", "shop", cron_labels, {}),
        "spec": {
            "schedule": draw(st.sampled_from(["*/5 * * * *", "@hourly", "0 3 * * 1"])),
            "timeZone": "Europe/Paris",
            "concurrencyPolicy": "Forbid",
            "suspend": draw(st.booleans()),
            "successfulJobsHistoryLimit": 1,
            "failedJobsHistoryLimit": 2,
            "startingDeadlineSeconds": draw(st.integers(0, 300)),
            "jobTemplate": {
                "metadata": {
                    "labels": cron_labels,
                    "annotations": {p(): p(), LAST_APPLIED: p(), **draw_annotations(draw, JOB_ANNOTATIONS)},
                },
                "spec": {
                    "completions": 1,
                    "backoffLimit": p(),
                    "template": template(draw, p, cron_labels, draw_annotations(draw, POD_ANNOTATIONS)),
                },
            },
        },
        "status": {
            "lastScheduleTime": T0,
            "lastSuccessfulTime": T0,
            "active": [{"kind": "Job", "name": p(), "uid": p()}],
        },
    }
    cronjob["spec"]["jobTemplate"]["spec"]["template"]["spec"]["restartPolicy"] = "Never"
    hpa = {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": meta(p, "web", "shop", {}, {}),
        "spec": {
            "scaleTargetRef": {"apiVersion": p(), "kind": "Deployment", "name": "web"},
            "minReplicas": 1,
            "maxReplicas": draw(st.integers(2, 20)),
            "metrics": [
                {
                    "type": "Resource",
                    "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 60}},
                },
                {
                    "type": "Resource",
                    "resource": {"name": "memory", "target": {"type": "AverageValue", "averageValue": "1Gi"}},
                },
                {
                    "type": "External",
                    "external": {
                        # the name is kept (the API server requires one), its selector is not
                        "metric": {"name": "queue_depth", "selector": {"matchLabels": {p(): p()}}},
                        "target": {"type": "Value", "value": "10"},
                    },
                },
            ],
            "behavior": {
                "scaleUp": {"selectPolicy": "Min", "tolerance": "50m", "stabilizationWindowSeconds": 0},
                "scaleDown": {
                    "stabilizationWindowSeconds": 60,
                    "policies": [{"type": "Pods", "value": 1, "periodSeconds": 60}],
                },
            },
        },
        "status": {
            "currentReplicas": 2,
            "desiredReplicas": 2,
            "lastScaleTime": T0,
            "currentMetrics": [
                {
                    "type": "Resource",
                    "resource": {
                        "name": "cpu",
                        "current": {"averageUtilization": 40, "averageValue": "100m"},
                    },
                },
                {"type": "External", "external": {"metric": {"name": p()}, "current": {"value": "3"}}},
            ],
            "conditions": message_conditions(p, "AbleToScale", "ScalingActive"),
        },
    }
    pdb = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": meta(p, "web", "shop", {}, {}),
        "spec": {
            "minAvailable": draw(st.sampled_from([1, "50%"])),
            "selector": {"matchLabels": {"app": "web"}},
            "unhealthyPodEvictionPolicy": "AlwaysAllow",
        },
        "status": {
            "disruptionsAllowed": 1,
            "currentHealthy": 2,
            "desiredHealthy": 1,
            "expectedPods": 2,
            "observedGeneration": 1,
            "disruptedPods": {p(): T0},
            "conditions": message_conditions(p, "DisruptionAllowed"),
        },
    }
    priority_class = {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": meta(p, "important", None, {}, {}),
        "value": draw(st.integers(-100, 1_000_000)),
        "description": p(),
        "globalDefault": False,
        "preemptionPolicy": "Never",
    }
    namespace = {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": meta(p, "shop", None, {"team": "shop"}, {}),
        "spec": {"finalizers": [p()]},
        "status": {"phase": "Active", "conditions": message_conditions(p, p())},
    }
    priorities = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": meta(p, "cluster-autoscaler-priority-expander", "kube-system", {}, {}),
        "data": {"priorities": "10:\n  - .*\n", p(): p()},
        "binaryData": {p(): p()},
    }
    not_exported = [
        {"apiVersion": "v1", "kind": "Secret", "metadata": meta(p, "db", "shop", {}, {}), "data": {p(): p()}},
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": meta(p, "app", "shop", {}, {}),
            "data": {p(): p()},
        },
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": meta(p, "web", "shop", {}, {}),
            "spec": {"clusterIP": p()},
        },
    ]
    pods = [
        pod(draw, p, "web-5d8f-a", replicaset["spec"]["template"], replicaset),
        pod(draw, p, "db-0", statefulset["spec"]["template"], statefulset),
        pod(draw, p, "agent-x", daemonset["spec"]["template"], daemonset),
        pod(draw, p, "report-1", job["spec"]["template"], job),
        pod(
            draw,
            p,
            "bare",
            {
                "metadata": {"labels": {"app": "bare"}, "annotations": {}},
                "spec": pod_spec(draw, p, {"app": "bare"}),
            },
        ),
    ]
    items = [node, deployment, replicaset, statefulset, daemonset, job, cronjob, hpa, pdb, priority_class]
    items += [namespace, priorities, *not_exported, *pods]
    for item in items:
        plant_extra_fields(draw, p, item)
    return {"apiVersion": "v1", "kind": "List", "items": items}, p


def plant_extra_fields(draw, p: Planter, obj: dict) -> None:
    """Fields the simulator cannot know (a newer API's, a tool's), with marker keys and values,
    in random mappings of the object at every depth; free maps of names are left alone."""
    structs = []
    pending: list[Any] = [obj]
    while pending:
        value = pending.pop()
        if isinstance(value, list):
            pending.extend(value)
        elif isinstance(value, dict):
            structs.append(value)
            pending.extend(v for k, v in value.items() if k not in FREE_MAPS)
    for struct in structs:
        if draw(st.integers(0, 3)) == 0:
            shape = draw(st.sampled_from(["text", "list", "nested"]))
            if shape == "text":
                struct[p()] = p()
            elif shape == "list":
                struct[p()] = [p(), {p(): p()}]
            else:
                struct[p()] = {p(): {p(): [p(), p()]}}


# No shrinking: a dump is thousands of fields, and a failure names the exported lines that leak.
SETTINGS = settings(
    max_examples=15,
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@SETTINGS
@given(dumps())
def test_no_marker_is_exported_and_keep_env_adds_the_env_ones_only(generated):
    dump, planted = generated
    text, _ = export_scenario([copy.deepcopy(dump)], "dump.yaml", name="tonight")
    assert MARKER.search(text) is None, leaks(text)
    assert len(set(MARKER.findall(json.dumps(dump)))) == planted.count  # the dump carries them all

    kept, _ = export_scenario([copy.deepcopy(dump)], "dump.yaml", name="tonight", keep_env=True)
    assert set(MARKER.findall(kept)) == planted.env, leaks(kept, planted.env)


def leaks(text: str, allowed: frozenset[str] | set[str] = frozenset()) -> str:
    """The exported lines with a marker not allowed, for the failure message."""
    lines = [line for line in text.splitlines() if set(MARKER.findall(line)) - allowed]
    return "leaked:\n" + "\n".join(lines[:20])


@SETTINGS
@given(dumps())
def test_the_export_loads_into_the_same_model_as_the_dump(generated):
    dump, _ = generated
    text, _ = export_scenario([copy.deepcopy(dump)], "dump.yaml", name="tonight")
    objects = yaml.safe_load(text)["spec"]["objects"]
    source = load_documents([dump], "dump.yaml")
    exported = load_documents([{"apiVersion": "v1", "kind": "List", "items": objects}], "exported.yaml")

    pairs = [
        (exported.nodes, source.nodes),
        (exported.pods, source.pods),
        (exported.workloads, source.workloads),
        (exported.pdbs, source.pdbs),
        (exported.priority_classes, source.priority_classes),
        (exported.namespaces, source.namespaces),
        *((exported.other[kind], source.other[kind]) for kind in ("HorizontalPodAutoscaler", "CronJob")),
    ]
    for kept, dumped in pairs:
        assert [digestless(o) for o in kept] == [without_markers(o) for o in dumped]
    assert [(c.meta.name, c.data) for c in exported.configmaps] == [
        ("cluster-autoscaler-priority-expander", {"priorities": "10:\n  - .*\n"})
    ]


def without_markers(obj: Any) -> Any:
    """A model object as the export should load: the annotations kubetide interprets only (the
    generator's others have marker keys, or are kubectl's last-applied)."""
    obj = digestless(obj)
    if hasattr(obj, "meta"):
        kept = {k: v for k, v in obj.meta.annotations.items() if not MARKER.search(k) and k != LAST_APPLIED}
        obj = dataclasses.replace(obj, meta=dataclasses.replace(obj.meta, annotations=kept))
    if hasattr(obj, "template"):
        prototype = without_markers(obj.template.prototype)
        obj = dataclasses.replace(obj, template=dataclasses.replace(obj.template, prototype=prototype))
    if hasattr(obj, "job"):
        obj = dataclasses.replace(obj, job=without_markers(obj.job))
    return obj


def digestless(obj: Any) -> Any:
    """The object with its pod template's digest of the whole spec left out (the export's spec
    is what the simulator reads, so its digest differs; a Deployment's and its ReplicaSets'
    still agree, which tests/sim/test_scenario_from_cluster.py runs)."""
    if hasattr(obj, "template"):
        obj = dataclasses.replace(obj, template=dataclasses.replace(obj.template, spec_hash="", spec_text=""))
    if hasattr(obj, "job"):
        obj = dataclasses.replace(obj, job=digestless(obj.job))
    return obj


# -- the leaks issue 36 found, one by one ---------------------------------------------------------

NODE = {
    "apiVersion": "v1",
    "kind": "Node",
    "metadata": {"name": "n1", "labels": {GROUP: "small"}},
    "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}},
}
APP = {"name": "app", "image": "app:1", "resources": {"requests": {"cpu": "100m"}}}
CRONJOB = {
    "apiVersion": "batch/v1",
    "kind": "CronJob",
    "metadata": {"name": "nightly", "namespace": "default"},
    "spec": {
        "schedule": "0 3 * * *",
        "jobTemplate": {"spec": {"template": {"spec": {"containers": [APP], "restartPolicy": "Never"}}}},
    },
}
DEPLOYMENT = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "web", "namespace": "default"},
    "spec": {
        "replicas": 1,
        "selector": {"matchLabels": {"app": "web"}},
        "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [APP]}},
    },
}
POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "api", "namespace": "default"},
    "spec": {"nodeName": "n1", "containers": [APP]},
    "status": {"phase": "Running", "containerStatuses": [{"name": "app", "restartCount": 1}]},
}


def cronjob_container(dump):
    return dump["CronJob"]["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]


def template_container(dump):
    return dump["Deployment"]["spec"]["template"]["spec"]["containers"][0]


LEAKS = {
    "CronJob env value": lambda d: cronjob_container(d).update(env=[{"name": "TOKEN", "value": "s3cr3t"}]),
    "CronJob args": lambda d: cronjob_container(d).update(args=["--token=s3cr3t"]),
    "CronJob command": lambda d: cronjob_container(d).update(command=["/run", "--password", "s3cr3t"]),
    "CronJob probe": lambda d: cronjob_container(d).update(livenessProbe={"exec": {"command": ["s3cr3t"]}}),
    "probe exec command": lambda d: template_container(d).update(
        readinessProbe={"exec": {"command": ["curl", "-u", "admin:s3cr3t", "localhost"]}}
    ),
    "probe HTTP header": lambda d: template_container(d).update(
        livenessProbe={
            "httpGet": {
                "path": "/healthz",
                "port": 80,
                "httpHeaders": [{"name": "Authorization", "value": "Bearer s3cr3t"}],
            }
        }
    ),
    "lifecycle hook": lambda d: template_container(d).update(
        lifecycle={"preStop": {"exec": {"command": ["sh", "-c", "logout --key s3cr3t"]}}}
    ),
    "last-applied-configuration in a pod template": lambda d: d["Deployment"]["spec"]["template"][
        "metadata"
    ].update(annotations={LAST_APPLIED: '{"env": [{"name": "KEY", "value": "s3cr3t"}]}'}),
    "termination message": lambda d: d["Pod"]["status"]["containerStatuses"][0].update(
        lastState={"terminated": {"exitCode": 1, "message": "connect: password s3cr3t rejected"}}
    ),
    "custom annotation value": lambda d: d["Pod"]["metadata"].update(
        annotations={"example.com/token": "s3cr3t"}
    ),
    "custom annotation key": lambda d: d["Pod"]["metadata"].update(annotations={"s3cr3t.example.com/x": "1"}),
    "a volume's secret name": lambda d: d["Pod"]["spec"].update(
        volumes=[{"name": "v", "secret": {"secretName": "s3cr3t"}}]
    ),
}


@pytest.mark.parametrize("leak", list(LEAKS))
def test_a_secret_issue_36_found_exported_is_left_out(kubetide, tmp_path, leak):
    dump = {
        kind: copy.deepcopy(obj)
        for kind, obj in {"CronJob": CRONJOB, "Deployment": DEPLOYMENT, "Pod": POD}.items()
    }
    LEAKS[leak](dump)
    path = tmp_path / "dump.yaml"
    path.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": [NODE, *dump.values()]}))
    assert "s3cr3t" in path.read_text()
    for flags in ((), ("--keep-env",)):
        out = tmp_path / "scenario.yaml"
        code, _, err = kubetide("from-cluster", path, "--out", out, "--force", *flags)
        assert code == 0, err
        kept = leak == "CronJob env value" and flags  # --keep-env keeps env values, nothing else
        assert ("s3cr3t" in out.read_text()) == bool(kept), flags


@pytest.fixture
def kubetide(monkeypatch, capsys):
    return subcommand("scenario", monkeypatch, capsys)
