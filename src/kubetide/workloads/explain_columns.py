"""`explain.reason` for every deleted pod at once, from the ranking's columns.

`kubetide downscale` explains each deleted pod against the first kept one: 50,000 calls of `reason`
on 100,000 pods cost more than ranking them. Here the first key column that separates each deleted
pod from the kept one comes from one NumPy comparison of the key table, and each criterion's words
are written for all its pods together; the ages shown ("5d3h ago") are few distinct strings,
formatted once each. The texts are exactly `reason`'s (tests/workloads checks both on random pods).

Only rankings made by the NumPy engine are explained here: their key columns are int64 arrays and
their times fit int64 nanoseconds. `explain.explain_ranking` sends the others to `reason`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from kubetide.workloads.ranking import Ranking, ns_array, seconds_array
from kubetide.workloads.timebuckets import NS_PER_SECOND, format_age

# Pods equal on all nine criteria: upstream compares them equal and leaves their order to its
# (unstable) sort; the UID, then namespace/name, is kubetide's own tie-break, and says so.
TIE_BY_UID = "equal on every criterion (upstream leaves them in its sort's order); kubetide's tie-break: UID"
TIE_BY_NAME = "equal on every criterion and the same UID; kubetide's tie-break: namespace/name"

IDENTICAL = 7  # "column" of two pods whose keys are equal
_MS = 1_000_000
_UNITS = (86400, 3600, 60, 1)


def explainable(ranking: Ranking) -> bool:
    """Whether the ranking's columns are NumPy's (the engine chosen from 200 pods up)."""
    return ranking.inputs is not None and all(isinstance(c, np.ndarray) for c in ranking.columns)


def _key_column(ranking: Ranking, number: int) -> np.ndarray:
    """Key column `number` (an int64 array in an `explainable` ranking)."""
    return np.asarray(ranking.columns[number])


def first_columns(ranking: Ranking, diff: int) -> tuple[np.ndarray, int, np.ndarray]:
    """(input positions of the first `diff` pods in deletion order, the kept pod's input position,
    the first key column where each differs from the kept pod; IDENTICAL where none does)."""
    index = np.asarray(ranking.index, dtype=np.int64)
    deleted, kept = index[:diff], int(index[diff])
    keys = np.column_stack(ranking.columns)
    differ = keys[deleted] != keys[kept]
    column = np.argmax(differ, axis=1)
    column[~differ.any(axis=1)] = IDENTICAL
    return deleted, kept, column


def reasons(ranking: Ranking, diff: int) -> tuple[list[int], list[str]]:
    """The criterion (1-9) and the text of `reason(ranking, pod, kept)` for each of the first
    `diff` pods (0 < diff < number of pods), in deletion order."""
    deleted, kept, column = first_columns(ranking, diff)
    criteria: list[int] = [0] * diff
    texts: list[str] = [""] * diff
    for number, explain in _BY_COLUMN.items():
        rows = np.flatnonzero(column == number)
        if len(rows) == 0:
            continue
        group_criteria, group_texts = explain(ranking, deleted[rows], kept)
        for row, criterion, text in zip(rows.tolist(), group_criteria, group_texts, strict=True):
            criteria[row] = criterion
            texts[row] = text
    return criteria, texts


Explained = tuple[list[int], list[str]]


def _criteria_1_to_4(ranking: Ranking, first: np.ndarray, kept: int) -> Explained:
    fields = ranking.inputs
    assert fields is not None
    assigned, phases, ready, cost = fields.assigned, fields.phase, fields.ready, fields.cost
    criteria, texts = [], []
    for i in first.tolist():
        if assigned[i] != assigned[kept]:
            criteria.append(1)
            texts.append("scheduled" if assigned[i] else "unscheduled")
        elif phases[i] != phases[kept]:  # ordinals differ, so the phases' names do
            criteria.append(2)
            texts.append(_phase_text(fields.phases[i]))
        elif ready[i] != ready[kept]:
            criteria.append(3)
            texts.append("not ready")
        else:
            criteria.append(4)
            texts.append(f"deletion cost {cost[i]} < {cost[kept]}")
    return criteria, texts


def _phase_text(phase: str) -> str:
    if phase == "Pending":
        return "pending"
    if phase == "Unknown":
        return "phase Unknown"
    return f"phase {phase} (counts as Pending)"


def _related_pods(ranking: Ranking, first: np.ndarray, kept: int) -> Explained:
    fields = ranking.inputs
    assert fields is not None
    nodes, counts = fields.nodes, ranking.node_counts
    other = nodes[kept] or "no node"
    other_count = counts.get(nodes[kept], 0)
    texts = []
    for i in first.tolist():
        count = counts.get(nodes[i], 0)
        noun = "pod" if count == 1 else "pods"
        texts.append(f"{count} related {noun} on {nodes[i] or 'no node'} (vs {other_count} on {other})")
    return [5] * len(texts), texts


def _ready_time(ranking: Ranking, first: np.ndarray, kept: int) -> Explained:
    """Columns 2 and 3 (criterion 6): the ready-age bucket, then the UID runs inside one bucket."""
    fields = ranking.inputs
    assert fields is not None
    moments = [fields.ready_transitions[i] for i in first.tolist()]
    at, present = _nanoseconds(moments)
    kept_at = _nanoseconds([fields.ready_transitions[kept]])
    ages = _agos(ranking.now_ns, at, present)
    kept_age = _agos(ranking.now_ns, *kept_at)[0]
    bucket_column = _key_column(ranking, 2)
    same_bucket = bucket_column[first] == bucket_column[kept]  # so column 3 decided
    same_time = present & kept_at[1][0] & (at == kept_at[0][0])
    buckets, kept_bucket = bucket_column[first].tolist(), int(bucket_column[kept])
    texts = []
    for age, has, in_bucket, same, bucket in zip(
        ages, present.tolist(), same_bucket.tolist(), same_time.tolist(), buckets, strict=True
    ):
        if not has:
            texts.append("no ready time (counts as the newest)")
        elif not ranking.logarithmic:
            texts.append(f"ready {age} vs {kept_age} (more recently ready first)")
        elif not in_bucket:
            texts.append(f"ready {age} vs {kept_age} (bucket {bucket} < {kept_bucket})")
        elif same:
            texts.append(
                f"same age bucket, UID ordering (both ready {age}, bucket {bucket}; "
                "a pod ready at another time in this bucket has a UID between theirs)"
            )
        else:
            texts.append(f"same age bucket, UID ordering (ready {age} vs {kept_age}, bucket {bucket})")
    return [6] * len(texts), texts


def _restarts(ranking: Ranking, first: np.ndarray, kept: int) -> Explained:
    fields = ranking.inputs
    assert fields is not None
    restarts, sidecar = fields.restarts, fields.sidecar_restarts
    texts = [
        f"more restarts ({restarts[i]} > {restarts[kept]})"
        if restarts[i] != restarts[kept]
        else f"more sidecar restarts ({sidecar[i]} > {sidecar[kept]})"
        for i in first.tolist()
    ]
    return [7] * len(texts), texts


def _creation_ages(ranking: Ranking, first: np.ndarray, kept: int) -> tuple[Any, ...]:
    """The `first` pods' creation times (ns) and whether each has one, the kept pod's, and the
    ages both print: what criterion 8's words compare, whichever column reached it."""
    fields = ranking.inputs
    assert fields is not None
    at, present = _nanoseconds([fields.created[i] for i in first.tolist()])
    kept_at, kept_present = _nanoseconds([fields.created[kept]])
    ages, kept_age = _agos(ranking.now_ns, at, present), _agos(ranking.now_ns, kept_at, kept_present)[0]
    return at, present, kept_at, kept_present, ages, kept_age


