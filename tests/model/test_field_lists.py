"""One declared field list per kind, and both parsers checked against it.

Every kind is read twice over: by the path-aware Reader (the reference: model/pod.py, node.py,
policy.py, workloads.py, cronjob.py, hpa.py) and by the wire schema decoded in C (model/wire.py,
wire_workloads.py, with the *_typed.py builders). A field added to one and not the other is read on
one path only: a dump then decides differently as JSON (schema) and as YAML the screens refuse
(Reader). The wire Structs are the declared lists (a decoder reads nothing else); their field
paths are derived from the Structs by msgspec's own type inspection, and the Reader's are recorded
while it parses a full object of the kind, so neither list is written by hand and neither can drift.

- A field the Reader asks for must be declared, or lie under a declared field the schema keeps
  whole (a map, or a value handed to the Reader's own parsers: `spec.affinity`, `spec.template.spec`);
- a declared field must be one the Reader asks for: the schema decodes nothing the reference
  ignores.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any

import msgspec
import pytest
from test_node_typed import FULL_NODE
from test_pod_typed import FULL_POD
from test_workloads_typed import FULL as FULL_WORKLOADS

from kubetide.model.cronjob import parse_cronjob
from kubetide.model.hpa import parse_hpa
from kubetide.model.node import parse_node
from kubetide.model.pod import parse_pod
from kubetide.model.policy import parse_configmap, parse_namespace, parse_pdb, parse_priority_class
from kubetide.model.reader import Reader
from kubetide.model.wire import (
    NamespaceWire,
    NodeWire,
    PodDisruptionBudgetWire,
    PodWire,
    PriorityClassWire,
)
from kubetide.model.wire_workloads import (
    ConfigMapWire,
    CronJobWire,
    HorizontalPodAutoscalerWire,
    WorkloadWire,
)
from kubetide.model.workloads import WORKLOAD_KINDS, parse_workload

# Read by the loader on both paths, before and beside either parser: `kind` to dispatch (the
# schema declares it so that a batch of List items decodes as pods in one pass, model/stream.py),
# the name and namespace to name the object (`Kind namespace/name`, typed.label and the loader's
# own for dicts), of cluster-scoped kinds too.
LOADER = frozenset({"kind", "metadata.name", "metadata.namespace"})


def _meta(name: str, namespace: str | None = "shop", **extra: Any) -> dict[str, Any]:
    meta = {
        "name": name,
        "uid": f"{name}-uid",
        "creationTimestamp": "2026-11-01T00:00:00Z",
        "deletionTimestamp": "2026-11-02T00:00:00Z",
        "labels": {"app": "web"},
        "annotations": {"a": "b"},
        "ownerReferences": [{"apiVersion": "v1", "kind": "X", "name": "x", "uid": "x", "controller": True}],
        **extra,
    }
    if namespace is not None:
        meta["namespace"] = namespace
    return meta


PDB = {
    "kind": "PodDisruptionBudget",
    "metadata": _meta("budget"),
    "spec": {
        "maxUnavailable": 1,
        "selector": {"matchLabels": {"app": "web"}},
        "unhealthyPodEvictionPolicy": "AlwaysAllow",
    },
    "status": {"disruptionsAllowed": 1, "currentHealthy": 3, "desiredHealthy": 2, "expectedPods": 3},
}
PRIORITY_CLASS = {
    "kind": "PriorityClass",
    "metadata": _meta("high", namespace=None),
    "value": 1000,
    "globalDefault": False,
    "preemptionPolicy": "Never",
}
NAMESPACE = {"kind": "Namespace", "metadata": _meta("shop", namespace=None)}

# Each wire Struct, the reference parser of every kind it declares, and a full object of each: the
# Reader records the fields it asks for on the way (an absent one is asked for all the same).
Parse = Callable[[Reader], Any]


def full_meta(data: dict[str, Any]) -> dict[str, Any]:
    """The object with every metadata field the API server writes (owner references included: a
    list's element fields are asked for only when it has an element)."""
    meta = data["metadata"]
    return {**data, "metadata": {**_meta(meta["name"], meta.get("namespace")), **meta}}


KINDS: dict[str, tuple[type[msgspec.Struct], list[tuple[Parse, dict[str, Any]]]]] = {
    "Pod": (PodWire, [(parse_pod, full_meta(FULL_POD))]),
    "Node": (NodeWire, [(parse_node, full_meta(FULL_NODE))]),
    "PodDisruptionBudget": (PodDisruptionBudgetWire, [(parse_pdb, full_meta(PDB))]),
    "PriorityClass": (PriorityClassWire, [(parse_priority_class, full_meta(PRIORITY_CLASS))]),
    "Namespace": (NamespaceWire, [(parse_namespace, full_meta(NAMESPACE))]),
    # One Struct for the five workload kinds: each reads its own part of it.
    "workloads": (
        WorkloadWire,
        [
            (lambda r, k=kind: parse_workload(r, k), full_meta(FULL_WORKLOADS[kind]))
            for kind in sorted(WORKLOAD_KINDS)
        ],
    ),
    "CronJob": (CronJobWire, [(parse_cronjob, full_meta(FULL_WORKLOADS["CronJob"]))]),
    "HorizontalPodAutoscaler": (
        HorizontalPodAutoscalerWire,
        [(parse_hpa, full_meta(FULL_WORKLOADS["HorizontalPodAutoscaler"]))],
    ),
    "ConfigMap": (ConfigMapWire, [(parse_configmap, full_meta(FULL_WORKLOADS["ConfigMap"]))]),
}


# -- the schema's fields ----------------------------------------------------------------------


def declared_fields(wire: type[msgspec.Struct]) -> tuple[frozenset[str], frozenset[str], frozenset[str]]:
    """(every field path the Struct declares, the paths it keeps whole: maps and values left to the
    Reader's parsers, whose keys it does not name, and the paths of Structs that refuse any key
    they do not name: a volume). Paths as the manifest spells them, a list's elements as `[]`:
    `spec.containers[].resources.requests`."""
    fields: set[str] = set()
    whole: set[str] = set()
    closed: set[str] = set()

    def walk(info: msgspec.inspect.Type, path: str) -> None:
        if isinstance(info, msgspec.inspect.UnionType):
            for member in info.types:
                walk(member, path)
        elif isinstance(info, msgspec.inspect.StructType):
            if info.forbid_unknown_fields:
                closed.add(path)
            for field in info.fields:
                child = f"{path}.{field.encode_name}" if path else field.encode_name
                fields.add(child)
                walk(field.type, child)
        elif isinstance(info, msgspec.inspect.ListType):
            walk(info.item_type, f"{path}[]")
        elif isinstance(info, msgspec.inspect.DictType | msgspec.inspect.AnyType):
            whole.add(path)

    walk(msgspec.inspect.type_info(wire), "")
    return frozenset(fields), frozenset(whole), frozenset(closed)


# -- the Reader's fields ----------------------------------------------------------------------

_INDEX = re.compile(r"\[\d+\]")


class _Recorded(dict):
    """A mapping handed out by Reader._mapping that notes every key asked of it, and, when it is
    walked whole (a map, or a volume's one source key), every key at once (`path.*`)."""

    def __init__(self, data: dict, path: str, sink: set[str]):
        super().__init__(data)
        self._path = _INDEX.sub("[]", path)
        self._sink = sink

    def _note(self, key: object) -> None:
        self._sink.add(f"{self._path}.{key}" if self._path else str(key))

    def get(self, key, default=None):
        self._note(key)
        return super().get(key, default)

    def __getitem__(self, key):
        self._note(key)
        return super().__getitem__(key)

    def __contains__(self, key):
        self._note(key)
        return super().__contains__(key)

    def _whole(self) -> None:
        self._note("*")

    def __iter__(self):
        self._whole()
        return super().__iter__()

    def items(self):
        self._whole()
        return super().items()

    def keys(self):
        self._whole()
        return super().keys()

    def values(self):
        self._whole()
        return super().values()


def _mappings(data: Any) -> Iterable[dict]:
    if isinstance(data, dict):
        yield data
        for value in data.values():
            yield from _mappings(value)
    elif isinstance(data, list):
        for value in data:
            yield from _mappings(value)


def read_fields(entries: Iterable[tuple[Parse, dict[str, Any]]], monkeypatch: pytest.MonkeyPatch) -> set[str]:
    """The field paths the Reader asks for while each parser reads its full object."""
    sink: set[str] = set()
    original = Reader._mapping
    # Only the manifest's own mappings: a parser may hand the Reader one it made (parse_cronjob's
    # Job, named after the CronJob), whose keys are not the manifest's fields.
    manifests = {id(mapping) for _, data in entries for mapping in _mappings(data)}

    def recording(self: Reader) -> dict:
        mapping = original(self)
        return _Recorded(mapping, self.path, sink) if id(mapping) in manifests else mapping

    with monkeypatch.context() as patch:
        patch.setattr(Reader, "_mapping", recording)
        for parse, data in entries:
            parse(Reader(data, "dump.json", "items[0]"))
    return sink


def _under(path: str, roots: Iterable[str]) -> bool:
    return any(path.startswith((f"{root}.", f"{root}[]")) for root in roots)


# -- the checks -------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_every_field_the_reader_reads_is_declared_by_the_schema(kind, monkeypatch):
    wire, entries = KINDS[kind]
    fields, whole, closed = declared_fields(wire)
    read = read_fields(entries, monkeypatch)
    undeclared = sorted(
        path
        for path in read
        if path not in fields and not path.endswith(".*") and not _under(path, whole) and path not in LOADER
    )
    # A mapping walked whole must be one whose every key the schema accounts for.
    walked = sorted(
        path.removesuffix(".*")
        for path in read
        if path.endswith(".*") and path.removesuffix(".*") not in whole | closed and not _under(path, whole)
    )
    assert undeclared == [], f"{kind}: the Reader reads fields {wire.__name__} does not declare"
    assert walked == [], f"{kind}: the Reader reads every key of mappings {wire.__name__} does not keep whole"


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_every_field_the_schema_declares_is_read_by_the_reader(kind, monkeypatch):
    wire, entries = KINDS[kind]
    fields, _, _ = declared_fields(wire)
    read = read_fields(entries, monkeypatch)
    unread = sorted(
        path
        for path in fields - LOADER
        if path not in read
        and not any(r.startswith((f"{path}.", f"{path}[]")) for r in read)
        and not any(path.startswith(f"{r.removesuffix('.*')}.") for r in read if r.endswith(".*"))
    )
    assert unread == [], f"{kind}: {wire.__name__} declares fields the Reader never reads"


class _NarrowMeta(msgspec.Struct, rename="camel"):
    name: str = ""
    generate_name: str = ""  # the Reader's parse_namespace never reads it


class _Narrow(msgspec.Struct, rename="camel"):
    metadata: _NarrowMeta


def test_the_recording_sees_a_field_read_on_one_path_only(monkeypatch):
    """The check can fail: a Struct declaring a field the Reader never asks for is caught, and a
    Reader field missing from a Struct too."""

    fields, _, _ = declared_fields(_Narrow)
    read = read_fields([(parse_namespace, NAMESPACE)], monkeypatch)
    assert "metadata.generateName" in fields and "metadata.generateName" not in read
    assert "metadata.labels" in read and "metadata.labels" not in fields
