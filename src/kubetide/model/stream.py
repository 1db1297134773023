"""Read a cluster dump (`kind: List`, as kubectl prints it) one item at a time.

A 150,000-pod dump is over a gigabyte of text, and its decoded dicts take several times that;
the model objects made from them are a fraction of both. So a List file is read in chunks and
each element of its `items` is decoded, handed over and dropped before the next one is read:
memory holds one item's text and dicts at a time, plus the objects kept.

JSON items are decoded from a sliding buffer some fifty at a time: every kind with a wire schema
(TYPED_KINDS: pods, nodes, workloads...) by msgspec straight into it (model/wire.py,
model/wire_workloads.py), other kinds by the standard library's decoder, which
also reads, value by value, whatever msgspec might read otherwise (NaN, huge numbers).
YAML in kubectl's shape is parsed a few megabytes of items at a time by yaml-rs where a screen
shows that it reads them as PyYAML would (model/yaml_chunks.py). Otherwise YAML goes through the
parser's event stream (libyaml's when PyYAML has it), and each item is built straight from its
events (libyaml's composer only composes whole documents). Only the shape kubectl prints is streamed: one document whose
root mapping has an `items` sequence. Anything else raises NotStreamable, and so does anything
unusual on the way (anchors and aliases, a syntax error, text that is not UTF-8): the caller then
loads the file whole, whose checks (issue 13's bounds on depth and aliases) and error messages
are the reference. Streaming is only ever a faster way to the same result.
"""

from __future__ import annotations

import codecs
import io
import json
import re
from collections.abc import Callable, Iterator
from typing import IO, Any, BinaryIO, cast

import msgspec
import yaml

from kubetide.model.bounds import MAX_NESTING
from kubetide.model.wire import KindWire, PodWire
from kubetide.model.workloads import WORKLOAD_KINDS

# Items are kilobytes each; a chunk holds many, and a larger value doubles the read.
CHUNK_CHARS = 1 << 20
# JSON items decoded in one call (some fifty pods): faster than one at a time, and small enough
# that their objects are still in the processor's caches when the loader turns them into models.
BATCH_CHARS = 1 << 18

_WHITESPACE = re.compile(r"[ \t\n\r]*")
_WHITESPACE_BYTES = re.compile(rb"[ \t\n\r]*")
_DECODER = json.JSONDecoder()


class NotStreamable(Exception):
    """The file is not a List this module streams, or something in it needs the whole-file load."""


# What members() yields, in file order: the root's other fields, the start of `items`, each item
# (or, in JSON, a PodRun of consecutive pods, keyed by the index of its first).
FIELD, ITEMS, ITEM, POD_RUN = "field", "items", "item", "pod run"
FastYaml = Callable[[IO[str], str, type], Iterator[tuple[str, Any, Any]]]


def members(
    stream: IO[str] | IO[bytes], loader: type, fast_yaml: FastYaml | None = None
) -> Iterator[tuple[str, Any, Any]]:
    """(FIELD, key, value), (ITEMS, None, None) and (ITEM, index, object) for the root mapping of a
    JSON or YAML text (in JSON, (POD_RUN, index of the first, PodRun) for consecutive pods); `loader` is the YAML loader class (its parser gives the events). YAML goes
    to `fast_yaml` when given (model/yaml_chunks.members: the text read so far, the stream, the
    loader), which may decline, possibly after some members, with an exception of its own.

    A binary stream (a file opened "rb": it must be seekable) is read as bytes when it holds JSON:
    msgspec decodes UTF-8 itself, so the text of a 450 MB dump is never made into str objects;
    YAML is read through a text wrapper from the start again."""
    start = stream.read(CHUNK_CHARS)
    if isinstance(start, bytes):
        blank_bytes = _WHITESPACE_BYTES.match(start)
        offset = blank_bytes.end() if blank_bytes else 0
        if start[offset : offset + 1] == b"{":
            return _json_members(_JsonCursor(stream, start))
        binary = cast(BinaryIO, stream)
        binary.seek(0)
        text: IO[str] = io.TextIOWrapper(binary, encoding="utf-8")
        head = text.read(CHUNK_CHARS)
    else:
        text, head = cast(IO[str], stream), start
    blank = _WHITESPACE.match(head)
    first = head[blank.end() : blank.end() + 1] if blank else ""
    if first == "{":
        return _json_members(_JsonCursor(text, head))
    if first in ("", "[", "\ufeff"):
        raise NotStreamable
    if fast_yaml is not None:
        return fast_yaml(text, head, loader)
    return _yaml_members(_Rewound(text, head), loader)


