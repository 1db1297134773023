"""A read-only CloudProvider over a cluster dump, for `kubetide plan`.

Node groups come from GROUPS.yaml or, without one, from the nodes' labels. A node's *group key*
is the value of the first of these labels it carries (non-empty):

    kubetide.io/node-group, eks.amazonaws.com/nodegroup, cloud.google.com/gke-nodepool,
    kubernetes.azure.com/agentpool, karpenter.sh/nodepool

- Inferred (no GROUPS.yaml): one group per distinct key, min 0, max 10 x its current nodes,
  price 0, its template copied from one of its nodes (below).
- GROUPS.yaml: exactly the groups it lists (like the Cluster Autoscaler's `--nodes` flag: groups
  not listed are not managed). It takes the scenario's nodeGroups schema (cloud/schema.py), so a
  scenario's groups can be pasted; the simulator-only fields (initialSize, the delays) are
  accepted and ignored. Two things may be left out, since the dump can supply them: `template`
  (copied from a node of the group) and `maxSize` (10 x current). A group's nodes are those
  whose key equals its name, so names follow label-value syntax here.

Nodes whose key names no group, or that carry none of the labels, are not autoscaled.

A template copied from a node keeps what a new node of the group would share with it: its labels
minus per-node ones (`kubernetes.io/hostname`, and any label whose value is the node's own name),
its taints minus the autoscaler's and node-lifecycle ones, its allocatable and capacity. The node
is the first Ready, schedulable one not being deleted, in dump order (else the first).

Sizes never change: the target size is the number of the group's nodes in the dump, instances
are the nodes that carry a spec.providerID (RUNNING, id = providerID), and increase_size,
decrease_target_size and delete_nodes only record what would be asked (`calls`) and never fail:
this cloud serves a plan, not a cluster.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import Field, ValidationError, model_validator

from kubetide.autoscaler.ports import TO_BE_DELETED_TAINT, Instance, InstanceState
from kubetide.autoscaler.scaleup.template import sanitize_taints
from kubetide.cloud.schema import (
    NODE_GROUP_LABEL,
    NodeGroupSpec,
    SpecError,
    StrictModel,
    first_error,
    parse_template,
    read_spec_documents,
)
from kubetide.model import Node, ObjectMeta
from kubetide.model.node import HOSTNAME_LABEL

# In order: the first one a node carries names its group.
GROUP_LABELS = (
    NODE_GROUP_LABEL,
    "eks.amazonaws.com/nodegroup",
    "cloud.google.com/gke-nodepool",
    "kubernetes.azure.com/agentpool",
    "karpenter.sh/nodepool",
)
# An inferred group (or a GROUPS.yaml group without maxSize) may grow to this many times its nodes.
INFERRED_MAX_FACTOR = 10
# Labels that belong to one node, not to its group.
PER_NODE_LABELS = frozenset({HOSTNAME_LABEL})
# Taints of one node's lifecycle beyond those scale-up's template sanitiser drops.
LIFECYCLE_TAINTS = frozenset(
    {
        "node.cloudprovider.kubernetes.io/shutdown",
        "karpenter.sh/disrupted",
        "karpenter.sh/disruption",
        "karpenter.sh/unregistered",
    }
)
GROUPS_YAML = "GROUPS.yaml"


def group_key(node: Node) -> tuple[str, str] | None:
    """(label, value) of the first group label the node carries, or None."""
    labels = node.labels
    for label in GROUP_LABELS:
        value = labels.get(label)
        if value:
            return label, value
    return None


def template_from_node(node: Node, group: str) -> Node:
    """What a new node of `group` would look like, judging by this one (see the module docstring)."""
    labels = {k: v for k, v in node.labels.items() if k not in PER_NODE_LABELS and v != node.name}
    taints = tuple(t for t in sanitize_taints(node.taints) if t.key not in LIFECYCLE_TAINTS)
    return Node(
        meta=ObjectMeta(f"{group}-template", labels=labels),
        allocatable=dict(node.allocatable),
        capacity=dict(node.capacity),
        taints=taints,
        unschedulable=False,
        ready=True,
    )


def template_source(nodes: Sequence[Node]) -> Node:
    """The node a group's template is copied from (see the module docstring)."""
    for node in nodes:
        if node.ready and not node.unschedulable and not node.has_taint(TO_BE_DELETED_TAINT):
            return node
    return nodes[0]


