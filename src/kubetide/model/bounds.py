"""Bounds on a YAML or JSON text, checked before the loader builds any object from it.

libyaml's C loader composes nodes recursively on the C stack: a flow sequence nested some 30,000
deep kills the process with SIGSEGV, which no `except` can catch. Aliases are the other danger:
the loader shares an aliased node instead of copying it, so a 1 KB file of nested `kind: List`
items aliasing each other stands for millions of objects, and every reader after the loader walks
them all. Both are bounded here, on the text and on the parser's event stream, never on the
loaded objects, and before any parser can refuse the text with a message and limit of its own
(libyaml in PyYAML >= 6.0.4 stops at depth 1,000, see _check_events).

The event stream costs about an eighth of a full load, so it is read only when a screen over the
raw text (a few C-speed string scans) cannot rule the danger out. The screen is sound:

- every collection on a path of nested *flow* collections has its own opening bracket, and an
  empty `[]` / `{}` nests nothing, so flow depth <= (brackets left once those are removed) + 1;
- nested *block* collections start at strictly increasing columns, except that a block sequence
  may sit at its parent mapping's column, and a line's block collections start inside its leading
  run of spaces and `-`, `?`, `:` indicators; so block depth <= 2 * (longest such run + 1);
- an alias is a node, so its `*` starts a token where a node may start: at a line's start (after
  any of YAML's line breaks, or the byte-order mark), or after `[`, `{`, `,`, `]`, `}`, `:` or
  `?` (in a flow collection, `{"a":*x}` and `{?*x : 1}` need no space), with spaces or tabs
  between or not; or after whitespace following `-`, `---`, `...`, a quoted scalar, a tag or
  anchor, or a block scalar's header (`|`, `>`), where it is an alias or a syntax error.
  Anywhere else a `*` after a space sits inside a plain scalar (a CronJob's `0 * * * *`: the
  scanner reads a plain scalar on across spaces) or a quoted one, and is text: no such `*`, no
  alias. The screen may flag text it need not (`a - *b`); it never misses an alias.
"""

from __future__ import annotations

import re

import yaml

from kubetide.errors import ManifestError

# Real manifests nest a few dozen levels deep; Python's own JSON decoder stops near 1,000.
MAX_NESTING = 500
# Aliases may make the document stand for at most this many times the nodes it writes out.
MAX_EXPANSION = 10
# ... and a small file may always use them this much (a template repeated a few hundred times).
MIN_EXPANDED_NODES = 100_000

# Where a `*` may start an alias token (see above); `^` with MULTILINE follows `\n` only, so the
# other line breaks are listed. libyaml takes a tab as a separator after `:` and `,` too.
_ALIAS = re.compile(
    r"(?:^|[\r\x85\u2028\u2029\ufeff\[\]{},:?])[ \t]*\*|(?:[-.'\"|>]|[!&][^ \t\r\n]*)[ \t]+\*",
    re.MULTILINE,
)


def check_text(text: str, source: str, loader: type) -> None:
    """Raise a ManifestError if the text nests deeper than MAX_NESTING or if its aliases expand it
    beyond MAX_EXPANSION times its size, before `loader` composes anything."""
    if surely_within_bounds(text):
        return
    _check_events(text, source, loader)


def surely_within_bounds(text: str, max_nesting: int = MAX_NESTING, flow_depth: int | None = None) -> bool:
    """True when the text surely has no alias and nests at most `max_nesting` deep (the screen
    above); False when it cannot tell. `flow_depth`, when given, is a bound on the text's flow
    depth found otherwise (over parts of the text no flow collection crosses, say); the alias and
    block screens then look at one line at a time, so `text` may be its distinct lines."""
    # str.count and `in` scan in C; a regex runs only where they cannot rule a danger out.
    if "*" in text and _ALIAS.search(text):
        return False
    room = max_nesting - (flow_depth_bound(text, max_nesting) if flow_depth is None else flow_depth)
    if room < 2:
        return False
    run = f"[ \t?:-]{{{room // 2 - 1},}}"
    return re.match(run, text) is None and re.search("\n" + run, text) is None


def flow_depth_bound(
    text: str, max_nesting: int = MAX_NESTING, begin: int = 0, end: int | None = None
) -> int:
    """A bound on how deep the flow collections of text[begin:end] nest (tight enough below
    `max_nesting`), found without copying that part."""
    end = len(text) if end is None else end
    flow_depth = text.count("[", begin, end) + text.count("{", begin, end) + 1
    if flow_depth > max_nesting - 2:  # two-character counts are slower: only when they matter
        flow_depth -= text.count("[]", begin, end) + text.count("{}", begin, end)
    return flow_depth


def _check_events(text: str, source: str, loader: type) -> None:
    """Walk the parser's events for the bounds. libyaml's parser keeps its stack on the heap, so any
    depth is safe, but from PyYAML 6.0.4 on it refuses text nested 1,000 deep, and its scanner reads
    up to 1,024 characters ahead of the events: it can refuse before the walk reaches our own limit.
    Any refusal is therefore walked again by PyYAML's pure-Python parser (no depth limit, no
    recursion), so that our limit and position are the ones reported, on every PyYAML."""
    try:
        _walk_events(text, source, loader)
    except yaml.YAMLError:
        if loader is yaml.SafeLoader:
            return  # the loader reports the syntax error itself, with its position
        try:
            _walk_events(text, source, yaml.SafeLoader)
        except yaml.YAMLError:
            return


def _walk_events(text: str, source: str, loader: type) -> None:
    depth = 0
    written = expanded = 0
    anchored_sizes: dict[str, int] = {}
    open_collections: list[tuple[str | None, int]] = []
    for event in yaml.parse(text, Loader=loader):
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > MAX_NESTING:
                raise _error(source, event, f"nested more than {MAX_NESTING} levels deep")
            open_collections.append((event.anchor, expanded))
            written += 1
            expanded += 1
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1
            anchor, start = open_collections.pop()
            if anchor is not None:
                anchored_sizes[anchor] = expanded - start
        elif isinstance(event, yaml.ScalarEvent):
            written += 1
            expanded += 1
            if event.anchor is not None:
                anchored_sizes[event.anchor] = 1
        elif isinstance(event, yaml.AliasEvent) and event.anchor is not None:
            written += 1
            expanded += anchored_sizes.get(event.anchor, 1)
            if expanded > max(MAX_EXPANSION * written, MIN_EXPANDED_NODES):
                raise _error(
                    source,
                    event,
                    f"aliases expand the document more than {MAX_EXPANSION} times "
                    f"(to over {expanded:,} nodes)",
                )


def _error(source: str, event: yaml.Event, message: str) -> ManifestError:
    mark = event.start_mark
    where = f"line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
    return ManifestError(source, where, "", message)
