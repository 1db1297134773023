"""Each scheduled pod's paper facts kept between loops (estimate.KeptPodFacts) equal fresh ones.

A stateful test drives a small cluster through random changes of what a pod's facts read: pods
come and go and are replaced by other versions under their UID (other labels, so other budgets;
readiness; deletion; grace period; readiness history; controller), what-ifs are reverted (the
same objects come back), budgets come, go, change their selector or only their status, the
grace cap changes. Each loop schedules the pods of a random subset of the nodes
(the others are forgotten) and compares the kept facts with fresh ones: the very same pod and
equal facts. The same machine with the invalidation broken on purpose (the identity check, or
the budgets' selectors, left out) must fail.
"""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, rule, run_state_machine_as_test
from scaledown_fakes import node, pdb, pod, snapshot_of

from kubetide.autoscaler.options import AutoscalerOptions
from kubetide.autoscaler.scaledown.planning.estimate import KeptPodFacts, _pod_facts, _PodFacts
from kubetide.autoscaler.scaledown.planning.pdb import PdbTracker

APPS = ("web", "api", "db")
OWNERS = (("ReplicaSet", "web"), ("ReplicaSet", "api"), ("StatefulSet", "db"), None)


class FactsKeptEqualFresh(RuleBasedStateMachine):
    kept_kind: type[KeptPodFacts] = KeptPodFacts

    def __init__(self) -> None:
        super().__init__()
        self.snapshot = snapshot_of([node(f"n{i}") for i in range(3)], [])
        self.options = AutoscalerOptions()
        self.pdbs: dict[str, object] = {}
        self.kept = self.kept_kind()
        self.asked: set[int] = set()  # ids of the pods the last pass asked for
        self.serial = 0
        for i in range(4):
            self._add(f"n{i % 3}", OWNERS[i % 3], APPS[i % 3], ready=True, grace=30)

    def _add(self, node_name, owner, app, *, ready, grace) -> None:
        self.serial += 1
        p = pod(f"p{self.serial}", node_name, 10, owner=owner, labels={"app": app}, ready=ready, grace=grace)
        self.snapshot.add_pod(p, node_name)

    def _uids(self) -> list[str]:
        return sorted(p.uid for p in self.snapshot.pods())

    # -- changes ---------------------------------------------------------------------------------
    @rule(
        data=st.data(),
        owner=st.sampled_from(OWNERS),
        app=st.sampled_from(APPS),
        ready=st.booleans(),
        grace=st.sampled_from([0, 30, 900]),
    )
    def add_pod(self, data, owner, app, ready, grace):
        names = [n.name for n in self.snapshot.nodes()]
        self._add(data.draw(st.sampled_from(names)), owner, app, ready=ready, grace=grace)

    @rule(data=st.data())
    def remove_pod(self, data):
        if uids := self._uids():
            self.snapshot.remove_pod(data.draw(st.sampled_from(uids)))

    @rule(
        data=st.data(),
        app=st.sampled_from(APPS),
        owner=st.sampled_from(OWNERS),
        ready=st.booleans(),
        deleted=st.booleans(),
        grace=st.sampled_from([0, 30, 900]),
        ready_after=st.sampled_from([None, 4.0, 45.0]),
    )
    def a_pod_changes(self, data, app, owner, ready, deleted, grace, ready_after):
        """Another version of a pod under its UID."""
        if not (uids := self._uids()):
            return
        old = self.snapshot.pod(data.draw(st.sampled_from(uids)))
        other = pod(old.name, old.node_name, 10, owner=owner, labels={"app": app})
        meta = dataclasses.replace(
            old.meta,
            labels={"app": app},
            owner_references=other.meta.owner_references,
            deletion_timestamp=50.0 if deleted else None,
        )
        self.snapshot.update_pod(
            dataclasses.replace(
                old,
                meta=meta,
                ready=ready,
                termination_grace_period=grace,
                scheduled_transition=None if ready_after is None else 10.0,
                ready_transition=None if ready_after is None else 10.0 + ready_after,
            )
        )

    @rule(data=st.data())
    def a_what_if_is_reverted(self, data):
        if not (uids := self._uids()):
            return
        self.snapshot.fork()
        self.snapshot.remove_pod(data.draw(st.sampled_from(uids)))
        self.snapshot.revert()

    @rule(name=st.sampled_from(APPS), app=st.sampled_from(APPS), allowed=st.sampled_from([None, 0, 1, 2]))
    def a_budget_comes_goes_or_changes(self, name, app, allowed):
        """A budget named after one app may select another's pods; its status changes too."""
        if name in self.pdbs and allowed is None:
            del self.pdbs[name]
        else:
            self.pdbs[name] = pdb(f"pdb-{name}", app, allowed=allowed, max_unavailable=1)

    @rule(cap=st.sampled_from([10, 600]))
    def the_grace_cap_changes(self, cap):
        self.options = self.options.with_values(max_graceful_termination_sec=cap)

    # -- the comparison --------------------------------------------------------------------------
    @rule(data=st.data())
    def a_loop_schedules(self, data):
        names = [n.name for n in self.snapshot.nodes()]
        scheduled = data.draw(st.lists(st.sampled_from(names), unique=True))
        pdbs = list(self.pdbs.values())
        tracker = PdbTracker(pdbs, self.snapshot.pods())
        cap = self.options.max_graceful_termination_sec
        pods = [p for name in scheduled for p in self.snapshot.pods_on(name).values()]
        facts = self.kept.of_pass(pods, pdbs, tracker.matching, cap)
        for p in pods:
            kept, fresh = facts[id(p)], _pod_facts(p, tracker.matching, cap)
            assert kept.pod is p
            assert kept == fresh, p.name
            event("facts kept from the last loop" if id(p) in self.asked else "facts looked up")
        self.asked = {id(p) for p in pods}


