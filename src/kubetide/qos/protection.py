"""Pods the agent never evicts on its own judgement: the owner of the pod said so, or nothing
would bring the pod back.

- no controller (a bare pod): an eviction deletes it for good;
- `cluster-autoscaler.kubernetes.io/safe-to-evict: "false"`: the Cluster Autoscaler's opt-out,
  which people already set on pods that must not be moved;
- `cluster-autoscaler.kubernetes.io/safe-to-evict: "on-completion"` while the pod runs (CA 1.36):
  its owner asked that it be left to finish, never evicted; once Succeeded or Failed it is no
  longer a candidate at all;
- `karpenter.sh/do-not-disrupt` while it protects the pod: "true", or a duration not yet run out
  since the pod started (Karpenter 1.12; kubetide.model.disruption), at the round's `now`.

Such a pod is an eviction candidate only when a PodQOS selects it and allows the eviction action:
someone chose, for this pod, that the node's QoS comes first. Throttling stays allowed, for
on-completion pods too: both annotations are about eviction (CA and Karpenter never throttle),
and a throttle slows the work without losing it; a restore gives the cpu back.
"""

from __future__ import annotations

from collections.abc import Sequence

from kubetide.model import Pod
from kubetide.model.disruption import DO_NOT_DISRUPT, do_not_disrupt
from kubetide.qos.podqos import PodQOS

SAFE_TO_EVICT = "cluster-autoscaler.kubernetes.io/safe-to-evict"
ON_COMPLETION = "on-completion"


def eviction_protection(pod: Pod, now: float) -> str | None:
    """Why the pod is protected from eviction by default at `now` (None: it is not)."""
    safe_to_evict = pod.annotations.get(SAFE_TO_EVICT, "").lower()
    if safe_to_evict == "false":
        return f'annotated {SAFE_TO_EVICT}: "false"'
    if safe_to_evict == ON_COMPLETION and not pod.is_terminal:
        return f'annotated {SAFE_TO_EVICT}: "on-completion": left to finish'
    if DO_NOT_DISRUPT in pod.annotations and do_not_disrupt(pod, now):
        return f'annotated {DO_NOT_DISRUPT}: "{pod.annotations[DO_NOT_DISRUPT]}"'
    if pod.controller is None:
        return "no controller would replace it"
    return None


def protected_refusal(podqos: Sequence[PodQOS], pod: Pod, actions: Sequence[str], now: float) -> str | None:
    """Why `actions` (eviction AvoidanceActions) may not evict `pod` at `now` although PodQOS
    scope allows it: a protected pod needs a PodQOS that selects it and allows one of them."""
    why = eviction_protection(pod, now)
    if why is None:
        return None
    explicit = any(q.selects(pod) and any(a in q.allowed_actions for a in actions) for q in podqos)
    if explicit:
        return None
    return f"{why}: evicted only when a PodQOS selects it and allows the eviction"
