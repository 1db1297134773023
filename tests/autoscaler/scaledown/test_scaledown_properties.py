"""Properties of the planner over random small clusters (hypothesis).

After any update, and after a second one that starts deleting what the first found removable:
- the candidate set is removable together: re-simulated from scratch (candidates and nodes being
  deleted emptied, every pod needing a home put back on its reported destination, checked by the
  scheduler filters), everything fits, and no destination is itself going away;
- no PodDisruptionBudget is charged beyond what it allowed at the start;
- no node is up for deletion that is unremovable (blocked, annotated, above threshold, ...);
- the snapshot is left exactly as it was;
- with a usage source, all of the above, and no destination is pushed over its QoS ceiling.
"""

from __future__ import annotations

import dataclasses

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scaledown_fakes import FakeCloud, FakeGroup, node, pdb, pod, state, workload

from kubetide.autoscaler.inputs import LoopInputs
from kubetide.autoscaler.options import AutoscalerOptions
from kubetide.autoscaler.ports import TO_BE_DELETED_TAINT, UsageCeiling, UsageSample
from kubetide.autoscaler.scaledown.planning.drainability import (
    DrainContext,
    DrainRules,
    drain_node,
    index_workloads,
    pods_needing_homes,
)
from kubetide.autoscaler.scaledown.planning.eligibility import (
    SCALE_DOWN_DISABLED_ANNOTATION,
    EligibilityChecker,
)
from kubetide.autoscaler.scaledown.planning.pdb import PdbTracker, is_healthy
from kubetide.autoscaler.scaledown.planning.placement import PodMover, homeless
from kubetide.autoscaler.scaledown.planning.planner import Planner
from kubetide.autoscaler.scaledown.planning.update import pod_order
from kubetide.clock import WorkTimer
from kubetide.model import Taint
from kubetide.scheduling.checker import PredicateChecker
from kubetide.snapshot import ClusterSnapshot

APPS = ("web", "api", "db")
OPTIONS = AutoscalerOptions(scale_down_utilization_threshold=0.7)


@st.composite
def clusters(draw):
    n_nodes = draw(st.integers(2, 7))
    nodes = []
    for i in range(n_nodes):
        annotations = {SCALE_DOWN_DISABLED_ANNOTATION: "true"} if draw(st.integers(0, 9)) == 0 else {}
        labels = {"disk": "ssd"} if draw(st.booleans()) else {}
        taints = [Taint("dedicated", "x", "NoSchedule")] if draw(st.integers(0, 7)) == 0 else []
        nodes.append(
            node(
                f"n{i}",
                cpu=draw(st.sampled_from([1000, 2000, 4000])),
                annotations=annotations,
                labels=labels,
                taints=taints,
            )
        )
    pods = []
    for i in range(draw(st.integers(0, 16))):
        host = nodes[draw(st.integers(0, n_nodes - 1))]
        kind = draw(st.sampled_from(["rs", "rs", "rs", "bare", "ds", "expendable"]))
        app = draw(st.sampled_from(APPS))
        owner = {
            "rs": ("ReplicaSet", app),
            "bare": None,
            "ds": ("DaemonSet", "ds"),
            "expendable": ("ReplicaSet", app),
        }[kind]
        candidate = pod(
            f"p{i}",
            host.name,
            draw(st.sampled_from([100, 200, 300, 500])),
            owner=owner,
            labels={"app": app},
            ready=draw(st.integers(0, 4)) > 0,
            priority=-100 if kind == "expendable" else 0,
        )
        if draw(st.integers(0, 5)) == 0:
            candidate = dataclasses.replace(candidate, node_selector={"disk": "ssd"})
        # Keep the starting cluster feasible: a pod goes only where it fits.
        used = sum(p.requests["cpu"] for p in pods if p.node_name == host.name)
        if used + candidate.requests["cpu"] <= host.allocatable["cpu"]:
            pods.append(candidate)
    pdbs = [pdb(f"pdb-{app}", app, allowed=draw(st.integers(0, 2))) for app in APPS if draw(st.booleans())]
    min_size = draw(st.integers(0, 2))
    evicted = [
        pod(
            f"evicted{i}",
            "gone-node",
            draw(st.sampled_from([100, 300])),
            labels={"app": app},
            owner=("ReplicaSet", app),
        )
        for i, app in enumerate(draw(st.lists(st.sampled_from(APPS), max_size=3)))
    ]
    return nodes, pods, pdbs, min_size, evicted