# -- JSON --------------------------------------------------------------------------------------


class _JsonCursor:
    """A position in a JSON text read in chunks; values are decoded from a buffer that slides on.
    The buffer holds str (a text stream) or bytes (a binary one); the bytes of every value are
    checked to be UTF-8, as reading them as text would, since msgspec does not check the strings
    it skips."""

    def __init__(self, stream: IO[str] | IO[bytes], head: str | bytes):
        self.stream = stream
        self.binary = isinstance(head, bytes)
        # Bytes slide in a bytearray: dropping what was read only moves its start, and what is
        # read on is appended in place, where a bytes buffer was copied whole at every read.
        self.buffer: Any = bytearray(head) if isinstance(head, bytes) else head
        self.whitespace: Any = _WHITESPACE_BYTES if self.binary else _WHITESPACE
        self.pos = 0
        self.eof = False

    def _more(self) -> bool:
        """Read on (at least as much again as is buffered, so a huge value costs linear time)."""
        if self.eof:
            return False
        chunk = self.stream.read(max(CHUNK_CHARS, len(self.buffer) - self.pos))
        if not chunk:
            self.eof = True
            return False
        if self.binary:
            del self.buffer[: self.pos]
            self.buffer += chunk
        else:
            self.buffer = self.buffer[self.pos :] + chunk
        self.pos = 0
        return True

    def peek(self) -> str:
        """The next character that is not whitespace ("" at the end of the text; in bytes, its
        first byte as a character: only ever compared with JSON's punctuation)."""
        while True:
            blank = self.whitespace.match(self.buffer, self.pos)
            self.pos = blank.end() if blank else self.pos
            if self.pos < len(self.buffer) or not self._more():
                char: str | bytearray = self.buffer[self.pos : self.pos + 1]
                return char.decode("latin-1") if isinstance(char, bytearray) else char

    def take(self) -> str:
        char = self.peek()
        self.pos += 1
        return char

    def item_boundary(self) -> str | bytes | None:
        """Where one item of a pretty-printed array ends and the next begins (`\n        },`),
        judged by the first item, which the cursor is at: an object alone on its line."""
        if self.binary:
            line = self.buffer.rfind(b"\n", 0, self.pos) + 1
            indent = self.buffer[line : self.pos]
            if not line or indent.strip(b" ") or self.buffer[self.pos : self.pos + 1] != b"{":
                return None
            boundary: bytes = b"\n" + bytes(indent) + b"},"
            return boundary
        line = self.buffer.rfind("\n", 0, self.pos) + 1
        indent = self.buffer[line : self.pos]
        if not line or indent.strip(" ") or self.buffer[self.pos : self.pos + 1] != "{":
            return None
        text_boundary: str = "\n" + indent + "},"
        return text_boundary

    def values_before(self, boundary: Any) -> PodRun | list[Any] | None:
        """The values up to a `boundary` about BATCH_CHARS on, decoded as one array (a PodRun when
        they are all pods), and the cursor moved past its comma; [] when the buffer holds no
        boundary, None when the cut is not between values. JSON strings hold no newline, so text ending at the boundary that decodes
        as a run of values is one: the same values, by the same decoder, as value() one at a time."""
        if len(self.buffer) - self.pos < 2 * BATCH_CHARS:
            self._more()
        cut = self.buffer.find(boundary, self.pos + BATCH_CHARS)
        if cut < 0:
            cut = self.buffer.rfind(boundary, self.pos)
        if cut < 0:
            return []
        end = cut + len(boundary) - 1  # just past the "}"
        if self.binary:
            text = b"[" + self.buffer[self.pos : end] + b"]"
            if not text.isascii():
                text.decode("utf-8")  # raises where reading the file as text would
        else:
            text = "[" + self.buffer[self.pos : end] + "]"
        values = _batch(text)
        if values is not None:
            self.pos = end + 1
        return values

    def value(self) -> Any:
        self.peek()
        if self.binary:
            return self._value_of_bytes()
        while True:
            try:
                value, end = _DECODER.raw_decode(self.buffer, self.pos)
            except json.JSONDecodeError:
                if self._more():
                    continue  # the value goes on in the next chunk
                raise NotStreamable from None
            if end == len(self.buffer) and self._more():
                continue  # a number may go on in the next chunk
            self.pos = end
            return value

    def _value_of_bytes(self) -> Any:
        """value() in a bytes buffer: the standard library's decoder reads text, so a window of
        the bytes is decoded (widened until the value fits) and the value's length in bytes taken."""
        window = 1 << 12
        while True:
            text = codecs.getincrementaldecoder("utf-8")().decode(self.buffer[self.pos : self.pos + window])
            widen = self.pos + window < len(self.buffer)
            try:
                value, end = _DECODER.raw_decode(text)
            except json.JSONDecodeError:
                if widen:
                    window *= 4
                    continue
                if self._more():
                    continue  # the value goes on in the next chunk
                raise NotStreamable from None
            if end == len(text) and (widen or self._more()):
                window *= 4  # a number may go on
                continue
            self.pos += len(text[:end].encode("utf-8"))
            return value


