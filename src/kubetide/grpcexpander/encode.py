"""kubetide's model objects as Kubernetes' protobuf bytes, for the expander's nodeBytesMap and
podBytes (k8s_subset.proto says which fields and why only those)."""

from __future__ import annotations

from collections.abc import Mapping

from kubetide.grpcexpander import k8s_subset_pb2 as k8s
from kubetide.model import Node, ObjectMeta, Pod
from kubetide.model.pod import Container
from kubetide.model.quantity import format_quantity


def node_bytes(node: Node) -> bytes:
    message = k8s.Node(
        metadata=_meta(node.meta),
        spec=k8s.NodeSpec(
            providerID=node.provider_id,
            unschedulable=node.unschedulable,
            taints=[k8s.Taint(key=t.key, value=t.value, effect=t.effect) for t in node.taints],
        ),
        status=k8s.NodeStatus(capacity=_quantities(node.capacity), allocatable=_quantities(node.allocatable)),
    )
    return message.SerializeToString(deterministic=True)


def pod_bytes(pod: Pod) -> bytes:
    spec = k8s.PodSpec(
        containers=[_container(c) for c in pod.containers],
        initContainers=[_container(c) for c in pod.init_containers],
        nodeSelector=pod.node_selector,
        nodeName=pod.node_name,
        schedulerName=pod.scheduler_name,
        tolerations=[
            k8s.Toleration(
                key=t.key,
                operator=t.operator,
                value=t.value,
                effect=t.effect,
                tolerationSeconds=t.toleration_seconds,
            )
            for t in pod.tolerations
        ],
        priorityClassName=pod.priority_class_name,
        priority=pod.priority,
    )
    message = k8s.Pod(metadata=_meta(pod.meta), spec=spec, status=k8s.PodStatus(phase=pod.phase))
    return message.SerializeToString(deterministic=True)


def _meta(meta: ObjectMeta) -> k8s.ObjectMeta:
    return k8s.ObjectMeta(
        name=meta.name,
        namespace=meta.namespace or None,
        uid=meta.uid or None,
        labels=meta.labels,
        annotations=meta.annotations,
    )


def _container(container: Container) -> k8s.Container:
    return k8s.Container(
        name=container.name,
        resources=k8s.ResourceRequirements(
            limits=_quantities(container.limits), requests=_quantities(container.requests)
        ),
    )


def _quantities(amounts: Mapping[str, int]) -> dict[str, k8s.Quantity]:
    return {
        resource: k8s.Quantity(string=format_quantity(resource, units)) for resource, units in amounts.items()
    }
