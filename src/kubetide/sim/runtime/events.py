"""events.jsonl: every Kubernetes event and autoscaler decision, with simulated timestamps."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from kubetide.durations import format_duration
from kubetide.errors import UserError
from kubetide.sim.runtime.engine import Engine


class EventLog:
    def __init__(self, engine: Engine, limit: int | None = None, source: str = ""):
        """`limit`: the most entries the run may record (the recorded-events limit of the
        scenario file `source`, sim/spec/limits.py); None: no limit."""
        self.engine = engine
        self.entries: list[dict[str, Any]] = []
        self.reasons: Counter[str] = Counter()
        self.limit = limit
        self.source = source

    def record(
        self,
        kind: str,
        key: str,
        event_type: str,
        reason: str,
        message: str,
        source: str,
        **extra: Any,
    ) -> None:
        """One event on object `kind` `key` (a Kubernetes Event, or a simulator record).
        UserError, which ends the run, when it is one more than the limit."""
        if self.limit is not None and len(self.entries) >= self.limit:
            self._over(reason)
        entry = {
            "time": round(self.engine.elapsed(), 3),
            "source": source,
            "type": event_type,
            "reason": reason,
            "object": f"{kind}/{key}",
            "message": message,
        }
        if extra:
            entry.update(extra)
        self.entries.append(entry)
        self.reasons[reason] += 1

    def _over(self, reason: str) -> None:
        self.reasons[reason] += 1
        most, count = self.reasons.most_common(1)[0]
        message = (
            f"{self.source}: the run had recorded {len(self.entries):,} events after "
            f"{format_duration(round(self.engine.elapsed()))} of simulated time ({most} {count:,} of them), "
            f"more than the simulator's recorded-events limit of {self.limit:,} "
            f"(lift it with --limit recorded-events=N); nothing written"
        )
        raise UserError(message)

    def write(self, path) -> None:
        with open(path, "w", encoding="utf-8") as out:
            for entry in self.entries:
                out.write(json.dumps(entry, sort_keys=False) + "\n")
