"""Why the loop decided what it did, as a value: `explain(decision, inputs)` beside `decide()`.

`decide` says what happens; `explain` says what the scale-down plan's nodes would need: the drain
estimates (planning/estimate.py's pure function over the plan) and, when asked
(`UnblockRequest`), what would unblock each unremovable node (scaledown/explanation: each
suggested change checked by running the planner again with it). All three drivers call it, and
it is the one place that puts the cluster in the state the answers are asked of:

- `Autoscaler.run_once` every loop (the estimates feed the status), with answers for the nodes
  its UnblockMemo says are due when --annotate-scale-down-blockers is on;
- `kubetide plan` with answers for every unremovable node (or the `--node` ones), within
  `--unblock-budget`, reusing its loop's recorded search;
- the simulator once at the end of a run, for the few most actionable blocked nodes.

The answers are asked of the cluster as the scheduler will leave it: the pending pods the
decision placed on existing nodes (`LoopDecision.bound`) bound there, in a fork of the snapshot
that is reverted before `explain` returns, so the snapshot is left exactly as found (`plan` once
bound them for good, and the loop and the simulator in a fork: the fork is right, since the
snapshot is the caller's, and a live loop's view is the next loop's starting point).

Like `decide`, this is decision code: no I/O, no wall clock (the caller's Timer bounds the work).
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from types import MappingProxyType

from kubetide.autoscaler.decision import LoopDecision
from kubetide.autoscaler.inputs import LoopInputs
from kubetide.autoscaler.options import AutoscalerOptions
from kubetide.autoscaler.ports import CloudProvider
from kubetide.autoscaler.scaledown.explanation import (
    UNBLOCK_BUDGET,
    UNBLOCK_LIMIT,
    Recording,
    Unblock,
    find_unblocks,
)
from kubetide.autoscaler.scaledown.planning import DrainEstimate, ScaleDownPlan, drain_estimates
from kubetide.clock import Timer
from kubetide.scheduling import PredicateChecker
from kubetide.snapshot import ClusterSnapshot


@dataclass(frozen=True, slots=True)
class UnblockRequest:
    """Which unremovable nodes to answer, and the work the answers may take (find_unblocks)."""

    nodes: Collection[str] | None = None  # None: every unremovable node, in the plan's order
    limit: int = UNBLOCK_LIMIT  # nodes searched with the planner
    budget: float = UNBLOCK_BUDGET  # seconds of the caller's Timer
    # The loop's own search with timers expired on the same inputs (plan's), replayed by the checks.
    recording: Recording | None = None


@dataclass(frozen=True, slots=True)
class Explanation:
    """What `explain` found: per node, the drain estimate and (if asked) what would unblock it."""

    estimates: Mapping[str, DrainEstimate]
    unblocks: Mapping[str, Unblock]

    def attach(self, plan: ScaleDownPlan) -> None:
        """Put the answers on the plan's node statuses, where its JSON and the tables read them."""
        for name, answer in self.unblocks.items():
            plan.nodes[name].unblock = answer


def explain(
    decision: LoopDecision,
    inputs: LoopInputs,
    *,
    options: AutoscalerOptions,
    cloud: CloudProvider,
    checker: PredicateChecker,
    timer: Timer,
    unblock: UnblockRequest | None = None,
) -> Explanation:
    """The explanation of `decision`, made by `decide` on `inputs` (whose snapshot `checker`
    observes; it is left as found). No scale-down plan (scale-down disabled, a halt): nothing to
    explain. Without `unblock`, no answers are searched (nor the snapshot touched)."""
    plan = decision.scale_down
    if plan is None:
        return Explanation(MappingProxyType({}), MappingProxyType({}))
    answers: dict[str, Unblock] = {}
    if unblock is not None:
        with as_scheduled(decision, inputs):
            answers = find_unblocks(
                inputs,
                options,
                cloud,
                plan=plan,
                checker=checker,
                timer=timer,
                nodes=unblock.nodes,
                limit=unblock.limit,
                budget=unblock.budget,
                recording=unblock.recording,
            )
    return Explanation(MappingProxyType(drain_estimates(plan.nodes)), MappingProxyType(answers))


@contextmanager
def as_scheduled(decision: LoopDecision, inputs: LoopInputs) -> Iterator[ClusterSnapshot]:
    """`inputs.snapshot`, inside the block, with the pending pods `decision` placed on existing
    nodes bound there, as the scheduler will bind them; reverted on leaving it."""
    snapshot = inputs.snapshot
    snapshot.fork()
    try:
        bind_scheduled(decision, inputs)
        yield snapshot
    finally:
        snapshot.revert()


def bind_scheduled(decision: LoopDecision, inputs: LoopInputs) -> None:
    """Bind the pending pods `decision` placed on existing nodes (`LoopDecision.bound`) there, in
    `inputs.snapshot` as it is (the caller forks it first if it is to be given back)."""
    if not decision.bound:  # a pod's key is built on each read: only when some are to be bound
        return
    by_key = {pod.key: pod for pod in inputs.pending}
    for key, node in decision.bound.items():
        inputs.snapshot.bind(by_key[key], node)


__all__ = ["Explanation", "UnblockRequest", "as_scheduled", "bind_scheduled", "explain"]
