"""Cluster dumps for the whole-process benchmarks: the benchmark clusters written as files, exactly
as `kubectl get nodes,pods,rs,pdb -A -o json` (or `-o yaml`) prints them: one `kind: List`.

    python -m benchmarks.dumps CASE --format json|yaml --out PATH

Cases (each a function `CASE(directory, fmt="json") -> Path` writing `<directory>/<CASE>.<fmt>`):

- `fos_1000` / `fos_200`: the Cluster Autoscaler's filter-out-schedulable case, the shapes of
  bench_scheduling: 1,000 nodes, 1,000 scheduled and 12,000 unschedulable pods; 200 / 200 / 60,000.
- `scale_down`: the Cluster Autoscaler's scale-down case (bench_scaledown): 2,000 nodes of 4 CPU /
  16 GiB, 40 pods of 40m / 160Mi each, from 200 ReplicaSets (written out too).
- `binpacking`: the Cluster Autoscaler's binpacking case (bench_scaleup): 51,000 pending pods and no
  node; the group's template (1000m / 5000 bytes / 100 pods) is in `<directory>/binpacking-groups.yaml`,
  for `kubetide plan binpacking.json --node-groups binpacking-groups.yaml --set
  max-nodes-per-scaleup=10000` (the default of 1,000 stops short of the 2,595 nodes it needs).
- `large`: bench_scheduling's heterogeneous cluster, 5,000 nodes and its 150,000 scheduled pods,
  with FULL metadata as a real cluster prints it (managedFields, ownerReferences, labels,
  annotations, uid, resourceVersion, creationTimestamp, status conditions, containerStatuses,
  node images), its 500 ReplicaSets and a PDB for every tenth: 1.7 GB as JSON (about 4 minutes
  to write).

The model objects come from the benchmarks' own builders; this module only writes them out. Items
are written one at a time, so memory stays at the size of the model objects, not of the text.
Everything is deterministic: the same case gives the same bytes.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from benchmarks import bench_downscale, bench_scaledown, bench_scaleup, bench_scheduling
from kubetide.cloud.schema import NODE_GROUP_LABEL
from kubetide.model import Node, OwnerReference, Pod
from kubetide.model.pod import PodAffinityTerm, TopologySpreadConstraint
from kubetide.model.selectors import LabelSelector
from kubetide.snapshot import ClusterSnapshot

try:  # libyaml's emitter: writing 150,000 pods with the pure-Python one takes many minutes
    _BaseDumper: type[yaml.SafeDumper] | type[yaml.CSafeDumper] = yaml.CSafeDumper
except AttributeError:  # pragma: no cover - depends on how PyYAML was built
    _BaseDumper = yaml.SafeDumper


class _Dumper(_BaseDumper):  # type: ignore[valid-type,misc]
    """kubectl never writes anchors and aliases, even for a mapping used twice."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


# kubectl's YAML (go-yaml) double-quotes a string that a YAML reader could take for a number, a
# boolean, a null or a time: `pod-template-hash: "097370e3"`, `creationTimestamp: "2026-..."`.
# PyYAML quotes only what YAML 1.1 would misread and leaves 097370e3 plain; write them as kubectl.
_GO_YAML_NON_STRING = re.compile(
    r"[-+]?(?:[0-9_]*\.?[0-9_]+(?:[eE][-+]?[0-9_]+)?|[0-9_]+\.|0[xXoObB][0-9a-fA-F_]+|\.(?:inf|Inf|INF|nan|NaN|NAN))"
    r"|[yYnN~]|[yY]es|YES|[nN]o|NO|[oO]n|ON|[oO]ff|OFF|[tT]rue|TRUE|[fF]alse|FALSE|[nN]ull|NULL"
    r"|[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}(?:[Tt ].*)?"
)


def _represent_str(dumper: yaml.SafeDumper, data: str) -> yaml.ScalarNode:
    style = '"' if _GO_YAML_NON_STRING.fullmatch(data) else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", data, style=style)


_Dumper.add_representer(str, _represent_str)


