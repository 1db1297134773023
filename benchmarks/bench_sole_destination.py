"""Room for a pod with one possible destination (issue 37 item 3):
`python -m benchmarks.bench_sole_destination [--examples N]`.

The random clusters of tests/sim/test_drains_never_take_a_workload_short.py (slow starts, every
PDB shape, parallel drains 1-10, OrderedReady StatefulSets, load drops of every size), the same
derandomized examples, each simulated twice: as kubetide drains, and with the actuator's room
for single-destination pods turned off (actuation/soledestination.py; everything else as is).
Reported: pods lost, the examples whose drains met such a pod, and for those the last node
removal, both ways; and the CPU seconds.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from unittest.mock import patch

from hypothesis import HealthCheck, given, settings

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "sim"))

from test_drains_never_take_a_workload_short import run, scenarios

from kubetide.autoscaler.scaledown.actuation import actuator
from kubetide.autoscaler.scaledown.actuation.soledestination import sole_destinations


def _measure(data: dict) -> tuple[int, int, float]:
    """(pods lost, pods found with one destination, seconds to the last node removal)."""
    found = [0]

    def counted(*args, **kwargs):
        result = sole_destinations(*args, **kwargs)
        found[0] += len(result)
        return result

    with patch.object(actuator, "sole_destinations", counted):
        sim = run(data)
    removals = [e["time"] for e in sim.log.entries if e["reason"] == "DeleteNodes"]
    return sim.metrics.c.pods_lost, found[0], max(removals, default=0.0)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=200)
    args = parser.parse_args(argv)
    rows: list[tuple[int, int, float, int, float]] = []

    @settings(
        max_examples=args.examples,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(scenarios())
    def each(data: dict) -> None:
        lost, sole, last = _measure(data)
        with patch.object(actuator.Actuator, "_keep_room", lambda *a, **k: None):
            lost_off, _, last_off = _measure(data)
        rows.append((lost, sole, last, lost_off, last_off))

    started = time.process_time()
    each()
    cpu = time.process_time() - started
    met = [r for r in rows if r[1] > 0]
    print(f"examples: {len(rows)}, CPU s: {cpu:.1f}")
    print(f"pods lost: with the room kept {sum(r[0] for r in rows)}, without {sum(r[3] for r in rows)}")
    print(f"examples whose drains met a pod with one destination: {len(met)}")
    if met:
        delays = [r[2] - r[4] for r in met]
        print(
            "  last node removal, kept minus not kept (s): "
            f"median {statistics.median(delays):.0f}, min {min(delays):.0f}, max {max(delays):.0f}"
        )
        print(f"  pods lost among them: kept {sum(r[0] for r in met)}, not kept {sum(r[3] for r in met)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