class JsonObject:
    """An object of a JSON List of one of the TYPED_KINDS, for the loader to build from the wire schema
    (model/wire.py): `raw()` is its text, to decode into the wire schema, or into dicts for the
    Reader when the wire schema does not take it."""

    __slots__ = ("batch", "index", "kind")

    def __init__(self, kind: str, batch: _Batch, index: int):
        self.kind = kind
        self.batch = batch
        self.index = index

    def raw(self) -> msgspec.Raw:
        return self.batch.raw(self.index)


class PodRun:
    """Consecutive pods of a JSON List, decoded into the wire schema in one pass: the loader builds
    and records them in one loop (a dump is mostly pods, and handing them over one member at a
    time cost a fifth of loading them). `raw(i)` is the i-th pod's text, for the Reader when the
    wire schema does not take that pod."""

    __slots__ = ("batch", "wires")

    def __init__(self, wires: list[PodWire], batch: _Batch):
        self.wires = wires
        self.batch = batch

    def __len__(self) -> int:
        return len(self.wires)

    def raw(self, index: int) -> msgspec.Raw:
        return self.batch.raw(index)


# The kinds decoded straight from their text into the wire schema (loader.register_kind adds the
# kinds feature packages bring).
TYPED_KINDS: set[str] = {
    "Pod",
    "Node",
    "Namespace",
    "PriorityClass",
    "PodDisruptionBudget",
    "ConfigMap",
    "HorizontalPodAutoscaler",
    "CronJob",
    *WORKLOAD_KINDS,
}


class _Batch:
    """The text of some List items, split into each item's text only when one is asked for."""

    __slots__ = ("_raws", "text")

    def __init__(self, text: str | bytes, raws: list[msgspec.Raw] | None = None):
        self.text = text
        self._raws = raws

    def raw(self, index: int) -> msgspec.Raw:
        if self._raws is None:
            self._raws = _RAW_ITEMS.decode(self.text)
        return self._raws[index]


_POD_ITEMS = msgspec.json.Decoder(list[PodWire])
_RAW_ITEMS = msgspec.json.Decoder(list[msgspec.Raw])
_KIND = msgspec.json.Decoder(KindWire)


