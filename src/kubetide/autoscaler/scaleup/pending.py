"""Which pending pods may trigger a scale-up in this loop.

Only pods the scheduler has given up on count (PodScheduled=False, reason Unschedulable): a pod
that has not been tried yet may still land on an existing node. Two more filters follow the
Cluster Autoscaler:

- young pods wait: a burst of pods created together is better answered by one scale-up than by
  one per loop, so a pod must be older than new-pod-scale-up-delay (measured from its creation
  timestamp). The pod annotation `cluster-autoscaler.kubernetes.io/pod-scale-up-delay` can
  lengthen that delay for one pod, never shorten it (CA ignores a smaller value, so a workload
  cannot jump the cluster-wide queue);
- expendable pods (priority below expendable-pods-priority-cutoff) never trigger a scale-up: they
  are the capacity that preemption may take away.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from kubetide.autoscaler.options import AutoscalerOptions
from kubetide.durations import format_duration, parse_duration
from kubetide.model import Pod

SCALE_UP_DELAY_ANNOTATION = "cluster-autoscaler.kubernetes.io/pod-scale-up-delay"


@dataclass(slots=True)
class PendingSelection:
    """The pods that may trigger a scale-up now, and why the others may not (by pod key)."""

    pods: list[Pod] = field(default_factory=list)
    too_young: dict[str, str] = field(default_factory=dict)
    expendable: dict[str, str] = field(default_factory=dict)
    # Annotation values that did not parse or were ignored: pod key -> message, for status output.
    warnings: dict[str, str] = field(default_factory=dict)


def pod_scale_up_delay(pod: Pod, default: float) -> tuple[float, str | None]:
    """The delay that applies to one pod, and a warning when its annotation was not usable."""
    text = pod.annotations.get(SCALE_UP_DELAY_ANNOTATION)
    if text is None:
        return default, None
    try:
        delay = parse_duration(text)
    except ValueError as exc:
        return default, f"{SCALE_UP_DELAY_ANNOTATION}: {exc}"
    if delay < default:
        return default, (
            f"{SCALE_UP_DELAY_ANNOTATION}={text} is below new-pod-scale-up-delay "
            f"({format_duration(default)}); using the latter"
        )
    return delay, None


def select_pending(pods: Iterable[Pod], options: AutoscalerOptions, now: float) -> PendingSelection:
    """Unschedulable pods old enough and important enough to ask for a node.

    Pods that are not marked unschedulable (not tried yet, or bound) are left out silently: they
    are not the autoscaler's business yet.
    """
    result = PendingSelection()
    cutoff = options.expendable_pods_priority_cutoff
    default_delay = options.new_pod_scale_up_delay
    for pod in pods:
        if not pod.is_unschedulable or pod.is_terminating:
            continue
        if pod.priority < cutoff:
            result.expendable[pod.key] = f"expendable: priority {pod.priority} is below the cutoff {cutoff}"
            continue
        delay, warning = pod_scale_up_delay(pod, default_delay)
        if warning:
            result.warnings[pod.key] = warning
        created = pod.meta.creation_timestamp
        if delay > 0 and created is not None and now - created < delay:
            age = max(0.0, now - created)
            result.too_young[pod.key] = (
                f"too young: created {format_duration(round(age, 3))} ago, "
                f"scale-up delay {format_duration(delay)}"
            )
            continue
        result.pods.append(pod)
    return result
