"""Validation before acting (issue 25, item 2): a decided deletion starts only if the cluster still
looks the way the decision saw it; otherwise it is dropped with a typed reason."""

from __future__ import annotations

import dataclasses

import pytest
from scaledown_fakes import FakeActions, cloud_for, node, pdb, pod, workload

from kubetide.autoscaler.loop import Autoscaler
from kubetide.autoscaler.options import AutoscalerOptions
from kubetide.autoscaler.ports import TO_BE_DELETED_TAINT
from kubetide.autoscaler.scaledown.actuation.staleness import Stale, basis_of, stale_reason
from kubetide.clock import ManualClock, WorkTimer
from kubetide.snapshot import ClusterSnapshot

SAFE_TO_EVICT = "cluster-autoscaler.kubernetes.io/safe-to-evict"


def cluster():
    nodes = [node("n", 4000), node("other", 4000)]
    pods = [pod("web-1", "n", 200, labels={"app": "web"}), pod("web-2", "other", 200, labels={"app": "web"})]
    return nodes, pods, [pdb("web", "web", max_unavailable=1, allowed=1)]


def annotated(p, **annotations):
    return dataclasses.replace(
        p, meta=dataclasses.replace(p.meta, annotations={**p.meta.annotations, **annotations})
    )


def _remove_node(s, pods, pdbs, pending):
    s.remove_pod("uid-default-web-1")
    s.remove_node("n")
    return pdbs, pending


def _disable_scale_down(s, pods, pdbs, pending):
    n = s.node("n")
    s.replace_node(
        dataclasses.replace(
            n,
            meta=dataclasses.replace(
                n.meta, annotations={"cluster-autoscaler.kubernetes.io/scale-down-disabled": "true"}
            ),
        )
    )
    return pdbs, pending


def _pod_arrives(s, pods, pdbs, pending):
    s.add_pod(pod("late", "n", 100), "n")
    return pdbs, pending


def _pod_leaves(s, pods, pdbs, pending):
    s.remove_pod("uid-default-web-1")
    return pdbs, pending


def _pod_pinned(s, pods, pdbs, pending):
    s.remove_pod("uid-default-web-1")
    s.add_pod(annotated(pods[0], **{SAFE_TO_EVICT: "false"}), "n")
    return pdbs, pending


def _pod_becomes_unready(s, pods, pdbs, pending):
    s.remove_pod("uid-default-web-1")
    s.add_pod(dataclasses.replace(pods[0], ready=False), "n")
    return pdbs, pending


def _budget_tightened(s, pods, pdbs, pending):
    return [pdb("web", "web", max_unavailable=0, allowed=0)], pending


def _budget_status_moves(s, pods, pdbs, pending):
    return [pdb("web", "web", max_unavailable=1, allowed=0)], pending


def _new_budget_here(s, pods, pdbs, pending):
    return [*pdbs, pdb("all", "web-or-not")], pending


def _new_budget_elsewhere(s, pods, pdbs, pending):
    return [*pdbs, pdb("other", "x", namespace="batch")], pending


def _nominated_here(s, pods, pdbs, pending):
    return pdbs, [dataclasses.replace(pod("preemptor", "", 500), nominated_node_name="n")]


def _nominated_elsewhere(s, pods, pdbs, pending):
    return pdbs, [dataclasses.replace(pod("preemptor", "", 500), nominated_node_name="other")]


