"""Restart safety: what to do with taints a previous run left behind.

Scale-down state lives in memory, so after a restart nodes may still carry
ToBeDeletedByClusterAutoscaler with nobody driving their deletion (the Cluster Autoscaler's users
report such nodes sitting tainted and unschedulable for days), and DeletionCandidate soft taints
may sit on nodes that are needed again. On the first loop of a fresh process, `recover`:

- runs one planner update in which those nodes are simulated first, timers taken as run out
  (they had been chosen already);
- resumes the deletion of every such node that made it into the candidate set: still removable
  together with everything else, it continues from the re-check, its taint delay and its
  eviction deadline (max-pod-eviction-time per PDB budget wave its pods need) counted from the
  taint's own timestamp (CA writes Unix seconds there), never from the restart;
- abandons a drain already past that deadline: the node is untainted, as CA does with every
  ToBeDeleted node at start;
- removes the taint from every other one, with the planner's reason for keeping it, except from
  nodes whose instance the cloud is already deleting: the previous run finished with them (it
  asked the cloud), and untainting them would let the scheduler put pods on a machine that is
  about to vanish. They stay tainted and are treated as being deleted until their Node goes;
- removes soft taints from nodes that are not unneeded (all of them: this is a one-off cleanup,
  not the per-loop trickle of update_soft_taints).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from kubetide.autoscaler.events import Event
from kubetide.autoscaler.inputs import LoopInputs
from kubetide.autoscaler.ports import (
    DELETION_CANDIDATE_TAINT,
    TO_BE_DELETED_TAINT,
    ActionError,
    CloudProvider,
    InstanceState,
)
from kubetide.autoscaler.scaledown.actuation.actuator import Actuator, resume_deadline
from kubetide.autoscaler.scaledown.planning.drainability import DrainContext, drain_node, index_workloads
from kubetide.autoscaler.scaledown.planning.pdb import PdbTracker
from kubetide.autoscaler.scaledown.planning.plan import ScaleDownPlan
from kubetide.autoscaler.scaledown.planning.planner import Planner
from kubetide.model import Node, PodDisruptionBudget, Workload
from kubetide.snapshot import ClusterSnapshot


@dataclass(slots=True)
class RecoveryReport:
    plan: ScaleDownPlan
    resumed: list[str] = field(default_factory=list)
    released: dict[str, str] = field(default_factory=dict)  # node -> why it was untainted
    cloud_deleting: list[str] = field(default_factory=list)  # left tainted: the cloud is deleting them
    soft_released: list[str] = field(default_factory=list)
    errors: dict[str, str] = field(default_factory=dict)


def tainted_at(node: Node, default: float) -> float:
    """When ToBeDeleted went on: its value is Unix seconds (CA's format), else its timeAdded."""
    for taint in node.taints:
        if taint.key == TO_BE_DELETED_TAINT:
            try:
                return float(taint.value)
            except ValueError:
                return taint.time_added if taint.time_added is not None else default
    return default


def recover(
    planner: Planner,
    actuator: Actuator,
    snapshot: ClusterSnapshot,
    *,
    cloud: CloudProvider,
    now: float,
    pdbs: Sequence[PodDisruptionBudget] = (),
    workloads: Sequence[Workload] | None = None,
    namespaces: Mapping[str, Mapping[str, str]] | None = None,
) -> RecoveryReport:
    """Call once, on the first loop after start, before the regular scale-down steps."""
    tracked = actuator.being_deleted()
    tainted = [n for n in snapshot.nodes() if n.has_taint(TO_BE_DELETED_TAINT) and n.name not in tracked]
    deleting = _cloud_deleting(cloud)
    gone = [n.name for n in tainted if n.provider_id and n.provider_id in deleting]
    orphans = [n for n in tainted if n.name not in gone]
    if not orphans and not any(n.has_taint(DELETION_CANDIDATE_TAINT) for n in snapshot.nodes()):
        # Nothing left behind: no planner pass (it would record this loop's unremovable nodes
        # before the loop's own pass, on a cluster the loop's scale-up may still change).
        return RecoveryReport(ScaleDownPlan(now=now), cloud_deleting=gone)
    inputs = LoopInputs(
        now,
        snapshot,
        pdbs=pdbs,
        workloads=workloads,
        namespaces=namespaces,
        being_deleted=tracked | set(gone),
    )
    plan = planner.update(inputs, cloud=cloud, resume={n.name for n in orphans})
    report = RecoveryReport(plan, cloud_deleting=gone)
    candidates = set(plan.candidate_set)
    # A drain between two budget waves finds its budget used up by its own evictions (their
    # replacements not Ready yet): it waits for budget, its pods fit elsewhere, and it resumes.
    resumable = candidates | set(plan.waiting_for_budget)
    index = index_workloads(workloads) if workloads is not None else None
    ctx = DrainContext(actuator.rules, PdbTracker(pdbs, ()), now, index)
    for node in orphans:
        group = cloud.node_group_for(node)
        since = tainted_at(node, now)
        why = ""
        if node.name in resumable and group is not None:
            movable = drain_node(list(snapshot.pods_on(node.name).values()), ctx).movable
            deadline = resume_deadline(since, movable, pdbs, actuator.options)
            if now < deadline:
                actuator.resume(
                    node.name,
                    group,
                    empty=plan.nodes[node.name].empty,
                    tainted_at=since,
                    surge=plan.surges.get(node.name),
                )
                report.resumed.append(node.name)
                continue
            why = (
                f"drain past its deadline at restart: tainted at {since:.0f}, evictions due to end by "
                f"{deadline:.0f} (node-delete-delay-after-taint + max-pod-eviction-time per PDB budget wave)"
            )
        status = plan.nodes.get(node.name)
        if not why:
            why = status.explain() if status is not None else "not removable"
        try:
            actuator.actions.remove_taint(node.name, TO_BE_DELETED_TAINT)
            report.released[node.name] = why
        except ActionError as exc:
            report.errors[node.name] = str(exc)
    for node in snapshot.nodes():
        if node.name in gone:
            continue
        if node.has_taint(DELETION_CANDIDATE_TAINT) and node.name not in candidates:
            try:
                actuator.actions.remove_taint(node.name, DELETION_CANDIDATE_TAINT)
                report.soft_released.append(node.name)
            except ActionError as exc:
                report.errors[node.name] = str(exc)
    return report


def release_orphans(
    actuator: Actuator, snapshot: ClusterSnapshot, *, cloud: CloudProvider, why: str, now: float
) -> dict[str, str]:
    """Untaint ToBeDeleted nodes that nobody drives: not tracked by `actuator` and not being
    deleted by the cloud. For a loop that halts (cluster unhealthy) after a restart: `recover`
    waits for the first loop that scales down, and until then a previous run's drains would keep
    their nodes cordoned. Returns node -> error for the nodes that could not be untainted."""
    tracked = actuator.being_deleted()
    deleting = _cloud_deleting(cloud)
    errors: dict[str, str] = {}
    for node in snapshot.nodes():
        if not node.has_taint(TO_BE_DELETED_TAINT) or node.name in tracked:
            continue
        if node.provider_id and node.provider_id in deleting:
            continue
        try:
            actuator.actions.remove_taint(node.name, TO_BE_DELETED_TAINT)
        except ActionError as exc:
            errors[node.name] = str(exc)
            continue
        actuator.actions.emit_event(Event.scale_down_failed(node.name, why, now))
    return errors


def _cloud_deleting(cloud: CloudProvider) -> set[str]:
    """Provider IDs of the instances the cloud is deleting."""
    return {
        instance.id
        for group in cloud.node_groups()
        for instance in group.instances()
        if instance.state is InstanceState.DELETING
    }
