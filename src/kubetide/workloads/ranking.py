"""Which pods a ReplicaSet deletes first when it shrinks (KEP-2185, LogarithmicScaleDown).

Kubernetes sorts the ReplicaSet's active pods with a pairwise comparator (`ActivePodsWithRanks.Less`)
and deletes the first `diff`. Criteria, in order; the first that tells two pods apart decides:

1. unassigned (no node) before assigned;
2. phase Pending < Unknown < Running (any other phase counts as Pending);
3. not ready before ready;
4. lower pod-deletion-cost first (see `cost.py`);
5. higher rank first: the number of active related pods on the pod's node, itself included
   (0 for every pod when the ReplicaSet has no controlling owner: no related pods are listed);
6. both ready with different ready times: younger ready-age bucket first (`timebuckets.py`), and in
   the same bucket the smaller UID first, without looking at 7-8. A missing ready time counts as
   the newest. (`logarithmic=False`: the more recently ready pod first, the pre-1.22 rule.)
7. more container restarts first; tie: more sidecar (restartable init container) restarts first;
8. creation time, by the same rule as 6 (`logarithmic=False`: newer first);
9. otherwise equal.

## A key instead of a comparator

We compute one sort key per pod and sort once. The key is seven integers, compared in order:

    c1  criteria 1-4 packed: ((assigned * 3 + phase) * 2 + ready) * 2^33 + cost + 2^31
    c2  criterion 5: -rank
    c3  criterion 6: the ready-age bucket (-1 for an age <= 0), or -2 when not ready or no ready
        time; logarithmic=False: -ready time in ns, or -2^63 (before any time)
    c4  criterion 6 inside a bucket: the UID rank of the pod's *run head* (below); -1 outside
    c5  criterion 7: -(restarts * 2^32 + sidecar restarts)
    c6  criterion 8: the creation-age bucket, or -2 without a creation time; logarithmic=False:
        -creation time in ns, or -2^63
    c7  the pod's position in (UID, namespace/name) order

Criteria 1-5, 7 and 8 are plain key fields (in 8, pods of one bucket are ordered by UID whether or
not their creation times differ: that refines Go's "equal" for equal times, which any order may do).
Criterion 6 is not: inside one bucket, pods with *different* ready times are ordered by UID, but
pods with the *same* ready time fall through to restarts and creation. Ready times have one-second
resolution and pods of one rollout often turn ready in the same second, so both happen together,
and then the comparator can contradict itself: with A and B ready at t, C ready at t+1 in the same
bucket, A with more restarts and UIDs B < C < A, it says A < B (restarts), B < C and C < A (UIDs).
No order satisfies that; Go's sort returns whatever its swaps produce, which depends on the input
order.

So c4 is computed from the bucket's pods (same c1-c3) sorted by UID: a *run* is a maximal stretch
of consecutive pods in that UID order with the same ready time, and c4 is the UID rank of the run's
first pod. Pods with different ready times are in different runs, ordered by UID as Go orders
them; pods of one run share c4 and are ordered by restarts and creation as Go orders them. Go's
answer is only overruled between two pods with the same ready time whose UIDs enclose a pod with
another ready time, which is exactly when it contradicts itself (the A-B-C cycle above). Hence:

- whenever Go's comparator is a consistent order on the pods given, our order is that order, with
  its ties (criterion 9) broken by UID and then namespace/name, so the result never depends on the
  input order; tests/workloads/test_equivalence.py checks this against a literal transcription of
  the comparator;
- when it is not, we keep every UID decision of criterion 6 and drop the restart/creation decisions
  that close a cycle.

Two implementations compute the same columns. Plain Python (`sorted` over the key tuples) serves
small inputs and times NumPy's int64 nanoseconds cannot hold (outside 1843-2096). NumPy serves
large ones: each key field is shifted to start at 0 and packed into as few int64 words as the
fields' ranges allow (two for typical pods), then one stable lexsort orders the words: 100k pods
in about a third of the time Go takes (BENCHMARKS.md). The tests check both give the same order.
"""

from __future__ import annotations

import functools
import itertools
import operator
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from kubetide.model.pod import Pod
from kubetide.model.pod_columns import PodColumns, take
from kubetide.workloads.cost import DELETION_COST_ANNOTATION, parse_deletion_cost
from kubetide.workloads.metrics import DeletionAgeRatio
from kubetide.workloads.timebuckets import NS_PER_SECOND, to_ns

