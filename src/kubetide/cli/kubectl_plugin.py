"""`kubectl kubetide ...`: kubetide as a kubectl plugin (the `kubectl-kubetide` console script).

kubectl runs `kubectl-kubetide` from PATH with the words after `kubectl kubetide`, and passes none
of its own flags: the plugin reads the kubeconfig kubectl would, the first file of $KUBECONFIG that
exists, else ~/.kube/config, at its current context (`--context NAME` picks another). The commands
that can read a live cluster (`plan`, `scenario from-cluster`, `run`) get that `--kubeconfig` when
they are given neither a dump nor one of their own, so `kubectl kubetide plan` is `kubetide plan
--kubeconfig <kubectl's kubeconfig>`: read-only, as plan always is. Every other command runs as
`kubetide` would.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from kubetide.cli import main as cli

# Commands that read a live cluster with --kubeconfig, and the argument naming a dump instead.
LIVE_COMMANDS = {"plan": "files", "scenario": "dump", "run": None}
IN_CLUSTER = "KUBERNETES_SERVICE_HOST"  # set in a pod: `run` there uses its service account


def kubectl_kubeconfig(environ: Mapping[str, str]) -> Path | None:
    """The kubeconfig kubectl would read: $KUBECONFIG's first existing file, else ~/.kube/config."""
    listed = environ.get("KUBECONFIG", "")
    for entry in listed.split(os.pathsep):
        if entry and Path(entry).expanduser().is_file():
            return Path(entry).expanduser()
    if listed:
        return None  # kubectl would not fall back to ~/.kube/config either
    home = Path(environ.get("HOME") or Path.home()) / ".kube" / "config"
    return home if home.is_file() else None


def needs_kubeconfig(argv: Sequence[str], environ: Mapping[str, str]) -> bool:
    """Whether `kubetide ARGV` would read a live cluster but was given no --kubeconfig nor dump."""
    command = cli.chosen_command(list(argv))
    if command not in LIVE_COMMANDS or any(
        a == "--kubeconfig" or a.startswith("--kubeconfig=") for a in argv
    ):
        return False
    args, _ = cli.build_parser(command).parse_known_args(list(argv))
    if command == "scenario" and getattr(args, "scenario_command", None) != "from-cluster":
        return False
    if command == "run" and environ.get(IN_CLUSTER):
        return False
    dump = LIVE_COMMANDS[command]
    return not (dump and getattr(args, dump, None))


def plugin_argv(argv: Sequence[str], environ: Mapping[str, str]) -> list[str]:
    """kubetide's arguments for `kubectl kubetide ARGV`; a UserError when kubectl's kubeconfig is
    needed and there is none."""
    from kubetide.errors import UserError

    if not needs_kubeconfig(argv, environ):
        return list(argv)
    path = kubectl_kubeconfig(environ)
    if path is None:
        where = f"KUBECONFIG={environ['KUBECONFIG']}" if environ.get("KUBECONFIG") else "~/.kube/config"
        raise UserError(f"kubectl kubetide: no kubeconfig to read ({where}: no such file)")
    return [*argv, "--kubeconfig", str(path)]


def main(argv: Sequence[str] | None = None) -> int:
    from kubetide.errors import UserError

    try:
        args = plugin_argv(sys.argv[1:] if argv is None else argv, os.environ)
    except UserError as exc:
        sys.stderr.write(f"kubetide: error: {exc}\n")
        return exc.exit_code
    return cli.main(args)


if __name__ == "__main__":
    raise SystemExit(main())
