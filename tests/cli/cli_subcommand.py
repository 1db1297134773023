"""`kubetide NAME ARGS...` run in-process, the way the command tests call one subcommand."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from kubetide.cli import main as cli_main


def subcommand(
    name: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> Callable[..., tuple[int, str, str]]:
    """A runner of `kubetide NAME ARGS...` returning (exit code, stdout, stderr). Only NAME is
    registered: a test must not depend on the other subcommands' modules being importable."""
    monkeypatch.setattr(cli_main, "COMMANDS", (name,))

    def run(*argv: object) -> tuple[int, str, str]:
        code = cli_main.main([name, *map(str, argv)])
        out, err = capsys.readouterr()
        return code, out, err

    return run
