"""The Prometheus metrics, fed by the real autoscaler running in the simulator.

Each test reads the exposition text back, as Prometheus would, rather than the Python objects:
what matters is the names and labels a CA dashboard queries.
"""

from __future__ import annotations

from pathlib import Path

import yaml
from prometheus_client.parser import text_string_to_metric_families

from kubetide.autoscaler.loop import Autoscaler, LoopResult
from kubetide.autoscaler.ports import CHURN_SECONDS
from kubetide.clock import work_timer
from kubetide.kube.metrics import FUNCTION_DURATION_BUCKETS, AutoscalerMetrics
from kubetide.sim import Simulation
from kubetide.sim.spec.scenario import parse_scenario

LOOP_SECONDS = 0.25  # what the tests pretend every loop took


def scenario(events, *, size=1, max_size=10, autoscaler=None, replicas=4):
    labels = {"app": "web"}
    web = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "containers": [{"name": "c", "resources": {"requests": {"cpu": "900m", "memory": "1Gi"}}}]
                },
            },
        },
    }
    group = {
        "name": "general",
        "minSize": 0,
        "maxSize": max_size,
        "initialSize": size,
        "price": 0.2,
        "provisioningDelay": "60s",
        "readyDelay": "10s",
        "template": {"status": {"allocatable": {"cpu": "4", "memory": "16Gi", "pods": "110"}}},
    }
    data = {
        "apiVersion": "kubetide.io/v1alpha1",
        "kind": "Scenario",
        "metadata": {"name": "metrics"},
        "spec": {
            "duration": "2h",
            "seed": 1,
            "nodeGroups": [group],
            "objects": [web],
            "events": events,
            "autoscaler": autoscaler or {},
        },
    }
    return parse_scenario(data, "metrics.yaml", Path("."))


class Observed:
    """The factory the simulator calls: a real Autoscaler whose every loop is observed."""

    def __init__(self):
        self.metrics = AutoscalerMetrics(process_metrics=False)
        self.autoscaler: Autoscaler | None = None
        self.built = 0
        self.loops: list[LoopResult] = []
        self.drives: list[LoopResult] = []

    def __call__(self, options, clock, view, actions, cloud):
        self.autoscaler = Autoscaler(options, clock, view, actions, cloud, seed=1, timer=work_timer())
        self.built += 1
        observed = self

        class Loop:
            def run_once(self):
                result = observed.autoscaler.run_once()
                observed.loops.append(result)
                observed.metrics.observe_loop(result, LOOP_SECONDS, observed.autoscaler)

            def next_wakeup(self):
                return observed.autoscaler.next_wakeup()

            def drive_deletions(self):
                # Between loops, as `kubetide run` drives them: most drains end here.
                result = observed.autoscaler.drive_deletions()
                observed.drives.append(result)
                observed.metrics.observe_deletions(result, observed.autoscaler)
                return result

        return Loop()


def run(sc, seconds):
    observed = Observed()
    sim = Simulation(sc, autoscaler_factory=observed)
    sim.setup()
    sim.engine.run_until(sim.engine.now() + seconds)
    return sim, observed


def samples(metrics: AutoscalerMetrics) -> dict[tuple[str, tuple], float]:
    text, content_type = metrics.exposition()
    assert content_type.startswith("text/plain")
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text.decode())
        for s in family.samples
    }


def value(metrics, name, **labels):
    return samples(metrics)[("cluster_autoscaler_" + name, tuple(sorted(labels.items())))]


def test_before_any_loop_the_series_ca_creates_at_start_are_zero():
    metrics = AutoscalerMetrics(process_metrics=False)
    for state in ("ready", "unready", "notStarted", "longUnregistered", "unregistered"):
        assert value(metrics, "nodes_count", state=state) == 0
    for reason in ("cloudProviderError", "apiCallError", "timeout"):
        assert value(metrics, "failed_scale_ups_total", reason=reason) == 0
    for reason in ("empty", "underutilized", "unready"):
        assert value(metrics, "scaled_down_nodes_total", reason=reason) == 0
    assert value(metrics, "evicted_pods_total", eviction_result="succeeded") == 0
    assert value(metrics, "errors_total", type="apiCallError") == 0


