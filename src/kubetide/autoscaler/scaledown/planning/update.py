"""The working state of one planner update (the design's UpdateUnneededNodes), shared by its
steps: `deleted_set` (the deleted set re-validated), `evictions` (recent evictions), `candidates` (eligibility
and the candidate search) and `timers`. It lives for one update, so nothing leaks between loops;
what is kept between loops is the Planner's."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from kubetide.autoscaler.options import AutoscalerOptions
from kubetide.autoscaler.ports import CloudProvider, NodeGroup
from kubetide.autoscaler.scaledown.planning.drainability import BlockingPod, DrainContext
from kubetide.autoscaler.scaledown.planning.placement import PodMover
from kubetide.autoscaler.scaledown.planning.plan import UNREMOVABLE, ScaleDownPlan
from kubetide.autoscaler.scaledown.reasons import NodeReason
from kubetide.model import Node, Pod
from kubetide.model.quantity import CPU, MEMORY
from kubetide.snapshot import ClusterSnapshot


class Received(NamedTuple):
    """A pod the simulation put on a node that is not its own."""

    pod: Pod
    source: str | None  # the node it was moved off; None for a recently evicted pod injected back


@dataclass(slots=True)
class Update:
    options: AutoscalerOptions
    snapshot: ClusterSnapshot  # forked by the planner for this update
    cloud: CloudProvider
    now: float
    deleted: set[str]  # deleted_set
    resume: set[str]  # nodes a restart left tainted, simulated first with their timers run out
    ctx: DrainContext  # drain rules, PDB tracker (pdbs_remaining_disruptions), workloads
    mover: PodMover
    plan: ScaleDownPlan
    old_hints: Mapping[str, Mapping[str, str]]  # pod_destination_hints of the last update
    new_hints: dict[str, dict[str, str]] = field(default_factory=dict)
    # Nodes no pod may move to: the deleted set, then every candidate as it is taken.
    skip: set[str] = field(default_factory=set)
    # Destination node -> the pods it took (from a candidate, a node being deleted, or recently
    # evicted). A destination may still become a candidate, as in the Cluster Autoscaler, but only
    # if these pods move on too: their reserved room must never be handed out twice.
    received: dict[str, list[Received]] = field(default_factory=dict)
    # Place the pods of nodes waiting for budget on paper (placement.move_on_paper); False moves
    # them as any other trial (the property tests compare the two).
    on_paper: bool = True
    # What `cloud.node_group_for` answered for each node, in slot order, this update (the search
    # key asks it of every node); None: eligibility asks it.
    groups: Sequence[NodeGroup | None] | None = None

    def __post_init__(self) -> None:
        self.skip.update(self.deleted)

    def receive(self, dest: str, pod: Pod, source: str | None) -> None:
        self.received.setdefault(dest, []).append(Received(pod, source))

    def mark(
        self,
        node: Node,
        empty: bool,
        reason: NodeReason,
        blocking: BlockingPod | None = None,
        detail: str = "",
        blockers: tuple[BlockingPod, ...] = (),
        unplaced: str = "",
    ) -> None:
        """Record why an eligible node is not in the candidate set (`blockers`: every pod that
        forbids its drain, in CA's pod order; `blocking` is the one the reason names)."""
        status = self.plan.nodes[node.name]
        status.status = UNREMOVABLE
        status.empty = empty
        status.reason = reason
        status.blocking_pod = blocking
        status.detail = detail
        status.blockers = blockers if blockers or blocking is None else (blocking,)
        status.unplaced = unplaced


def pod_order(pod: Pod) -> tuple[int, int, int, str, str]:
    """The order a node's pods are moved in, shared by the deleted set and candidates, and the
    order the actuator evicts them in."""
    # The scheduler's queue order first: higher priority first, whatever the creation times. Then
    # largest first (first-fit decreasing packs better; the actuator evicts the largest pods of a
    # priority a round before the others, so that their replacements are older and the scheduler
    # places them first too), then by name: the same order every loop.
    requests, meta = pod.requests, pod.meta
    return (-pod.priority, -requests.get(CPU, 0), -requests.get(MEMORY, 0), meta.namespace, meta.name)


def size_class(pod: Pod) -> tuple[int, int, int]:
    """`pod_order` without the name: pods the actuator may evict in the same round."""
    requests = pod.requests
    return (-pod.priority, -requests.get(CPU, 0), -requests.get(MEMORY, 0))
