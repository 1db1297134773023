"""A NodePool's disruption settings, as Karpenter v1 defines them (pkg/apis/v1/nodepool.go).

- `consolidationPolicy`: WhenEmptyOrUnderutilized (the default), WhenEmpty, or Balanced (a
  consolidation move only when its saving pays for its disruption, Karpenter v1.14's score);
- `consolidateAfter`: how long a node's pods must have been still before it is a candidate
  (default 0s);
- `budgets`: at most 50 entries, each `nodes` (a count or a percentage, default 10%), optional
  `reasons` (Underutilized, Empty, Drifted; none: every reason) and an optional cron `schedule`
  (UTC) with a `duration`, both or neither. The most restrictive active budget matching the
  reason wins; percentages round up.

The flag `karpenter-budgets` writes the list on one line: entries `NODES[:REASON+REASON]
[@CRON/DURATION]` joined by `;`, e.g. `10%;0:Underutilized@0 9 * * 1-5/8h` (at most 10% of the
nodes at any time, and no consolidation of underutilized nodes during working hours). No commas:
`--compare` and `--grid` split on them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from kubetide.durations import parse_duration
from kubetide.model.cronjob import Schedule, parse_schedule

REASONS = ("Underutilized", "Empty", "Drifted")
MAX_BUDGETS = 50


@dataclass(frozen=True, slots=True)
class Budget:
    nodes: int | None  # an absolute count, or None when `percent` is given
    percent: int | None
    reasons: tuple[str, ...] = ()  # empty: every reason
    schedule: Schedule | None = None
    duration: float = 0.0

    def applies_to(self, reason: str) -> bool:
        return not self.reasons or reason in self.reasons

    def active(self, now: float) -> bool:
        """Always without a schedule; with one, from each cron hit for `duration` (Karpenter's
        IsActive: the next hit after now - duration is not after now)."""
        if self.schedule is None:
            return True
        return self.schedule.next_after(now - self.duration, "UTC") <= now

    def allowed(self, total: int) -> int:
        """Nodes this budget lets go of a pool of `total` nodes (percentages round up)."""
        if self.percent is not None:
            return math.ceil(total * self.percent / 100)
        assert self.nodes is not None
        return self.nodes


def parse_budgets(text: str) -> tuple[Budget, ...]:
    """The flag's budgets; ValueError naming the entry and what is wrong."""
    entries = [entry.strip() for entry in text.split(";") if entry.strip()]
    if not entries:
        raise ValueError("expected at least one budget (e.g. 10%)")
    if len(entries) > MAX_BUDGETS:
        raise ValueError(f"at most {MAX_BUDGETS} budgets, got {len(entries)}")
    return tuple(_parse_budget(entry) for entry in entries)


def _parse_budget(entry: str) -> Budget:
    head, at, when = entry.partition("@")
    nodes_text, colon, reasons_text = head.strip().partition(":")
    reasons: tuple[str, ...] = ()
    if colon:
        reasons = tuple(r.strip() for r in reasons_text.split("+") if r.strip())
        if not reasons:
            raise ValueError(f"budget {entry!r}: reasons are {', '.join(REASONS)} joined by +")
    cron = duration_text = None
    if at:
        cron, slash, duration_text = when.rpartition("/")
        if not slash or not cron.strip():
            raise ValueError(f"budget {entry!r}: a schedule needs its duration (@CRON/DURATION)")
    try:
        return budget(nodes_text, reasons, cron, duration_text)
    except ValueError as exc:
        raise ValueError(f"budget {entry!r}: {exc}") from None


def budget(
    nodes_text: str, reasons: tuple[str, ...] = (), cron: str | None = None, duration_text: str | None = None
) -> Budget:
    """One budget from its fields as a NodePool writes them (`nodes: "10%"`, `reasons`, `schedule`,
    `duration`); ValueError saying what is wrong (the caller names the field)."""
    nodes_text = nodes_text.strip()
    nodes: int | None = None
    percent: int | None = None
    try:
        if nodes_text.endswith("%"):
            percent = int(nodes_text[:-1])
            if not 0 <= percent <= 100:
                raise ValueError
        else:
            nodes = int(nodes_text)
            if nodes < 0:
                raise ValueError
    except ValueError:
        raise ValueError("nodes must be a count or a percentage (0-100%)") from None
    if any(r not in REASONS for r in reasons):
        raise ValueError(f"reasons are {', '.join(REASONS)} joined by +")
    if (cron is None) != (duration_text is None):
        raise ValueError("a schedule and a duration go together (both or neither)")
    schedule = None
    duration = 0.0
    if cron is not None and duration_text is not None:
        schedule = parse_schedule(cron.strip())
        duration = parse_duration(duration_text.strip())
        if duration <= 0:
            raise ValueError("the duration must be positive")
    return Budget(nodes, percent, reasons, schedule, duration)


@dataclass(frozen=True, slots=True)
class NodePoolSettings:
    consolidation_policy: str = "WhenEmptyOrUnderutilized"
    consolidate_after: float = 0.0
    budgets: tuple[Budget, ...] = (Budget(None, 10),)
    termination_grace_period: float = 0.0  # 0: none

    def allowed_disruptions(self, reason: str, total: int, now: float) -> int:
        """The most restrictive active budget for `reason` over a pool of `total` nodes
        (Karpenter's GetAllowedDisruptionsByReason; no active budget: no limit)."""
        limits = [b.allowed(total) for b in self.budgets if b.applies_to(reason) and b.active(now)]
        return min(limits, default=total)
