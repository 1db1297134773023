"""Nodes from the wire schema (model/wire.py): decoded in C, built into the model's Node here.

As for pods (model/pod_typed.py): what the types cannot check (names, labels, quantities, taint
effects) is checked here, and a node the API server would not have written, or an error, makes
`typed_node` return None: `parse_node` then reads it through the Reader, which alone words errors.
Node images, addresses, daemon endpoints and managedFields, most of a node's text, are skipped by
the decoder.
"""

from __future__ import annotations

import functools
from typing import Any

import msgspec

from kubetide.errors import ManifestError
from kubetide.model.node import (
    HOSTNAME_LABEL,
    TAINT_EFFECTS,
    Node,
    Taint,
    parse_node,
    readiness,
)
from kubetide.model.reader import Reader
from kubetide.model.typed import Declined, label, timestamp, typed_meta, units
from kubetide.model.wire import NodeWire, TaintWire

_NODE_DECODER = msgspec.json.Decoder(NodeWire)


def decode_node(text: bytes | str | msgspec.Raw) -> tuple[Node, str] | None:
    """The Node of one node's JSON text and the loader's name for it, or None: decode the text into
    dicts then, and parse_node_typed them."""
    try:
        wire = _NODE_DECODER.decode(text)
    except msgspec.MsgspecError:
        return None
    return labelled_node(wire)


def labelled_node(wire: NodeWire) -> tuple[Node, str] | None:
    node = typed_node(wire)
    return None if node is None else (node, label("Node", wire.metadata))


def convert_node(data: Any) -> Node | None:
    """The Node of an already-parsed node (YAML, or JSON read whole), or None: parse_node it."""
    try:
        wire = msgspec.convert(data, NodeWire)
    except msgspec.MsgspecError:
        return None
    return typed_node(wire)


def parse_node_typed(reader: Reader) -> Node:
    """parse_node's result, through the wire schema when the node is as the API server writes it."""
    node = convert_node(reader.data)
    return parse_node(reader) if node is None else node


def typed_node(wire: NodeWire) -> Node | None:
    try:
        return _node(wire)
    except (Declined, ManifestError):
        return None


def _resources(amounts: dict[str, str] | None) -> dict[str, int]:
    return {name: units(name, text) for name, text in amounts.items()} if amounts else {}


@functools.lru_cache(maxsize=4096)
def _taint(wire: TaintWire) -> Taint:
    """Nodes of one group carry the same taints: one (immutable) Taint for all of them."""
    if wire.effect not in TAINT_EFFECTS:
        raise Declined
    return Taint(wire.key, wire.value or "", wire.effect, timestamp(wire.time_added))


def _node(wire: NodeWire) -> Node:
    meta = typed_meta(wire.metadata, "Node", namespaced=False)
    spec, status = wire.spec, wire.status
    capacity = _resources(status.capacity) if status else {}
    allocatable = (_resources(status.allocatable) if status else {}) or dict(capacity)
    for name, amount in capacity.items():
        allocatable.setdefault(name, amount)
    taints = tuple(_taint(t) for t in spec.taints) if spec and spec.taints else ()
    conditions = (
        (c.type, c.status, timestamp(c.last_transition_time))
        for c in (status.conditions if status else None) or ()
    )
    ready, transition = readiness(conditions, taints, meta.creation_timestamp)
    if HOSTNAME_LABEL not in meta.labels:
        meta.labels[HOSTNAME_LABEL] = meta.name
    return Node(
        meta=meta,
        allocatable=allocatable,
        capacity=capacity or dict(allocatable),
        taints=taints,
        unschedulable=bool(spec and spec.unschedulable),
        ready=ready,
        ready_transition=transition,
        provider_id=(spec.provider_id if spec else None) or "",
    )
