"""Template nodes: what one more node of a group would look like once it is up.

A group's `template_node()` gives labels, taints and allocatable. Before binpacking, kubetide
takes off what the node would lose at start-up to DaemonSet pods: a DaemonSet runs one pod on
every node its pod template accepts, and those requests are as real as any pending pod's. Which
DaemonSets accept the template is decided by the scheduler's own filters (node selector, node
affinity, taints vs tolerations) through the PredicateChecker on the template node; a DaemonSet
pod that would not fit the template's resources is left out, as the Cluster Autoscaler does.

The overhead is folded into allocatable rather than bound as pods, so every copy of the template
starts empty: copies are cheap to add and a fresh copy is the same for every pod class.

Templates are also sanitised the way CA sanitises a template built from a live node: the taints
kubetide or the node lifecycle controller put on one particular node (ToBeDeleted, deletion
candidate, not-ready, unreachable, cordon, startup/ignore taints) say nothing about a new node,
and a cordoned example node must not make its whole group useless.

Each copy gets a unique name and a `kubernetes.io/hostname` label equal to it, so hostname-level
anti-affinity and spread treat copies as distinct nodes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from kubetide.autoscaler.options import AutoscalerOptions
from kubetide.autoscaler.ports import DELETION_CANDIDATE_TAINT, TO_BE_DELETED_TAINT
from kubetide.model import Node, ObjectMeta, OwnerReference, Pod, Taint, Workload
from kubetide.model.node import HOSTNAME_LABEL
from kubetide.scheduling import PredicateChecker
from kubetide.snapshot import ClusterSnapshot

# Taints that describe one node's state, not the group's shape.
NODE_STATE_TAINT_PREFIXES = (
    "node.kubernetes.io/",  # not-ready, unreachable, unschedulable, *-pressure, ...
    "node.cloudprovider.kubernetes.io/uninitialized",
    "startup-taint.cluster-autoscaler.kubernetes.io/",
    "ignore-taint.cluster-autoscaler.kubernetes.io/",
    "status-taint.cluster-autoscaler.kubernetes.io/",
)
AUTOSCALER_TAINTS = (TO_BE_DELETED_TAINT, DELETION_CANDIDATE_TAINT)


def sanitize_taints(taints: Iterable[Taint], options: AutoscalerOptions | None = None) -> tuple[Taint, ...]:
    """Without the node-state taints; with `options`, also without the startup and status taints
    its flags name (--startup-taint, --status-taint, ...)."""
    return tuple(
        t
        for t in taints
        if t.key not in AUTOSCALER_TAINTS
        and not t.key.startswith(NODE_STATE_TAINT_PREFIXES)
        and not (options is not None and (options.is_startup_taint(t.key) or options.is_status_taint(t.key)))
    )


@dataclass(slots=True)
class GroupTemplate:
    """A group's template, with the DaemonSet overhead already taken off allocatable."""

    group_id: str
    node: Node  # named like the copies' prefix; allocatable net of DaemonSets
    raw: Node  # as the cloud provider described it
    daemonsets: tuple[str, ...] = ()  # workload keys of the DaemonSets counted
    overhead: dict[str, int] = field(default_factory=dict)
    prefix: str = ""

    def copy(self, suffix: object) -> Node:
        """A fresh node of this template named `<prefix>-<suffix>`."""
        name = f"{self.prefix}-{suffix}"
        labels = dict(self.node.labels)
        labels[HOSTNAME_LABEL] = name
        meta = ObjectMeta(name, labels=labels, annotations=dict(self.node.annotations))
        return dataclasses.replace(self.node, meta=meta)


def _daemonset_pod(workload: Workload, node_name: str, index: int) -> Pod:
    owner = OwnerReference("DaemonSet", workload.name, workload.meta.uid, controller=True)
    name = f"{workload.name}-template-{index}"
    return workload.template.instantiate(
        name, workload.namespace, f"kubetide-ds-{workload.meta.uid}-{node_name}", owner, 0.0, node_name
    )


def build_template(
    group_id: str,
    raw: Node,
    daemonsets: Sequence[Workload],
    snapshot: ClusterSnapshot,
    checker: PredicateChecker,
    options: AutoscalerOptions | None = None,
) -> GroupTemplate:
    """The group's template net of the DaemonSets that would run on it.

    `checker` is a PredicateChecker attached to `snapshot`; the snapshot is left as found.
    """
    prefix = f"template-node-for-{group_id}"
    labels = dict(raw.labels)
    labels[HOSTNAME_LABEL] = prefix
    clean = dataclasses.replace(
        raw,
        meta=ObjectMeta(prefix, labels=labels, annotations=dict(raw.annotations)),
        taints=sanitize_taints(raw.taints, options),
        unschedulable=False,
        ready=True,
    )
    counted: list[str] = []
    overhead: dict[str, int] = {}
    if daemonsets:
        snapshot.fork()
        try:
            snapshot.add_node(clean)
            for i, ds in enumerate(daemonsets):
                ds_pod = _daemonset_pod(ds, prefix, i)
                if checker.fits(ds_pod, prefix) is not None:
                    continue
                # Bound so the next DaemonSet sees the space (and host ports) taken.
                snapshot.add_pod(ds_pod, prefix)
                counted.append(ds.key)
                for resource, amount in ds_pod.requests.items():
                    overhead[resource] = overhead.get(resource, 0) + amount
        finally:
            snapshot.revert()
    allocatable = {r: max(0, v - overhead.get(r, 0)) for r, v in clean.allocatable.items()}
    node = dataclasses.replace(clean, allocatable=allocatable)
    return GroupTemplate(group_id, node, raw, tuple(counted), overhead, prefix)


def daemonsets_of(workloads: Iterable[Workload]) -> list[Workload]:
    return [w for w in workloads if w.kind == "DaemonSet"]
