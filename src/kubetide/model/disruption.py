"""Karpenter's `karpenter.sh/do-not-disrupt` on a pod, as Karpenter 1.12 reads it.

- "true" (exactly): protected for as long as the pod runs;
- a Go duration ("4h", "90m", "1h30m"): protected until the pod's status.startTime plus the
  duration, and disruptable from that instant on; a pod that has not started yet (no startTime)
  is protected, since its protection has not begun to run out;
- anything else (no duration, zero or negative, "True", " 4h"): read as if the annotation were
  absent. Karpenter says so with an event and does not protect the pod.

Shared by the scale-down rules and the QoS agent, so a pod is protected alike by both. The
decision code passes `now` from its clock: the protection ends at a simulated second in the
simulator and at a real one in a cluster.
"""

from __future__ import annotations

import math

from kubetide.durations import parse_duration
from kubetide.model.pod import Pod

DO_NOT_DISRUPT = "karpenter.sh/do-not-disrupt"


def do_not_disrupt_until(pod: Pod) -> float | None:
    """When the pod's do-not-disrupt protection ends: math.inf for "true" or a pod not started,
    None when it has no valid protection at all."""
    value = pod.meta.annotations.get(DO_NOT_DISRUPT)
    if value is None:
        return None
    if value == "true":
        return math.inf
    if value != value.strip():  # Go's time.ParseDuration takes no surrounding blanks
        return None
    try:
        duration = parse_duration(value)
    except ValueError:
        return None
    if duration <= 0:
        return None
    start = pod.start_time
    return math.inf if start is None else start + duration


def do_not_disrupt(pod: Pod, now: float) -> bool:
    """Whether karpenter.sh/do-not-disrupt protects the pod at `now`."""
    until = do_not_disrupt_until(pod)
    return until is not None and now < until