def test_a_scale_up_then_a_scale_down_as_ca_reports_them():
    sc = scenario(
        [
            {"at": "1m", "scale": {"kind": "Deployment", "name": "web", "replicas": 12}},
            {"at": "15m", "scale": {"kind": "Deployment", "name": "web", "replicas": 2}},
            # A fresh Autoscaler mid scale-down (as a replica regaining the lease builds one):
            # the counters go on from where they were.
            {"at": "16m45s", "fault": {"type": "autoscalerRestart"}},
        ],
        autoscaler={"scale-down-unneeded-time": "1m", "scale-down-delay-after-add": "1m"},
    )
    sim, observed = run(sc, 14 * 60)
    metrics = observed.metrics
    added = sum(sum(r.scaled_up.values()) for r in observed.loops)
    assert added >= 2  # 12 pods of 900m need 3 nodes of 4 cores, one exists
    assert value(metrics, "scaled_up_nodes_total") == added
    assert value(metrics, "nodes_count", state="ready") == len(sim.world.snapshot)
    assert value(metrics, "nodes_count", state="unready") == 0
    assert value(metrics, "cluster_safe_to_autoscale") == 1
    assert value(metrics, "node_groups_count", node_group_type="autoscaled") == 1
    assert value(metrics, "max_nodes_count") == 10
    assert value(metrics, "unschedulable_pods_count", type="unschedulable") == 0
    assert value(metrics, "cluster_cpu_current_cores") == 4 * len(sim.world.snapshot)
    assert value(metrics, "cpu_limits_cores", direction="maximum") == 320000
    assert value(metrics, "function_duration_seconds_count", function="main") == len(observed.loops)
    assert value(metrics, "function_duration_seconds_sum", function="main") == LOOP_SECONDS * len(
        observed.loops
    )
    last = observed.loops[-1].now
    for activity in ("main", "autoscaling", "scaleUp", "scaleDown"):
        assert value(metrics, "last_activity", activity=activity) == last

    nodes_before = len(sim.world.snapshot)
    sim.engine.run_until(sim.engine.now() + 40 * 60)
    results = observed.loops + observed.drives
    deleted = sum(len(r.deleted) for r in results)
    evicted = sum(len(r.evicted) for r in results)
    assert deleted >= 1 and len(sim.world.snapshot) == nodes_before - deleted
    by_reason = {
        reason: value(metrics, "scaled_down_nodes_total", reason=reason)
        for reason in ("empty", "underutilized", "unready")
    }
    # Each removed node under the reason its deletion started with: drained nodes are
    # "underutilized", however the drain ended (in a loop or between loops).
    drained = {n for r in observed.loops if r.started for n in r.started.started_drain}
    removed = [n for r in results for n in r.deleted]
    assert evicted >= 1 and drained
    assert by_reason == {
        "empty": sum(1 for n in removed if n not in drained),
        "underutilized": sum(1 for n in removed if n in drained),
        "unready": 0,
    }
    assert value(metrics, "evicted_pods_total", eviction_result="succeeded") == evicted
    # The restart falls inside a drain: started by the first Autoscaler, its node deleted by the
    # second, and counted above all the same.
    restart = sim.engine.start + 16 * 60 + 45
    before = {n for r in observed.loops if r.now < restart and r.started for n in r.started.started_drain}
    assert before & {n for r in results if r.now > restart for n in r.deleted}
    assert value(metrics, "unneeded_nodes_count") == len(observed.loops[-1].scale_down.candidate_set)
    assert observed.built == 2
    assert observed.autoscaler is not None and not observed.autoscaler.actuator.deletions


def test_a_refused_increase_counts_as_a_failed_scale_up_once_per_loop():
    fault = {"at": "0s", "fault": {"type": "cloudError", "nodeGroup": "general", "duration": "10m"}}
    scale = {"at": "1m", "scale": {"kind": "Deployment", "name": "web", "replicas": 12}}
    _, observed = run(scenario([fault, scale]), 4 * 60)
    failures = value(observed.metrics, "failed_scale_ups_total", reason="cloudProviderError")
    loops_that_failed = [r for r in observed.loops if r.scale_up is not None and r.scale_up.increases]
    assert failures >= 1 and failures == len(loops_that_failed)
    assert value(observed.metrics, "scaled_up_nodes_total") == 0
    assert value(observed.metrics, "unschedulable_pods_count", type="unschedulable") >= 8


