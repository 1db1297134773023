"""The simulator's limits (sim/spec/limits.py): for each, a scenario exactly at the limit loads, one
more is refused in one line naming the field, the limit and the flag, and `--limit KIND=N` lifts it.
Limits are set low here so that each scenario stays small."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from sim_helpers import deployment, group, pod_spec, workload

from kubetide.errors import UserError
from kubetide.sim import NoAutoscaler, Simulation
from kubetide.sim.spec import ScenarioError
from kubetide.sim.spec.limits import DEFAULT_LIMITS, KINDS, Limits, parse_limits, timeline_columns
from kubetide.sim.spec.scenario import parse_scenario


def scenario(groups=None, objects=(), events=(), traces=(), duration="30m", autoscaler=None) -> dict:
    return {
        "apiVersion": "kubetide.io/v1alpha1",
        "kind": "Scenario",
        "metadata": {"name": "limits"},
        "spec": {
            "duration": duration,
            "nodeGroups": groups or [group(size=1)],
            "objects": list(objects),
            "events": list(events),
            "traces": list(traces),
            **({"autoscaler": autoscaler} if autoscaler else {}),
        },
    }


def hpa(name: str, max_replicas: int) -> dict:
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": name},
            "minReplicas": 1,
            "maxReplicas": max_replicas,
            "metrics": [
                {
                    "type": "Resource",
                    "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 60}},
                }
            ],
        },
    }


def cronjob(parallelism: int) -> dict:
    job = workload("Job", "batch", parallelism=parallelism, completions=parallelism)["spec"]
    job["template"]["spec"]["restartPolicy"] = "Never"
    return {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": "nightly", "namespace": "default"},
        "spec": {"schedule": "0 * * * *", "jobTemplate": {"spec": job}},
    }


def trace_file(tmp: Path, rows: list[tuple[str, int]]) -> str:
    (tmp / "trace.csv").write_text("time,replicas\n" + "".join(f"{t},{r}\n" for t, r in rows))
    return "trace.csv"


def scale(at: str, replicas: int) -> dict:
    return {"at": at, "scale": {"kind": "Deployment", "name": "web", "replicas": replicas}}


# kind, the scenario asking for `n` of it, the message when n is one over the limit (n - 1)
CASES = {
    "replicas: spec.replicas": (
        "replicas",
        lambda n, tmp: scenario(objects=[deployment("web", n)]),
        "s.yaml: spec.objects[0]: Deployment default/web: spec.replicas: {n:,} pods, more than the "
        "simulator's replicas limit of {limit:,} (lift it with --limit replicas=N)",
    ),
    "replicas: a scale event": (
        "replicas",
        lambda n, tmp: scenario(objects=[deployment("web", 1)], events=[scale("5m", n)]),
        "s.yaml: spec.events[0].scale.replicas: {n:,} pods, more than the simulator's replicas limit "
        "of {limit:,} (lift it with --limit replicas=N)",
    ),
    "replicas: an applied Job's completions": (
        "replicas",
        lambda n, tmp: scenario(
            events=[{"at": "1m", "apply": [workload("Job", "batch", parallelism=1, completions=n)]}]
        ),
        "s.yaml: spec.events[0].apply[0]: Job default/batch: spec.completions: {n:,} pods, more than the "
        "simulator's replicas limit of {limit:,} (lift it with --limit replicas=N)",
    ),
    "replicas: an HPA's maxReplicas": (
        "replicas",
        lambda n, tmp: scenario(objects=[deployment("web", 1), hpa("web", n)]),
        "s.yaml: spec.objects[1]: HorizontalPodAutoscaler default/web: spec.maxReplicas: {n:,} pods, more than "
        "the simulator's replicas limit of {limit:,} (lift it with --limit replicas=N)",
    ),
    "replicas: a trace row": (
        "replicas",
        lambda n, tmp: scenario(
            objects=[deployment("web", 1)],
            traces=[{"name": "web", "file": trace_file(tmp, [("0", 1), ("60", n)])}],
        ),
        "{tmp}/trace.csv: line 3: replicas: {n:,} pods, more than the simulator's replicas limit of "
        "{limit:,} (lift it with --limit replicas=N)",
    ),
    "pods: two Deployments": (
        "pods",
        lambda n, tmp: scenario(objects=[deployment("web", n - 2), deployment("api", 2)]),
        "s.yaml: spec.objects[0]: Deployment default/web: spec.replicas: up to {n:,} pods in all, more than the "
        "simulator's pods limit of {limit:,} (lift it with --limit pods=N); Deployment default/web asks "
        "for {less2:,} of them here",
    ),
    "pods: a scale event's replicas count, not the Deployment's": (
        "pods",
        lambda n, tmp: scenario(
            objects=[deployment("web", 2), deployment("api", 1)], events=[scale("5m", n - 1), scale("9m", 1)]
        ),
        "s.yaml: spec.events[0].scale.replicas: up to {n:,} pods in all, more than the simulator's pods "
        "limit of {limit:,} (lift it with --limit pods=N); Deployment default/web asks for {less1:,} of "
        "them here",
    ),
    "pods: an HPA's maxReplicas": (
        "pods",
        lambda n, tmp: scenario(objects=[deployment("web", 1), hpa("web", n)]),
        "s.yaml: spec.objects[1]: HorizontalPodAutoscaler default/web: spec.maxReplicas: up to {n:,} pods in "
        "all, more than the simulator's pods limit of {limit:,} (lift it with --limit pods=N); "
        "Deployment default/web asks for {n:,} of them here",
    ),
    "pods: a CronJob's running Job and the 3 + 1 its history keeps": (
        "pods",
        lambda n, tmp: scenario(
            objects=[cronjob(n // 5)]
            + [
                {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"p{i}"}, "spec": pod_spec()}
                for i in range(n % 5)
            ]
        ),
        None,  # the message names the CronJob: checked below
    ),
    "nodes: a group's maxSize": (
        "nodes",
        lambda n, tmp: scenario(groups=[group(size=1, max_size=n)]),
        "s.yaml: spec.nodeGroups[0].maxSize: {n:,} nodes, more than the simulator's nodes limit of "
        "{limit:,} (lift it with --limit nodes=N)",
    ),
    "nodes: the nodes at the start": (
        "nodes",
        lambda n, tmp: scenario(
            groups=[group("a", size=1, max_size=1), group("b", size=n - 1, max_size=n - 1)]
        ),
        "s.yaml: spec.nodeGroups[1]: {n:,} nodes at the start (this group's initial size with those "
        "before it), more than the simulator's nodes limit of {limit:,} (lift it with --limit nodes=N)",
    ),
    "node-groups": (
        "node-groups",
        lambda n, tmp: scenario(groups=[group(f"g{i}", size=0) for i in range(n)]),
        "s.yaml: spec.nodeGroups: {n:,} node groups, more than the simulator's node-groups limit of "
        "{limit:,} (lift it with --limit node-groups=N)",
    ),
    "events: spec.events": (
        "events",
        lambda n, tmp: scenario(objects=[deployment("web", 1)], events=[scale(f"{i}s", 1) for i in range(n)]),
        "s.yaml: spec.events: {n:,} events, more than the simulator's events limit of {limit:,} (lift "
        "it with --limit events=N)",
    ),
    "events: trace rows count with spec.events": (
        "events",
        lambda n, tmp: scenario(
            objects=[deployment("web", 1)],
            events=[scale("1s", 1)],
            traces=[{"name": "web", "file": trace_file(tmp, [(str(i), 1) for i in range(n - 1)])}],
        ),
        "{tmp}/trace.csv: line {n:,}: {n:,} events (spec.events and trace rows), more than the simulator's "
        "events limit of {limit:,} (lift it with --limit events=N)",
    ),
}


def load(data: dict, tmp: Path, limits: Limits):
    return parse_scenario(data, "s.yaml", tmp, limits=limits)


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("n", [7, 12])
def test_at_the_limit_loads_one_over_is_refused_and_the_flag_lifts_it(case, n, tmp_path):
    kind, build, message = CASES[case]
    at = dataclasses.replace(DEFAULT_LIMITS, **{kind.replace("-", "_"): n})
    load(build(n, tmp_path), tmp_path, at)  # exactly at the limit
    with pytest.raises(ScenarioError) as refused:
        load(build(n + 1, tmp_path), tmp_path, dataclasses.replace(at))
    text = str(refused.value)
    assert "\n" not in text and f"--limit {kind}=N" in text and f"{kind} limit of {n:,}" in text
    if message is not None:
        assert text == message.format(n=n + 1, limit=n, tmp=tmp_path, less1=n, less2=n - 1)
    lifted = parse_limits([f"{kind}={n + 1}"])
    assert getattr(lifted, kind.replace("-", "_")) == n + 1
    load(build(n + 1, tmp_path), tmp_path, dataclasses.replace(lifted, **_others_at(kind, n + 1)))


def _others_at(kind: str, n: int) -> dict[str, int]:
    """The default limits, but none below n (a case over `kind` asks n of the others too)."""
    return {
        other.replace("-", "_"): max(n, getattr(DEFAULT_LIMITS, other.replace("-", "_")))
        for other in KINDS
        if other != kind
    }


def test_a_cronjob_counts_its_job_for_each_run_it_may_keep(tmp_path):
    """successfulJobsHistoryLimit 3 and failedJobsHistoryLimit 1 by default: 5 Jobs' pods."""
    limits = dataclasses.replace(DEFAULT_LIMITS, pods=49)
    with pytest.raises(ScenarioError) as refused:
        load(scenario(objects=[cronjob(10)]), tmp_path, limits)
    assert str(refused.value) == (
        "s.yaml: spec.objects[0]: CronJob default/nightly: spec: up to 50 pods in all, more than the simulator's "
        "pods limit of 49 (lift it with --limit pods=N); CronJob default/nightly asks for 50 of them here"
    )
    load(scenario(objects=[cronjob(10)]), tmp_path, dataclasses.replace(limits, pods=50))


