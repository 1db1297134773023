"""A realistic cluster dump, as `kubectl get nodes,pods,pdb,priorityclasses,deploy,rs,sts,ds,jobs,
svc,cronjobs -A -o yaml` prints it from an EKS cluster: full metadata (UIDs, resourceVersions,
managedFields, ownerReferences), statuses, and what a simulation must not duplicate.

    python tests/sim/realistic_dump.py [SCALE] > cluster-dump.yaml

Three managed node groups (eks.amazonaws.com/nodegroup): general (6 x m5.xlarge), memory
(3 x r5.xlarge) and batch_spot (2 x c5.2xlarge, tainted; its name is not a valid scenario name),
plus one self-managed node in no group. Workloads: Deployments web (12, with the previous
revision's ReplicaSet scaled to 0), api (8), worker (3) and kube-system/coredns (2); StatefulSet
db (3, on memory); DaemonSets node-exporter and kube-proxy on every node; Job report (2 pods
running on batch_spot) and Job nightly-export (complete, its Succeeded pod still there); a bare
pod; PDBs for web, api, db and coredns; a PriorityClass; web's HorizontalPodAutoscaler (settled
within its tolerance) and the CronJob nightly-export (last run an hour ago); a Service (a kind the
simulator does not model). Every general node is more than half used, so nothing is removable
until the load drops.
"""

from __future__ import annotations

import copy
import hashlib
import sys
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

TAKEN_AT = datetime(2026, 3, 10, 22, 0, 0, tzinfo=UTC)
REGION = "us-east-1"
ZONES = ("us-east-1a", "us-east-1b", "us-east-1c")
GROUP_LABEL = "eks.amazonaws.com/nodegroup"
# name, instance type, cpu cores, memory GiB, max pods, nodes, taints
GROUPS = (
    ("general", "m5.xlarge", 4, 16, 58, 6, ()),
    ("memory", "r5.xlarge", 4, 32, 58, 3, ()),
    (
        "batch_spot",
        "c5.2xlarge",
        8,
        16,
        58,
        2,
        ({"key": "workload", "value": "batch", "effect": "NoSchedule"},),
    ),
)
PRIORITIES = {
    "system-node-critical": 2000001000,
    "system-cluster-critical": 2000000000,
    "shop-critical": 100000,
}


def ts(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def ago(**delta: float) -> str:
    return ts(TAKEN_AT - timedelta(**delta))


def uid(*parts: str) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, "/".join(parts)))


def digits(text: str, n: int = 10) -> str:
    return hashlib.sha1(text.encode()).hexdigest()[:n]