def _created(ranking: Ranking, first: np.ndarray, kept: int) -> Explained:
    """Column 5 (criterion 8): the creation-age bucket, or the creation time itself (legacy)."""
    _, present, _, _, ages, kept_age = _creation_ages(ranking, first, kept)
    buckets, kept_bucket = _key_column(ranking, 5)[first].tolist(), int(_key_column(ranking, 5)[kept])
    texts = []
    for age, has, bucket in zip(ages, present.tolist(), buckets, strict=True):
        if not has:
            texts.append("no creation time (counts as the newest)")
        elif not ranking.logarithmic:
            texts.append(f"created {age} vs {kept_age} (newer first)")
        else:
            texts.append(f"created {age} vs {kept_age} (bucket {bucket} < {kept_bucket})")
    return [8] * len(texts), texts


def _tie(ranking: Ranking, first: np.ndarray, kept: int) -> Explained:
    """Column 6: the (UID, namespace/name) position; criterion 8 when creation times differ."""
    fields = ranking.inputs
    assert fields is not None
    at, present, kept_at, kept_present, ages, kept_age = _creation_ages(ranking, first, kept)
    timed = present & bool(kept_present[0]) & (at != kept_at[0]) & ranking.logarithmic
    buckets = _key_column(ranking, 5)[first].tolist()
    kept_uid = fields.uids[kept]
    criteria, texts = [], []
    for i, age, by_time, bucket in zip(first.tolist(), ages, timed.tolist(), buckets, strict=True):
        if by_time:
            criteria.append(8)
            texts.append(f"same age bucket, UID ordering (created {age} vs {kept_age}, bucket {bucket})")
        elif fields.uids[i] == kept_uid:
            criteria.append(9)
            texts.append(TIE_BY_NAME)
        else:
            criteria.append(9)
            texts.append(TIE_BY_UID)
    return criteria, texts


