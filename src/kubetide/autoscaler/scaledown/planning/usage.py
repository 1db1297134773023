"""Real usage in the drain simulation: no destination is packed past its QoS watermark.

Scale-down packs pods by requests. Where a node QoS agent evicts or throttles above a usage
watermark, a destination full by requests but light in usage between spikes would take the moved
pods, cross its watermark at the next spike and have the agent evict them again, spike after
spike. With a usage source (the UsageSource port) the simulation therefore also refuses a
destination whose projected usage would cross one of its ceilings (the lowest evict or throttle
watermark of the NodeQOS objects selecting it; the agent acts strictly above it).

What "usage" means here, so one quiet sample does not hide the next spike:
- a pod's usage is the highest its workload showed over scale-down-usage-window: the peak over
  the loop's samples of any pod sharing its controller (pods of one controller run the same code
  and spike together, and a replacement pod has no history of its own), or the pod's own peak
  for a pod without a controller; a pod never measured counts at its requests;
- a node's projected usage is what its node metrics show beyond its pods (system daemons, from
  the current sample) plus the usage of every pod the simulation has on it, so pods leaving or
  arriving in the simulation change it exactly.

`UsageHistory` keeps the peaks between loops (the Planner owns it); `UsageGuard` lives for one
update and follows the simulation's forks like the PDB tracker.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Container, Iterable
from dataclasses import dataclass

from kubetide.autoscaler.ports import UsageCeiling, UsageSample
from kubetide.model import Pod
from kubetide.snapshot import ClusterSnapshot


def usage_key(pod: Pod) -> str:
    """Whose history a pod's usage joins: its controller's UID, else its own (UIDs are unique
    across kinds, so the two never collide)."""
    ref = pod.meta.controller
    return ref.uid if ref is not None else pod.uid


class _WindowMax:
    """The maximum of (time, value) samples over a sliding window (a monotonic deque)."""

    __slots__ = ("samples",)

    def __init__(self) -> None:
        self.samples: deque[tuple[float, int]] = deque()

    def add(self, t: float, value: int) -> None:
        samples = self.samples
        while samples and samples[-1][1] <= value:
            samples.pop()
        samples.append((t, value))

    def expire(self, before: float) -> None:
        samples = self.samples
        while samples and samples[0][0] < before:
            samples.popleft()

    def peak(self) -> int | None:
        return self.samples[0][1] if self.samples else None


class UsageHistory:
    """Per-workload usage peaks over the last `window` seconds, fed one sample per loop."""

    def __init__(self, window: float):
        self.window = window
        self._peaks: dict[tuple[str, str], _WindowMax] = {}

    def observe(self, now: float, sample: UsageSample, pods: Iterable[Pod]) -> None:
        """Record this loop's usage of `pods` (the ones bound to nodes), then forget what left
        the window."""
        highest: dict[tuple[str, str], int] = {}
        for pod in pods:
            used = sample.pods.get(pod.uid)
            if not used:
                continue
            key = usage_key(pod)
            for resource, value in used.items():
                slot = (key, resource)
                if value > highest.get(slot, -1):
                    highest[slot] = value
        peaks = self._peaks
        for slot, value in highest.items():
            window = peaks.get(slot)
            if window is None:
                window = peaks[slot] = _WindowMax()
            window.add(now, value)
        before = now - self.window
        gone = []
        for slot, window in peaks.items():
            window.expire(before)
            if not window.samples:
                gone.append(slot)
        for slot in gone:
            del peaks[slot]

    def peak(self, pod: Pod, resource: str) -> int:
        """The pod's usage as the guard counts it: its workload's peak, else its request."""
        window = self._peaks.get((usage_key(pod), resource))
        peak = window.peak() if window is not None else None
        return peak if peak is not None else pod.requests.get(resource, 0)


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why the guard refused a destination: the node, the ceiling, and the projected usage."""

    node: str
    ceiling: UsageCeiling
    projected: int


class UsageGuard:
    """Projected usage of every node with ceilings, for one planner update."""

    def __init__(self, snapshot: ClusterSnapshot, sample: UsageSample, history: UsageHistory):
        self.history = history
        self.ceilings: dict[str, tuple[UsageCeiling, ...]] = {}
        self.projected: dict[str, dict[str, int]] = {}
        self._journal: list[tuple[str, str, int]] = []  # (node, resource, delta) in order
        self._marks: list[int] = []
        self._peaks: dict[tuple[str, str], int] = {}  # (pod UID, resource) -> history.peak
        for name, ceilings in sample.ceilings.items():
            if not ceilings or name not in snapshot:
                continue
            self.ceilings[name] = tuple(ceilings)
            pods = snapshot.pods_on(name).values()
            measured = sample.nodes.get(name, {})
            projected: dict[str, int] = {}
            for resource in {c.resource for c in ceilings}:
                own = sum(self.peak(pod, resource) for pod in pods)
                now = sum(sample.pods.get(pod.uid, {}).get(resource, 0) for pod in pods)
                overhead = max(0, measured.get(resource, now) - now)
                projected[resource] = overhead + own
            self.projected[name] = projected

    def peak(self, pod: Pod, resource: str) -> int:
        """`history.peak`, once per pod and resource in this update (it is asked on every move)."""
        key = (pod.uid, resource)
        found = self._peaks.get(key)
        if found is None:
            found = self._peaks[key] = self.history.peak(pod, resource)
        return found

    def refusal(self, pod: Pod, node: str) -> Refusal | None:
        """The first ceiling of `node` that taking `pod` would cross, or None."""
        ceilings = self.ceilings.get(node)
        if ceilings is None:
            return None
        projected = self.projected[node]
        for ceiling in ceilings:
            after = projected[ceiling.resource] + self.peak(pod, ceiling.resource)
            if after > ceiling.amount:
                return Refusal(node, ceiling, after)
        return None

    def refusing(self, pod: Pod, skip: Container[str]) -> _Refusing:
        """`skip` plus every node `pod` would push over a ceiling, as the mover's skip set."""
        return _Refusing(self, pod, skip)

    # -- the simulation's moves, undone with its forks ---------------------------------------
    def moved(self, pod: Pod, source: str | None, dest: str) -> None:
        for resource in self.projected.get(dest, ()):
            self._change(dest, resource, self.peak(pod, resource))
        if source is not None:
            for resource in self.projected.get(source, ()):
                self._change(source, resource, -self.peak(pod, resource))

    def _change(self, node: str, resource: str, delta: int) -> None:
        self.projected[node][resource] += delta
        if self._marks:
            self._journal.append((node, resource, delta))

    def fork(self) -> None:
        self._marks.append(len(self._journal))

    def commit(self) -> None:
        mark = self._marks.pop()
        if not self._marks:
            del self._journal[mark:]

    def revert(self) -> None:
        mark = self._marks.pop()
        journal = self._journal
        while len(journal) > mark:
            node, resource, delta = journal.pop()
            self.projected[node][resource] -= delta


class _Refusing:
    """A skip set that also holds the nodes a pod would push over a ceiling; remembers the first
    such node it was asked about, for the reason."""

    __slots__ = ("first", "guard", "pod", "skip")

    def __init__(self, guard: UsageGuard, pod: Pod, skip: Container[str]):
        self.guard = guard
        self.pod = pod
        self.skip = skip
        self.first: Refusal | None = None

    def __contains__(self, node: object) -> bool:
        if node in self.skip:
            return True
        if not isinstance(node, str):
            return False
        refusal = self.guard.refusal(self.pod, node)
        if refusal is None:
            return False
        if self.first is None:
            self.first = refusal
        return True
