"""Restart safety: what to do with taints and replacements a previous run left behind.

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
  not the per-loop trickle of update_soft_taints);
- takes back the cheaper-group replacements in flight (replacement.py): the loop records each on
  the nodes it stands in for (`ReplacementRecords`, the REPLACEMENT_ANNOTATION: the group and
  when its node was asked for), so the new process waits for that node and drains them once it
  is Ready, rather than launching a second one or removing the first as an empty node. A record
  is dropped (and its annotation removed) when it does not parse, the replacement is switched
  off, its group is gone, its node is already being deleted or it is past
  max-node-provision-time.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from kubetide.autoscaler.events import Event
from kubetide.autoscaler.inputs import LoopInputs
from kubetide.autoscaler.ports import (
    DELETION_CANDIDATE_TAINT,
    TO_BE_DELETED_TAINT,
    ActionError,
    CloudProvider,
    ClusterActions,
    InstanceState,
)
from kubetide.autoscaler.scaledown.actuation.actuator import Actuator, resume_deadline
from kubetide.autoscaler.scaledown.planning.drainability import DrainContext, drain_node, index_workloads
from kubetide.autoscaler.scaledown.planning.pdb import PdbTracker
from kubetide.autoscaler.scaledown.planning.plan import ScaleDownPlan
from kubetide.autoscaler.scaledown.planning.planner import Planner
from kubetide.autoscaler.scaledown.planning.replacement import PendingReplacement
from kubetide.durations import rfc3339
from kubetide.model import Node, PodDisruptionBudget, Workload
from kubetide.model.reader import parse_time
from kubetide.snapshot import ClusterSnapshot

# On each node a launched replacement stands in for, while it does: {"nodeGroup": ID,
# "launchedAt": RFC 3339}. kubetide's own (CA has no replacement to remember).
REPLACEMENT_ANNOTATION = "kubetide.io/replaced-by"


def replacement_record(pending: PendingReplacement) -> str:
    return json.dumps({"nodeGroup": pending.group_id, "launchedAt": rfc3339(pending.launched_at)})


def parse_replacement_record(text: str) -> tuple[str, float]:
    """(group id, launch time) of a record. Raises ValueError."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        raise ValueError(f"{text!r} is not JSON") from None
    group = data.get("nodeGroup") if isinstance(data, dict) else None
    launched = data.get("launchedAt") if isinstance(data, dict) else None
    if not isinstance(group, str) or not group or not isinstance(launched, str):
        raise ValueError(f'{text!r}: expected {{"nodeGroup": ID, "launchedAt": RFC 3339 time}}')
    return group, parse_time(launched)


class ReplacementRecords:
    """Keeps REPLACEMENT_ANNOTATION on exactly the nodes the planner's pending replacements stand
    in for: written when a replacement is launched, removed once the node is forgotten (gone,
    being deleted, or its replacement given up). Only what this process wrote or recovered is
    compared, so a loop costs a lookup per pending node."""

    def __init__(self) -> None:
        self.written: dict[str, str] = {}  # node -> the record it carries

    def sync(
        self, actions: ClusterActions, replacing: Mapping[str, PendingReplacement], snapshot: ClusterSnapshot
    ) -> None:
        wanted = {name: replacement_record(p) for name, p in replacing.items() if name in snapshot}
        for name, record in wanted.items():
            if self.written.get(name) != record:
                try:
                    actions.annotate_node(name, REPLACEMENT_ANNOTATION, record)
                except ActionError:
                    continue  # the next loop tries again
                self.written[name] = record
        for name in [n for n in self.written if n not in wanted]:
            if name in snapshot:
                try:
                    actions.annotate_node(name, REPLACEMENT_ANNOTATION, None)
                except ActionError:
                    continue
            del self.written[name]


@dataclass(slots=True)
class RecoveryReport:
    plan: ScaleDownPlan
    resumed: list[str] = field(default_factory=list)
    released: dict[str, str] = field(default_factory=dict)  # node -> why it was untainted
    cloud_deleting: list[str] = field(default_factory=list)  # left tainted: the cloud is deleting them
    soft_released: list[str] = field(default_factory=list)
    replacing: dict[str, str] = field(default_factory=dict)  # node -> the group replacing it
    replacement_dropped: dict[str, str] = field(default_factory=dict)  # node -> why its record went
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
    records: ReplacementRecords | None = None,
) -> RecoveryReport:
    """Call once, on the first loop after start, before the regular scale-down steps. With
    `records`, the replacements in flight are taken back first (and `records` learns them)."""
    replacing: dict[str, str] = {}
    dropped: dict[str, str] = {}
    if records is not None:
        replacing, dropped = _recover_replacements(planner, actuator, snapshot, cloud, now, records)
    report = _recover_taints(planner, actuator, snapshot, cloud, now, pdbs, workloads, namespaces)
    report.replacing, report.replacement_dropped = replacing, dropped
    return report


