"""The fast way through a YAML List dump: its items parsed by yaml-rs, a few megabytes at a time.

PyYAML, even on libyaml, makes a Python object for every parse event before the loader sees the
value, and read kubectl's 749 MB YAML dump of a 5,000-node cluster in about two minutes; with
yaml-rs, which parses in Rust and builds only the final objects, the whole `kubetide plan` on it
is 2.5x faster. yaml-rs reads YAML 1.2, though, and the loader's reference is PyYAML's YAML 1.1:
`yes`, `on`, `0755`, `1:20`, `1e3`, `097370e3` and `2026-11-01` mean different things to the two.
Streaming must stay a faster way to the same result (model/stream.py), so every chunk is screened
on its distinct lines before yaml-rs sees it, and an item holding a suspect line is built from
PyYAML's events instead. Suspect are:

- a plain scalar that either parser could read as other than a string, unless it is one of the
  forms both read alike (`true`, `null`, `42`, `-1.5`): the screen looks at every place a plain
  scalar can start (line starts, after `: `, `- `, `? `, and flow indicators). It cannot tell a
  block scalar's lines from YAML, and a false alarm only costs speed. kubectl quotes every string
  a reader could take for another type, so its dumps raise almost none;
- tags, anchors, explicit, empty and over-long keys, a block scalar that may be empty (yaml-rs
  reads it as "\n"), and characters the two may treat differently (tabs, carriage returns,
  Unicode line breaks, the byte-order mark, anything outside YAML's printable set);
- anything yaml-rs refuses (a duplicate key, which PyYAML resolves by keeping the last value).

The dump must have kubectl's shape: a root mapping whose `items:` is a block sequence (`- ` at one
column, indented or not) and whose other lines are plain keys at column 0. Items are cut at their
`- ` lines. An alias, nesting the bounds screen cannot rule out (yaml-rs recurses on the machine
stack, and some thousands of levels kill the process), and any other shape raise Declined: the
loader then reads the file through PyYAML's event stream, whose checks and messages are the
reference. tests/model/test_yaml_chunks.py holds this module, over random text too, to "PyYAML's
result or Declined".
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Generator, Iterator
from typing import IO, Any

import yaml

from kubetide.model.bounds import MAX_NESTING, flow_depth_bound, surely_within_bounds
from kubetide.model.stream import FIELD, ITEM, ITEMS, NotStreamable, yaml_sequence

try:
    import yaml_rs
except ImportError:  # pragma: no cover - a declared dependency; the event stream still works
    yaml_rs = None  # type: ignore[assignment]

# Several hundred items a call: large enough that yaml-rs's per-call cost vanishes, small enough
# that one chunk's text and objects are a few tens of megabytes.
CHUNK_CHARS = 1 << 22
# The root mapping's fields before `items:` (kubectl prints apiVersion only) and after it.
MAX_OUTSIDE_CHARS = 1 << 20
# An item's collections sit inside the root mapping and the items sequence, and the bounds screen
# is looser than exact: leave room for both.
ITEM_NESTING = MAX_NESTING - 3


class Declined(NotStreamable):
    """The fast path cannot vouch for this file; the event stream may still read it."""


def available() -> bool:
    return yaml_rs is not None


# -- the screen --------------------------------------------------------------------------------

# Where the scalar would end if it were only the token: the line's end, a comment, a flow
# indicator, or a `: ` making it a key.
_END = r"(?=[ ]*(?:$|#|[,\]}]|:(?:[ ]|$)))"
# YAML 1.1's booleans that YAML 1.2 reads as strings, merge and value keys.
_WORDS = r"(?:[yY]es|YES|[nN]o|NO|[oO]n|ON|[oO]ff|OFF|<<|=)"
# Anything number-like to either parser: digits with `_`, `.`, an exponent, a base prefix, or
# sexagesimal colons; `.inf` and `.nan`.
_NUMBER = (
    r"[-+]?(?:[0-9_]*\.?[0-9_]*[0-9_](?:[eE][-+]?[0-9_]+)?|[0-9_]+\.(?:[eE][-+]?[0-9_]+)?"
    r"|0[xXoObB][0-9a-fA-F_]+|[0-9_]+(?::[0-9_]+)+(?:\.[0-9_]*)?|\.(?:inf|Inf|INF|nan|NaN|NAN))"
)
# The number forms both read as the same int or float (ints short enough that neither errs).
_AGREED = r"[-+]?(?:0|[1-9][0-9]{0,17})(?:\.[0-9]{1,17})?"
# A date starts a YAML 1.1 timestamp, which may go on after a `T` or a space.
_DATE = r"[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}(?=[Tt \t]|$|#|[,\]}]|:(?:[ ]|$))"
# A suspect plain scalar; the lookahead first rejects, cheaply, the tokens starting with a letter.
_SUSPECT = rf"(?=[-+.0-9_<=yYnNoO])(?:{_DATE}|(?!{_AGREED}{_END})(?:{_WORDS}|{_NUMBER}){_END})"
# One pattern per place a plain scalar may start (after a line's indentation, a block indicator
# and its space, a flow indicator), each led by a literal that the regex engine finds fast.
# Over-matching (a `- ` inside a longer scalar) only costs a false alarm.
_SCALAR_SCREENS = tuple(
    re.compile(start + _SUSPECT, re.MULTILINE) for start in (r": +", r"- +", r"\? +", r"\n *", r"[\[{,] *")
)
# Tags and anchors, explicit keys, and characters the two parsers may not treat alike.
_TAG_OR_ANCHOR = re.compile(r"(?:^|[ \[{,])[!&]", re.MULTILINE)
_EXPLICIT_KEY = re.compile(r"(?:^|[ ])\?(?:[ ]|$)", re.MULTILINE)
_ASCII_UNLIKE = re.compile(r"[\x00-\x09\x0b-\x1f\x7f]")
_UNLIKE = re.compile("[^\n\x20-\x7e\xa0-\u2027\u202a-\ud7ff\ue000-\ufefe\uff00-\ufffd\U00010000-\U0010ffff]")
# PyYAML refuses an implicit key longer than 1024 characters, and an empty one; yaml-rs takes both.
_LONG_KEY = re.compile(r"^[^:\n]{1000,}:", re.MULTILINE)
# An empty key: a `:` where a key starts (a line's indentation, after `- ` or `? `, after a flow
# indicator). One class for all of them, a third of the time of a pattern each; it also flags `-:`
# and `?:`, which only costs a false alarm.
_EMPTY_KEY = re.compile(r"[\n?\[{,-][ ]*:(?=[ \n])")
# A block scalar's header (`|`, `>-`, `|+2`...). yaml-rs reads one with no content as "\n".
_BLOCK_HEADER = re.compile(r"[|>][-+0-9]*[ ]*(?:#[^\n]*)?$", re.MULTILINE)
_LEADING_INDICATORS = re.compile(r"[ ]*(?:-[ ]+)*")
_BLANK_LINES = re.compile(r"(?:[ ]*\n)*")
_SPACES = re.compile(r"[ ]*")


def distinct_lines(text: str) -> str:
    """The text's distinct lines, each between newlines. A dump repeats its lines (the same keys,
    the same values across replicas), so a screen that looks at one line at a time is several
    times faster on them than on the text."""
    return "\n" + "\n".join(set(text.split("\n"))) + "\n"


def suspect_lines(distinct: str) -> set[str]:
    """The lines (of distinct_lines' text) that yaml-rs might read otherwise than PyYAML's
    SafeLoader."""
    screens = [*_SCALAR_SCREENS, _EMPTY_KEY]
    if max(map(len, distinct.split("\n"))) >= 1000:
        screens.append(_LONG_KEY)
    if not distinct.isascii():
        screens.append(_UNLIKE)
    elif not distinct.replace("\n", "").isprintable():  # ASCII's printable set is YAML's
        screens.append(_ASCII_UNLIKE)
    if "!" in distinct or "&" in distinct:
        screens.append(_TAG_OR_ANCHOR)
    if "?" in distinct:
        screens.append(_EXPLICIT_KEY)
    found: set[str] = set()
    for screen in screens:
        for match in screen.finditer(distinct):
            last = max(match.end() - 1, match.start())  # a character of the suspect line
            begin = distinct.rfind("\n", 0, last + (distinct[last] != "\n")) + 1
            found.add(distinct[begin : distinct.find("\n", begin)])
    return found


# -- chunks ------------------------------------------------------------------------------------


def _parse_items(body: str, item_start: str, loader: type) -> list[Any]:
    """The items of one chunk of the sequence (`item_start` begins each but the first), by yaml-rs
    where the screen clears them, by PyYAML where it does not."""
    starts = _item_starts(body, item_start)
    distinct = distinct_lines(body)
    ends = [*starts[1:], len(body)]
    # The alias and block-depth screens look at one line at a time: the distinct lines will do.
    if not surely_within_bounds(distinct, ITEM_NESTING, flow_depth=_flow_depth(body, starts, ends)):
        raise Declined  # an alias, or deep nesting: the event stream checks it exactly
    suspects = suspect_lines(distinct)
    flagged = _items_holding(body, starts, suspects)
    if ("|" in distinct or ">" in distinct) and _BLOCK_HEADER.search(distinct):
        flagged |= _empty_block_scalars(body, starts)
    cleared = [index for index in range(len(starts)) if index not in flagged]
    if not flagged:
        fast = _by_yaml_rs(body)
    else:
        fast = _by_yaml_rs("".join(body[starts[i] : ends[i]] for i in cleared)) if cleared else []
    if fast is None:  # a duplicate key somewhere: PyYAML decides for the whole chunk
        return _by_pyyaml(body, loader)
    if not flagged:
        return fast
    suspect = sorted(flagged)
    slow = _by_pyyaml("".join(body[starts[i] : ends[i]] for i in suspect), loader)
    if len(fast) != len(cleared) or len(slow) != len(suspect):
        raise Declined  # an item that is not one sequence entry: something the cut missed
    by_index = dict(zip(cleared, fast, strict=True))
    by_index.update(zip(suspect, slow, strict=True))
    return [by_index[index] for index in range(len(starts))]


# Items whose flow collections are bounded together; small enough that their `{}`s rarely matter.
_BOUND_GROUP = 8


def _flow_depth(body: str, starts: list[int], ends: list[int]) -> int:
    """A bound on the chunk's flow depth, taken item by item (no flow collection crosses an item's
    `- `), a few items at a time while their bound is low."""
    limit = ITEM_NESTING - 2
    depth = 1
    for first in range(0, len(starts), _BOUND_GROUP):
        last = min(first + _BOUND_GROUP, len(starts)) - 1
        group = flow_depth_bound(body, ITEM_NESTING, starts[first], ends[last])
        if group > limit:
            group = max(
                flow_depth_bound(body, ITEM_NESTING, starts[i], ends[i]) for i in range(first, last + 1)
            )
        depth = max(depth, group)
    return depth


def _by_yaml_rs(text: str) -> list[Any] | None:
    try:
        items = yaml_rs.loads(text, parse_datetime=False)
    except Exception:  # a duplicate key, or text it refuses: PyYAML decides
        return None
    return items if isinstance(items, list) else None


def _by_pyyaml(text: str, loader: type) -> list[Any]:
    try:
        return yaml_sequence(text, loader)
    except NotStreamable as exc:
        raise Declined from exc


def _item_starts(body: str, item_start: str) -> list[int]:
    # The regex engine finds the literal in half the time of a str.find per item (4 KB items).
    return [0, *(found.start() + 1 for found in re.finditer(re.escape(item_start), body))]


def _items_holding(body: str, starts: list[int], lines: set[str]) -> set[int]:
    """The indexes of the items (beginning at `starts`) that hold any of `lines`."""
    flagged: set[int] = set()
    for line in filter(None, lines):
        at = body.find(line)
        while at >= 0:
            after = at + len(line)
            if (at == 0 or body[at - 1] == "\n") and (after == len(body) or body[after] == "\n"):
                flagged.add(bisect.bisect_right(starts, at) - 1)
            at = body.find(line, at + 1)
    return flagged


def _empty_block_scalars(body: str, starts: list[int]) -> set[int]:
    """The indexes of the items holding a block scalar header whose next line with text is not
    indented past the line's keys and `- ` entries (so the scalar may be empty), or that ends the
    chunk. Only the header line is needed to find them, but not to clear them: the next line is."""
    flagged: set[int] = set()
    for header in _BLOCK_HEADER.finditer(body):
        line = body.rfind("\n", 0, header.start()) + 1
        inside = _run_end(_LEADING_INDICATORS, body, line) - line
        following = _run_end(_BLANK_LINES, body, header.end() + 1)
        if following >= len(body) or _run_end(_SPACES, body, following) - following <= inside:
            flagged.add(bisect.bisect_right(starts, header.start()) - 1)
    return flagged


def _run_end(run: re.Pattern[str], text: str, at: int) -> int:
    """Where a pattern that matches the empty string too (a run of something) ends from `at`."""
    match = run.match(text, at)
    return match.end() if match else at


# -- the file ----------------------------------------------------------------------------------

_ITEMS_KEY = re.compile(r"^items:[ ]*\n", re.MULTILINE)
_FIRST_ITEM = re.compile(r"(?:[ ]*\n)*([ ]*)- ")


def members(stream: IO[str], head: str, loader: type) -> Iterator[tuple[str, Any, Any]]:
    """model/stream.py's members() for a YAML List of kubectl's shape; `head` is the text already
    read from `stream`. Raises Declined (possibly after yielding some members) when it cannot
    vouch for the file."""
    if yaml_rs is None:
        raise Declined
    found = _ITEMS_KEY.search(head)
    if found is None or found.start() > MAX_OUTSIDE_CHARS:
        raise Declined
    yield from _fields(head[: found.start()], loader, first=True)
    pending = head[found.end() :]
    first = _FIRST_ITEM.match(pending)
    if first is None:
        raise Declined  # `items: []`, `items:` with nothing, or a sequence of another form
    indent = first.group(1)
    pending = pending[first.start(1) :]  # blank lines before the first item say nothing
    region_end = re.compile(rf"\n(?= {{0,{len(indent)}}}[^ \n])(?!{indent}- )")
    item_start = f"\n{indent}- "
    yield ITEMS, None, None
    index = 0
    scanned = 0  # pending[:scanned] holds no end of the sequence
    while True:
        end = region_end.search(pending, scanned)
        if end is not None:
            body, tail = pending[: end.start() + 1], pending[end.start() + 1 :]
            if body.strip():
                index = yield from _numbered(_parse_items(body, item_start, loader), index)
            tail += stream.read(MAX_OUTSIDE_CHARS + 1 - len(tail)) if len(tail) <= MAX_OUTSIDE_CHARS else ""
            if len(tail) > MAX_OUTSIDE_CHARS or stream.read(1):
                raise Declined
            yield from _fields(tail, loader, first=False)
            return
        more = stream.read(CHUNK_CHARS)
        if not more:
            yield from _numbered(_parse_items(pending, item_start, loader), index)
            return
        scanned = max(0, len(pending) - len(indent) - 3)
        pending += more
        cut = pending.rfind(item_start, 0, scanned)
        if len(pending) > CHUNK_CHARS and cut > 0:
            index = yield from _numbered(_parse_items(pending[: cut + 1], item_start, loader), index)
            pending = pending[cut + 1 :]
            scanned -= cut + 1


# The root mapping's lines around `items:` as kubectl writes them: plain keys at column 0, their
# values indented below them, comments and blank lines; and `---` first in the file.
_ROOT_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_./-]*:(?:[ ]|$)")
_INSIGNIFICANT = re.compile(r"[ ]*(?:#.*)?$")


def _numbered(items: list[Any], index: int) -> Generator[tuple[str, Any, Any], None, int]:
    """Each item as an ITEM member, numbered on from `index`; returns the next number."""
    for item in items:
        yield ITEM, index, item
        index += 1
    return index


def _fields(text: str, loader: type, first: bool) -> Iterator[tuple[str, Any, Any]]:
    """The root mapping's fields written outside `items`, each a FIELD member. They are parsed
    apart from the items, which gives what the whole text gives where its lines are as kubectl
    writes them (_ROOT_KEY); anything else declines."""
    lines = text.split("\n")
    if first and lines[0].rstrip(" ") == "---":
        lines = lines[1:]
    keyed = False  # an indented line is a value only below a key
    for line in lines:
        if _INSIGNIFICANT.match(line):
            continue
        if _ROOT_KEY.match(line):
            keyed = True
        elif not (keyed and line.startswith(" ")):
            raise Declined
    if not surely_within_bounds(text, ITEM_NESTING):
        raise Declined
    try:
        fields = yaml.load(text, Loader=loader) if text.strip() else {}
    except (yaml.YAMLError, ValueError, RecursionError) as exc:
        raise Declined from exc
    if not isinstance(fields, dict) or not all(isinstance(key, str) for key in fields):
        raise Declined
    for key, value in fields.items():
        yield FIELD, key, value
