"""Issue 24 item 7: every provider keeps NodeGroup.target_size()'s contract during a deletion, so
the min-size check counts each deletion once.

The contract (autoscaler/ports.py): a deletion leaves the target when `delete_nodes` accepts the
node, and its instance is DELETING from then until it is gone. RemovalLimits subtracts only the
deletions in progress the cloud has not been asked for. Live, the kwok provider's group of
minSize 0 reported NodeGroupMinSizeReached for its last node while the other one was going:
its deletion was out of the target and subtracted again as "in progress".

Each provider is checked on the same table: node a of a two-node group is being deleted (tainted;
its deletion handed to the cloud or not yet); may node b go too?
"""

from __future__ import annotations

import pytest

from kubetide.autoscaler.options import AutoscalerOptions
from kubetide.autoscaler.ports import TO_BE_DELETED_TAINT, InstanceState
from kubetide.autoscaler.scaledown.planning.eligibility import RemovalLimits
from kubetide.autoscaler.scaledown.reasons import NodeReason
from kubetide.cloud.clusterapi import (
    MACHINE_SET,
    MAX_SIZE_ANNOTATION,
    MIN_SIZE_ANNOTATION,
    ClusterApiCloudProvider,
)
from kubetide.cloud.kwok import KwokNodeGroup
from kubetide.cloud.schema import NODE_GROUP_LABEL
from kubetide.cloud.static import GroupDefinition, StaticCloud, StaticNodeGroup
from kubetide.model import Node, ObjectMeta, Taint
from kubetide.snapshot import ClusterSnapshot

MIN = NodeReason.NODE_GROUP_MIN_SIZE_REACHED
# (group min size, a's deletion handed to the cloud, what the min-size check says of b)
CASES = [
    (0, False, None),  # 2 - 1 in progress - 0
    (0, True, None),  # 1 (a out of the target) - 0 - 0: the double count said MIN here
    (1, False, MIN),  # 2 - 1 - 1
    (1, True, MIN),  # 1 - 0 - 1
]
DOOMED = Taint(TO_BE_DELETED_TAINT, "100", "NoSchedule")


def node(name, group="g", *, provider_id=None, taints=()):
    alloc = {"cpu": 4000, "memory": 16 * 2**30, "pods": 110}
    return Node(
        ObjectMeta(name, labels={"kubernetes.io/hostname": name, NODE_GROUP_LABEL: group}),
        dict(alloc),
        dict(alloc),
        taints=tuple(taints),
        provider_id=provider_id if provider_id is not None else f"test://{name}",
    )


def min_size_verdict(cloud, a, b, *, asked, after_delete=lambda: None):
    """What the planner's min-size check says of b while a is being deleted, with the deletions
    in progress counted as search_candidates counts them (by the nodes' groups)."""
    if asked:
        group = cloud.node_group_for(a)
        group.delete_nodes([a])
        after_delete()
        # Until it is gone, a's instance is DELETING, if the group still lists it at all.
        assert {i.state for i in group.instances() if i.id == a.provider_id} <= {InstanceState.DELETING}
    groups = cloud.node_groups()
    now_in = cloud.node_group_for(a)
    in_progress = {now_in.id: 1} if now_in is not None else {}
    limits = RemovalLimits(AutoscalerOptions(), groups, [a, b], {a.name}, in_progress)
    return limits.check(b, cloud.node_group_for(b))


def a_and_b(**kw):
    return node("a", taints=[DOOMED], **kw), node("b")


# -- static -----------------------------------------------------------------------------------------
@pytest.mark.parametrize(("min_size", "asked", "expected"), CASES)
def test_static(min_size, asked, expected):
    a, b = a_and_b()
    template = node("template")
    cloud = StaticCloud([StaticNodeGroup("g", [a, b], template, min_size=min_size, max_size=5)])
    before = cloud.groups["g"].target_size()
    assert min_size_verdict(cloud, a, b, asked=asked) is expected
    assert cloud.groups["g"].target_size() == before - asked


# -- kwok -------------------------------------------------------------------------------------------
class FakeKube:
    def __init__(self):
        self.calls = []

    def request(self, method, path, body=None, **kw):
        self.calls.append((method, path))
        return {}


class KwokCloud:
    def __init__(self, group):
        self.group = group

    def node_groups(self):
        return [self.group]

    def node_group_for(self, n):
        return self.group


@pytest.mark.parametrize(("min_size", "asked", "expected"), CASES)
def test_kwok(min_size, asked, expected):
    a, b = a_and_b(provider_id="kwok://a")
    b = node("b", provider_id="kwok://b")
    snapshot = ClusterSnapshot([a, b], [])  # the view still shows a: its Node goes later
    definition = GroupDefinition("g", min_size, 5, 0.0, node("template"), "groups.yaml", "nodeGroups[0]")
    group = KwokNodeGroup(definition, FakeKube(), lambda: snapshot)
    assert min_size_verdict(KwokCloud(group), a, b, asked=asked) is expected
    assert group.target_size() == 2 - asked


# -- clusterapi -------------------------------------------------------------------------------------
class FakeScaleApi:
    """The scale subresource and Machine patches of one MachineSet; nothing reaches the informers,
    as when their watch events have not arrived yet."""

    def __init__(self, replicas):
        self.replicas = replicas
        self.version = 1

    def request(self, method, path, body=None, **kw):
        if path.endswith("/scale"):
            if method == "PUT":
                self.replicas = body["spec"]["replicas"]
                self.version += 1
            return {"metadata": {"resourceVersion": str(self.version)}, "spec": {"replicas": self.replicas}}
        return {}


def machine(name):
    return {
        "metadata": {
            "namespace": "ns",
            "name": name,
            "ownerReferences": [{"kind": "MachineSet", "name": "ms"}],
        },
        "spec": {"providerID": f"test://{name}"},
        "status": {"phase": "Running", "nodeRef": {"name": name}},
    }


@pytest.mark.parametrize(("min_size", "asked", "expected"), CASES)
def test_clusterapi(min_size, asked, expected):
    a, b = a_and_b()
    snapshot = ClusterSnapshot([a, b], [])
    api = FakeScaleApi(2)
    provider = ClusterApiCloudProvider(api, lambda: snapshot)  # informers never started
    provider.objects[MACHINE_SET]["ns/ms"] = {
        "metadata": {
            "namespace": "ns",
            "name": "ms",
            "annotations": {MIN_SIZE_ANNOTATION: str(min_size), MAX_SIZE_ANNOTATION: "5"},
        },
        "spec": {"replicas": 2},
    }
    provider.objects["Machine"].update({"ns/a": machine("a"), "ns/b": machine("b")})
    provider.refresh()
    assert min_size_verdict(provider, a, b, asked=asked) is expected
    assert provider.node_groups()[0].target_size() == 2 - asked