def test_a_deployments_replicasets_and_daemonsets_are_not_counted_twice(tmp_path):
    daemonset = workload("DaemonSet", "agent")
    limits = dataclasses.replace(DEFAULT_LIMITS, pods=5)
    loaded = load(scenario(objects=[deployment("web", 5), daemonset]), tmp_path, limits)
    assert {w.kind for w in loaded.objects.workloads} == {"Deployment", "DaemonSet"}


@pytest.mark.parametrize(
    ("groups", "duration", "scan", "loads"),
    [
        (1, "30m", "10s", True),
        (1000, "3h", "10s", True),  # 1,081 loops x 4,028 columns: 4.4 million cells
        (1000, "4h", "10s", False),
        (1, "400h", "10s", True),  # 16 days of a small cluster
        (1, "720h", "10s", False),
        (1, "400h", "5s", False),
    ],
)
def test_the_timeline_limit_counts_loops_times_columns(groups, duration, scan, loads, tmp_path):
    data = scenario(
        groups=[group(f"g{i}", size=0) for i in range(groups)],
        duration=duration,
        autoscaler={"scan-interval": scan},
    )
    loaded = load(data, tmp_path, DEFAULT_LIMITS)
    if loads:
        Simulation(loaded, autoscaler_factory=NoAutoscaler)
        return
    with pytest.raises(UserError) as refused:
        Simulation(loaded, autoscaler_factory=NoAutoscaler)
    text = str(refused.value)
    assert (
        text.startswith(f"s.yaml: spec.duration: {duration} at scan-interval {scan} is ") and "\n" not in text
    )
    assert (
        f"each a timeline row of up to {timeline_columns(groups):,} columns ({groups:,} node groups)" in text
    )
    assert text.endswith(
        f"more than the simulator's timeline-cells limit of {DEFAULT_LIMITS.timeline_cells:,} "
        "(lift it with --limit timeline-cells=N)"
    )


