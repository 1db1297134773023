"""The registry's update reuses what it derived from its last pass over the nodes (the records by
group, their counts, the provider ids) while the same Node objects come back all Ready. Against a
registry given a copy of every Node each loop, which therefore derives everything again, after
random changes: nodes turning unready and Ready, tainted, deleted by the cloud, removed, instances
coming up before their nodes register, the same objects coming back."""

import dataclasses

from clusterstate_fakes import T0, FakeCloud, FakeGroup, make_registry, node, pid
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from kubetide.autoscaler.clusterstate.readiness import Readiness
from kubetide.autoscaler.ports import InstanceState

GROUPS = ("ng-a", "ng-b")


class IncrementalRegistry(RuleBasedStateMachine):
    def __init__(self):
        super().__init__()
        self.cloud = FakeCloud(*(FakeGroup(g, target=0) for g in GROUPS))
        self.nodes = {}  # name -> Node
        self.incremental = make_registry()
        self.recomputed = make_registry()
        self.now = T0
        self.serial = 0
        self.deleting = set()

    def _names(self, data):
        names = sorted(self.nodes)
        return data.draw(st.sampled_from(names)) if names else None

    @rule(group=st.sampled_from(GROUPS), register=st.booleans())
    def scale_up(self, group, register):
        """An instance comes up; its node registers now or later (`register_pending`)."""
        self.serial += 1
        name = f"{group}-{self.serial}"
        self.cloud[group].add(name)
        self.cloud[group].target += 1
        if register:
            self.nodes[name] = node(name, created=self.now)

    @rule()
    def register_pending(self):
        for group in self.cloud.groups.values():
            for instance in group.listed:
                name = instance.id.removeprefix("fake:///")
                if name not in self.nodes and instance.state is InstanceState.RUNNING:
                    self.nodes[name] = node(name, created=self.now, ready=False)
                    return

    @rule(data=st.data(), ready=st.booleans())
    def readiness(self, data, ready):
        name = self._names(data)
        if name is not None:
            self.nodes[name] = dataclasses.replace(self.nodes[name], ready=ready, ready_transition=self.now)

    @rule(data=st.data())
    def taint(self, data):
        name = self._names(data)
        if name is not None:
            old = self.nodes[name]
            tainted = node(
                name, created=old.meta.creation_timestamp, ready=old.ready, deleting_since=self.now
            )
            self.nodes[name] = tainted

    @rule(data=st.data())
    def cloud_deletes(self, data):
        name = self._names(data)
        if name is not None:
            for group in self.cloud.groups.values():
                if any(i.id == pid(name) for i in group.listed):
                    group.delete_nodes([self.nodes[name]])

    @rule(data=st.data())
    def removed(self, data):
        name = self._names(data)
        if name is not None:
            del self.nodes[name]
            for group in self.cloud.groups.values():
                group.drop(name)

    @rule(seconds=st.sampled_from([10.0, 60.0, 400.0, 1200.0]))
    def loop(self, seconds):
        self.now += seconds
        nodes = list(self.nodes.values())
        self.incremental.update(nodes, self.cloud, self.now)
        self.recomputed.update([dataclasses.replace(n) for n in nodes], self.cloud, self.now)
        self.deleting = {
            i.id for g in self.cloud.groups.values() for i in g.listed if i.state is InstanceState.DELETING
        }

    @invariant()
    def same_answers(self):
        a, b = self.incremental, self.recomputed
        assert a.node_counts() == b.node_counts()
        assert a.node_groups() == b.node_groups()
        assert a.nodes() == b.nodes()
        assert a.is_cluster_healthy() == b.is_cluster_healthy()
        assert a.upcoming_nodes() == b.upcoming_nodes()
        assert a.unready_nodes_at_target() == b.unready_nodes_at_target()
        assert a.size_fixes(self.now) == b.size_fixes(self.now)
        assert a.take_events() == b.take_events()

    @invariant()
    def counts_are_the_records(self):
        """What the update derives, against the records it holds, tallied here from scratch."""
        registry = self.incremental
        records = registry.nodes()
        deleting = self.deleting  # as the last update saw the cloud
        assert _tally(registry.node_counts()) == _tally_records(records)
        for state in registry.node_groups():
            of_group = [r for r in records if r.group_id == state.id]
            assert _tally(state.counts) == _tally_records(of_group)
            assert state.never_ready == tuple(
                sorted(r.name for r in of_group if r.never_started and r.readiness is Readiness.UNREADY)
            )
            assert state.not_arrived == sum(1 for r in of_group if r.never_started)
            assert state.in_target == sum(1 for r in of_group if pid(r.name) not in deleting)


def _tally(counts):
    return (counts.registered, counts.ready, counts.unready, counts.not_started, counts.being_deleted)


def _tally_records(records):
    readiness = [r.readiness for r in records]
    return (
        len(records),
        *(
            readiness.count(state)
            for state in (Readiness.READY, Readiness.UNREADY, Readiness.NOT_STARTED, Readiness.BEING_DELETED)
        ),
    )


TestIncrementalRegistry = IncrementalRegistry.TestCase
TestIncrementalRegistry.settings = settings(max_examples=60, stateful_step_count=30)