PHASE_ORDINAL = {"Pending": 0, "Unknown": 1, "Running": 2}
NO_TIME_BUCKET = -2  # c3/c6 in logarithmic mode for a missing time: before bucket -1
NO_TIME_LEGACY = -(2**63)  # c3/c6 with logarithmic=False for a missing time: before any time
NUMPY_THRESHOLD = 200  # below this many pods the Python columns are faster

# A key column: a list from the plain-Python engine, an int64 array from the NumPy one.
Column = Sequence[int] | np.ndarray
_NUMPY_TIME_LIMIT = 4.0e9  # |seconds| below this: ns and ages fit int64 with room to spare


def is_active(pod: Pod) -> bool:
    """Counted by the ReplicaSet controller: not Succeeded/Failed and not being deleted."""
    return pod.phase != "Succeeded" and pod.phase != "Failed" and pod.meta.deletion_timestamp is None


def pods_per_node(pods: Iterable[Pod], related_pods: Iterable[Pod] | None = None) -> dict[str, int]:
    """Active pods per node name ("" for unscheduled) over pods and related_pods, one per UID.

    The rank of criterion 5. Copies of one pod (same UID) count once; should two different pods
    share a UID, the one with the smaller namespace/name counts, so the input order never matters.
    """
    # A pod given twice (among both, as callers pass it) is one row: its copies never conflict.
    every = list({id(pod): pod for pod in (*pods, *(() if related_pods is None else related_pods))}.values())
    return rows_per_node(PodColumns.of_pods(every), range(len(every)))


def active_row(phase: str, deleted: float | None) -> bool:
    """is_active of a pod row, from its phase and deletion time."""
    return phase != "Succeeded" and phase != "Failed" and deleted is None


def rows_per_node(table: PodColumns, rows: Iterable[int]) -> dict[str, int]:
    """pods_per_node of a table's rows (a pod given twice, in two rows, counts once)."""
    uids = table.uids
    unique: dict[str, int] = {}
    for row in rows:
        other = unique.setdefault(uids[row], row)
        if other != row and table.key_order(row) < table.key_order(other):
            unique[uids[row]] = row
    nodes, phases, deleted = table.nodes, table.phases, table.deleted
    return Counter(
        nodes[row]
        for row in unique.values()
        if phases[row] != "Succeeded" and phases[row] != "Failed" and deleted[row] is None  # active_row
    )


class Ranking:
    """The deletion order of a set of pods and the keys it was computed from.

    `order` is the deletion order (first = deleted first). `key(pod)` is a pod's sort key (the
    seven columns of the module docstring, as a tuple of ints). `index` holds the input positions
    in deletion order, `columns` the key columns and `inputs` the pods' fields, both in input
    order: what explain.py and `kubetide downscale` read for 100,000 pods without a Python call
    per pod.
    """

    def __init__(
        self,
        pods: tuple[PodColumns, list[int]],
        index: list[int],
        columns: Sequence[Column],
        now_ns: int,
        node_counts: dict[str, int],
        logarithmic: bool,
        deletion_cost: bool,
        inputs: PodFields | None = None,
        built: list[Pod] | None = None,
    ):
        # The pods as rows of a table: their Pods (`built`, when the caller has them) are built
        # when `pods` or `order` is first read (`kubetide downscale --json` reads neither: the
        # columns say all it prints).
        self.table, self.rows = pods
        self._pods = built
        self._order: list[Pod] | None = None
        self.index = index
        self.columns = columns
        self.inputs = inputs
        self.now_ns = now_ns
        self.node_counts = node_counts
        self.logarithmic = logarithmic
        self.deletion_cost = deletion_cost
        self._index = index
        self._columns = columns
        self._input_index: dict[int, int] | None = None
        self._key_table: list[tuple[int, ...]] | None = None

    @property
    def pods(self) -> list[Pod]:
        """The pods ranked, in input order."""
        if self._pods is None:
            self._pods = self.table.pods(self.rows)
        return self._pods

    @property
    def order(self) -> list[Pod]:
        """The pods in deletion order (first = deleted first)."""
        if self._order is None:
            self._order = take(self.pods, self.index)
        return self._order

    def _input_position(self, pod: Pod) -> int:
        if self._input_index is None:
            self._input_index = {id(p): i for i, p in enumerate(self.pods)}
        return self._input_index[id(pod)]

    def _keys_by_input(self) -> list[tuple[int, ...]]:
        # Built once, column by column (tolist turns an int64 array into Python ints in C): asking
        # for every pod's key one element at a time cost seconds on 100,000 pods.
        if self._key_table is None:
            columns = [c.tolist() if isinstance(c, np.ndarray) else list(map(int, c)) for c in self._columns]
            self._key_table = list(zip(*columns, strict=True))
        return self._key_table

    def key(self, pod: Pod) -> tuple[int, ...]:
        return self._keys_by_input()[self._input_position(pod)]

    def keys(self) -> list[tuple[int, ...]]:
        """The keys in deletion order."""
        table = self._keys_by_input()
        return [table[i] for i in self._index]

    def rank_of(self, pod: Pod) -> int:
        return self.node_counts.get(pod.node_name, 0)

    def cost_of(self, pod: Pod) -> int:
        if not self.deletion_cost:
            return 0
        value = pod.meta.annotations.get(DELETION_COST_ANNOTATION)
        return 0 if value is None else parse_deletion_cost(value) or 0


