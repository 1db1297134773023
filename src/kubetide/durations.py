"""Go-style durations ("90s", "10m", "1h30m", "1.5h", "250ms"), as Kubernetes flags write them,
and RFC 3339 times, as Kubernetes objects write them."""

from __future__ import annotations

import math
import re
from datetime import UTC, datetime

_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
# One number per unit, written so that a long run of digits cannot make the regex backtrack.
_PART = re.compile(r"([0-9]+(?:\.[0-9]+)?|\.[0-9]+)(ns|us|µs|ms|s|m|h)")
_MAX_TEXT = 64  # "1h2m3.456789s" is 13 characters; nobody writes a duration longer than this


def parse_duration(value: object) -> float:
    """Seconds in a Go duration string. A bare 0 is allowed, as in Go. Raises ValueError."""
    if isinstance(value, bool):
        raise ValueError(f"invalid duration {value!r}")
    if isinstance(value, int | float) and value == 0:
        return 0.0
    if not isinstance(value, str):
        raise ValueError(f'invalid duration {value!r} (write it like "90s", "10m" or "1h30m")')
    text = value.strip()
    if len(text) > _MAX_TEXT:
        raise ValueError(f"invalid duration: longer than {_MAX_TEXT} characters")
    sign = 1.0
    if text[:1] in "+-" and text:
        sign = -1.0 if text[0] == "-" else 1.0
        text = text[1:]
    if text == "0":
        return 0.0
    position, total = 0, 0.0
    for match in _PART.finditer(text):
        if match.start() != position:
            break
        total += float(match[1]) * _UNITS[match[2]]
        position = match.end()
    if not text or position != len(text):
        raise ValueError(f'invalid duration "{value}" (write it like "90s", "10m" or "1h30m")')
    if not math.isfinite(total):  # "1e400h" is a float overflow, not a duration
        raise ValueError(f'invalid duration "{value}": too long')
    return sign * total


def format_duration(seconds: float) -> str:
    """The shortest Go-style text for a number of seconds (for messages and reports)."""
    if seconds == 0:
        return "0s"
    sign = "-" if seconds < 0 else ""
    seconds = abs(seconds)
    if seconds < 1:
        return f"{sign}{seconds * 1000:g}ms"
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    parts = []
    if hours:
        parts.append(f"{int(hours)}h")
    if minutes:
        parts.append(f"{int(minutes)}m")
    if secs:
        parts.append(f"{secs:g}s")
    return sign + "".join(parts)


def rfc3339(moment: float, *, keep_fraction: bool = False) -> str:
    """Unix seconds as RFC 3339 in UTC: at whole seconds (how metav1.Time is written), or with
    keep_fraction, with the microseconds when there are any (as metav1.MicroTime is)."""
    # isoformat, not strftime: glibc's %Y writes year 1 as "1", which no RFC 3339 reader takes.
    if not keep_fraction:
        return datetime.fromtimestamp(math.floor(moment), UTC).replace(tzinfo=None).isoformat() + "Z"
    exact = datetime.fromtimestamp(moment, UTC).replace(tzinfo=None)
    return exact.isoformat(timespec="microseconds" if exact.microsecond else "seconds") + "Z"
