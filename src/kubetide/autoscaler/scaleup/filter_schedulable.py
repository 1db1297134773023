"""Filter out pending pods that need no new node.

A pod marked unschedulable may fit now: space freed since the scheduler tried, or a node that the
autoscaler already asked for (an upcoming node, represented by a template copy the caller added
to the snapshot). Scaling up for it would buy a node nobody needs. Each pod that fits is bound
where it fits, so the next one sees the space taken and two pods never count on the same room.

Pods are tried in kube-scheduler's queue order (priority first), so when room is short the
important pods get it, as they will in the real scheduler. Nodes being deleted by the autoscaler
(ToBeDeletedByClusterAutoscaler) are never used, even by pods that tolerate the taint.

Two shortcuts keep this linear in practice, both exact:

- pods of one equivalence group start at the node the previous member went to (`hint`, then the
  scan continues from that slot), so a group of identical pods walks the nodes once;
- once a member of a group fits nowhere, the remaining members are not tried: binding pods only
  takes resources and adds anti-affinity, so a node that refused one member refuses the rest.
  Groups whose placement can *improve* as pods are bound (required pod affinity, DoNotSchedule
  spread) are exempt and are tried pod by pod.

By default the snapshot is left as found. With `keep=True` the bindings stay, for a caller that
has forked and wants the estimator to see them (the orchestrator does), and must revert.
"""

from __future__ import annotations

from collections.abc import Container, Sequence
from dataclasses import dataclass, field

from kubetide.autoscaler.ports import TO_BE_DELETED_TAINT
from kubetide.autoscaler.scaleup.equivalence import PodGroup, group_pods
from kubetide.model import Pod
from kubetide.scheduling import PredicateChecker, queue_order
from kubetide.snapshot import ClusterSnapshot


@dataclass(slots=True)
class FilterResult:
    pending: list[Pod] = field(default_factory=list)  # still need a new node, in queue order
    placed: dict[str, str] = field(default_factory=dict)  # pod key -> node it fits on
    placed_uids: set[str] = field(default_factory=set)


def nodes_being_deleted(snapshot: ClusterSnapshot) -> set[str]:
    return {n.name for n in snapshot.nodes() if n.has_taint(TO_BE_DELETED_TAINT)}


def _may_improve(pod: Pod) -> bool:
    return bool(pod.affinity.pod_required) or any(
        c.when_unsatisfiable == "DoNotSchedule" for c in pod.topology_spread
    )


def filter_schedulable(
    snapshot: ClusterSnapshot,
    checker: PredicateChecker,
    pods: Sequence[Pod],
    *,
    skip: Container[str] | None = None,
    keep: bool = False,
    groups: Sequence[PodGroup] | None = None,
) -> FilterResult:
    """Split `pods` into those that fit somewhere now (bound there) and those still pending.

    `skip`: node names never to use; defaults to the nodes being deleted. `groups`: the
    equivalence groups of `pods`, when the caller already has them.
    """
    if skip is None:
        skip = nodes_being_deleted(snapshot)
    skip = skip or None
    ordered = sorted(pods, key=queue_order)
    group_of: dict[str, int] = {}
    volatile: list[bool] = []
    for number, group in enumerate(groups if groups is not None else group_pods(pods)):
        volatile.append(_may_improve(group.exemplar))
        for pod in group.pods:
            group_of[pod.uid] = number
    result = FilterResult()
    failed: set[int] = set()
    last: dict[int, str] = {}
    snapshot.fork()
    try:
        for pod in ordered:
            number = group_of[pod.uid]
            if number in failed:
                result.pending.append(pod)
                continue
            hint = last.get(number)
            start = snapshot.slot_of(hint) if hint is not None and hint in snapshot else 0
            name = checker.find_node(pod, hint=hint, skip=skip, start=start)
            if name is None:
                result.pending.append(pod)
                if not volatile[number]:
                    failed.add(number)
                continue
            snapshot.add_pod(pod, name)
            last[number] = name
            result.placed[pod.key] = name
            result.placed_uids.add(pod.uid)
    except BaseException:
        snapshot.revert()
        raise
    if keep:
        snapshot.commit()
    else:
        snapshot.revert()
    return result
