"""Pods the agent never evicts on its own judgement: the owner of the pod said so, or nothing
would bring the pod back.

- no controller (a bare pod): an eviction deletes it for good;
- `cluster-autoscaler.kubernetes.io/safe-to-evict: "false"`: the Cluster Autoscaler's opt-out,
  which people already set on pods that must not be moved;
- `karpenter.sh/do-not-disrupt: "true"`: Karpenter's.

Such a pod is an eviction candidate only when a PodQOS selects it and allows the eviction action:
someone chose, for this pod, that the node's QoS comes first. Throttling stays allowed (it is
undone by a restore; nothing is lost).
"""

from __future__ import annotations

from collections.abc import Sequence

from kubetide.model import Pod
from kubetide.qos.podqos import PodQOS

SAFE_TO_EVICT = "cluster-autoscaler.kubernetes.io/safe-to-evict"
DO_NOT_DISRUPT = "karpenter.sh/do-not-disrupt"


def eviction_protection(pod: Pod) -> str | None:
    """Why the pod is protected from eviction by default (None: it is not)."""
    if pod.annotations.get(SAFE_TO_EVICT, "").lower() == "false":
        return f'annotated {SAFE_TO_EVICT}: "false"'
    if pod.annotations.get(DO_NOT_DISRUPT, "").lower() == "true":
        return f'annotated {DO_NOT_DISRUPT}: "true"'
    if pod.controller is None:
        return "no controller would replace it"
    return None


def protected_refusal(podqos: Sequence[PodQOS], pod: Pod, actions: Sequence[str]) -> str | None:
    """Why `actions` (eviction AvoidanceActions) may not evict `pod` although PodQOS scope allows
    it: a protected pod needs a PodQOS that selects it and allows one of them."""
    why = eviction_protection(pod)
    if why is None:
        return None
    explicit = any(q.selects(pod) and any(a in q.allowed_actions for a in actions) for q in podqos)
    if explicit:
        return None
    return f"{why}: evicted only when a PodQOS selects it and allows the eviction"
