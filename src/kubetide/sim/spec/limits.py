"""How much a scenario may ask of the machine: the simulator's limits, and `--limit KIND=N`.

A scenario over a limit is refused when it is loaded, in one line naming the limit, the field that
passes it and the flag that lifts it, before anything runs: the inputs that used to run for minutes
and take gigabytes (one scale event to 100,000 replicas, 10,000 node groups) now end at once. The
defaults keep every scenario under them within 2 GB of memory (BENCHMARKS.md, "Simulator limits").

Only the command line lifts a limit (`simulate` and `sweep --limit pods=200000`), never the scenario
file: the limits protect the machine that runs the file, whoever wrote it.
"""

from __future__ import annotations

import dataclasses
import math
import sys
from dataclasses import dataclass

from kubetide.durations import format_duration
from kubetide.errors import UserError

LIMIT_FLAG = "--limit"


@dataclass(frozen=True)
class Limits:
    """The most a scenario may ask for (field names are the `--limit` kinds, dashes for underscores)."""

    # the most pods the scenario could ever ask for at once, all workloads together
    pods: int = 50_000
    # the pods of one workload: spec.replicas, a scale event or trace row, a Job's parallelism or
    # completions, an HPA's maxReplicas
    replicas: int = 50_000
    # nodes: one group's maxSize, and the nodes the scenario starts with (initial sizes and
    # spec.objects' nodes together)
    nodes: int = 5_000
    node_groups: int = 1_000  # entries of spec.nodeGroups
    events: int = 10_000  # spec.events and the rows of spec.traces' files together
    # What a run records, which grows with simulated time rather than with the scenario's size:
    # timeline.csv's cells (a row per autoscaler loop, TIMELINE_COLUMNS wide), checked before
    # the run, and events.jsonl's entries (pending pods' NotTriggerScaleUp, one per pod per
    # loop, are most of them on a long run), which stop the run when they pass the limit.
    timeline_cells: int = 5_000_000
    recorded_events: int = 500_000

    def over(self, kind: str, value: int, what: str) -> str | None:
        """The message for `value` (`what` names it) over the limit `kind`; None within it."""
        limit = getattr(self, kind.replace("-", "_"))
        if value <= limit:
            return None
        return f"{what}, more than the simulator's {kind} limit of {limit:,} (lift it with {LIMIT_FLAG} {kind}=N)"


def timeline_columns(node_groups: int) -> int:
    """timeline.csv's columns, at most: four per node group and those of the cluster (nodes,
    pods, resources, pending causes and unremovable reasons: 27 in the demo)."""
    return 4 * node_groups + 28


def check_timeline(
    limits: Limits, source: str, duration: float, scan_interval: float, node_groups: int
) -> None:
    """UserError when a run's timeline (a row per autoscaler loop) would pass the timeline-cells
    limit: at 10 s loops, 18 days of one node group, or 3 hours of 1,000, are within it."""
    loops = math.ceil(duration / scan_interval) + 1
    columns = timeline_columns(node_groups)
    message = limits.over(
        "timeline-cells",
        loops * columns,
        f"{format_duration(duration)} at scan-interval {format_duration(scan_interval)} is {loops:,} "
        f"autoscaler loops, each a timeline row of up to {columns:,} columns ({node_groups:,} node "
        f"groups): {loops * columns:,} cells",
    )
    if message is not None:
        raise UserError(f"{source}: spec.duration: {message}")


DEFAULT_LIMITS = Limits()
# No limit at all: for checking that a scenario kubetide wrote itself loads, whatever its size.
NO_LIMITS = Limits(**{field.name: sys.maxsize for field in dataclasses.fields(Limits)})
KINDS = tuple(field.name.replace("_", "-") for field in dataclasses.fields(Limits))


def parse_limits(values: list[str]) -> Limits:
    """`--limit KIND=N` flags (repeatable, the last of a kind wins) over the default limits; a bad
    one is a one-line UserError."""
    changes: dict[str, int] = {}
    for value in values:
        kind, separator, number = value.partition("=")
        kind = kind.strip()
        if not separator or kind not in KINDS:
            raise UserError(f"{LIMIT_FLAG} {value}: expected KIND=N with KIND one of {', '.join(KINDS)}")
        try:
            count = int(number.strip().replace(",", "").replace("_", ""))
        except ValueError:
            raise UserError(f"{LIMIT_FLAG} {value}: expected a whole number, got {number!r}") from None
        if count < 1:
            raise UserError(f"{LIMIT_FLAG} {value}: must be at least 1")
        changes[kind.replace("-", "_")] = count
    return dataclasses.replace(DEFAULT_LIMITS, **changes)
