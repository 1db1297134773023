"""The disruption ledger (sim/runtime/ledger.py) on small hand-built scenarios whose answer is known
from the pods themselves: when the autoscaler took a pod, when its replacement turned Ready."""

import functools

import pytest
from sim_doubles import DrainDouble, RecklessDouble, ScaleUpDouble
from sim_helpers import advance, deployment, group, make_scenario, pdb, pods_of, simulate

from kubetide.sim.report.output import summary_json


def _scenario(objects, *, delay, size=3, events=(), duration="30m"):
    """Every pod takes exactly `delay` from its binding to Ready."""
    cluster = {"podStartupDelay": {"min": delay, "max": delay}}
    return make_scenario(
        groups=[group(size=size)], objects=objects, events=events, cluster=cluster, duration=duration
    )


def _run(objects, double, *, delay, size=3, events=(), seconds=900, app="web"):
    """`double` drains (DrainDouble) or deletes (RecklessDouble) the node with the most of `app`'s pods."""
    scenario = _scenario(objects, delay=delay, size=size, events=events)
    nodes = [p.node_name for p in pods_of(simulate(scenario), app)]
    victim = max(sorted(set(nodes)), key=nodes.count)
    target = {"drain_names": [victim]} if double is DrainDouble else {"victims": [victim]}
    sim = simulate(scenario, functools.partial(double, **target))
    advance(sim, seconds)
    return sim, sim.ledger.result(), victim


def _replacements(sim, app, since=0.0):
    return [p for p in pods_of(sim, app) if p.ready_transition is not None and p.ready_transition > since]


def test_a_single_replica_drained_without_a_pdb_is_short_for_its_replacements_start():
    short = {}
    for delay in (5, 45, 120):
        sim, ledger, _ = _run([deployment("web", 1)], DrainDouble, delay=f"{delay}s")
        (replacement,) = _replacements(sim, "web")
        # Evicted at the first loop (t=0); short of its one replica until the replacement is Ready.
        assert ledger.evictions == 1 and ledger.workloads[0].evictions == 1
        assert ledger.below_desired_pod_seconds == pytest.approx(
            replacement.ready_transition - sim.engine.start
        )
        assert ledger.below_pdb_minimum_seconds == 0 and ledger.budget_wait_node_seconds == 0
        assert ledger.worst == "Deployment/default/web"
        short[delay] = ledger.below_desired_pod_seconds
    # That is the replacement's start delay, and the wait for the scheduler's next pass (1s apart).
    binding = short[5] - 5
    assert 0 <= binding <= 1.0
    assert all(seconds == pytest.approx(delay + binding) for delay, seconds in short.items())


def test_a_pdb_paced_drain_with_slow_replacements_never_goes_below_the_minimum():
    objects = [deployment("web", 6), pdb("web", "web", max_unavailable=1)]
    sim, ledger, victim = _run(objects, DrainDouble, delay="90s")
    assert victim not in sim.world.snapshot  # the drain finished
    assert sim.metrics.c.evictions_refused > 0  # the budget made it wait...
    assert ledger.below_pdb_minimum_seconds == 0  # ...so it never went below its minimum
    assert ledger.budget_wait_node_seconds > 0
    (row,) = ledger.workloads
    assert row.budget_wait_seconds == ledger.budget_wait_node_seconds  # one node, one workload
    # Each evicted pod is one pod short until its replacement is Ready, one at a time: the budget
    # lets the next go only once the last is back.
    evicted = sorted(e["time"] for e in sim.log.entries if e["reason"] == "Evicted")
    ready = sorted(p.ready_transition - sim.engine.start for p in _replacements(sim, "web", sim.engine.start))
    assert ledger.evictions == len(evicted) == len(ready) >= 2
    assert all(back <= then for back, then in zip(ready, evicted[1:], strict=False))
    assert ledger.below_desired_pod_seconds == pytest.approx(sum(ready) - sum(evicted))


def test_a_node_deleted_under_its_pods_is_below_the_pdb_minimum_until_they_are_back():
    # minAvailable = replicas: any missing pod is below the minimum; two pods a node at most (2 of
    # 4 cpu), so the victim has two and the other two nodes room for one each.
    objects = [deployment("web", 4, cpu="1500m"), pdb("web", "web", min_available=4)]
    sim, ledger, _ = _run(objects, RecklessDouble, delay="30s")
    (row,) = ledger.workloads
    assert row.deleted_with_node == 2 and row.evictions == 0
    gone_at = sim.metrics.c.last_removal_at  # the deletion's request; the pods go with the Node
    back = max(p.ready_transition - sim.engine.start for p in _replacements(sim, "web", sim.engine.start))
    assert ledger.below_pdb_minimum_seconds > 0
    assert ledger.below_pdb_minimum_seconds <= back - gone_at
    # Both pods go and come back together: two pods short for as long as the budget is short.
    assert ledger.below_desired_pod_seconds == pytest.approx(2 * ledger.below_pdb_minimum_seconds)
    assert row.below_pdb_minimum_seconds == ledger.below_pdb_minimum_seconds
    assert sim.metrics.c.pdb_violations == 1


