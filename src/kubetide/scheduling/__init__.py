"""Scheduler simulation: kube-scheduler's filters (and a documented scoring) on a ClusterSnapshot.

The whole API::

    checker = PredicateChecker(snapshot, namespaces=None)
        # Observes `snapshot` (incremental indexes follow every change, fork and revert included)
        # until checker.close(). `namespaces`: name -> labels, for namespaceSelector in pod
        # affinity terms; unlisted namespaces carry only kubernetes.io/metadata.name.

    checker.fits(pod, node_name) -> Unfit | None
        # None when the pod fits there now; else Unfit(.plugin, .reason, .reasons) naming the first
        # failing filter in kube-scheduler's order, with its message text.

    checker.find_node(pod, *, hint=None, skip=None, start=0) -> str | None
        # "First node that fits" (filter-out-schedulable, drain simulation): `hint` first, then
        # nodes in slot order from slot `start`, wrapping around, never a name in `skip`.

    checker.best_node(pod) -> str | None
        # What kube-scheduler would pick: highest score among feasible nodes, lowest slot on ties
        # (see kubetide.scheduling.scoring for the plugins and weights).

    checker.reasons(pod) -> dict[str, int]     # reason text -> number of nodes
    checker.explain(pod) -> str                # "0/5 nodes are available: 2 ..., 3 Insufficient cpu."
        # Both worked out once per equivalence class (and set of bound pods' anti-affinity terms
        # selecting the pod) per snapshot version: explaining 12,000 pods of one shape costs
        # one pass over the nodes, with the same text per pod as a pass for that pod alone.

    schedule_pods(snapshot, pods, checker) -> dict[str, str | None]
        # Pod UID -> node or None: places pending pods in queue order (priority desc, creation
        # time, name) with best_node and binds each (snapshot.add_pod) so later pods see it.

    queue_order(pod) -> tuple
        # The sort key schedule_pods uses (kube-scheduler's PrioritySort), for callers that place
        # pods one at a time themselves.

Filters, in kube-scheduler's order: NodeUnschedulable, NodeName, TaintToleration, NodeAffinity
(nodeSelector + required node affinity), NodePorts, NodeResourcesFit (every resource column),
PodTopologySpread (DoNotSchedule), InterPodAffinity (required affinity, anti-affinity, and bound
pods' anti-affinity against the incoming pod).

Where a pod is bound is what the snapshot says, never `pod.node_name`; `pod.node_name` is read only
as the NodeName filter's request. A caller re-placing a bound pod (drain simulation) passes a copy
with `node_name=""`, as the Cluster Autoscaler does, or the pod fits only where it already is.
The pod being placed must not itself be bound in the snapshot, or it counts against itself.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kubetide.lazy import lazy_exports

if TYPE_CHECKING:
    from kubetide.scheduling.checker import PredicateChecker
    from kubetide.scheduling.queue import queue_order, schedule_pods
    from kubetide.scheduling.reasons import Unfit
else:
    # Each name's module is imported when the name is first read (kubetide.lazy says why).
    __getattr__ = lazy_exports(
        __name__,
        {
            "kubetide.scheduling.checker": ("PredicateChecker",),
            "kubetide.scheduling.queue": ("queue_order", "schedule_pods"),
            "kubetide.scheduling.reasons": ("Unfit",),
        },
    )

__all__ = ["PredicateChecker", "Unfit", "queue_order", "schedule_pods"]