@pytest.mark.parametrize(
    "change, expected",
    [
        (lambda s, pods, pdbs, pending: (pdbs, pending), None),
        (_remove_node, Stale.NODE_GONE),
        (_disable_scale_down, Stale.NODE_CHANGED),
        (_pod_arrives, Stale.PODS_CHANGED),
        (_pod_leaves, Stale.PODS_CHANGED),
        (_pod_pinned, Stale.PODS_CHANGED),
        (_pod_becomes_unready, None),  # readiness is the eviction API's to judge, not a new drain
        (_budget_tightened, Stale.PDB_CHANGED),
        (_budget_status_moves, None),
        (_new_budget_here, Stale.PDB_CHANGED),
        (_new_budget_elsewhere, None),
        (_nominated_here, Stale.POD_NOMINATED),
        (_nominated_elsewhere, None),
    ],
    ids=[
        "unchanged",
        "node-gone",
        "scale-down-disabled",
        "pod-arrives",
        "pod-leaves",
        "pod-annotated-safe-to-evict-false",
        "pod-unready",
        "pdb-spec-changed",
        "pdb-status-only",
        "new-pdb-in-its-pods-namespace",
        "new-pdb-in-another-namespace",
        "pod-nominated-to-it",
        "pod-nominated-elsewhere",
    ],
)
def test_what_turns_a_decision_stale(change, expected):
    nodes, pods, pdbs = cluster()
    snapshot = ClusterSnapshot(nodes, pods)
    basis = basis_of(snapshot, "n", pdbs)
    pdbs_now, pending_now = change(snapshot, pods, pdbs, [])
    assert stale_reason(basis, snapshot, pending_now, pdbs_now) is expected


class MovingView:
    """A view whose cluster changes between the decision and the actuation: `refresh()` applies
    `moves`, as a real view takes in its informers' changes."""

    def __init__(self, snapshot, moves=()):
        self._snapshot = snapshot
        self.moves = list(moves)
        self.refreshed = 0

    def snapshot(self):
        return self._snapshot

    def pending_pods(self):
        return []

    def pdbs(self):
        return []

    def workloads(self):
        return [workload("ReplicaSet", "rs", 100)]

    def configmap(self, namespace, name):
        return None

    def refresh(self):
        self.refreshed += 1
        for move in self.moves:
            move(self._snapshot)
        self.moves.clear()


def loop(view):
    options = AutoscalerOptions(scale_down_unneeded_time=0.0, scale_down_delay_after_add=0.0)
    actions = FakeActions()
    cloud = cloud_for("a", "b")
    autoscaler = Autoscaler(options, ManualClock(1000.0), view, actions, cloud, timer=WorkTimer(1e-4))
    return autoscaler, actions


def two_nodes():
    # a is nearly empty, b is busy: a's pod fits on b, so a is removable (a drain).
    return ClusterSnapshot(
        [node("a", 4000), node("b", 4000)], [pod("small", "a", 100), pod("big", "b", 3000)]
    )


def test_the_loop_drops_a_node_whose_pods_changed_after_the_decision():
    view = MovingView(two_nodes(), [lambda s: s.add_pod(pod("late", "a", 100), "a")])
    autoscaler, actions = loop(view)
    result = autoscaler.run_once()
    assert result.decision is not None and result.decision.to_delete == ["a"]
    assert view.refreshed == 1
    assert result.started is not None and result.started.stale == {"a": Stale.PODS_CHANGED}
    assert result.started.started_drain == [] and TO_BE_DELETED_TAINT not in actions.taints.get("a", {})
    # The next loop decides again on the cluster as it is now, and goes on.
    autoscaler.clock.advance(10.0)
    again = autoscaler.run_once()
    assert again.started is not None and again.started.started_drain == ["a"] and not again.started.stale


def test_an_unchanged_cluster_starts_what_was_decided():
    view = MovingView(two_nodes())
    autoscaler, actions = loop(view)
    result = autoscaler.run_once()
    assert result.started is not None and result.started.started_drain == ["a"] and not result.started.stale
    assert TO_BE_DELETED_TAINT in actions.taints["a"]


def test_a_stale_decision_is_counted_by_reason_in_the_metrics():
    from kubetide.kube.metrics import AutoscalerMetrics

    view = MovingView(two_nodes(), [lambda s: s.add_pod(pod("late", "a", 100), "a")])
    autoscaler, _ = loop(view)
    metrics = AutoscalerMetrics(process_metrics=False)
    metrics.observe_loop(autoscaler.run_once(), 0.1, autoscaler)
    text = metrics.exposition()[0].decode()
    assert 'kubetide_scale_down_stale_decisions_total{reason="PodsChanged"} 1.0' in text
