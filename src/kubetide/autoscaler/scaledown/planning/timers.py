"""Step 5 of UpdateUnneededNodes: timers and pauses decide which candidates are removable now.

A candidate is removable once it has been unneeded for scale-down-unneeded-time (unready nodes:
scale-down-unready-time), unless scale-down is paused: disabled, within
scale-down-delay-after-add / -delete / -failure of the last such event, or in a loop that scales
up, whatever scale-down-delay-after-add is (the Cluster Autoscaler's RunOnce returns after a
scale-up: "No scale down in this iteration"). A removable candidate still running a
safe-to-evict "on-completion" pod waits for it (oncompletion.py). The disruption methods
(methods.py: CA's empty-node deletion, then its underutilised-node removal) then propose which of
the others go.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from kubetide.autoscaler.options import AutoscalerOptions
from kubetide.autoscaler.ports import CloudProvider
from kubetide.autoscaler.scaledown.planning.methods import (
    Command,
    DisruptionMethod,
    MethodInputs,
    propose_in_order,
)
from kubetide.autoscaler.scaledown.planning.oncompletion import hold_for_on_completion_pods
from kubetide.autoscaler.scaledown.planning.plan import Replacement, ScaleDownPlan
from kubetide.autoscaler.scaledown.planning.state import UnneededNodes
from kubetide.autoscaler.scaledown.reasons import NodeReason
from kubetide.durations import format_duration, rfc3339
from kubetide.model import PodDisruptionBudget, Workload
from kubetide.scheduling.checker import PredicateChecker
from kubetide.snapshot import ClusterSnapshot

# Why a loop that scales up starts no deletion (the status message and log line say it too).
SCALED_UP_THIS_LOOP = "No scale down in this iteration: this loop scaled up"


def cooldown(
    options: AutoscalerOptions,
    now: float,
    last_scale_up: float,
    last_deletion: float,
    last_failure: float,
    *,
    scaling_up: bool = False,
) -> str | None:
    """Why scale-down is paused now, or None. `scaling_up`: this loop scales up (`last_scale_up`
    is then `now`, so a nonzero scale-down-delay-after-add names itself)."""
    o = options
    if not o.scale_down_enabled:
        return "scale-down-enabled is false"
    for last, delay, flag in (
        (last_scale_up, o.scale_down_delay_after_add, "scale-down-delay-after-add"),
        (last_deletion, o.scale_down_delay_after_delete, "scale-down-delay-after-delete"),
        (last_failure, o.scale_down_delay_after_failure, "scale-down-delay-after-failure"),
    ):
        if now < last + delay:
            return f"{flag} ({format_duration(delay)}) until {rfc3339(last + delay)}"
    return SCALED_UP_THIS_LOOP if scaling_up else None


def decide_removals(
    plan: ScaleDownPlan,
    snapshot: ClusterSnapshot,
    cloud: CloudProvider,
    resume: Collection[str],
    options: AutoscalerOptions,
    unneeded_since: UnneededNodes,
    paused: str | None,
    timers_expired: bool,
    methods: Sequence[DisruptionMethod[MethodInputs, Command]],
    *,
    pdbs: Sequence[PodDisruptionBudget] = (),
    daemonsets: Sequence[Workload] = (),
    replacing: Collection[str] = (),
    replaced: Sequence[str] = (),
    being_deleted: Collection[str] = (),
    arrived: Collection[str] = (),
    replaceable: Collection[str] = (),
    controllers: Sequence[Workload] | None = None,
    checker: PredicateChecker | None = None,
) -> None:
    """Say why candidates wait, then fill the plan's empty_to_delete / drain_to_delete with what
    the disruption `methods`, tried in order, propose of the others (methods.py), and its
    replacements with the commands that launch a node first. `replacing`: nodes a replacement
    launched earlier stands in for; `replaced`: those whose replacement is Ready, which is one of
    `arrived` (not proposed by any method while they wait). `replaceable`: nodes removable but
    for room (or, with consolidation onto cheaper groups, busy) for scale-down-unneeded-time,
    which a replacement may stand in for; `controllers`: the workloads the drain rules consult
    for them (None when unknown); `checker`: the caller's, observing `snapshot`, for the methods
    that place pods."""
    now, o = plan.now, options
    plan.cooldown = paused
    ready: list[str] = []
    for name in plan.candidate_set:
        status = plan.nodes[name]
        node = snapshot.node(name)
        since = unneeded_since[name]
        removable_at = unneeded_since.removable_at(name, ready=node.ready, options=o)
        expired = timers_expired or name in resume or now >= removable_at
        if not expired:
            status.reason = (
                NodeReason.NOT_UNNEEDED_LONG_ENOUGH if node.ready else NodeReason.NOT_UNREADY_LONG_ENOUGH
            )
            status.detail = _also(
                f"unneeded since {rfc3339(since)}; removable at {rfc3339(removable_at)}", status.detail
            )
            continue
        if paused is not None:
            status.reason = NodeReason.NOT_UNNEEDED_OTHER_REASON
            status.detail = _also(f"scale-down paused: {paused}", status.detail)
            continue
        if hold_for_on_completion_pods(plan, name):
            continue
        if name in arrived:
            status.reason = NodeReason.NOT_UNNEEDED_OTHER_REASON
            status.detail = _also(
                "a replacement: the nodes it stands in for are drained first", status.detail
            )
            continue
        ready.append(name)
    inputs = MethodInputs(
        plan,
        tuple(ready),
        snapshot,
        cloud,
        o,
        pdbs=pdbs,
        daemonsets=daemonsets,
        replacing=frozenset(replacing),
        replaced=tuple(replaced),
        being_deleted=frozenset(being_deleted),
        replaceable=frozenset(replaceable),
        controllers=controllers,
        checker=checker,
    )
    for command in propose_in_order(methods, inputs):
        if command.replacements:
            plan.replacements.append(Replacement(command.nodes, command.replacements[0]))
            continue
        for name in command.nodes:
            (plan.empty_to_delete if plan.nodes[name].empty else plan.drain_to_delete).append(name)


def _also(why: str, earlier: str) -> str:
    """A waiting candidate's reason, keeping what the search said of it (that it is risky)."""
    return f"{why}; {earlier}" if earlier else why