FORMATS = ("json", "yaml")
# Every timestamp is an offset from here, so dumps never depend on the day they were written.
EPOCH = datetime(2026, 11, 1, tzinfo=UTC).timestamp()
MI, GI = 2**20, 2**30


# -- quantities and small pieces -------------------------------------------------------------------


def _quantity(resource: str, amount: int) -> str:
    """As the API server canonicalizes them: CPU in millicores, memory in the largest exact binary unit."""
    if resource == "cpu":
        return f"{amount // 1000}" if amount % 1000 == 0 else f"{amount}m"
    if resource in ("memory", "ephemeral-storage"):
        for suffix, unit in (("Gi", GI), ("Mi", MI), ("Ki", 1024)):
            if amount and amount % unit == 0:
                return f"{amount // unit}{suffix}"
    return str(amount)


def _quantities(amounts: dict[str, int], pods: bool = True) -> dict[str, str]:
    return {r: _quantity(r, a) for r, a in amounts.items() if pods or r != "pods"}


def _time(offset: float) -> str:
    return datetime.fromtimestamp(EPOCH + offset, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _uid(kind: str, index: int) -> str:
    """A UUID-shaped uid, different per kind and index."""
    d = {"Node": "0000", "Pod": "1111", "ReplicaSet": "2222", "PodDisruptionBudget": "3333"}[
        kind
    ] + f"{index:028x}"
    return f"{d[:8]}-{d[8:12]}-{d[12:16]}-{d[16:20]}-{d[20:]}"


def _selector(selector: LabelSelector) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if selector.match_labels:
        out["matchLabels"] = dict(selector.match_labels)
    if selector.match_expressions:
        out["matchExpressions"] = [
            {"key": r.key, "operator": r.operator, **({"values": list(r.values)} if r.values else {})}
            for r in selector.match_expressions
        ]
    return out


def _affinity_term(term: PodAffinityTerm) -> dict[str, Any]:
    out: dict[str, Any] = {"topologyKey": term.topology_key}
    if term.label_selector is not None:
        out["labelSelector"] = _selector(term.label_selector)
    return out


def _spread(c: TopologySpreadConstraint) -> dict[str, Any]:
    out: dict[str, Any] = {
        "maxSkew": c.max_skew,
        "topologyKey": c.topology_key,
        "whenUnsatisfiable": c.when_unsatisfiable,
    }
    if c.label_selector is not None:
        out["labelSelector"] = _selector(c.label_selector)
    return out


# -- model objects to manifests ----------------------------------------------------------------------


def node_manifest(node: Node, index: int, group: str, full: bool) -> dict[str, Any]:
    labels = {**node.labels, NODE_GROUP_LABEL: group}
    meta: dict[str, Any] = {"name": node.name, "labels": labels}
    status: dict[str, Any] = {
        "allocatable": _quantities(node.allocatable),
        "capacity": _quantities(node.capacity or node.allocatable),
        "conditions": [_condition("Ready", "True", 60.0, "KubeletReady", "kubelet is posting ready status")],
    }
    spec: dict[str, Any] = {}
    if node.taints:
        spec["taints"] = [{"key": t.key, "value": t.value, "effect": t.effect} for t in node.taints]
    if full:
        meta.update(_full_meta("Node", index, node.name, manager="kubelet"))
        labels.update(
            {
                "beta.kubernetes.io/arch": "amd64",
                "beta.kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "kubernetes.io/os": "linux",
                "node.kubernetes.io/instance-type": f"m5.{node.allocatable.get('cpu', 0) // 4000}xlarge",
            }
        )
        meta["annotations"] = {
            "node.alpha.kubernetes.io/ttl": "0",
            "volumes.kubernetes.io/controller-managed-attach-detach": "true",
            "csi.volume.kubernetes.io/nodeid": json.dumps({"ebs.csi.aws.com": f"i-{index:017x}"}),
        }
        spec["providerID"] = f"aws:///us-east-1a/i-{index:017x}"
        spec["podCIDR"] = f"10.{index // 256}.{index % 256}.0/24"
        spec["podCIDRs"] = [spec["podCIDR"]]
        status["conditions"] = [
            _condition(kind, "False", 60.0, reason, message)
            for kind, reason, message in (
                ("MemoryPressure", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
                ("DiskPressure", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
                ("PIDPressure", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
            )
        ] + status["conditions"]
        status["addresses"] = [
            {"address": f"10.{index // 256}.{index % 256}.10", "type": "InternalIP"},
            {"address": node.name, "type": "Hostname"},
        ]
        status["daemonEndpoints"] = {"kubeletEndpoint": {"Port": 10250}}
        status["images"] = [
            {
                "names": [f"registry.example.com/team-{i}/service@sha256:{i:064x}", f"team-{i}/service:v{i}"],
                "sizeBytes": 10_000_000 + i * 1_000_003,
            }
            for i in range(25)
        ]
        status["nodeInfo"] = {
            "architecture": "amd64",
            "bootID": _uid("Node", index + 10**6),
            "containerRuntimeVersion": "containerd://1.7.11",
            "kernelVersion": "5.10.205-195.807.amzn2.x86_64",
            "kubeProxyVersion": "v1.30.7",
            "kubeletVersion": "v1.30.7",
            "machineID": f"{index:032x}",
            "operatingSystem": "linux",
            "osImage": "Amazon Linux 2",
            "systemUUID": _uid("Node", index + 2 * 10**6),
        }
    return {"apiVersion": "v1", "kind": "Node", "metadata": meta, "spec": spec, "status": status}


def pod_manifest(pod: Pod, index: int, full: bool) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": pod.name, "namespace": pod.namespace}
    if pod.labels:
        meta["labels"] = dict(pod.labels)
    if pod.meta.owner_references:
        meta["ownerReferences"] = [
            {
                "apiVersion": "apps/v1",
                "kind": ref.kind,
                "name": ref.name,
                "uid": ref.uid,
                "controller": ref.controller,
                "blockOwnerDeletion": True,
            }
            for ref in pod.meta.owner_references
        ]
    resources: dict[str, Any] = {"requests": _quantities(pod.requests, pods=False)}
    if pod.limits:
        resources["limits"] = _quantities(pod.limits, pods=False)
    container: dict[str, Any] = {
        "name": "app",
        "image": "registry.example.com/app:v1",
        "resources": resources,
    }
    spec: dict[str, Any] = {"containers": [container]}
    if pod.node_name:
        spec["nodeName"] = pod.node_name
    if pod.node_selector:
        spec["nodeSelector"] = dict(pod.node_selector)
    if pod.tolerations:
        spec["tolerations"] = [
            {
                k: v
                for k, v in (
                    ("key", t.key),
                    ("operator", t.operator),
                    ("value", t.value),
                    ("effect", t.effect),
                )
                if v
            }
            for t in pod.tolerations
        ]
    affinity: dict[str, Any] = {}
    if pod.affinity.node_required:
        affinity["nodeAffinity"] = {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    _selector(LabelSelector((), term.match_expressions))
                    for term in pod.affinity.node_required
                ]
            }
        }
    if pod.affinity.anti_required:
        affinity["podAntiAffinity"] = {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                _affinity_term(t) for t in pod.affinity.anti_required
            ]
        }
    if affinity:
        spec["affinity"] = affinity
    if pod.topology_spread:
        spec["topologySpreadConstraints"] = [_spread(c) for c in pod.topology_spread]
    scheduled = bool(pod.node_name)
    status: dict[str, Any] = {"phase": "Running" if scheduled else "Pending"}
    if scheduled:
        status["conditions"] = [_condition("PodScheduled", "True", 120.0)]
    else:
        status["conditions"] = [
            _condition(
                "PodScheduled", "False", 120.0, "Unschedulable", "0/1 nodes are available: Insufficient cpu."
            )
        ]
    if full:
        _fill_pod(meta, container, spec, status, pod, index)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": status}


def _condition(kind: str, status: str, at: float, reason: str = "", message: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {
        "type": kind,
        "status": status,
        "lastProbeTime": None,
        "lastTransitionTime": _time(at),
    }
    if reason:
        out["reason"] = reason
    if message:
        out["message"] = message
    return out


def _full_meta(kind: str, index: int, name: str, manager: str) -> dict[str, Any]:
    """What the API server adds to every object: uid, resourceVersion, creationTimestamp, managedFields."""
    fields_v1 = {
        "f:metadata": {"f:labels": {".": {}, **{f"f:label-{i}": {} for i in range(6)}}},
        "f:spec": {f"f:field-{i}": {} for i in range(12)},
    }
    return {
        "uid": _uid(kind, index),
        "resourceVersion": str(100_000 + index),
        "creationTimestamp": _time(float(index % 3600)),
        "managedFields": [
            {
                "apiVersion": "v1" if kind in ("Node", "Pod") else "apps/v1",
                "fieldsType": "FieldsV1",
                "fieldsV1": fields_v1,
                "manager": manager,
                "operation": "Update",
                "time": _time(float(index % 3600)),
            },
            {
                "apiVersion": "v1",
                "fieldsType": "FieldsV1",
                "fieldsV1": {
                    "f:status": {"f:conditions": {f'k:{{"type":"C{i}"}}': {".": {}} for i in range(5)}}
                },
                "manager": "kubelet",
                "operation": "Update",
                "subresource": "status",
                "time": _time(float(index % 3600) + 60),
            },
        ],
    }


def _fill_pod(meta: dict, container: dict, spec: dict, status: dict, pod: Pod, index: int) -> None:
    """The rest of a running Deployment pod as the API server prints it."""
    meta.update(_full_meta("Pod", index, pod.name, manager="kube-controller-manager"))
    if pod.meta.owner_references:
        meta["generateName"] = pod.meta.owner_references[0].name + "-"
    meta["annotations"] = {
        "kubectl.kubernetes.io/restartedAt": _time(0.0),
        "prometheus.io/scrape": "true",
        "prometheus.io/port": "9090",
    }
    container.update(
        {
            "imagePullPolicy": "IfNotPresent",
            "ports": [{"containerPort": 8080, "name": "http", "protocol": "TCP"}],
            "env": [{"name": f"SETTING_{i}", "value": f"value-{i}"} for i in range(4)],
            "terminationMessagePath": "/dev/termination-log",
            "terminationMessagePolicy": "File",
            "volumeMounts": [
                {
                    "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
                    "name": "kube-api-access",
                    "readOnly": True,
                }
            ],
        }
    )
    spec.update(
        {
            "dnsPolicy": "ClusterFirst",
            "enableServiceLinks": True,
            "preemptionPolicy": "PreemptLowerPriority",
            "priority": 0,
            "restartPolicy": "Always",
            "schedulerName": "default-scheduler",
            "securityContext": {},
            "serviceAccount": "default",
            "serviceAccountName": "default",
            "terminationGracePeriodSeconds": 30,
            "volumes": [
                {
                    "name": "kube-api-access",
                    "projected": {
                        "defaultMode": 420,
                        "sources": [
                            {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                            {
                                "configMap": {
                                    "items": [{"key": "ca.crt", "path": "ca.crt"}],
                                    "name": "kube-root-ca.crt",
                                }
                            },
                        ],
                    },
                }
            ],
        }
    )
    spec["tolerations"] = spec.get("tolerations", []) + [
        {"effect": "NoExecute", "key": key, "operator": "Exists", "tolerationSeconds": 300}
        for key in ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable")
    ]
    if not pod.node_name:
        status["qosClass"] = "Burstable"
        return
    started = float(index % 3600) + 90
    status["conditions"] = [
        _condition(kind, "True", started)
        for kind in ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady")
    ] + status["conditions"]
    ip = f"10.{(index >> 16) & 255}.{(index >> 8) & 255}.{index & 255}"
    status.update(
        {
            "containerStatuses": [
                {
                    "containerID": f"containerd://{index:064x}",
                    "image": container["image"],
                    "imageID": f"registry.example.com/app@sha256:{index:064x}",
                    "lastState": {},
                    "name": container["name"],
                    "ready": True,
                    "restartCount": 0,
                    "started": True,
                    "state": {"running": {"startedAt": _time(started)}},
                }
            ],
            "hostIP": "10.0.0.1",
            "hostIPs": [{"ip": "10.0.0.1"}],
            "podIP": ip,
            "podIPs": [{"ip": ip}],
            "qosClass": "Burstable",
            "startTime": _time(started - 10),
        }
    )


def replicaset_manifest(
    name: str, uid: str, index: int, selector: LabelSelector, template: Pod, replicas: int, full: bool
) -> dict[str, Any]:
    labels = dict(selector.match_labels)  # the API server requires the template to match the selector
    meta: dict[str, Any] = {"name": name, "namespace": template.namespace or "default", "labels": labels}
    if full:
        meta.update(_full_meta("ReplicaSet", index, name, manager="kube-controller-manager"))
    meta["uid"] = uid
    pod_template = pod_manifest(template, index, full=False)
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": meta,
        "spec": {
            "replicas": replicas,
            "selector": _selector(selector),
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": pod_template["spec"]["containers"]},
            },
        },
        "status": {"replicas": replicas, "readyReplicas": replicas, "availableReplicas": replicas},
    }


# -- writing -----------------------------------------------------------------------------------------


def write_list(path: Path, items: Iterable[dict[str, Any]], fmt: str) -> Path:
    """Write `items` as kubectl prints a List, one item at a time."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}; expected one of {', '.join(FORMATS)}")
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as out:
        if fmt == "json":
            out.write('{\n    "apiVersion": "v1",\n    "items": [')
            separator = "\n        "
            for item in items:
                out.write(separator + json.dumps(item, indent=4).replace("\n", "\n        "))
                separator = ",\n        "
            out.write(
                '\n    ],\n    "kind": "List",\n    "metadata": {\n        "resourceVersion": ""\n    }\n}\n'
            )
        else:
            out.write("apiVersion: v1\nitems:\n")
            for item in items:
                text = yaml.dump(item, Dumper=_Dumper, default_flow_style=False, sort_keys=True)
                out.write("- " + text.rstrip("\n").replace("\n", "\n  ") + "\n")
            out.write('kind: List\nmetadata:\n  resourceVersion: ""\n')
    return path


def _cluster_items(
    snapshot: ClusterSnapshot, group_of: Callable[[Node], str], full: bool
) -> Iterator[dict[str, Any]]:
    nodes = list(snapshot.nodes())
    for index, node in enumerate(nodes):
        yield node_manifest(node, index, group_of(node), full)
    index = 0
    for node in nodes:
        for pod in snapshot.pods_on(node.name).values():
            yield pod_manifest(replace(pod, node_name=node.name), index, full)
            index += 1


# -- the cases ---------------------------------------------------------------------------------------


def filter_out_schedulable(
    directory: str | Path, fmt: str = "json", nodes: int = 1000, scheduled: int = 1000, pending: int = 12000
) -> Path:
    """bench_scheduling's filter-out-schedulable shapes: pending pods of 1000m / 2 MB fit nowhere."""
    node_list = [bench_scheduling._node(f"n{i}", 2000, 200000) for i in range(nodes)]
    snapshot = ClusterSnapshot(node_list)
    for i in range(scheduled):
        snapshot.add_pod(bench_scheduling._pod(f"s{i}", 1000, 200000), f"n{i % nodes}")
    waiting = (bench_scheduling._pod(f"p{i}", 1000, 2000000, {"app": "pending"}) for i in range(pending))

    def items() -> Iterator[dict[str, Any]]:
        yield from _cluster_items(snapshot, lambda _: "pool", full=False)
        for index, pod in enumerate(waiting):
            yield pod_manifest(pod, scheduled + index, full=False)

    return write_list(Path(directory) / f"fos-{nodes}-{scheduled}-{pending}.{fmt}", items(), fmt)


def fos_1000(directory: str | Path, fmt: str = "json") -> Path:
    return filter_out_schedulable(directory, fmt, 1000, 1000, 12000)


def fos_200(directory: str | Path, fmt: str = "json") -> Path:
    return filter_out_schedulable(directory, fmt, 200, 200, 60000)


def scale_down(directory: str | Path, fmt: str = "json") -> Path:
    """bench_scaledown's cluster: every node at 40%, 1,200 of the 2,000 removable."""
    snapshot, workloads = bench_scaledown.build()

    def items() -> Iterator[dict[str, Any]]:
        yield from _cluster_items(snapshot, lambda _: "pool", full=False)
        for index, w in enumerate(workloads):
            yield replicaset_manifest(
                w.name, w.meta.uid, index, w.selector, w.template.prototype, w.replicas or 0, False
            )

    return write_list(Path(directory) / f"scale-down.{fmt}", items(), fmt)


BINPACKING_GROUPS = "binpacking-groups.yaml"


def binpacking(directory: str | Path, fmt: str = "json", full: bool = False) -> Path:
    """bench_scaleup's binpacking case: 50,000 pods of 50m / 100 bytes and 1,000 of 95m / 190 bytes,
    pending, and one node group (written to BINPACKING_GROUPS) of 1000m / 5000 bytes / 100 pods."""
    directory = Path(directory)
    template = bench_scaleup._node("t", 1000, 5000, 100, {bench_scaleup.ZONE_LABEL: "a"})
    groups = {
        "nodeGroups": [
            {
                "name": "binpacking",
                "maxSize": 100_000,
                "template": {
                    "metadata": {"labels": {bench_scaleup.ZONE_LABEL: "a"}},
                    "status": {"allocatable": _quantities(template.allocatable)},
                },
            }
        ]
    }
    directory.mkdir(parents=True, exist_ok=True)
    (directory / BINPACKING_GROUPS).write_text(yaml.safe_dump(groups, sort_keys=False), encoding="utf-8")
    stem = "binpacking-full" if full else "binpacking"
    small, big = bench_scaleup._proto("small", 50, 100), bench_scaleup._proto("big", 95, 190)
    pods = ((small, f"small-{i}") for i in range(50_000))
    bigs = ((big, f"big-{i}") for i in range(1_000))

    def items() -> Iterator[dict[str, Any]]:
        for index, (proto, name) in enumerate((*pods, *bigs)):
            pod = bench_scaleup._stamp(proto, name)
            if full:
                # Two Deployments' ReplicaSets own the pods, as in a real cluster's pending burst.
                owner = name.split("-")[0]
                ref = OwnerReference("ReplicaSet", f"{owner}-5d8f7c9b4", _uid("ReplicaSet", len(owner)), True)
                pod = replace(pod, meta=replace(pod.meta, owner_references=(ref,)))
            yield pod_manifest(pod, index, full=full)

    return write_list(directory / f"{stem}.{fmt}", items(), fmt)


def binpacking_full(directory: str | Path, fmt: str = "json") -> Path:
    """The binpacking case with the metadata a real cluster prints (owner references, uid,
    managedFields, annotations, status conditions): what `kubectl get pods -o json` gives for a
    burst of pending Deployment pods (issue 30)."""
    return binpacking(directory, fmt, full=True)


def large_items() -> Iterator[dict[str, Any]]:
    """bench_scheduling's heterogeneous cluster (5,000 nodes, 150,000 scheduled pods from 500
    Deployments) with full metadata, its ReplicaSets, and a PDB (maxUnavailable 1) for every tenth:
    nodes first, then pods, then the ReplicaSets and PDBs, one item at a time."""
    snapshot, _pending = bench_scheduling.build_heterogeneous()
    del _pending
    zone = bench_scheduling.ZONE
    apps: dict[str, Pod] = {}
    counts: dict[str, int] = {}
    for pod in snapshot.pods():
        app = pod.labels["app"]
        apps.setdefault(app, pod)
        counts[app] = counts.get(app, 0) + 1

    def rs_name(app: str) -> str:
        return f"{app}-{apps[app].labels['pod-template-hash']}"

    def owned(pod: Pod) -> Pod:
        app = pod.labels["app"]
        ref = OwnerReference("ReplicaSet", rs_name(app), _uid("ReplicaSet", int(app[4:])), controller=True)
        return replace(pod, meta=replace(pod.meta, owner_references=(ref,)))

    def items() -> Iterator[dict[str, Any]]:
        nodes = list(snapshot.nodes())
        for index, node in enumerate(nodes):
            group = f"pool-{node.allocatable['cpu'] // 1000}cpu-{node.labels[zone]}"
            yield node_manifest(node, index, group, full=True)
        index = 0
        for node in nodes:
            for pod in snapshot.pods_on(node.name).values():
                yield pod_manifest(owned(replace(pod, node_name=node.name)), index, full=True)
                index += 1
        for app, proto in sorted(apps.items()):
            number = int(app[4:])
            selector = LabelSelector((("app", app), ("pod-template-hash", proto.labels["pod-template-hash"])))
            yield replicaset_manifest(
                rs_name(app), _uid("ReplicaSet", number), number, selector, proto, counts[app], full=True
            )
            if number % 10 == 0:
                yield {
                    "apiVersion": "policy/v1",
                    "kind": "PodDisruptionBudget",
                    "metadata": {
                        "name": app,
                        "namespace": "default",
                        "uid": _uid("PodDisruptionBudget", number),
                        "resourceVersion": str(number),
                        "creationTimestamp": _time(0.0),
                    },
                    "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app": app}}},
                    "status": {
                        "currentHealthy": counts[app],
                        "desiredHealthy": counts[app] - 1,
                        "disruptionsAllowed": 1,
                        "expectedPods": counts[app],
                        "observedGeneration": 1,
                    },
                }

    return items()


