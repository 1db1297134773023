"""Issue 24 item 6: `kubetide run` drives deletions between loops when their timers say."""

from __future__ import annotations

import logging
import threading
import time
from types import SimpleNamespace

from kubetide.autoscaler.loop import LoopResult
from kubetide.autoscaler.options import AutoscalerOptions
from kubetide.cli.run import Runner
from kubetide.clock import WallClock
from kubetide.kube.metrics import AutoscalerMetrics


class Deletions:
    """An autoscaler whose deletions want driving at the given clock times (one drive each)."""

    def __init__(self, clock, wakes):
        self.clock = clock
        self.wakes = list(wakes)
        self.driven: list[float] = []
        self.actuator = SimpleNamespace(deletions={})  # what the metrics read after a drive

    def next_wakeup(self):
        return self.wakes[0] if self.wakes else None

    def drive_deletions(self):
        self.driven.append(self.wakes.pop(0))
        return LoopResult(self.clock.now())


class Failing(Deletions):
    def drive_deletions(self):
        self.driven.append(self.wakes[0])
        raise RuntimeError("boom")  # the wake-up stays: it must not be driven again and again


def runner(scan_interval):
    r = object.__new__(Runner)
    r.options = AutoscalerOptions().with_values(scan_interval=scan_interval)
    r.clock = WallClock()
    r.stop = threading.Event()
    r.view = SimpleNamespace(new_unschedulable=threading.Event(), sync=lambda: None)
    r._leading = lambda: True
    r.metrics = AutoscalerMetrics(process_metrics=False)
    return r


def test_deletions_due_before_the_next_loop_are_driven_then():
    r = runner(scan_interval=1.0)
    now = r.clock.now()
    autoscaler = Deletions(r.clock, [now + 0.05, now + 0.1, now + 60])  # the last one: after the loop
    r._sleep_until_next(
        time.monotonic(), autoscaler, SimpleNamespace(events=SimpleNamespace(flush=lambda: None))
    )
    assert autoscaler.driven == [now + 0.05, now + 0.1]


def test_a_failing_drive_is_not_retried_in_a_busy_loop():
    r = runner(scan_interval=0.3)
    now = r.clock.now()
    autoscaler = Failing(r.clock, [now])
    r._sleep_until_next(time.monotonic(), autoscaler, None)
    assert autoscaler.driven == [now]


def test_deletion_lines_name_evictions_refusals_removals_and_abandoned_nodes():
    import logging

    from kubetide.cli.run_log import deletion_lines

    result = LoopResult(0.0)
    assert deletion_lines(result, {}) == []
    result.evicted = ["prod/a"]
    result.refused_evictions = ["prod/b", "prod/c"]
    result.deleted = ["n1", "n3"]
    result.deleted_drained = {"n1"}
    result.failed_deletions = {"n2": "could not evict prod/d"}
    lines = deletion_lines(result, {"n1": "underutilized", "n3": "unready"})
    assert [(line.level, line.message) for line in lines] == [
        (logging.INFO, "Scale-down: 1 pods evicted: prod/a"),
        (logging.INFO, "Scale-down: 2 evictions refused by PodDisruptionBudgets (429), retried in 10s"),
        (logging.INFO, "Scale-down: node n1 removed (underutilized)"),
        (logging.INFO, "Scale-down: node n3 removed (unready)"),
        (logging.WARNING, "Scale-down: abandoned node n2: could not evict prod/d"),
    ]
    assert lines[2].fields == {"node": "n1", "reason": "underutilized"}


def test_a_drive_between_loops_counts_its_removals_under_their_reasons():
    r = runner(scan_interval=1.0)
    result = LoopResult(r.clock.now())
    result.deleted, result.deleted_drained = ["a", "b"], {"a"}
    autoscaler = SimpleNamespace(drive_deletions=lambda: result, actuator=SimpleNamespace(deletions={}))
    r.view = SimpleNamespace(sync=lambda: None)
    r._drive_deletions(autoscaler, None)
    text = r.metrics.exposition()[0].decode()
    assert 'cluster_autoscaler_scaled_down_nodes_total{reason="underutilized"} 1.0' in text
    assert 'cluster_autoscaler_scaled_down_nodes_total{reason="empty"} 1.0' in text


def test_a_single_replica_hold_is_a_line_at_v0():
    from kubetide.cli.run_log import loop_lines

    result = LoopResult(0.0)
    words = "PodDisruptionBudget prod/api allows no disruption of single-replica pod prod/api-1; ..."
    result.single_replica_holds = {"n2": words, "n1": words}
    lines = [line for line in loop_lines(result, {}) if "stays" in line.message]
    assert [line.message for line in lines] == [f"Scale-down: node {n} stays: {words}" for n in ("n1", "n2")]
    assert all(line.level == logging.INFO for line in lines)
    assert lines[0].fields == {"node": "n1", "held_by": "single-replica"}
