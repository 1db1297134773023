"""A small typed reader over parsed YAML/JSON that knows where it is.

Every accessor takes a field name and returns a typed value or raises a ManifestError whose field
path is exact (`spec.containers[0].resources.requests.cpu`). Parsers for each kind are written
against this reader, so precise error messages cost nothing at the call sites.
"""

from __future__ import annotations

import builtins
import contextlib
from collections.abc import Iterator
from datetime import datetime
from fractions import Fraction
from typing import Any, Literal, overload

from kubetide.errors import ManifestError
from kubetide.model.quantity import QuantityError, parse_quantity, to_units

# Integer fields of Kubernetes objects are int32 or int64; nothing larger reaches the API server.
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
_INT64_DIGITS = len(str(INT64_MAX))


class Reader:
    __slots__ = ("data", "location", "path", "source")

    def __init__(self, data: Any, source: builtins.str, location: builtins.str = "", path: builtins.str = ""):
        self.data = data
        self.source = source
        self.location = location
        self.path = path

    # -- navigation -------------------------------------------------------------------------
    def _join(self, key: builtins.str | builtins.int) -> builtins.str:
        if isinstance(key, int):
            return f"{self.path}[{key}]"
        return f"{self.path}.{key}" if self.path else key

    def error(self, message: builtins.str, key: builtins.str | builtins.int | None = None) -> ManifestError:
        field = self._join(key) if key is not None else self.path
        return ManifestError(self.source, self.location, field, message)

    def _mapping(self) -> dict[Any, Any]:
        if self.data is None:
            return {}
        if not isinstance(self.data, dict):
            raise self.error(f"expected a mapping, got {_kind_of(self.data)}")
        return self.data

    def has(self, key: builtins.str) -> builtins.bool:
        return self._mapping().get(key) is not None

    def fields(self) -> list[Any]:
        """The mapping's keys, in the manifest's order."""
        return list(self._mapping())

    def raw(self, key: builtins.str, default: Any = None) -> Any:
        value = self._mapping().get(key)
        return default if value is None else value

    def child(self, key: builtins.str) -> Reader:
        """The mapping under key (an empty one when absent)."""
        value = self._mapping().get(key)
        reader = Reader(value, self.source, self.location, self._join(key))
        reader._mapping()
        return reader

    def items(self, key: builtins.str) -> Iterator[Reader]:
        """Readers for each element of the list under key (none when absent)."""
        value = self._mapping().get(key)
        if value is None:
            return
        if not isinstance(value, list):
            raise self.error(f"expected a list, got {_kind_of(value)}", key)
        base = self._join(key)
        for index, element in enumerate(value):
            yield Reader(element, self.source, self.location, f"{base}[{index}]")

    # -- scalars ----------------------------------------------------------------------------
    # A default or required=True means a value always comes back; the overloads tell mypy so.
    @overload
    def str(
        self, key: builtins.str, default: builtins.str, required: builtins.bool = False
    ) -> builtins.str: ...
    @overload
    def str(self, key: builtins.str, default: None = None, *, required: Literal[True]) -> builtins.str: ...
    @overload
    def str(
        self, key: builtins.str, default: None = None, required: builtins.bool = False
    ) -> builtins.str | None: ...
    def str(
        self, key: builtins.str, default: builtins.str | None = None, required: builtins.bool = False
    ) -> builtins.str | None:
        value = self._mapping().get(key)
        if value is None:
            if required:
                raise self.error("required field is missing", key)
            return default
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            raise self.error(f"expected a string, got {_kind_of(value)}", key)
        return str(value)

    @overload
    def int(
        self, key: builtins.str, default: builtins.int, required: builtins.bool = False
    ) -> builtins.int: ...
    @overload
    def int(self, key: builtins.str, default: None = None, *, required: Literal[True]) -> builtins.int: ...
    @overload
    def int(
        self, key: builtins.str, default: None = None, required: builtins.bool = False
    ) -> builtins.int | None: ...
    def int(
        self, key: builtins.str, default: builtins.int | None = None, required: builtins.bool = False
    ) -> builtins.int | None:
        value = self._mapping().get(key)
        if value is None:
            if required:
                raise self.error("required field is missing", key)
            return default
        if isinstance(value, bool):
            raise self.error(f"expected an integer, got {value!r}", key)
        number = value
        if isinstance(value, str) and len(value) <= 20:
            with contextlib.suppress(ValueError):
                number = int(value, 10)
        if not isinstance(number, int):
            raise self.error(f"expected an integer, got {value!r}", key)
        if not INT64_MIN <= number <= INT64_MAX:
            raise self.error(f"{value!r:.40} is out of range for an integer field (int64)", key)
        return number

    def bool(self, key: builtins.str, default: builtins.bool = False) -> builtins.bool:
        value = self._mapping().get(key)
        if value is None:
            return default
        if isinstance(value, bool):
            return value
        raise self.error(f"expected true or false, got {value!r}", key)

    def int_or_percent(self, key: builtins.str) -> builtins.int | builtins.str | None:
        """IntOrString fields such as minAvailable: 3 or "30%"."""
        value = self._mapping().get(key)
        if value is None:
            return None
        if isinstance(value, int) and not isinstance(value, bool):
            if value < 0:
                raise self.error(f"must be non-negative, got {value}", key)
            return value
        if isinstance(value, str):
            text = value.strip()
            digits = text[:-1] if text.endswith("%") else text
            # An IntOrString's integer is an int32: more digits than int64 has are out of range
            # before Python's int() (which refuses over 4,300 digits with a ValueError) sees them.
            if digits.isdigit() and len(digits) > _INT64_DIGITS:
                raise self.error(f"{value!r:.40} is out of range for an integer field (int32)", key)
            if text.endswith("%") and digits.isdigit():
                return text
            if text.isdigit():
                return int(text)
        raise self.error(f'expected an integer or a percentage like "30%", got {value!r:.80}', key)

    def str_map(self, key: builtins.str) -> dict[builtins.str, builtins.str]:
        value = self._mapping().get(key)
        if value is None:
            return {}
        if not isinstance(value, dict):
            raise self.error(f"expected a mapping, got {_kind_of(value)}", key)
        result: dict[builtins.str, builtins.str] = {}
        for k, v in value.items():
            if v is None:
                v = ""
            if isinstance(v, bool):
                v = "true" if v else "false"
            if not isinstance(v, str | int | float):
                raise self.error(f"expected a string, got {_kind_of(v)}", f"{key}.{k}" if key else k)
            result[str(k)] = str(v)
        return result

    def str_list(self, key: builtins.str) -> list[builtins.str]:
        value = self._mapping().get(key)
        if value is None:
            return []
        if not isinstance(value, list):
            raise self.error(f"expected a list, got {_kind_of(value)}", key)
        result: list[builtins.str] = []
        for index, v in enumerate(value):
            if isinstance(v, bool) or not isinstance(v, str | int | float):
                raise self.error(f"expected a string, got {_kind_of(v)}", f"{key}[{index}]")
            result.append(str(v))
        return result

    def quantity(self, key: builtins.str) -> Fraction | None:
        value = self._mapping().get(key)
        if value is None:
            return None
        try:
            return parse_quantity(value)
        except QuantityError as exc:
            raise self.error(str(exc), key) from None

    def resources(self, key: builtins.str) -> dict[builtins.str, builtins.int]:
        """A ResourceList (`{cpu: 100m, memory: 1Gi}`) as exact integer units."""
        reader = self.child(key)
        result: dict[builtins.str, builtins.int] = {}
        for name in reader._mapping():
            amount = reader.quantity(name)
            if amount is None:
                continue
            if amount < 0:
                raise reader.error(f'must be non-negative, got "{reader.data[name]}"', str(name))
            result[str(name)] = to_units(str(name), amount)
        return result

    def timestamp(self, key: builtins.str) -> float | None:
        """RFC 3339 time as Unix seconds (None when absent)."""
        value = self._mapping().get(key)
        if value is None:
            return None
        if isinstance(value, datetime):  # PyYAML turns unquoted timestamps into datetimes
            return _to_epoch(value)
        if isinstance(value, str):
            try:
                return parse_time(value)
            except ValueError:
                pass
        raise self.error(f"invalid RFC 3339 time {value!r}", key)


def parse_time(text: str) -> float:
    """RFC 3339 text (`2024-05-01T10:00:00Z`) to Unix seconds. Raises ValueError."""
    return _to_epoch(datetime.fromisoformat(text.strip().replace("z", "Z")))


def _to_epoch(moment: datetime) -> float:
    if moment.tzinfo is None:
        from datetime import UTC

        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


def _kind_of(value: Any) -> str:
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return f"the number {value}"
    return f"{type(value).__name__} {value!r}"
