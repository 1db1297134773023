"""What a scenario exported from a cluster (`kubetide scenario from-cluster`) keeps of its objects:
an allow-list per kind, the fields the model's parsers read (model/pod.py, node.py, workloads.py,
cronjob.py, hpa.py, policy.py, meta.py) and nothing else.

A dump holds secrets in many places: env values, command lines, probe commands and HTTP headers,
lifecycle hooks, volume sources, annotations (kubectl's last-applied-configuration carries a whole
earlier manifest), status and termination messages. None of them is read by the simulator, so
none is exported. What is kept:

- names: object names and namespaces, UIDs, owner references, label keys and values (selectors
  and affinity match them), container and volume names, resource names, taint and toleration
  keys and values, topology keys, node names, priority class and scheduler names;
- amounts and settings: requests and limits, replicas, scheduling constraints (nodeSelector,
  affinity, tolerations, topologySpreadConstraints), host ports, a volume's kind only (which
  source it has, and an emptyDir's medium: what decides whether it is local storage), rollout
  strategy, disruption budgets, HPA targets and behavior, CronJob schedules;
- the status the simulator adopts: pod phase, Ready and PodScheduled conditions, restart counts,
  start and transition times; node capacity and readiness; workload, HPA and CronJob status
  fields the parsers read;
- the annotations kubetide interprets (ANNOTATIONS), with their values.

Each kind is one declared structure (SCHEMAS): a mapping lists the fields kept, each with the
schema of its value; everything not listed is dropped. `--keep-env` adds the containers' `env`
(names and values), nothing else. A pod template drops what a pod drops, which is why the
templates of a Deployment and of its ReplicaSets stay alike (the simulator matches them by
digest, sim/runtime/deployment.py): what the export drops from one it drops from the other.

The walk follows the schema, never the input: however deep a dump nests a value, the export goes
no deeper than the schema does, and what it writes nests no deeper either.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kubetide.autoscaler.scaledown.actuation import DELAY_DELETION_PREFIX
from kubetide.autoscaler.scaledown.explanation import BLOCKER_ANNOTATION
from kubetide.autoscaler.scaledown.planning import (
    DO_NOT_DISRUPT,
    SAFE_TO_EVICT,
    SAFE_TO_EVICT_LOCAL_VOLUMES,
    SCALE_DOWN_DISABLED_ANNOTATION,
    SURGE_ANNOTATION,
)
from kubetide.autoscaler.scaleup.pending import SCALE_UP_DELAY_ANNOTATION
from kubetide.model.node import TROUBLE_CONDITIONS
from kubetide.model.pod import MIRROR_ANNOTATION
from kubetide.model.wire import VOLUME_SOURCES
from kubetide.model.workloads import REVISION_ANNOTATION
from kubetide.sim.spec.profiles import USAGE_ANNOTATION
from kubetide.sim.spec.scenario import RUN_DURATION_ANNOTATION
from kubetide.workloads.cost import DELETION_COST_ANNOTATION

# Every annotation kubetide reads, each where it is read; all others are dropped.
ANNOTATIONS = frozenset(
    {
        SAFE_TO_EVICT,  # a pod: may it be evicted (autoscaler/scaledown/planning/drainability.py)
        SAFE_TO_EVICT_LOCAL_VOLUMES,  # a pod: the local volumes that do not block it
        DO_NOT_DISRUPT,  # a pod: Karpenter's opt-out, honoured as not-safe-to-evict
        MIRROR_ANNOTATION,  # a static pod's mirror: never drained
        DELETION_COST_ANNOTATION,  # a pod: the ReplicaSet controller's downscale order
        SCALE_UP_DELAY_ANNOTATION,  # a pod: how long it waits before it triggers a scale-up
        SCALE_DOWN_DISABLED_ANNOTATION,  # a node: never scaled down
        BLOCKER_ANNOTATION,  # a node: why kubetide cannot remove it (what it last wrote)
        SURGE_ANNOTATION,  # a Deployment: surge before its pods are evicted
        REVISION_ANNOTATION,  # a ReplicaSet: its Deployment's revision (the current one is the highest)
        USAGE_ANNOTATION,  # a pod or template: its usage profile in the simulator
        RUN_DURATION_ANNOTATION,  # a Job's pod or template: how long it runs in the simulator
    }
)
# Annotations read by their prefix: a node with any of these is not deleted yet.
ANNOTATION_PREFIXES = (DELAY_DELETION_PREFIX,)

# -- the schema language ---------------------------------------------------------------------------


class _Leaf:
    """A schema for a value kept as it is, if it has the shape named."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