def _identical(ranking: Ranking, first: np.ndarray, kept: int) -> Explained:
    return [9] * len(first), ["identical (no criterion tells them apart)"] * len(first)


_BY_COLUMN = {
    0: _criteria_1_to_4,
    1: _related_pods,
    2: _ready_time,
    3: _ready_time,
    4: _restarts,
    5: _created,
    6: _tie,
    IDENTICAL: _identical,
}


def _nanoseconds(moments: list[float | None]) -> tuple[np.ndarray, np.ndarray]:
    """(ns, present) as `to_ns` gives them (the NumPy engine's times fit int64 ns)."""
    return ns_array(seconds_array(moments))


def _agos(now_ns: int, at: np.ndarray, present: np.ndarray) -> list[str]:
    """`explain._ago` of each time ("never" where absent): "now", "in 2h", "5d3h ago".

    `format_age` shows at most two units from the largest non-zero one (or milliseconds below a
    second), so each age is first cut to what is shown; the distinct cut ages (a few thousand for
    any number of pods) are formatted once each.
    """
    age = np.where(present, np.int64(now_ns) - at, 0)
    size = np.abs(age)
    seconds = size // NS_PER_SECOND
    shown = np.zeros_like(seconds)
    undecided = seconds > 0
    for larger, smaller in zip(_UNITS, (*_UNITS[1:], None), strict=True):
        leading = undecided & (seconds >= larger)
        if smaller is None:
            kept_part = seconds
        else:
            kept_part = seconds // smaller * smaller
        shown = np.where(leading, kept_part, shown)
        undecided &= ~leading
    # below a second: whole milliseconds ("0s" under one, kept as 1 ns so it is not "now")
    cut = np.where(seconds > 0, shown * NS_PER_SECOND, np.maximum(size // _MS * _MS, 1))
    signed = np.where(size == 0, 0, np.sign(age) * cut)
    distinct, inverse = np.unique(signed, return_inverse=True)
    words = [_ago_of_age(value) for value in distinct.tolist()]
    texts = [words[i] for i in inverse.ravel().tolist()]
    for i in np.flatnonzero(~present).tolist():
        texts[i] = "never"
    return texts


def _ago_of_age(age: int) -> str:
    if age == 0:
        return "now"
    return "in " + format_age(-age) if age < 0 else format_age(age) + " ago"