def test_a_loop_that_raised_counts_an_error_and_its_duration():
    metrics = AutoscalerMetrics(process_metrics=False)
    metrics.observe_failed_loop(1.5, "apiCallError")
    assert value(metrics, "errors_total", type="apiCallError") == 1
    assert value(metrics, "function_duration_seconds_count", function="main") == 1
    buckets = {
        float(dict(labels)["le"]): count
        for (name, labels), count in samples(metrics).items()
        if name == "cluster_autoscaler_function_duration_seconds_bucket"
        and dict(labels)["function"] == "main"
    }
    assert sorted(buckets)[:-1] == list(FUNCTION_DURATION_BUCKETS)  # CA's, then +Inf
    assert next(le for le, count in sorted(buckets.items()) if count == 1) == 0.01 * 1.5**13


def test_two_instances_do_not_share_counters():
    first, second = AutoscalerMetrics(process_metrics=False), AutoscalerMetrics(process_metrics=False)
    first.observe_failed_loop(0.1)
    assert value(first, "errors_total", type="internalError") == 1
    assert value(second, "errors_total", type="internalError") == 0


def test_process_metrics_are_exported_for_the_rss_benchmark():
    assert ("process_resident_memory_bytes", ()) in samples(AutoscalerMetrics())


def test_every_step_ca_times_is_timed_and_gpu_nodes_are_counted_by_gpu_name():
    sc = scenario(
        [{"at": "1m", "scale": {"kind": "Deployment", "name": "web", "replicas": 12}}],
        autoscaler={"scale-down-unneeded-time": "1m"},
    )
    _, observed = run(sc, 5 * 60)
    loop_steps = (
        "updateClusterState",
        "scaleUp",
        "scaleUp:buildPodEquivalenceGroups",
        "filterOutSchedulable",
        "scaleUp:estimate",
        "findUnneeded",
        "scaleDown",
        "scaleDown:nodeDeletion",
        "scaleDown:softTaintUnneeded",
    )
    for label in loop_steps:
        assert value(observed.metrics, "function_duration_seconds_count", function=label) >= 1, label
    assert value(observed.metrics, "function_duration_seconds_count", function="main") == len(observed.loops)


def test_gpu_name_is_the_accelerator_label_or_generic():
    from kubetide.kube.metrics import gpu_name
    from kubetide.model import Node, ObjectMeta

    def node(labels, capacity):
        return Node(ObjectMeta("n", labels=labels), capacity, dict(capacity))

    cpu_only = node({}, {"cpu": 4000, "memory": 8 * 2**30})
    labelled = node(
        {"cloud.google.com/gke-accelerator": "nvidia-tesla-t4"}, {"cpu": 4000, "nvidia.com/gpu": 1}
    )
    bare = node({}, {"cpu": 4000, "nvidia.com/gpu": 2})
    assert (gpu_name(cpu_only), gpu_name(labelled), gpu_name(bare)) == ("", "nvidia-tesla-t4", "generic")


def latency(metrics, deleted: str) -> dict[str, tuple[float, float]]:
    """node_removal_latency_seconds with `deleted`: delay_reason -> (count, sum)."""
    found: dict[str, list[float]] = {}
    for (name, labels), v in samples(metrics).items():
        labels = dict(labels)
        if labels.get("deleted") != deleted or not name.startswith("cluster_autoscaler_node_removal_latency"):
            continue
        if name.endswith("_count"):
            found.setdefault(labels["delay_reason"], [0.0, 0.0])[0] = v
        elif name.endswith("_sum"):
            found.setdefault(labels["delay_reason"], [0.0, 0.0])[1] = v
    return {reason: (count, total) for reason, (count, total) in found.items() if count}


