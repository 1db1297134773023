"""A faster `dataclasses.replace` for the simulator's hot paths.

The simulator changes pod status tens of thousands of times per simulated hour (bind, start,
terminate). `dataclasses.replace` re-runs `__init__` through keyword arguments, which for a
30-field frozen dataclass costs about twice a straight slot copy. Copying the slots and
overriding the changed ones yields the same object, since the only work a model `__init__` does
beyond storing fields is a Pod's shape (model/shape.py): a change to a field the shape is computed
from goes through `dataclasses.replace`, which computes it again.
"""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar

from kubetide.model import ObjectMeta, Pod
from kubetide.model.pod import SHAPE_FIELDS

T = TypeVar("T")


def _compile(cls: type) -> Any:
    names = [f.name for f in dataclasses.fields(cls)]
    lines = ["def evolve(obj, changes):", "    new = _new(_cls)", "    get = changes.get"]
    for name in names:
        lines.append(f"    _set(new, {name!r}, get({name!r}, obj.{name}))")
    lines.append("    return new")
    namespace = {"_new": object.__new__, "_set": object.__setattr__, "_cls": cls}
    exec("\n".join(lines), namespace)
    return namespace["evolve"]


_EVOLVE = {Pod: _compile(Pod), ObjectMeta: _compile(ObjectMeta)}


def evolve(obj: T, **changes: Any) -> T:
    """`dataclasses.replace(obj, **changes)` for Pod and ObjectMeta, faster."""
    fast = _EVOLVE.get(type(obj))
    if fast is None:
        return dataclasses.replace(obj, **changes)  # type: ignore[type-var]
    unknown = changes.keys() - _FIELDS[type(obj)]
    if unknown:
        raise TypeError(f"{type(obj).__name__} has no field(s) {sorted(unknown)}")
    if not SHAPE_FIELDS.isdisjoint(changes):
        return dataclasses.replace(obj, **changes)  # type: ignore[type-var]
    return fast(obj, changes)


_FIELDS = {cls: frozenset(f.name for f in dataclasses.fields(cls) if f.init) for cls in _EVOLVE}
