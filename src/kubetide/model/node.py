"""Node, Taint and Toleration."""

from __future__ import annotations

from dataclasses import dataclass

from kubetide.model.meta import ObjectMeta, parse_meta
from kubetide.model.reader import Reader

TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")

# Well-known labels the scheduler and autoscaler look at.
HOSTNAME_LABEL = "kubernetes.io/hostname"
ZONE_LABEL = "topology.kubernetes.io/zone"
REGION_LABEL = "topology.kubernetes.io/region"
UNSCHEDULABLE_TAINT = "node.kubernetes.io/unschedulable"


@dataclass(frozen=True, slots=True)
class Taint:
    key: str
    value: str = ""
    effect: str = "NoSchedule"
    time_added: float | None = None


@dataclass(frozen=True, slots=True)
class Toleration:
    key: str = ""
    operator: str = "Equal"
    value: str = ""
    effect: str = ""
    toleration_seconds: int | None = None

    def tolerates(self, taint: Taint) -> bool:
        if self.effect and self.effect != taint.effect:
            return False
        if not self.key:
            # An empty key is only valid with Exists, and then tolerates everything.
            return self.operator == "Exists"
        if self.key != taint.key:
            return False
        if self.operator == "Exists":
            return True
        return self.value == taint.value


@dataclass(frozen=True, slots=True)
class Node:
    meta: ObjectMeta
    allocatable: dict[str, int]
    capacity: dict[str, int]
    taints: tuple[Taint, ...] = ()
    unschedulable: bool = False
    ready: bool = True
    ready_transition: float | None = None
    provider_id: str = ""

    @property
    def name(self) -> str:
        return self.meta.name

    @property
    def labels(self) -> dict[str, str]:
        return self.meta.labels

    @property
    def annotations(self) -> dict[str, str]:
        return self.meta.annotations

    def has_taint(self, key: str) -> bool:
        return any(t.key == key for t in self.taints)


def parse_taint(reader: Reader) -> Taint:
    effect = reader.str("effect", required=True)
    if effect not in TAINT_EFFECTS:
        raise reader.error(
            f'unknown taint effect "{effect}" (expected one of {", ".join(TAINT_EFFECTS)})', "effect"
        )
    return Taint(
        key=reader.str("key", required=True),
        value=reader.str("value", default=""),
        effect=effect,
        time_added=reader.timestamp("timeAdded"),
    )


def parse_toleration(reader: Reader) -> Toleration:
    operator = reader.str("operator", default="Equal")
    if operator not in ("Equal", "Exists"):
        raise reader.error(f'unknown toleration operator "{operator}" (expected Equal or Exists)', "operator")
    key = reader.str("key", default="")
    if not key and operator != "Exists":
        raise reader.error("a toleration with an empty key must use operator Exists", "operator")
    effect = reader.str("effect", default="")
    if effect and effect not in TAINT_EFFECTS:
        raise reader.error(f'unknown taint effect "{effect}"', "effect")
    value = reader.str("value", default="")
    if operator == "Exists" and value:
        raise reader.error("a toleration with operator Exists takes no value", "value")
    return Toleration(key, operator, value, effect, reader.int("tolerationSeconds"))


def parse_node(reader: Reader) -> Node:
    meta = parse_meta(reader, "Node", namespaced=False)
    spec = reader.child("spec")
    status = reader.child("status")
    capacity = status.resources("capacity")
    allocatable = status.resources("allocatable") or dict(capacity)
    for name, amount in capacity.items():
        allocatable.setdefault(name, amount)
    ready, transition = True, meta.creation_timestamp
    for condition in status.items("conditions"):
        if condition.str("type") == "Ready":
            ready = condition.str("status") == "True"
            transition = condition.timestamp("lastTransitionTime") or transition
    labels = meta.labels
    if HOSTNAME_LABEL not in labels:
        labels[HOSTNAME_LABEL] = meta.name
    return Node(
        meta=meta,
        allocatable=allocatable,
        capacity=capacity or dict(allocatable),
        taints=tuple(parse_taint(t) for t in spec.items("taints")),
        unschedulable=spec.bool("unschedulable"),
        ready=ready,
        ready_transition=transition,
        provider_id=spec.str("providerID", default=""),
    )
