"""The resource axis of the snapshot's arrays: resource name <-> column index."""

from __future__ import annotations

from collections.abc import Mapping

from kubetide.model.quantity import CPU, EPHEMERAL_STORAGE, MEMORY, PODS

BASE_RESOURCES = (CPU, MEMORY, EPHEMERAL_STORAGE, PODS)


class ResourceColumns:
    """Column indexes for resource vectors. Extended resources get a column on first sight."""

    __slots__ = ("index", "names")

    def __init__(self) -> None:
        self.names: list[str] = list(BASE_RESOURCES)
        self.index: dict[str, int] = {name: i for i, name in enumerate(self.names)}

    def __len__(self) -> int:
        return len(self.names)

    def missing(self, amounts: Mapping[str, int]) -> list[str]:
        return [name for name in amounts if name not in self.index]

    def add(self, name: str) -> int:
        self.index[name] = len(self.names)
        self.names.append(name)
        return self.index[name]
