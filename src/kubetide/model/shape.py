"""One pod shape: what tells two pods apart to the scheduler, computed once per pod.

Every consumer that asks "are these pods alike?" keys on this value: the PredicateChecker's
classes (scheduling/classes.py), scale-up's equivalence groups (autoscaler/scaleup/equivalence.py),
the drain simulation's stand-ins (autoscaler/scaledown/planning/placement.py) and the snapshot's per-request
caches. Before it there were three hand-written fingerprints and caches keyed on `id()` of spec
objects that only the fast parser shared; pods parsed by the Reader path missed them all.

What is in it: what kube-scheduler's filters and our scores read of a pod's spec, apart from its
node name (the NodeName filter's request, which a drain simulation clears):

- `requests`: the effective pod requests (`pods: 1` included), the resource vector NodeResourcesFit
  and the scores read;
- `nodes`: node selector, required and preferred node affinity, tolerations: what decides, node by
  node and independently of other pods, NodeAffinity, TaintToleration and their scores;
- `host_ports`: NodePorts;
- `affinity` and `topology_spread`: the pod's own inter-pod terms (InterPodAffinity,
  PodTopologySpread, both hard and soft).

What is not in it, and why:

- namespace and labels: they are the pod's identity in *other* pods' eyes (their selectors) and vary
  per pod (a StatefulSet's pod-name label), so each consumer adds them where its answer depends on
  them (a checker class only when the pod has inter-pod terms of its own; see `label_free`);
- limits, images, volumes, containers' names: no filter we model reads them (the volume filters are
  not modelled; drainability reads volumes per pod, not per shape);
- priority and schedulerName: they choose the queue position and the scheduler, not the node;
  scale-up equivalence adds them because a group is placed as one, at one queue position;
- owner references, status and the rest of the metadata: nothing the scheduler places by
  (drainability reads the owner, per pod).

Parts are values: equal fields mean equal objects (`==`, same hash), the hash is computed once, and
equal values are interned so that comparing the same shape is an identity check. Interning is only
a speed-up: a shape built outside `of()` still compares by value, so a cache keyed on shapes is
never wrong, at worst it misses. Parts are never changed after construction.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from typing import Any, ClassVar, Protocol, TypeVar

from kubetide.model.node import Toleration

# The spec's parts are model/pod.py's values (Affinity, TopologySpreadConstraint, HostPort); they
# are named here by what the shape reads of them, since pod.py builds every Pod's shape.


class Terms(Protocol):
    """A pod's affinity (model.pod.Affinity)."""

    @property
    def node_required(self) -> tuple[Hashable, ...] | None: ...
    @property
    def node_preferred(self) -> tuple[Hashable, ...]: ...
    @property
    def pod_required(self) -> tuple[Hashable, ...]: ...
    @property
    def anti_required(self) -> tuple[Hashable, ...]: ...


class SpreadTerm(Protocol):
    """One topology spread constraint (model.pod.TopologySpreadConstraint)."""

    @property
    def when_unsatisfiable(self) -> str: ...


V = TypeVar("V")

# Past this many distinct values a part's intern table starts afresh: interning saves memory and
# equality checks, and a long run must not keep every shape it ever saw.
_INTERN_LIMIT = 1 << 16


class _Value:
    """A value with named parts, compared by those parts, hashed once."""

    __slots__ = ("_hash", "_key")

    def __init__(self, key: tuple[Any, ...]):
        self._key = key
        self._hash = hash(key)

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if not isinstance(other, _Value) or type(other) is not type(self):
            return NotImplemented
        return self._hash == other._hash and self._key == other._key

    def __repr__(self) -> str:
        return f"{type(self).__name__}{self._key!r}"


def _intern(table: dict[tuple[Any, ...], V], key: tuple[Any, ...], make: Callable[[Any], V]) -> V:
    found = table.get(key)
    if found is None:
        if len(table) >= _INTERN_LIMIT:
            table.clear()
        found = table[key] = make(key)
    return found


