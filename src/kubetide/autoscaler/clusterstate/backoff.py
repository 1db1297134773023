"""Exponential scale-up backoff per node group, with the time spent backed off.

Cluster Autoscaler's rules: the first failure backs a group off for initial-node-group-backoff-
duration; a failure after the backoff has expired doubles the previous duration, capped at
max-node-group-backoff-duration; failures while still backed off (several requests of one scale-up
failing together) renew the backoff from now without doubling; a group with no failure for
node-group-backoff-reset-timeout starts again from the initial duration. A scale-up that succeeds
clears the group's backoff. All comparisons are strict, as in CA: a backoff ending at t is over at t.
"""

from __future__ import annotations

from dataclasses import dataclass

from kubetide.autoscaler.ports import InstanceError


@dataclass(frozen=True, slots=True)
class BackoffStatus:
    backed_off: bool
    until: float | None = None  # end of the current (or last) backoff
    duration: float = 0.0  # length of the current (or last) backoff
    error: InstanceError | None = None  # why: the failure that started or renewed it


@dataclass(slots=True)
class _Entry:
    duration: float
    until: float
    last_failure: float
    error: InstanceError


class ExponentialBackoff:
    def __init__(self, initial: float, maximum: float, reset_timeout: float):
        self.initial = initial
        self.maximum = maximum
        self.reset_timeout = reset_timeout
        self._entries: dict[str, _Entry] = {}
        # Time accounting: closed seconds plus the open interval [start, end) per key.
        self._closed: dict[str, float] = {}
        self._open: dict[str, tuple[float, float]] = {}

    def backoff(self, key: str, error: InstanceError, now: float) -> float:
        """Record a failure; returns when the backoff ends."""
        duration = self.initial
        entry = self._entries.get(key)
        if entry is not None:
            if entry.until < now:
                duration = min(2 * entry.duration, self.maximum)
            else:  # still backed off: renew, do not escalate
                duration = entry.duration
        until = now + duration
        self._entries[key] = _Entry(duration, until, now, error)
        self._account(key, now, until)
        return until

    def status(self, key: str, now: float) -> BackoffStatus:
        entry = self._entries.get(key)
        if entry is None:
            return BackoffStatus(False)
        return BackoffStatus(entry.until > now, entry.until, entry.duration, entry.error)

    def is_backed_off(self, key: str, now: float) -> bool:
        entry = self._entries.get(key)
        return entry is not None and entry.until > now

    def remove(self, key: str, now: float) -> None:
        """Forget the group's backoff (its scale-up succeeded)."""
        if self._entries.pop(key, None) is not None:
            self._truncate(key, now)

    def remove_stale(self, now: float) -> None:
        """Forget groups without a failure for reset_timeout, so their next backoff is initial."""
        for key in [k for k, e in self._entries.items() if e.last_failure + self.reset_timeout < now]:
            self.remove(key, now)

    def backed_off_seconds(self, key: str, now: float) -> float:
        """Total time the group has been backed off up to `now`."""
        total = self._closed.get(key, 0.0)
        interval = self._open.get(key)
        if interval is not None:
            start, end = interval
            total += max(0.0, min(end, now) - start)
        return total

    def _account(self, key: str, now: float, until: float) -> None:
        interval = self._open.get(key)
        if interval is not None and interval[1] >= now:  # overlapping: extend
            self._open[key] = (interval[0], max(interval[1], until))
            return
        if interval is not None:
            self._closed[key] = self._closed.get(key, 0.0) + interval[1] - interval[0]
        self._open[key] = (now, until)

    def _truncate(self, key: str, now: float) -> None:
        interval = self._open.get(key)
        if interval is not None and interval[1] > now:
            self._open[key] = (interval[0], max(interval[0], now))