def rank(
    pods: Sequence[Pod],
    now: float,
    related_pods: Iterable[Pod] | None = None,
    *,
    logarithmic: bool = True,
    deletion_cost: bool = True,
    owner_has_controller: bool = True,
    engine: str = "auto",
) -> Ranking:
    """Rank pods for deletion; see the module docstring for the criteria and the key.

    `now` is Unix seconds from the caller's clock (the library never reads the wall clock).
    `related_pods` are the pods of every ReplicaSet owned by the same controller as these pods'
    ReplicaSet; the pods themselves always count, so None means "no other ReplicaSets".
    `owner_has_controller=False` (a ReplicaSet or ReplicationController with no controlling
    owner): kube-controller-manager finds related pods through that controller, so it lists none
    and every rank is 0; passing related pods as well is refused as a contradiction.
    `engine` ("auto", "numpy", "python") picks the implementation; both give the same order.
    """
    pods = list(pods)
    counted = None if related_pods is None else (lambda: pods_per_node(pods, related_pods))
    return _ranking(
        PodColumns.of_pods(pods),
        range(len(pods)),
        now,
        counted,
        pods=pods,
        logarithmic=logarithmic,
        deletion_cost=deletion_cost,
        owner_has_controller=owner_has_controller,
        engine=engine,
    )


def rank_rows(
    table: PodColumns,
    rows: Sequence[int],
    now: float,
    related_rows: Iterable[int] | None = None,
    *,
    logarithmic: bool = True,
    deletion_cost: bool = True,
    owner_has_controller: bool = True,
    engine: str = "auto",
) -> Ranking:
    """`rank` of a table's rows (model/pod_columns.py): the pods `rows` name, ranked against the
    related pods `related_rows` name, without a Pod unless the Ranking's `pods` or `order` is read."""
    rows = list(rows)
    counted = None if related_rows is None else (lambda: rows_per_node(table, [*rows, *related_rows]))
    return _ranking(
        table,
        rows,
        now,
        counted,
        logarithmic=logarithmic,
        deletion_cost=deletion_cost,
        owner_has_controller=owner_has_controller,
        engine=engine,
    )