def test_recorded_events_past_the_limit_stop_the_run(tmp_path):
    """Pods no group can take, pending throughout: a NotTriggerScaleUp for each at every loop."""
    data = scenario(objects=[deployment("huge", 30, cpu="100")], duration="10m")
    limits = dataclasses.replace(DEFAULT_LIMITS, recorded_events=200)
    with pytest.raises(UserError) as stopped:
        Simulation(load(data, tmp_path, limits)).run()
    text = str(stopped.value)
    assert text.startswith("s.yaml: the run had recorded 200 events after ") and "\n" not in text
    assert "(NotTriggerScaleUp " in text
    assert text.endswith(
        "more than the simulator's recorded-events limit of 200 (lift it with --limit recorded-events=N); nothing written"
    )
    result = Simulation(load(data, tmp_path, dataclasses.replace(limits, recorded_events=10_000))).run()
    assert 200 < len(result.events) <= 10_000


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        (["pods"], "--limit pods: expected KIND=N with KIND one of " + ", ".join(KINDS)),
        (["pod=3"], "--limit pod=3: expected KIND=N with KIND one of "),
        (["pods=many"], "--limit pods=many: expected a whole number, got 'many'"),
        (["pods=0"], "--limit pods=0: must be at least 1"),
        (["pods=" + "9" * 5000], "--limit pods=999"),
    ],
)
def test_bad_limit_flags_are_one_line(flags, expected):
    with pytest.raises(UserError) as refused:
        parse_limits(flags)
    assert str(refused.value).startswith(expected) and "\n" not in str(refused.value)


def test_limit_flags_repeat_and_the_last_of_a_kind_wins():
    limits = parse_limits(["pods=10", "node-groups=2,000", "pods=200_000"])
    assert (limits.pods, limits.node_groups, limits.nodes) == (200_000, 2_000, DEFAULT_LIMITS.nodes)
