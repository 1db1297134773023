"""Entry point: `kubetide COMMAND ...`.

Each subcommand lives in its own module under kubetide.cli with two functions:
`add_parser(subparsers)` and `run(args) -> int`. User errors (UserError) become one line on
stderr and exit code 2; nothing has been executed by then.

Only the module of the command being run is imported: the others pull in numpy, pydantic, plotly
or the Kubernetes client, which `kubetide --version` and `kubetide --help` must not wait for.
"""

from __future__ import annotations

import argparse
import difflib
import importlib
import sys

from kubetide import __version__
from kubetide.errors import UserError

# Subcommands, in the order `kubetide --help` lists them.
COMMANDS = (
    "simulate",
    "scenario",
    "sweep",
    "plan",
    "schedule",
    "qos",
    "qos_agent",
    "downscale",
    "run",
    "record",
)
# What `kubetide --help` says of each without importing it; tests/cli/test_inputs.py checks these
# against the help the modules themselves give.
SUMMARIES = {
    "simulate": "run a scenario on the embedded cluster simulator",
    "scenario": "write a scenario: from-cluster turns a cluster dump into one that starts from it",
    "sweep": "simulate a scenario over a grid of autoscaler settings and many seeds",
    "plan": "one offline autoscaler loop on a cluster dump: what would scale up or down, and why",
    "schedule": "place pending pods on the existing nodes as kube-scheduler would",
    "qos": "show what the node QoS agent would throttle or evict on a node now",
    "qos_agent": "run the node QoS agent on this node (throttle, evict, disable scheduling)",
    "downscale": "show which pods a ReplicaSet would delete to reach N replicas, and why",
    "run": "run the autoscaler against a live cluster",
    "record": "watch a live cluster (read-only) and record its load, to replay in the simulator",
}


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line and exit code 2, like every other user error."""

    def error(self, message: str) -> None:  # type: ignore[override]
        sys.stderr.write(
            f"kubetide: error: {self.prog.removeprefix('kubetide').strip() or 'usage'}: {message}\n"
        )
        sys.stderr.write(f"  (see '{self.prog} --help')\n")
        raise SystemExit(2)


def build_parser(chosen: str | None = None) -> argparse.ArgumentParser:
    """The parser with every command listed, and the arguments of `chosen` (all when None)."""
    parser = _Parser(prog="kubetide", description="Kubernetes cluster autoscaler and disruption manager.")
    parser.add_argument("--version", action="version", version=f"kubetide {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name in COMMANDS:
        if chosen is None or name == _module(chosen):
            importlib.import_module(f"kubetide.cli.{_module(name)}").add_parser(subparsers)
        else:
            subparsers.add_parser(name.replace("_", "-"), help=SUMMARIES.get(name))
    return parser


def _module(command: str) -> str:
    return command.replace("-", "_")


def chosen_command(argv: list[str]) -> str:
    """The command `argv` names: its first argument that is not an option (the top-level parser
    has no options taking a value), or "" when there is none, e.g. for --version."""
    for arg in argv:
        if not arg.startswith("-"):
            return arg
        if arg == "--":
            break
    return ""


def main(argv: list[str] | None = None) -> int:
    argv = _join_flag_values(sys.argv[1:] if argv is None else argv)
    command = chosen_command(argv)
    commands = [name.replace("_", "-") for name in COMMANDS]
    if command and command not in commands:
        # argparse's "invalid choice" lists every command; a typo deserves the one it meant.
        close = difflib.get_close_matches(command, commands, n=1, cutoff=0.6)
        hint = f"; did you mean '{close[0]}'?" if close else f" (commands: {', '.join(commands)})"
        sys.stderr.write(f"kubetide: error: unknown command '{command}'{hint}\n")
        return 2
    parser = build_parser(command)
    args, extra = parser.parse_known_args(argv)
    if extra:
        # Only `run` takes flags it does not declare (the autoscaler's, CA-spelled); it
        # validates them itself, with a did-you-mean for typos.
        if not getattr(args, "accepts_extra_flags", False):
            where = args.command or "usage"
            help_of = f"kubetide {args.command}" if args.command else "kubetide"
            sys.stderr.write(f"kubetide: error: {where}: unrecognized arguments: {' '.join(extra)}\n")
            sys.stderr.write(f"  (see '{help_of} --help')\n")
            return 2
        args.extra_flags = extra
    if args.command is None:
        parser.print_help()
        return 2
    try:
        from kubetide.cli.inputs import check_single_stdin  # here: it loads the manifest model

        check_single_stdin(vars(args).values())
        return args.run(args) or 0
    except UserError as exc:
        sys.stderr.write(f"kubetide: error: {exc}\n")
        return exc.exit_code
    except KeyboardInterrupt:
        sys.stderr.write("kubetide: interrupted\n")
        return 130
    except BrokenPipeError:
        return 0


# Options whose value is itself an autoscaler flag, which may start with "--".
FLAG_VALUED_OPTIONS = ("--set",)


def _join_flag_values(argv: list[str]) -> list[str]:
    """`--set --scan-interval=10s` as `--set=--scan-interval=10s`: argparse would otherwise take
    the value for an option of its own and fail. (Kept here, not in cli/simulate.py, so that
    parsing the command line imports no command's module.)"""
    joined: list[str] = []
    for arg in argv:
        if joined and joined[-1] in FLAG_VALUED_OPTIONS and arg.startswith("--"):
            joined[-1] = f"{joined[-1]}={arg}"
        else:
            joined.append(arg)
    return joined


if __name__ == "__main__":
    raise SystemExit(main())
