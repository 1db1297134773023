"""`kubetide simulate [SCENARIO] [--seed N] [--out DIR] [--json]`: run a scenario on the simulator.

Without SCENARIO it runs the bundled demo. Writes summary.json, timeline.csv, events.jsonl and
report.html to DIR (default ./kubetide-out/<scenario name>/) and ends with a summary table, or
prints summary.json with --json.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from kubetide.cli.inputs import read_scenario
from kubetide.cli.output import ensure_output_dir, warn, writing_into
from kubetide.cli.simulate_summary import print_summary
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
    parser.add_argument(
        "--json", action="store_true", help="print summary.json (a SimulationSummary) instead of a table"
    )
    parser.add_argument(
        "--duration", metavar="DURATION", help="simulate only this long (e.g. 30m); later events are dropped"
    )
    parser.add_argument("--no-report", action="store_true", help="skip report.html")
    parser.add_argument(
        "--no-autoscaler", action="store_true", help="run the cluster without an autoscaler (a baseline)"
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from kubetide.sim.output import default_out_dir, summary_json, write_outputs
    from kubetide.sim.simulation import NoAutoscaler, Simulation

    scenario, _ = read_scenario(args.scenario, DEMO)
    if not args.scenario:
        scenario.source = "demo.yaml (bundled)"
    if args.duration is not None:
        scenario = scenario.with_duration(_duration(args.duration))
    out_dir = Path(args.out) if args.out is not None else default_out_dir(scenario.name)
    ensure_output_dir(out_dir, "--out")
    warn(scenario.warnings)

    if args.no_autoscaler:
        simulation = Simulation(
            scenario, seed=args.seed, autoscaler_factory=NoAutoscaler, autoscaler_name="none"
        )
    else:
        simulation = Simulation(scenario, seed=args.seed)
    show_progress = not args.json and sys.stderr.isatty()
    if show_progress:
        result = _run_with_progress(simulation, scenario)
    else:
        result = simulation.run()
    with writing_into(out_dir, "--out"):
        paths = write_outputs(result, out_dir, report=not args.no_report)
    warn(w for w in result.warnings if w not in scenario.warnings)
    if args.json:
        sys.stdout.write(summary_json(result.summary))  # summary.json, byte for byte
    else:
        print_summary(result.summary, paths)
    return 0


def _duration(text: str) -> float:
    from kubetide.sim.scenario import check_duration

    try:
        seconds = parse_duration(text)
        if seconds <= 0:
            raise ValueError("must be positive")
        check_duration(seconds)
    except ValueError as exc:
        raise UserError(f"--duration: {exc}") from None
    return seconds


def _run_with_progress(simulation, scenario):
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        TextColumn("{task.fields[simulated]} / " + format_duration(scenario.duration)),
        TimeElapsedColumn(),
        transient=True,
        console=console_stderr(),
    ) as progress:
        task = progress.add_task(f"simulating {scenario.name}", total=scenario.duration, simulated="0s")

        def update(elapsed: float) -> None:
            progress.update(task, completed=elapsed, simulated=format_duration(round(elapsed)))

        return simulation.run(progress=update)


def console_stderr():
    from rich.console import Console

    return Console(stderr=True)
