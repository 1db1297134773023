"""Incremental planning (issue 30): a planner that replays last loop's search when nothing it read
changed (reuse.py), and tries nodes waiting for budget on paper (placement.move_on_paper), plans
exactly as one that recomputes every loop and moves every trial's pods.

The stateful test drives one small cluster through random events (pods and nodes come and go,
taints, PDB statuses, budgets used up for now or for good, terminating pods, kube-system pods
aging, pods with required anti-affinity or a hard zone spread, evictions, scale-ups and deletions,
time passing by a few seconds or by hours) and after every step runs a loop of both planners on
the same inputs: the plans (every node's status and reason, the candidate set, what is removable,
destinations, PDB disruptions left) and the state they keep (unneeded times, non-candidates,
hints) must be equal. Only `simulated` and `on_paper` differ: that is the point.
"""

from __future__ import annotations

import dataclasses

from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule
from scaledown_fakes import FakeCloud, FakeGroup, node, pdb, pod, workload

from kubetide.autoscaler.inputs import LoopInputs
from kubetide.autoscaler.options import AutoscalerOptions
from kubetide.autoscaler.ports import TO_BE_DELETED_TAINT
from kubetide.autoscaler.scaledown.planning.eligibility import SCALE_DOWN_DISABLED_ANNOTATION
from kubetide.autoscaler.scaledown.planning.planner import Planner
from kubetide.clock import WorkTimer
from kubetide.model import LabelSelector, Taint
from kubetide.model.pod import Affinity, PodAffinityTerm, TopologySpreadConstraint
from kubetide.snapshot import ClusterSnapshot

OPTIONS = AutoscalerOptions().with_values(
    scale_down_unneeded_time=60,
    unremovable_node_recheck_timeout=300,
    blocking_system_pod_distruption_timeout=900,
)
APPS = ("web", "api", "batch")
ZONE, HOSTNAME = "topology.kubernetes.io/zone", "kubernetes.io/hostname"
ZONES = ("a", "b")
BUSY = {SCALE_DOWN_DISABLED_ANNOTATION: "true"}  # never a candidate
WORKLOADS = [workload("ReplicaSet", app, 10) for app in APPS]


def _plan_facts(planner: Planner, plan) -> dict:
    facts = plan.to_json()
    facts["explained"] = plan.summary()
    facts["estimates"] = {name: status.estimate for name, status in plan.nodes.items()}
    facts["pdb_remaining"] = plan.pdb_remaining
    facts["injected"] = plan.injected
    # A revert puts pods back at the end of their node's dict: the order a node lists its pods in
    # may differ between two planners sharing one snapshot (and never matters: moves are sorted).
    facts["drains"] = {name: sorted(p.uid for p in drain.movable) for name, drain in plan.drains.items()}
    facts["unneeded_since"] = dict(planner.unneeded_since)
    facts["unremovable"] = dict(planner.unremovable)
    facts["hints"] = planner.hints
    return facts


