"""Pods for the downscale tests, and a literal transcription of Kubernetes' comparator.

`go_less` follows ActivePodsWithRanks.Less line by line (criteria 1-9 of ranking.py), with pods,
ranks and `now` instead of Go structs. It is the oracle the key-based sort is checked against.
"""

from __future__ import annotations

import functools

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from kubetide.model.meta import ObjectMeta, OwnerReference
from kubetide.model.pod import Pod
from kubetide.workloads.cost import DELETION_COST_ANNOTATION, deletion_cost
from kubetide.workloads.timebuckets import age_bucket, to_ns

NOW = 1_790_000_000.0  # 2026-09-21T...Z, whole seconds
HOUR = 3600.0
DAY = 86400.0
MONTH = 30 * DAY
OWNER = OwnerReference("ReplicaSet", "web-7f9c8d6b5", "rs-uid-1", controller=True)


def pod(
    name: str = "p",
    *,
    node: str = "node-1",
    phase: str = "Running",
    ready: bool = True,
    ready_at: float | None = None,
    created: float | None = None,
    restarts: int = 0,
    sidecar_restarts: int = 0,
    cost: str | None = None,
    uid: str | None = None,
    deleting: bool = False,
    namespace: str = "default",
    owner: OwnerReference | None = OWNER,
) -> Pod:
    annotations = {} if cost is None else {DELETION_COST_ANNOTATION: cost}
    meta = ObjectMeta(
        name=name,
        namespace=namespace,
        uid=uid if uid is not None else f"uid-{name}",
        annotations=annotations,
        owner_references=(owner,) if owner else (),
        creation_timestamp=created,
        deletion_timestamp=NOW - 1 if deleting else None,
    )
    return Pod(
        meta=meta,
        requests={"pods": 1},
        limits={},
        node_name=node,
        phase=phase,
        ready=ready,
        ready_transition=ready_at,
        restarts=restarts,
        sidecar_restarts=sidecar_restarts,
    )


_PHASE = {"Pending": 0, "Unknown": 1, "Running": 2}


def _after_or_zero(t1: int | None, t2: int | None) -> bool:
    if t1 is None or t2 is None:
        return t1 is None
    return t1 > t2


def _bucket_diff(t1: int, t2: int, now_ns: int) -> int:
    return age_bucket(now_ns - t1) - age_bucket(now_ns - t2)


def _newer_first(
    a: Pod, b: Pod, t1: int | None, t2: int | None, now_ns: int, logarithmic: bool
) -> bool | None:
    """Steps 6 and 8 of go_less, on pod a's time t1 and pod b's t2: whether a goes first (an empty
    time, then the newer one; with logarithmic buckets, the newer bucket, then the lower UID within
    one), None when the times are the same and the next step decides."""
    if t1 == t2:
        return None
    if not logarithmic or t1 is None or t2 is None:
        return _after_or_zero(t1, t2)
    diff = _bucket_diff(t1, t2, now_ns)
    if diff == 0:
        return a.uid < b.uid
    return diff < 0


def _ns(moment: float | None) -> int | None:
    return None if moment is None else to_ns(moment)


def go_less(
    a: Pod, rank_a: int, b: Pod, rank_b: int, now: float, *, logarithmic=True, deletion_cost_on=True
) -> bool:
    """ActivePodsWithRanks.Less(a, b): True when a is deleted before b."""
    now_ns = to_ns(now)
    # 1. Unassigned < assigned
    if a.node_name != b.node_name and (not a.node_name or not b.node_name):
        return not a.node_name
    # 2. PodPending < PodUnknown < PodRunning
    if _PHASE.get(a.phase, 0) != _PHASE.get(b.phase, 0):
        return _PHASE.get(a.phase, 0) < _PHASE.get(b.phase, 0)
    # 3. Not ready < ready
    if a.ready != b.ready:
        return not a.ready
    # 4. lower pod-deletion-cost < higher pod-deletion cost
    if deletion_cost_on:
        cost_a, cost_b = deletion_cost(a.annotations), deletion_cost(b.annotations)
        if cost_a != cost_b:
            return cost_a < cost_b
    # 5. Doubled up < not doubled up
    if rank_a != rank_b:
        return rank_a > rank_b
    # 6. Been ready for empty time < less time < more time
    if a.ready and b.ready:
        first = _newer_first(a, b, _ns(a.ready_transition), _ns(b.ready_transition), now_ns, logarithmic)
        if first is not None:
            return first
    # 7. Higher restart counts < lower restart counts (regular containers, then sidecars)
    if a.restarts != b.restarts:
        return a.restarts > b.restarts
    if a.sidecar_restarts != b.sidecar_restarts:
        return a.sidecar_restarts > b.sidecar_restarts
    # 8. Empty creation time pods < newer pods < older pods
    first = _newer_first(
        a, b, _ns(a.meta.creation_timestamp), _ns(b.meta.creation_timestamp), now_ns, logarithmic
    )
    return bool(first)


