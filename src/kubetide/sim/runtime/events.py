"""events.jsonl: every Kubernetes event and autoscaler decision, with simulated timestamps."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from kubetide.sim.runtime.engine import Engine


class EventLog:
    def __init__(self, engine: Engine):
        self.engine = engine
        self.entries: list[dict[str, Any]] = []
        self.reasons: Counter[str] = Counter()

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
        """One event on object `kind` `key` (a Kubernetes Event, or a simulator record)."""
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

    def write(self, path) -> None:
        with open(path, "w", encoding="utf-8") as out:
            for entry in self.entries:
                out.write(json.dumps(entry, sort_keys=False) + "\n")