def test_node_removal_latency_counts_every_deletion_under_what_held_it_back():
    """Two nodes unneeded after 1m, one deletion at a time (max-scale-down-parallelism 1), and
    scale-down-delay-after-delete (5m) pausing scale-down after each: the first node goes as soon
    as it may (delay "none", within a loop of its timer), the second waits for the pause
    (NotUnneededOtherReason, minutes)."""
    sc = scenario(
        [
            {"at": "1m", "scale": {"kind": "Deployment", "name": "web", "replicas": 12}},
            {"at": "15m", "scale": {"kind": "Deployment", "name": "web", "replicas": 2}},
        ],
        autoscaler={
            "scale-down-unneeded-time": "1m",
            "scale-down-delay-after-add": "1m",
            "scale-down-delay-after-delete": "5m",
            "max-scale-down-parallelism": "1",
        },
    )
    _, observed = run(sc, 60 * 60)
    started = [
        n for r in observed.loops if r.started for n in [*r.started.started_empty, *r.started.started_drain]
    ]
    assert len(started) >= 2
    deleted = latency(observed.metrics, "true")
    assert sum(count for count, _ in deleted.values()) == len(started)
    assert set(deleted) == {"none", "NotUnneededOtherReason"}
    count, total = deleted["none"]
    assert total / count < 60  # no later than the loop after its unneeded time ran out
    count, total = deleted["NotUnneededOtherReason"]
    assert total / count >= 60  # minutes of the pause, less the minute of unneeded time
    assert latency(observed.metrics, "false") == {}


def test_a_node_needed_again_after_waiting_counts_as_not_deleted():
    """Unneeded nodes whose timer ran out while scale-down-delay-after-add holds scale-down, then
    needed again: deleted="false" under NotUnneededOtherReason, for the time they waited."""
    sc = scenario(
        [
            {"at": "1m", "scale": {"kind": "Deployment", "name": "web", "replicas": 12}},
            {"at": "10m", "scale": {"kind": "Deployment", "name": "web", "replicas": 2}},
            {"at": "20m", "scale": {"kind": "Deployment", "name": "web", "replicas": 12}},
        ],
        autoscaler={"scale-down-unneeded-time": "1m", "scale-down-delay-after-add": "60m"},
    )
    _, observed = run(sc, 25 * 60)
    assert not any(r.started and (r.started.started_empty or r.started.started_drain) for r in observed.loops)
    assert latency(observed.metrics, "true") == {}
    again = latency(observed.metrics, "false")
    assert set(again) == {"NotUnneededOtherReason"}
    count, total = again["NotUnneededOtherReason"]
    assert count >= 2 and 5 * 60 <= total / count <= 10 * 60  # from about 11m to about 20m


def kubetide_value(metrics, name, **labels):
    return samples(metrics).get(("kubetide_" + name, tuple(sorted(labels.items()))), 0.0)


def test_the_live_ledger_counts_what_the_simulators_ledger_counts():
    """The same run read twice: `kubetide run`'s ledger counters (fed by the loop's results and
    the informer-side view, as live) against the simulator's ledger of the world's events, on
    the PDB-paced drain example (drains that wait for their budget)."""
    path = Path(__file__).parents[2] / "examples" / "pdb-paced-drain.yaml"
    sc = parse_scenario(yaml.safe_load(path.read_text()), str(path), path.parent)
    observed = Observed()
    sim = Simulation(sc, autoscaler_factory=observed)
    sim.setup()
    start = sim.engine.now()
    set_up = {node.name for node in sim.world.snapshot.nodes()}
    sim.engine.run_until(start + 40 * 60)
    ledger = sim.ledger.result()
    metrics = observed.metrics
    assert ledger.evictions >= 2 and ledger.budget_wait_node_seconds > 0, ledger
    assert kubetide_value(metrics, "evictions_total", workload_kind="ReplicaSet") == ledger.evictions
    assert kubetide_value(metrics, "restarts_total", workload_kind="Deployment") == ledger.restarts
    # The simulator's set-up nodes are created at its start, which live is all a node's age says:
    # the live counter counts those removed within CHURN_SECONDS of it, the ledger leaves the
    # set-up aside.
    early = {n for r in observed.loops + observed.drives if r.now - start <= CHURN_SECONDS for n in r.deleted}
    churned = ledger.churned_nodes + len(early & set_up)
    assert kubetide_value(metrics, "churned_nodes_total") == churned
    # Waits are seen at the loop's and the drives' times, the ledger's at the world's events:
    # they agree to within an eviction retry (10 s) per node removed.
    removed = sum(len(r.deleted) for r in observed.loops + observed.drives)
    waited = kubetide_value(metrics, "budget_wait_node_seconds_total")
    assert abs(waited - ledger.budget_wait_node_seconds) <= 10 * removed, (waited, ledger)
    # The budget is never below its minimum in this run (the example says so): nor is it here.
    assert kubetide_value(metrics, "below_pdb_minimum_seconds_total") == ledger.below_pdb_minimum_seconds == 0
