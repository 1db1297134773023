"""`kubetide simulate [SCENARIO] [--seed N] [--set FLAG=VALUE] [--compare NAME:FLAG=VALUE,...] [--workers N]
[--limit KIND=N] [--out DIR] [--json]`.

Runs a scenario on the simulator; without SCENARIO, the bundled demo. `--set` changes autoscaler
flags over the scenario's spec.autoscaler. Writes summary.json, timeline.csv, events.jsonl and
report.html to DIR (default ./kubetide-out/<scenario name>/) and ends with a summary table, or
prints summary.json with --json. A scenario over the simulator's limits (sim/spec/limits.py) is
refused in one line; `--limit KIND=N` lifts one.

With `--compare` (or the scenario's spec.compare, or spec.qos.compare) it runs the same scenario
and seed once per named setting (sweep/compare.py): each run's files go to DIR/<name>/, and
DIR/compare.json and one DIR/report.html with the runs overlaid compare them; the console shows one
column per setting, --json prints compare.json. The compared runs go in parallel, one process per
setting up to `--workers` (default: the machine's cores; 1 runs them here, one after another).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

from kubetide.cli.json_output import add_json_argument
from kubetide.cli.output import console, ensure_output_dir, print_json, warn, writing_into
from kubetide.cli.progress import Display
from kubetide.durations import format_duration, parse_duration
from kubetide.errors import UserError

DEMO = "data/scenarios/demo.yaml"


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "simulate",
        help="run a scenario on the embedded cluster simulator",
        description="Simulate a cluster, its cloud and the autoscaler through a scenario, deterministically.",
    )
    parser.add_argument(
        "scenario",
        nargs="?",
        metavar="SCENARIO",
        help="scenario file, - for stdin (default: the bundled demo)",
    )
    parser.add_argument(
        "--seed", type=int, metavar="N", help="random seed (default: the scenario's spec.seed)"
    )
    parser.add_argument(
        "--out", metavar="DIR", help="output directory (default: ./kubetide-out/<scenario name>/)"
    )
    add_json_argument(parser, "summary.json (a SimulationSummary) instead of a table")
    parser.add_argument(
        "--duration", metavar="DURATION", help="simulate only this long (e.g. 30m); later events are dropped"
    )
    parser.add_argument("--no-report", action="store_true", help="skip report.html")
    parser.add_argument(
        "--no-autoscaler", action="store_true", help="run the cluster without an autoscaler (a baseline)"
    )
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="FLAG=VALUE",
        help="an autoscaler flag over the scenario's spec.autoscaler (repeatable; --set --flag=value works too)",
    )
    parser.add_argument(
        "--compare",
        action="append",
        default=[],
        metavar="NAME:FLAG=VALUE,...",
        help="run the scenario once per named setting and compare them (repeatable; replaces the "
        "scenario's spec.compare; 'NAME:' alone is the scenario's own setting)",
    )
    parser.add_argument(
        "--no-compare", action="store_true", help="run once, ignoring the scenario's spec.compare"
    )
    parser.add_argument(
        "--workers",
        type=int,
        metavar="N",
        help="compared runs in parallel on N local processes (default: cores; 1 runs them in this process)",
    )
    add_limit_argument(parser)
    parser.set_defaults(run=run)


def add_limit_argument(parser: argparse.ArgumentParser) -> None:
    """`--limit KIND=N` (simulate and sweep): sim/spec/limits.py; its KINDS are repeated here so
    `--help` loads no model."""
    parser.add_argument(
        "--limit",
        action="append",
        default=[],
        metavar="KIND=N",
        help="lift one of the simulator's limits (repeatable): pods=50000, replicas=50000 (per "
        "workload), nodes=5000, node-groups=1000, events=10000, timeline-cells=5000000, "
        "recorded-events=500000 are the defaults",
    )


# Options whose value may itself look like an option (`--set --scan-interval=10s`); main.py joins
# such a pair into `--set=--scan-interval=10s` before argparse sees it.


def run(args: argparse.Namespace) -> int:
    with Display(not args.json) as display:
        display.stage(f"loading {args.scenario or 'the demo scenario'}")
        return _run(args, display)


def _run(args: argparse.Namespace, display: Display) -> int:
    # Here rather than at the top: `simulate --help` needs neither the model nor rich.
    from kubetide.cli.inputs import read_scenario
    from kubetide.cli.simulate_summary import print_summary
    from kubetide.sim.report.output import default_out_dir, summary_json, write_outputs
    from kubetide.sim.runtime.simulation import NoAutoscaler, Simulation
    from kubetide.sim.spec.limits import parse_limits
    from kubetide.sweep.compare import parse_compare, parse_set, scenario_variants
    from kubetide.sweep.grid import with_options

    scenario, _ = read_scenario(args.scenario, DEMO, parse_limits(args.limit))
    if not args.scenario:
        scenario.source = "demo.yaml (bundled)"
    if args.duration is not None:
        scenario = scenario.with_duration(duration_flag(args.duration))
    if args.workers is not None and args.workers < 1:
        raise UserError(f"--workers {args.workers}: must be at least 1")
    if args.compare and (args.no_compare or args.no_autoscaler):
        raise UserError(f"--compare: not with {'--no-compare' if args.no_compare else '--no-autoscaler'}")
    flag_warnings: list[str] = []  # approximated and infrastructure flags, as `plan --set` says them
    scenario = with_options(scenario, parse_set(args.set, scenario.options, flag_warnings))
    if args.compare:
        variants = parse_compare(args.compare, scenario.options, flag_warnings)
    elif args.no_compare or args.no_autoscaler:
        variants = []
    else:
        variants = scenario_variants(scenario)
    out_dir = Path(args.out) if args.out is not None else default_out_dir(scenario.name)
    created = not out_dir.exists()
    ensure_output_dir(out_dir, "--out")
    warn(scenario.warnings)
    warn(flag_warnings)
    if variants:
        return _run_comparison(args, scenario, variants, out_dir, display, created=created)
    if args.workers is not None:
        warn(["--workers: one run, nothing to run in parallel (it applies to --compare and spec.compare)"])

    display.stage(f"building {scenario.name}")
    try:
        if args.no_autoscaler:
            simulation = Simulation(
                scenario, seed=args.seed, autoscaler_factory=NoAutoscaler, autoscaler_name="none"
            )
        else:
            simulation = Simulation(scenario, seed=args.seed, explain_unremovable=True)
        total = format_duration(scenario.duration)
        bar = display.add_bar(f"simulating {scenario.name}", scenario.duration, f"0s / {total}")

        def update(elapsed: float) -> None:
            display.update(bar, completed=elapsed, detail=f"{format_duration(round(elapsed))} / {total}")

        result = simulation.run(progress=update if display.enabled else None)
    except KeyboardInterrupt:
        display.close()
        return interrupted(out_dir, created, kept=[], unfinished=[])
    except UserError:  # a limit the run passed (sim/spec/limits.py): nothing written
        if created and out_dir.is_dir() and not any(out_dir.iterdir()):
            out_dir.rmdir()
        raise
    try:
        with writing_into(out_dir, "--out"):
            paths = write_outputs(result, out_dir, report=not args.no_report)
    except KeyboardInterrupt:
        display.close()
        sys.stderr.write(f"kubetide: interrupted while writing {out_dir}/: its files may be incomplete\n")
        return INTERRUPTED
    display.close()
    warn(w for w in result.warnings if w not in scenario.warnings)
    if args.json:
        sys.stdout.write(summary_json(result.summary))  # summary.json, byte for byte
    else:
        print_summary(result.summary, paths)
    return 0


INTERRUPTED = 130  # a shell's code for a command ended by SIGINT


def interrupted(out_dir: Path, created: bool, *, kept: list[str], unfinished: list[str]) -> int:
    """Say what an interrupted run kept (never a half-written run: run_variants writes each beside
    and moves it into place), remove the output directory when this run created it and left it
    empty, and return the exit code."""
    from kubetide.sweep.compare import partial_dir

    for name in unfinished:
        shutil.rmtree(partial_dir(out_dir, name), ignore_errors=True)
    removed = created and out_dir.is_dir() and not any(out_dir.iterdir())
    if removed:
        out_dir.rmdir()
    if kept:
        what = f"kept {', '.join(f'{name}/' for name in kept)} in {out_dir}/ (complete runs)"
        if unfinished:
            what += f"; {', '.join(unfinished)} stopped before the end, not written"
        what += "; compare.json and report.html not written"
    elif removed:
        what = f"nothing written ({out_dir}/ removed: this run had created it)"
    else:
        what = f"nothing written to {out_dir}/"
    sys.stderr.write(f"kubetide: interrupted: {what}\n")
    return INTERRUPTED


def duration_flag(text: str) -> float:
    """--duration's value in seconds; a bad or non-positive one is a one-line UserError."""
    from kubetide.sim.spec.scenario import check_duration

    try:
        seconds = parse_duration(text)
        if seconds <= 0:
            raise ValueError("must be positive")
        check_duration(seconds)
    except ValueError as exc:
        raise UserError(f"--duration: {exc}") from None
    return seconds


