"""Per-node results kept between loops equal the ones computed afresh.

- `drainability.KeptDrains`: each node's `drain_node`, kept under its pods, the rules' context and
  the verdicts of the pods that read the clock (the planner's eligible nodes and the schedule's
  waiting nodes use it);
- `evictions.OwnedPods`: every owner's bound and Ready pods over the nodes, kept as running sums.

A stateful test drives a small cluster through random changes of what a drain reads: pods of
every kind come, go and are replaced by other versions (annotations safe-to-evict and
karpenter.sh/do-not-disrupt, terminating, finished, mirror, expendable, local storage,
kube-system), what-ifs reverted (the node lists its pods in another order then), nodes come and
go, controllers vanish or drop below min-replica-count, budgets for kube-system pods come and
go, the flags change and time passes. After every step both kept results are compared with
fresh ones: the same drains holding the very same pod objects, and the same counts.
"""

from __future__ import annotations

import dataclasses
from collections import Counter

from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule
from scaledown_fakes import node, pdb, pod, snapshot_of, workload

from kubetide.autoscaler.options import AutoscalerOptions
from kubetide.autoscaler.scaledown.planning.drainability import (
    DO_NOT_DISRUPT,
    SAFE_TO_EVICT,
    DrainContext,
    DrainRules,
    KeptDrains,
    NodeDrain,
    drain_node,
    index_workloads,
)
from kubetide.autoscaler.scaledown.planning.evictions import OwnedPods, owner_key
from kubetide.autoscaler.scaledown.planning.pdb import PdbTracker
from kubetide.model.pod import MIRROR_ANNOTATION, Volume
from kubetide.snapshot import ClusterSnapshot

OWNERS = (("ReplicaSet", "web"), ("ReplicaSet", "api"), ("StatefulSet", "db"), ("Job", "batch"))
OTHER_OWNERS = (("DaemonSet", "agent"), ("Rollout", "custom"), None)
# What a pod may carry: (annotations, other fields).
SHAPES = {
    "plain": ({}, {}),
    "safe": ({SAFE_TO_EVICT: "true"}, {}),
    "unsafe": ({SAFE_TO_EVICT: "false"}, {}),
    "on-completion": ({SAFE_TO_EVICT: "on-completion"}, {}),
    "do-not-disrupt": ({DO_NOT_DISRUPT: "true"}, {}),
    "do-not-disrupt-90s": ({DO_NOT_DISRUPT: "90s"}, {"start_time": 1000.0}),
    "mirror": ({MIRROR_ANNOTATION: "x"}, {}),
    "finished": ({}, {"phase": "Succeeded"}),
    "expendable": ({}, {"priority": -100}),
    "local-storage": ({}, {"volumes": (Volume("scratch", "emptyDir"),)}),
}


def _context(options: AutoscalerOptions, snapshot: ClusterSnapshot, pdbs, workloads, now: float):
    index = index_workloads(workloads)
    return DrainContext(
        DrainRules.from_options(options), PdbTracker(pdbs, snapshot.pods(), index), now, index
    )


def _ids(drain: NodeDrain) -> tuple:
    """The drain with every pod named by its identity, blockers by pod identity and reason."""
    return (
        [id(p) for p in drain.movable],
        [id(p) for p in drain.terminal],
        [id(p) for p in drain.daemonset],
        [id(p) for p in drain.skipped],
        [id(p) for p in drain.on_completion],
        [(id(b.pod), b.reason, b.pdb, b.left) for b in drain.blockers],
    )


def _counted(snapshot: ClusterSnapshot) -> tuple[Counter, Counter]:
    bound: Counter = Counter()
    ready: Counter = Counter()
    for p in snapshot.pods():
        key = owner_key(p)
        if key is not None and not p.is_terminating:
            bound[key] += 1
            if p.ready:
                ready[key] += 1
    return bound, ready


def _nonzero(counts) -> dict:
    return {key: n for key, n in counts.items() if n}