def _batch(text: str | bytes) -> PodRun | list[Any] | None:
    """The values of a JSON array's text: a run of pods (the bulk of a dump) as one PodRun,
    decoded in one pass; otherwise the items of the kinds with a wire schema as JsonObjects,
    anything else decoded by the standard library's decoder as before; None when msgspec and the
    standard library might not read the text alike (NaN, a number too large for int64,
    nesting...): value() reads it then, one value at a time."""
    try:
        wires = _POD_ITEMS.decode(text)
    except (msgspec.MsgspecError, RecursionError):
        wires = None
    if wires is not None and all(wire.kind == "Pod" for wire in wires):
        return PodRun(wires, _Batch(text))
    try:
        raws = _RAW_ITEMS.decode(text)
        kinds = [_KIND.decode(raw).kind for raw in raws]
        batch = _Batch(text, raws)
        return [
            JsonObject(kind, batch, index)
            if kind in TYPED_KINDS
            else _DECODER.decode(bytes(raw).decode("utf-8"))
            for index, (raw, kind) in enumerate(zip(raws, kinds, strict=True))
        ]
    except (msgspec.MsgspecError, ValueError, RecursionError):
        return None


def _json_members(cursor: _JsonCursor) -> Iterator[tuple[str, Any, Any]]:
    if cursor.take() != "{":
        raise NotStreamable
    seen_items = False
    if cursor.peek() == "}":
        cursor.take()
    else:
        while True:
            key = cursor.value()
            if not isinstance(key, str) or cursor.take() != ":":
                raise NotStreamable
            if key == "items" and cursor.peek() == "[" and not seen_items:
                seen_items = True
                cursor.take()
                yield ITEMS, None, None
                index = 0
                if cursor.peek() == "]":
                    cursor.take()
                else:
                    boundary = cursor.item_boundary()
                    while True:
                        batch = cursor.values_before(boundary) if boundary else []
                        if batch is None:
                            boundary = None  # laid out otherwise: every later try would fail too
                        if isinstance(batch, PodRun):
                            yield POD_RUN, index, batch
                            index += len(batch)
                            continue  # the batch ended past a comma: the next batch starts here
                        if batch:
                            for value in batch:
                                yield ITEM, index, value
                                index += 1
                            continue
                        yield ITEM, index, cursor.value()
                        index += 1
                        separator = cursor.take()
                        if separator == "]":
                            break
                        if separator != ",":
                            raise NotStreamable
            else:
                yield FIELD, key, cursor.value()
            separator = cursor.take()
            if separator == "}":
                break
            if separator != ",":
                raise NotStreamable
    if cursor.peek() != "":
        raise NotStreamable


# -- YAML --------------------------------------------------------------------------------------


class _Rewound:
    """The stream with the text already read put back in front, for the YAML parser."""

    def __init__(self, stream: IO[str], head: str):
        self.stream = stream
        self.head = head

    def read(self, size: int = -1) -> str:
        if self.head:
            text, self.head = self.head, ""
            return text
        return self.stream.read(size)


_STR_TAG = "tag:yaml.org,2002:str"
_MAX_TAGS_CACHED = 100_000
# Plain scalars resolving to these are built by the SafeConstructor's own functions; any other
# implicit tag (merge keys `<<`, `=`) sends the file to the whole-file load.
_SCALAR_TAGS = frozenset(
    f"tag:yaml.org,2002:{name}" for name in ("null", "bool", "int", "float", "timestamp")
)


