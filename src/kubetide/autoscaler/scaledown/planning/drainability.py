"""Which pods a drain must move, which it may ignore, and which forbid it.

The rules run in the Cluster Autoscaler's order and the first definite outcome wins, so a mirror
pod annotated safe-to-evict=false is still just skipped, and a DaemonSet pod in kube-system never
counts as an unmovable system pod. The order is the contract; the tests pin it.

 1. mirror pod: skipped (the kubelet owns it; it goes with the node)
 2. terminating for longer than its grace period + 30 s: skipped (it is as good as gone)
 3. controller missing, or a ReplicationController/ReplicaSet below min-replica-count: blocks
    (only with skip-nodes-with-custom-controller-pods, as in CA)
 4. DaemonSet pod: drainable, never rescheduled elsewhere
 5. safe-to-evict "true": drainable
 6. terminal (Succeeded/Failed): drainable, needs no new home
 6b. safe-to-evict "on-completion" (CA 1.36): not moved and blocks no simulated drain, but holds
    the node until the pod completes (the planner's BlockedByOnCompletionPod); once it is terminal,
    rule 6 has already let it go. CA meets this rule after rule 3 and before rules 7-10 and the
    budgets: a bare or kube-system on-completion pod, or one with local storage, holds its node
    the same way and is charged to no budget, since it is never evicted.
 7. no controller, or (with skip-nodes-with-custom-controller-pods) an unknown kind: NotReplicated
 8. kube-system without a PDB, not older than blocking-system-pod-distruption-timeout (1h; at
    exactly the timeout it still blocks): UnmovableKubeSystemPod (only with skip-nodes-with-system-pods)
 9. safe-to-evict "false", or Karpenter's karpenter.sh/do-not-disrupt while it protects the pod
    ("true", or a duration not yet run out since the pod started: model/disruption.py; honoured
    alike, so a pod protected from Karpenter is protected here too): NotSafeToEvictAnnotation
10. local storage not listed in safe-to-evict-local-volumes: LocalStorageRequested
    (only with skip-nodes-with-local-storage)

PodDisruptionBudgets are not a per-pod rule here: the candidate search charges a node's pods to
their budgets all at once, after the budget earlier candidates used (pdb.py, CA's CanRemovePods),
and the actuator leaves refusals to the eviction API, whose 429s it retries.

Expendable pods (priority below expendable-pods-priority-cutoff) are looked at before any rule:
they never block and are never moved; the scheduler would preempt them anyway.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from operator import is_
from typing import Any

from kubetide.autoscaler.options import AutoscalerOptions
from kubetide.autoscaler.scaledown.planning.pdb import PdbTracker
from kubetide.autoscaler.scaledown.reasons import PodReason
from kubetide.model import OwnerReference, Pod, Workload
from kubetide.model.disruption import DO_NOT_DISRUPT as DO_NOT_DISRUPT  # exported with SAFE_TO_EVICT
from kubetide.model.disruption import do_not_disrupt
from kubetide.model.pod import MIRROR_ANNOTATION
from kubetide.snapshot import Memo

SAFE_TO_EVICT = "cluster-autoscaler.kubernetes.io/safe-to-evict"
# The value of SAFE_TO_EVICT that lets a pod finish rather than be evicted (CA 1.36).
ON_COMPLETION = "on-completion"
SAFE_TO_EVICT_LOCAL_VOLUMES = "cluster-autoscaler.kubernetes.io/safe-to-evict-local-volumes"
KUBE_SYSTEM = "kube-system"
# A terminating pod this long past its grace period is treated as deleted (CA's
# PodLongTerminatingExtraThreshold).
LONG_TERMINATING_EXTRA = 30.0
# Owners a drained pod can count on to recreate it elsewhere. DaemonSet is known too, but its pods
# are handled by rule 4 before rule 7 looks.
REPLICATED_KINDS = frozenset({"ReplicationController", "ReplicaSet", "Job", "StatefulSet"})

WorkloadIndex = Mapping[tuple[str, str, str], Workload]


class Outcome(enum.Enum):
    SKIP = "skip"  # not moved, not evicted, does not block
    MOVE = "move"  # evicted; needs a new home elsewhere
    DONE = "done"  # drainable and needs no new home (terminal pods)
    DAEMONSET = "daemonset"  # evicted per the daemonset-eviction flags; not rescheduled elsewhere
    ON_COMPLETION = "on-completion"  # left to finish: needs no new home, holds the node until done
    BLOCK = "block"


@dataclass(frozen=True, slots=True)
class Verdict:
    outcome: Outcome
    rule: str  # which rule decided, for explanations
    reason: PodReason | None = None


@dataclass(frozen=True, slots=True)
class DrainRules:
    """The flags the rules read."""

    skip_nodes_with_system_pods: bool = True
    skip_nodes_with_local_storage: bool = True
    skip_nodes_with_custom_controller_pods: bool = True
    min_replica_count: int = 0
    expendable_pods_priority_cutoff: int = -10
    blocking_system_pod_distruption_timeout: float = 3600.0

    @classmethod
    def from_options(cls, options: AutoscalerOptions) -> DrainRules:
        return cls(
            skip_nodes_with_system_pods=options.skip_nodes_with_system_pods,
            skip_nodes_with_local_storage=options.skip_nodes_with_local_storage,
            skip_nodes_with_custom_controller_pods=options.skip_nodes_with_custom_controller_pods,
            min_replica_count=options.min_replica_count,
            expendable_pods_priority_cutoff=options.expendable_pods_priority_cutoff,
            blocking_system_pod_distruption_timeout=options.blocking_system_pod_distruption_timeout,
        )


@dataclass(slots=True)
class DrainContext:
    """What the rules may consult besides the pod.

    `workloads` is None when the controllers are unknown (a manifest dump without them): then
    rule 3 cannot tell a missing controller from an unlisted one and stays silent, as CA does
    without listers. `pdbs` answers rule 8 (does a kube-system pod have a budget).
    """

    rules: DrainRules
    pdbs: PdbTracker
    now: float
    workloads: WorkloadIndex | None = None


@dataclass(frozen=True, slots=True)
class BlockingPod:
    pod: Pod
    reason: PodReason
    # NotEnoughPdb: the budget that refuses the pod, and the disruptions it had left
    pdb: str = ""
    left: int = 0

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"pod": self.pod.key, "reason": str(self.reason)}
        if self.pdb:
            data["pdb"] = self.pdb
        return data


@dataclass(slots=True)
class NodeDrain:
    """The drain of one node, as the rules see it."""

    movable: list[Pod] = field(default_factory=list)
    terminal: list[Pod] = field(default_factory=list)
    daemonset: list[Pod] = field(default_factory=list)
    skipped: list[Pod] = field(default_factory=list)
    # Running pods annotated safe-to-evict "on-completion": the node may be unneeded, but it goes
    # only once they are done (planner: BlockedByOnCompletionPod).
    on_completion: list[Pod] = field(default_factory=list)
    # Every pod that forbids the drain, in the node's pod order: the order CA's GetPodsToMove
    # walks them in, so the first is the one CA names.
    blockers: list[BlockingPod] = field(default_factory=list)

    @property
    def blocking(self) -> BlockingPod | None:
        """The pod that decides the node: the first blocker, as CA names it."""
        return self.blockers[0] if self.blockers else None

    @property
    def empty(self) -> bool:
        """Nothing needs a new home: the node can go without a drain."""
        return not self.movable and self.blocking is None


def index_workloads(workloads: Iterable[Workload]) -> dict[tuple[str, str, str], Workload]:
    return {(w.kind, w.namespace, w.name): w for w in workloads}


def is_expendable(pod: Pod, cutoff: int) -> bool:
    return pod.priority < cutoff


def is_long_terminating(pod: Pod, now: float) -> bool:
    deleted = pod.meta.deletion_timestamp
    return deleted is not None and deleted + pod.termination_grace_period + LONG_TERMINATING_EXTRA < now


def verdict(pod: Pod, ctx: DrainContext) -> Verdict:
    """Rules 1-11 for one pod (expendable pods included, as a rule 0).

    Written against the fields rather than the Pod's convenience properties: it runs for every
    pod of every eligible node, every loop. Total over parsed Pods: a malformed object never gets
    here (the model's readers refuse it where it is read, naming its field), and the one free-form
    value a rule parses, karpenter.sh/do-not-disrupt, reads as absent when it is not a duration,
    as Karpenter reads it. So nothing is caught here: an exception is a bug, and goes up.
    """
    if pod.priority < ctx.rules.expendable_pods_priority_cutoff:
        return _EXPENDABLE
    meta = pod.meta
    # 1
    if MIRROR_ANNOTATION in meta.annotations:
        return _MIRROR
    # 2
    deleted = meta.deletion_timestamp
    if deleted is not None and deleted + pod.termination_grace_period + LONG_TERMINATING_EXTRA < ctx.now:
        return _LONG_TERMINATING
    return _verdict_by_owner(pod, _controller_of(meta.owner_references), ctx)


def _controller_of(owner_references: Iterable[OwnerReference]) -> OwnerReference | None:
    for owner in owner_references:
        if owner.controller:
            return owner
    return None


def _verdict_by_owner(pod: Pod, ref: OwnerReference | None, ctx: DrainContext) -> Verdict:
    """Rules 3-6b: the pod's controller, safe-to-evict "true", a finished pod."""
    rules = ctx.rules
    # 3
    if rules.skip_nodes_with_custom_controller_pods and ref is not None and ctx.workloads is not None:
        blocked = _controller_check(pod, ref.kind, ref.name, ctx.workloads, rules.min_replica_count)
        if blocked is not None:
            return Verdict(Outcome.BLOCK, "replica-count", blocked)
    # 4
    if ref is not None and ref.kind == "DaemonSet":
        return _DAEMONSET
    annotation = pod.meta.annotations.get(SAFE_TO_EVICT)
    # 5
    if annotation == "true":
        return _SAFE_TO_EVICT
    # 6
    if pod.phase == "Succeeded" or pod.phase == "Failed":
        return _TERMINAL
    if annotation == ON_COMPLETION:
        return _ON_COMPLETION
    return _blocking_verdict(pod, ref, annotation, ctx)


def _blocking_verdict(
    pod: Pod, ref: OwnerReference | None, annotation: str | None, ctx: DrainContext
) -> Verdict:
    """Rules 7-10: what forbids moving a pod that is otherwise moved."""
    rules = ctx.rules
    meta = pod.meta
    # 7
    if ref is None or (rules.skip_nodes_with_custom_controller_pods and ref.kind not in REPLICATED_KINDS):
        return _NOT_REPLICATED
    # 8
    if rules.skip_nodes_with_system_pods and meta.namespace == KUBE_SYSTEM and not ctx.pdbs.has_pdb(pod):
        created = meta.creation_timestamp
        if created is None or ctx.now - created <= rules.blocking_system_pod_distruption_timeout:
            return _UNMOVABLE_SYSTEM
    # 9
    if annotation == "false":
        return _NOT_SAFE_TO_EVICT
    if DO_NOT_DISRUPT in meta.annotations and do_not_disrupt(pod, ctx.now):
        return _DO_NOT_DISRUPT
    # 10
    if rules.skip_nodes_with_local_storage and pod.volumes and _blocking_local_storage(pod):
        return _LOCAL_STORAGE
    return _MOVE


_EXPENDABLE = Verdict(Outcome.SKIP, "expendable")
_MIRROR = Verdict(Outcome.SKIP, "mirror")
_LONG_TERMINATING = Verdict(Outcome.SKIP, "long-terminating")
_DAEMONSET = Verdict(Outcome.DAEMONSET, "daemonset")
_SAFE_TO_EVICT = Verdict(Outcome.MOVE, "safe-to-evict")
_TERMINAL = Verdict(Outcome.DONE, "terminal")
_ON_COMPLETION = Verdict(Outcome.ON_COMPLETION, "on-completion")
_NOT_REPLICATED = Verdict(Outcome.BLOCK, "replicated", PodReason.NOT_REPLICATED)
_UNMOVABLE_SYSTEM = Verdict(Outcome.BLOCK, "system", PodReason.UNMOVABLE_KUBE_SYSTEM_POD)
_NOT_SAFE_TO_EVICT = Verdict(Outcome.BLOCK, "not-safe-to-evict", PodReason.NOT_SAFE_TO_EVICT_ANNOTATION)
_DO_NOT_DISRUPT = Verdict(Outcome.BLOCK, "do-not-disrupt", PodReason.NOT_SAFE_TO_EVICT_ANNOTATION)
_LOCAL_STORAGE = Verdict(Outcome.BLOCK, "local-storage", PodReason.LOCAL_STORAGE_REQUESTED)
_MOVE = Verdict(Outcome.MOVE, "default")


def drain_node(pods: Iterable[Pod], ctx: DrainContext) -> NodeDrain:
    """Sort a node's pods by verdict. Every blocking pod is listed (what would unblock the node
    needs them all); the first decides the node's reason."""
    result = NodeDrain()
    for pod in pods:
        v = verdict(pod, ctx)
        outcome = v.outcome
        if outcome is Outcome.MOVE:
            result.movable.append(pod)
        elif outcome is Outcome.SKIP:
            result.skipped.append(pod)
        elif outcome is Outcome.DAEMONSET:
            result.daemonset.append(pod)
        elif outcome is Outcome.DONE:
            result.terminal.append(pod)
        elif outcome is Outcome.ON_COMPLETION:
            result.on_completion.append(pod)
        else:
            assert v.reason is not None  # every blocking verdict names its reason
            result.blockers.append(BlockingPod(pod, v.reason))
    return result


def reads_the_clock(pod: Pod) -> bool:
    """Whether a verdict on the pod may change as time passes: a terminating pod (rule 2), a
    kube-system pod (rule 8's age; its budget too), a pod protected by karpenter.sh/do-not-disrupt
    (rule 9's duration)."""
    meta = pod.meta
    return (
        meta.deletion_timestamp is not None
        or meta.namespace == KUBE_SYSTEM
        or DO_NOT_DISRUPT in meta.annotations
    )


def rules_context(ctx: DrainContext) -> tuple[object, ...]:
    """What the verdicts on pods that do not read the clock read besides the pods themselves:
    the rules, and rule 3's answers (which controllers exist, and which ReplicationControllers or
    ReplicaSets are below min-replica-count). Rule 8's budgets are read only for kube-system
    pods, which read the clock."""
    rules, workloads = ctx.rules, ctx.workloads
    if workloads is None or not rules.skip_nodes_with_custom_controller_pods:
        return (rules, None, None)
    below = frozenset(
        key
        for key, w in workloads.items()
        if key[0] in ("ReplicationController", "ReplicaSet")
        and w.replicas is not None
        and w.replicas < rules.min_replica_count
    )
    return (rules, frozenset(workloads), below)


@dataclass(frozen=True, slots=True)
class _KeptDrain:
    pods: tuple[Pod, ...]  # the node's, in its order
    drain: NodeDrain
    timed: tuple[Pod, ...]  # its pods whose verdict reads the clock
    verdicts: tuple[Verdict, ...]  # theirs when the drain was sorted


class KeptDrains:
    """Nodes' drains (`drain_node`) kept between loops, so that a loop sorts only the pods of
    the nodes that changed. A drain is kept under the node's pods, the very objects in the
    node's order (a what-if's revert gives a node's stamp back but puts the pods it removed
    at the end, and a drain lists them in the node's order), the rules' context
    (`rules_context`) and the verdicts of its pods that read the clock, which are asked again
    each time. Call `new_pass` with each loop's context before asking for its drains."""

    def __init__(self) -> None:
        self._memo: Memo[str, _KeptDrain] = Memo()
        self._context: tuple[object, ...] | None = None
        self._tag = object()

    def new_pass(self, ctx: DrainContext) -> None:
        """A loop's pass: nodes not asked for until the next pass are forgotten, and a changed
        rules' context forgets every drain."""
        self._memo.new_pass()
        context = rules_context(ctx)
        if context != self._context:
            self._context, self._tag = context, object()

    def drain(self, name: str, pods: tuple[Pod, ...], ctx: DrainContext) -> NodeDrain:
        """`drain_node(pods, ctx)` for the node `name` now holding `pods`."""
        kept = self._memo.get(name, tag=self._tag)
        if (
            kept is not None
            and len(kept.pods) == len(pods)
            and all(map(is_, kept.pods, pods))
            and all(verdict(p, ctx) == v for p, v in zip(kept.timed, kept.verdicts))
        ):
            return kept.drain
        drain = drain_node(pods, ctx)
        timed = tuple(p for p in pods if reads_the_clock(p))
        self._memo.put(
            name, _KeptDrain(pods, drain, timed, tuple(verdict(p, ctx) for p in timed)), tag=self._tag
        )
        return drain


def _controller_check(
    pod: Pod, kind: str, name: str, workloads: WorkloadIndex, min_replicas: int
) -> PodReason | None:
    # CA checks only these kinds; a DaemonSet's existence is not checked (rule 4 handles its pods).
    if kind not in REPLICATED_KINDS:
        return None
    workload = workloads.get((kind, pod.namespace, name))
    if workload is None:
        return PodReason.CONTROLLER_NOT_FOUND
    if (
        kind in ("ReplicationController", "ReplicaSet")
        and workload.replicas is not None
        and workload.replicas < min_replicas
    ):
        return PodReason.MIN_REPLICAS_REACHED
    return None


def _blocking_local_storage(pod: Pod) -> bool:
    local = [v.name for v in pod.volumes if v.is_local_storage]
    if not local:
        return False
    listed = pod.annotations.get(SAFE_TO_EVICT_LOCAL_VOLUMES, "")
    allowed = {name.strip() for name in listed.split(",") if name.strip()}
    return any(name not in allowed for name in local)


def pods_needing_homes(pods: Iterable[Pod], ctx: DrainContext) -> list[Pod]:
    """Pods of a node already being drained that will still need a home elsewhere.

    The drain is under way, so nothing blocks any more: every pod the rules would move or would
    have refused to move counts. A running on-completion pod does not: the drain never evicts it,
    it finishes where it is (or the drain gives up at its deadline and the node stays).
    """
    result = []
    for pod in pods:
        outcome = verdict(pod, ctx).outcome
        if outcome is Outcome.MOVE or outcome is Outcome.BLOCK:
            result.append(pod)
    return result


def looks_empty(pods: Iterable[Pod], cutoff: int) -> bool:
    """A quick emptiness test for nodes whose drain is not simulated (for reporting only)."""
    return all(p.is_mirror or p.is_daemonset or p.is_terminal or is_expendable(p, cutoff) for p in pods)