# A string, number, boolean or time (PyYAML reads unquoted times as datetimes); anything else
# in its place is dropped.
SCALAR = _Leaf("SCALAR")
# A map of names to scalars, kept whole: labels, nodeSelector, matchLabels, resource amounts.
NAMES = _Leaf("NAMES")
# metadata.annotations: the entries of ANNOTATIONS and ANNOTATION_PREFIXES only.
ANNOTATION_MAP = _Leaf("ANNOTATION_MAP")
# A pod volume: its name and its source's kind (the first key after the name, as the parser
# takes it), the source's content dropped but an emptyDir's medium.
VOLUME = _Leaf("VOLUME")


@dataclass(frozen=True)
class Items:
    """A list, each item by `item`."""

    item: Schema


@dataclass(frozen=True)
class Conditions:
    """status.conditions: only the types named, each with its fields."""

    fields: Mapping[str, tuple[str, ...]]


Schema = _Leaf | Items | Conditions | Mapping[str, "Schema"]
Fields = Mapping[str, Schema]  # a mapping: the fields kept, each with its schema

# -- the kinds ---------------------------------------------------------------------------------------

SCALARS = Items(SCALAR)
KIND: Fields = {"apiVersion": SCALAR, "kind": SCALAR}
OWNER_REFERENCE: Fields = {"kind": SCALAR, "name": SCALAR, "uid": SCALAR, "controller": SCALAR}
METADATA: Fields = {
    "name": SCALAR,
    "namespace": SCALAR,
    "uid": SCALAR,
    "labels": NAMES,
    "annotations": ANNOTATION_MAP,
    "ownerReferences": Items(OWNER_REFERENCE),
    "creationTimestamp": SCALAR,
    "deletionTimestamp": SCALAR,
}
WORKLOAD_METADATA: Fields = {**METADATA, "generation": SCALAR}  # rollouts compare it with the status

REQUIREMENT: Fields = {"key": SCALAR, "operator": SCALAR, "values": SCALARS}
LABEL_SELECTOR: Fields = {"matchLabels": NAMES, "matchExpressions": Items(REQUIREMENT)}
NODE_SELECTOR_TERM: Fields = {"matchExpressions": Items(REQUIREMENT), "matchFields": Items(REQUIREMENT)}
POD_AFFINITY_TERM: Fields = {
    "labelSelector": LABEL_SELECTOR,
    "topologyKey": SCALAR,
    "namespaces": SCALARS,
    "namespaceSelector": LABEL_SELECTOR,
    "matchLabelKeys": SCALARS,
    "mismatchLabelKeys": SCALARS,
}
REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"
POD_AFFINITY: Fields = {
    REQUIRED: Items(POD_AFFINITY_TERM),
    PREFERRED: Items({"weight": SCALAR, "podAffinityTerm": POD_AFFINITY_TERM}),
}
AFFINITY: Fields = {
    "nodeAffinity": {
        REQUIRED: {"nodeSelectorTerms": Items(NODE_SELECTOR_TERM)},
        PREFERRED: Items({"weight": SCALAR, "preference": NODE_SELECTOR_TERM}),
    },
    "podAffinity": POD_AFFINITY,
    "podAntiAffinity": POD_AFFINITY,
}
TOLERATION: Fields = {
    "key": SCALAR,
    "operator": SCALAR,
    "value": SCALAR,
    "effect": SCALAR,
    "tolerationSeconds": SCALAR,
}
TOPOLOGY_SPREAD: Fields = {
    "maxSkew": SCALAR,
    "topologyKey": SCALAR,
    "whenUnsatisfiable": SCALAR,
    "labelSelector": LABEL_SELECTOR,
    "minDomains": SCALAR,
    "nodeAffinityPolicy": SCALAR,
    "nodeTaintsPolicy": SCALAR,
    "matchLabelKeys": SCALARS,
}
# containerPort is read for a pod on the host network, where it is the host port.
PORT: Fields = {"containerPort": SCALAR, "hostPort": SCALAR, "hostIP": SCALAR, "protocol": SCALAR}
CONTAINER: Fields = {
    "name": SCALAR,
    "resources": {"requests": NAMES, "limits": NAMES},
    "ports": Items(PORT),
    "restartPolicy": SCALAR,  # an init container's Always makes it a sidecar
}
# --keep-env: the containers' env as well, names and values (or where a value comes from).
REFERENCE: Fields = {"name": SCALAR, "key": SCALAR, "optional": SCALAR}
ENV_VAR: Fields = {
    "name": SCALAR,
    "value": SCALAR,
    "valueFrom": {
        "secretKeyRef": REFERENCE,
        "configMapKeyRef": REFERENCE,
        "fieldRef": {"apiVersion": SCALAR, "fieldPath": SCALAR},
        "resourceFieldRef": {"containerName": SCALAR, "resource": SCALAR, "divisor": SCALAR},
    },
}
CONTAINER_WITH_ENV: Fields = {**CONTAINER, "env": Items(ENV_VAR)}

