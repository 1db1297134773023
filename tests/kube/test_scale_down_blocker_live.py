"""--annotate-scale-down-blockers on a real control plane: the loop writes
kubetide.io/scale-down-blocker on a node a bare pod blocks, with what would unblock it, and removes
it once the suggested change is made (the pod annotated safe-to-evict) and the node is no longer
blocked. The loop runs in-process on the real adapters (view, actions); node groups come from the
nodes' group label, read-only, as `kubetide plan` finds them."""

from __future__ import annotations

import pytest
from controlplane import KubeTestContext, wait_until
from in_process_loop import GROUP_LABEL, create_spare_node, in_process_autoscaler
from kubetide_process import run_bare_pod

from kubetide.autoscaler.options import AutoscalerOptions
from kubetide.autoscaler.scaledown.unblock_answer import BLOCKER_ANNOTATION
from kubetide.clock import WallClock

pytestmark = pytest.mark.controlplane

SAFE_TO_EVICT = "cluster-autoscaler.kubernetes.io/safe-to-evict"


def test_the_loop_annotates_a_blocked_node_and_clears_it_once_unblocked(kube: KubeTestContext):
    group = f"blk-{kube.namespace[-6:]}"
    blocked, spare = f"{group}-a", f"{group}-b"
    kube.create_fake_node(blocked, labels={GROUP_LABEL: group})
    # The spare node takes the pod once it may move (it is never a candidate itself). Until its
    # not-ready taint is off the answer would rightly be two changes.
    create_spare_node(kube, spare, group)
    kube.wait_node_ready(blocked)
    run_bare_pod(kube, "lonely", blocked, "the bare pod running")

    # A failed simulation is remembered for unremovable-node-recheck-timeout (CA's 5m): 0 here,
    # so the loop after the change simulates the node again.
    options = AutoscalerOptions().with_values(
        annotate_scale_down_blockers=True, unremovable_node_recheck_timeout=0.0
    )
    clock = WallClock()
    with in_process_autoscaler(kube, group, options, clock, write_status_configmap=False) as loop:
        autoscaler, view = loop

        def annotation() -> str | None:
            return (kube.core.read_node(blocked).metadata.annotations or {}).get(BLOCKER_ANNOTATION)

        autoscaler.run_once()
        line = annotation()
        pod = f"{kube.namespace}/lonely"
        assert line == (
            f"BlockedByPod by {pod} (NotReplicated); to unblock: pod {pod} is bare: give it a controller"
            f' or annotate {SAFE_TO_EVICT}: "true"'
        )
        assert BLOCKER_ANNOTATION not in (kube.core.read_node(spare).metadata.annotations or {})

        # Apply the suggestion: the node is no longer blocked (unneeded, its timer running), and
        # the loop takes the line off.
        kube.core.patch_namespaced_pod(
            "lonely", kube.namespace, {"metadata": {"annotations": {SAFE_TO_EVICT: "true"}}}
        )

        def cleared() -> bool:
            view.refresh()
            autoscaler.run_once()
            return annotation() is None

        wait_until(cleared, timeout=30, what="the blocker annotation removed")
        decision = autoscaler.run_once().decision
        assert decision is not None and decision.scale_down is not None
        assert blocked in decision.scale_down.candidate_set
