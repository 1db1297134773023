"""Reusing the last loop's scale-down search when nothing it read has changed (issue 30).

Steps 1-4 of an update (revalidation, recent evictions, eligibility, the candidate search) are a
function of what they read, not of the loop: the nodes and their pods (the snapshot's change
stamps, which a what-if's revert gives back), the node groups (which group each node is in, their
sizes and, while nodes are being deleted, their instances), the PDBs, the workloads, the
namespaces, the pending pods nominated to nodes, the deleted and resume sets, the recent
evictions, last loop's hints, the unneeded timers' start times (they order the search), the
non-candidate set as it stands at `now`, and `now` itself only where a drain rule or the
eligibility compares it with a pod's time: a pod terminating for longer than its grace period
(plus a margin), a kube-system pod younger than the blocking timeout. Those comparisons are kept
as their answers (`TimeEdges`), so the key changes when one flips and not with every second.

`SearchKey` holds all of that; when this loop's key equals the last one's, the search's outcome
(`SearchRecord`) is the same, and is replayed instead of recomputed: the statuses, the candidate
and waiting sets, the drains, the destinations and hints, the PDBs' disruptions left, and the
failures (stamped with this loop's `now`, as a new simulation would). Step 5 (timers) always runs.
Never reused: a search cut short by scale-down-simulation-timeout (it depends on the wall clock),
or a search guarded by usage samples (they change every loop).

The key is compared in one pass of tuple equality (identity first): O(nodes) cheap comparisons in
a loop that would otherwise simulate nodes' drains.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from kubetide.autoscaler.ports import CloudProvider, NodeGroup
from kubetide.autoscaler.scaledown.planning.candidates import Search
from kubetide.autoscaler.scaledown.planning.drainability import KUBE_SYSTEM, LONG_TERMINATING_EXTRA, NodeDrain
from kubetide.autoscaler.scaledown.planning.plan import NodeStatus, ScaleDownPlan
from kubetide.autoscaler.scaledown.planning.state import Unremovable
from kubetide.model import Pod, PodDisruptionBudget, Workload


def time_edges(pods: Iterable[Pod], system_pod_timeout: float | None) -> tuple[float, ...]:
    """The times at which a verdict about one of these pods flips as `now` passes them: when a
    terminating pod becomes long-terminating (the drain rules and eligibility drop it), and, when
    `system_pod_timeout` applies (skip-nodes-with-system-pods), when a kube-system pod stops
    blocking for its age."""
    edges: list[float] = []
    for pod in pods:
        meta = pod.meta
        deleted = meta.deletion_timestamp
        if deleted is not None:
            edges.append(deleted + pod.termination_grace_period + LONG_TERMINATING_EXTRA)
        if system_pod_timeout is not None and meta.namespace == KUBE_SYSTEM:
            created = meta.creation_timestamp
            if created is not None:
                edges.append(created + system_pod_timeout)
    return tuple(edges)


@dataclass(frozen=True, slots=True)
class SearchKey:
    """Everything steps 1-4 read, compared with `==` (see the module's docstring)."""

    stamps: tuple[int, ...]  # every node's change stamp, in the snapshot's order
    groups: tuple[NodeGroup | None, ...]  # per node, the group the cloud answers (by identity)
    group_sizes: tuple[tuple[str, int, int, int], ...]  # (id, target, min, max)
    instances: tuple[object, ...]  # (instance id, state) per group, only while deletions run
    time_flips: tuple[bool, ...]  # per time edge, whether now has passed it
    deleted: frozenset[str]
    resume: frozenset[str]
    pdbs: tuple[PodDisruptionBudget, ...]
    workloads: tuple[Workload, ...] | None
    namespaces: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] | None
    nominated: tuple[Pod, ...]
    recent_evictions: tuple[object, ...]
    hints: tuple[tuple[str, tuple[tuple[str, str], ...]], ...]
    unneeded_since: tuple[tuple[str, float], ...]
    unremovable: tuple[tuple[str, Unremovable], ...]  # the non-candidates still waiting at `now`
    limit: int  # how many unneeded nodes the search looks for (limit.py)


def group_facts(
    cloud: CloudProvider, deleted: Iterable[str]
) -> tuple[tuple[tuple[str, int, int, int], ...], tuple[object, ...]]:
    """(sizes per group, instances' states while any node is being deleted): what RemovalLimits
    reads of the cloud."""
    groups = list(cloud.node_groups())
    sizes = tuple((g.id, g.target_size(), g.min_size, g.max_size) for g in groups)
    instances: tuple[object, ...] = ()
    if any(True for _ in deleted):
        instances = tuple((g.id, tuple((i.id, i.state) for i in g.instances())) for g in groups)
    return sizes, instances


def frozen_mapping(m: Mapping[str, Mapping[str, str]]) -> tuple[tuple[str, tuple[tuple[str, str], ...]], ...]:
    return tuple((k, tuple(v.items())) for k, v in m.items())


@dataclass(slots=True)
class SearchRecord:
    """What steps 1-4 left in the plan and for the next loop, under the key they were run with."""

    key: SearchKey
    statuses: dict[str, NodeStatus]  # as the search left them (the timers amend candidates')
    found: Search
    failures: dict[str, Unremovable]  # this search's non-candidates (`at` is re-stamped)
    hints: dict[str, dict[str, str]]
    drains: dict[str, NodeDrain]
    destinations: dict[str, str]
    injected: dict[str, str]
    validation_failure: str | None
    pdb_remaining: dict[str, int]

    @classmethod
    def of(
        cls,
        key: SearchKey,
        plan: ScaleDownPlan,
        found: Search,
        failures: dict[str, Unremovable],
        hints: dict[str, dict[str, str]],
    ) -> SearchRecord:
        statuses = dict(plan.nodes)
        for name in _amended(found):
            statuses[name] = copy.copy(statuses[name])
        return cls(
            key,
            statuses,
            found,
            dict(failures),
            hints,
            dict(plan.drains),
            dict(plan.destinations),
            dict(plan.injected),
            plan.validation_failure,
            dict(plan.pdb_remaining),
        )

    def replay(self, plan: ScaleDownPlan) -> tuple[Search, dict[str, Unremovable]]:
        """Fill `plan` as the search did; returns what it found and its failures at `plan.now`."""
        found = self.found
        plan.nodes = dict(self.statuses)
        for name in _amended(found):
            plan.nodes[name] = copy.copy(self.statuses[name])  # the timers write on them
        plan.drains = dict(self.drains)
        plan.destinations = dict(self.destinations)
        plan.injected = dict(self.injected)
        plan.validation_failure = self.validation_failure
        plan.pdb_remaining = dict(self.pdb_remaining)
        plan.candidate_set = list(found.candidates)
        plan.waiting_for_budget = list(found.waiting)
        plan.surges = dict(found.surges)
        plan.risky = dict(found.risky)
        # Stamped with this loop's `now`, every other field (blockers, the unplaced pod) as found.
        failures = {name: dataclasses.replace(f, at=plan.now) for name, f in self.failures.items()}
        return Search(
            list(found.candidates), dict(found.risky), list(found.waiting), dict(found.surges)
        ), failures


def _amended(found: Search) -> Sequence[str]:
    """The statuses step 5 changes: the candidates'."""
    return found.candidates