POD_CONDITIONS = Conditions(
    {
        "Ready": ("type", "status", "lastTransitionTime"),
        "PodScheduled": ("type", "status", "reason", "lastTransitionTime"),  # reason: Unschedulable
    }
)
POD_STATUS: Fields = {
    "phase": SCALAR,
    "conditions": POD_CONDITIONS,
    "startTime": SCALAR,
    "nominatedNodeName": SCALAR,
    "containerStatuses": Items({"restartCount": SCALAR}),
    "initContainerStatuses": Items({"name": SCALAR, "restartCount": SCALAR}),  # sidecars' restarts
}
NODE_CONDITION = ("type", "status", "lastTransitionTime")
NODE: Fields = {
    **KIND,
    "metadata": METADATA,
    "spec": {
        "taints": Items({"key": SCALAR, "value": SCALAR, "effect": SCALAR, "timeAdded": SCALAR}),
        "unschedulable": SCALAR,
        "providerID": SCALAR,
    },
    "status": {
        "capacity": NAMES,
        "allocatable": NAMES,
        "conditions": Conditions({kind: NODE_CONDITION for kind in ("Ready", *TROUBLE_CONDITIONS)}),
    },
}
WORKLOAD_STATUS: Fields = {
    "replicas": SCALAR,
    "readyReplicas": SCALAR,
    "observedGeneration": SCALAR,
    "updatedReplicas": SCALAR,
    "availableReplicas": SCALAR,
}
INT_OR_PERCENT = SCALAR
HPA_RULES: Fields = {
    "stabilizationWindowSeconds": SCALAR,
    "selectPolicy": SCALAR,
    "policies": Items({"type": SCALAR, "value": SCALAR, "periodSeconds": SCALAR}),
    "tolerance": SCALAR,
}
HPA_TARGET: Fields = {"type": SCALAR, "averageUtilization": SCALAR, "averageValue": SCALAR, "value": SCALAR}
HPA: Fields = {
    **KIND,
    "metadata": METADATA,
    "spec": {
        "scaleTargetRef": {"kind": SCALAR, "name": SCALAR},
        "minReplicas": SCALAR,
        "maxReplicas": SCALAR,
        # Every metric as far as the parser checks it (model/hpa.py: its source, a metric name, a
        # described object, a target), so the export loads as the dump did; the simulator reads
        # only Resource ones, and the selectors of the others are dropped.
        "metrics": Items(
            {
                "type": SCALAR,
                "resource": {"name": SCALAR, "target": HPA_TARGET},
                "containerResource": {"name": SCALAR, "container": SCALAR, "target": HPA_TARGET},
                "pods": {"metric": {"name": SCALAR}, "target": HPA_TARGET},
                "object": {
                    "metric": {"name": SCALAR},
                    "describedObject": {"apiVersion": SCALAR, "kind": SCALAR, "name": SCALAR},
                    "target": HPA_TARGET,
                },
                "external": {"metric": {"name": SCALAR}, "target": HPA_TARGET},
            }
        ),
        "behavior": {"scaleUp": HPA_RULES, "scaleDown": HPA_RULES},
    },
    "status": {
        "currentReplicas": SCALAR,
        "desiredReplicas": SCALAR,
        "lastScaleTime": SCALAR,
        "currentMetrics": Items(
            {
                "type": SCALAR,
                "resource": {
                    "name": SCALAR,
                    "current": {"averageUtilization": SCALAR, "averageValue": SCALAR},
                },
            }
        ),
    },
}
PDB: Fields = {
    **KIND,
    "metadata": METADATA,
    "spec": {
        "minAvailable": INT_OR_PERCENT,
        "maxUnavailable": INT_OR_PERCENT,
        "unhealthyPodEvictionPolicy": SCALAR,
        "selector": LABEL_SELECTOR,
    },
    "status": {
        "disruptionsAllowed": SCALAR,
        "currentHealthy": SCALAR,
        "desiredHealthy": SCALAR,
        "expectedPods": SCALAR,
    },
}
PRIORITY_CLASS: Fields = {
    **KIND,
    "metadata": METADATA,
    "value": SCALAR,
    "globalDefault": SCALAR,
    "preemptionPolicy": SCALAR,
}
NAMESPACE: Fields = {**KIND, "metadata": METADATA}  # its labels: what namespaceSelectors match
# The cluster-autoscaler-priority-expander ConfigMap (the only one exported): its priorities.
CONFIGMAP: Fields = {**KIND, "metadata": METADATA, "data": {"priorities": SCALAR}}


