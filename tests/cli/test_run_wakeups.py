"""Issue 24 item 6: `kubetide run` drives deletions between loops when their timers say."""

from __future__ import annotations

import threading
import time
from types import SimpleNamespace

from kubetide.autoscaler.loop import LoopResult
from kubetide.autoscaler.options import AutoscalerOptions
from kubetide.cli.run import Runner
from kubetide.clock import WallClock


class Deletions:
    """An autoscaler whose deletions want driving at the given clock times (one drive each)."""

    def __init__(self, clock, wakes):
        self.clock = clock
        self.wakes = list(wakes)
        self.driven: list[float] = []

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


def test_deletion_progress_names_refused_evictions_and_failures():
    from kubetide.autoscaler.loop import LoopResult
    from kubetide.cli.run import _deletion_progress

    result = LoopResult(0.0)
    assert _deletion_progress(result) == []
    result.evicted = ["prod/a"]
    result.refused_evictions = ["prod/b", "prod/c"]
    result.failed_deletions = {"n2": "could not evict prod/d"}
    assert _deletion_progress(result) == [
        "1 pods evicted",
        "2 evictions refused by PodDisruptionBudgets (429), retried in 10s",
        "failed n2",
    ]
