"""The Clock and Timer ports. Decision code asks a Clock for the time and a Timer for how much of
a time budget it has spent, and never reads the machine's clock itself, so the same code runs on
the simulator's virtual time and on a real cluster."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from typing import Protocol


class Clock(Protocol):
    def now(self) -> float:
        """Seconds since the Unix epoch (simulated or real)."""
        ...


class Timer(Protocol):
    """A monotonic reading in seconds, for time budgets only (scale-down-simulation-timeout,
    max-binpacking-time, max-nodegroup-binpacking-duration, max-bulk-soft-taint-time).

    A budget bounds how long a step may run; it is never a decision input, so it reads this
    instead of a Clock. Against a real cluster the caller passes `time.perf_counter`; the
    simulator passes a `WorkTimer`, so a budget that runs out does so at the same point on any
    machine.
    """

    def __call__(self) -> float: ...


@contextlib.contextmanager
def timed(durations: dict[str, float], label: str, timer: Timer) -> Iterator[None]:
    """Add the seconds the block takes, by `timer`, to `durations[label]`: measurements for the
    metrics (CA's function_duration_seconds), never an input to a decision."""
    started = timer()
    try:
        yield
    finally:
        durations[label] = durations.get(label, 0.0) + (timer() - started)


class WorkTimer:
    """Time spent measured in work done: every reading costs `step` seconds.

    Decision code reads its timer once per unit of work it bounds (a node simulated, a pod or
    group placed by the estimator, a node added to an estimate, a soft taint written), so the
    difference between two readings counts the units done in between. A budget of B seconds thus
    allows about B / step units, identically on every run.
    """

    def __init__(self, step: float):
        if step <= 0:
            raise ValueError(f"step must be positive, not {step}")
        self.step = step
        self.readings = 0

    def __call__(self) -> float:
        self.readings += 1
        return self.readings * self.step


# What one unit of budgeted work costs on the simulator's timer (a node considered by the
# scale-down simulation, a group, pod or node handled by the binpacking estimator, a soft taint
# written). Roughly what kubetide spends per unit on a laptop, so the time budgets bound about the
# work they would bound there, but at the same point on every machine and every run.
WORK_STEP = 1e-4


def spend(timer: Timer, units: int) -> None:
    """Count `units` of work done at once (each what one reading counts, a pod placed by a
    simulation, ...) against `timer`'s budgets: a `WorkTimer` is told, a wall clock saw the time
    pass by itself."""
    if isinstance(timer, WorkTimer):
        timer.readings += units


def may_run_out(timer: Timer, readings: int, deadline: float) -> bool:
    """Whether `readings` more readings of `timer` may pass `deadline`: a `WorkTimer` knows;
    a wall clock's readings depend on the machine, so only the work they bound is known."""
    return isinstance(timer, WorkTimer) and (timer.readings + readings) * timer.step > deadline


def work_timer() -> WorkTimer:
    """The Timer the simulator and `plan` give each autoscaler they build: driven by work, not the machine."""
    return WorkTimer(WORK_STEP)


class WallClock:
    """Real time, for running against a real cluster."""

    def now(self) -> float:
        return time.time()


class ManualClock:
    """Time that moves only when told to: the simulator's clock, and the tests'."""

    def __init__(self, start: float = 0.0):
        self._now = start

    def now(self) -> float:
        return self._now

    def set(self, moment: float) -> None:
        if moment < self._now:
            raise ValueError(f"time cannot go backwards ({moment} < {self._now})")
        self._now = moment

    def advance(self, seconds: float) -> None:
        self.set(self._now + seconds)