def _recover_taints(
    planner: Planner,
    actuator: Actuator,
    snapshot: ClusterSnapshot,
    cloud: CloudProvider,
    now: float,
    pdbs: Sequence[PodDisruptionBudget],
    workloads: Sequence[Workload] | None,
    namespaces: Mapping[str, Mapping[str, str]] | None,
) -> RecoveryReport:
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


def _recover_replacements(
    planner: Planner,
    actuator: Actuator,
    snapshot: ClusterSnapshot,
    cloud: CloudProvider,
    now: float,
    records: ReplacementRecords,
) -> tuple[dict[str, str], dict[str, str]]:
    """The records a previous run left, back in the planner (node -> group), or dropped (node ->
    why, the annotation removed and a ScaleDownFailed Event said)."""
    recorded = [
        (n, n.annotations[REPLACEMENT_ANNOTATION])
        for n in snapshot.nodes()
        if REPLACEMENT_ANNOTATION in n.annotations
    ]
    if not recorded:
        return {}, {}
    groups = {g.id for g in cloud.node_groups()}
    pending: dict[tuple[str, float], PendingReplacement] = {}
    replacing: dict[str, str] = {}
    dropped: dict[str, str] = {}
    for node, text in recorded:
        try:
            group_id, launched_at = parse_replacement_record(text)
            why = _why_dropped(node, group_id, launched_at, actuator, groups, now)
        except ValueError as exc:
            group_id, launched_at = "", now
            why = f"unreadable {REPLACEMENT_ANNOTATION} annotation: {exc}"
        if why:
            dropped[node.name] = why
            try:
                actuator.actions.annotate_node(node.name, REPLACEMENT_ANNOTATION, None)
            except ActionError:
                records.written[node.name] = text  # the loop's next sync removes it
            actuator.actions.emit_event(
                Event.scale_down_failed(node.name, f"replacement given up at restart: {why}", now)
            )
            continue
        key = (group_id, launched_at)
        if key not in pending:
            pending[key] = PendingReplacement(
                group_id, launched_at, _group_before(snapshot, cloud, group_id, launched_at)
            )
        planner.note_replacement([node.name], pending[key])
        records.written[node.name] = text
        replacing[node.name] = group_id
        actuator.actions.emit_event(Event.node_replacement_resumed(node.name, group_id, launched_at, now))
    return replacing, dropped


def _why_dropped(
    node: Node, group_id: str, launched_at: float, actuator: Actuator, groups: set[str], now: float
) -> str:
    """Why a record cannot be taken back, or "" when it can."""
    options = actuator.options
    if not options.consolidate_onto_cheaper_groups:
        return "consolidate-onto-cheaper-groups is off"
    if group_id not in groups:
        return f"node group {group_id} is not managed any more"
    if node.has_taint(TO_BE_DELETED_TAINT):
        return "its deletion had started"
    if now - launched_at >= options.max_node_provision_time:
        return f"its replacement, launched at {rfc3339(launched_at)}, is past max-node-provision-time"
    return ""


def _group_before(
    snapshot: ClusterSnapshot, cloud: CloudProvider, group_id: str, launched_at: float
) -> frozenset[str]:
    """The group's nodes that were there when its replacement was asked for: created before that
    second (the record keeps whole seconds, as Kubernetes' creationTimestamp does, so a node
    created in the launch's second counts as the new one). A node of unknown age counts as old."""
    launched = math.floor(launched_at)
    return frozenset(
        node.name
        for node in snapshot.nodes()
        if (node.meta.creation_timestamp is None or node.meta.creation_timestamp < launched)
        and (group := cloud.node_group_for(node)) is not None
        and group.id == group_id
    )


def _cloud_deleting(cloud: CloudProvider) -> set[str]:
    """Provider IDs of the instances the cloud is deleting."""
    return {
        instance.id
        for group in cloud.node_groups()
        for instance in group.instances()
        if instance.state is InstanceState.DELETING
    }
