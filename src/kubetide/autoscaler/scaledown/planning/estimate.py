"""How long a node takes to empty once its drain starts, estimated before it starts.

A drain runs in budget waves (PdbTracker.waves): the first wave's pods are evicted once
node-delete-delay-after-taint has passed; each later wave waits until the replacements of the wave
before are Ready (only then does the PodDisruptionBudget allow the next eviction), and the 429s in
between are retried every EVICTION_RETRY_INTERVAL, so a wave lasts the replacement's time to Ready
rounded up to that interval. The node is empty when the last wave's pods have had their grace
period (terminationGracePeriodSeconds, capped by max-graceful-termination-sec: an upper bound,
since most processes exit sooner).

A replacement's time to Ready is read from the node's pods themselves: the time from being bound
(PodScheduled) to Ready of each pod that never restarted, the slowest of them, since the wave waits
for all its replacements. Where no pod has that history (a hand-written manifest), the documented
default DEFAULT_REPLACEMENT_READY is used and the estimate says so.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from kubetide.autoscaler.options import AutoscalerOptions
from kubetide.durations import format_duration
from kubetide.model import Pod

# The Cluster Autoscaler retries a refused eviction every 10 s.
EVICTION_RETRY_INTERVAL = 10.0
# A replacement's time from being bound to Ready when no pod of the node shows it.
DEFAULT_REPLACEMENT_READY = 30.0
# Between an eviction and the replacement being bound: the ReplicaSet controller and the scheduler.
REPLACEMENT_LAG = 2.0


@dataclass(frozen=True, slots=True)
class DrainEstimate:
    seconds: float  # from the taint to the node empty
    waves: int
    wave_seconds: float  # one wave: eviction to the replacements Ready, in retry intervals
    grace_seconds: float  # the last wave's pods terminating
    replacement_ready_seconds: float
    from_history: bool  # replacement_ready_seconds read from the pods, not the default

    def to_json(self) -> dict[str, Any]:
        return {
            "waves": self.waves,
            "wave_seconds": self.wave_seconds,
            "grace_seconds": self.grace_seconds,
            "replacement_ready_seconds": round(self.replacement_ready_seconds, 1),
            "replacement_ready_from": "readiness history" if self.from_history else "default",
        }

    def words(self) -> str:
        grace = f"{format_duration(self.grace_seconds)} grace"
        if self.waves == 1:
            return f"empties in about {format_duration(self.seconds)} ({grace})"
        source = "the pods' readiness history" if self.from_history else "default"
        return (
            f"empties in about {format_duration(self.seconds)}: {self.waves} waves of"
            f" {format_duration(self.wave_seconds)} (replacements Ready in"
            f" {format_duration(round(self.replacement_ready_seconds))}, {source}) + {grace}"
        )


def estimate_drain(pods: Sequence[Pod], waves: int, options: AutoscalerOptions) -> DrainEstimate:
    """The estimate for draining `pods` (a node's pods to evict) in `waves` budget waves."""
    longest = max((p.termination_grace_period for p in pods), default=0)
    grace = float(min(longest, options.max_graceful_termination_sec))
    known = [t for t in map(_bound_to_ready, pods) if t is not None]
    ready = max(known) if known else DEFAULT_REPLACEMENT_READY
    wave = EVICTION_RETRY_INTERVAL * math.ceil((ready + REPLACEMENT_LAG) / EVICTION_RETRY_INTERVAL)
    seconds = options.node_delete_delay_after_taint + (waves - 1) * wave + grace
    return DrainEstimate(seconds, waves, wave, grace, ready, bool(known))


def _bound_to_ready(pod: Pod) -> float | None:
    bound, ready = pod.scheduled_transition, pod.ready_transition
    if not pod.ready or pod.restarts or bound is None or ready is None or ready < bound:
        return None
    return ready - bound


class Estimated(Protocol):
    """A node's status as the planner leaves it (plan.NodeStatus): its drain estimate, if drained."""

    @property
    def estimate(self) -> DrainEstimate | None: ...


def drain_estimates(nodes: Mapping[str, Estimated]) -> dict[str, DrainEstimate]:
    """The drain estimates of a plan's nodes (`ScaleDownPlan.nodes`: the planner's, made as it
    chose the drains), in its order: what `explain` reports beside the unblock answers."""
    return {name: status.estimate for name, status in nodes.items() if status.estimate is not None}