def _run_comparison(
    args: argparse.Namespace, scenario, variants, out_dir: Path, display: Display, *, created: bool
) -> int:
    """Every variant on the same scenario and seed; their files, compare.json and one report."""
    from kubetide.sweep.compare import comparison, run_variants
    from kubetide.sweep.engines import LocalEngine, default_workers

    engine = LocalEngine(min(args.workers or default_workers(), len(variants)))
    finished: list[str] = []
    progress = _compare_bars(scenario, variants, engine, display) if display.enabled else None
    try:
        with writing_into(out_dir, "--out"):
            results = run_variants(
                scenario, args.seed, variants, out_dir, engine, on_progress=progress, on_done=finished.append
            )
    except KeyboardInterrupt:
        display.close()
        unfinished = [v.name for v in variants if v.name not in finished]
        return interrupted(out_dir, created, kept=finished, unfinished=unfinished)
    display.close()
    seed = results[0][1].summary["seed"]
    data = comparison(scenario, seed, results)
    (out_dir / "compare.json").write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    if not args.no_report:
        from kubetide.sim.report.html import render_comparison

        page = render_comparison(data, [result for _, result in results])
        (out_dir / "report.html").write_text(page, encoding="utf-8")
    shown = set(scenario.warnings)
    for _, result in results:
        fresh = [w for w in result.warnings if w not in shown]
        shown.update(fresh)
        warn(fresh)
    if args.json:
        print_json(data, args.json)
    else:
        _print_comparison(data, out_dir, report=not args.no_report)
    return 0