def large(directory: str | Path, fmt: str = "json") -> Path:
    """large_items() written out."""
    return write_list(Path(directory) / f"large.{fmt}", large_items(), fmt)


def downscale(directory: str | Path, fmt: str = "json") -> Path:
    """bench_downscale's 100,000 pods of one ReplicaSet over 2,000 nodes (creation and ready times,
    restarts, deletion costs), and the ReplicaSet: for `kubetide downscale downscale.json
    --replicas 50000 --json` (issue 30's output target)."""
    pods = bench_downscale.make_pods(100_000, 2_000)
    owner = pods[0].meta.owner_references[0]

    def items() -> Iterator[dict[str, Any]]:
        for index, pod in enumerate(pods):
            item = pod_manifest(pod, index, full=False)
            meta, status = item["metadata"], item["status"]
            meta["uid"] = pod.uid
            meta["creationTimestamp"] = _rfc3339(pod.meta.creation_timestamp or 0.0)
            if pod.annotations:
                meta["annotations"] = dict(pod.annotations)
            status["phase"] = pod.phase
            if pod.ready_transition is not None:
                ready = {"type": "Ready", "status": "True", "lastProbeTime": None}
                status["conditions"].append({**ready, "lastTransitionTime": _rfc3339(pod.ready_transition)})
            status["containerStatuses"] = [{"name": "app", "ready": pod.ready, "restartCount": pod.restarts}]
            yield item
        selector = LabelSelector(tuple(sorted(pods[0].labels.items())))
        yield replicaset_manifest(owner.name, owner.uid, 0, selector, pods[0], len(pods), full=False)

    return write_list(Path(directory) / f"downscale.{fmt}", items(), fmt)


def _rfc3339(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


CASES: dict[str, Callable[..., Path]] = {
    "fos_1000": fos_1000,
    "fos_200": fos_200,
    "scale_down": scale_down,
    "binpacking": binpacking,
    "binpacking_full": binpacking_full,
    "large": large,
    "downscale": downscale,
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.dumps", description=__doc__.splitlines()[0])
    parser.add_argument("case", choices=sorted(CASES))
    parser.add_argument("--format", choices=FORMATS, default="json")
    parser.add_argument("--out", required=True, help="the file to write (its directory gets any side files)")
    args = parser.parse_args(argv)
    out = Path(args.out)
    written = CASES[args.case](out.parent, args.format)
    if written != out:
        written.replace(out)
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
