"""Shared output helpers for subcommands: JSON on stdout, warnings on stderr, rich tables."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from typing import Any

from rich.console import Console


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