def _compare_bars(scenario, variants, engine, display: Display):
    """A bar per setting, each moving with its run's simulated time; the on_progress callback."""
    where = "in this process" if engine.workers == 1 else f"on {engine.workers} processes"
    display.stage(f"{scenario.name}: {len(variants)} settings {where}")
    total = format_duration(scenario.duration)
    bars = {
        v.name: display.add_bar(v.name, scenario.duration, "waiting", start=False, keep_stage=True)
        for v in variants
    }
    started: set[str] = set()

    def update(name: str, elapsed: float) -> None:
        if name not in started:  # its elapsed time counts from here
            started.add(name)
            display.start(bars[name])
        display.update(bars[name], completed=elapsed, detail=f"{format_duration(round(elapsed))} / {total}")

    return update


def _print_comparison(data: dict, out_dir: Path, *, report: bool) -> None:
    """One column per setting, one row per metric (sweep/compare.py METRICS), invariants last.
    When the flags, written out, would not fit the console, their NAMES are abbreviated (a key
    under the table); a value is never cut, so settings that differ always look different."""
    from rich.table import Table

    from kubetide.sim.report.columns import format_flags

    out = console()
    out.print(
        f"[bold]{data['scenario']}[/bold]: {len(data['settings'])} settings compared over "
        f"{format_duration(data['simulated_seconds'])}, seed {data['seed']}",
    )
    settings = data["settings"]
    rows = _comparison_rows(settings)
    cells = []
    for entry in settings:
        broken = {name: count for name, count in entry["metrics"]["invariants"].items() if count}
        cells.append(
            "[green]all held[/green]"
            if not broken
            else "[bold red]" + ", ".join(f"{name} {count}" for name, count in broken.items()) + "[/bold red]"
        )
    flags = [format_flags(entry, "\n") for entry in settings]
    abbreviations: dict[str, str] = {}
    if _table_width(settings, flags, rows) > out.width:
        abbreviations = flag_abbreviations([name for entry in settings for name in entry["flags"]])
        flags = [_abbreviated(text, abbreviations) for text in flags]
    table = Table(show_header=True, header_style="bold", box=None, pad_edge=False)
    table.add_column("", no_wrap=True)
    for entry in settings:
        table.add_column(entry["name"], justify="right", overflow="fold")
    table.add_row("flags", *flags)
    for heading, values in rows:
        table.add_row(heading, *values)
    table.add_row("invariants", *cells)
    out.print(table)
    if abbreviations:
        out.print("flags: " + ", ".join(f"{short} = {name}" for name, short in abbreviations.items()))
    written = [f"{entry['dir']}/" for entry in settings] + ["compare.json"]
    if report:
        written.append("report.html")
    out.print(f"wrote {', '.join(written)} to {out_dir}/")


