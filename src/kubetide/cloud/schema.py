"""The nodeGroups schema, shared by scenario files and `kubetide plan --node-groups GROUPS.yaml`.

A node group is `name`, `minSize`, `maxSize`, `price` and a `template` (a Node manifest without
apiVersion/kind: labels, taints, status.allocatable), plus the simulated cloud's delays and
`initialSize`. Scenarios (sim/spec/scenario.py) validate `spec.nodeGroups` with `NodeGroupSpec`; the
static cloud (cloud/static.py) accepts the same entries, so a scenario's node groups can be pasted
into a GROUPS.yaml.

The shape is checked by pydantic (unknown fields are errors); `first_error` turns pydantic's first
error into a field path and a message with a did-you-mean, and `parse_template` parses a template
with the model's own Node reader, so every error names its field.
"""

from __future__ import annotations

import dataclasses
import difflib
import types
import typing
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, model_validator

from kubetide.durations import format_duration, parse_duration
from kubetide.errors import ManifestError, UserError
from kubetide.model import Node
from kubetide.model.loader import parse_text, read_text
from kubetide.model.node import parse_node
from kubetide.model.reader import Reader

# The label kubetide puts on the nodes of a group (the simulator's nodes, template nodes).
NODE_GROUP_LABEL = "kubetide.io/node-group"


class SpecError(UserError):
    """A node group file is wrong; the message names the file and the field."""

    def __init__(self, source: str, field: str, message: str):
        self.source, self.field, self.message = source, field, message
        super().__init__(f"{source}: {field}: {message}" if field else f"{source}: {message}")


def read_spec_documents(path: str | Path, error: type[SpecError] = SpecError) -> list[Any]:
    """The YAML/JSON documents of a spec file (scenario, GROUPS.yaml); read and parse errors
    become `error` naming the file, so every spec loader reports them the same way."""
    source = str(path)
    try:
        return parse_text(read_text(path), source)
    except ManifestError as exc:
        raise error(source, exc.location, exc.message) from None


def duration(value: Any) -> float:
    """A non-negative Go duration ("2m", "90s") or number of seconds."""
    seconds = parse_duration(value)
    if seconds < 0:
        raise ValueError(f"must not be negative, got {value!r}")
    return seconds


Duration = Annotated[float, BeforeValidator(duration)]


class StrictModel(BaseModel):
    """Unknown fields are errors, and so are values of the wrong type (pydantic would otherwise
    read `maxSize: true` as 1 and `"3"` as 3) and infinite or NaN numbers (`price: .inf`)."""

    model_config = ConfigDict(
        extra="forbid", populate_by_name=False, frozen=True, strict=True, allow_inf_nan=False
    )


class Delay(StrictModel):
    """A fixed delay (`20s`) or a range (`{min: 10s, max: 40s}`) drawn uniformly per use."""

    min: Duration
    max: Duration

    @model_validator(mode="before")
    @classmethod
    def _scalar(cls, value: Any) -> Any:
        if isinstance(value, str | int | float) and not isinstance(value, bool):
            return {"min": value, "max": value}
        return value

    @model_validator(mode="after")
    def _ordered(self) -> Delay:
        if self.max < self.min:
            raise ValueError(
                f"max ({format_duration(self.max)}) is less than min ({format_duration(self.min)})"
            )
        return self

    def draw(self, rng) -> float:
        if self.max == self.min:
            return self.min
        return round(rng.uniform(self.min, self.max), 3)


