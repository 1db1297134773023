"""Issue 39 item 5: a scale-up's "instead of" is the size the previous scale-up set.

The kwok provider counts a group's nodes in the view's snapshot, and planning adds the upcoming
nodes to that same snapshot as template copies (carrying the group's label): read during
planning, the group's target size counted them twice, and the log's "from" jumped past the
previous "to". The sizes are read before planning touches the snapshot.
"""

from __future__ import annotations

from _scaleup_helpers import node, replicas, taint

from kubetide.autoscaler.inputs import LoopInputs
from kubetide.autoscaler.options import AutoscalerOptions
from kubetide.autoscaler.scaleup.orchestrator import ScaleUp
from kubetide.clock import WorkTimer
from kubetide.cloud.kwok import KwokNodeGroup
from kubetide.cloud.static import GroupDefinition
from kubetide.snapshot import ClusterSnapshot

GROUP = "burst"


def kwok_group(snapshot: ClusterSnapshot) -> KwokNodeGroup:
    template = node("burst-template", cpu=4000, labels={"kubetide.io/node-group": GROUP})
    definition = GroupDefinition(GROUP, 0, 60, 1.0, template, "groups.yaml", "nodeGroups[0]")
    return KwokNodeGroup(definition, client=None, nodes=lambda: snapshot)  # type: ignore[arg-type]


def test_each_scale_ups_from_is_the_previous_to_while_nodes_are_coming():
    # The previous scale-up's nodes: registered, not ready yet (so the registry counts them as
    # upcoming), tainted not-ready as the node lifecycle controller does.
    not_ready = taint("node.kubernetes.io/not-ready")
    registered = [
        node(
            f"burst-{i}", cpu=4000, labels={"kubetide.io/node-group": GROUP}, ready=False, taints=(not_ready,)
        )
        for i in range(3)
    ]
    snapshot = ClusterSnapshot([node("other", cpu=10), *registered])
    group = kwok_group(snapshot)
    assert group.target_size() == 3  # the previous scale-up's "to"
    inputs = LoopInputs(1000.0, snapshot, pending=replicas("web", 20, cpu=1000))
    plan = ScaleUp(AutoscalerOptions(), timer=WorkTimer(1e-3), seed=1).plan(
        inputs, node_groups=[group], upcoming={GROUP: 3}
    )
    # 20 pods of one cpu on 4-cpu nodes: 3 coming take 12, 8 need 2 more.
    assert [(i.group_id, i.current, i.new_size) for i in plan.increases] == [(GROUP, 3, 5)]
    assert any("instead of 3" in e.message for e in plan.events if e.reason == "ScaledUpGroup")