WORKLOADS = [workload("ReplicaSet", app, 10) for app in APPS]


def check_plan(plan, nodes, pods, pdbs, deleted, cloud, evicted=()):
    snapshot = ClusterSnapshot(nodes, pods)
    for p in [p for p in snapshot.pods() if p.priority < OPTIONS.expendable_pods_priority_cutoff]:
        snapshot.remove_pod(p.uid)
    index = index_workloads(WORKLOADS)
    tracker = PdbTracker(pdbs, snapshot.pods(), index)
    ctx = DrainContext(DrainRules.from_options(OPTIONS), tracker, 0.0, index)
    going = set(plan.candidate_set) | deleted
    assert not set(plan.candidate_set) & deleted

    # Everything that needs a home, node by node, in the order the planner handled them.
    homeless_pods = []
    for name in sorted(deleted):
        homeless_pods += pods_needing_homes(list(snapshot.pods_on(name).values()), ctx)
    for name in plan.candidate_set:
        drain = drain_node(list(snapshot.pods_on(name).values()), ctx)
        assert drain.blocking is None, f"candidate {name} has a blocking pod"
        homeless_pods += drain.movable

    # PDBs, CA's rule: after the pods of nodes already being deleted took their share, each
    # candidate in turn is charged all its healthy pods, and only while every budget it charges
    # has at least one disruption left; it is risky exactly when it takes more than was left, and
    # risky nodes are drained after the others. So every drain can go pod by pod, never evicting
    # past a budget.
    remaining = list(tracker.initial)
    for p in homeless_pods:
        if p.node_name in deleted and is_healthy(p):
            for i in tracker.matching(p):
                remaining[i] -= 1
    for name in plan.candidate_set:
        counts = {}
        for p in drain_node(list(snapshot.pods_on(name).values()), ctx).movable:
            if is_healthy(p):
                for i in tracker.matching(p):
                    counts[i] = counts.get(i, 0) + 1
        for i in counts:
            assert remaining[i] >= 1, f"{pdbs[i].key} had no disruption left for candidate {name}"
        assert (name in plan.risky) == any(n > remaining[i] for i, n in counts.items()), name
        for i, n in counts.items():
            remaining[i] -= n
    risky_at = [name in plan.risky for name in plan.drain_to_delete]
    assert risky_at == sorted(risky_at), "risky nodes are drained after the others"

    # Removable together: empty the going nodes, put every pod on its destination, after the
    # recently evicted pods took the places the planner reserved for them.
    checker = PredicateChecker(snapshot)
    try:
        by_key = {p.key: p for p in evicted}
        for key, dest in plan.injected.items():
            standin = homeless(by_key[key])
            assert dest not in going and checker.fits(standin, dest) is None
            snapshot.add_pod(standin, dest)
        for p in homeless_pods:
            snapshot.remove_pod(p.uid)
        for p in homeless_pods:
            dest = plan.destinations.get(p.key)
            assert dest is not None, f"pod {p.key} of a going node has no destination"
            assert dest not in going, f"pod {p.key} sent to {dest}, which is going too"
            standin = homeless(p)
            assert checker.fits(standin, dest) is None, f"pod {p.key} does not fit on {dest}"
            snapshot.add_pod(standin, dest)
    finally:
        checker.close()

    # Nothing unremovable is up for deletion.
    eligibility = EligibilityChecker(OPTIONS, cloud, 0.0)
    # Expendable pods do not count, in utilization as anywhere else.
    fresh = ClusterSnapshot(nodes, [p for p in pods if p.priority >= OPTIONS.expendable_pods_priority_cutoff])
    for name in plan.removable_now():
        assert name in plan.candidate_set
        status = plan.nodes[name]
        assert status.status == "removable" and status.reason is None
        n = fresh.node(name)
        assert eligibility.check(n, list(fresh.pods_on(name).values())).eligible
    group = cloud.node_groups()[0]
    assert len(plan.candidate_set) <= max(0, group.target_size() - len(deleted) - group.min_size)