class IncrementalEqualsFull(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.now = 1000.0
        self.cloud = FakeCloud()
        self.group = self.cloud.add(FakeGroup("g", min_size=1, max_size=20))
        self.snapshot = ClusterSnapshot()
        self.serial = 0
        self.nodes_made = 0
        # Ten pods expected, eight to stay healthy: a budget used up waits (the node keeps its time).
        self.pdbs = {
            app: pdb(app, app, allowed=2, max_unavailable=2, expected_pods=10, desired_healthy=8)
            for app in APPS[:2]
        }
        self.incremental = Planner(OPTIONS, timer=WorkTimer(1e-3))
        # The reference: recomputes every loop and moves every trial's pods for real.
        self.full = Planner(OPTIONS, timer=WorkTimer(1e-3), incremental=False, on_paper=False)
        self.being_deleted: set[str] = set()
        for _ in range(5):
            self._add_node(cpu=1000)
        for i in range(8):
            self._add_pod(f"n{i % 5}", 150, APPS[i % 3])
        # web's budget starts used up: its nodes wait for it, and their trials are what a search
        # that runs may replay (trials.py)
        self.pdb_status_changes("web", 0, for_good=False)

    # -- helpers ---------------------------------------------------------------------------------
    def _name(self, prefix: str) -> str:
        self.serial += 1
        return f"{prefix}{self.serial}"

    def _add_node(self, cpu: int) -> None:
        name = f"n{self.nodes_made}"
        zone = ZONES[self.nodes_made % 2]
        self.nodes_made += 1
        self.snapshot.add_node(node(name, cpu, labels={ZONE: zone, HOSTNAME: name}))
        self.group.members.append(name)

    def _add_pod(self, node_name: str, cpu: int, app: str, *, constraint: str = "", **kw) -> None:
        name = self._name("p")
        p = pod(name, node_name, cpu, owner=("ReplicaSet", app), **kw)
        selector = LabelSelector((("app", app),))
        if constraint == "anti-affinity":  # one per node: any bound pod's term reads other nodes
            p = dataclasses.replace(
                p, affinity=Affinity(anti_required=(PodAffinityTerm(selector, HOSTNAME),))
            )
        elif constraint == "zone-spread":  # a hard spread: its fit reads the whole zone
            spread = TopologySpreadConstraint(1, ZONE, "DoNotSchedule", selector)
            p = dataclasses.replace(p, topology_spread=(spread,))
        self.snapshot.add_pod(p, node_name)

    def _nodes(self) -> list[str]:
        return [n.name for n in self.snapshot.nodes()]

    def _pods(self) -> list[str]:
        return sorted(p.uid for p in self.snapshot.pods())

    # -- events ----------------------------------------------------------------------------------
    @rule(data=st.data(), cpu=st.sampled_from([50, 150, 300, 600]), app=st.sampled_from(APPS))
    def add_pod(self, data, cpu, app):
        target = data.draw(st.sampled_from(self._nodes()))
        self._add_pod(target, cpu, app)

    @rule(
        data=st.data(),
        cpu=st.sampled_from([50, 150]),
        app=st.sampled_from(APPS),
        constraint=st.sampled_from(["anti-affinity", "zone-spread"]),
    )
    def add_constrained_pod(self, data, cpu, app, constraint):
        target = data.draw(st.sampled_from(self._nodes()))
        self._add_pod(target, cpu, app, constraint=constraint)

    @rule(data=st.data(), age=st.sampled_from([0.0, 600.0, 5000.0]))
    def add_kube_system_pod(self, data, age):
        target = data.draw(st.sampled_from(self._nodes()))
        self._add_pod(target, 50, "api", namespace="kube-system", created=self.now - age)

    @precondition(lambda self: self.snapshot.pod_count() > 0)
    @rule(data=st.data())
    def remove_pod(self, data):
        self.snapshot.remove_pod(data.draw(st.sampled_from(self._pods())))

    @precondition(lambda self: self.snapshot.pod_count() > 0)
    @rule(data=st.data())
    def start_terminating(self, data):
        uid = data.draw(st.sampled_from(self._pods()))
        old = self.snapshot.pod(uid)
        if old.meta.deletion_timestamp is None:
            meta = dataclasses.replace(old.meta, deletion_timestamp=self.now)
            self.snapshot.update_pod(dataclasses.replace(old, meta=meta))

    @precondition(lambda self: len(self.snapshot) < 8)
    @rule(cpu=st.sampled_from([500, 1000, 2000]))
    def add_node(self, cpu):
        self._add_node(cpu)

    @precondition(lambda self: len(self.snapshot) > 2)
    @rule(data=st.data())
    def remove_node(self, data):
        name = data.draw(st.sampled_from(self._nodes()))
        self.snapshot.remove_node(name)
        self.group.members.remove(name)
        self.being_deleted.discard(name)

    @rule(data=st.data(), key=st.sampled_from([TO_BE_DELETED_TAINT, "dedicated"]))
    def taint_or_untaint(self, data, key):
        name = data.draw(st.sampled_from(self._nodes()))
        old = self.snapshot.node(name)
        if old.has_taint(key):
            taints = tuple(t for t in old.taints if t.key != key)
        else:
            taints = (*old.taints, Taint(key, str(self.now), "NoSchedule"))
        self.snapshot.replace_node(dataclasses.replace(old, taints=taints))

    @rule(data=st.data())
    def toggle_being_deleted(self, data):
        name = data.draw(st.sampled_from(self._nodes()))
        self.being_deleted ^= {name}

    @rule(app=st.sampled_from(APPS[:2]), allowed=st.integers(0, 3), for_good=st.booleans())
    def pdb_status_changes(self, app, allowed, for_good):
        # for_good: no disruption even with every pod healthy (a refusal, not a wait)
        desired = 10 if for_good else 8
        self.pdbs[app] = dataclasses.replace(
            self.pdbs[app], disruptions_allowed=allowed, desired_healthy=desired
        )

    @rule(app=st.sampled_from(APPS))
    def evict_a_pod(self, app):
        for p in self.snapshot.pods():
            if p.controller is not None and p.controller.name == app:
                self.snapshot.remove_pod(p.uid)
                self.incremental.record_eviction(p, self.now)
                self.full.record_eviction(p, self.now)
                return

    @rule(which=st.sampled_from(["scale_up", "deletion", "failure"]))
    def note(self, which):
        for planner in (self.incremental, self.full):
            getattr(planner, f"note_{which}")(self.now)

    @rule(seconds=st.sampled_from([0.0, 10.0, 10.0, 45.0, 120.0, 400.0, 4000.0]))
    def time_passes(self, seconds):
        self.now += seconds

    # -- the comparison --------------------------------------------------------------------------
    def next_loop(self) -> LoopInputs:
        """The next loop's inputs: a scan interval after the last."""
        self.now += 10.0
        return LoopInputs(
            self.now,
            self.snapshot,
            pdbs=list(self.pdbs.values()),
            workloads=WORKLOADS,
            being_deleted=set(self.being_deleted),
        )

    @invariant()
    def a_loop_plans_alike(self):
        inputs = self.next_loop()
        full = self.full.update(inputs, cloud=self.cloud)
        expected = _plan_facts(self.full, full)
        reused = self.incremental.reused
        incremental = self.incremental.update(inputs, cloud=self.cloud)
        assert _plan_facts(self.incremental, incremental) == expected
        event("replayed" if self.incremental.reused > reused else "recomputed")
        if incremental.on_paper:
            event("nodes waiting for budget tried on paper")


IncrementalEqualsFull.TestCase.settings = settings(
    max_examples=80, stateful_step_count=25, suppress_health_check=[HealthCheck.too_slow]
)
test_incremental_planning_equals_full_planning = IncrementalEqualsFull.TestCase


def _loop(planner: Planner, s: ClusterSnapshot, now: float, cloud: FakeCloud):
    return planner.update(LoopInputs(now, s, workloads=WORKLOADS), cloud=cloud)


def test_a_quiet_loop_replays_the_search_and_a_change_recomputes_it():
    cloud = FakeCloud()
    cloud.add(FakeGroup("g"), "a", "b", "c")
    s = ClusterSnapshot(
        [node("a"), node("b"), node("c", annotations=BUSY)],
        [pod("pa", "a", 300, owner=("ReplicaSet", "web")), pod("pb", "b", 600, owner=("ReplicaSet", "web"))],
    )
    planner = Planner(OPTIONS, timer=WorkTimer(1e-3))
    first = _loop(planner, s, 0.0, cloud)
    assert first.candidate_set == ["a"] and first.simulated > 0
    _loop(planner, s, 10.0, cloud)  # a is unneeded since 0 now: the search order moved
    assert planner.reused == 0
    quiet = _loop(planner, s, 20.0, cloud)
    assert planner.reused == 1 and quiet.simulated == 0
    assert quiet.candidate_set == ["a"] and quiet.destinations == first.destinations
    timers_run_out = _loop(planner, s, 70.0, cloud)  # 60 s unneeded: step 5 still runs on a replay
    assert planner.reused == 2 and timers_run_out.drain_to_delete == ["a"]
    s.add_pod(pod("pc", "c", 100, owner=("ReplicaSet", "web")), "c")
    changed = _loop(planner, s, 80.0, cloud)
    assert planner.reused == 2 and changed.simulated > 0


def test_a_terminating_pod_growing_old_is_a_change():
    """Time enters the search only through pods' ages (long-terminating pods, kube-system pods):
    crossing such an edge recomputes, and the plans stay those of a planner that never reuses."""
    cloud = FakeCloud()
    cloud.add(FakeGroup("g"), "a", "b")
    s = ClusterSnapshot(
        [node("a"), node("b")],
        [
            pod("pa", "a", 300, owner=("ReplicaSet", "web")),
            pod("gone", "a", 100, owner=None, deleted=0.0, grace=30),  # long-terminating after 60 s
        ],
    )
    incremental = Planner(OPTIONS, timer=WorkTimer(1e-3))
    full = Planner(OPTIONS, timer=WorkTimer(1e-3), incremental=False)
    replayed = []
    for now in (0.0, 10.0, 20.0, 30.0, 61.0, 70.0):
        before = incremental.reused
        expected = _plan_facts(full, _loop(full, s, now, cloud))
        assert _plan_facts(incremental, _loop(incremental, s, now, cloud)) == expected
        replayed.append(incremental.reused > before)
    # 0: first; 10: a's failure at 0 made it a non-candidate; 61: the pod's edge was crossed.
    assert replayed == [False, False, True, True, False, True]