def _yaml_members(stream: _Rewound, base: type) -> Iterator[tuple[str, Any, Any]]:
    loader = base(stream)
    tags: dict[str, str] = {}
    try:
        _expect(loader, yaml.StreamStartEvent)
        _expect(loader, yaml.DocumentStartEvent)
        root = loader.peek_event()
        if not isinstance(root, yaml.MappingStartEvent) or root.anchor or root.tag not in (None, "!"):
            raise NotStreamable
        loader.get_event()
        seen_items = False
        while not loader.check_event(yaml.MappingEndEvent):
            key = _construct(loader, tags, 1)
            start = loader.peek_event()
            if key == "items" and not seen_items and _plain_sequence(start):
                seen_items = True
                loader.get_event()
                yield ITEMS, None, None
                index = 0
                while not loader.check_event(yaml.SequenceEndEvent):
                    yield ITEM, index, _construct(loader, tags, 2)
                    index += 1
                loader.get_event()
            elif isinstance(key, str):
                yield FIELD, key, _construct(loader, tags, 1)
            else:
                raise NotStreamable
        loader.get_event()
        _expect(loader, yaml.DocumentEndEvent)
        _expect(loader, yaml.StreamEndEvent)  # not another document
    except (yaml.YAMLError, RecursionError, ValueError) as exc:
        raise NotStreamable from exc
    finally:
        loader.dispose()


def yaml_sequence(text: str, base: type) -> list[Any]:
    """The items of a YAML text that is one block sequence (some of a List's items), each built as
    _yaml_members builds an item, with the same refusals."""
    loader = base(text)
    tags: dict[str, str] = {}
    items = []
    try:
        _expect(loader, yaml.StreamStartEvent)
        _expect(loader, yaml.DocumentStartEvent)
        if not _plain_sequence(loader.peek_event()):
            raise NotStreamable
        loader.get_event()
        while not loader.check_event(yaml.SequenceEndEvent):
            items.append(_construct(loader, tags, 2))
        loader.get_event()
        _expect(loader, yaml.DocumentEndEvent)
        _expect(loader, yaml.StreamEndEvent)
    except (yaml.YAMLError, RecursionError, ValueError) as exc:
        raise NotStreamable from exc
    finally:
        loader.dispose()
    return items


def _expect(loader: Any, event_type: type[yaml.Event]) -> None:
    if not loader.check_event(event_type):
        raise NotStreamable
    loader.get_event()


def _plain_sequence(event: yaml.Event) -> bool:
    return isinstance(event, yaml.SequenceStartEvent) and event.anchor is None and event.tag in (None, "!")


def _construct(loader: Any, tags: dict[str, str], depth: int) -> Any:
    """The next node as Python objects, built straight from the parser's events as the
    SafeLoader would build it. Anchors, aliases, explicit tags and collections nested deeper than
    the whole-file load allows (`depth` counts the collections this node is in, as bounds.py does)
    are refused: that load's checks word the error. `tags` caches the implicit tag of each plain
    scalar: keys and values recur in every item."""
    event = loader.get_event()
    if event.anchor is not None or getattr(event, "tag", None) not in (None, "!"):
        raise NotStreamable
    if isinstance(event, yaml.ScalarEvent):
        if event.style or not event.implicit[0]:
            return event.value  # quoted, or a block scalar: a string
        tag = tags.get(event.value)
        if tag is None:
            tag = loader.resolve(yaml.ScalarNode, event.value, (True, False))
            if len(tags) >= _MAX_TAGS_CACHED:
                tags.clear()
            tags[event.value] = tag
        if tag == _STR_TAG:
            return event.value
        if tag not in _SCALAR_TAGS:
            raise NotStreamable
        return loader.yaml_constructors[tag](loader, yaml.ScalarNode(tag, event.value))
    if depth >= MAX_NESTING:
        raise NotStreamable
    if isinstance(event, yaml.MappingStartEvent):
        mapping = {}
        while not loader.check_event(yaml.MappingEndEvent):
            key = _construct(loader, tags, depth + 1)
            if isinstance(key, dict | list):
                raise NotStreamable  # unhashable: the whole-file load words the error
            mapping[key] = _construct(loader, tags, depth + 1)
        loader.get_event()
        return mapping
    if isinstance(event, yaml.SequenceStartEvent):
        sequence = []
        while not loader.check_event(yaml.SequenceEndEvent):
            sequence.append(_construct(loader, tags, depth + 1))
        loader.get_event()
        return sequence
    raise NotStreamable  # an alias
