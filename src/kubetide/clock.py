"""The Clock port. Decision code asks a Clock for the time and never reads the wall clock itself,
so the same code runs on the simulator's virtual time and on a real cluster."""

from __future__ import annotations

import time
from typing import Protocol


class Clock(Protocol):
    def now(self) -> float:
        """Seconds since the Unix epoch (simulated or real)."""
        ...


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
