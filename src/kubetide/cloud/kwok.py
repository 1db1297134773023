"""The kwok cloud provider: node groups whose "machines" are Node objects that KWOK animates.

As the Cluster Autoscaler's kwok provider does it: growing a group creates Node objects from the
group's template (a unique name, the group label, providerID `kwok://<name>` and the annotation
`kwok.x-k8s.io/node: fake`, so a KWOK controller heartbeats them and runs their pods); deleting
an instance deletes its Node. Groups come from the same nodeGroups schema as scenarios and
`kubetide plan --node-groups` (GROUPS.yaml), with `template` and `maxSize` required, since there
may be no node to copy them from.

Membership goes by the group label (`kubetide.io/node-group`, or the first provider label a node
carries, as `plan` infers it). The view tells which nodes exist; nodes this provider created
that the view has not seen yet are CREATING instances, nodes it deleted that the view still
shows are DELETING, so target sizes move at once, as a cloud's desired capacity would.

Any cluster where you may create Node objects can run kubetide this way (a laptop cluster with
KWOK, or the tests' control plane), which is what makes `kubetide run` easy to try.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from kubetide.autoscaler.ports import ActionError, Instance, InstanceState
from kubetide.cloud.schema import SpecError
from kubetide.cloud.static import GroupDefinition, group_key, load_groups_file
from kubetide.kube.client import ApiError, KubeClient
from kubetide.model import Node
from kubetide.model.node import HOSTNAME_LABEL
from kubetide.model.quantity import format_quantity
from kubetide.snapshot import ClusterSnapshot

KWOK_ANNOTATION = "kwok.x-k8s.io/node"
PROVIDER_ID_PREFIX = "kwok://"


def node_manifest(template: Node, name: str) -> dict[str, Any]:
    """The Node object a new instance of a group registers as."""
    labels = {**template.labels, HOSTNAME_LABEL: name}
    taints = [
        {"key": t.key, "effect": t.effect, **({"value": t.value} if t.value else {})} for t in template.taints
    ]
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": labels,
            "annotations": {KWOK_ANNOTATION: "fake"},
        },
        "spec": {"providerID": PROVIDER_ID_PREFIX + name, **({"taints": taints} if taints else {})},
        "status": {
            "allocatable": {r: format_quantity(r, v) for r, v in template.allocatable.items()},
            "capacity": {
                r: format_quantity(r, v) for r, v in (template.capacity or template.allocatable).items()
            },
        },
    }


class KwokNodeGroup:
    def __init__(self, definition: GroupDefinition, client: KubeClient, nodes: Callable[[], ClusterSnapshot]):
        assert definition.template is not None and definition.max_size is not None  # checked by load
        self.definition = definition
        self.client = client
        self._snapshot = nodes
        self._template = definition.template
        self._creating: set[str] = set()  # created, not yet in the view
        self._deleting: set[str] = set()  # deleted, still in the view

    @property
    def id(self) -> str:
        return self.definition.name

    @property
    def min_size(self) -> int:
        return self.definition.min_size

    @property
    def max_size(self) -> int:
        assert self.definition.max_size is not None
        return self.definition.max_size

    def _members(self) -> list[Node]:
        snapshot = self._snapshot()
        members = []
        for node in snapshot.nodes():
            key = group_key(node)
            if key is not None and key[1] == self.id:
                members.append(node)
        seen = {n.name for n in members}
        self._creating &= {n for n in self._creating if n not in snapshot}
        self._deleting &= seen
        return members

    def target_size(self) -> int:
        members = self._members()
        return len(members) - len(self._deleting) + len(self._creating)

    def increase_size(self, delta: int) -> None:
        if delta <= 0:
            raise ActionError(f"{self.id}: size increase must be positive, got {delta}")
        target = self.target_size()
        if target + delta > self.max_size:
            raise ActionError(f"{self.id}: size increase too large: {target} + {delta} > max {self.max_size}")
        for _ in range(delta):
            name = f"{self.id}-{secrets.token_hex(3)}"
            try:
                self.client.request("POST", "/api/v1/nodes", body=node_manifest(self._template, name))
            except ApiError as exc:
                raise ActionError(f"{self.id}: creating node {name}: {exc}") from None
            self._creating.add(name)

    def decrease_target_size(self, delta: int) -> None:
        # Nodes are created whole and at once: there is never a request that is not yet a node.
        self._members()
        if -delta > len(self._creating):
            raise ActionError(
                f"{self.id}: cannot decrease the target by {-delta}: only {len(self._creating)} "
                "requested nodes have not registered"
            )

    def delete_nodes(self, nodes: Sequence[Node]) -> None:
        for node in nodes:
            try:
                self.client.request("DELETE", f"/api/v1/nodes/{node.name}")
            except ApiError as exc:
                if exc.status != 404:
                    raise ActionError(f"{self.id}: deleting node {node.name}: {exc}") from None
            self._creating.discard(node.name)
            if node.name in self._snapshot():
                self._deleting.add(node.name)

    def instances(self) -> Sequence[Instance]:
        result = [
            Instance(
                node.provider_id or PROVIDER_ID_PREFIX + node.name,
                InstanceState.DELETING if node.name in self._deleting else InstanceState.RUNNING,
            )
            for node in self._members()
        ]
        result += [
            Instance(PROVIDER_ID_PREFIX + name, InstanceState.CREATING) for name in sorted(self._creating)
        ]
        return result

    def template_node(self) -> Node:
        return self._template

    def price_per_hour(self) -> float:
        return self.definition.price


class KwokCloudProvider:
    def __init__(self, groups: Sequence[KwokNodeGroup]):
        self.groups = {g.id: g for g in groups}

    def node_groups(self) -> Sequence[KwokNodeGroup]:
        return list(self.groups.values())

    def node_group_for(self, node: Node) -> KwokNodeGroup | None:
        key = group_key(node)
        return self.groups.get(key[1]) if key is not None else None

    @staticmethod
    def check_file(path: str | Path) -> list[GroupDefinition]:
        """GROUPS.yaml's groups; a group without `template` or `maxSize` is a SpecError."""
        definitions = load_groups_file(path)
        for d in definitions:
            if d.template is None:
                raise SpecError(d.source, f"{d.field}.template", "required by the kwok provider")
            if d.max_size is None:
                raise SpecError(d.source, f"{d.field}.maxSize", "required by the kwok provider")
        return definitions

    @classmethod
    def from_file(
        cls, path: str | Path, client: KubeClient, snapshot: Callable[[], ClusterSnapshot]
    ) -> KwokCloudProvider:
        return cls([KwokNodeGroup(d, client, snapshot) for d in cls.check_file(path)])
