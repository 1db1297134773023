"""Karpenter's "consolidated" cluster state (pkg/controllers/state/cluster.go's
ConsolidationState and MarkUnconsolidated, disruption/consolidation.go's IsConsolidated and
markConsolidated), so that a consolidation method that found nothing to do is not tried again
until the cluster changes.

Karpenter's cluster state keeps the time of its last change that might make consolidation
possible. Each consolidation method (emptiness, multi-node, single-node; drift has none) records
that time when it finds nothing to do and no disruption budget held a candidate back, and skips
itself while the time is still the one it recorded. The time moves when:

- a pod is bound to a node (a new binding; a pod already bound that changes status does not
  count), or any pod is deleted (pending, running or finished: DeletePod always counts);
- a Node or NodeClaim appears or goes, or becomes initialized;
- a NodePool's spec changes;
- five minutes pass without any of these (ConsolidationState renews itself then, for what
  Karpenter cannot watch: offerings becoming available, prices, budgets' schedules,
  consolidateAfter running out).

What does not count: a pod becoming Ready or finishing (Succeeded / Failed: its usage is released,
but only its deletion counts), a pod created pending, a node turning NotReady, taints and labels,
PodDisruptionBudgets, workloads' replica counts (their pods' bindings and deletions do), and a
disruption command that starts or is rolled back (its replacements' NodeClaims and the nodes'
deletion do).

The simulator sees the cluster through the snapshot once per pass of the autoscaler, not through
informer events: a change is noticed at the next pass (every loop and every wake-up between
loops) and dated then. A counter stands for Karpenter's timestamp, so two changes in one instant
of simulated time still count as two.
"""

from __future__ import annotations

from collections.abc import Container, Set

from kubetide.snapshot import ClusterSnapshot

# ConsolidationState renews itself after this long without a change (cluster.go: 5 minutes)
CONSOLIDATION_STATE_TTL = 300.0


class ConsolidationState:
    """The cluster's consolidation state and each method's mark on it."""

    def __init__(self) -> None:
        self.state = 0  # Karpenter's clusterState: moves on every change
        self.changed_at: float | None = None  # when it last moved
        # node -> (its snapshot stamp, the UIDs of the pods bound to it then)
        self._bound: dict[str, tuple[int, frozenset[str]]] = {}
        self._initialized: set[str] = set()  # nodes seen Ready (Karpenter's Initialized)
        self._pending: frozenset[str] = frozenset()
        self._marks: dict[str, int] = {}  # method -> the state it found nothing to do at

    # -- Karpenter's calls -------------------------------------------------------------------
    def mark_unconsolidated(self, now: float) -> None:
        self.state += 1
        self.changed_at = now

    def is_consolidated(self, method: str) -> bool:
        return self._marks.get(method) == self.state

    def mark_consolidated(self, method: str) -> None:
        self._marks[method] = self.state

    # -- what the simulator sees -------------------------------------------------------------
    def observe(
        self, snapshot: ClusterSnapshot, pending: Set[str], claimed: Container[str], now: float
    ) -> None:
        """Take in the cluster as it is now: `pending`, the UIDs of the pods bound to no node;
        `claimed`, the provider IDs of the NodeClaims launched and not yet initialized (their
        creation was a change already: the Node registering for one is not another). Then renew
        the state if it has not moved for five minutes."""
        changed = False
        bound = self._bound
        initialized = self._initialized
        for node, stamp in snapshot.stamps():
            name = node.name
            known = bound.get(name)
            if known is None or known[0] != stamp:
                pods = snapshot.pods_on(name)
                uids = frozenset(pods)
                if known is None:
                    # a Node without a NodeClaim is a new StateNode; its pods are new bindings
                    changed = changed or node.provider_id not in claimed
                    known_uids: frozenset[str] = frozenset()
                else:
                    known_uids = known[1]
                if uids != known_uids:
                    # a pod gone was deleted (a pod never moves); a pod new to the node, bound
                    changed = (
                        changed
                        or not known_uids <= uids
                        or any(not pods[uid].is_terminal for uid in uids - known_uids)
                    )
                bound[name] = (stamp, uids)
            if node.ready and name not in initialized:
                initialized.add(name)
                changed = True
        if len(bound) > len(snapshot):  # nodes gone
            present = {node.name for node in snapshot.nodes()}
            for name in [n for n in bound if n not in present]:
                del bound[name]
                initialized.discard(name)
            changed = True
        # a pending pod no longer pending was bound (counted above) or deleted
        if not self._pending <= pending:
            changed = True
        self._pending = frozenset(pending)
        if changed or self.changed_at is None or now - self.changed_at >= CONSOLIDATION_STATE_TTL:
            self.mark_unconsolidated(now)
