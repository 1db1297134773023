"""What every crane object (ensurance.crane.io/v1alpha1) shares when it is parsed: its API group,
and where it was written, so checks made after parsing still name the file, object and field."""

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
    version = reader.str("apiVersion", default=API_VERSION) or API_VERSION
    if version.split("/")[0] != API_GROUP:
        raise reader.error(f'expected "{API_VERSION}", got "{version}"', "apiVersion")
