"""`sorting_deletion_age_ratio`: how much older than the youngest pod the deleted pods were.

KEP-2185's SLI. For each downscale that needed sorting, and for each deleted pod that is ready, the
controller observes age(deleted pod) / age(youngest ready pod), ages counted from creation at the
moment of the decision, the youngest taken among all the ReplicaSet's pods before the deletion.
The KEP's SLO: no value above 2 when no deletion cost is set and timestamps decided.

Differences from kube-controller-manager's `replicaset_controller_sorting_deletion_age_ratio`:

- Upstream divides the two ages as *integer milliseconds* and then converts to float, so every
  ratio is truncated to a whole number: 1.9 is recorded as 1 and lands in the `le="1"` bucket, and
  0.6 becomes 0. We divide the exact integer nanoseconds as real numbers (1.9 lands in `le="2"`).
- Upstream panics (integer division by zero) when the youngest ready pod is less than 1 ms old and
  records a negative ratio when its creation time is in the future; we skip the observation when
  the youngest age is not positive.
- Upstream treats a ready pod without a creation time as infinitely old; we skip such pods.

Buckets are Prometheus-style and cumulative: bucket `le` counts the observations <= le, so `+Inf`
equals `count`.
"""

from __future__ import annotations

from collections.abc import Iterable

from kubetide.model.pod import Pod
from kubetide.workloads.timebuckets import to_ns

BUCKETS = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0)


def _label(bound: float) -> str:
    return f"{bound:g}"


class DeletionAgeRatio:
    """A histogram of deleted-pod age / youngest-ready-pod age (buckets 0.25 ... 8, +Inf)."""

    def __init__(self) -> None:
        self._counts = [0] * (len(BUCKETS) + 1)  # per bucket, not cumulative; last = above 8
        self.count = 0
        self.sum = 0.0
        self.max: float | None = None

    def observe_value(self, ratio: float) -> None:
        index = next((i for i, bound in enumerate(BUCKETS) if ratio <= bound), len(BUCKETS))
        self._counts[index] += 1
        self.count += 1
        self.sum += ratio
        if self.max is None or ratio > self.max:
            self.max = ratio

    def observe(self, deleted: Iterable[Pod], all_pods: Iterable[Pod], now: float) -> list[float]:
        """Observe one downscale decision; returns the ratios it recorded.

        `all_pods` are the ReplicaSet's pods before the deletion (the deleted ones included).
        """
        now_ns = to_ns(now)
        youngest = max(
            (
                to_ns(pod.meta.creation_timestamp)
                for pod in all_pods
                if pod.ready and pod.meta.creation_timestamp is not None
            ),
            default=None,
        )
        if youngest is None or now_ns - youngest <= 0:
            return []
        youngest_age = now_ns - youngest
        ratios = []
        for pod in deleted:
            if pod.ready and pod.meta.creation_timestamp is not None:
                ratio = (now_ns - to_ns(pod.meta.creation_timestamp)) / youngest_age
                self.observe_value(ratio)
                ratios.append(ratio)
        return ratios

    def cumulative(self) -> dict[str, int]:
        """{"0.25": n, "0.5": n, "1": n, "2": n, "4": n, "8": n, "+Inf": n}, each counting <= le."""
        result: dict[str, int] = {}
        running = 0
        for bound, n in zip(BUCKETS, self._counts):
            running += n
            result[_label(bound)] = running
        result["+Inf"] = running + self._counts[-1]
        return result

    def as_dict(self) -> dict[str, object]:
        """{"buckets": cumulative counts, "count": n, "max": largest ratio or None}."""
        return {"buckets": self.cumulative(), "count": self.count, "max": self.max}

    def merge(self, other: DeletionAgeRatio) -> None:
        """Add another histogram's observations (e.g. one per ReplicaSet into a run total)."""
        self._counts = [a + b for a, b in zip(self._counts, other._counts)]
        self.count += other.count
        self.sum += other.sum
        if other.max is not None and (self.max is None or other.max > self.max):
            self.max = other.max
