"""Karpenter's "consolidated" state (autoscaler/karpenter/state.py): a consolidation method that
found nothing to do is skipped until the cluster changes the way Karpenter's cluster state counts
a change (a pod bound or deleted, a Node or NodeClaim added, removed or initialized), or until
five minutes pass without one."""

from __future__ import annotations

import dataclasses

import pytest
from test_karpenter_methods import cluster, context, node, pod

from kubetide.autoscaler.karpenter.methods import Emptiness, MultiNodeConsolidation, SingleNodeConsolidation
from kubetide.autoscaler.karpenter.state import CONSOLIDATION_STATE_TTL, ConsolidationState
from kubetide.model import Taint
from kubetide.snapshot import ClusterSnapshot

SINGLE = SingleNodeConsolidation.name
CLAIMED = "kubetide://large/c"  # node c registered for a NodeClaim launched earlier, not Ready yet


def _world():
    """Nodes a (two pods) and b (none), c registering for its NodeClaim; one pod pending. The
    single-node method found nothing at 0 s."""
    snapshot = ClusterSnapshot([node("a", "large"), node("b", "large")])
    snapshot.add_node(dataclasses.replace(node("c", "large"), ready=False, provider_id=CLAIMED))
    for name in ("p0", "p1"):
        snapshot.add_pod(pod(name, "1", "a"), "a")
    pending = {"uid-waiting"}
    state = ConsolidationState()
    state.observe(snapshot, frozenset(pending), {CLAIMED}, 0.0)
    state.mark_consolidated(SINGLE)
    return snapshot, pending, state


def _update_pod(snapshot, uid, **changes):
    snapshot.update_pod(dataclasses.replace(snapshot.pod(uid), **changes))


def _update_node(snapshot, name, **changes):
    snapshot.replace_node(dataclasses.replace(snapshot.node(name), **changes))


CHANGES = {
    # what Karpenter's cluster state counts (MarkUnconsolidated)
    "a pod bound to a node": (lambda s, p: s.add_pod(pod("new", "1", "b"), "b"), False),
    "a pending pod bound": (lambda s, p: (p.clear(), s.add_pod(pod("waiting", "1", "b"), "b")), False),
    "a bound pod deleted": (lambda s, p: s.remove_pod("uid-p0"), False),
    "a pending pod deleted": (lambda s, p: p.clear(), False),
    "a node added": (lambda s, p: s.add_node(node("d", "small")), False),
    "a node removed": (lambda s, p: s.remove_node("b"), False),
    "a NodeClaim's node initialized (Ready)": (lambda s, p: _update_node(s, "c", ready=True), False),
    # what it does not count
    "nothing": (lambda s, p: None, True),
    "a pod created pending": (lambda s, p: p.add("uid-another"), True),
    "a pod turning Ready": (lambda s, p: _update_pod(s, "uid-p0", ready=True), True),
    "a pod finishing": (lambda s, p: _update_pod(s, "uid-p0", phase="Succeeded"), True),
    "a node registering for its NodeClaim": (
        lambda s, p: s.add_node(dataclasses.replace(node("e", "large"), ready=False, provider_id=CLAIMED)),
        True,
    ),
    "a node turning NotReady": (lambda s, p: _update_node(s, "a", ready=False), True),
    "a node tainted": (lambda s, p: _update_node(s, "a", taints=(Taint("k", "v", "NoSchedule"),)), True),
}


@pytest.mark.parametrize("change", CHANGES)
def test_the_mark_holds_until_karpenter_counts_a_change(change):
    apply, holds = CHANGES[change]
    snapshot, pending, state = _world()
    apply(snapshot, pending)
    state.observe(snapshot, frozenset(pending), {CLAIMED}, 10.0)
    assert state.is_consolidated(SINGLE) is holds
    # a change is taken in once: the method marks again and the mark holds at the next look
    state.mark_consolidated(SINGLE)
    state.observe(snapshot, frozenset(pending), {CLAIMED}, 20.0)
    assert state.is_consolidated(SINGLE)


