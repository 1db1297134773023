"""Entry point: `kubetide COMMAND ...`.

Each subcommand lives in its own module under kubetide.cli with two functions:
`add_parser(subparsers)` and `run(args) -> int`. User errors (UserError) become one line on
stderr and exit code 2; nothing has been executed by then.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from kubetide import __version__
from kubetide.errors import UserError

# Subcommands, in the order `kubetide --help` lists them.
COMMANDS = ("simulate", "sweep", "plan", "schedule", "qos", "qos_agent", "downscale", "run")


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line and exit code 2, like every other user error."""

    def error(self, message: str) -> None:  # type: ignore[override]
        sys.stderr.write(
            f"kubetide: error: {self.prog.removeprefix('kubetide').strip() or 'usage'}: {message}\n"
        )
        sys.stderr.write(f"  (see '{self.prog} --help')\n")
        raise SystemExit(2)


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The parser for `argv`: with just the named subcommand when `argv` names one, since
    importing every command's dependencies costs a whole process about a second; otherwise
    (help, version, a typo) with all of them."""
    parser = _Parser(prog="kubetide", description="Kubernetes cluster autoscaler and disruption manager.")
    parser.add_argument("--version", action="version", version=f"kubetide {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    first = next((a for a in argv or () if not a.startswith("-")), "").replace("-", "_")
    for name in (first,) if first in COMMANDS else COMMANDS:
        importlib.import_module(f"kubetide.cli.{name}").add_parser(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = build_parser(argv)
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
        return args.run(args) or 0
    except UserError as exc:
        sys.stderr.write(f"kubetide: error: {exc}\n")
        return exc.exit_code
    except KeyboardInterrupt:
        sys.stderr.write("kubetide: interrupted\n")
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    raise SystemExit(main())