def _pod_kinds(container: Fields) -> dict[str, Fields]:
    """The kinds that hold pods or pod templates, with `container` for their containers."""
    pod_spec: Fields = {
        "containers": Items(container),
        "initContainers": Items(container),
        "overhead": NAMES,
        "hostNetwork": SCALAR,
        "terminationGracePeriodSeconds": SCALAR,
        "priority": SCALAR,
        "priorityClassName": SCALAR,
        "schedulerName": SCALAR,
        "nodeName": SCALAR,
        "nodeSelector": NAMES,
        "affinity": AFFINITY,
        "tolerations": Items(TOLERATION),
        "topologySpreadConstraints": Items(TOPOLOGY_SPREAD),
        "volumes": Items(VOLUME),
    }
    template: Fields = {
        "metadata": {"name": SCALAR, "labels": NAMES, "annotations": ANNOTATION_MAP},
        "spec": pod_spec,
    }
    # One spec for the five workload kinds and a CronJob's jobTemplate (parse_workload reads each
    # field for the kinds that have it).
    workload_spec: Fields = {
        "replicas": SCALAR,
        "selector": LABEL_SELECTOR,
        "template": template,
        "podManagementPolicy": SCALAR,  # StatefulSet
        "strategy": {  # Deployment
            "type": SCALAR,
            "rollingUpdate": {"maxSurge": INT_OR_PERCENT, "maxUnavailable": INT_OR_PERCENT},
        },
        "minReadySeconds": SCALAR,  # Deployment
        "parallelism": SCALAR,  # Job
        "completions": SCALAR,  # Job
    }
    workload: Fields = {
        **KIND,
        "metadata": WORKLOAD_METADATA,
        "spec": workload_spec,
        "status": WORKLOAD_STATUS,
    }
    cronjob: Fields = {
        **KIND,
        "metadata": METADATA,
        "spec": {
            "schedule": SCALAR,
            "timeZone": SCALAR,
            "concurrencyPolicy": SCALAR,
            "startingDeadlineSeconds": SCALAR,
            "suspend": SCALAR,
            "successfulJobsHistoryLimit": SCALAR,
            "failedJobsHistoryLimit": SCALAR,
            "jobTemplate": {
                "metadata": {"labels": NAMES, "annotations": ANNOTATION_MAP},
                "spec": workload_spec,
            },
        },
        "status": {"lastScheduleTime": SCALAR, "lastSuccessfulTime": SCALAR},
    }
    return {
        "Pod": {**KIND, "metadata": METADATA, "spec": pod_spec, "status": POD_STATUS},
        "Deployment": workload,
        "ReplicaSet": workload,
        "StatefulSet": workload,
        "DaemonSet": workload,
        "Job": workload,
        "CronJob": cronjob,
    }


