"""Run benchmarks: `python -m benchmarks` runs every benchmarks/bench_*.py, in name order;
`python -m benchmarks scheduling snapshot` runs bench_scheduling and bench_snapshot only;
`python -m benchmarks whole --large` passes the options after the names to each module run.

Each module is run as if started with `python -m benchmarks.bench_NAME [OPTIONS]`.
"""

from __future__ import annotations

import runpy
import sys
from itertools import takewhile
from pathlib import Path


def available() -> list[str]:
    return sorted(p.stem.removeprefix("bench_") for p in Path(__file__).parent.glob("bench_*.py"))


def main(argv: list[str]) -> int:
    names = available()
    chosen = list(takewhile(lambda a: not a.startswith("-"), argv))
    options = argv[len(chosen) :]
    wanted = [a.removeprefix("bench_") for a in chosen] or names
    unknown = [n for n in wanted if n not in names]
    if unknown:
        sys.stderr.write(f"unknown benchmark {', '.join(unknown)}; available: {', '.join(names)}\n")
        return 2
    for name in wanted:
        print(f"== bench_{name}", flush=True)
        # A module reads its options from sys.argv, as when started on its own.
        sys.argv = [f"benchmarks.bench_{name}", *options]
        runpy.run_module(f"benchmarks.bench_{name}", run_name="__main__")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
