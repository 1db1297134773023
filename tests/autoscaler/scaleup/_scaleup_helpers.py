"""Small builders for the scale-up tests (imported by name: this directory has no __init__.py)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from kubetide.model import Node, ObjectMeta, OwnerReference, Pod, Taint, Toleration, Workload
from kubetide.model.node import HOSTNAME_LABEL, ZONE_LABEL
from kubetide.model.pod import Affinity, NodeSelectorTerm, PodAffinityTerm, TopologySpreadConstraint
from kubetide.model.selectors import LabelSelector, Requirement
from kubetide.model.workloads import PodTemplate

GIB = 2**30


def node(name, cpu=4000, mem=16 * GIB, pods=110, labels=None, taints=(), ready=True, **extra) -> Node:
    labels = {HOSTNAME_LABEL: name, ZONE_LABEL: "a", **(labels or {})}
    alloc = {"cpu": cpu, "memory": mem, "pods": pods, **extra}
    return Node(ObjectMeta(name, labels=labels), alloc, dict(alloc), tuple(taints), ready=ready)


def pod(
    name,
    cpu=100,
    mem=0,
    *,
    namespace="default",
    labels=None,
    owner=None,
    created=0.0,
    priority=0,
    unschedulable=True,
    node_name="",
    annotations=None,
    node_selector=None,
    tolerations=(),
    affinity=None,
    spread=(),
    **extra,
) -> Pod:
    owners = (OwnerReference("ReplicaSet", owner, f"uid-rs-{owner}", controller=True),) if owner else ()
    requests = {"cpu": cpu, "pods": 1, **extra}
    if mem:
        requests["memory"] = mem
    meta = ObjectMeta(
        name,
        namespace,
        f"uid-{namespace}-{name}",
        labels=dict(labels or {}),
        annotations=dict(annotations or {}),
        owner_references=owners,
        creation_timestamp=created,
    )
    return Pod(
        meta,
        requests,
        {},
        node_name=node_name,
        node_selector=dict(node_selector or {}),
        tolerations=tuple(tolerations),
        affinity=affinity or Affinity(),
        topology_spread=tuple(spread),
        priority=priority,
        scheduled_status="" if node_name or not unschedulable else "False",
        scheduled_reason="" if node_name or not unschedulable else "Unschedulable",
        phase="Running" if node_name else "Pending",
    )


def replicas(prefix, count, **kwargs) -> list[Pod]:
    """`count` pods stamped from one template, as a ReplicaSet would (shared spec objects)."""
    first = pod(f"{prefix}-0", owner=kwargs.pop("owner", prefix), **kwargs)
    result = [first]
    for i in range(1, count):
        meta = dataclasses.replace(
            first.meta,
            name=f"{prefix}-{i}",
            uid=f"uid-{first.namespace}-{prefix}-{i}",
            labels=dict(first.labels),
        )
        result.append(dataclasses.replace(first, meta=meta))
    return result


def anti_affinity(labels: dict, key=HOSTNAME_LABEL) -> Affinity:
    return Affinity(anti_required=(PodAffinityTerm(LabelSelector(tuple(sorted(labels.items()))), key),))


def zone_spread(labels: dict, skew=1) -> TopologySpreadConstraint:
    return TopologySpreadConstraint(
        skew, ZONE_LABEL, "DoNotSchedule", LabelSelector(tuple(sorted(labels.items())))
    )


def node_affinity_in(key, *values) -> Affinity:
    return Affinity(node_required=(NodeSelectorTerm((Requirement(key, "In", tuple(values)),)),))


def tolerate(key, value="", effect="NoSchedule") -> Toleration:
    return Toleration(key, "Equal", value, effect)


def taint(key, value="", effect="NoSchedule") -> Taint:
    return Taint(key, value, effect)


def daemonset(name, cpu=100, mem=0, node_selector=None, tolerations=()) -> Workload:
    proto = pod(
        f"{name}-template",
        cpu,
        mem,
        namespace="kube-system",
        node_selector=node_selector,
        tolerations=tolerations,
        unschedulable=False,
    )
    meta = ObjectMeta(name, "kube-system", f"uid-ds-{name}")
    return Workload("DaemonSet", meta, LabelSelector(), PodTemplate(proto))


class FakeGroup:
    """A NodeGroup port with a fixed template, recording increases."""

    def __init__(self, id, template: Node, *, min_size=0, max_size=10, target=0, price=None):
        self._id = id
        self._template = template
        self.min_size = min_size
        self.max_size = max_size
        self.target = target
        self.price = price
        self.increases: list[int] = []

    @property
    def id(self) -> str:
        return self._id

    def target_size(self) -> int:
        return self.target

    def increase_size(self, delta: int) -> None:
        self.increases.append(delta)
        self.target += delta

    def decrease_target_size(self, delta: int) -> None:
        self.target -= delta

    def delete_nodes(self, nodes: Sequence[Node]) -> None:
        self.target -= len(nodes)

    def instances(self):
        return ()

    def template_node(self) -> Node | None:
        return self._template

    def price_per_hour(self) -> float | None:
        return self.price
