"""Integer nanoseconds and the base-2 logarithmic age buckets of KEP-2185.

Kubernetes compares two pods' ready (or creation) times by the bucket floor(log2(age in ns)) of their
age at a common `now`; an age of zero or less is bucket -1. Go computes the bucket as
`int64(math.Log2(float64(d)))`. We compute it exactly with `int.bit_length`. The two differ only
for ages just below a power of two 2^k with k >= 49 (2^49 ns is about 6.5 days): Go's Log2 (and,
above 2^53, the float64 conversion) rounds such an age up into bucket k. The window is about
0.69 * 2^(k-48) ns: 1 ns at 6.5 days, 5 ns at one month, 22 ns at 104 days. Ready and creation
times are whole seconds in the API, so Go and kubetide put two real pods in different buckets only
when `now` falls inside that nanosecond window.

Model times are float Unix seconds. `to_ns` converts them without going through `t * 1e9` (which
would lose up to 128 ns at today's epoch values): whole seconds stay exact, and a fractional part is
rounded to the nearest nanosecond.
"""

from __future__ import annotations

NS_PER_SECOND = 1_000_000_000


def to_ns(seconds: float) -> int:
    """Unix seconds (float) as integer nanoseconds; exact for whole seconds."""
    whole = int(seconds)
    if whole == seconds:
        return whole * NS_PER_SECOND
    return whole * NS_PER_SECOND + round((seconds - whole) * 1e9)


def age_bucket(age_ns: int) -> int:
    """floor(log2(age_ns)) for a positive age, -1 for an age of zero or less."""
    return age_ns.bit_length() - 1 if age_ns > 0 else -1


def bucket_of(moment: float, now_ns: int) -> int:
    """The age bucket of a Unix time, seen from `now_ns`."""
    return age_bucket(now_ns - to_ns(moment))


def format_age(age_ns: int) -> str:
    """A short human age: `45s`, `3m20s`, `2h`, `5d3h`, `0s`; negative ages read `in 2h`."""
    if age_ns < 0:
        return "in " + format_age(-age_ns)
    seconds = age_ns // NS_PER_SECOND
    if seconds == 0:
        return f"{age_ns // 1_000_000}ms" if age_ns >= 1_000_000 else "0s"
    parts: list[tuple[int, str]] = []
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        amount, seconds = divmod(seconds, size)
        if amount or parts:
            parts.append((amount, unit))
    shown = [f"{amount}{unit}" for amount, unit in parts[:2] if amount]
    return "".join(shown) or "0s"
