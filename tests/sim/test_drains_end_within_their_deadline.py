"""Every drain ends within its deadline (issue 24), over small random simulated scenarios.

Seeded random scenarios: one node group, two or three Deployments under PodDisruptionBudgets
(maxUnavailable 1, 25%, minAvailable 60%), a load drop so nodes become removable, pods that start
in seconds or in up to two minutes (so that some budget waves outlast max-pod-eviction-time), all
simulated for one hour or 90 minutes. The simulation's after_autoscaler hook (as benchmarks/bench_pdb_drain.py uses it) and a WorldObserver
records every ToBeDeleted taint the actuator writes: when, the budget waves the actuator gave the
drain (`actuator.deletions[node].waves`, CA's risky nodes get one max-pod-eviction-time a wave),
and how it ended: the node removed, or the drain abandoned and the taint removed.

Property: every drain ends, its cloud deletion asked (or its taint removed) no later than
  taint time + node-delete-delay-after-taint + waves x max-pod-eviction-time
  + min(grace, max-graceful-termination-sec) + 30 s + one scan interval of slack,
the Node object gone at most the group's deletionDelay after that; and no PDB is broken, no pod
lost. Across the scenarios, risky multi-wave drains (two or more pods of a maxUnavailable 1 budget
on one node) do occur and finish, and some risky drain needed its later waves' eviction time, so
the property is not vacuous.

Found meanwhile (the last test): with slow start-ups a drain evicted a replacement pod of an earlier
drain that was still starting (not Ready: no budget charge, and the eviction API lets it go), and
its Deployment stayed a pod short for over 5 minutes. Drains now wait while a workload under a
budget is short of a displaced pod (evictions.py; tested in test_scaledown_drain_timing.py). With
`pods_lost` as it is now measured (a shortfall of Ready pods the workload still wants, not
explained by later removals still within their window), the drain code before that rule no longer
counts a pod lost in this scenario either: the test keeps the scenario as a regression case of
the invariant.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

import pytest

from kubetide.autoscaler.loop import Autoscaler
from kubetide.autoscaler.ports import TO_BE_DELETED_TAINT
from kubetide.sim import Simulation
from kubetide.sim.runtime.world import WorldObserver
from kubetide.sim.spec.scenario import parse_scenario

SEEDS = range(30)
# A scenario of the same family in which the simulator counted a pod lost (the last test below).
LOSES_A_POD = 38
DELETION_DELAY = 30.0  # every group's deletionDelay
HEADROOM = 30.0  # the actuator's wait after the longest grace period (POD_EVICTION_HEADROOM)


def scenario(seed: int) -> dict:
    """A small cluster whose load drops by half to two thirds; budgets pace the drains."""
    rng = random.Random(seed)
    nodes = rng.randint(5, 8)
    deployments = rng.randint(2, 3)
    graces = []
    objects = []
    for i in range(deployments):
        app = f"app{i}"
        grace = rng.choice([5, 20, 45, 90])
        graces.append(grace)
        millis = rng.choice([400, 600, 900])
        # About 70% of the cluster's CPU requested before the drop, shared by the Deployments.
        replicas = max(2, round(nodes * 4000 * 0.7 / deployments / millis))
        objects.append(
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {"name": app, "namespace": "prod"},
                "spec": {
                    "replicas": replicas,
                    "selector": {"matchLabels": {"app": app}},
                    "template": {
                        "metadata": {"labels": {"app": app}},
                        "spec": {
                            "terminationGracePeriodSeconds": grace,
                            "containers": [
                                {
                                    "name": "c",
                                    "resources": {"requests": {"cpu": f"{millis}m", "memory": "1Gi"}},
                                }
                            ],
                        },
                    },
                },
            }
        )
        # maxUnavailable 1 most often: the budget that makes nodes risky.
        spec = rng.choice(
            [{"maxUnavailable": 1}, {"maxUnavailable": 1}, {"maxUnavailable": "25%"}, {"minAvailable": "60%"}]
        )
        objects.append(
            {
                "apiVersion": "policy/v1",
                "kind": "PodDisruptionBudget",
                "metadata": {"name": app, "namespace": "prod"},
                "spec": {"selector": {"matchLabels": {"app": app}}, **spec},
            }
        )
    drop_at = rng.choice([10, 15, 20])
    events = [
        {
            "at": f"{drop_at}m",
            "scale": {
                "kind": "Deployment",
                "namespace": "prod",
                "name": o["metadata"]["name"],
                "replicas": max(2, o["spec"]["replicas"] // rng.choice([2, 3])),
            },
        }
        for o in objects
        if o["kind"] == "Deployment"
    ]
    # Replacements that start slowly make a budget wave last long: a risky drain then needs
    # the eviction time of its later waves, or is abandoned at its deadline.
    startup = rng.choice([("2s", "8s"), ("2s", "40s"), ("30s", "90s"), ("30s", "2m")])
    return {
        "apiVersion": "kubetide.io/v1alpha1",
        "kind": "Scenario",
        "metadata": {"name": f"drains-{seed}"},
        "spec": {
            "duration": rng.choice(["1h", "90m"]),
            "seed": seed,
            "cluster": {"podStartupDelay": {"min": startup[0], "max": startup[1]}},
            "autoscaler": {
                "scale-down-unneeded-time": rng.choice(["2m", "5m"]),
                "scale-down-utilization-threshold": 0.6,
                "max-graceful-termination-sec": rng.choice([30, 60]),
                "max-pod-eviction-time": rng.choice(["45s", "1m", "2m"]),
                "node-delete-delay-after-taint": rng.choice(["5s", "20s"]),
                "max-drain-parallelism": rng.choice([1, 3]),
            },
            "nodeGroups": [
                {
                    "name": "general",
                    "minSize": 1,
                    "maxSize": 2 * nodes,
                    "initialSize": nodes,
                    "price": 0.2,
                    "provisioningDelay": "1m",
                    "readyDelay": "20s",
                    "deletionDelay": f"{DELETION_DELAY:g}s",
                    "template": {
                        "metadata": {"labels": {"topology.kubernetes.io/zone": "zone-a"}},
                        "status": {"allocatable": {"cpu": "4", "memory": "16Gi", "pods": "110"}},
                    },
                }
            ],
            "objects": objects,
            "events": events,
        },
    }, max(graces)


@dataclass
class Drain:
    node: str
    tainted_at: float
    waves: int = 1
    empty: bool = False
    asked_at: float | None = None  # the cloud was asked to delete the node
    removed_at: float | None = None  # the Node object is gone
    abandoned_at: float | None = None  # the taint was removed

    @property
    def ended_at(self) -> float | None:
        return self.asked_at if self.abandoned_at is None else self.abandoned_at


class _Watch(WorldObserver):
    """Opens a drain when the ToBeDeleted taint appears, learns its waves from the actuator after
    every loop and drive, and closes it when the taint goes or the node does."""

    def __init__(self, sim: Simulation):
        self.sim = sim
        self.drains: list[Drain] = []
        self.open: dict[str, Drain] = {}

    def _now(self) -> float:
        return self.sim.engine.now() - self.sim.engine.start

    def after_autoscaler(self) -> None:
        autoscaler = self.sim.autoscaler
        assert isinstance(autoscaler, Autoscaler)
        for name, deletion in autoscaler.actuator.deletions.items():
            drain = self.open.get(name)
            assert drain is not None, f"{name} is being deleted without a ToBeDeleted taint seen"
            drain.waves = max(drain.waves, deletion.waves)
            drain.empty = deletion.empty

    def node_updated(self, old, new) -> None:
        was, now = old.has_taint(TO_BE_DELETED_TAINT), new.has_taint(TO_BE_DELETED_TAINT)
        if now and not was:
            assert new.name not in self.open, f"{new.name} tainted twice"
            self.open[new.name] = drain = Drain(new.name, self._now())
            self.drains.append(drain)
        elif was and not now:
            drain = self.open.pop(new.name)
            drain.abandoned_at = self._now()

    def deleting(self, group: str, nodes) -> None:
        for node in nodes:
            drain = self.open.get(node.name)
            if drain is not None and drain.asked_at is None:
                drain.asked_at = self._now()

    def node_removed(self, node) -> None:
        drain = self.open.pop(node.name, None)
        if drain is not None:
            drain.removed_at = self._now()


@dataclass
class Run:
    drains: list[Drain]
    options: object
    grace: float
    end: float
    pdb_violations: int
    pods_lost: int


def simulate(seed: int) -> Run:
    data, max_grace = scenario(seed)
    parsed = parse_scenario(data, f"drains-{seed}.yaml", Path("."))
    sim = Simulation(parsed, autoscaler_name="kubetide")
    watch = _Watch(sim)
    sim.after_autoscaler.append(watch.after_autoscaler)
    sim.world.subscribe(watch)
    sim.cloud.hooks.deleting_nodes.append(watch.deleting)
    sim.setup()
    sim.engine.run_until(sim.engine.start + parsed.duration)
    sim.scheduler.close()
    o = parsed.options
    c = sim.metrics.c
    return Run(
        watch.drains,
        o,
        min(max_grace, o.max_graceful_termination_sec),
        parsed.duration,
        c.pdb_violations,
        c.pods_lost,
    )


def bound(run: Run, drain: Drain, waves: int | None = None) -> float:
    o = run.options
    return (
        drain.tainted_at
        + o.node_delete_delay_after_taint
        + (drain.waves if waves is None else waves) * o.max_pod_eviction_time
        + run.grace
        + HEADROOM
        + o.scan_interval
    )


@pytest.fixture(scope="module")
def runs() -> dict[int, Run]:
    return {seed: simulate(seed) for seed in SEEDS}


@pytest.mark.parametrize("seed", SEEDS)
def test_every_drain_ends_within_its_deadline_and_no_budget_is_broken(runs, seed):
    run = runs[seed]
    assert run.pdb_violations == 0
    assert run.pods_lost == 0
    for drain in run.drains:
        limit = bound(run, drain)
        if drain.ended_at is None:
            assert limit > run.end, f"{drain} never ended (deadline {limit:g}s, simulation ends {run.end:g}s)"
            continue
        assert drain.ended_at <= limit, (
            f"{drain} ended {drain.ended_at - limit:g}s after its deadline {limit:g}s"
        )
        if drain.removed_at is not None:
            assert drain.asked_at is not None
            assert drain.removed_at <= drain.asked_at + DELETION_DELAY, drain


def test_risky_multi_wave_drains_occur_and_finish(runs):
    """Not vacuous: the scenarios drain nodes, some of them risky (two or more waves), some of
    those finish with the node removed, and some risky drain took longer than one wave's deadline
    would have allowed (so the waves term of the bound is needed, not just its headroom). (Drains
    abandoned at their deadline used to occur here too; since drains wait for a workload's
    displaced pods to be Ready before evicting more of it, nodes wait for that budget before their
    drain starts instead, and none of these scenarios abandons one.)"""
    drains = [d for run in runs.values() for d in run.drains if not d.empty]
    multi = [d for d in drains if d.waves >= 2]
    assert len(drains) >= 20, drains
    assert len(multi) >= 10, multi
    assert any(d.removed_at is not None for d in multi), multi
    assert sum(1 for run in runs.values() if any(d.waves >= 2 for d in run.drains)) >= 5
    needed = [
        d
        for run in runs.values()
        for d in run.drains
        if d.waves >= 2 and d.ended_at is not None and d.ended_at > bound(run, d, waves=1)
    ]
    assert needed, "no risky drain needed more than one wave's eviction time"


def test_slow_starting_replacements_are_not_lost():
    """The scenario that lost a pod: no drain evicts a starting replacement of an earlier one."""
    run = simulate(LOSES_A_POD)
    assert run.pdb_violations == 0
    assert run.pods_lost == 0
