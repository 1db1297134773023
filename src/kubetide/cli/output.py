"""Shared output helpers for subcommands: JSON on stdout, warnings on stderr, rich tables."""

from __future__ import annotations

import os
import sys
import tempfile
import textwrap
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kubetide.cli import json_output
from kubetide.cli.json_output import AUTO
from kubetide.errors import UserError

if TYPE_CHECKING:
    from rich.console import Console


def print_json(data: Any, style: str | None = AUTO) -> None:
    """The document on stdout, as `--json` chose (cli/json_output.py)."""
    json_output.print_json(data, style)


def warn(messages: Iterable[str]) -> None:
    for message in messages:
        sys.stderr.write(f"kubetide: warning: {message}\n")


def console() -> Console:
    """A console for human output; plain text when stdout is not a terminal.

    Laid out for COLUMNS when it is set (also in a pipe: asked for), else for the terminal:
    sentences wrap between words, tables shrink to fit. Piped without COLUMNS, sentences are never
    wrapped (soft wrap) and the console is wide enough for our tables, so `kubetide ... | less`
    reads like the terminal does.
    """
    from rich.console import Console  # here: `--json` and `--help` never draw with rich

    probe = Console()
    columns = _columns()
    if columns is not None:
        return Console(highlight=False, width=columns)
    if probe.is_terminal:
        return Console(highlight=False)
    return Console(highlight=False, soft_wrap=True, width=160)


def _columns() -> int | None:
    columns = os.environ.get("COLUMNS", "")
    return int(columns) if columns.isdigit() and int(columns) > 0 else None


PIPED_WIDTH = 1000  # piped output: one line per row for tools and wide editors, as kubectl prints


def line_width(out: Console) -> int:
    """The width human output is laid out for: COLUMNS when set (also in a pipe: asked for),
    else the terminal's, else PIPED_WIDTH."""
    columns = _columns()
    if columns is not None:
        return columns
    return out.width if out.is_terminal else PIPED_WIDTH


def wrap(text: str, width: int, indent: str = "", more: str | None = None) -> list[str]:
    """`text` in lines of at most `width` columns, broken between words; a word longer than a
    whole line is the only thing ever cut. `indent` starts the first line, `more` the others."""
    more = indent if more is None else more
    return textwrap.wrap(
        text,
        max(width, len(more) + 1, len(indent) + 1),
        initial_indent=indent,
        subsequent_indent=more,
        break_on_hyphens=False,
    ) or [indent.rstrip()]


def text_table(
    header: Sequence[str], rows: Sequence[Sequence[str]], width: int, *, min_last: int = 40
) -> list[str]:
    """Rows as aligned columns in at most `width` columns, the first line the header.

    The last column (free text) wraps between words into the columns left of `width`; when fewer
    than `min_last` are left (or too few for its longest word), it goes under its row instead,
    indented, across the whole width.
    Nothing is cut short: every word of every cell is printed.
    """
    fixed = len(header) - 1
    widths = [max(len(row[c]) for row in (header, *rows)) for c in range(fixed)]
    left = sum(widths) + 2 * fixed

    def cells(row: Sequence[str]) -> str:
        return "  ".join(row[c].ljust(widths[c]) for c in range(fixed))

    longest_word = max((len(word) for row in rows for word in row[-1].split()), default=0)
    lines: list[str] = []
    if width - left >= max(min_last, longest_word):
        for row in (header, *rows):
            first, *rest = wrap(row[-1], width - left)
            lines.append((cells(row) + "  " + first).rstrip())
            lines += [" " * left + line for line in rest]
        return lines
    lines += wrap(cells(header).rstrip(), width, more="    ")
    for row in rows:
        lines += wrap(cells(row).rstrip(), width, more="    ")
        if row[-1]:
            lines += wrap(row[-1], width, indent="    ")
    return lines


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