@settings(max_examples=60, suppress_health_check=[HealthCheck.too_slow])
@given(clusters())
def test_planner_invariants(cluster):
    nodes, pods, pdbs, min_size, evicted = cluster
    cloud = FakeCloud()
    cloud.add(FakeGroup("g", min_size=min_size), *[n.name for n in nodes])
    planner = Planner(OPTIONS, timer=WorkTimer(1e-3), timers_expired=True)
    for p in evicted:
        planner.record_eviction(p, now=0.0)
    snapshot = ClusterSnapshot(nodes, pods)
    before = state(snapshot)

    plan = planner.update(LoopInputs(0.0, snapshot, pdbs=pdbs, workloads=WORKLOADS), cloud=cloud)
    assert state(snapshot) == before
    if plan.validation_failure is not None:  # an evicted pod found no home: nothing may go
        assert plan.candidate_set == [] and plan.removable_now() == []
        return
    check_plan(plan, nodes, pods, pdbs, set(), cloud, evicted)

    # Start deleting what was removable (tainted, as the actuator would), then plan again.
    deleted = set(plan.removable_now()[:2])
    tainted = [
        dataclasses.replace(n, taints=(*n.taints, Taint(TO_BE_DELETED_TAINT, "0")))
        if n.name in deleted
        else n
        for n in nodes
    ]
    snapshot = ClusterSnapshot(tainted, pods)
    before = state(snapshot)
    again = planner.update(
        LoopInputs(10.0, snapshot, pdbs=pdbs, workloads=WORKLOADS, being_deleted=deleted), cloud=cloud
    )
    assert state(snapshot) == before
    if again.validation_failure is None:
        check_plan(again, tainted, pods, pdbs, deleted, cloud, evicted)
    else:
        assert again.candidate_set == [] and again.removable_now() == []


class _Uncached(Planner):
    """The same planner with its per-node caches emptied before every update."""

    def update(self, inputs, **kw):
        self._scanned.clear()
        self._checked.clear()
        return super().update(inputs, **kw)


def _view(plan):
    return (
        plan.to_json(),
        {name: status.detail for name, status in plan.nodes.items()},
        plan.validation_failure,
        plan.cooldown,
        plan.simulated,
        plan.pdb_remaining,
        plan.injected,
    )


STEPS = st.lists(
    st.tuples(
        st.sampled_from(
            [
                "remove",
                "add",
                "expendable",
                "terminate",
                "taint",
                "untaint",
                "leave",
                "join",
                "what-if",
                "wait",
            ]
        ),
        st.integers(0, 99),
        st.sampled_from([100, 300, 500]),
    ),
    max_size=8,
)


