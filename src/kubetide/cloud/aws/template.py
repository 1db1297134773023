"""Template nodes for Auto Scaling groups, so a group at zero can be scaled up.

As the Cluster Autoscaler's AWS provider builds them: the instance type comes from the group's
mixed instances policy (its first override, else its launch template), launch template or launch
configuration (`instance_types_of` lists every type the group may launch, for its price); its capacity from DescribeInstanceTypes (vCPUs, memory, GPUs as nvidia.com/gpu,
110 pods); allocatable equals capacity. Labels are those a kubelet on EC2 sets
(kubernetes.io/arch and os, node.kubernetes.io/instance-type, topology.kubernetes.io/region and
zone, the zone being the group's first) plus the group's tags

    k8s.io/cluster-autoscaler/node-template/label/<name>: <value>
    k8s.io/cluster-autoscaler/node-template/taint/<key>: <value>:<Effect>
    k8s.io/cluster-autoscaler/node-template/resources/<resource>: <quantity>   (overrides capacity)

Tags that do not parse are logged and ignored, as CA ignores them.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kubetide.cloud.aws.groups import AWS_ERRORS, Asg, AwsError
from kubetide.model import Node, ObjectMeta, Taint
from kubetide.model.node import REGION_LABEL, TAINT_EFFECTS, ZONE_LABEL
from kubetide.model.quantity import CPU, MEMORY, PODS, QuantityError, parse_capacity

log = logging.getLogger("kubetide.cloud.aws")

TAG_PREFIX = "k8s.io/cluster-autoscaler/node-template/"
LABEL_TAG = TAG_PREFIX + "label/"
TAINT_TAG = TAG_PREFIX + "taint/"
RESOURCE_TAG = TAG_PREFIX + "resources/"
GPU = "nvidia.com/gpu"
# What CA assumes a node of any instance type can run (the kubelet's default max-pods).
MAX_PODS = 110
# EC2's architecture names -> Kubernetes' (GOARCH).
ARCHITECTURES = {"x86_64": "amd64", "arm64": "arm64", "i386": "386"}


@dataclass(frozen=True, slots=True)
class InstanceTypeInfo:
    name: str
    vcpus: int
    memory_mib: int
    gpus: int
    architecture: str  # Kubernetes' name


class InstanceTypes:
    """DescribeInstanceTypes, cached for the life of the process (instance types do not change)."""

    def __init__(self, ec2: Any):
        self.ec2 = ec2
        self._known: dict[str, InstanceTypeInfo] = {}

    def get(self, name: str) -> InstanceTypeInfo:
        if name not in self._known:
            try:
                response = self.ec2.describe_instance_types(InstanceTypes=[name])
            except AWS_ERRORS as exc:
                raise AwsError(f"describing instance type {name}: {exc}") from None
            found = response.get("InstanceTypes", [])
            if not found:
                raise AwsError(f"unknown instance type {name}")
            self._known[name] = _instance_type_info(found[0])
        return self._known[name]


def _instance_type_info(described: Mapping[str, Any]) -> InstanceTypeInfo:
    architectures = described.get("ProcessorInfo", {}).get("SupportedArchitectures", ["x86_64"])
    gpus = sum(g.get("Count", 0) for g in described.get("GpuInfo", {}).get("Gpus", []))
    return InstanceTypeInfo(
        name=described["InstanceType"],
        vcpus=described["VCpuInfo"]["DefaultVCpus"],
        memory_mib=described["MemoryInfo"]["SizeInMiB"],
        gpus=gpus,
        architecture=ARCHITECTURES.get(architectures[0], architectures[0]),
    )


def instance_types_of(asg: Asg, autoscaling: Any, ec2: Any) -> tuple[str, ...]:
    """Every instance type new instances of the group may get, the one its template is built
    from first: a mixed instances policy's overrides in their order (CA builds the template from
    the first), else the launch template's or launch configuration's one type. An override that
    chooses by attributes (InstanceRequirements) names no type and adds none. Raises AwsError."""
    launch = asg.launch
    try:
        if "MixedInstancesPolicy" in launch:
            policy = launch["MixedInstancesPolicy"].get("LaunchTemplate", {})
            overrides = tuple(
                str(o["InstanceType"]) for o in policy.get("Overrides", []) if o.get("InstanceType")
            )
            if overrides:
                return overrides
            return (_launch_template_instance_type(policy.get("LaunchTemplateSpecification", {}), ec2),)
        if "LaunchTemplate" in launch:
            return (_launch_template_instance_type(launch["LaunchTemplate"], ec2),)
        if "LaunchConfigurationName" in launch:
            name = launch["LaunchConfigurationName"]
            response = autoscaling.describe_launch_configurations(LaunchConfigurationNames=[name])
            configurations = response.get("LaunchConfigurations", [])
            if configurations:
                return (str(configurations[0]["InstanceType"]),)
            raise AwsError(f"{asg.name}: launch configuration {name} not found")
    except AWS_ERRORS as exc:
        raise AwsError(f"{asg.name}: reading its launch settings: {exc}") from None
    raise AwsError(
        f"{asg.name}: no launch template, launch configuration or instance type to build a template from"
    )


def chooses_by_attributes(asg: Asg) -> bool:
    """Some of the group's mixed instances overrides pick instance types by attributes
    (InstanceRequirements): the types it may launch are not all named."""
    policy = asg.launch.get("MixedInstancesPolicy", {}).get("LaunchTemplate", {})
    return any(not o.get("InstanceType") for o in policy.get("Overrides", []))


def _launch_template_instance_type(spec: Mapping[str, Any], ec2: Any) -> str:
    selector = {k: spec[k] for k in ("LaunchTemplateId", "LaunchTemplateName") if spec.get(k)}
    version = spec.get("Version") or "$Default"
    response = ec2.describe_launch_template_versions(**selector, Versions=[version])
    versions = response.get("LaunchTemplateVersions", [])
    instance_type = versions[0].get("LaunchTemplateData", {}).get("InstanceType") if versions else None
    if not instance_type:
        # Attribute-based instance type selection (InstanceRequirements) is not supported.
        raise AwsError(f"launch template {selector} version {version} names no instance type")
    return str(instance_type)


def build_template(asg: Asg, info: InstanceTypeInfo, region: str) -> Node:
    """The Node a new instance of the group would register as (before kubelet reservations)."""
    capacity = {
        CPU: info.vcpus * 1000,
        MEMORY: info.memory_mib * 2**20,
        PODS: MAX_PODS,
    }
    if info.gpus:
        capacity[GPU] = info.gpus
    labels = {
        "kubernetes.io/arch": info.architecture,
        "kubernetes.io/os": "linux",
        "node.kubernetes.io/instance-type": info.name,
        REGION_LABEL: region,
    }
    if asg.zones:
        labels[ZONE_LABEL] = asg.zones[0]
    taints = []
    for key, value in sorted(asg.tags.items()):
        if key.startswith(LABEL_TAG):
            labels[key.removeprefix(LABEL_TAG)] = value
        elif key.startswith(TAINT_TAG):
            taint_value, _, effect = value.rpartition(":")
            if effect not in TAINT_EFFECTS:
                log.warning("%s: ignoring tag %s=%s: expected VALUE:EFFECT", asg.name, key, value)
                continue
            taints.append(Taint(key.removeprefix(TAINT_TAG), taint_value, effect))
        elif key.startswith(RESOURCE_TAG):
            resource = key.removeprefix(RESOURCE_TAG)
            try:
                capacity[resource] = parse_capacity(resource, value)
            except QuantityError as exc:
                log.warning("%s: ignoring tag %s=%s: %s", asg.name, key, value, exc)
    return Node(
        meta=ObjectMeta(f"{asg.name}-template", labels=labels),
        allocatable=dict(capacity),
        capacity=capacity,
        taints=tuple(taints),
    )
