"""Random valid scenarios, with every fault type and autoscaler restarts (issue 13, item 3).

`python -m benchmarks.fuzz_scenarios [--scenarios N] [--seed S] [--jobs J]`

Hypothesis writes scenarios the simulator must handle well: one to three node groups, Deployments
(some under a PodDisruptionBudget), a StatefulSet, Jobs and a DaemonSet, then timed events that
scale workloads and inject each fault (stockout, nodeNeverReady, nodeNeverRegisters,
nodeNotReady, nodeReady, cloudError, autoscalerRestart). Each scenario runs in two processes with
different PYTHONHASHSEEDs (`--check FILE` is what each runs), and:

- the simulator's invariants stay zero (no PDB violated, no pod lost, no node deleted with pods);
- both processes produce byte-identical summary.json (apart from wall_seconds) and events;
- no node keeps the ToBeDeletedByClusterAutoscaler taint longer than its deletion can take
  (taint delay + eviction time + grace period + headroom + the cloud's deletion delay + loops);
- every pod still pending at the end is explained: kube-scheduler's FailedScheduling event names
  why it fits nowhere, or it was created after the scheduler's last pass.

The autoscaler's time budgets are left at their defaults: a budget tight enough to bind makes a
run depend on the machine's speed until the simulator hands the autoscaler a simulated timer
(the fidelity issue's item). The suite runs a few scenarios (tests/fuzz/test_random_scenarios.py);
docs/fuzzing.md records the last long run.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import yaml

from kubetide.sim.spec.scenario import FAULT_TYPES

ROOT = Path(__file__).resolve().parent.parent
FAULTS = FAULT_TYPES  # every one the scenario format knows
HASH_SEEDS = ("1", "2")
GRACE = 30  # every generated pod's terminationGracePeriodSeconds
DELETION_DELAY = 30  # every generated group's deletionDelay, seconds
MINUTES = 30  # how long each scenario runs


def scenarios():  # -> SearchStrategy[dict]; hypothesis is imported late, as in benchmarks.fuzz
    from hypothesis import strategies as st

    cpu = st.sampled_from(("100m", "250m", "500m", "1", "1500m"))
    memory = st.sampled_from(("128Mi", "512Mi", "1Gi", "2Gi"))
    minute = st.integers(1, MINUTES - 1).map(lambda m: f"{m}m")

    @st.composite
    def build(draw) -> dict:
        groups = []
        for index in range(draw(st.integers(1, 3))):
            max_size = draw(st.integers(2, 8))
            min_size = draw(st.integers(0, 1))
            groups.append(
                {
                    "name": f"g{index}",
                    "minSize": min_size,
                    "maxSize": max_size,
                    "initialSize": draw(st.integers(min_size, min(max_size, 4))),
                    "price": draw(st.sampled_from((0.1, 0.2, 0.5))),
                    "provisioningDelay": {"min": "30s", "max": draw(st.sampled_from(("30s", "90s", "3m")))},
                    "readyDelay": draw(st.sampled_from(("5s", "20s"))),
                    "deletionDelay": f"{DELETION_DELAY}s",
                    "template": {
                        "metadata": {"labels": {"topology.kubernetes.io/zone": f"zone-{index % 2}"}},
                        "status": {
                            "allocatable": {
                                "cpu": draw(st.sampled_from(("2", "4", "8"))),
                                "memory": draw(st.sampled_from(("8Gi", "16Gi", "32Gi"))),
                                "pods": "30",
                            }
                        },
                    },
                }
            )
        names = [g["name"] for g in groups]

        def pod_template(app: str, **extra: Any) -> dict:
            resources = {"requests": {"cpu": draw(cpu), "memory": draw(memory)}}
            spec = {
                "terminationGracePeriodSeconds": GRACE,
                "containers": [{"name": "c", "resources": resources}],
                **extra,
            }
            return {"metadata": {"labels": {"app": app}}, "spec": spec}

        objects: list[dict] = []
        scalable: list[tuple[str, str]] = []
        for index in range(draw(st.integers(1, 3))):
            app = f"web{index}"
            objects.append(
                _workload(
                    "Deployment", app, {"replicas": draw(st.integers(0, 12)), "template": pod_template(app)}
                )
            )
            scalable.append(("Deployment", app))
            if draw(st.booleans()):
                budget = draw(st.sampled_from(({"maxUnavailable": 1}, {"minAvailable": "50%"})))
                objects.append(
                    {
                        "apiVersion": "policy/v1",
                        "kind": "PodDisruptionBudget",
                        "metadata": {"name": app},
                        "spec": {"selector": {"matchLabels": {"app": app}}, **budget},
                    }
                )
        if draw(st.booleans()):
            objects.append(
                _workload(
                    "StatefulSet", "db", {"replicas": draw(st.integers(1, 4)), "template": pod_template("db")}
                )
            )
            scalable.append(("StatefulSet", "db"))
        if draw(st.booleans()):
            objects.append(_workload("DaemonSet", "agent", {"template": pod_template("agent")}))
        for index in range(draw(st.integers(0, 2))):
            app = f"batch{index}"
            template = pod_template(app)
            template["metadata"]["annotations"] = {
                "kubetide.io/run-duration": draw(st.sampled_from(("2m", "10m")))
            }
            template["spec"]["restartPolicy"] = "Never"
            spec = {
                "completions": draw(st.integers(1, 8)),
                "parallelism": draw(st.integers(1, 4)),
                "template": template,
            }
            objects.append(_workload("Job", app, spec))

        events = []
        for _ in range(draw(st.integers(1, 6))):
            if draw(st.booleans()):
                kind, name = draw(st.sampled_from(scalable))
                scale = {"kind": kind, "name": name, "replicas": draw(st.integers(0, 20))}
                events.append({"at": draw(minute), "scale": scale})
                continue
            fault: dict[str, Any] = {"type": draw(st.sampled_from(FAULTS))}
            if fault["type"] != "autoscalerRestart":
                fault["nodeGroup"] = draw(st.sampled_from(names))
                if draw(st.booleans()):
                    fault["count"] = draw(st.integers(1, 3))
                if fault["type"] != "nodeReady" and draw(st.booleans()):
                    fault["duration"] = draw(st.sampled_from(("2m", "5m", "15m")))
            events.append({"at": draw(minute), "fault": fault})
        autoscaler = {
            "scale-down-unneeded-time": draw(st.sampled_from(("1m", "3m", "10m"))),
            "scale-down-delay-after-add": draw(st.sampled_from(("0s", "2m"))),
            "max-drain-parallelism": draw(st.integers(1, 5)),
            "expander": draw(st.sampled_from(("least-waste", "random", "most-pods", "price"))),
        }
        return {
            "apiVersion": "kubetide.io/v1alpha1",
            "kind": "Scenario",
            "metadata": {"name": "random"},
            "spec": {
                "duration": f"{MINUTES}m",
                "seed": draw(st.integers(0, 2**31 - 1)),
                "autoscaler": autoscaler,
                "nodeGroups": groups,
                "objects": objects,
                "events": events,
            },
        }

    return build()


def _workload(kind: str, name: str, spec: dict) -> dict:
    body = {"selector": {"matchLabels": {"app": name}}, **spec}
    if kind == "Job":
        body.pop("selector")
    return {
        "apiVersion": "apps/v1" if kind != "Job" else "batch/v1",
        "kind": kind,
        "metadata": {"name": name},
        "spec": body,
    }


def generate(count: int, seed: int) -> list[dict]:
    """`count` scenarios, the same ones for the same seed."""
    from benchmarks.fuzz import draw

    return draw(scenarios(), count, seed)


# -- one scenario, in one process --------------------------------------------------------------


def check(path: Path) -> dict:
    """Run a scenario and return what two processes must agree on, and what must be empty."""
    from kubetide.autoscaler.ports import TO_BE_DELETED_TAINT
    from kubetide.autoscaler.scaledown.actuation.actuator import POD_EVICTION_HEADROOM
    from kubetide.sim import Simulation, load_scenario

    scenario = load_scenario(path)
    simulation = Simulation(scenario)
    result = simulation.run()
    now = simulation.engine.now()
    options = scenario.options
    fate_bound = (
        2 * options.scan_interval
        + options.node_delete_delay_after_taint
        + options.max_pod_eviction_time
        + min(GRACE, options.max_graceful_termination_sec)
        + POD_EVICTION_HEADROOM
        + DELETION_DELAY
    )
    leaked = []
    for node in simulation.world.snapshot.nodes():
        for taint in node.taints:
            if taint.key == TO_BE_DELETED_TAINT:
                added = taint.time_added if taint.time_added is not None else float(taint.value)
                if now - added > fate_bound:
                    leaked.append(f"{node.name} tainted {now - added:.0f}s ago (bound {fate_bound:.0f}s)")
    failed_scheduling = {
        e.get("object") for e in simulation.log.entries if e.get("reason") == "FailedScheduling"
    }
    last_chance = now - scenario.cluster.schedulerInterval
    unexplained = [
        pod.key
        for pod in simulation.world.pending.values()
        if f"Pod/{pod.key}" not in failed_scheduling
        and (pod.meta.creation_timestamp is None or pod.meta.creation_timestamp < last_chance)
    ]
    summary = dict(result.summary)
    summary.pop("wall_seconds")
    return {
        "summary": summary,
        "events": result.events,
        "leaked_taints": leaked,
        "unexplained_pending": unexplained,
    }


def run_twice(scenario: dict, directory: Path) -> tuple[dict, dict]:
    """`check` in two fresh processes with different hash seeds."""
    path = directory / "scenario.yaml"
    path.write_text(yaml.safe_dump(scenario, sort_keys=False))

    def one(hash_seed: str) -> dict:
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        done = subprocess.run(
            [sys.executable, "-m", "benchmarks.fuzz_scenarios", "--check", str(path)],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        if done.returncode != 0:
            raise RuntimeError(f"{path} with PYTHONHASHSEED={hash_seed}: {done.stderr.strip()[-2000:]}")
        return json.loads(done.stdout)

    with ThreadPoolExecutor(len(HASH_SEEDS)) as pool:
        first, second = pool.map(one, HASH_SEEDS)
    return first, second


def problems(first: dict, second: dict) -> list[str]:
    """What is wrong with a scenario's two runs (nothing, when all is well)."""
    found = []
    invariants = first["summary"]["invariants"]
    if any(invariants.values()):
        found.append(f"invariants {invariants}")
    if first != second:
        keys = [k for k in first["summary"] if first["summary"][k] != second["summary"].get(k)]
        found.append(
            f"runs differ across hash seeds (summary keys {keys}, events equal: {first['events'] == second['events']})"
        )
    if first["leaked_taints"]:
        found.append(f"leaked taints: {first['leaked_taints']}")
    if first["unexplained_pending"]:
        found.append(f"pending pods without a FailedScheduling event: {first['unexplained_pending'][:5]}")
    return found