class Resources(_Value):
    """Exact resource amounts (integer units by resource name) as a value.

    `amounts` is a mapping for lookups (never changed); `items` the (name, amount) pairs sorted
    by name, zero amounts included, which is what equality compares.
    """

    __slots__ = ("amounts", "items")
    _table: ClassVar[dict[tuple[Any, ...], Resources]] = {}

    def __init__(self, items: tuple[tuple[str, int], ...]):
        super().__init__(items)
        self.items = items
        self.amounts: Mapping[str, int] = dict(items)

    @classmethod
    def of(cls, amounts: Mapping[str, int]) -> Resources:
        return _intern(cls._table, tuple(sorted(amounts.items())), cls)


class NodeTerms(_Value):
    """What a pod asks of a node by itself: node selector, required and preferred node affinity,
    tolerations (NodeAffinity, TaintToleration and their scores; with the node name, a
    checker's node-static class)."""

    __slots__ = ("node_preferred", "node_required", "node_selector", "tolerations")
    _table: ClassVar[dict[tuple[Any, ...], NodeTerms]] = {}

    def __init__(self, key: tuple[Any, ...]):
        super().__init__(key)
        self.node_selector: tuple[tuple[str, str], ...] = key[0]
        self.node_required: tuple[Hashable, ...] | None = key[1]
        self.node_preferred: tuple[Hashable, ...] = key[2]
        self.tolerations: tuple[Toleration, ...] = key[3]

    @classmethod
    def of(
        cls,
        node_selector: Mapping[str, str],
        node_required: tuple[Hashable, ...] | None,
        node_preferred: tuple[Hashable, ...],
        tolerations: tuple[Toleration, ...],
    ) -> NodeTerms:
        selector = tuple(sorted(node_selector.items())) if node_selector else ()
        return _intern(cls._table, (selector, node_required, node_preferred, tolerations), cls)


class PodShape(_Value):
    """Everything the scheduler reads of a pod's spec but its node name (see the module doc).

    Two pods with equal shapes, namespaces and labels get the same answer from every filter and
    score on every node, as long as neither names a node.
    """

    __slots__ = ("affinity", "host_ports", "inter_pod", "label_free", "nodes", "requests", "topology_spread")
    _table: ClassVar[dict[tuple[Any, ...], PodShape]] = {}

    def __init__(self, key: tuple[Any, ...]):
        super().__init__(key)
        self.requests: Resources = key[0]
        self.nodes: NodeTerms = key[1]
        self.host_ports: tuple[Hashable, ...] = key[2]
        self.affinity: Terms = key[3]
        self.topology_spread: tuple[SpreadTerm, ...] = key[4]
        affinity, spread = self.affinity, self.topology_spread
        # No term of the pod's own reads its namespace or labels: only bound pods' anti-affinity
        # can then tell apart two such pods with different labels.
        self.label_free = not (affinity.pod_required or affinity.anti_required or spread)
        # Where the pod may go depends on which other pods sit where: required pod
        # (anti-)affinity, DoNotSchedule spread, host ports. Preferred terms only score.
        self.inter_pod = bool(
            affinity.pod_required
            or affinity.anti_required
            or self.host_ports
            or any(c.when_unsatisfiable == "DoNotSchedule" for c in spread)
        )

    @classmethod
    def of(
        cls,
        requests: Mapping[str, int],
        host_ports: tuple[Hashable, ...],
        node_selector: Mapping[str, str],
        affinity: Terms,
        tolerations: tuple[Toleration, ...],
        topology_spread: tuple[SpreadTerm, ...],
    ) -> PodShape:
        nodes = NodeTerms.of(node_selector, affinity.node_required, affinity.node_preferred, tolerations)
        key = (Resources.of(requests), nodes, host_ports, affinity, topology_spread)
        return _intern(cls._table, key, cls)