def _ranking(
    table: PodColumns,
    rows: Sequence[int],
    now: float,
    related_counts: Callable[[], dict[str, int]] | None,
    *,
    logarithmic: bool,
    deletion_cost: bool,
    owner_has_controller: bool,
    engine: str,
    pods: list[Pod] | None = None,
) -> Ranking:
    """rank and rank_rows: `related_counts` gives the active pods per node over the pods and
    their related pods (None: no related pods given); `pods`, when given, the rows' Pods."""
    rows = list(rows)
    n = len(rows)
    now_ns = to_ns(now)
    whole = n == len(table) and rows == list(range(n))  # rank's: every row, in order

    def column(values: list[Any]) -> list[Any]:
        """The rows' values of a table's column (a copy: the ranking keeps its own)."""
        return list(values) if whole else take(values, rows)

    # Column by column with itemgetter: several times faster than one loop over the pods.
    uids = column(table.uids)
    nodes = column(table.nodes)
    phases = column(table.phases)
    readies = column(table.ready)
    unique_uids = len(set(uids)) == n
    if not owner_has_controller:
        if related_counts is not None:
            raise ValueError("related pods given for an owner without a controller (it has none)")
        counts: dict[str, int] = {}
    elif related_counts is None and unique_uids:
        counts = Counter(nodes)
        deleted = column(table.deleted)
        if "Succeeded" in phases or "Failed" in phases or deleted.count(None) != n:
            counts = Counter(node for node, phase, at in zip(nodes, phases, deleted) if active_row(phase, at))
    else:
        counts = rows_per_node(table, rows) if related_counts is None else related_counts()
    tiebreak, uid_rank = _uid_order(uids, lambda: table.keys(rows), unique_uids)

    transitions = column(table.ready_transitions)
    if deletion_cost:
        costs = list(map(_cached_cost, map(_COST_VALUE, column(table.annotations))))
    else:
        costs = [0] * n
    zeros = itertools.repeat(0)
    raw = PodFields(
        uids=uids,
        nodes=nodes,
        phases=phases,
        ready_transitions=transitions,
        assigned=list(map(bool, nodes)),
        phase=list(map(PHASE_ORDINAL.get, phases, zeros)),
        ready=readies,
        cost=costs,
        rank=list(map(counts.get, nodes, zeros)),
        ready_at=[t if ready else None for t, ready in zip(transitions, readies)],
        restarts=column(table.restarts),
        sidecar_restarts=column(table.sidecar_restarts),
        created=column(table.created),
        tiebreak=tiebreak,
        uid_rank=uid_rank,
    )
    numpy_columns = None
    if engine == "numpy" or (engine == "auto" and n >= NUMPY_THRESHOLD):
        numpy_columns = _columns_numpy(raw, now, now_ns, logarithmic)
        if numpy_columns is None and engine == "numpy":
            raise ValueError("times outside 1843-2096 need engine='python'")
    columns: Sequence[Column]
    if numpy_columns is not None:
        columns, fields = numpy_columns
        index = _sort_order(fields).tolist()
    else:
        columns = _columns_python(raw, now_ns, logarithmic)
        keys = list(zip(*columns))
        index = sorted(range(n), key=keys.__getitem__)
    return Ranking((table, rows), index, columns, now_ns, counts, logarithmic, deletion_cost, raw, pods)


_COST_VALUE = operator.methodcaller("get", DELETION_COST_ANNOTATION)


@functools.lru_cache(maxsize=1024)
def _cached_cost(value: str | None) -> int:
    return 0 if value is None else parse_deletion_cost(value) or 0


@dataclass(slots=True)
class PodFields:
    """The pods' fields the key is computed from, one list per field, in input order."""

    uids: list[str]
    nodes: list[str]
    phases: list[str]
    ready_transitions: list[float | None]  # whether ready or not
    assigned: list[bool]
    phase: list[int]
    ready: list[bool]
    cost: list[int]
    rank: list[int]
    ready_at: list[float | None]  # only for ready pods
    restarts: list[int]
    sidecar_restarts: list[int]
    created: list[float | None]
    tiebreak: Column  # c7
    uid_rank: Column


def _uid_order(uids: list[str], keys: Callable[[], list[str]], unique: bool) -> tuple[Column, Column]:
    """c7 (position in (UID, namespace/name) order) and each pod's UID rank (equal UIDs, equal rank)."""
    n = len(uids)
    if unique:
        if n >= NUMPY_THRESHOLD and "\x00" not in "".join(uids):
            # NumPy compares code points like Python, but drops trailing NULs: hence the check
            order = np.argsort(np.array(uids), kind="stable")
        else:
            order = np.array(sorted(range(n), key=uids.__getitem__), dtype=np.int64)
        ranks = np.empty(n, dtype=np.int64)
        ranks[order] = np.arange(n, dtype=np.int64)
        return ranks, ranks
    names = keys()  # namespace/name: needed only when UIDs repeat
    position = [0] * n
    uid_rank = [0] * n
    previous, first = None, 0
    for at, i in enumerate(sorted(range(n), key=lambda i: (uids[i], names[i]))):
        position[i] = at
        if uids[i] != previous:
            previous, first = uids[i], at
        uid_rank[i] = first
    return position, uid_rank


# -- plain Python ---------------------------------------------------------------------------


def _as_list(values: Column) -> list[int]:
    return values.tolist() if isinstance(values, np.ndarray) else list(values)


