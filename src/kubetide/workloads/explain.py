"""Why one pod is deleted before another, in words.

`reason(ranking, first, second)` finds the first key column that tells the two pods apart (the
same comparison the sort made) and says what it means: "unscheduled", "deletion cost 10 < 100",
"2 related pods on node-3 (vs 1 on node-1)", "ready 2h ago vs 5d ago (bucket 42 < 48)", ...
`explain_order` does this for every deleted pod against the first pod that is kept.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from kubetide.model.pod import Pod
from kubetide.workloads import explain_columns
from kubetide.workloads.ranking import Ranking, rank
from kubetide.workloads.timebuckets import format_age, to_ns

CRITERIA = {
    0: "every pod goes",
    1: "unscheduled",
    2: "phase",
    3: "readiness",
    4: "deletion cost",
    5: "related pods on the node",
    6: "ready time",
    7: "restarts",
    8: "creation time",
    9: "tie",
}


@dataclass(frozen=True, slots=True)
class Reason:
    """The criterion (1-9 as in ranking.py; 0 = nothing to compare with) and what it says."""

    criterion: int
    text: str

    def __str__(self) -> str:
        return self.text


def reason(ranking: Ranking, first: Pod, second: Pod) -> Reason:
    """Why `first` comes before `second` in `ranking` (both must be among its pods)."""
    a, b = ranking.key(first), ranking.key(second)
    if a == b:
        return Reason(9, "identical (no criterion tells them apart)")
    column = next(i for i in range(7) if a[i] != b[i])
    if column == 0:
        return _criteria_1_to_4(ranking, first, second)
    if column == 1:
        node = first.node_name or "no node"
        other = second.node_name or "no node"
        count, other_count = ranking.rank_of(first), ranking.rank_of(second)
        noun = "pod" if count == 1 else "pods"
        return Reason(5, f"{count} related {noun} on {node} (vs {other_count} on {other})")
    now_ns = ranking.now_ns
    if column in (2, 3):
        ready_a, ready_b = _time(first.ready_transition), _time(second.ready_transition)
        if ready_a is None:
            return Reason(6, "no ready time (counts as the newest)")
        ages = f"ready {_ago(now_ns, ready_a)} vs {_ago(now_ns, ready_b)}"
        if not ranking.logarithmic:
            return Reason(6, f"{ages} (more recently ready first)")
        if column == 2:
            return Reason(6, f"{ages} (bucket {a[2]} < {b[2]})")
        if ready_a == ready_b:
            return Reason(
                6,
                f"same age bucket, UID ordering (both ready {_ago(now_ns, ready_a)}, bucket {a[2]}; "
                "a pod ready at another time in this bucket has a UID between theirs)",
            )
        return Reason(6, f"same age bucket, UID ordering ({ages}, bucket {a[2]})")
    if column == 4:
        if first.restarts != second.restarts:
            return Reason(7, f"more restarts ({first.restarts} > {second.restarts})")
        return Reason(7, f"more sidecar restarts ({first.sidecar_restarts} > {second.sidecar_restarts})")
    created_a = _time(first.meta.creation_timestamp)
    created_b = _time(second.meta.creation_timestamp)
    if column == 5:
        if created_a is None:
            return Reason(8, "no creation time (counts as the newest)")
        ages = f"created {_ago(now_ns, created_a)} vs {_ago(now_ns, created_b)}"
        if not ranking.logarithmic:
            return Reason(8, f"{ages} (newer first)")
        return Reason(8, f"{ages} (bucket {a[5]} < {b[5]})")
    # column 6: position in (UID, name) order
    if ranking.logarithmic and created_a is not None and created_b is not None and created_a != created_b:
        ages = f"created {_ago(now_ns, created_a)} vs {_ago(now_ns, created_b)}"
        return Reason(8, f"same age bucket, UID ordering ({ages}, bucket {a[5]})")
    if first.meta.uid == second.meta.uid:
        return Reason(9, explain_columns.TIE_BY_NAME)
    return Reason(9, explain_columns.TIE_BY_UID)


def _criteria_1_to_4(ranking: Ranking, first: Pod, second: Pod) -> Reason:
    if not first.node_name and second.node_name:
        return Reason(1, "unscheduled")
    if first.node_name and not second.node_name:  # cannot happen for first < second
        return Reason(1, "scheduled")
    if first.phase != second.phase and _phase(first) != _phase(second):
        if first.phase == "Pending":
            return Reason(2, "pending")
        if first.phase == "Unknown":
            return Reason(2, "phase Unknown")
        return Reason(2, f"phase {first.phase} (counts as Pending)")
    if first.ready != second.ready:
        return Reason(3, "not ready")
    return Reason(4, f"deletion cost {ranking.cost_of(first)} < {ranking.cost_of(second)}")


def _phase(pod: Pod) -> int:
    return {"Pending": 0, "Unknown": 1, "Running": 2}.get(pod.phase, 0)


def _time(moment: float | None) -> int | None:
    return None if moment is None else to_ns(moment)


def _ago(now_ns: int, moment_ns: int | None) -> str:
    if moment_ns is None:
        return "never"
    age = now_ns - moment_ns
    return "now" if age == 0 else ("in " + format_age(-age) if age < 0 else format_age(age) + " ago")


def explain_ranking(ranking: Ranking, diff: int) -> list[tuple[Pod, Reason]]:
    """Each of the first `diff` pods with why it goes before the first kept pod."""
    order = ranking.order
    criteria, texts = deletion_reasons(ranking, diff)
    return list(zip(order, map(Reason, criteria, texts)))


def deletion_reasons(ranking: Ranking, diff: int, *, columns: bool = True) -> tuple[list[int], list[str]]:
    """`explain_ranking`'s criteria and texts as two lists (no Reason per pod). A NumPy ranking is
    explained from its columns (explain_columns.py) unless `columns=False`, without a Pod (for a
    ranking of rows, model/pod_columns.py); the texts are the same."""
    if diff <= 0:
        return [], []
    count = len(ranking.index)
    if diff >= count:
        return [0] * count, ["every pod goes"] * count
    if columns and explain_columns.explainable(ranking):
        return explain_columns.reasons(ranking, diff)
    order = ranking.order
    kept = order[diff]
    explained = [reason(ranking, pod, kept) for pod in order[:diff]]
    return [r.criterion for r in explained], [r.text for r in explained]


def explain_order(
    pods: Sequence[Pod],
    diff: int,
    now: float,
    related_pods: Iterable[Pod] | None = None,
    *,
    logarithmic: bool = True,
    deletion_cost: bool = True,
    owner_has_controller: bool = True,
) -> list[tuple[Pod, Reason]]:
    """The pods `pods_to_delete` would return, each with the criterion that put it before the next
    kept pod. When every pod goes there is no ranking (Reason 0, "every pod goes")."""
    if diff >= len(pods):
        return [(pod, Reason(0, "every pod goes")) for pod in pods] if diff > 0 else []
    ranking = rank(
        pods,
        now,
        related_pods,
        logarithmic=logarithmic,
        deletion_cost=deletion_cost,
        owner_has_controller=owner_has_controller,
    )
    return explain_ranking(ranking, diff)
