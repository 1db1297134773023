"""The whole outputs of `plan --json` and `simulate`, pinned as digests (issues 40 and 41: a
refactor or a speed-up changes no decision).

Cases: `plan --json` on the bundled dumps; `simulate --no-report` on the bundled scenarios; and,
for 60 random clusters (tests/shared/random_clusters.py, pure `random`), `plan --json` with and
without `--no-expire-timers` and a two-hour `simulate` of what `scenario from-cluster` makes of
the same dump. A simulate output is every file it writes but report.html (its embedded plotly
bundle changes with the plotly release the oldest/newest CI runs install), with the wall-clock
field removed.

A change meant to alter decisions regenerates the digests, and says why in its commit message:

    PYTHONPATH=src:tests/shared python -m golden_outputs --write
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import json
import re
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import yaml
from random_clusters import random_cluster

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
DIGESTS = Path(__file__).resolve().parent / "golden_digests.json"
RANDOM_CLUSTERS = 60
DUMPS = {
    "plan-cluster": ("plan-cluster.yaml", "plan-node-groups.yaml"),
    "plan-blockers": ("plan-blockers.yaml", None),
    "cluster": ("cluster.yaml", None),
}
SCENARIOS = sorted(
    path.stem
    for path in EXAMPLES.glob("*.yaml")
    if yaml.safe_load(path.read_text()).get("kind") == "Scenario"
)
WALL_CLOCK = re.compile(rb'"wall_seconds": [0-9.eE+-]+')


def case_names() -> list[str]:
    names = [f"plan/{name}" for name in DUMPS] + [f"simulate/{name}" for name in SCENARIOS]
    return names + [f"random/{seed}" for seed in range(RANDOM_CLUSTERS)]


def run_cli(*argv: str) -> bytes:
    from kubetide.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    if code != 0:
        raise AssertionError(f"kubetide {' '.join(argv)} exited {code}: {err.getvalue()}")
    return out.getvalue().encode()


def _simulate_digests(scenario: Path, out: Path, *extra: str) -> Iterator[tuple[str, str]]:
    run_cli("simulate", str(scenario), "--out", str(out), "--no-report", "--no-compare", *extra)
    for path in sorted(out.iterdir()):
        data = WALL_CLOCK.sub(b'"wall_seconds": 0', path.read_bytes())
        yield path.name, hashlib.sha256(data).hexdigest()


def _plan(dump: Path, groups: Path | None, *extra: str) -> str:
    argv = ["plan", str(dump), "--json", *extra]
    if groups is not None:
        argv += ["--node-groups", str(groups)]
    return hashlib.sha256(run_cli(*argv)).hexdigest()


def digests(name: str) -> dict[str, str]:
    """The digests of one case's outputs, by output."""
    kind, _, which = name.partition("/")
    with tempfile.TemporaryDirectory() as scratch:
        tmp = Path(scratch)
        if kind == "plan":
            dump, groups = DUMPS[which]
            return {"plan.json": _plan(EXAMPLES / dump, EXAMPLES / groups if groups else None)}
        if kind == "simulate":
            return dict(_simulate_digests(EXAMPLES / f"{which}.yaml", tmp / "out"))
        return _random_case(int(which), tmp)


def random_scenario(seed: int, tmp: Path, *, duration: str = "2h", **autoscaler: str) -> Path:
    """Random cluster `seed` (its dump and node groups written to `tmp`) as the scenario
    `scenario from-cluster` makes of it, run for `duration` with the cluster's flags and
    `autoscaler`'s (e.g. policy="karpenter"); Jobs outlive the run."""
    dump, groups, flags = random_cluster(seed)
    dump_file, groups_file = tmp / "cluster.yaml", tmp / "groups.yaml"
    dump_file.write_text(yaml.safe_dump(dump))
    groups_file.write_text(yaml.safe_dump({"nodeGroups": groups}))
    scenario_file = tmp / "scenario.yaml"
    run_cli(
        "scenario",
        "from-cluster",
        str(dump_file),
        "--node-groups",
        str(groups_file),
        "--out",
        str(scenario_file),
    )
    scenario = yaml.safe_load(scenario_file.read_text())
    scenario["spec"]["duration"] = duration
    scenario["spec"]["autoscaler"] = {**flags, **autoscaler}
    scenario["spec"].setdefault("cluster", {})["jobRunDuration"] = "24h"
    scenario_file.write_text(yaml.safe_dump(scenario))
    return scenario_file


def _random_case(seed: int, tmp: Path) -> dict[str, str]:
    scenario_file = random_scenario(seed, tmp)
    _, _, flags = random_cluster(seed)
    dump_file, groups_file = tmp / "cluster.yaml", tmp / "groups.yaml"
    sets = [
        arg
        for flag, value in flags.items()
        for arg in ("--set", f"{flag}={str(value).lower() if isinstance(value, bool) else value}")
    ]
    result = {
        "plan.json": _plan(dump_file, groups_file, *sets),
        "plan-no-expire.json": _plan(dump_file, groups_file, "--no-expire-timers", *sets),
    }
    for output, digest in _simulate_digests(scenario_file, tmp / "out"):
        result[f"simulate/{output}"] = digest
    return result


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help=f"rewrite {DIGESTS.name}")
    args = parser.parse_args(argv)
    found = {name: digests(name) for name in case_names()}
    if args.write:
        DIGESTS.write_text(json.dumps(found, indent=1, sort_keys=True) + "\n")
        print(f"wrote {len(found)} cases to {DIGESTS}")
        return 0
    pinned = json.loads(DIGESTS.read_text())
    changed = [name for name in found if pinned.get(name) != found[name]]
    print("\n".join(changed) or "unchanged")
    return 1 if changed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
