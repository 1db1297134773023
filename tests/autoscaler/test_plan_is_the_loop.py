"""`kubetide plan` says exactly what the loop would do (issue 25, item 1).

Both go through autoscaler/decision.py, but each gathers its inputs its own way: plan parses a
dump and builds a static cloud from a groups file; `simulate` adopts the same dump into a
simulated world and cloud, and its Autoscaler reads them through the ports. So the test runs the
two whole paths on the same cluster and compares what plan prints (--json) with what the first
loop of the simulation decided: the increases (min-size ones included), the nodes whose deletion
starts, the nodes held (UC6), the candidate set and every node's status and reason; or that both
halt (an unhealthy cluster: plan then shows what the loop would do otherwise, the loop does
nothing).

Timers: plan's default takes unneeded timers as run out, which a first loop never does, so plan
runs with --no-expire-timers; the clusters set scale-down-unneeded-time and
scale-down-unready-time to 0s most of the time, so deletions do start in the first loop and the
steps after the planner (UC6 holds, budgets) are compared too.

The random clusters (hypothesis drives a seeded generator): two node groups with min sizes,
nodes Ready or recently NotReady, ReplicaSet pods of several sizes, a bare pod now and then,
PodDisruptionBudgets, pending pods that need a new node, and flags that vary the pause after a
scale-up, enforce-node-group-min-size, the parallelism budgets and the threshold.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from loop_recorder import recording_autoscaler
from random_clusters import GROUP_LABEL, node_item, pod_item, random_cluster, replicaset_item

from kubetide.autoscaler.loop import LoopResult
from kubetide.cli.main import main
from kubetide.sim import Simulation
from kubetide.sim.spec.scenario import parse_scenario

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


# -- the two paths ------------------------------------------------------------------------------


def plan_decision(dump: Path, groups: Path | None, flags: dict) -> dict:
    """What `kubetide plan --json --no-expire-timers` prints, reduced to the compared facts."""
    argv = ["plan", str(dump), *groups_flag(groups), "--json", "--no-expire-timers"]
    for flag, value in flags.items():
        argv += ["--set", f"{flag}={str(value).lower() if isinstance(value, bool) else value}"]
    doc = json.loads(run_cli(*argv))
    if doc["unhealthy"] is not None:
        return {"halted": True}  # plan goes on to show what the loop would do otherwise
    up, down = doc["scale_up"], doc["scale_down"]
    return {
        "halted": False,
        "increases": sorted((i["node_group"], i["delta"]) for i in up["increases"]),
        "to_delete": (down["to_delete"]["empty"], down["to_delete"]["drain"]),
        "held": down["held"],
        "candidate_set": down["candidate_set"],
        "nodes": {name: (n["status"], n["reason"]) for name, n in down["nodes"].items()},
    }


def groups_flag(groups: Path | None) -> list[str]:
    """Node groups from a file, or (None) from the nodes' group labels, for plan and from-cluster alike."""
    return ["--node-groups", str(groups)] if groups is not None else []


def simulated_decision(dump: Path, groups: Path | None, flags: dict) -> dict:
    """What the first loop of `simulate` decided on the scenario `scenario from-cluster` makes of
    the same dump and groups (the "simulate my cluster" path)."""
    out = dump.parent / "scenario.yaml"
    out.unlink(missing_ok=True)
    assert run_cli("scenario", "from-cluster", str(dump), *groups_flag(groups), "--out", str(out))
    data = yaml.safe_load(out.read_text())
    data["spec"]["duration"] = "10s"
    data["spec"]["autoscaler"] = flags
    # A dump does not say when a running Job's pods finish; the simulator ends them
    # jobRunDuration after their start, which for an old Job may be before the first loop.
    data["spec"].setdefault("cluster", {})["jobRunDuration"] = "24h"
    scenario = parse_scenario(data, out.name, out.parent)
    loops: list[LoopResult] = []
    factory = recording_autoscaler(loops, seed=scenario.seed)

    Simulation(scenario, autoscaler_factory=factory).run()
    decision = loops[0].decision
    assert decision is not None
    if decision.halted is not None:
        return {"halted": True}
    down = decision.scale_down
    assert down is not None
    budget = decision.budget
    return {
        "halted": False,
        "increases": sorted((i.group_id, i.delta) for i in decision.increases),
        "to_delete": (list(budget.empty), list(budget.drain)) if budget is not None else ([], []),
        "held": decision.held,
        "candidate_set": down.candidate_set,
        "nodes": {
            name: (s.status, None if s.reason is None else str(s.reason)) for name, s in down.nodes.items()
        },
    }


def run_cli(*argv: str) -> str:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    assert code == 0, err.getvalue()
    return out.getvalue() or "ok"


def assert_same(tmp: Path, dump: dict, groups: list[dict] | None, flags: dict) -> dict:
    dump_file, groups_file = tmp / "cluster.yaml", tmp / "groups.yaml"
    dump_file.write_text(yaml.safe_dump(dump))
    if groups is None:
        groups_file = None
    else:
        groups_file.write_text(yaml.safe_dump({"nodeGroups": groups}))
    planned = plan_decision(dump_file, groups_file, flags)
    simulated = simulated_decision(dump_file, groups_file, flags)
    assert planned == simulated
    return planned


# -- the tests --------------------------------------------------------------------------------------


# Random clusters: 40 in the suite (besides the 61 fixed ones of the test after, which reach every
# step of the loop), 500 in CI's slow step; each runs plan and a simulation's first loop (500 took
# 46 s of CPU; 100 in the suite were 8 s of its wall time).
SETTINGS = settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
CLUSTER_SEEDS = st.integers(min_value=0, max_value=2**32 - 1)