def _comparison_rows(settings: list[dict]) -> list[tuple[str, list[str]]]:
    """The comparison table's metric rows (heading, one cell per setting): METRICS, then what a
    comparison of policies adds, the QoS agent's counts, and the most disrupted workload."""
    from kubetide.sim.report.columns import POLICY_ROWS, format_metric
    from kubetide.sweep.compare import METRICS

    rows: list[tuple[str, list[str]]] = []
    for key, heading, _ in METRICS:
        rows.append((heading, [format_metric(key, entry["metrics"][key]) for entry in settings]))
    if all("policy" in entry for entry in settings):
        for key, heading in POLICY_ROWS:
            rows.append((heading, [format_metric(key, entry["policy"][key]) for entry in settings]))
    if all("qos" in entry for entry in settings):
        rows.append(("QoS agent evictions", [f"{entry['qos']['evictions']:,}" for entry in settings]))
        rows.append(("QoS agent throttles", [f"{entry['qos']['throttles']:,}" for entry in settings]))
    worst = [entry["metrics"]["disruption"]["worst"] for entry in settings]
    if any(worst):
        rows.append(("most disrupted", [name.split("/", 1)[1] if name else "none" for name in worst]))
    return rows


def _table_width(settings: list[dict], flags: list[str], rows: list[tuple[str, list[str]]]) -> int:
    """The comparison table's width with nothing wrapped (two spaces between columns)."""
    label = max(len(heading) for heading, _ in [("flags", []), ("invariants", []), *rows])
    columns = [
        max(len(entry["name"]), 8, *(len(line) for line in text.split("\n")), *(len(v[i]) for _, v in rows))
        for i, (entry, text) in enumerate(zip(settings, flags, strict=True))
    ]
    return label + sum(columns) + 2 * len(columns)


def flag_abbreviations(names: list[str]) -> dict[str, str]:
    """Each flag name -> its initials (`scale-down-unneeded-time` -> `sdut`), numbered when names
    share them (`sdut1`, `sdut2`, in the order given); a name no longer than that stays whole."""
    names = list(dict.fromkeys(names))
    initials = {name: "".join(word[:1] for word in name.split("-")) for name in names}
    shared: dict[str, list[str]] = {}
    for name, short in initials.items():
        shared.setdefault(short, []).append(name)
    key = {}
    for short, owners in shared.items():
        for number, name in enumerate(owners, 1):
            abbreviation = short if len(owners) == 1 and short not in names else f"{short}{number}"
            if len(abbreviation) < len(name):
                key[name] = abbreviation
    return key


def _abbreviated(flags: str, key: dict[str, str]) -> str:
    """The flags with their names abbreviated, a long list value broken after its commas."""
    lines = []
    for line in flags.split("\n"):
        name, sep, value = line.partition("=")
        lines.append(f"{key.get(name, name)}{sep}{value.replace(',', ',' + chr(10))}")
    return "\n".join(lines)
