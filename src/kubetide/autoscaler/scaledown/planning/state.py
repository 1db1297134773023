"""The scale-down state kept between loops, as objects that answer the questions asked of it.

- `UnneededNodes`, the parallel-drain design's candidate_set with its timers: since when each
  node has been unneeded, and when it becomes removable (scale-down-unneeded-time, or
  scale-down-unready-time for an unready node). Renewed every update: a node that stays keeps
  its time, a new one starts now, one that left is forgotten.
- `UnremovableNodes`, the non_candidate_set: nodes whose drain simulation failed, with when and
  why. Such a node is not simulated again until unremovable-node-recheck-timeout has passed.

Both read as mappings (node name -> time / failure) for reports and tests.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass

from kubetide.autoscaler.options import AutoscalerOptions
from kubetide.autoscaler.scaledown.planning.drainability import BlockingPod
from kubetide.autoscaler.scaledown.reasons import NodeReason


@dataclass(frozen=True, slots=True)
class Unremovable:
    """A failed drain simulation, remembered until unremovable-node-recheck-timeout passes."""

    at: float
    reason: NodeReason
    blocking_pod: BlockingPod | None = None
    detail: str = ""
    blockers: tuple[BlockingPod, ...] = ()  # every blocking pod, in CA's pod order
    unplaced: str = ""  # NoPlaceToMovePods: the pod (key) that found no other node


class UnneededNodes(Mapping[str, float]):
    """Node name -> when it became unneeded."""

    def __init__(self) -> None:
        self._since: dict[str, float] = {}

    def __getitem__(self, name: str) -> float:
        return self._since[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._since)

    def __len__(self) -> int:
        return len(self._since)

    def removable_at(self, name: str, *, ready: bool, options: AutoscalerOptions) -> float:
        """When the node has been unneeded long enough to go."""
        wait = options.scale_down_unneeded_time if ready else options.scale_down_unready_time
        return self._since[name] + wait

    def renew(self, names: Iterable[str], now: float) -> None:
        """The nodes unneeded after this update: they keep their time or start one now."""
        self._since = {name: self._since.get(name, now) for name in names}

    def clear(self) -> None:
        self._since.clear()


class UnremovableNodes(Mapping[str, Unremovable]):
    """Node name -> its last failed simulation, until it is due for a recheck."""

    def __init__(self, recheck_timeout: float) -> None:
        self.recheck_timeout = recheck_timeout
        self._failed: dict[str, Unremovable] = {}

    def __getitem__(self, name: str) -> Unremovable:
        return self._failed[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._failed)

    def __len__(self) -> int:
        return len(self._failed)

    def recheck_at(self, name: str) -> float:
        return self._failed[name].at + self.recheck_timeout

    def recent(self, now: float) -> dict[str, Unremovable]:
        """The failures not due for a recheck yet, by node (one pass, not a call per node)."""
        due = self.recheck_timeout
        return {name: failed for name, failed in self._failed.items() if now < failed.at + due}

    def renew(
        self,
        fresh: Mapping[str, Unremovable],
        *,
        now: float,
        exists: Callable[[str], bool],
        candidates: Collection[str],
    ) -> None:
        """Remembered failures stay until their recheck time (unless the node is gone or became a
        candidate); this update's failures replace them."""
        kept = {
            name: failed
            for name, failed in self._failed.items()
            if exists(name) and now < failed.at + self.recheck_timeout and name not in candidates
        }
        kept.update(fresh)
        self._failed = kept

    def clear(self) -> None:
        self._failed.clear()
