"""`kubetide sweep SCENARIO --grid FLAG=V1,V2 ... [--seeds N | --seed-list 3,7] [--trace CSV ...]
[--engine local|dask] [--limit KIND=N]`.

Simulates the scenario once per (setting, trace, seed): every combination of the --grid values,
each on every --trace alternative (or the scenario's own traces) and every seed, exactly as
`kubetide simulate` would run it. Writes runs/<setting>/[trace-<trace>/]seed-<n>/summary.json
per run, summary.csv, sweep.json and report.html to DIR (default ./kubetide-out/<scenario>-sweep/),
and ends with a table per setting, or prints sweep.json with --json. Runs already stored in DIR
are not run again, so an interrupted sweep resumes where it stopped. `--limit` lifts one of the
simulator's limits, as for `simulate` (sim/spec/limits.py).

A scenario with spec.compare sweeps its entries' flags instead of a grid (each entry over every
seed); --grid beside spec.compare needs --no-compare (sweep/compare.py `sweep_settings`).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from kubetide.cli.json_output import add_json_argument, document
from kubetide.cli.output import console, ensure_output_dir, print_json, warn, writing_into
from kubetide.cli.progress import Display
from kubetide.cli.simulate import DEMO, add_limit_argument, duration_flag
from kubetide.errors import UserError


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "sweep",
        help="simulate a scenario over a grid of autoscaler settings and many seeds",
        description="Simulate a scenario for every combination of --grid values and every seed, "
        "locally or on a Dask cluster, and compare the settings.",
    )
    parser.add_argument(
        "scenario",
        nargs="?",
        metavar="SCENARIO",
        help="scenario file, - for stdin (default: the bundled demo)",
    )
    parser.add_argument(
        "--grid",
        action="append",
        default=[],
        metavar="FLAG=V1,V2",
        help="autoscaler flag values to try (repeatable: the cross product). Separate values with ';' "
        "when they contain commas, e.g. 'expander=priority,least-waste;random'",
    )
    parser.add_argument(
        "--no-compare",
        action="store_true",
        help="sweep the --grid over a scenario with spec.compare (which it otherwise sweeps instead)",
    )
    seeds = parser.add_mutually_exclusive_group()
    seeds.add_argument("--seeds", type=int, metavar="N", help="run seeds 1..N (default 5)")
    seeds.add_argument("--seed-list", metavar="S1,S2", help="run these seeds, e.g. 3,7,11")
    parser.add_argument(
        "--trace",
        action="extend",
        nargs="+",
        default=[],
        metavar="[NAME=]CSV",
        help="replica traces to run every setting on instead of the scenario's own (repeatable); "
        "NAME (the traced workload) is needed when the scenario has several traces",
    )
    parser.add_argument(
        "--duration", metavar="DURATION", help="simulate only this long (e.g. 30m); later events are dropped"
    )
    parser.add_argument(
        "--out", metavar="DIR", help="output directory (default: ./kubetide-out/<scenario name>-sweep/)"
    )
    add_json_argument(parser, "sweep.json (a SweepResult) instead of tables")
    parser.add_argument("--engine", choices=("local", "dask"), default="local", help="where runs execute")
    parser.add_argument(
        "--scheduler-address",
        metavar="tls://HOST:PORT",
        help="a Dask scheduler to run on (with --engine dask; default: a LocalCluster on this machine). "
        "Dask sends pickles, which run code, both ways: only tls:// is taken, with the client "
        "certificate from Dask's config (distributed.comm.tls.*)",
    )
    parser.add_argument(
        "--insecure",
        action="store_true",
        help="take a --scheduler-address that is not tls:// (anyone who can reach the scheduler, "
        "or sit on the way, can run code in kubetide and in every worker)",
    )
    parser.add_argument(
        "--workers", type=int, metavar="N", help="local processes or LocalCluster workers (default: cores)"
    )
    add_limit_argument(parser)
    parser.set_defaults(run=run)


def _seeds(args: argparse.Namespace) -> list[int]:
    if args.seed_list is not None:
        try:
            seeds = [int(s) for s in args.seed_list.split(",") if s.strip()]
        except ValueError:
            raise UserError(f"--seed-list {args.seed_list}: expected integers, e.g. 3,7,11") from None
        if not seeds:
            raise UserError("--seed-list: expected at least one seed")
        return list(dict.fromkeys(seeds))
    count = 5 if args.seeds is None else args.seeds
    if count < 1:
        raise UserError(f"--seeds {count}: must be at least 1")
    return list(range(1, count + 1))


def _engine(args: argparse.Namespace):
    from kubetide.sweep.engines import DaskEngine, LocalEngine

    if args.workers is not None and args.workers < 1:
        raise UserError(f"--workers {args.workers}: must be at least 1")
    if args.engine == "local":
        if args.scheduler_address is not None:
            raise UserError("--scheduler-address: needs --engine dask")
        return LocalEngine(args.workers)
    if args.scheduler_address is not None:
        check_scheduler_address(args.scheduler_address.strip(), args.insecure)
    elif args.insecure:
        raise UserError("--insecure: only with --scheduler-address (a LocalCluster is on this machine)")
    return DaskEngine(args.scheduler_address, args.workers)


def check_scheduler_address(address: str, insecure: bool) -> None:
    """Dask's client and scheduler exchange pickles: whoever runs the scheduler, or can reach it,
    runs code in this process, and what kubetide submits runs in every worker. Only an address
    whose TLS proves who is at the other end (and who we are, with a client certificate) is taken
    without --insecure."""
    if not address:
        raise UserError("--scheduler-address: expected tls://HOST:PORT")
    scheme, separator, _ = address.partition("://")
    if separator and scheme == "tls":
        return
    if not insecure:
        raise UserError(
            f"--scheduler-address {address}: not tls://; Dask exchanges pickles that run code, so a "
            "plain connection lets anyone on the way run code here: use tls:// (certificates from "
            "Dask's distributed.comm.tls config) or pass --insecure on a network you trust"
        )


def run(args: argparse.Namespace) -> int:
    with Display(not args.json) as display:
        display.stage(f"loading {args.scenario or 'the demo scenario'}")
        return _run(args, display)


def _run(args: argparse.Namespace, display: Display) -> int:
    from kubetide.cli.inputs import read_scenario  # here: `sweep --help` loads no model
    from kubetide.sweep.compare import sweep_settings
    from kubetide.sweep.grid import build_settings, parse_grid, scenario_setting
    from kubetide.sweep.results import RunStore, fingerprint

    grid = parse_grid(args.grid)
    seeds = _seeds(args)
    engine = _engine(args)
    from kubetide.sim.spec.limits import parse_limits

    limits = parse_limits(args.limit)
    scenario, scenario_bytes = read_scenario(args.scenario, DEMO, limits)
    if args.duration is not None:
        scenario = scenario.with_duration(duration_flag(args.duration))
    alternatives, scenarios = _trace_variants(args, scenario, scenario_bytes, limits)
    compared = sweep_settings(scenario, grid, args.no_compare)
    flag_warnings: list[str] = []  # approximated and infrastructure flags, as `plan --set` says them
    chosen = compared or build_settings(grid, scenario.options, flag_warnings)
    settings, own = scenario_setting(chosen, scenario.options)
    out_dir = Path(args.out) if args.out is not None else Path("kubetide-out") / f"{scenario.name}-sweep"
    ensure_output_dir(out_dir, "--out")
    warn(scenario.warnings)
    warn(flag_warnings)
    store = RunStore(out_dir)
    try:
        with writing_into(out_dir, "--out"):
            store.claim(fingerprint(scenario_bytes, scenario.duration))
            sweep = run_sweep(
                scenario,
                grid,
                settings,
                own,
                seeds,
                store,
                engine,
                display=display,
                scenarios=scenarios,
                trace_labels={a.id: a.label for a in alternatives},
            )
    except KeyboardInterrupt:
        # Each run's summary.json is stored whole as it finishes (RunStore.save): those are kept,
        # and the same command resumes from them.
        display.close()
        stored = sum(1 for _ in (out_dir / "runs").rglob("summary.json"))
        sys.stderr.write(
            f"kubetide: interrupted: {stored} complete runs kept in {out_dir}/runs/ (the same command "
            "resumes from them); summary.csv, sweep.json and report.html not updated\n"
        )
        return 130
    display.close()
    if args.json:
        print_json(sweep, args.json)
    else:
        from kubetide.cli.sweep_table import scenario_values

        flags = {name for row in sweep["settings"] for name in row["flags"]}
        _print_sweep(sweep, out_dir, scenario_values(flags, scenario.options), own not in chosen)
    return 0


def _trace_variants(args: argparse.Namespace, scenario, scenario_bytes: bytes, limits):
    """The --trace alternatives, and trace id -> scenario to run (the scenario itself without any)."""
    from kubetide.cli.inputs import scenario_base_dir, source_name
    from kubetide.model.loader import parse_text
    from kubetide.sweep.traces import SCENARIOS_OWN, parse_trace_alternatives, scenario_variants

    if not args.trace:
        return [], {SCENARIOS_OWN: scenario}
    source = source_name(args.scenario) if args.scenario else DEMO
    document = parse_text(scenario_bytes.decode("utf-8"), source)[0]
    alternatives = parse_trace_alternatives(args.trace, document, source)
    base_dir = scenario_base_dir(args.scenario) if args.scenario else Path.cwd()
    return alternatives, scenario_variants(document, source, base_dir, scenario, alternatives, limits)


def run_sweep(
    scenario,
    grid,
    settings,
    own,
    seeds,
    store,
    engine,
    *,
    display: Display | None = None,
    scenarios=None,
    trace_labels: dict[str, str] | None = None,
) -> dict:
    """Run what is not stored yet, then write summary.csv, sweep.json and report.html.

    `scenarios` maps trace ids to the scenarios to run (the --trace alternatives, labelled by
    `trace_labels`); by default the scenario as written."""
    from kubetide.sweep.engines import Task
    from kubetide.sweep.front import pareto_front
    from kubetide.sweep.report import render
    from kubetide.sweep.results import aggregate, better_everywhere, execute, write_summary_csv
    from kubetide.sweep.traces import SCENARIOS_OWN

    scenarios = scenarios or {SCENARIOS_OWN: scenario}
    traces = list(scenarios)
    tasks = [Task(setting, seed, trace) for setting in settings for trace in traces for seed in seeds]
    started = time.perf_counter()
    if display is not None and display.enabled:
        runs = _execute_with_progress(scenario.name, scenarios, tasks, store, engine, display)
    else:
        runs = execute(scenarios, tasks, store, engine)
    wall = time.perf_counter() - started
    rows = aggregate(settings, seeds, runs.summaries, traces)
    front_metrics, front = pareto_front(rows)
    ran = len(runs.summaries) - runs.reused
    sweep = document(
        "SweepResult",
        {
            "scenario": scenario.name,
            "simulated_seconds": round(scenario.duration, 3),
            "grid": grid,
            "seeds": seeds,
            "traces": [{"id": trace, "trace": label} for trace, label in (trace_labels or {}).items()],
            "scenario_setting": own.id,
            "settings": rows,
            "pareto_front": front,
            "pareto_front_metrics": front_metrics,
            "better_than_scenario_everywhere": better_everywhere(rows, own.id),
            "failures": [
                {
                    "setting": f.setting.id,
                    "flags": dict(f.setting.flags),
                    "seed": f.seed,
                    **({"trace": f.trace} if f.trace else {}),
                    "error": f.error,
                }
                for f in runs.failures
            ],
            # Not deterministic (wall time), unlike everything above.
            "timing": {
                "engine": engine.name,
                "workers": engine.workers,
                "runs": ran,
                "reused": runs.reused,
                "wall_seconds": round(wall, 3),
                "run_seconds": round(runs.run_seconds, 3),
            },
        },
    )
    out = store.out_dir
    write_summary_csv(out / "summary.csv", grid, settings, seeds, runs, traces)
    (out / "sweep.json").write_text(json.dumps(sweep, indent=2) + "\n", encoding="utf-8")
    by_setting: dict[str, list[dict]] = {}
    for task, summary in runs.summaries.items():
        by_setting.setdefault(task.setting.id, []).append(summary)
    (out / "report.html").write_text(render(sweep, by_setting), encoding="utf-8")
    return sweep


def _execute_with_progress(name: str, scenarios, tasks, store, engine, display: Display):
    """execute() with a bar of the runs done, and how many are running now (every worker is busy
    while runs are left, so the count of running runs is the smaller of the two)."""
    from kubetide.sweep.results import execute

    stored = sum(1 for t in tasks if store.path(t).exists())
    done = [stored]
    where = f"{engine.name}, {engine.workers} workers"

    def detail() -> str:
        running = min(engine.workers, len(tasks) - done[0])
        return f"{done[0]}/{len(tasks)} done, {running} running ({where})"

    bar = display.add_bar(f"sweep {name}", len(tasks), detail())
    display.update(bar, completed=stored)

    def finished(_outcome) -> None:
        done[0] += 1
        display.update(bar, completed=done[0], detail=detail())

    return execute(scenarios, tasks, store, engine, on_outcome=finished)


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"


def _print_sweep(sweep: dict, out_dir: Path, own_values: dict[str, str], own_added: bool) -> None:
    """The table, then lines naming settings by their row in it (a setting's flags can take half
    a line; its row has them). `own_values`: the scenario's values of the swept flags;
    `own_added`: whether the scenario's own setting is none of the grid's (or spec.compare's), so
    the sweep added it as the baseline of "better everywhere"."""
    from kubetide.cli.output import line_width
    from kubetide.cli.sweep_table import row_numbers, sweep_table

    out = console()
    timing = sweep["timing"]
    traces = f" x {_count(len(sweep['traces']), 'trace')}" if sweep.get("traces") else ""
    out.print(
        f"[bold]{sweep['scenario']}[/bold]: {_count(len(sweep['settings']), 'setting')}{traces} x {_count(len(sweep['seeds']), 'seed')}; "
        f"ran {timing['runs']} ({timing['reused']} already stored) in {timing['wall_seconds']:.1f}s "
        f"on {timing['engine']} ({timing['workers']} workers)",
    )
    above, table, under = sweep_table(sweep, own_values, line_width(out))
    for line in above:
        out.print(line)
    out.print(table)
    for line in under:
        out.print(line)
    rows = row_numbers(sweep)
    own = sweep["scenario_setting"]
    where = "not in the grid" if sweep["grid"] else "none of spec.compare's"
    baseline = f" ({where}: run as the baseline)" if own_added else ""
    out.print(f"* row {rows[own]}: the scenario's own setting{baseline}")
    for row in sweep["settings"]:
        for b in row["invariant_breaks"]:
            out.print(
                f"[bold red]invariant {b['invariant']} broken {b['count']}x[/]: row {rows[row['id']]}, seed {b['seed']}"
                + (f", trace {b['trace']}" if "trace" in b else ""),
            )
    for failure in sweep["failures"]:
        trace = f", trace {failure['trace']}" if "trace" in failure else ""
        out.print(
            f"[red]run failed[/]: row {rows[failure['setting']]}, seed {failure['seed']}{trace}: {failure['error']}"
        )
    if len(rows) > 1:
        out.print(_front_line(sweep, rows))
    for better in sweep["better_than_scenario_everywhere"]:
        out.print(
            f"[green]row {rows[better]} is no worse than row {rows[own]} (the scenario's own setting) on every "
            "metric, and better on some[/]",
        )
    out.print(f"wrote summary.csv, sweep.json, report.html and runs/ to {out_dir}/")


# sweep.json's pareto_front_metrics (sweep/front.py TRADE_OFFS) as a sentence says them
_FRONT_METRICS = {"cost": "cost", "pending_pod_seconds": "pending pod-seconds", "evictions": "evictions"}


def _listed(words: list[str]) -> str:
    return ", ".join(words[:-1]) + " and " + words[-1] if len(words) > 1 else "".join(words)


def _front_line(sweep: dict, rows: dict[str, int]) -> str:
    """The Pareto front over the metrics it is over (report.html's front, from sweep.json), by
    row number. When the settings tie on every trade-off, each is "on the front" and naming them
    all says nothing: the tie is said instead."""
    from kubetide.sweep.front import TRADE_OFFS

    metrics = sweep["pareto_front_metrics"]
    if not metrics:
        return "No Pareto front: every setting has the same " + _listed(
            [_FRONT_METRICS[key] for key in TRADE_OFFS]
        )
    front = sorted(rows[i] for i in sweep["pareto_front"])
    return (
        f"Pareto front ({_listed([_FRONT_METRICS[key] for key in metrics])}): "
        f"{'row' if len(front) == 1 else 'rows'} {_row_ranges(front)}"
    )


def _row_ranges(numbers: list[int]) -> str:
    """Sorted row numbers, three or more in a row as a range: 1-9, 12, 14."""
    runs: list[list[int]] = []
    for number in numbers:
        if runs and number == runs[-1][-1] + 1:
            runs[-1].append(number)
        else:
            runs.append([number])
    return ", ".join(f"{run[0]}-{run[-1]}" if len(run) >= 3 else ", ".join(map(str, run)) for run in runs)
