"""The Cluster API group's template answers, by the port's contract (ports.NodeGroup.template_node):
a template, None for a group that has none, or a TemplateError classed as the group's own
configuration. Read from the provider's cache of objects: no API server needed."""

from __future__ import annotations

import pytest

from kubetide.autoscaler.ports import ProviderErrorCode, TemplateError
from kubetide.cloud.clusterapi import (
    CAPACITY_CPU,
    CAPACITY_MEMORY,
    MACHINE_DEPLOYMENT,
    ClusterApiCloudProvider,
    ClusterApiNodeGroup,
)
from kubetide.snapshot import ClusterSnapshot


def group_with(annotations: dict[str, str]) -> ClusterApiNodeGroup:
    provider = ClusterApiCloudProvider(None, lambda: ClusterSnapshot([]))  # type: ignore[arg-type]
    provider.objects[MACHINE_DEPLOYMENT]["ns/md"] = {"metadata": {"annotations": annotations}}
    return ClusterApiNodeGroup(provider, MACHINE_DEPLOYMENT, "ns/md")


@pytest.mark.parametrize(
    ("annotations", "cpu"),
    [
        ({CAPACITY_CPU: "2", CAPACITY_MEMORY: "4Gi"}, 2000),
        ({}, None),  # no Node to copy and no capacity annotations: no template, a normal answer
        ({CAPACITY_CPU: "2"}, None),  # memory missing: the same
    ],
)
def test_a_template_or_none(annotations, cpu):
    template = group_with(annotations).template_node()
    assert (None if template is None else template.allocatable["cpu"]) == cpu


@pytest.mark.parametrize(
    ("annotations", "message"),
    [
        ({CAPACITY_CPU: "two", CAPACITY_MEMORY: "4Gi"}, 'invalid quantity "two"'),
        ({CAPACITY_CPU: "2", CAPACITY_MEMORY: "4 GiB"}, "4 GiB"),
        ({CAPACITY_CPU: "2", CAPACITY_MEMORY: "-4Gi"}, 'quantity "-4Gi" must not be negative'),
    ],
)
def test_unreadable_capacity_annotations_are_a_configuration_error(annotations, message):
    with pytest.raises(TemplateError, match=message) as info:
        group_with(annotations).template_node()
    error = info.value
    assert error.group_id == "MachineDeployment/ns/md" and error.code is ProviderErrorCode.CONFIGURATION
    assert str(error).startswith("MachineDeployment/ns/md: capacity annotations: ")
