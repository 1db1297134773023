"""The readiness history the drains' schedule reads (estimate.ReadinessHistory), kept per node
between loops under the node's snapshot stamp, against a walk over every pod after random
changes: pods added, removed and replaced, and what-ifs reverted (a revert gives back stamps)."""

import dataclasses

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule
from scaledown_fakes import node, pod, snapshot_of

from kubetide.autoscaler.scaledown.planning import ReadinessHistory

NODES = ("a", "b", "c")
OWNERS = ("web", "api", "db")
# Seconds from bound to Ready; None: a pod not Ready (it shows no history).
READY_AFTER = st.one_of(st.none(), st.sampled_from([0.0, 4.0, 12.5, 30.0, 75.0]))


def _pod(uid: int, node_name: str, owner: str | None, ready_after: float | None):
    p = pod(f"p{uid}", node_name, owner=None if owner is None else ("ReplicaSet", owner))
    if ready_after is None:
        return dataclasses.replace(p, ready=False)
    return dataclasses.replace(p, scheduled_transition=100.0, ready_transition=100.0 + ready_after)


def _walk(snapshot, owners):
    """Every pod's bound-to-Ready, the slowest per controller: what the history stands for."""
    slowest = {}
    for p in snapshot.pods():
        ref = p.controller
        if ref is None or not p.ready or p.restarts or p.ready_transition < p.scheduled_transition:
            continue
        owner = (p.namespace, ref.kind, ref.name)
        if owner in owners:
            slowest[owner] = max(slowest.get(owner, 0.0), p.ready_transition - p.scheduled_transition)
    return slowest


class KeptHistory(RuleBasedStateMachine):
    def __init__(self):
        super().__init__()
        self.snapshot = snapshot_of([node(n, cpu=64_000) for n in NODES], [])
        self.history = ReadinessHistory()
        self.uid = 0

    def _new(self, node_name, owner, ready_after):
        self.uid += 1
        return _pod(self.uid, node_name, owner, ready_after)

    @rule(node_name=st.sampled_from(NODES), owner=st.sampled_from((*OWNERS, None)), ready_after=READY_AFTER)
    def add(self, node_name, owner, ready_after):
        self.snapshot.add_pod(self._new(node_name, owner, ready_after), node_name)

    @rule(data=st.data())
    def remove(self, data):
        uids = sorted(p.uid for p in self.snapshot.pods())
        if uids:
            self.snapshot.remove_pod(data.draw(st.sampled_from(uids)))

    @rule(data=st.data(), ready_after=READY_AFTER)
    def replace(self, data, ready_after):
        """A pod's new version (it became Ready, or restarted) in place of the old one."""
        pods = sorted(self.snapshot.pods(), key=lambda p: p.uid)
        if pods:
            old = data.draw(st.sampled_from(pods))
            node_name = self.snapshot.node_of(old.uid)
            self.snapshot.remove_pod(old.uid)
            new = _pod(0, node_name, old.controller.name if old.controller else None, ready_after)
            self.snapshot.add_pod(dataclasses.replace(new, meta=old.meta), node_name)

    @rule(node_name=st.sampled_from(NODES), ready_after=READY_AFTER)
    def what_if_reverted(self, node_name, ready_after):
        """The planner's what-if: read inside a fork, then reverted (the stamps come back)."""
        self.snapshot.fork()
        self.snapshot.add_pod(self._new(node_name, OWNERS[0], ready_after), node_name)
        self.check()
        self.snapshot.revert()

    @invariant()
    def check(self):
        owners = {("default", "ReplicaSet", name) for name in OWNERS}
        expected = _walk(self.snapshot, owners)
        assert self.history.slowest(self.snapshot, owners) == expected
        assert ReadinessHistory().slowest(self.snapshot, owners) == expected


TestKeptHistory = KeptHistory.TestCase
TestKeptHistory.settings = settings(max_examples=60, stateful_step_count=25)