# -- GROUPS.yaml ------------------------------------------------------------------------------


class GroupEntry(NodeGroupSpec):
    """One GROUPS.yaml group: the scenario's schema with template and maxSize optional."""

    # The name must equal the group label's value on the group's nodes.
    name: str = Field(min_length=1, max_length=63, pattern=r"^[A-Za-z0-9]([-_.A-Za-z0-9]*[A-Za-z0-9])?$")
    # Optional here, required in scenarios: pydantic allows a subclass to widen a field, mypy
    # does not know that it does.
    maxSize: int | None = Field(default=None, ge=0)  # type: ignore[assignment]
    template: dict[str, Any] | None = None  # type: ignore[assignment]

    @model_validator(mode="after")
    def _sizes(self) -> GroupEntry:  # replaces the scenario's check (initialSize is not used here)
        if self.maxSize is not None and self.maxSize < self.minSize:
            raise ValueError(f"maxSize ({self.maxSize}) is less than minSize ({self.minSize})")
        return self


class GroupsFile(StrictModel):
    nodeGroups: list[GroupEntry] = Field(min_length=1)


@dataclass(frozen=True)
class GroupDefinition:
    """A validated GROUPS.yaml entry; `field` is where it came from, for later errors."""

    name: str
    min_size: int
    max_size: int | None
    price: float
    template: Node | None
    source: str
    field: str


def load_groups_file(path: str | Path) -> list[GroupDefinition]:
    """Read GROUPS.yaml: `nodeGroups: [...]`, or just the list. Raises SpecError."""
    return groups_from_documents(read_spec_documents(path), str(path))


def groups_from_documents(documents: list[Any], source: str) -> list[GroupDefinition]:
    """The node groups of a file's decoded documents (cli/inputs.py reads `-` and checks the kind)."""
    if len(documents) != 1:
        raise SpecError(source, "", "expected one YAML document with nodeGroups")
    return parse_groups(documents[0], source)


def parse_groups(data: Any, source: str) -> list[GroupDefinition]:
    bare = isinstance(data, list)
    if bare:
        data = {"nodeGroups": data}
    elif not isinstance(data, Mapping):
        raise SpecError(source, "", "expected a mapping with nodeGroups, or a list of node groups")
    try:
        parsed = GroupsFile.model_validate(data)
    except ValidationError as exc:
        path, message = first_error(exc, GroupsFile)
        if bare:
            path = path.removeprefix("nodeGroups")
        raise SpecError(source, path, message) from None
    prefix = "" if bare else "nodeGroups"
    result = []
    seen: set[str] = set()
    for index, entry in enumerate(parsed.nodeGroups):
        where = f"{prefix}[{index}]"
        if entry.name in seen:
            raise SpecError(source, f"{where}.name", f'duplicate node group "{entry.name}"')
        seen.add(entry.name)
        template = None
        if entry.template is not None:
            template = parse_template(entry.template, entry.name, source, f"{where}.template")
        result.append(
            GroupDefinition(entry.name, entry.minSize, entry.maxSize, entry.price, template, source, where)
        )
    return result


# -- the provider -------------------------------------------------------------------------------


