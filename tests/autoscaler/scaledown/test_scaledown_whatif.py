"""The what-if transaction and `simulate_removal` (CA's SimulateNodeRemoval), each on its own
(issue 25, item 4)."""

from __future__ import annotations

import pytest
from scaledown_fakes import cloud_for, node, pdb, pod

from kubetide.autoscaler.options import AutoscalerOptions
from kubetide.autoscaler.scaledown.planning.candidates import simulate_removal
from kubetide.autoscaler.scaledown.planning.drainability import DrainContext, DrainRules, drain_node
from kubetide.autoscaler.scaledown.planning.pdb import PdbTracker
from kubetide.autoscaler.scaledown.planning.placement import PodMover
from kubetide.autoscaler.scaledown.planning.plan import ScaleDownPlan
from kubetide.autoscaler.scaledown.planning.update import Received, Update
from kubetide.autoscaler.scaledown.planning.whatif import what_if
from kubetide.autoscaler.scaledown.reasons import NodeReason, PodReason
from kubetide.scheduling import PredicateChecker
from kubetide.snapshot import ClusterSnapshot

# -- what_if ---------------------------------------------------------------------------------------


class Journal:
    """A journaled value, as the snapshot, the PDB tracker and the usage guard are."""

    def __init__(self, value=0):
        self.value = value
        self._marks: list[int] = []

    def fork(self):
        self._marks.append(self.value)

    def revert(self):
        self.value = self._marks.pop()

    def commit(self):
        self._marks.pop()


def test_a_trial_not_kept_reverts_every_state_together():
    a, b = Journal(1), Journal(2)
    with what_if(a, None, b):
        a.value, b.value = 10, 20
    assert (a.value, b.value, a._marks, b._marks) == (1, 2, [], [])


def test_a_kept_trial_commits_every_state_together():
    a, b = Journal(1), Journal(2)
    with what_if(a, b) as trial:
        a.value, b.value = 10, 20
        trial.keep()
    assert (a.value, b.value, a._marks, b._marks) == (10, 20, [], [])


def test_a_trial_that_raises_reverts_even_when_kept():
    a = Journal(1)
    with pytest.raises(RuntimeError), what_if(a) as trial:
        a.value = 10
        trial.keep()
        raise RuntimeError("simulation failed")
    assert (a.value, a._marks) == (1, [])


def test_nested_trials_over_the_real_snapshot():
    snapshot = ClusterSnapshot([node("a", 2000), node("b", 2000)], [pod("p", "a", 500)])
    with what_if(snapshot) as outer:
        snapshot.move_pod("uid-default-p", "b")
        with what_if(snapshot):
            snapshot.remove_pod("uid-default-p")
        assert snapshot.node_of("uid-default-p") == "b"
        outer.keep()
    assert snapshot.node_of("uid-default-p") == "b" and snapshot.depth == 0


# -- simulate_removal ------------------------------------------------------------------------------


def removal_of(name, nodes, pods, pdbs=()):
    """simulate_removal of `name` on its own, inside a what-if the test inspects then reverts."""
    options = AutoscalerOptions()
    snapshot = ClusterSnapshot(nodes, pods)
    tracker = PdbTracker(pdbs, snapshot.pods())
    ctx = DrainContext(DrainRules.from_options(options), tracker, 0.0, None)
    checker = PredicateChecker(snapshot)
    u = Update(
        options,
        snapshot,
        cloud_for(*[n.name for n in nodes]),
        0.0,
        set(),
        set(),
        ctx,
        PodMover(snapshot, checker),
        ScaleDownPlan(now=0.0),
        {},
    )
    drain = drain_node(list(snapshot.pods_on(name).values()), ctx)
    u.skip.add(name)
    with what_if(snapshot, tracker):
        removal = simulate_removal(u, name, drain, [Received(p, name) for p in drain.movable])
        placed = {p.key: snapshot.node_of(p.uid) for p in drain.movable}
    checker.close()
    after = {p.key: snapshot.node_of(p.uid) for p in drain.movable}
    return removal, placed, after


def web(name, node_name, cpu=500, ready=True):
    return pod(name, node_name, cpu, labels={"app": "web"}, ready=ready)


@pytest.mark.parametrize(
    "pods, pdbs, removable, reason, pod_reason",
    [
        ([web("w1", "a"), web("w2", "b")], [], True, None, None),
        (
            [web("w1", "a", cpu=1800), pod("big", "b", 1500)],
            [],
            False,
            NodeReason.NO_PLACE_TO_MOVE_PODS,
            None,
        ),
        (
            [web("w1", "a"), web("w2", "b")],
            [pdb("web", "web", max_unavailable=0)],
            False,
            NodeReason.BLOCKED_BY_POD,
            PodReason.NOT_ENOUGH_PDB,
        ),
        # maxUnavailable 1, but the pod on b is not Ready: the budget is used up for now only.
        (
            [web("w1", "a"), web("w2", "b", ready=False)],
            [pdb("web", "web", max_unavailable=1)],
            False,
            None,
            None,
        ),
    ],
    ids=["fits", "fits-nowhere", "pinned-by-its-budget", "waits-for-its-budget"],
)
def test_simulate_removal(pods, pdbs, removable, reason, pod_reason):
    removal, placed, after = removal_of("a", [node("a", 2000), node("b", 2000)], pods, pdbs)
    assert removal.removable is removable
    if removable:
        assert [(r.pod.key, dest) for r, dest in removal.moved] == [("default/w1", "b")]
        assert placed == {"default/w1": "b"}  # on the what-if...
        assert after == {"default/w1": "a"}  # ...and gone with it
    elif reason is None:
        assert removal.failed is None and removal.waiting is not None
        assert removal.waiting.pdb.key == "default/web"
    else:
        assert removal.failed is not None and removal.failed.reason is reason
        blocking = removal.failed.blocking_pod
        assert (blocking.reason if blocking is not None else None) is pod_reason
