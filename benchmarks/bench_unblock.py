"""What the unblock answers of `kubetide plan` cost (issue 30 item 4): `python -m benchmarks.bench_unblock`.

`kubetide plan` on benchmarks/pdb_shapes.py's dump (2,000 nodes x 20 pods, 250 budgets), in this
process, with `find_unblocks` given no time budget (so both ways answer the same nodes, the
first `--limit` unremovable ones) and run twice: each suggested change checked by the narrowed
check (narrow.py: the recorded search replayed up to what the change alters) and by the whole
re-plan. Reported per way: CPU seconds (process time) inside `find_unblocks`, planner runs,
removals simulated and replayed; and whether the two ways gave every node the same answer.

    python -m benchmarks.bench_unblock [--dump FILE] [--limit N]
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import io
import json
import math
import tempfile
import time
from pathlib import Path
from typing import Any
from unittest import mock

from benchmarks import pdb_shapes
from kubetide.autoscaler import explain
from kubetide.autoscaler.scaledown.explanation import narrow, unblock_search
from kubetide.cli.main import main as kubetide


def measure(dump: Path, limit: int, narrowed: bool) -> dict[str, Any]:
    """One `plan --json` with the answers computed one way; what they cost and what they were."""
    seen: dict[str, Any] = {"cpu": 0.0, "replays": []}

    class Counted(narrow.Replay):
        def __init__(self, *args: Any, **kwargs: Any):
            super().__init__(*args, **kwargs)
            seen["replays"].append(self)

    find_unblocks = unblock_search.find_unblocks  # the real one: `answers` stands in for it below

    def answers(*args: Any, **kwargs: Any) -> dict[str, Any]:
        start = time.process_time()
        try:
            return find_unblocks(*args, **{**kwargs, "budget": math.inf, "limit": limit, "narrow": narrowed})
        finally:
            seen["cpu"] += time.process_time() - start

    runs = {"n": 0}
    planner_init = unblock_search.Planner.__init__

    @functools.wraps(planner_init)
    def counting_init(self: Any, *args: Any, **kwargs: Any) -> None:
        runs["n"] += 1
        planner_init(self, *args, **kwargs)

    out = io.StringIO()
    with (
        mock.patch.object(explain, "find_unblocks", answers),  # what explain() calls
        mock.patch.object(unblock_search, "Replay", Counted),
        mock.patch.object(unblock_search.Planner, "__init__", counting_init),
        contextlib.redirect_stdout(out),
    ):
        kubetide(["plan", str(dump), "--json=compact"])
    nodes = json.loads(out.getvalue())["scale_down"]["nodes"]
    replays = seen["replays"]
    return {
        "cpu": seen["cpu"],
        "planner_runs": runs["n"],
        "simulated": sum(r.simulated for r in replays),
        "replayed": sum(r.replayed for r in replays),
        "answers": {name: node["unblock"] for name, node in nodes.items() if node["unblock"] is not None},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.bench_unblock", description=__doc__.splitlines()[0]
    )
    parser.add_argument(
        "--dump", type=Path, help="a pdb_shapes dump (default: written to a temporary directory)"
    )
    parser.add_argument("--limit", type=int, default=unblock_search.UNBLOCK_LIMIT, help="nodes answered")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        dump = args.dump or pdb_shapes.write(tmp, "json")
        results = {way: measure(dump, args.limit, way == "narrowed") for way in ("narrowed", "whole")}
    for way, r in results.items():
        computed = sum(1 for a in r["answers"].values() if not a["text"].startswith("not computed"))
        print(
            f"{way:9} {r['cpu']:7.2f} s CPU in find_unblocks, {computed} nodes answered,"
            f" {r['planner_runs']} planner runs (the loop's included), {r['simulated']} removals simulated in narrowed runs,"
            f" {r['replayed']} replayed"
        )
    same = results["narrowed"]["answers"] == results["whole"]["answers"]
    print(f"same answers: {same}")
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