@settings(max_examples=60, suppress_health_check=[HealthCheck.too_slow])
@given(clusters(), STEPS)
def test_cached_planner_decides_as_an_uncached_one(cluster, steps):
    """Loop after loop over a changing cluster (pods come and go, become expendable or
    terminating, nodes are tainted, leave their group, what-ifs are forked and reverted, time
    passes), a planner reusing its per-node caches plans exactly as one that recomputes all."""
    nodes, pods, pdbs, min_size, evicted = cluster
    cloud = FakeCloud()
    group = cloud.add(FakeGroup("g", min_size=min_size), *[n.name for n in nodes])
    options = OPTIONS.with_values(scale_down_unneeded_time=20, unremovable_node_recheck_timeout=30)
    cached, uncached = Planner(options, timer=WorkTimer(1e-3)), _Uncached(options, timer=WorkTimer(1e-3))
    for p in evicted:
        cached.record_eviction(p, now=0.0)
        uncached.record_eviction(p, now=0.0)
    snapshot = ClusterSnapshot(nodes, pods)
    now = 0.0

    def both():
        inputs = LoopInputs(now, snapshot, pdbs=pdbs, workloads=WORKLOADS)
        assert _view(cached.update(inputs, cloud=cloud)) == _view(uncached.update(inputs, cloud=cloud))

    both()
    for i, (op, pick, cpu) in enumerate(steps):
        names = [n.name for n in snapshot.nodes()]
        name = names[pick % len(names)]
        bound = list(snapshot.pods())
        target = bound[pick % len(bound)] if bound else None
        if op == "remove" and target is not None:
            snapshot.remove_pod(target.uid)
        elif op == "add":
            snapshot.add_pod(pod(f"new{i}", name, cpu, labels={"app": APPS[pick % 3]}), name)
        elif op == "expendable" and target is not None:
            snapshot.update_pod(dataclasses.replace(target, priority=-100))
        elif op == "terminate" and target is not None:
            meta = dataclasses.replace(target.meta, deletion_timestamp=now)
            snapshot.update_pod(dataclasses.replace(target, meta=meta))
        elif op in ("taint", "untaint"):
            n = snapshot.node(name)
            taints = tuple(t for t in n.taints if t.key != TO_BE_DELETED_TAINT)
            if op == "taint":
                taints += (Taint(TO_BE_DELETED_TAINT, "0"),)
            snapshot.replace_node(dataclasses.replace(n, taints=taints))
        elif op == "leave" and name in group.members:
            group.members.remove(name)
        elif op == "join" and name not in group.members:
            group.members.append(name)
        elif op == "what-if":
            snapshot.fork()
            snapshot.add_pod(pod(f"whatif{i}", name, cpu), name)
            both()
            snapshot.revert()
        else:
            now += 40.0  # past the unneeded time and the recheck timeout; twice: long-terminating
        both()


def ca_reference_candidates(nodes, pods, pdbs, cloud):
    """The Cluster Autoscaler's candidate rule, written simply, for comparison.

    CA's greedy pass over the eligible nodes in the planner's order (empty first, then by
    utilization, then slot): each node's pods *as the simulation left them*, received ones
    included, must fit elsewhere (not on a candidate, not on the node itself); a success is
    committed. Same drain rules, same PDB accounting (kubetide's, deliberately stricter than CA's:
    a pod is charged once, when it leaves its own node), same fit checks and pod search. A
    destination is never excluded for being one.
    """
    cutoff = OPTIONS.expendable_pods_priority_cutoff
    snapshot = ClusterSnapshot(nodes, [p for p in pods if p.priority >= cutoff])
    index = index_workloads(WORKLOADS)
    tracker = PdbTracker(pdbs, snapshot.pods(), index)
    ctx = DrainContext(DrainRules.from_options(OPTIONS), tracker, 0.0, index)
    eligibility = EligibilityChecker(OPTIONS, cloud, 0.0)
    order = []
    for n in snapshot.nodes():
        on_node = list(snapshot.pods_on(n.name).values())
        e = eligibility.check(n, on_node)
        if e.eligible:
            empty = drain_node(on_node, ctx).empty
            order.append((not empty, 0.0 if empty else e.utilization.value, snapshot.slot_of(n.name), n.name))
    group = cloud.node_groups()[0]
    room = group.target_size() - group.min_size
    checker = PredicateChecker(snapshot)
    mover = PodMover(snapshot, checker)
    candidates, skip = [], set()
    try:
        for *_, name in sorted(order):
            if len(candidates) >= room:
                break
            on_node = list(snapshot.pods_on(name).values())
            drain = drain_node([p for p in on_node if p.node_name == name], ctx)
            if drain.blocking is not None:
                continue
            received = [p for p in on_node if p.node_name != name]
            snapshot.fork()
            tracker.fork()
            skip.add(name)
            fits = tracker.charge_node(drain.movable).refusal is None  # CA's CanRemovePods
            for p in sorted(drain.movable + received, key=pod_order) if fits else ():
                if mover.move(p.uid, None, skip) is None:
                    fits = False
                    break
            if fits:
                snapshot.commit()
                tracker.commit()
                candidates.append(name)
            else:
                snapshot.revert()
                tracker.revert()
                skip.discard(name)
    finally:
        checker.close()
    return candidates


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(clusters())
def test_candidate_set_is_never_smaller_than_the_cluster_autoscalers(cluster):
    """Issue 17: a node that received pods from an earlier candidate may be a candidate too."""
    nodes, pods, pdbs, min_size, _ = cluster
    cloud = FakeCloud()
    cloud.add(FakeGroup("g", min_size=min_size), *[n.name for n in nodes])
    planner = Planner(OPTIONS, timer=WorkTimer(1e-3), timers_expired=True)
    plan = planner.update(
        LoopInputs(0.0, ClusterSnapshot(nodes, pods), pdbs=pdbs, workloads=WORKLOADS), cloud=cloud
    )
    check_plan(plan, nodes, pods, pdbs, set(), cloud)
    reference = ca_reference_candidates(nodes, pods, pdbs, cloud)
    assert len(plan.candidate_set) >= len(reference), (plan.candidate_set, reference)