class StaticNodeGroup:
    """The NodeGroup port over a fixed set of nodes; calls that would change it are recorded.

    Deletions follow the port's contract, so the min-size check counts each once: a node passed
    to `delete_nodes` leaves the target at once and its instance is DELETING (the node stays in
    `nodes`: the dump does not change). A node without a providerID has no instance to show
    that, so its deletion is left in the target instead (counted once, as in progress)."""

    def __init__(
        self,
        name: str,
        nodes: Sequence[Node],
        template: Node,
        *,
        min_size: int = 0,
        max_size: int | None = None,
        price: float = 0.0,
        origin: str = "",
    ):
        self._id = name
        self.nodes: tuple[Node, ...] = tuple(nodes)
        self._template = template
        self._min_size = min_size
        self._max_size = INFERRED_MAX_FACTOR * len(self.nodes) if max_size is None else max_size
        self._price = price
        self.origin = origin  # GROUPS.yaml, or the label the group was inferred from
        self.calls: list[tuple[str, Any]] = []
        self.deleting: set[str] = set()  # provider IDs of the nodes delete_nodes was asked for

    @property
    def id(self) -> str:
        return self._id

    @property
    def min_size(self) -> int:
        return self._min_size

    @property
    def max_size(self) -> int:
        return self._max_size

    def target_size(self) -> int:
        return len(self.nodes) - len(self.deleting)

    def increase_size(self, delta: int) -> None:
        self.calls.append(("increase_size", delta))

    def decrease_target_size(self, delta: int) -> None:
        self.calls.append(("decrease_target_size", delta))

    def delete_nodes(self, nodes: Sequence[Node]) -> None:
        self.calls.append(("delete_nodes", [n.name for n in nodes]))
        mine = {n.provider_id for n in self.nodes if n.provider_id}
        self.deleting |= {n.provider_id for n in nodes if n.provider_id in mine}

    def instances(self) -> Sequence[Instance]:
        return [
            Instance(
                n.provider_id,
                InstanceState.DELETING if n.provider_id in self.deleting else InstanceState.RUNNING,
            )
            for n in self.nodes
            if n.provider_id
        ]

    def template_node(self) -> Node:
        return self._template

    def price_per_hour(self) -> float:
        return self._price


class StaticCloud:
    """The CloudProvider port over StaticNodeGroups; membership goes by group key."""

    def __init__(self, groups: Iterable[StaticNodeGroup], warnings: Sequence[str] = ()):
        self.groups = {g.id: g for g in groups}
        self.warnings = list(warnings)

    def node_groups(self) -> Sequence[StaticNodeGroup]:
        return list(self.groups.values())

    def node_group_for(self, node: Node) -> StaticNodeGroup | None:
        key = group_key(node)
        return self.groups.get(key[1]) if key is not None else None

    @classmethod
    def from_nodes(
        cls, nodes: Sequence[Node], definitions: Sequence[GroupDefinition] | None = None
    ) -> StaticCloud:
        """Groups for these nodes: inferred from labels, or as GROUPS.yaml defines them.

        Raises SpecError (naming the GROUPS.yaml field) when a group without template or maxSize
        has no node to take them from.
        """
        members: dict[str, list[Node]] = {}
        labels: dict[str, str] = {}
        for node in nodes:
            key = group_key(node)
            if key is not None:
                members.setdefault(key[1], []).append(node)
                labels.setdefault(key[1], key[0])
        if definitions is None:
            groups = [
                StaticNodeGroup(
                    name,
                    group_nodes,
                    template_from_node(template_source(group_nodes), name),
                    origin=labels[name],
                )
                for name, group_nodes in members.items()
            ]
            return cls(groups)

        groups, warnings = [], []
        for d in definitions:
            group_nodes = members.get(d.name, [])
            if not group_nodes and (d.template is None or d.max_size is None):
                missing = "template" if d.template is None else "maxSize"
                close = difflib.get_close_matches(d.name, list(members), n=1)
                hint = f' (did you mean "{close[0]}"?)' if close else ""
                raise SpecError(
                    d.source,
                    f"{d.field}.{missing}",
                    f'required: no node of group "{d.name}" is in the dump to take it from{hint}',
                )
            template = d.template or template_from_node(template_source(group_nodes), d.name)
            group = StaticNodeGroup(
                d.name,
                group_nodes,
                template,
                min_size=d.min_size,
                max_size=d.max_size,
                price=d.price,
                origin=GROUPS_YAML,
            )
            if group.target_size() > group.max_size:
                warnings.append(
                    f"node group {d.name} has {group.target_size()} nodes, more than its maxSize "
                    f"{group.max_size}: it cannot grow"
                )
            elif group.target_size() < group.min_size:
                warnings.append(
                    f"node group {d.name} has {group.target_size()} nodes, fewer than its minSize "
                    f"{group.min_size}"
                )
            groups.append(group)
        defined = {d.name for d in definitions}
        for name, group_nodes in members.items():
            if name not in defined:
                close = difflib.get_close_matches(name, sorted(defined), n=1)
                hint = f' (did you mean "{close[0]}"?)' if close else ""
                warnings.append(
                    f"{len(group_nodes)} node(s) carry {labels[name]}={name}, a group "
                    f"{definitions[0].source} does not define{hint}: not autoscaled"
                )
        return cls(groups, warnings)
