"""The discrete-event engine: a time-ordered queue of callbacks and a virtual clock.

Events are `(time, seq, handle)` in a heap; `seq` breaks ties in the order events were scheduled,
so two runs of the same scenario execute exactly the same sequence. Nothing here reads the wall
clock. Random draws come from named streams (`Engine.rng("cloud")`), each seeded from the scenario
seed and its own name, so adding a component (or a draw in one) never shifts another's numbers.
"""

from __future__ import annotations

import hashlib
import heapq
import random
from collections.abc import Callable
from typing import Any

from kubetide.clock import ManualClock

# Simulated time starts here (2026-01-01T00:00:00Z) rather than at 0, so no timestamp is ever a
# falsy 0.0 and taint values look like real Unix seconds. Reports show time relative to it.
from kubetide.sim.spec.scenario import EPOCH as EPOCH  # re-exported: the engine's default start


class Timer:
    """A scheduled callback; `cancel()` makes it a no-op (it stays in the heap until popped)."""

    __slots__ = ("args", "fn", "when")

    def __init__(self, when: float, fn: Callable[..., Any] | None, args: tuple):
        self.when = when
        self.fn = fn
        self.args = args

    def cancel(self) -> None:
        self.fn = None

    @property
    def active(self) -> bool:
        return self.fn is not None


class Engine:
    def __init__(self, seed: int, start: float = EPOCH):
        self.seed = seed
        self.start = start
        self.clock = ManualClock(start)
        self._queue: list[tuple[float, int, Timer]] = []
        self._seq = 0
        self._streams: dict[str, random.Random] = {}
        self.events_run = 0

    # -- time ------------------------------------------------------------------------------
    def now(self) -> float:
        return self.clock.now()

    def elapsed(self) -> float:
        """Seconds since the simulation started (what reports show)."""
        return self.clock.now() - self.start

    def at(self, when: float, fn: Callable[..., Any], *args: Any) -> Timer:
        """Run `fn(*args)` at simulated time `when` (never earlier than now)."""
        when = max(when, self.clock.now())
        timer = Timer(when, fn, args)
        heapq.heappush(self._queue, (when, self._seq, timer))
        self._seq += 1
        return timer

    def after(self, delay: float, fn: Callable[..., Any], *args: Any) -> Timer:
        return self.at(self.clock.now() + max(delay, 0.0), fn, *args)

    def run_until(self, end: float, on_step: Callable[[float], None] | None = None) -> None:
        """Run every event up to and including time `end`, then leave the clock at `end`.

        `on_step(now)` is called after each event whose time differs from the previous one
        (for progress bars); it must not schedule anything.
        """
        queue = self._queue
        clock = self.clock
        last = clock.now()
        while queue and queue[0][0] <= end:
            when, _, timer = heapq.heappop(queue)
            fn = timer.fn
            if fn is None:
                continue
            timer.fn = None
            if when > last:
                clock.set(when)
                last = when
                if on_step is not None:
                    on_step(when)
            self.events_run += 1
            fn(*timer.args)
        if end > clock.now():
            clock.set(end)

    def pending(self) -> int:
        return sum(1 for _, _, t in self._queue if t.active)

    # -- randomness ------------------------------------------------------------------------
    def rng(self, name: str) -> random.Random:
        """The random stream of one component, the same for the same seed and name."""
        stream = self._streams.get(name)
        if stream is None:
            digest = hashlib.sha256(f"{self.seed}/{name}".encode()).digest()
            stream = self._streams[name] = random.Random(int.from_bytes(digest[:8], "big"))
        return stream
