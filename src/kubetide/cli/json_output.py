"""What every `--json` output shares (docs/json-output.md): `apiVersion` and `kind` saying what the
document is, times in RFC 3339, and resource amounts as Kubernetes quantity strings; and how the
document is written: encoded by msgspec (in C), indented where a person reads it (a terminal, or
`--json=pretty`), compact where a program does (a pipe or a file, or `--json=compact`)."""

from __future__ import annotations

import argparse
import functools
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from kubetide import API_VERSION, durations

if TYPE_CHECKING:
    import msgspec

# `--json` alone: pretty on a terminal, compact otherwise.
AUTO, PRETTY, COMPACT = "auto", "pretty", "compact"
INDENT = 2


@functools.cache
def _encoder() -> msgspec.json.Encoder:
    import msgspec  # here: `--help` and the human output encode nothing

    return msgspec.json.Encoder()


def document(kind: str, body: dict[str, Any]) -> dict[str, Any]:
    """`body` as a kubetide document of `kind` (apiVersion and kind first, as in a manifest)."""
    return {"apiVersion": API_VERSION, "kind": kind, **body}


def rfc3339(seconds: float | None) -> str | None:
    """A Unix time (or None) as RFC 3339 in UTC, with a fraction only when there is one."""
    return None if seconds is None else durations.rfc3339(seconds, keep_fraction=True)


# Whole seconds within this many of the epoch (years 1843-2096) are written by NumPy, all at once.
_VECTOR_LIMIT = 4.0e9


def rfc3339_all(moments: Sequence[float | None]) -> list[str | None]:
    """`rfc3339` of each moment, the same text: whole seconds (Kubernetes' timestamps are) are
    picked out and formatted by NumPy in C, ~10x faster than datetime per item; any other moment
    goes one by one."""
    import numpy as np  # here: a command whose output has no timestamp list never needs NumPy

    values = np.array(moments, dtype=np.float64)  # None is NaN
    with np.errstate(invalid="ignore"):
        whole = np.isfinite(values) & (values == np.floor(values)) & (np.abs(values) < _VECTOR_LIMIT)
    written = np.full(len(values), None, dtype=object)
    seconds = values[whole].astype(np.int64).astype("datetime64[s]")
    written[whole] = np.char.add(np.datetime_as_string(seconds), "Z")
    texts: list[str | None] = written.tolist()
    if not whole.all():
        for i in np.flatnonzero(~whole).tolist():
            moment = moments[i]
            if moment is not None:
                texts[i] = rfc3339(moment)
    return texts


def add_json_argument(parser: argparse.ArgumentParser, what: str) -> None:
    """`--json`, `--json=pretty` and `--json=compact`, all into `args.json` (None without them).
    The two spelled with `=` are option strings of their own, so `--json` never takes the next
    word as its value: `kubetide plan --json dump.yaml` reads dump.yaml as before."""
    parser.add_argument(
        "--json",
        action="store_const",
        const=AUTO,
        help=f"print {what} (docs/json-output.md): indented on a terminal, one line otherwise; "
        "--json=pretty or --json=compact to choose",
    )
    for style in (PRETTY, COMPACT):
        parser.add_argument(
            f"--json={style}", dest="json", action="store_const", const=style, help=argparse.SUPPRESS
        )


def encode(data: Any, style: str = AUTO, terminal: bool = False) -> bytes | bytearray:
    """The document as UTF-8 JSON text ending in a newline; `terminal` says where AUTO goes.
    Compact text is written into one buffer and the newline added in place: a copy to append it
    would touch as much memory again (42 MB more at the peak of `downscale --json` on 100,000
    pods)."""
    encoder = _encoder()
    if style == PRETTY or (style == AUTO and terminal):
        import msgspec

        return msgspec.json.format(encoder.encode(data), indent=INDENT) + b"\n"
    buffer = bytearray()
    encoder.encode_into(data, buffer)
    buffer += b"\n"
    return buffer


def print_json(data: Any, style: str | None = AUTO) -> None:
    """Write the document on stdout, as bytes where stdout has a buffer (no text-layer copy)."""
    stdout = sys.stdout
    terminal = bool(getattr(stdout, "isatty", lambda: False)())
    text = encode(data, style or AUTO, terminal)
    buffer = getattr(stdout, "buffer", None)
    if buffer is None:
        stdout.write(text.decode("utf-8"))
        return
    stdout.flush()  # whatever was printed as text before goes first
    buffer.write(text)
    buffer.flush()