# -- hypothesis strategies ------------------------------------------------------------------

OLD_RS = OwnerReference("ReplicaSet", "web-old", "rs-uid-0", controller=True)
# Seconds before NOW: few distinct values so buckets, equal times and ties are all common.
# 3600 and 4000 share bucket 41, 5400 and 7000 bucket 42; -5 is in the future (bucket -1).
OFFSETS = [0, 1, 2, 3600, 4000, 5400, 7000, 86400, 2592000, -5, 0.25, 3600.5]
SETTINGS = settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])

times = st.one_of(st.none(), st.sampled_from(OFFSETS).map(lambda offset: NOW - offset))


@st.composite
def pod_sets(draw, min_size=1, max_size=9, unique_uids=True):
    n = draw(st.integers(min_size, max_size))
    uid_alphabet = st.text(alphabet="abcd", min_size=1, max_size=3)
    if unique_uids:
        uids = draw(st.lists(uid_alphabet, min_size=n, max_size=n, unique=True))
    else:
        uids = draw(st.lists(st.sampled_from(["a", "b", "c"]), min_size=n, max_size=n))
    pods = []
    for i, uid in enumerate(uids):
        ready = draw(st.booleans())
        pods.append(
            pod(
                f"p{i}",
                uid=uid,
                node=draw(st.sampled_from(["", "n1", "n2", "n3"])),
                phase=draw(st.sampled_from(["Running", "Running", "Pending", "Unknown", "Succeeded"])),
                ready=ready,
                ready_at=draw(times),
                created=draw(times),
                restarts=draw(st.sampled_from([0, 0, 1, 5])),
                sidecar_restarts=draw(st.sampled_from([0, 0, 2])),
                cost=draw(st.sampled_from([None, None, None, "10", "-5", "+1", "x"])),
                deleting=draw(st.booleans()) and draw(st.booleans()),
            )
        )
    related = [
        pod(f"r{i}", uid=f"r{i}", owner=OLD_RS, node=node, deleting=deleting)
        for i, (node, deleting) in enumerate(
            draw(st.lists(st.tuples(st.sampled_from(["n1", "n2", ""]), st.booleans()), max_size=4))
        )
    ]
    switches = {"logarithmic": draw(st.booleans()), "deletion_cost": draw(st.booleans())}
    return pods, related, switches


@st.composite
def crowded_sets(draw):
    """Ready pods on one node, ready at one of two times in one bucket: the comparator's weak spot."""
    n = draw(st.integers(3, 9))
    uids = draw(
        st.lists(st.text(alphabet="abcd", min_size=1, max_size=2), min_size=n, max_size=n, unique=True)
    )
    pods = [
        pod(
            f"p{i}",
            uid=uid,
            ready_at=NOW - draw(st.sampled_from([3600, 3601, 4000])),  # all bucket 41
            created=draw(times),
            restarts=draw(st.sampled_from([0, 1])),
        )
        for i, uid in enumerate(uids)
    ]
    return pods, [], {"logarithmic": True, "deletion_cost": True}


def go_switches(switches: dict) -> dict[str, bool]:
    """`rank`'s switches as go_less's keyword arguments."""
    return {"logarithmic": switches["logarithmic"], "deletion_cost_on": switches["deletion_cost"]}


def go_sorted(pods, ranking, switches: dict) -> tuple[list[Pod], bool]:
    """`pods` sorted by Go's comparator (go_less on `ranking`'s ranks; pods it calls equal by UID,
    then key), and whether that comparator is an order on them: each pod of the sorted list
    compares before every later one."""
    go = go_switches(switches)

    def compare(a, b):
        ra, rb = ranking.rank_of(a), ranking.rank_of(b)
        if go_less(a, ra, b, rb, NOW, **go):
            return -1
        if go_less(b, rb, a, ra, NOW, **go):
            return 1
        ka, kb = (a.uid, a.key), (b.uid, b.key)
        return (ka > kb) - (ka < kb)

    by_go = sorted(pods, key=functools.cmp_to_key(compare))
    consistent = all(compare(x, y) < 0 for i, x in enumerate(by_go) for y in by_go[i + 1 :])
    return by_go, consistent
