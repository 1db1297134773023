"""Events on time and never lost (issue 26 item 2): `python -m benchmarks events`.

`kubetide run` on the tests' real control plane (kube-apiserver v1.36.2, etcd, controller-manager,
scheduler, KWOK; tests/kube/controlplane.py): a Deployment of 2,000 pods of 250m appears at once
(16-cpu KWOK nodes of the `burst` group, 110 pods each), and once all run it goes to zero, so
every node added is removed again. The same scenario as tests/kube/test_run_events.py (500
pods), from tests/kube/burst.py. Measured:

- nodes added and removed; seconds from the Deployment's creation to all pods Running, and
  from its scale to zero to the last node gone;
- removed nodes lacking their ScaleDown "marked" or "removed" Event (target 0);
- how far each Event's timestamp is from what it reports: the node's ToBeDeleted taint (its
  value is the second the decision made it) and the deletion our watch saw (target: within one
  loop, the scan interval plus the second Event timestamps round to);
- per-pod events the writer dropped (only those may be) and seconds from SIGTERM to exit
  (target: within --leader-elect-renew-deadline, 10 s, plus the loop in progress).
"""

from __future__ import annotations

import datetime
import os
import re
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "kube"))
from burst import SCAN_INTERVAL, burst_then_scale_down
from controlplane import ControlPlane, KubeTestContext

PODS = 2_000
ONE_LOOP = SCAN_INTERVAL + 1.0


def main() -> int:
    console = Console(width=160)
    console.print(
        f"{os.cpu_count()} cores, load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}, "
        f"{datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC",
        highlight=False,
    )
    plane = ControlPlane()
    started = time.monotonic()
    try:
        plane.start()
        kube = KubeTestContext(plane, "bench-events")
        try:
            run = burst_then_scale_down(kube, Path(tempfile.mkdtemp(prefix="kubetide-bench-events-")), PODS)
        finally:
            kube.teardown()
    finally:
        plane.stop()
    lateness = run.lateness()
    marked = [m for m, _ in lateness.values()]
    removed = [r for _, r in lateness.values()]
    dropped = sum(int(n) for n in re.findall(r"stopping: (\d+) events not written", run.log))
    dropped += sum(int(n) for n in re.findall(r"per-pod events dropped: .* \((\d+) so far\)", run.log)[-1:])
    missing = run.missing_events()
    late = run.late(ONE_LOOP)
    on_time = len(lateness) - len(late)
    logged = run.removal_logged()
    loop_spans = [
        logged[n] - run.events[n]["nodes removed by cluster autoscaler"].first_timestamp.timestamp()
        for n in lateness
        if n in logged
    ]

    table = Table(title=f"kubetide run: {PODS} pods appear, then go; every node's Events")
    for column in ("measure", "value", "target"):
        table.add_column(column)
    table.add_row("nodes added / removed", f"{run.nodes_added} / {len(run.gone)}", "all removed")
    table.add_row("creation -> all Running", f"{run.scale_up_seconds:.1f} s", "")
    table.add_row("scale to 0 -> last node gone", f"{run.scale_down_seconds:.1f} s", "")
    table.add_row("removed nodes lacking an Event", str(len(missing)), "0")
    table.add_row(
        "'marked' Event - taint time (min / max)",
        f"{min(marked, default=0):+.1f} / {max(marked, default=0):+.1f} s",
        f"within +-{ONE_LOOP:g} s",
    )
    table.add_row(
        "'removed' Event - deletion seen (min / max)",
        f"{min(removed, default=0):+.1f} / {max(removed, default=0):+.1f} s",
        f"within +-{ONE_LOOP:g} s",
    )
    table.add_row(
        "removing loop: Event time -> its log line (max)",
        f"{max(loop_spans, default=0):.1f} s",
        "(the loop's length)",
    )
    table.add_row("nodes with both Events within their loop", f"{on_time} / {len(run.gone)}", "all")
    table.add_row("per-pod events dropped", str(dropped), "only per-pod ones")
    table.add_row("SIGTERM -> exit", f"{run.stop_seconds:.1f} s", "<= 10 s renew deadline + a loop")
    console.print(table)
    console.print(f"total {time.monotonic() - started:.0f}s", highlight=False)
    return 0 if not missing and on_time == len(run.gone) else 1


if __name__ == "__main__":
    raise SystemExit(main())