def test_last_removal_counts_from_the_last_load_change():
    events = [
        {"at": "20s", "scale": {"kind": "Deployment", "name": "other", "replicas": 1}},
    ]
    objects = [deployment("web", 6), pdb("web", "web", max_unavailable=1), deployment("other", 2)]
    sim, ledger, _ = _run(objects, DrainDouble, delay="90s", events=events)
    summary = sim.summary(wall_seconds=0)
    removed_at = summary["scale_down"]["last_removal_at"]
    assert ledger.last_load_change_at == 20
    assert ledger.last_removal_seconds == pytest.approx(removed_at - 20)
    assert summary["disruption"]["last_removal_seconds"] == ledger.last_removal_seconds


def test_no_disruption_no_worst_and_the_ledger_is_in_summary_json():
    sim = simulate(_scenario([deployment("web", 2), pdb("web", "web", min_available=2)], delay="5s"))
    advance(sim, 600)
    ledger = sim.ledger.result()
    assert ledger.workloads == () and ledger.worst is None and ledger.last_removal_seconds is None
    text = summary_json(sim.summary(wall_seconds=0))
    assert '"below_pdb_minimum_seconds": 0.0' in text and '"below_desired_pod_seconds": 0.0' in text


def test_the_ledger_is_deterministic():
    objects = [deployment("web", 6), pdb("web", "web", max_unavailable=1)]
    first = _run(objects, DrainDouble, delay="40s")[1]
    second = _run(objects, DrainDouble, delay="40s")[1]
    assert first == second and first.evictions == 2


class _RemovesEmptyNewNodes(ScaleUpDouble):
    """Scales up for pending pods; removes every node it added once it ran a pod and has none left."""

    def __init__(self, options, clock, view, actions, cloud):
        super().__init__(options, clock, view, actions, cloud)
        self.kept = {node.name for node in view.snapshot().nodes()}  # the initial nodes, and those deleted
        self.used: set[str] = set()

    def run_once(self) -> None:
        super().run_once()
        snapshot = self.view.snapshot()
        for node in list(snapshot.nodes()):
            busy = [p for p in snapshot.pods_on(node.name).values() if not p.is_daemonset]
            if busy:
                self.used.add(node.name)
            elif node.name in self.used and node.name not in self.kept:
                self.kept.add(node.name)
                self.cloud.node_group_for(node).delete_nodes([node])


@pytest.mark.parametrize(("drop_at", "churned"), [("10m", 1), ("45m", 0)])
def test_a_node_removed_within_30_minutes_of_joining_is_churn(drop_at, churned):
    events = [
        {"at": "1m", "scale": {"kind": "Deployment", "name": "web", "replicas": 4}},
        {"at": drop_at, "scale": {"kind": "Deployment", "name": "web", "replicas": 1}},
    ]
    scenario = _scenario([deployment("web", 1, cpu="3")], delay="5s", size=1, events=events, duration="1h")
    sim = simulate(scenario, _RemovesEmptyNewNodes)
    advance(sim, 3600)
    summary = sim.summary(wall_seconds=0)
    removed = summary["scale_down"]["nodes_removed"]  # the nodes that ran a pod, added after 1m
    assert removed >= 2
    assert sim.ledger.result().churned_nodes == removed * churned


def test_surge_before_evict_moves_single_replicas_without_a_moment_below_desired():
    """examples/surge-before-evict.yaml, its own setting: every single-replica Deployment the
    autoscaler moved was restarted (surge), never evicted, and never short of its one replica."""
    from pathlib import Path

    from kubetide.sim import Simulation, load_scenario

    example = Path(__file__).parents[2] / "examples" / "surge-before-evict.yaml"
    ledger = Simulation(load_scenario(example)).run().summary["disruption"]
    moved = [row for row in ledger["workloads"] if row["restarts"]]
    assert len(moved) >= 3
    for row in moved:
        assert row["workload"] != "Deployment/prod/api"
        assert (row["evictions"], row["below_desired_pod_seconds"], row["below_pdb_minimum_seconds"]) == (
            0,
            0,
            0,
        )
    assert ledger["restarts"] == sum(row["restarts"] for row in moved)
    assert ledger["below_pdb_minimum_seconds"] == 0
