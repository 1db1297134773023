"""The planner's state between loops as objects (issue 25, item 4): unneeded timers and the
non-candidate set with its recheck time."""

from __future__ import annotations

from kubetide.autoscaler.options import AutoscalerOptions
from kubetide.autoscaler.scaledown.planning.state import UnneededNodes, Unremovable, UnremovableNodes
from kubetide.autoscaler.scaledown.reasons import NodeReason


def test_unneeded_nodes_keep_their_time_start_anew_or_are_forgotten():
    unneeded = UnneededNodes()
    unneeded.renew(["a", "b"], now=100.0)
    unneeded.renew(["b", "c"], now=160.0)
    assert unneeded == {"b": 100.0, "c": 160.0}
    options = AutoscalerOptions(scale_down_unneeded_time=600.0, scale_down_unready_time=1200.0)
    assert unneeded.removable_at("b", ready=True, options=options) == 700.0
    assert unneeded.removable_at("b", ready=False, options=options) == 1300.0


def test_a_failed_simulation_is_remembered_until_its_recheck_time():
    failed = UnremovableNodes(recheck_timeout=300.0)
    failed.renew(
        {"a": Unremovable(100.0, NodeReason.NO_PLACE_TO_MOVE_PODS)},
        now=100.0,
        exists=lambda n: True,
        candidates=(),
    )
    assert failed.recheck_at("a") == 400.0
    assert "a" in failed.recent(399.0) and "a" not in failed.recent(400.0)
    # Kept while due later, dropped once the node is gone or became a candidate.
    failed.renew({}, now=200.0, exists=lambda n: True, candidates=())
    assert "a" in failed
    failed.renew({}, now=200.0, exists=lambda n: True, candidates=["a"])
    assert "a" not in failed
    failed.renew(
        {"b": Unremovable(200.0, NodeReason.BLOCKED_BY_POD)}, now=200.0, exists=lambda n: True, candidates=()
    )
    failed.renew({}, now=250.0, exists=lambda n: n != "b", candidates=())
    assert len(failed) == 0
