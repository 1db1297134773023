"""What the objects the agent reads share when they are parsed: crane's API group
(ensurance.crane.io/v1alpha1), where each was written (so checks made after parsing still name
the file, object and field), and reads of fields that always yield a value (the model's Reader
returns Optional values even for required fields and defaults)."""

from __future__ import annotations

from dataclasses import dataclass

from kubetide.errors import ManifestError
from kubetide.model.reader import Reader

API_GROUP = "ensurance.crane.io"
API_VERSION = f"{API_GROUP}/v1alpha1"


@dataclass(frozen=True, slots=True)
class Origin:
    """Where something was written, so checks made later still name the file and field."""

    source: str
    location: str
    path: str

    def error(self, message: str, key: str = "") -> ManifestError:
        field_path = f"{self.path}.{key}" if key and self.path else key or self.path
        return ManifestError(self.source, self.location, field_path, message)


NOWHERE = Origin("", "", "")


def origin_of(reader: Reader) -> Origin:
    return Origin(reader.source, reader.location, reader.path)


def check_api_version(reader: Reader) -> None:
    """Any version of crane's ensurance group (absent: assumed)."""
    version = str_or(reader, "apiVersion", API_VERSION)
    if version.split("/")[0] != API_GROUP:
        raise reader.error(f'expected "{API_VERSION}", got "{version}"', "apiVersion")


def required_str(reader: Reader, key: str) -> str:
    value = reader.str(key)
    if value is None:
        raise reader.error("required field is missing", key)
    return value


def str_or(reader: Reader, key: str, default: str) -> str:
    value = reader.str(key)
    return default if value is None else value


def int_or(reader: Reader, key: str, default: int) -> int:
    value = reader.int(key)
    return default if value is None else value