_OTHER_KINDS: dict[str, Fields] = {
    "Node": NODE,
    "PodDisruptionBudget": PDB,
    "PriorityClass": PRIORITY_CLASS,
    "Namespace": NAMESPACE,
    "HorizontalPodAutoscaler": HPA,  # with its status: what it last read
    "ConfigMap": CONFIGMAP,
}
# What is exported of each kind; kinds not here (Services, Events, Secrets...) are not exported.
SCHEMAS: dict[str, Fields] = {**_pod_kinds(CONTAINER), **_OTHER_KINDS}
SCHEMAS_WITH_ENV: dict[str, Fields] = {**_pod_kinds(CONTAINER_WITH_ENV), **_OTHER_KINDS}

# -- the walk ----------------------------------------------------------------------------------------

_DROPPED = object()
_SCALAR_TYPES = (str, int, float, bool, datetime.date)  # datetime.datetime is a date
_VOLUME_SOURCES = frozenset(key for _, key in VOLUME_SOURCES)


def exported(obj: Mapping[str, Any], keep_env: bool = False) -> dict[str, Any] | None:
    """What the scenario keeps of one object (its kind's schema), or None for a kind it does not
    export. The object is not changed; what is returned shares no mapping or list with it."""
    kind = obj.get("kind")
    schema = (SCHEMAS_WITH_ENV if keep_env else SCHEMAS).get(kind) if isinstance(kind, str) else None
    if schema is None:
        return None
    kept = _kept(obj, schema)
    return None if kept is _DROPPED else kept


def _kept(value: Any, schema: Schema) -> Any:
    """`value` as `schema` keeps it, or _DROPPED when it does not have the schema's shape (a
    mapping where a scalar belongs, say: the parser never reads such a value, or the dump would
    not have loaded). A null is kept: to the parsers it is the field left out."""
    if value is None:
        return None
    if schema is SCALAR:
        return value if isinstance(value, _SCALAR_TYPES) else _DROPPED
    if isinstance(schema, Items):
        if not isinstance(value, list):
            return _DROPPED
        items = (_kept(item, schema.item) for item in value)
        return [item for item in items if item is not _DROPPED]
    if isinstance(schema, Conditions):
        return _conditions(value, schema)
    if not isinstance(value, dict):
        return _DROPPED
    # A null in a map of names is kept: the parsers read it as "" (a label with an empty value).
    if schema is NAMES:
        return {k: v for k, v in value.items() if _is_scalar(k) and (v is None or _is_scalar(v))}
    if schema is ANNOTATION_MAP:
        return {k: v for k, v in value.items() if _interpreted(k) and (v is None or _is_scalar(v))}
    if schema is VOLUME:
        return _volume(value)
    assert isinstance(schema, Mapping)
    result = {}
    for key, item in value.items():
        inner = schema.get(key) if isinstance(key, str) else None
        if inner is not None:
            kept = _kept(item, inner)
            if kept is not _DROPPED:
                result[key] = kept
    return result


def _conditions(value: Any, schema: Conditions) -> Any:
    if not isinstance(value, list):
        return _DROPPED
    kept = []
    for condition in value:
        kind = condition.get("type") if isinstance(condition, dict) else None
        fields = schema.fields.get(kind) if isinstance(kind, str) else None
        if fields is not None:
            kept.append({f: condition[f] for f in fields if _is_scalar(condition.get(f))})
    return kept


def _volume(volume: dict[Any, Any]) -> dict[str, Any]:
    kept: dict[str, Any] = {}
    if _is_scalar(volume.get("name")):
        kept["name"] = volume["name"]
    source = next((key for key in volume if key != "name"), None)
    if source in _VOLUME_SOURCES:
        content = volume[source]
        medium = content.get("medium") if source == "emptyDir" and isinstance(content, dict) else None
        kept[source] = {"medium": medium} if _is_scalar(medium) else {}
    return kept


def _is_scalar(value: Any) -> bool:
    return isinstance(value, _SCALAR_TYPES)


def _interpreted(key: Any) -> bool:
    return isinstance(key, str) and (key in ANNOTATIONS or key.startswith(ANNOTATION_PREFIXES))
