"""Shared output helpers for subcommands: JSON on stdout, warnings on stderr, rich tables."""

from __future__ import annotations

import json
import sys
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from rich.console import Console

from kubetide.errors import UserError


def print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, sort_keys=False) + "\n")


def warn(messages: Iterable[str]) -> None:
    for message in messages:
        sys.stderr.write(f"kubetide: warning: {message}\n")


def console() -> Console:
    """A console for human output; plain text when stdout is not a terminal.

    Sentences are never wrapped mid-line (soft wrap), and when piped the console is wide
    enough for our tables, so `kubetide ... | less` reads like the terminal does.
    """
    probe = Console()
    width = None if probe.is_terminal else 160
    return Console(highlight=False, soft_wrap=True, width=width)


def ensure_output_dir(path: Path, flag: str) -> None:
    """Create the output directory and prove a file can be written in it, before any work: a
    bad --out (a file, /dev/null/x, /proc/...) is a user error, not a crash after an hour's run."""
    try:
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=path):
            pass
    except OSError as exc:
        reason = "exists and is not a directory" if isinstance(exc, FileExistsError) else exc.strerror or exc
        raise UserError(f"{flag} {path}: cannot write there: {reason}") from None


@contextmanager
def writing_into(path: Path, flag: str) -> Iterator[None]:
    """Failures to write a file under the output directory (a directory or a file in the way of
    one of ours, a full disk) become a user error naming the file; other errors pass through."""
    try:
        yield
    except OSError as exc:
        target = Path(exc.filename) if isinstance(exc.filename, str) else None
        if target is None or not target.is_relative_to(path):
            raise
        blocker = next((p for p in target.parents if p.is_relative_to(path) and p.is_file()), None)
        if blocker is not None:
            reason = f"{blocker} exists and is not a directory"
        elif target.is_dir():
            reason = f"{target} is a directory"
        else:
            reason = f"{target}: {exc.strerror or exc}"
        raise UserError(f"{flag} {path}: cannot write there: {reason}") from None
