"""The pods a wave of drains evicts that have only one possible destination, and their room.

The drain's placement check (candidates.py) finds a node for every pod, but the scheduler places
the wave's replacements where its scoring prefers (the emptiest node first), in its queue order,
and a StatefulSet's replacement is only created once its pod is gone, after the Deployment
replacements evicted with it. A pod that fits on a single node outside the nodes being deleted
loses that node as soon as another replacement of the wave is placed there first, and waits for a
new node (issue 37: a 1.5-CPU StatefulSet pod, two 900m Deployment pods, one node with room for
all three, and the scheduler put the Deployment pods there first).

So the wave leaves room for such a pod: while it is to be evicted, or evicted and its replacement
has no node yet (evictions.py, `unplaced`), no drain evicts a pod that has other destinations but
fits on its node too. The pod itself goes once no other evicted pod's replacement (but those of
its own kind) waits for a node. Pods whose only destination is the same node, and pods that do not
fit there, are not held: the placement check put them there, or elsewhere, whatever the order.
Only the PredicateChecker is asked, on the cluster as it is, the nodes being deleted left out.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable

from kubetide.autoscaler.scaledown.planning.placement import homeless
from kubetide.model import Pod
from kubetide.scheduling.checker import PredicateChecker


def sole_destinations(
    checker: PredicateChecker, pods: Iterable[Pod], deleting: Collection[str]
) -> dict[str, str]:
    """UID -> node, for those of `pods` (to be evicted) that fit on exactly one node outside
    `deleting`. A pod that fits nowhere is not among them: the drain finds that out by itself."""
    found = {}
    for pod in pods:
        standin = homeless(pod)
        first = checker.find_node(standin, skip=deleting)
        if first is not None and checker.find_node(standin, skip={*deleting, first}) is None:
            found[pod.uid] = first
    return found


def competing(checker: PredicateChecker, pods: Iterable[Pod], reserved: Collection[str]) -> set[str]:
    """The UIDs of those of `pods` that fit on one of the `reserved` nodes: evicted now, the
    scheduler could place them there first."""
    return {pod.uid for pod in pods if any(checker.fits(homeless(pod), node) is None for node in reserved)}