class NodeGroupSpec(StrictModel):
    name: str = Field(min_length=1, max_length=40, pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
    minSize: int = Field(default=0, ge=0)
    maxSize: int = Field(ge=0)
    initialSize: int | None = Field(default=None, ge=0)
    price: float = Field(default=0.0, ge=0)
    provisioningDelay: Delay = Delay.model_validate({"min": "2m", "max": "2m"})
    readyDelay: Delay = Delay.model_validate({"min": "20s", "max": "20s"})
    deletionDelay: Delay = Delay.model_validate({"min": "30s", "max": "30s"})
    template: dict[str, Any]

    @model_validator(mode="after")
    def _sizes(self) -> NodeGroupSpec:
        if self.maxSize < self.minSize:
            raise ValueError(f"maxSize ({self.maxSize}) is less than minSize ({self.minSize})")
        initial = self.minSize if self.initialSize is None else self.initialSize
        if initial > self.maxSize:
            raise ValueError(f"initialSize ({initial}) is more than maxSize ({self.maxSize})")
        return self


def parse_template(
    data: dict, group: str, source: str, where: str, error: type[SpecError] = SpecError
) -> Node:
    """A group's template Node, labelled with NODE_GROUP_LABEL; `pods` allocatable defaults to 110."""
    manifest = {"apiVersion": "v1", "kind": "Node", **data}
    meta = manifest.get("metadata")
    if meta is not None and not isinstance(meta, dict):
        raise error(source, f"{where}.metadata", "expected a mapping")
    manifest["metadata"] = {"name": f"{group}-template", **(meta or {})}
    try:
        node = parse_node(Reader(manifest, source, where))
    except ManifestError as exc:
        raise error(source, f"{where}.{exc.field}" if exc.field else where, exc.message) from None
    if not node.allocatable.get("cpu") and not node.allocatable.get("memory"):
        raise error(source, f"{where}.status.allocatable", "a node template needs allocatable cpu and memory")
    labels = dict(node.labels)
    labels[NODE_GROUP_LABEL] = group
    allocatable = dict(node.allocatable)
    allocatable.setdefault("pods", 110)
    return dataclasses.replace(
        node, meta=dataclasses.replace(node.meta, labels=labels), allocatable=allocatable
    )


# -- error messages --------------------------------------------------------------------------


def first_error(exc: ValidationError, root: type[BaseModel]) -> tuple[str, str]:
    """(field path, message) of the error to show, from a validation of `root`."""
    errors = exc.errors(include_url=False)
    # A typo'd field also makes the real one "missing": report the typo, which is the cause.
    error = next((e for e in errors if e["type"] == "extra_forbidden"), errors[0])
    loc = [
        part
        for part in error["loc"]
        if not (isinstance(part, str) and ("[" in part or part.startswith("function-")))
    ]
    kind = error["type"]
    path = field_path(loc)
    if kind == "extra_forbidden":
        known = _known_fields(root, loc[:-1])
        close = difflib.get_close_matches(str(loc[-1]), known, n=1, cutoff=0.6)
        hint = f' (did you mean "{close[0]}"?)' if close else ""
        return path, f"unknown field{hint}"
    if kind == "missing":
        return path, "required field is missing"
    message = error["msg"].removeprefix("Value error, ").removeprefix("Assertion failed, ")
    if (
        kind not in ("value_error", "assertion_error")
        and "input" in error
        and not isinstance(error["input"], dict | list)
    ):
        message = f"{message}, got {error['input']!r}"
    return path, message


def field_path(loc: list) -> str:
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def _known_fields(model: type[BaseModel], loc: list) -> list[str]:
    """The field names the model allows at `loc` (for did-you-mean hints)."""
    annotation: Any = model
    for part in loc:
        annotation = _unwrap(annotation)
        if isinstance(part, int):
            args = typing.get_args(annotation)
            annotation = args[0] if args else Any
            continue
        if (
            isinstance(annotation, type)
            and issubclass(annotation, BaseModel)
            and part in annotation.model_fields
        ):
            annotation = annotation.model_fields[part].annotation
        else:
            return []
    annotation = _unwrap(annotation)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return list(annotation.model_fields)
    return []


def _unwrap(annotation: Any) -> Any:
    """`X | None` -> X, `Annotated[X, ...]` -> X."""
    origin = typing.get_origin(annotation)
    if origin is Annotated:
        return _unwrap(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        return _unwrap(args[0]) if len(args) == 1 else annotation
    return annotation
