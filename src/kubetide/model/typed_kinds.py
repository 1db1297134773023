"""The two entry points every wire-schema kind has, made for each kind from its Struct and the
function that builds the model value from it (model/policy_typed.py, model/workloads_typed.py, ...):

- decode(JSON text) -> (the value, the loader's name for it), for List items decoded straight
  from their text (model/stream.py, loader._TYPED_DECODERS);
- parse(Reader) -> the value, for objects already parsed (YAML, or JSON read whole): converted
  into the Struct (`msgspec.convert`) and built.

A build returns None (or raises Declined) for anything the API server would not have written;
decode then returns None and the loader decodes the text into dicts, and parse hands the object
to the Reader's parser (`fallback`), which alone words errors (file, item, object, field).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, TypeVar

import msgspec

from kubetide.errors import ManifestError
from kubetide.model.reader import Reader
from kubetide.model.typed import Declined, label
from kubetide.model.wire import ObjectMetaWire


class _WithMeta(Protocol):
    @property
    def metadata(self) -> ObjectMetaWire: ...


W = TypeVar("W", bound=_WithMeta)
T = TypeVar("T")
Decode = Callable[[bytes | str | msgspec.Raw], tuple[Any, str] | None]


def _guarded(build: Callable[[W], T | None]) -> Callable[[W], T | None]:
    def guarded(wire: W) -> T | None:
        try:
            return build(wire)
        except (Declined, ManifestError):
            return None

    return guarded


def wire_decoder(wire_type: type[W], build: Callable[[W], T | None], kind: str) -> Decode:
    """decode(JSON text) -> (the value, `Kind namespace/name`), or None: the Reader's turn."""
    decoder = msgspec.json.Decoder(wire_type)
    safe_build = _guarded(build)

    def decode(text: bytes | str | msgspec.Raw) -> tuple[T, str] | None:
        try:
            wire = decoder.decode(text)
        except msgspec.MsgspecError:
            return None
        built = safe_build(wire)
        return None if built is None else (built, label(kind, wire.metadata))

    return decode


def wire_parser(
    wire_type: type[W], build: Callable[[W], T | None], fallback: Callable[[Reader], T]
) -> Callable[[Reader], T]:
    """parse(Reader) -> the value: converted into the Struct and built, else `fallback(reader)`."""
    safe_build = _guarded(build)

    def parse(reader: Reader) -> T:
        try:
            wire = msgspec.convert(reader.data, wire_type)
        except msgspec.MsgspecError:
            return fallback(reader)
        built = safe_build(wire)
        return fallback(reader) if built is None else built

    return parse
