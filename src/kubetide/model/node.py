"""Node, Taint and Toleration."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from kubetide.model.meta import ObjectIdentity, ObjectMeta, parse_meta
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
class Node(ObjectIdentity):
    meta: ObjectMeta
    allocatable: dict[str, int]
    capacity: dict[str, int]
    taints: tuple[Taint, ...] = ()
    unschedulable: bool = False
    ready: bool = True
    ready_transition: float | None = None
    provider_id: str = ""

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


# What makes a node not ready besides its Ready condition, as the Cluster Autoscaler judges it
# (utils/kubernetes/ready.go): disk or network trouble by condition, or one of the taints the node
# lifecycle controller puts on such nodes. A node that reports Ready while it still carries
# node.kubernetes.io/not-ready takes no pods yet, so counting it as capacity would ask for its
# pods' node a second time.
TROUBLE_CONDITIONS = ("DiskPressure", "NetworkUnavailable")
NOT_READY_TAINTS = frozenset(
    {
        "node.kubernetes.io/not-ready",
        "node.kubernetes.io/disk-pressure",
        "node.kubernetes.io/network-unavailable",
    }
)


def readiness(
    conditions: Iterable[tuple[str | None, str | None, float | None]],
    taints: tuple[Taint, ...],
    created: float | None,
) -> tuple[bool, float | None]:
    """Whether the node is ready, and since when it has been what it is: the latest transition of
    those conditions ((type, status, lastTransitionTime) each) and of those taints (the creation
    time without any). A node without a Ready condition (a hand-written dump) counts as ready.
    Both node parsers (the Reader's here, the wire schema's in node_typed.py) decide it here."""
    ready, latest = True, None
    for kind, value, changed in conditions:
        if kind != "Ready" and kind not in TROUBLE_CONDITIONS:
            continue
        if (kind == "Ready") != (value == "True"):
            ready = False
        if changed is not None and (latest is None or changed > latest):
            latest = changed
    for taint in taints:
        if taint.key in NOT_READY_TAINTS:
            ready = False
            if taint.time_added is not None and (latest is None or taint.time_added > latest):
                latest = taint.time_added
    return ready, created if latest is None else latest


def parse_node(reader: Reader) -> Node:
    meta = parse_meta(reader, "Node", namespaced=False)
    spec = reader.child("spec")
    status = reader.child("status")
    capacity = status.resources("capacity")
    allocatable = status.resources("allocatable") or dict(capacity)
    for name, amount in capacity.items():
        allocatable.setdefault(name, amount)
    taints = tuple(parse_taint(t) for t in spec.items("taints"))
    conditions = (
        (c.str("type"), c.str("status"), c.timestamp("lastTransitionTime"))
        for c in status.items("conditions")
    )
    ready, transition = readiness(conditions, taints, meta.creation_timestamp)
    labels = meta.labels
    if HOSTNAME_LABEL not in labels:
        labels[HOSTNAME_LABEL] = meta.name
    return Node(
        meta=meta,
        allocatable=allocatable,
        capacity=capacity or dict(allocatable),
        taints=taints,
        unschedulable=spec.bool("unschedulable"),
        ready=ready,
        ready_transition=transition,
        provider_id=spec.str("providerID", default=""),
    )