SETTINGS = settings(
    max_examples=60, stateful_step_count=25, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
FactsKeptEqualFresh.TestCase.settings = SETTINGS
test_kept_facts_equal_fresh = FactsKeptEqualFresh.TestCase


class _ByUid(KeptPodFacts):
    """Broken on purpose: a pod's facts kept under its UID, whatever version it is now."""

    def __init__(self) -> None:
        super().__init__()
        self._first: dict[str, object] = {}  # uid -> the version first seen

    def of_pass(self, pods, pdbs, budgets_of, grace_cap):
        pods = list(pods)
        first = [self._first.get(p.uid, p) for p in pods]
        facts = super().of_pass(first, pdbs, budgets_of, grace_cap)
        self._first = {p.uid: p for p in first}
        return {id(p): facts[id(f)] for p, f in zip(pods, first)}


class _SelectorsIgnored(KeptPodFacts):
    """Broken on purpose: kept across a change of the budgets' selectors (the grace cap only)."""

    def of_pass(self, pods, pdbs, budgets_of, grace_cap):
        if self._key is not None:
            self._key = ((tuple((p.meta.namespace, p.selector) for p in pdbs)), self._key[1])
        return super().of_pass(pods, pdbs, budgets_of, grace_cap)


@pytest.mark.parametrize("broken", [_ByUid, _SelectorsIgnored])
def test_a_broken_invalidation_is_caught(broken):
    machine = type("Broken", (FactsKeptEqualFresh,), {"kept_kind": broken})
    with pytest.raises(AssertionError):
        run_state_machine_as_test(machine, settings=settings(SETTINGS, max_examples=200, database=None))


def test_facts_are_kept_for_the_same_pod_and_looked_up_for_a_new_version():
    """The table of reuse: the same facts object back while the pod object, the budgets'
    selectors and the grace cap hold; a budget's status is not read."""
    snapshot = snapshot_of([node("n0")], [pod("a", "n0", owner=("ReplicaSet", "web"))])
    kept = KeptPodFacts()

    def facts(pdbs, cap=600) -> _PodFacts:
        tracker = PdbTracker(pdbs, snapshot.pods())
        (p,) = snapshot.pods_on("n0").values()
        return kept.of_pass([p], pdbs, tracker.matching, cap)[id(p)]

    first = facts([])
    assert first.budgets == () and first.owner == ("default", "ReplicaSet", "web")
    assert facts([]) is first
    with_budget = facts([pdb("pdb-web", "web", allowed=1)])  # a budget selects it: looked up again
    assert with_budget is not first and with_budget.budgets == (0,)
    assert facts([pdb("pdb-web", "web", allowed=0)]) is with_budget  # only its status changed
    assert facts([pdb("pdb-web", "api", allowed=0)]).budgets == ()  # its selector changed
    assert facts([], cap=10).grace == 10.0
    old = snapshot.pod("uid-default-a")
    snapshot.update_pod(dataclasses.replace(old, ready=False))  # a new version: not healthy
    assert facts([pdb("pdb-web", "web", allowed=1)], cap=10).budgets == ()
