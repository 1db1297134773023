"""Pods annotated `cluster-autoscaler.kubernetes.io/safe-to-evict: "on-completion"` (CA 1.36).

Such a pod is neither moved nor evicted: it is left to finish. Its node may still be unneeded (the
drain simulation needs no home for it, drainability rule 6b), keeps its unneeded time, and is
sorted after the other empty nodes in the candidate search; but while the pod runs the node is
not deleted: it waits with reason BlockedByOnCompletionPod and no blocking pod, as in CA 1.36's
NodesToDelete. Once the pod has completed (Succeeded or Failed) it no longer holds the node, and
the node goes at the next loop like any other unneeded node.

A drain under way that meets such a pod (one that appeared on the node after it was chosen, or
was annotated meanwhile) never evicts it either: the node's deletion waits for the pod to finish
until the drain's own deadline (its max-pod-eviction-time window, or the evicted pods' grace
period + headroom if that ends later), then gives up like a drain that timed out: the taint
comes off, ScaleDownFailed names the pod, and the planner holds the node with
BlockedByOnCompletionPod until the pod is done. CA 1.36 aborts an empty node's deletion at once
when it finds active on-completion pods at the start ("active on-completion pods present");
kubetide gives the pod the drain's window first (docs/differences.md).
"""

from __future__ import annotations

from collections.abc import Iterable

from kubetide.autoscaler.scaledown.planning.drainability import DrainContext, Outcome, verdict
from kubetide.autoscaler.scaledown.planning.plan import ScaleDownPlan
from kubetide.autoscaler.scaledown.reasons import NodeReason
from kubetide.model import Pod


def hold_for_on_completion_pods(plan: ScaleDownPlan, name: str) -> bool:
    """Whether candidate `name`, removable now by its timers, waits for on-completion pods; if so
    its status says so and names them."""
    drain = plan.drains.get(name)
    if drain is None or not drain.on_completion:
        return False
    status = plan.nodes[name]
    status.reason = NodeReason.BLOCKED_BY_ON_COMPLETION_POD
    pods = ", ".join(pod.key for pod in drain.on_completion)
    waits = f"waits for {pods} to complete (safe-to-evict: on-completion)"
    status.detail = f"{waits}; {status.detail}" if status.detail else waits
    return True


def running_on_completion(pods: Iterable[Pod], ctx: DrainContext) -> list[Pod]:
    """The pods a drain must leave to finish: running, annotated on-completion, and not let go by
    an earlier rule (a DaemonSet or mirror pod is not waited for)."""
    return [pod for pod in pods if verdict(pod, ctx).outcome is Outcome.ON_COMPLETION]