@st.composite
def usages(draw, cluster):
    """A usage sample for a cluster: some pods measured (up to twice their request), some nodes
    with a cpu ceiling (QoS watermark), some with usage beyond their pods."""
    nodes, pods = cluster[0], cluster[1]
    measured = {
        p.uid: {"cpu": draw(st.integers(0, 2 * p.requests["cpu"]))}
        for p in pods
        if draw(st.integers(0, 3)) > 0
    }
    ceilings = {
        n.name: (UsageCeiling("cpu", draw(st.sampled_from([300, 600, 800, 1500, 3000])), "test"),)
        for n in nodes
        if draw(st.booleans())
    }
    node_usage = {n.name: {"cpu": draw(st.integers(0, 1500))} for n in nodes if draw(st.integers(0, 3)) == 0}
    return UsageSample(measured, node_usage, ceilings)


def projected_usage(name, pods_here, sample):
    """What the guard must keep under the ceiling: usage beyond the node's pods now, plus each pod
    on it at its controller's peak (its request when none of the controller's pods is measured)."""

    def key(p):
        ref = p.meta.controller
        return ref.uid if ref is not None else p.uid

    peaks = {}
    for p in pods_here["all"]:
        if p.uid in sample.pods:
            peaks[key(p)] = max(peaks.get(key(p), 0), sample.pods[p.uid]["cpu"])
    now = sum(sample.pods.get(p.uid, {}).get("cpu", 0) for p in pods_here["before"])
    overhead = max(0, sample.nodes.get(name, {}).get("cpu", now) - now)
    return overhead + sum(peaks.get(key(p), p.requests["cpu"]) for p in pods_here["after"])


@settings(max_examples=100, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_planner_invariants_with_a_usage_source(data):
    """With a usage source, every invariant holds, and no destination ends up with more projected
    usage than its ceiling, where it was under it before."""
    nodes, pods, pdbs, min_size, _ = data.draw(clusters())
    sample = data.draw(usages((nodes, pods)))
    cloud = FakeCloud()
    cloud.add(FakeGroup("g", min_size=min_size), *[n.name for n in nodes])
    planner = Planner(OPTIONS, timer=WorkTimer(1e-3), timers_expired=True)
    snapshot = ClusterSnapshot(nodes, pods)
    before = state(snapshot)
    plan = planner.update(
        LoopInputs(0.0, snapshot, pdbs=pdbs, workloads=WORKLOADS, usage=sample), cloud=cloud
    )
    assert state(snapshot) == before
    check_plan(plan, nodes, pods, pdbs, set(), cloud)
    kept = [p for p in pods if p.priority >= OPTIONS.expendable_pods_priority_cutoff]
    by_key = {p.key: p for p in kept}
    for name, (ceiling,) in sample.ceilings.items():
        received = [by_key[key] for key, dest in plan.destinations.items() if dest == name]
        if not received:
            continue
        own = [p for p in kept if p.node_name == name]
        here = {"all": pods, "before": own, "after": own + received}
        assert projected_usage(name, here, sample) <= ceiling.amount, (name, received)
