"""What one planner update decided, node by node, in a form `kubetide plan` can print.

Every node gets a status (removable, unremovable, being_deleted) and, when it is not going away
now, the reason in the Cluster Autoscaler's vocabulary plus the blocking pod when a pod decided it.
`detail` says the rest in words (which pod had no place to go, which timer is running) for the
human output; the JSON keeps to the documented fields.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kubetide.autoscaler.scaledown.planning.budgets import BudgetDecision
from kubetide.autoscaler.scaledown.planning.drainability import BlockingPod, NodeDrain
from kubetide.autoscaler.scaledown.planning.estimate import DrainEstimate, ScaleDownSchedule
from kubetide.autoscaler.scaledown.planning.surge import Surge
from kubetide.autoscaler.scaledown.reasons import NodeReason
from kubetide.autoscaler.scaledown.unblock_answer import Unblock

REMOVABLE = "removable"
UNREMOVABLE = "unremovable"
BEING_DELETED = "being_deleted"


@dataclass(slots=True)
class NodeStatus:
    name: str
    status: str  # REMOVABLE | UNREMOVABLE | BEING_DELETED
    empty: bool
    utilization: float | None
    reason: NodeReason | None = None
    blocking_pod: BlockingPod | None = None
    detail: str = ""
    estimate: DrainEstimate | None = None  # candidates: how long the node takes to empty
    # Every pod that forbids the drain, in CA's pod order (the node's pod order, the drainability
    # rules then the budgets per pod): `blocking_pod` is the first of them when a pod decided.
    blockers: tuple[BlockingPod, ...] = ()
    unplaced: str = ""  # NoPlaceToMovePods: the pod (key) that found no other node
    unblock: Unblock | None = None  # the smallest change that would make it removable, if asked

    def to_json(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "empty": self.empty,
            "utilization": None if self.utilization is None else round(self.utilization, 4),
            "reason": None if self.reason is None else str(self.reason),
            "blocking_pod": None if self.blocking_pod is None else self.blocking_pod.to_json(),
            "blocking_pods": [b.to_json() for b in self.blockers],
            "estimated_drain_seconds": None if self.estimate is None else self.estimate.seconds,
            "drain_estimate": None if self.estimate is None else self.estimate.to_json(),
            "unblock": None if self.unblock is None else self.unblock.to_json(),
        }

    @property
    def blocked_by(self) -> NodeReason | None:
        """The reason, with a remembered failure (RecentlyUnremovable, until its recheck) named
        by what failed, so that what is shown of a node does not flip between loops."""
        if self.reason is NodeReason.RECENTLY_UNREMOVABLE:
            if self.blockers:
                return NodeReason.BLOCKED_BY_POD
            if self.unplaced:
                return NodeReason.NO_PLACE_TO_MOVE_PODS
        return self.reason

    def more_blockers(self) -> str:
        """ " +N more" when other pods block the drain too, else ""."""
        more = len(self.blockers) - 1
        return f" +{more} more" if more > 0 else ""

    def explain(self) -> str:
        """One line answering "why is this node (not) scaled down?"."""
        util = "" if self.utilization is None else f", utilization {self.utilization:.2f}"
        head = f"{self.name}: {self.status}{' (empty)' if self.empty else ''}{util}"
        if self.reason is None:
            return head + (f": {self.detail}" if self.detail else "")
        why = str(self.reason)
        if self.blocking_pod is not None:
            why += f" (pod {self.blocking_pod.pod.key}: {self.blocking_pod.reason}{self.more_blockers()})"
        if self.detail:
            why += f": {self.detail}"
        return f"{head}: {why}"


@dataclass(frozen=True, slots=True)
class Replacement:
    """Nodes to replace by one new node of `group_id` (kubetide's cheaper-group replacement):
    the node is launched first, the nodes drained once it is Ready."""

    nodes: tuple[str, ...]
    group_id: str

    def to_json(self) -> dict[str, Any]:
        return {"nodes": list(self.nodes), "with": self.group_id}


@dataclass(slots=True)
class ScaleDownPlan:
    now: float
    nodes: dict[str, NodeStatus] = field(default_factory=dict)
    candidate_set: list[str] = field(default_factory=list)
    # Candidates a budget lets go only pod by pod (CA's IsRisky), and why: removed after the others.
    risky: dict[str, str] = field(default_factory=dict)
    # Unneeded nodes held back only by budget other drains or candidates use for now; they keep
    # their unneeded time (see planner.py).
    waiting_for_budget: list[str] = field(default_factory=list)
    # Candidates whose budget-pinned pods leave by their Deployment's rollout (surge.py).
    surges: dict[str, Surge] = field(default_factory=dict)
    # Removable now (timers run out, no cooldown); budgets crop these in the actuator.
    empty_to_delete: list[str] = field(default_factory=list)
    drain_to_delete: list[str] = field(default_factory=list)
    # Nodes to replace by a cheaper one, launched first (replacement.py); drained in a later loop.
    replacements: list[Replacement] = field(default_factory=list)
    destinations: dict[str, str] = field(default_factory=dict)  # pod key -> node
    drains: dict[str, NodeDrain] = field(default_factory=dict)  # per candidate
    # Why no new candidates were added this loop (deleted nodes' pods or recent evictions do not
    # fit any more), or None.
    validation_failure: str | None = None
    cooldown: str | None = None
    timed_out: bool = False
    simulated: int = 0  # nodes whose drain was simulated
    on_paper: int = 0  # of them, nodes waiting for budget with pods placed on paper
    injected: dict[str, str] = field(default_factory=dict)  # recently evicted pod key -> node
    pdb_remaining: dict[str, int] = field(default_factory=dict)
    # The drains of the candidates and the nodes waiting for budget on paper (estimate.py): set by
    # the loop's decision, None for a plan alone.
    schedule: ScaleDownSchedule | None = None

    def removable_now(self) -> list[str]:
        return [*self.empty_to_delete, *self.drain_to_delete]

    def to_json(self, budget: BudgetDecision | None = None) -> dict[str, Any]:
        """The `scale_down` section of `kubetide plan --json`.

        `to_delete` lists the nodes removable now; pass the actuator's budget decision to show
        only those the parallelism budgets let start.
        """
        empty, drain = (
            (self.empty_to_delete, self.drain_to_delete) if budget is None else (budget.empty, budget.drain)
        )
        nodes = {name: status.to_json() for name, status in self.nodes.items()}
        for name, scheduled in self.schedule.drains.items() if self.schedule is not None else ():
            # The schedule's: it shares the budgets with the other drains (the waiting nodes too).
            # An empty node is deleted without a drain: it has none.
            if not self.nodes[name].empty:
                nodes[name]["estimated_drain_seconds"] = round(scheduled.seconds, 1)
        return {
            "nodes": nodes,
            "candidate_set": list(self.candidate_set),
            "risky": sorted(self.risky),
            "waiting_for_budget": list(self.waiting_for_budget),
            "surge_before_evict": {
                node: [f"{ns}/{name}" for ns, name in surge.deployments]
                for node, surge in self.surges.items()
            },
            "to_delete": {"empty": list(empty), "drain": list(drain)},
            # Only when there is one: the document of a plan without is as it was.
            **({"replace": [r.to_json() for r in self.replacements]} if self.replacements else {}),
            "destinations": dict(self.destinations),
            **({} if self.schedule is None else self.schedule.to_json()),
        }

    def explain(self, node: str) -> str:
        return self.nodes[node].explain()

    def summary(self) -> list[str]:
        """Human lines: the loop-wide notes first, then one line per node."""
        lines = []
        if self.validation_failure:
            lines.append(f"no new scale-down candidates this loop: {self.validation_failure}")
        if self.cooldown:
            lines.append(f"scale-down paused: {self.cooldown}")
        for r in self.replacements:
            lines.append(f"replacing {', '.join(r.nodes)} by a new node of {r.group_id} (launched first)")
        if self.timed_out:
            lines.append("scale-down-simulation-timeout reached; remaining nodes were not simulated")
        lines.extend(status.explain() for status in self.nodes.values())
        return lines