def plan_is_the_first_loop(tmp_path_factory, seed: int) -> None:
    dump, groups, flags = random_cluster(seed)
    assert_same(tmp_path_factory.mktemp("plan"), dump, groups, flags)


@settings(SETTINGS, max_examples=40)
@given(seed=CLUSTER_SEEDS)
def test_plan_decides_what_the_first_loop_of_simulate_does(tmp_path_factory, seed):
    plan_is_the_first_loop(tmp_path_factory, seed)


@pytest.mark.slow
@settings(SETTINGS, max_examples=500)
@given(seed=CLUSTER_SEEDS)
def test_plan_decides_what_the_first_loop_of_simulate_does_on_more_clusters(tmp_path_factory, seed):
    plan_is_the_first_loop(tmp_path_factory, seed)


def test_the_random_clusters_reach_every_step():
    """Not vacuous: over a fixed sample of the generator, the loops grow groups (for pods and to
    min size), start deletions, hold unready nodes and halt on an unhealthy cluster."""
    counts = {"pods": 0, "min_size": 0, "to_delete": 0, "held": 0, "halted": 0}
    import tempfile

    # A loop that scales up starts no deletion, so UC6 holds show only in clusters with nothing to
    # scale up, about 1 in 100 of the generator's: seed 142 is one (no pending pod, a NotReady node
    # with pods in a group at its target).
    for seed in (*range(60), 142):
        dump, groups, flags = random_cluster(seed)
        with tempfile.TemporaryDirectory() as tmp:
            decided = assert_same(Path(tmp), dump, groups, flags)
        sizes = {g["name"]: (g["initialSize"], g["minSize"]) for g in groups}
        if decided["halted"]:
            counts["halted"] += 1
            continue
        for group, delta in decided["increases"]:
            initial, minimum = sizes[group]
            counts["min_size" if initial + delta == minimum and initial < minimum else "pods"] += 1
        counts["to_delete"] += bool(decided["to_delete"][0] or decided["to_delete"][1])
        counts["held"] += bool(decided["held"])
    assert all(counts.values()), counts


def test_plan_holds_an_unready_node_with_pods_in_a_group_at_its_target(tmp_path):
    """The issue's case: one NotReady node with pods in a group at its target size. The loop holds
    it (UC6); plan used to print "would delete: c (drain)"."""
    items = [
        node_item("a-0", "a", "4", "16Gi", ready=True),
        node_item("a-1", "a", "4", "16Gi", ready=True),
        node_item("c", "a", "4", "16Gi", ready=False),
        pod_item("web-0", "c", "web", "100m"),
        replicaset_item("web", 1),
        # a-0 and a-1 are busy, so they stay, and web-0 has room on them.
        pod_item("busy-0", "a-0", "busy", "3"),
        pod_item("busy-1", "a-1", "busy", "3"),
        replicaset_item("busy", 2),
    ]
    groups = [
        {
            "name": "a",
            "minSize": 0,
            "maxSize": 5,
            "initialSize": 3,
            "template": {
                "metadata": {"labels": {GROUP_LABEL: "a"}},
                "status": {"allocatable": {"cpu": "4", "memory": "16Gi", "pods": "110"}},
            },
        }
    ]
    flags = {"scale-down-unneeded-time": "0s", "scale-down-unready-time": "0s"}
    decided = assert_same(tmp_path, {"apiVersion": "v1", "kind": "List", "items": items}, groups, flags)
    assert decided["held"] == ["c"]
    assert "c" not in decided["to_delete"][1]


@pytest.mark.parametrize(
    "dump, groups",
    [
        (EXAMPLES / "plan-cluster.yaml", EXAMPLES / "plan-node-groups.yaml"),
        ("realistic", None),  # an EKS-shaped dump with full metadata (tests/sim/realistic_dump.py)
    ],
    ids=["plan-cluster", "realistic-eks-dump"],
)
def test_plan_on_the_bundled_dumps_is_the_loop(tmp_path, dump, groups):
    """examples/cluster.yaml is left out: its pending pods (some preempting) and its Deployments and
    Jobs short of pods are acted on by the simulated scheduler and controllers before the first
    loop, so the cluster that loop sees is no longer the dump."""
    definitions = yaml.safe_load(groups.read_text())["nodeGroups"] if groups is not None else None
    if dump == "realistic":
        sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "sim"))
        from realistic_dump import realistic_dump

        cluster = realistic_dump()
    else:
        cluster = yaml.safe_load(dump.read_text())
    cluster = without_pods_that_fit_existing_nodes(tmp_path, cluster, groups)
    for flags in ({}, {"scale-down-unneeded-time": "0s", "scale-down-unready-time": "0s"}):
        assert_same(tmp_path, cluster, definitions, flags)


def without_pods_that_fit_existing_nodes(tmp: Path, cluster: dict, groups: Path | None) -> dict:
    """The dump less its pending pods that fit an existing node. The simulated scheduler binds
    those before the first loop, by its scores, while plan binds them where
    filter-out-schedulable finds room (as CA's snapshot does): the two clusters would then differ
    by where those pods are, not by what the loop decides."""
    dump = tmp / "whole.yaml"
    dump.write_text(yaml.safe_dump(cluster))
    doc = json.loads(run_cli("plan", str(dump), *groups_flag(groups), "--json"))
    up = doc["scale_up"]
    unplaced = {*up["pending"], *up["not_helped"]}

    def fits(item: dict) -> bool:
        meta, spec = item["metadata"], item.get("spec", {})
        key = f"{meta.get('namespace', 'default')}/{meta['name']}"
        return (
            item["kind"] == "Pod"
            and not spec.get("nodeName")
            and item.get("status", {}).get("phase", "Pending") == "Pending"
            and key not in unplaced
        )

    return {**cluster, "items": [item for item in cluster["items"] if not fits(item)]}