class Dump:
    def __init__(self, scale: int = 1) -> None:
        self.scale = scale
        self.items: list[dict[str, Any]] = []
        self.version = 480_000
        self.nodes: dict[str, list[str]] = {}  # group -> node names
        self.used: dict[str, int] = {}  # node -> cpu millicores requested

    def resource_version(self) -> str:
        self.version += 7
        return str(self.version)

    def meta(self, kind: str, name: str, namespace: str | None, created: str, manager: str, **extra: Any):
        meta: dict[str, Any] = {
            "name": name,
            **({"namespace": namespace} if namespace else {}),
            "uid": uid(kind, namespace or "", name),
            "resourceVersion": self.resource_version(),
            "creationTimestamp": created,
            **extra,
            "managedFields": [
                {
                    "manager": manager,
                    "operation": "Update",
                    "apiVersion": "v1" if kind in ("Pod", "Node", "Service") else "apps/v1",
                    "time": created,
                    "fieldsType": "FieldsV1",
                    "fieldsV1": {"f:metadata": {"f:labels": {".": {}}}, "f:spec": {}},
                },
                {
                    "manager": manager,
                    "operation": "Update",
                    "apiVersion": "v1" if kind in ("Pod", "Node", "Service") else "apps/v1",
                    "time": ago(minutes=2),
                    "fieldsType": "FieldsV1",
                    "fieldsV1": {"f:status": {"f:conditions": {}}},
                    "subresource": "status",
                },
            ],
        }
        return meta

    # -- nodes ---------------------------------------------------------------------------------
    def add_nodes(self) -> None:
        index = 0
        for group, instance_type, cores, memory_gi, max_pods, count, taints in GROUPS:
            for i in range(count * self.scale):
                index += 1
                zone = ZONES[i % len(ZONES)]
                name = f"ip-10-{index // 250}-{index % 250}-{100 + i % 150}.ec2.internal"
                labels = {
                    "beta.kubernetes.io/arch": "amd64",
                    "beta.kubernetes.io/instance-type": instance_type,
                    "beta.kubernetes.io/os": "linux",
                    "eks.amazonaws.com/capacityType": "SPOT" if "spot" in group else "ON_DEMAND",
                    GROUP_LABEL: group,
                    "eks.amazonaws.com/nodegroup-image": "ami-0abcdef1234567890",
                    "eks.amazonaws.com/sourceLaunchTemplateId": f"lt-{digits(group, 17)}",
                    "failure-domain.beta.kubernetes.io/region": REGION,
                    "failure-domain.beta.kubernetes.io/zone": zone,
                    "k8s.io/cloud-provider-aws": digits("cluster", 32),
                    "kubernetes.io/arch": "amd64",
                    "kubernetes.io/hostname": name,
                    "kubernetes.io/os": "linux",
                    "node.kubernetes.io/instance-type": instance_type,
                    "topology.k8s.aws/zone-id": f"use1-az{i % 3 + 1}",
                    "topology.kubernetes.io/region": REGION,
                    "topology.kubernetes.io/zone": zone,
                }
                self.add_node(name, labels, zone, cores, memory_gi, max_pods, taints, days=3 + index % 5)
                self.nodes.setdefault(group, []).append(name)
        # A self-managed node in no node group: kept, never autoscaled.
        labels = {
            "kubernetes.io/arch": "amd64",
            "kubernetes.io/hostname": "ip-10-0-99-9.ec2.internal",
            "kubernetes.io/os": "linux",
            "node.kubernetes.io/instance-type": "t3.large",
            "topology.kubernetes.io/zone": ZONES[0],
        }
        self.add_node("ip-10-0-99-9.ec2.internal", labels, ZONES[0], 2, 8, 35, (), days=40)
        self.nodes["none"] = ["ip-10-0-99-9.ec2.internal"]

    def add_node(self, name, labels, zone, cores, memory_gi, max_pods, taints, days) -> None:
        created = ago(days=days, minutes=17)
        capacity = {
            "cpu": str(cores),
            "ephemeral-storage": "83873772Ki",
            "hugepages-1Gi": "0",
            "hugepages-2Mi": "0",
            "memory": f"{memory_gi * 1024 * 1024 - 200_000}Ki",
            "pods": str(max_pods),
        }
        allocatable = {
            **capacity,
            "cpu": f"{cores * 1000 - 80}m",
            "ephemeral-storage": "76224326324",
            "memory": f"{memory_gi * 1024 * 1024 - 200_000 - 563_000}Ki",
        }
        ready_since = ago(days=days, minutes=16)
        self.items.append(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": self.meta(
                    "Node",
                    name,
                    None,
                    created,
                    "kubelet",
                    labels=labels,
                    annotations={
                        "alpha.kubernetes.io/provided-node-ip": "10.0.0.1",
                        "node.alpha.kubernetes.io/ttl": "0",
                        "volumes.kubernetes.io/controller-managed-attach-detach": "true",
                    },
                ),
                "spec": {
                    "providerID": f"aws:///{zone}/i-0{digits(name, 16)}",
                    **({"taints": [dict(t) for t in taints]} if taints else {}),
                },
                "status": {
                    "addresses": [
                        {"type": "InternalIP", "address": "10.0.0.1"},
                        {"type": "Hostname", "address": name},
                        {"type": "InternalDNS", "address": name},
                    ],
                    "allocatable": allocatable,
                    "capacity": capacity,
                    "conditions": [
                        *(
                            {
                                "type": kind,
                                "status": "False",
                                "lastHeartbeatTime": ago(seconds=40),
                                "lastTransitionTime": ready_since,
                                "reason": f"KubeletHasNo{kind}"
                                if kind != "PIDPressure"
                                else "KubeletHasSufficientPID",
                                "message": "ok",
                            }
                            for kind in ("MemoryPressure", "DiskPressure", "PIDPressure")
                        ),
                        {
                            "type": "Ready",
                            "status": "True",
                            "lastHeartbeatTime": ago(seconds=40),
                            "lastTransitionTime": ready_since,
                            "reason": "KubeletReady",
                            "message": "kubelet is posting ready status",
                        },
                    ],
                    "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
                    "images": [
                        {"names": ["public.ecr.aws/eks-distro/kubernetes/pause:3.9"], "sizeBytes": 299_000}
                    ],
                    "nodeInfo": {
                        "architecture": "amd64",
                        "containerRuntimeVersion": "containerd://1.7.11",
                        "kernelVersion": "5.10.205-195.807.amzn2.x86_64",
                        "kubeProxyVersion": "v1.29.0-eks-5e0fdde",
                        "kubeletVersion": "v1.29.0-eks-5e0fdde",
                        "operatingSystem": "linux",
                        "osImage": "Amazon Linux 2",
                    },
                },
            }
        )
        self.used[name] = 0

    # -- workloads -------------------------------------------------------------------------------
    def template(self, app: str, image: str, cpu: str, memory: str, **spec: Any) -> dict[str, Any]:
        return {
            "metadata": {"labels": {"app": app}, "annotations": {"prometheus.io/scrape": "true"}},
            "spec": {
                "containers": [
                    {
                        "name": app,
                        "image": image,
                        "imagePullPolicy": "IfNotPresent",
                        "ports": [{"containerPort": 8080, "name": "http", "protocol": "TCP"}],
                        "resources": {
                            "requests": {"cpu": cpu, "memory": memory},
                            "limits": {"memory": memory},
                        },
                        "terminationMessagePath": "/dev/termination-log",
                        "terminationMessagePolicy": "File",
                    }
                ],
                "dnsPolicy": "ClusterFirst",
                "restartPolicy": "Always",
                "schedulerName": "default-scheduler",
                "securityContext": {},
                "terminationGracePeriodSeconds": 30,
                **spec,
            },
        }

    def workload(self, kind, name, namespace, template, created, **spec) -> dict[str, Any]:
        api = "batch/v1" if kind == "Job" else "apps/v1"
        obj = {
            "apiVersion": api,
            "kind": kind,
            "metadata": self.meta(
                kind, name, namespace, created, "kube-controller-manager", generation=3, labels={"app": name}
            ),
            "spec": {**spec, "template": template},
            "status": {"observedGeneration": 3},
        }
        self.items.append(obj)
        return obj

    def deployment(self, name, namespace, replicas, template, nodes, revision=1, old_image=None):
        created = ago(days=30)
        selector = {"matchLabels": {"app": name}}
        deploy = self.workload(
            "Deployment",
            name,
            namespace,
            template,
            created,
            replicas=replicas,
            selector=selector,
            strategy={"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}},
            revisionHistoryLimit=10,
            progressDeadlineSeconds=600,
        )
        deploy["metadata"]["annotations"] = {
            "deployment.kubernetes.io/revision": str(revision),
            "kubectl.kubernetes.io/last-applied-configuration": '{"apiVersion":"apps/v1","kind":"Deployment"}',
        }
        deploy["status"].update(
            replicas=replicas, readyReplicas=replicas, availableReplicas=replicas, updatedReplicas=replicas
        )
        if old_image:  # the previous revision's ReplicaSet, scaled to 0
            old = copy.deepcopy(template)
            old["spec"]["containers"][0]["image"] = old_image
            self.replicaset(deploy, old, 0, revision - 1, days=9)
        rs = self.replicaset(deploy, template, replicas, revision, days=2)
        for i in range(replicas):
            pod_name = f"{rs['metadata']['name']}-{digits(f'{name}{i}', 5)}"
            self.pod(pod_name, namespace, rs, rs["spec"]["template"], next(nodes), minutes=60 * 30 - i * 7)
        return deploy

    def replicaset(self, deploy, template, replicas, revision, days) -> dict[str, Any]:
        name = deploy["metadata"]["name"]
        pod_hash = digits(f"{name}/{revision}", 10)
        template = copy.deepcopy(template)
        template["metadata"]["labels"]["pod-template-hash"] = pod_hash
        rs = self.workload(
            "ReplicaSet",
            f"{name}-{pod_hash}",
            deploy["metadata"]["namespace"],
            template,
            ago(days=days),
            replicas=replicas,
            selector={"matchLabels": {"app": name, "pod-template-hash": pod_hash}},
        )
        rs["metadata"]["labels"]["pod-template-hash"] = pod_hash
        rs["metadata"]["annotations"] = {
            "deployment.kubernetes.io/desired-replicas": str(deploy["spec"]["replicas"]),
            "deployment.kubernetes.io/max-replicas": str(deploy["spec"]["replicas"] + 1),
            "deployment.kubernetes.io/revision": str(revision),
        }
        rs["metadata"]["ownerReferences"] = [owner(deploy)]
        rs["status"].update(replicas=replicas, readyReplicas=replicas, availableReplicas=replicas)
        return rs

    def pod(self, name, namespace, owner_obj, template, node, minutes, phase="Running", labels=None) -> None:
        created = TAKEN_AT - timedelta(minutes=minutes)
        started = created + timedelta(seconds=4)
        ready = created + timedelta(seconds=11)
        spec = copy.deepcopy(template["spec"])
        spec.update(
            nodeName=node,
            enableServiceLinks=True,
            preemptionPolicy="PreemptLowerPriority",
            priority=PRIORITIES.get(spec.get("priorityClassName", ""), 0),
            serviceAccount="default",
            serviceAccountName="default",
        )
        spec.setdefault("tolerations", [])
        spec["tolerations"] += [
            {"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}
            for key in ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable")
        ]
        spec["volumes"] = [
            {
                "name": f"kube-api-access-{digits(name, 5)}",
                "projected": {"defaultMode": 420, "sources": [{"serviceAccountToken": {"path": "token"}}]},
            }
        ]
        container = spec["containers"][0]
        container["volumeMounts"] = [
            {
                "name": spec["volumes"][0]["name"],
                "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
                "readOnly": True,
            }
        ]
        done = phase == "Succeeded"
        meta = self.meta(
            "Pod",
            name,
            namespace,
            ts(created),
            "kubelet",
            labels={**template["metadata"]["labels"], **(labels or {})},
            annotations=dict(template["metadata"].get("annotations") or {}),
        )
        if owner_obj is not None:
            meta["generateName"] = name.rsplit("-", 1)[0] + "-"
            meta["ownerReferences"] = [owner(owner_obj)]
        state = (
            {
                "terminated": {
                    "exitCode": 0,
                    "reason": "Completed",
                    "startedAt": ts(started),
                    "finishedAt": ts(ready),
                }
            }
            if done
            else {"running": {"startedAt": ts(started)}}
        )
        self.items.append(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": meta,
                "spec": spec,
                "status": {
                    "phase": phase,
                    "conditions": [
                        {"type": "Initialized", "status": "True", "lastTransitionTime": ts(created)},
                        {
                            "type": "Ready",
                            "status": "False" if done else "True",
                            "lastTransitionTime": ts(ready),
                            **({"reason": "PodCompleted"} if done else {}),
                        },
                        {
                            "type": "ContainersReady",
                            "status": "False" if done else "True",
                            "lastTransitionTime": ts(ready),
                        },
                        {"type": "PodScheduled", "status": "True", "lastTransitionTime": ts(created)},
                    ],
                    "containerStatuses": [
                        {
                            "name": container["name"],
                            "image": container["image"],
                            "imageID": f"{container['image']}@sha256:{digits(container['image'], 64)}",
                            "containerID": f"containerd://{digits(name, 64)}",
                            "ready": not done,
                            "restartCount": 0,
                            "started": not done,
                            "state": state,
                        }
                    ],
                    "hostIP": "10.0.0.1",
                    "podIP": "10.0.1.1",
                    "qosClass": "Burstable",
                    "startTime": ts(created),
                },
            }
        )

    def daemonset(self, name, namespace, cpu, memory, priority_class=None) -> None:
        template = self.template(
            name, f"quay.io/prometheus/{name}:v1.7.0", cpu, memory, tolerations=[{"operator": "Exists"}]
        )
        if priority_class:
            template["spec"]["priorityClassName"] = priority_class
        nodes = [n for names in self.nodes.values() for n in names]
        ds = self.workload(
            "DaemonSet",
            name,
            namespace,
            template,
            ago(days=60),
            selector={"matchLabels": {"app": name}},
            updateStrategy={"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}},
        )
        ds["status"].update(
            currentNumberScheduled=len(nodes), desiredNumberScheduled=len(nodes), numberReady=len(nodes)
        )
        for node in nodes:
            pod_template = copy.deepcopy(template)
            pod_template["spec"]["affinity"] = {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
                        ]
                    }
                }
            }
            self.pod(f"{name}-{digits(node, 5)}", namespace, ds, pod_template, node, minutes=60 * 24 * 2)

    def statefulset(self, name, namespace, replicas, template, nodes) -> None:
        sts = self.workload(
            "StatefulSet",
            name,
            namespace,
            template,
            ago(days=90),
            replicas=replicas,
            serviceName=name,
            selector={"matchLabels": {"app": name}},
            podManagementPolicy="OrderedReady",
        )
        sts["status"].update(replicas=replicas, readyReplicas=replicas, currentReplicas=replicas)
        for ordinal in range(replicas):
            pod_name = f"{name}-{ordinal}"
            labels = {
                "controller-revision-hash": f"{name}-{digits(name, 10)}",
                "statefulset.kubernetes.io/pod-name": pod_name,
                "apps.kubernetes.io/pod-index": str(ordinal),
            }
            self.pod(
                pod_name,
                namespace,
                sts,
                template,
                nodes[ordinal],
                minutes=60 * 24 * 5 - ordinal,
                labels=labels,
            )

    def job(self, name, namespace, template, pods, completions, phase="Running", minutes=3) -> None:
        job_uid = uid("Job", namespace, name)
        labels = {"batch.kubernetes.io/controller-uid": job_uid, "batch.kubernetes.io/job-name": name}
        template = copy.deepcopy(template)
        template["metadata"]["labels"].update(labels)
        template["spec"]["restartPolicy"] = "Never"
        job = self.workload(
            "Job",
            name,
            namespace,
            template,
            ago(minutes=minutes + 1),
            parallelism=len(pods) if phase == "Running" else 1,
            completions=completions,
            backoffLimit=6,
            completionMode="NonIndexed",
            selector={"matchLabels": {"batch.kubernetes.io/controller-uid": job_uid}},
        )
        assert job["metadata"]["uid"] == job_uid
        if phase == "Running":
            job["status"].update(active=len(pods), startTime=ago(minutes=minutes + 1))
        else:
            job["status"].update(
                succeeded=len(pods),
                completionTime=ago(minutes=minutes - 1),
                conditions=[
                    {"type": "Complete", "status": "True", "lastTransitionTime": ago(minutes=minutes - 1)}
                ],
            )
        for node in pods:
            self.pod(
                f"{name}-{digits(name + node, 5)}",
                namespace,
                job,
                template,
                node,
                minutes=minutes,
                phase=phase,
            )

    # -- policy and the rest -----------------------------------------------------------------------
    def pdb(self, name, namespace, app, **spec) -> None:
        self.items.append(
            {
                "apiVersion": "policy/v1",
                "kind": "PodDisruptionBudget",
                "metadata": self.meta("PodDisruptionBudget", name, namespace, ago(days=30), "kubectl"),
                "spec": {**spec, "selector": {"matchLabels": {"app": app}}},
                "status": {
                    "currentHealthy": 2,
                    "desiredHealthy": 1,
                    "disruptionsAllowed": 1,
                    "expectedPods": 3,
                },
            }
        )

    def others(self) -> None:
        self.items.append(
            {
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": self.meta("PriorityClass", "shop-critical", None, ago(days=200), "kubectl"),
                "value": 100000,
                "globalDefault": False,
                "preemptionPolicy": "PreemptLowerPriority",
                "description": "the shop's stateful services",
            }
        )
        self.items.append(
            {
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": self.meta("Service", "web", "shop", ago(days=200), "kubectl"),
                "spec": {"selector": {"app": "web"}, "ports": [{"port": 80, "targetPort": 8080}]},
            }
        )
        self.items.append(
            {
                "apiVersion": "batch/v1",
                "kind": "CronJob",
                "metadata": self.meta("CronJob", "nightly-export", "batch", ago(days=200), "kubectl"),
                "spec": {
                    "schedule": "0 21 * * *",
                    "concurrencyPolicy": "Forbid",
                    "successfulJobsHistoryLimit": 3,
                    "failedJobsHistoryLimit": 1,
                    "suspend": False,
                    "jobTemplate": {"metadata": {}, "spec": {"template": self.export_template}},
                },
                "status": {
                    "lastScheduleTime": ago(hours=1),
                    "lastSuccessfulTime": ago(minutes=5),
                },
            }
        )
        # web's HPA, settled: 57% of its 500m requests against a 60% target (within tolerance)
        self.items.append(
            {
                "apiVersion": "autoscaling/v2",
                "kind": "HorizontalPodAutoscaler",
                "metadata": self.meta("HorizontalPodAutoscaler", "web", "shop", ago(days=200), "kubectl"),
                "spec": {
                    "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                    "minReplicas": 6 * self.scale,
                    "maxReplicas": 30 * self.scale,
                    "metrics": [
                        {
                            "type": "Resource",
                            "resource": {
                                "name": "cpu",
                                "target": {"type": "Utilization", "averageUtilization": 60},
                            },
                        }
                    ],
                },
                "status": {
                    "currentReplicas": 12 * self.scale,
                    "desiredReplicas": 12 * self.scale,
                    "lastScaleTime": ago(hours=3),
                    "currentMetrics": [
                        {
                            "type": "Resource",
                            "resource": {
                                "name": "cpu",
                                "current": {"averageUtilization": 57, "averageValue": "285m"},
                            },
                        }
                    ],
                },
            }
        )


