"""One notion of "now" for every offline command (plan, schedule, downscale, qos).

A dump was taken no earlier than the newest timestamp its objects record (creation, start,
condition and taint times, metrics samples), so that is "now" by default: the same file always gives the same
answer, and ages read as lower bounds. `--now RFC3339` sets another moment; `--now now` asks for
the wall clock. Only when the input records no time at all does the wall clock stand in, and the
commands say so. The decision code itself is handed `now` and never reads a clock.
"""

from __future__ import annotations

import argparse
import time
from typing import TYPE_CHECKING

from kubetide.errors import UserError

if TYPE_CHECKING:
    from kubetide.model import Manifests

NEWEST = "newest timestamp in the input"
FLAG = "--now"
WALL_CLOCK_NO_TIMESTAMPS = "wall clock: the input carries no timestamps"


def add_now_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        FLAG,
        metavar="RFC3339",
        help='the moment of the decision (default: the newest timestamp in the input; "now": the wall clock)',
    )


def parse_now(text: str | None) -> float | None:
    """`--now`'s value as Unix seconds, None when not given; a bad value is a one-line UserError."""
    if text is None:
        return None
    if text == "now":
        return time.time()  # asked for: the CLI may read the wall clock, decision code never does
    from kubetide.model.reader import parse_time  # here: `--help` loads no model

    try:
        return parse_time(text)
    except ValueError:
        raise UserError(
            f'--now: expected an RFC 3339 time (e.g. 2026-05-01T10:00:00Z) or "now", got {text!r}'
        ) from None


def resolve_now(text: str | None, manifests: Manifests) -> tuple[float, str]:
    """(now, how it was chosen) for an offline command reading `manifests`."""
    given = parse_now(text)
    if given is not None:
        return given, FLAG
    from kubetide.model.timestamps import newest_timestamp

    newest = newest_timestamp(manifests)
    if newest is not None:
        return newest, NEWEST
    return time.time(), WALL_CLOCK_NO_TIMESTAMPS