def _columns_python(raw: PodFields, now_ns: int, logarithmic: bool) -> list[list[int]]:
    ns = NS_PER_SECOND
    tiebreak = _as_list(raw.tiebreak)

    def time_key(moment: float | None) -> tuple[int, int | None]:
        """(c3/c6 value, ns) for a time."""
        if moment is None:
            return (NO_TIME_BUCKET if logarithmic else NO_TIME_LEGACY), None
        whole = int(moment)
        at = whole * ns if whole == moment else whole * ns + round((moment - whole) * 1e9)
        if not logarithmic:
            return -at, at
        age = now_ns - at
        return (age.bit_length() - 1 if age > 0 else -1), at

    c1 = [
        ((u * 3 + phase) * 2 + ready) * 2**33 + cost + 2**31
        for u, phase, ready, cost in zip(raw.assigned, raw.phase, raw.ready, raw.cost)
    ]
    c2 = [-rank for rank in raw.rank]
    ready = [time_key(t) for t in raw.ready_at]
    c3 = [value for value, _ in ready]
    c5 = [-(r * 2**32 + s) for r, s in zip(raw.restarts, raw.sidecar_restarts)]
    c6 = [time_key(t)[0] for t in raw.created]
    c4 = [-1] * len(c1)
    if logarithmic:
        uid_rank = _as_list(raw.uid_rank)
        groups: dict[tuple[int, int, int], list[int]] = {}
        for i, (value, at) in enumerate(ready):
            if at is not None:
                groups.setdefault((c1[i], c2[i], value), []).append(i)
        for members in groups.values():
            members.sort(key=tiebreak.__getitem__)
            head, run_time = -1, None
            for i in members:
                at = ready[i][1]
                if at != run_time:
                    head, run_time = uid_rank[i], at
                c4[i] = head
    return [c1, c2, c3, c4, c5, c6, tiebreak]


# -- NumPy ----------------------------------------------------------------------------------


def seconds_array(times: list[float | None]) -> np.ndarray:
    """Float seconds, NaN for a missing time."""
    return np.array([np.nan if t is None else t for t in times], dtype=np.float64)