class KeptEqualsFresh(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.now = 1000.0
        self.options = AutoscalerOptions().with_values(
            min_replica_count=2, blocking_system_pod_distruption_timeout=300
        )
        self.snapshot = snapshot_of([node(f"n{i}") for i in range(3)], [])
        self.nodes_made = 3
        self.serial = 0
        self.workloads = {name: workload(kind, name, 3) for kind, name in OWNERS}
        self.pdbs: dict[str, object] = {}
        self.drains = KeptDrains()
        self.last: dict[str, NodeDrain] = {}  # each node's drain at the last step
        self.owned = OwnedPods()
        for i in range(6):
            self._add(f"n{i % 3}", OWNERS[i % len(OWNERS)], "plain", "default", ready=True)

    # -- helpers ---------------------------------------------------------------------------------
    def _add(self, node_name: str, owner, shape: str, namespace: str, *, ready: bool) -> None:
        self.serial += 1
        annotations, fields = SHAPES[shape]
        p = pod(f"p{self.serial}", node_name, 50, owner=owner, annotations=annotations, namespace=namespace)
        p = dataclasses.replace(p, ready=ready, **fields)
        self.snapshot.add_pod(p, node_name)

    def _nodes(self) -> list[str]:
        return [n.name for n in self.snapshot.nodes()]

    def _pods(self) -> list[str]:
        return sorted(p.uid for p in self.snapshot.pods())

    # -- changes ---------------------------------------------------------------------------------
    @rule(
        data=st.data(),
        owner=st.sampled_from(OWNERS + OTHER_OWNERS),
        shape=st.sampled_from(sorted(SHAPES)),
        namespace=st.sampled_from(["default", "default", "kube-system"]),
        ready=st.booleans(),
    )
    def add_pod(self, data, owner, shape, namespace, ready):
        self._add(data.draw(st.sampled_from(self._nodes())), owner, shape, namespace, ready=ready)

    @rule(data=st.data())
    def remove_pod(self, data):
        uids = self._pods()
        if uids:
            self.snapshot.remove_pod(data.draw(st.sampled_from(uids)))

    @rule(data=st.data(), shape=st.sampled_from(sorted(SHAPES)), ready=st.booleans())
    def a_pod_changes(self, data, shape, ready):
        """Another version of a pod (annotations, readiness, phase...) under its UID."""
        uids = self._pods()
        if not uids:
            return
        old = self.snapshot.pod(data.draw(st.sampled_from(uids)))
        annotations, fields = SHAPES[shape]
        meta = dataclasses.replace(old.meta, annotations=dict(annotations))
        self.snapshot.update_pod(dataclasses.replace(old, meta=meta, ready=ready, **fields))

    @rule(data=st.data())
    def a_pod_starts_terminating(self, data):
        uids = self._pods()
        if not uids:
            return
        old = self.snapshot.pod(data.draw(st.sampled_from(uids)))
        if old.meta.deletion_timestamp is None:
            meta = dataclasses.replace(old.meta, deletion_timestamp=self.now)
            self.snapshot.update_pod(dataclasses.replace(old, meta=meta))

    @rule(data=st.data())
    def a_what_if_is_reverted(self, data):
        """A pod removed in a fork comes back at the end of its node's pods: same stamp, other
        order."""
        uids = self._pods()
        if not uids:
            return
        self.snapshot.fork()
        self.snapshot.remove_pod(data.draw(st.sampled_from(uids)))
        self.snapshot.revert()

    @rule()
    def add_node(self):
        self.snapshot.add_node(node(f"n{self.nodes_made}"))
        self.nodes_made += 1

    @rule(data=st.data())
    def remove_node(self, data):
        names = self._nodes()
        if len(names) > 1:
            self.snapshot.remove_node(data.draw(st.sampled_from(names)))

    @rule(owner=st.sampled_from(OWNERS), replicas=st.sampled_from([None, 0, 1, 3]), gone=st.booleans())
    def a_controller_changes(self, owner, replicas, gone):
        kind, name = owner
        if gone:
            self.workloads.pop(name, None)
        else:
            self.workloads[name] = workload(kind, name, replicas)

    @rule(data=st.data())
    def a_kube_system_budget_comes_or_goes(self, data):
        """Rule 8 reads whether a kube-system pod has a budget."""
        system = [p for p in self.snapshot.pods() if p.namespace == "kube-system"]
        if not system:
            return
        app = data.draw(st.sampled_from(sorted({p.labels["app"] for p in system})))
        if app in self.pdbs:
            del self.pdbs[app]
        else:
            self.pdbs[app] = pdb(f"pdb-{app}", app, namespace="kube-system", allowed=1, max_unavailable=1)

    @rule(
        flag=st.sampled_from(
            [
                "skip_nodes_with_system_pods",
                "skip_nodes_with_local_storage",
                "skip_nodes_with_custom_controller_pods",
            ]
        )
    )
    def a_flag_flips(self, flag):
        self.options = self.options.with_values(**{flag: not getattr(self.options, flag)})

    @rule(seconds=st.sampled_from([0.0, 10.0, 60.0, 200.0, 1000.0]))
    def time_passes(self, seconds):
        self.now += seconds

    # -- the comparison --------------------------------------------------------------------------
    @invariant()
    def kept_drains_are_fresh_ones(self):
        ctx = _context(
            self.options, self.snapshot, list(self.pdbs.values()), self.workloads.values(), self.now
        )
        self.drains.new_pass(ctx)
        for name in self._nodes():
            pods = tuple(self.snapshot.pods_on(name).values())
            kept = self.drains.drain(name, pods, ctx)
            fresh = drain_node(pods, ctx)
            assert _ids(kept) == _ids(fresh), name
            event("a drain kept from the last step" if kept is self.last.get(name) else "a drain sorted")
            self.last[name] = kept

    @invariant()
    def kept_counts_are_fresh_ones(self):
        bound, ready = self.owned.totals(self.snapshot)
        fresh_bound, fresh_ready = _counted(self.snapshot)
        assert _nonzero(bound) == _nonzero(fresh_bound)
        assert _nonzero(ready) == _nonzero(fresh_ready)


KeptEqualsFresh.TestCase.settings = settings(
    max_examples=80, stateful_step_count=30, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
test_kept_equals_fresh = KeptEqualsFresh.TestCase


def test_a_kept_drain_is_given_back_while_nothing_it_reads_changed():
    """The table of reuse: the same drain object back while the pods and the context hold."""
    web = workload("ReplicaSet", "web", 3)
    snapshot = snapshot_of([node("n0")], [pod("a", "n0", owner=("ReplicaSet", "web"))])
    options = AutoscalerOptions().with_values(min_replica_count=2)
    kept = KeptDrains()

    def drain(now, workloads, s=snapshot, o=options):
        ctx = _context(o, s, [], workloads, now)
        kept.new_pass(ctx)
        return kept.drain("n0", tuple(s.pods_on("n0").values()), ctx)

    first = drain(1000.0, [web])
    assert drain(5000.0, [web]) is first  # no pod reads the clock
    assert drain(5000.0, [workload("ReplicaSet", "web", 5)]) is first  # rule 3's answer holds
    below = drain(5000.0, [workload("ReplicaSet", "web", 1)])  # below min-replica-count
    assert below is not first and below.blocking is not None
    assert drain(5000.0, []).blocking is not None  # the controller is gone
    unsafe = dataclasses.replace(
        snapshot.pod("uid-default-a"),
        meta=dataclasses.replace(snapshot.pod("uid-default-a").meta, annotations={SAFE_TO_EVICT: "false"}),
    )
    snapshot.update_pod(unsafe)
    assert drain(5000.0, [web]).blocking.pod is unsafe