def campaign(count: int, seed: int, jobs: int) -> Counter[str]:
    counts: Counter[str] = Counter()
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="kubetide-scenarios-") as tmp:

        def one(item: tuple[int, dict]) -> tuple[int, list[str], dict]:
            index, scenario = item
            directory = Path(tmp) / str(index)
            directory.mkdir()
            first, second = run_twice(scenario, directory)
            return index, problems(first, second), first

        with ThreadPoolExecutor(max(1, jobs // len(HASH_SEEDS))) as pool:
            for index, found, first in pool.map(one, enumerate(generate(count, seed))):
                counts["scenarios"] += 1
                counts["restarts"] += first["summary"]["autoscaler_restarts"]
                counts["faults"] += (
                    sum(first["summary"]["faults_injected"].values())
                    if isinstance(first["summary"]["faults_injected"], dict)
                    else first["summary"]["faults_injected"]
                )
                counts["failed"] += bool(found)
                for problem in found:
                    print(f"scenario {index} (seed {seed}): {problem}", flush=True)
                if counts["scenarios"] % 10 == 0:
                    print(
                        f"{counts['scenarios']} scenarios in {time.monotonic() - started:.0f}s: {dict(counts)}",
                        flush=True,
                    )
    return counts


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.fuzz_scenarios", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--scenarios", type=int, default=300, help="how many scenarios (default 300)")
    parser.add_argument("--seed", type=int, default=0, help="hypothesis seed (default 0)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="processes in parallel")
    parser.add_argument("--check", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.check is not None:
        json.dump(check(args.check), sys.stdout)
        return 0
    counts = campaign(args.scenarios, args.seed, args.jobs)
    print(f"total: {dict(counts)}")
    return 1 if counts["failed"] else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
