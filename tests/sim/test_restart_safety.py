"""Restart safety in the simulator (issue 7 item 4), with the autoscalerRestart fault.

The autoscaler keeps its deletions in memory. When it restarts mid-drain, the nodes it had
tainted ToBeDeletedByClusterAutoscaler must each be deleted or untainted within a bound, soft
taints (DeletionCandidateOfClusterAutoscaler) must not stay on nodes that are not unneeded, and
the simulator's invariants must stay zero. The bound follows from the flags: a resumed deletion
waits node-delete-delay-after-taint, evicts for at most max-pod-eviction-time, waits at most the
longest grace period + 30 s for the pods to go, then the cloud takes its deletionDelay to remove
the Node; add a scan interval on each side for the loop to notice.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

import pytest
from sim_doubles import RecklessDouble
from sim_helpers import advance, deployment, group, make_scenario, pdb, simulate

from kubetide.autoscaler.loop import Autoscaler
from kubetide.autoscaler.ports import DELETION_CANDIDATE_TAINT, TO_BE_DELETED_TAINT, InstanceState
from kubetide.autoscaler.scaledown.actuation.actuator import POD_EVICTION_HEADROOM
from kubetide.clock import work_timer
from kubetide.durations import parse_duration
from kubetide.sim import Simulation

ZERO = {"pdb_violations": 0, "pods_lost": 0, "nodes_deleted_with_pods": 0}
DELETION_DELAY = "1m"
GRACE = {"web": 90, "api": 30}


@dataclass
class Loop:
    now: float
    instance: int  # which autoscaler process ran it (0 before the first restart)
    hard: dict[str, float]  # node -> when its ToBeDeleted taint went on
    soft: set[str]
    unneeded: set[str]
    cloud_deleting: set[str]


@dataclass
class Recorder:
    """Wraps the real autoscaler; after every loop, writes down the taints and the unneeded set."""

    loops: list[Loop] = field(default_factory=list)
    instances: int = 0

    def factory(self, options, clock, view, actions, cloud):
        inner = Autoscaler(options, clock, view, actions, cloud, seed=1, timer=work_timer())
        instance = self.instances
        self.instances += 1
        recorder = self

        class Recorded:
            def run_once(self):
                result = inner.run_once()
                snapshot = view.snapshot()
                deleting = {
                    i.id
                    for g in cloud.node_groups()
                    for i in g.instances()
                    if i.state is InstanceState.DELETING
                }
                hard, soft, dying = {}, set(), set()
                for node in snapshot.nodes():
                    for taint in node.taints:
                        if taint.key == TO_BE_DELETED_TAINT:
                            hard[node.name] = (
                                taint.time_added if taint.time_added is not None else clock.now()
                            )
                        elif taint.key == DELETION_CANDIDATE_TAINT:
                            soft.add(node.name)
                    if node.provider_id in deleting:
                        dying.add(node.name)
                recorder.loops.append(
                    Loop(clock.now(), instance, hard, soft, set(inner.planner.unneeded_since), dying)
                )
                return result

            @property
            def registry(self):
                return inner.registry

        return Recorded()


def scenario(restart_at: str, *events: dict, nodes: int = 16):
    """Nodes at low utilization: several non-empty nodes become removable together at 5m and are
    drained in parallel; web's PDB admits one disruption at a time, so its evictions are refused
    and retried while the drains run."""
    return make_scenario(
        groups=[group("general", size=nodes, min_size=2, deletionDelay=DELETION_DELAY)],
        objects=[
            deployment("web", 12, cpu="1", grace=GRACE["web"]),
            pdb("web", "web", max_unavailable=1),
            deployment("api", 8, cpu="500m", grace=GRACE["api"]),
        ],
        events=[{"at": restart_at, "fault": {"type": "autoscalerRestart"}}, *events],
        autoscaler={"scale-down-unneeded-time": "5m", "scale-down-delay-after-add": "0s"},
        duration="35m",
    )


def fate_bound(options) -> float:
    """Longest a tainted node may keep its taint once someone drives its deletion."""
    grace = min(max(GRACE.values()), options.max_graceful_termination_sec)
    return (
        2 * options.scan_interval
        + options.node_delete_delay_after_taint
        + options.max_pod_eviction_time
        + grace
        + POD_EVICTION_HEADROOM
        + parse_duration(DELETION_DELAY)
    )


def run(sc):
    recorder = Recorder()
    sim = Simulation(sc, autoscaler_factory=recorder.factory)
    result = sim.run()
    start = sim.engine.start
    for loop in recorder.loops:
        loop.now -= start
        loop.hard = {name: at - start for name, at in loop.hard.items()}
    return result, recorder


def assert_restart_safe(result, recorder, restart_at: float, options):
    assert result.summary["autoscaler_restarts"] == 1
    assert result.summary["invariants"] == ZERO
    bound = fate_bound(options)
    after = [loop for loop in recorder.loops if loop.instance == 1]
    assert after, "the restarted autoscaler ran"
    # No node keeps ToBeDeleted forever: each is deleted (gone) or untainted within the bound,
    # counted from the restart for taints the previous process left behind.
    for loop in after:
        for name, tainted_at in loop.hard.items():
            since = max(tainted_at, restart_at)
            assert loop.now - since <= bound, (
                f"{name} still tainted ToBeDeleted at t={loop.now:g}, {loop.now - since:g}s after "
                f"t={since:g} (bound {bound:g}s)"
            )
    assert not after[-1].hard, "nothing is still being deleted at the end of a quiet run"
    # Soft taints: after the restarted process's first loop (which cleans up once), a
    # DeletionCandidate taint sits only on unneeded nodes or on nodes being deleted.
    for loop in after:
        stale = loop.soft - loop.unneeded - set(loop.hard)
        assert not stale, f"t={loop.now:g}: soft taints on nodes that are not unneeded: {sorted(stale)}"


def drains_in_progress_at(recorder, at: float) -> set[str]:
    """Nodes the first process had tainted and not yet handed to the cloud at time `at`."""
    before = [loop for loop in recorder.loops if loop.instance == 0 and loop.now <= at]
    return set(before[-1].hard) - before[-1].cloud_deleting if before else set()


# Restart points in the first scale-down wave (nodes tainted at 5m): within the taint delay,
# while evictions are refused by the PDB and retried, while evicted pods use their grace period.
@pytest.mark.parametrize("restart_at", ["5m2s", "5m20s", "5m40s", "6m30s"])
def test_restart_mid_drain_resumes_or_releases_every_tainted_node(restart_at):
    sc = scenario(restart_at)
    result, recorder = run(sc)
    at = parse_duration(restart_at)
    assert drains_in_progress_at(recorder, at), "the restart hits drains in progress"
    assert_restart_safe(result, recorder, at, sc.options)
    assert result.summary["scale_down"]["nodes_removed"] >= 2


def test_restart_mid_drain_when_the_load_comes_back_releases_what_is_no_longer_removable():
    # At the restart web triples: most of the tainted nodes are needed again. Whatever the new
    # process decides, no taint may outlive the bound and the pods must all run.
    sc = scenario("5m20s", {"at": "5m20s", "scale": {"kind": "Deployment", "name": "web", "replicas": 36}})
    result, recorder = run(sc)
    assert drains_in_progress_at(recorder, parse_duration("5m20s"))
    assert_restart_safe(result, recorder, parse_duration("5m20s"), sc.options)
    assert result.summary["pods"]["pending_at_end"] == 0


def test_restart_while_the_cloud_terminates_nodes_keeps_their_taints():
    # Regression: recover() untainted nodes whose instances the cloud was already deleting; the
    # scheduler then put a burst of pods on them and the pods vanished with the machines.
    sc = make_scenario(
        groups=[group("general", size=4, min_size=1, deletionDelay="10m")],
        objects=[deployment("web", 2, cpu="1")],
        events=[
            {"at": "12m", "fault": {"type": "autoscalerRestart"}},
            {"at": "13m", "apply": [deployment("burst", 6, cpu="1")]},
        ],
        autoscaler={"scale-down-unneeded-time": "5m", "scale-down-delay-after-add": "0s"},
        duration="40m",
    )
    result, recorder = run(sc)
    at_restart = next(loop for loop in recorder.loops if loop.instance == 1)
    assert at_restart.cloud_deleting, "the cloud is still terminating nodes when the process restarts"
    assert at_restart.cloud_deleting <= set(at_restart.hard), "those nodes keep ToBeDeleted"
    assert result.summary["invariants"] == ZERO
    assert result.summary["pods"]["pending_at_end"] == 0
    # The burst got new nodes instead of the dying ones.
    assert result.summary["scale_up"]["nodes_added"] >= 1


def test_the_simulator_counts_pods_that_land_on_a_node_the_cloud_is_terminating():
    # Regression for the measurement: the invariants were checked only when the autoscaler asked
    # the cloud to delete a node, so pods bound during the deletionDelay vanished uncounted.
    sc = make_scenario(
        groups=[group("general", size=2, max_size=2, deletionDelay="5m")],
        objects=[deployment("web", 1, cpu="3")],
    )
    probe = simulate(sc)
    busy = {p.node_name for p in probe.world.pods()}
    empty = [n.name for n in probe.world.snapshot.nodes() if n.name not in busy]
    assert len(empty) == 1
    victim = empty[0]
    sim = simulate(sc, functools.partial(RecklessDouble, victims=[victim]))
    advance(sim, 20)  # an empty node: deleting it is fine
    assert sim.metrics.c.nodes_deleted_with_pods == 0
    # Untainted, the dying node is the only one with room for a second web pod.
    key = next(k for k, w in sim.world.workloads.items() if w.kind == "Deployment")
    sim.replicasets.scale(key, 2)
    advance(sim, 60)
    assert any(p.node_name == victim and p.phase == "Running" for p in sim.world.pods())
    advance(sim, 900)  # the cloud removes the node at 5m; its pod has had 5 minutes to come back
    c = sim.metrics.c
    assert victim not in sim.world.snapshot
    assert c.nodes_deleted_with_pods == 1
    assert c.pods_lost == 1  # no room anywhere for its replacement
    reasons = {e.get("invariant") for e in sim.log.entries if e["reason"] == "InvariantViolated"}
    assert reasons == {"nodes_deleted_with_pods", "pods_lost"}