def ns_array(seconds: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(ns, present) for float seconds (NaN = missing), exactly as `to_ns` rounds them."""
    present = ~np.isnan(seconds)
    seconds = np.where(present, seconds, 0.0)
    whole = np.trunc(seconds)
    fraction = np.rint((seconds - whole) * 1e9).astype(np.int64)
    return whole.astype(np.int64) * NS_PER_SECOND + fraction, present


def _bucket_array(age: np.ndarray) -> np.ndarray:
    """floor(log2(age)) exactly for int64 ages (float64 can round up at a power of two), -1 for <= 0."""
    positive = age > 0
    safe = np.where(positive, age, 1)
    bucket = np.frexp(safe.astype(np.float64))[1].astype(np.int64) - 1
    bucket -= np.left_shift(np.int64(1), bucket) > safe
    return np.where(positive, bucket, -1)


def _time_column(
    now_ns: int, seconds: np.ndarray, logarithmic: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(c3/c6 column, ns, present) for times in float seconds."""
    at, present = ns_array(seconds)
    if logarithmic:
        return np.where(present, _bucket_array(np.int64(now_ns) - at), NO_TIME_BUCKET), at, present
    return np.where(present, -at, NO_TIME_LEGACY), at, present


def _columns_numpy(
    raw: PodFields, now: float, now_ns: int, logarithmic: bool
) -> tuple[list[np.ndarray], list[np.ndarray]] | None:
    """(key columns, sort fields) as int64 arrays, or None when a time is too far out for int64 ns.

    The fields order exactly as the columns do, split so that `_sort_order` can pack them densely.
    """
    ready_seconds, created_seconds = seconds_array(raw.ready_at), seconds_array(raw.created)
    limit = _NUMPY_TIME_LIMIT
    if not -limit < now < limit:
        return None
    for seconds in (ready_seconds, created_seconds):
        if np.any(np.abs(seconds) >= limit):  # NaN compares False: missing times pass
            return None

    def column(values: Column | Sequence[bool]) -> np.ndarray:
        return np.asarray(values, dtype=np.int64)

    assigned, phase, ready, cost = (
        column(raw.assigned),
        column(raw.phase),
        column(raw.ready),
        column(raw.cost),
    )
    a1 = ((assigned * 3 + phase) * 2 + ready) * 2**33 + (cost + 2**31)
    a2 = -column(raw.rank)
    a3, ready_ns, has_ready = _time_column(now_ns, ready_seconds, logarithmic)
    restarts, sidecar = column(raw.restarts), column(raw.sidecar_restarts)
    a5 = -(restarts * 2**32 + sidecar)
    a6, created_ns, has_created = _time_column(now_ns, created_seconds, logarithmic)
    a7 = column(raw.tiebreak)
    a4 = np.full(len(a1), -1, dtype=np.int64)
    if logarithmic and has_ready.any():
        members = np.flatnonzero(has_ready)
        # the bucket's pods in UID order; a run starts where the group or the ready time changes
        group = (assigned, phase, ready, cost, a2, a3, a7)  # = (a1, a2, a3, a7), packed tighter
        members = members[_sort_order([field[members] for field in group])]
        g1, g2, g3, t = a1[members], a2[members], a3[members], ready_ns[members]
        starts = np.ones(len(members), dtype=bool)
        starts[1:] = (g1[1:] != g1[:-1]) | (g2[1:] != g2[:-1]) | (g3[1:] != g3[:-1]) | (t[1:] != t[:-1])
        first = np.maximum.accumulate(np.where(starts, np.arange(len(members)), 0))
        a4[members] = column(raw.uid_rank)[members[first]]
    head = [assigned, phase, ready, cost, a2]
    tail = [-restarts, -sidecar]
    if logarithmic:
        fields = [*head, a3, a4, *tail, a6, a7]
    else:  # a missing time first, then -ns (missing ones take a present value: only the flag counts)
        fields = [*head, *_flagged(-ready_ns, has_ready), *tail, *_flagged(-created_ns, has_created), a7]
    return [a1, a2, a3, a4, a5, a6, a7], fields


def _flagged(values: np.ndarray, present: np.ndarray) -> list[np.ndarray]:
    if not present.any():
        return [present.astype(np.int64)]
    return [present.astype(np.int64), np.where(present, values, values[present].min())]


def _sort_order(fields: list[np.ndarray]) -> np.ndarray:
    """The stable lexicographic order of int64 fields (most significant first).

    Each field is shifted to start at 0 and takes only the bits its range needs; fields are packed
    into as few int64 words as fit, so a 100k-pod key of eleven fields sorts as two words.
    """
    n = len(fields[0]) if fields else 0
    words: list[np.ndarray] = []
    word, used = None, 0
    for field in fields:
        if n == 0:
            break
        low = int(field.min())
        bits = (int(field.max()) - low).bit_length()
        if bits == 0:
            continue  # the same for every pod: orders nothing
        if bits > 63:  # pragma: no cover - the fields' ranges are bounded well below this
            raise ValueError("a key field spans more than 63 bits")
        value = field - np.int64(low) if low > -(2**63) else field ^ np.int64(-(2**63))
        if word is None or used + bits > 63:
            if word is not None:
                words.append(word)
            word, used = value, bits
        else:
            word = (word << bits) | value
            used += bits
    if word is not None:
        words.append(word)
    if not words:
        return np.arange(n)
    if len(words) == 1:
        return np.argsort(words[0], kind="stable")
    return np.lexsort(words[::-1])


# -- the controller's entry points --------------------------------------------------------------


def rank_pods_for_deletion(
    pods: Sequence[Pod],
    now: float,
    related_pods: Iterable[Pod] | None = None,
    *,
    logarithmic: bool = True,
    deletion_cost: bool = True,
    owner_has_controller: bool = True,
) -> list[Pod]:
    """All pods in deletion order (first = deleted first)."""
    return rank(
        pods,
        now,
        related_pods,
        logarithmic=logarithmic,
        deletion_cost=deletion_cost,
        owner_has_controller=owner_has_controller,
    ).order


def pods_to_delete(
    pods: Sequence[Pod],
    diff: int,
    now: float,
    related_pods: Iterable[Pod] | None = None,
    *,
    logarithmic: bool = True,
    deletion_cost: bool = True,
    owner_has_controller: bool = True,
    metric: DeletionAgeRatio | None = None,
) -> list[Pod]:
    """The `diff` pods a ReplicaSet controller deletes, in deletion order.

    `pods` are the ReplicaSet's active pods (the controller filters with `is_active` first). As
    upstream, nothing is sorted when every pod goes (`diff >= len(pods)`: the pods come back in
    input order), and `metric` (a `DeletionAgeRatio`) observes only decisions that needed sorting.
    """
    if diff <= 0:
        return []
    if diff >= len(pods):
        return list(pods)
    order = rank(
        pods,
        now,
        related_pods,
        logarithmic=logarithmic,
        deletion_cost=deletion_cost,
        owner_has_controller=owner_has_controller,
    ).order
    deleted = order[:diff]
    if metric is not None:
        metric.observe(deleted, pods, now)
    return deleted