def owner(obj: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": obj["apiVersion"],
        "kind": obj["kind"],
        "name": obj["metadata"]["name"],
        "uid": obj["metadata"]["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


def round_robin(names: list[str]):
    while True:
        yield from names


def realistic_dump(scale: int = 1) -> dict[str, Any]:
    """The dump as decoded YAML (a `kind: List`); `scale` multiplies nodes and replicas (for
    measurements: 4 is about the 48-node clusters issue 15 was tried on)."""
    n = scale
    dump = Dump(scale)
    dump.add_nodes()
    general = round_robin(dump.nodes["general"])
    image = "123456789012.dkr.ecr.us-east-1.amazonaws.com/shop"
    dump.deployment(
        "web",
        "shop",
        12 * n,
        dump.template("web", f"{image}/web:2.14.1", "500m", "512Mi"),
        general,
        3,
        f"{image}/web:2.14.0",
    )
    dump.deployment("api", "shop", 8 * n, dump.template("api", f"{image}/api:5.2.0", "700m", "1Gi"), general)
    dump.deployment(
        "worker", "shop", 3 * n, dump.template("worker", f"{image}/worker:5.2.0", "1", "1Gi"), general
    )
    coredns = dump.template(
        "coredns",
        "602401143452.dkr.ecr.us-east-1.amazonaws.com/eks/coredns:v1.11.1",
        "100m",
        "70Mi",
        priorityClassName="system-cluster-critical",
    )
    dump.deployment("coredns", "kube-system", 2 * n, coredns, general)
    debug = dump.template("debug-shell", "busybox:1.36", "100m", "64Mi")
    dump.pod("debug-shell", "shop", None, debug, next(general), minutes=45)
    db = dump.template(
        "db",
        "postgres:16.2",
        "2",
        "24Gi",
        priorityClassName="shop-critical",
        nodeSelector={GROUP_LABEL: "memory"},
    )
    dump.statefulset("db", "shop", 3 * n, db, dump.nodes["memory"])
    batch = {
        "tolerations": [{"key": "workload", "operator": "Equal", "value": "batch", "effect": "NoSchedule"}],
        "nodeSelector": {GROUP_LABEL: "batch_spot"},
    }
    report = dump.template("report", f"{image}/report:1.0.3", "6", "8Gi", **batch)
    dump.job("report", "batch", report, dump.nodes["batch_spot"], completions=2)
    export = dump.template("nightly-export", f"{image}/export:1.0.0", "1", "1Gi", **batch)
    dump.export_template = dump.template(
        "nightly-export", f"{image}/export:1.0.0", "1", "1Gi", **{**batch, "restartPolicy": "OnFailure"}
    )
    dump.job(
        "nightly-export", "batch", export, dump.nodes["batch_spot"][:1], 1, phase="Succeeded", minutes=55
    )
    dump.daemonset("node-exporter", "monitoring", "100m", "128Mi")
    dump.daemonset("kube-proxy", "kube-system", "100m", "64Mi", priority_class="system-node-critical")
    dump.pdb("web", "shop", "web", minAvailable="50%")
    dump.pdb("api", "shop", "api", maxUnavailable=1)
    dump.pdb("db", "shop", "db", maxUnavailable=1)
    dump.pdb("coredns", "kube-system", "coredns", maxUnavailable=1)
    dump.others()
    return {"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}, "items": dump.items}


if __name__ == "__main__":
    import yaml

    scale = int(sys.argv[1]) if len(sys.argv) > 1 else 1
    sys.stdout.write(yaml.safe_dump(realistic_dump(scale), sort_keys=False, width=120))
