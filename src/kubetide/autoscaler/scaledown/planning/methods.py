"""Disruption methods: what the planner proposes to remove, once the candidate search and the
timers have said which nodes may go now.

A `DisruptionMethod` has a `name` and `propose(inputs) -> command | None`. It is generic in what a
method reads and what it proposes, so that both policies' methods implement it: this planner's
(`MethodInputs` -> `Command`) and Karpenter's (autoscaler/karpenter/methods.py: its loop's context
and candidates -> its command, with the instance types to launch). `try_in_order` is the one way
both try their methods: in order, each seeing the commands of the methods before it, as
Karpenter's disruption controller tries emptiness, drift, multi-node and single-node
consolidation in order. This planner tries its methods with `propose_in_order`, which then
checks the commands against what its actuator can carry out. The Cluster Autoscaler's two ways of
removing a node are the default list, `CA_METHODS`: `EmptyNodeDeletion` (its empty nodes, deleted
without a drain) then `UnderutilizedNodeRemoval` (the others, drained). Their names are CA's: the
`reason` label of `scaled_down_nodes_total` ("empty", "underutilized").

Both run in every loop, and the parallelism budgets (budgets.py) then start empty nodes first.
A method that, like Karpenter's (`karpenter.methods.Method.propose`), wants the loop to itself once an earlier method proposed
something returns None when `inputs.earlier` is not empty; one that should win over CA's goes
first in the list, and CA's skip the nodes it already claimed.

A `Command` names the nodes to remove, in the order to start them, and the nodes to launch in
their place (`replacements`, node group ids, one per new node: Karpenter's replace). CA's methods
never replace: theirs is always (). kubetide's own policy adds `CheaperGroupReplacement`
(replacement.py) after CA's two (`KUBETIDE_METHODS` there): its command with a replacement may
name nodes that are not candidates (nodes removable but for room); the planner records it in
`plan.replacements`, the loop launches the replacement, and once it is Ready the nodes come back
to the method as `inputs.replaced`, removed then by a plain command.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Protocol, TypeVar

from kubetide.autoscaler.options import AutoscalerOptions
from kubetide.autoscaler.ports import CloudProvider
from kubetide.autoscaler.scaledown.planning.plan import ScaleDownPlan
from kubetide.model import PodDisruptionBudget, Workload
from kubetide.scheduling.checker import PredicateChecker
from kubetide.snapshot import ClusterSnapshot


@dataclass(frozen=True, slots=True)
class Command:
    """One method's proposal: remove `nodes` (in the order to start them), launching
    `replacements` (node group ids, one per new node) first; empty for a plain removal."""

    method: str  # the proposing method's name
    nodes: tuple[str, ...]
    replacements: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class MethodInputs:
    """What a method reads, all of it as the planner left it (a method changes none of it; one
    that simulates forks the snapshot and reverts it). The snapshot is the planner's fork
    (expendable pods out, nominated pods in) when the search ran this loop, the loop's own when
    it was replayed (reuse.py): the nodes and their other pods are the same in both.

    `ready` are the candidates whose timers ran out and that no pause or on-completion pod holds,
    in the candidate search's order: the only nodes this planner lets a method propose. `plan`
    holds what the search found of every node (`plan.nodes[name].empty`, `plan.risky`,
    `plan.drains`, `plan.destinations`)."""

    plan: ScaleDownPlan
    ready: tuple[str, ...]
    snapshot: ClusterSnapshot
    cloud: CloudProvider
    options: AutoscalerOptions
    earlier: tuple[Command, ...] = ()  # what the methods before this one proposed
    pdbs: Sequence[PodDisruptionBudget] = ()
    daemonsets: Sequence[Workload] = ()  # what a new node would run besides the pods moved to it
    # Nodes a replacement launched earlier stands in for: still waiting for it, and those whose
    # replacement has joined Ready (to remove now).
    replacing: frozenset[str] = frozenset()
    replaced: tuple[str, ...] = ()
    being_deleted: frozenset[str] = frozenset()  # the deleted set: nodes whose deletion started
    # Nodes removable but for room (NoPlaceToMovePods) for scale-down-unneeded-time, and (with
    # consolidation onto cheaper groups) those above the utilization threshold as long
    replaceable: frozenset[str] = frozenset()
    controllers: Sequence[Workload] | None = None  # what the drain rules consult; None: unknown
    # The caller's PredicateChecker observing `snapshot`, for a method that places pods (else it
    # builds its own, which indexes every pod of the cluster).
    checker: PredicateChecker | None = None

    def claimed(self) -> frozenset[str]:
        """Nodes an earlier method already proposed."""
        return frozenset(name for command in self.earlier for name in command.nodes)


InputsT = TypeVar("InputsT", contravariant=True)
CommandT = TypeVar("CommandT", covariant=True)


class DisruptionMethod(Protocol[InputsT, CommandT]):
    """One way of removing nodes, tried in order with the others (see the module's docstring):
    `DisruptionMethod[MethodInputs, Command]` here, Karpenter's with its own inputs and command."""

    @property
    def name(self) -> str: ...

    def propose(self, inputs: InputsT) -> CommandT | None:
        """The nodes this method would remove now (and what would replace them), or None."""
        ...


In = TypeVar("In")
Out = TypeVar("Out")


def try_in_order(
    methods: Sequence[DisruptionMethod[In, Out]], inputs_after: Callable[[tuple[Out, ...]], In]
) -> tuple[Out, ...]:
    """Every method's command, trying the methods in order; each proposes from
    `inputs_after(commands of the methods before it)`."""
    commands: list[Out] = []
    for method in methods:
        command = method.propose(inputs_after(tuple(commands)))
        if command is not None:
            commands.append(command)
    return tuple(commands)


class EmptyNodeDeletion:
    """CA's empty-node deletion: ready candidates the search found empty, in its order."""

    name = "empty"

    def propose(self, inputs: MethodInputs) -> Command | None:
        nodes, claimed = inputs.plan.nodes, inputs.claimed()
        empty = tuple(name for name in inputs.ready if nodes[name].empty and name not in claimed)
        return Command(self.name, empty) if empty else None


class UnderutilizedNodeRemoval:
    """CA's underutilised-node removal: ready candidates with pods to move, drained. Those a
    budget lets go only pod by pod (risky) come last, as CA's sortByRisk puts them, so that the
    parallelism budgets start the drains that can finish at once first."""

    name = "underutilized"

    def propose(self, inputs: MethodInputs) -> Command | None:
        plan, claimed = inputs.plan, inputs.claimed()
        drains = [name for name in inputs.ready if not plan.nodes[name].empty and name not in claimed]
        drains.sort(key=lambda name: name in plan.risky)
        return Command(self.name, tuple(drains)) if drains else None


CA_METHODS: tuple[DisruptionMethod[MethodInputs, Command], ...] = (
    EmptyNodeDeletion(),
    UnderutilizedNodeRemoval(),
)


def ca_method_name(*, empty: bool) -> str:
    """The name of CA's method that removes a node deleted empty or drained (the reason label of
    scaled_down_nodes_total, and of kubetide run's log lines)."""
    return EmptyNodeDeletion.name if empty else UnderutilizedNodeRemoval.name


def propose_in_order(
    methods: Sequence[DisruptionMethod[MethodInputs, Command]], inputs: MethodInputs
) -> tuple[Command, ...]:
    """Every method in order, each seeing the commands before it (`try_in_order`). A command must
    name nodes not claimed before: without a replacement, only `inputs.ready` nodes, those whose
    replacement is Ready (`inputs.replaced`) and replaceable ones whose pods fit on the rest
    (`inputs.replaceable`: a consolidation); with one, nodes still in the snapshot (see the
    module's docstring)."""
    commands = try_in_order(methods, lambda earlier: replace(inputs, earlier=earlier))
    removable = {*inputs.ready, *inputs.replaced, *inputs.replaceable}
    taken: set[str] = set()
    for command in commands:
        allowed = inputs.snapshot.__contains__ if command.replacements else removable.__contains__
        wrong = [name for name in command.nodes if not allowed(name) or name in taken]
        if wrong:
            raise ValueError(
                f"disruption method {command.method} proposed {', '.join(wrong)}: not a candidate removable"
                " now, or proposed by an earlier method"
            )
        taken.update(command.nodes)
    return commands