def test_a_finished_pod_counts_when_it_is_deleted():
    snapshot, pending, state = _world()
    _update_pod(snapshot, "uid-p0", phase="Succeeded")
    state.observe(snapshot, frozenset(pending), {CLAIMED}, 10.0)
    assert state.is_consolidated(SINGLE)
    snapshot.remove_pod("uid-p0")
    state.observe(snapshot, frozenset(pending), {CLAIMED}, 20.0)
    assert not state.is_consolidated(SINGLE)


def test_the_state_renews_five_minutes_after_the_last_change_not_after_the_mark():
    snapshot, pending, state = _world()
    snapshot.add_pod(pod("new", "1", "b"), "b")
    state.observe(snapshot, frozenset(pending), {CLAIMED}, 100.0)  # the last change
    state.mark_consolidated(SINGLE)  # marked at 200 s, on the state of 100 s
    for now in (200.0, 100.0 + CONSOLIDATION_STATE_TTL - 1):
        state.observe(snapshot, frozenset(pending), {CLAIMED}, now)
        assert state.is_consolidated(SINGLE)
    state.observe(snapshot, frozenset(pending), {CLAIMED}, 100.0 + CONSOLIDATION_STATE_TTL)
    assert not state.is_consolidated(SINGLE)


def test_a_change_the_controller_reports_counts():
    # NodeClaims created and deleted are the controller's own doing (Karpenter.consolidation)
    _, _, state = _world()
    state.mark_unconsolidated(10.0)
    assert not state.is_consolidated(SINGLE)


# -- the methods and the mark -------------------------------------------------------------------------
DELETABLE = {"a": ("large", ["1"]), "b": ("large", ["6"])}  # a's pod fits on b: a can go
STUCK = {"a": ("large", ["7"]), "b": ("large", ["7"])}  # nothing can go


@pytest.mark.parametrize("method", [SingleNodeConsolidation(), MultiNodeConsolidation()])
def test_a_marked_method_is_skipped_until_the_state_moves(method):
    layout = {**DELETABLE, "c": ("large", ["1"])}
    snapshot, checker, kinds, candidates = cluster(layout)
    state = ConsolidationState()
    state.mark_consolidated(method.name)
    ctx = context(snapshot, checker, kinds)
    ctx.consolidation = state
    assert method.compute(ctx, candidates) is None
    state.mark_unconsolidated(10.0)
    assert method.compute(ctx, candidates) is not None


@pytest.mark.parametrize(
    ("method", "layout", "budget", "marks"),
    [
        (SingleNodeConsolidation(), STUCK, 10, True),  # found nothing
        (MultiNodeConsolidation(), STUCK, 10, True),
        (MultiNodeConsolidation(), {"a": ("large", ["7"])}, 10, True),  # fewer than two: nothing
        (SingleNodeConsolidation(), DELETABLE, 0, False),  # a budget held a candidate back
        (MultiNodeConsolidation(), {n: ("large", ["1"]) for n in "abc"}, 1, False),
        (SingleNodeConsolidation(), {"a": ("large", [])}, 10, False),  # no candidate: not asked
        (MultiNodeConsolidation(), {"a": ("large", [])}, 10, False),
        (SingleNodeConsolidation(), DELETABLE, 10, False),  # a command
        (Emptiness(), {"a": ("large", ["7"])}, 10, False),  # emptiness keeps no mark
    ],
)
def test_a_method_marks_only_when_it_had_candidates_and_found_nothing_unheld(method, layout, budget, marks):
    snapshot, checker, kinds, candidates = cluster(layout)
    state = ConsolidationState()
    ctx = context(snapshot, checker, kinds, budget)
    ctx.consolidation = state
    method.compute(ctx, candidates)
    assert state.is_consolidated(method.name) is marks
