"""Reading a simulation's events (SimulationResult.events) in tests."""

from __future__ import annotations

import re


def events(result, reason: str, obj: str | None = None) -> list[dict]:
    """The events of this reason (and on this object, if given), in order."""
    return [e for e in result.events if e["reason"] == reason and (obj is None or e["object"] == obj)]


def increases(result, group: str) -> list[tuple[float, int]]:
    """(time, nodes added) for every IncreaseSize the cloud accepted for the group."""
    found = []
    for e in events(result, "IncreaseSize", f"NodeGroup/{group}"):
        before, after = map(int, re.search(r"(\d+) -> (\d+)", e["message"]).groups())
        found.append((e["time"], after - before))
    return found
