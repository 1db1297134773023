"""Usage profiles, loaded: the series each resource of a pod follows, and `UsageModel`, which
picks a pod's profile and evaluates it. spec/usage.py builds them from the scenario; the node
QoS agents (runtime/qos.py) and the autoscaler's usage port (runtime/adapters.py) read them.
"""

from __future__ import annotations

import bisect
import hashlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from kubetide.model import Pod
from kubetide.model.quantity import CPU, MEMORY
from kubetide.model.selectors import LabelSelector

USAGE_ANNOTATION = "kubetide.io/usage"
RESOURCES = (CPU, MEMORY)
_MASK = (1 << 64) - 1


# -- series: one resource over time -----------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Constant:
    value: int

    def at(self, t: float, key: int) -> int:
        return self.value


@dataclass(frozen=True, slots=True)
class Trace:
    times: tuple[float, ...]
    values: tuple[int, ...]

    def at(self, t: float, key: int) -> int:
        index = bisect.bisect_right(self.times, t) - 1
        return self.values[max(index, 0)]


@dataclass(frozen=True, slots=True)
class Generator:
    base: int
    spike_to: int | None = None
    every: float = 0.0
    duration: float = 0.0  # `for`
    start: float = 0.0
    jitter: float = 0.0

    def spiking(self, t: float) -> bool:
        if self.spike_to is None or t < self.start:
            return False
        return (t - self.start) % self.every < self.duration

    def at(self, t: float, key: int) -> int:
        value = self.spike_to if self.spiking(t) else self.base
        assert value is not None
        if self.jitter:
            value = round(value * (1 + self.jitter * (2 * unit_draw(key, t) - 1)))
        return max(0, value)


Series = Constant | Trace | Generator


def unit_draw(key: int, t: float) -> float:
    """A number in [0, 1) from (key, time), the same every run (splitmix64's finaliser)."""
    x = (key + (round(t * 1000) + 1) * 0x9E3779B97F4A7C15) & _MASK
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _MASK
    x ^= x >> 31
    return x / 2**64


def _stable_hash(*parts: object) -> int:
    digest = hashlib.blake2b("/".join(map(str, parts)).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big")


@dataclass(frozen=True, slots=True)
class Profile:
    """Series per resource; a resource absent here falls through to the next source."""

    series: Mapping[str, Series]


# -- matching pods (spec.usage) ----------------------------------------------------------------


@dataclass(frozen=True)
class UsageRule:
    kind: str | None
    namespace: str | None
    name: str | None
    selector: LabelSelector | None
    profile: Profile
    field: str  # spec.usage[2], for messages


# What a pod belongs to: (kind, namespace, name) of its controller and of the controller's own
# controller (a Deployment above its ReplicaSet), answered by the simulator's world.
OwnersOf = Callable[[Pod], Iterable[tuple[str, str]]]


def _matches(rule: UsageRule, pod: Pod, owners: OwnersOf) -> bool:
    if rule.namespace is not None and pod.namespace != rule.namespace:
        return False
    if rule.selector is not None and not rule.selector.matches(pod.labels):
        return False
    if rule.kind is None:  # a workload of a per-workload trace: its name, of any controller kind
        return rule.name is None or any(name == rule.name for _, name in owners(pod))
    if rule.kind == "Pod":
        return rule.name is None or pod.name == rule.name
    return any(kind == rule.kind and (rule.name is None or name == rule.name) for kind, name in owners(pod))


# -- the model ---------------------------------------------------------------------------------


@dataclass
class UsageModel:
    """Every profile a scenario declares, checked at load time; `usage(pod, t)` at run time."""

    rules: list[UsageRule] = field(default_factory=list)
    annotations: dict[str, Profile] = field(default_factory=dict)  # annotation text -> profile
    seed: int = 0
    owners: OwnersOf = lambda pod: ()
    _resolved: dict[str, tuple[tuple[str, Series | None, int], ...]] = field(default_factory=dict)

    def resolve(self, pod: Pod) -> tuple[tuple[str, Series | None, int], ...]:
        """(resource, series or None for "use the request", jitter key) per resource, cached per pod."""
        cached = self._resolved.get(pod.uid)
        if cached is not None:
            return cached
        found: dict[str, Series] = {}
        text = pod.annotations.get(USAGE_ANNOTATION)
        if text is not None and text in self.annotations:
            found.update(self.annotations[text].series)
        for rule in self.rules:
            if len(found) == len(RESOURCES):
                break
            if _matches(rule, pod, self.owners):
                for resource, series in rule.profile.series.items():
                    found.setdefault(resource, series)
        resolved = tuple(
            (resource, found.get(resource), _stable_hash(self.seed, pod.uid, resource))
            for resource in RESOURCES
        )
        self._resolved[pod.uid] = resolved
        return resolved

    def spike_starts(self, duration: float) -> list[float]:
        """Every time in [0, duration) a generator's spike begins, over all declared profiles
        (traces have no spikes of their own), without repeats."""
        profiles = [rule.profile for rule in self.rules] + list(self.annotations.values())
        starts: set[float] = set()
        for profile in profiles:
            for series in profile.series.values():
                if isinstance(series, Generator) and series.spike_to is not None:
                    t = series.start
                    while t < duration:
                        starts.add(t)
                        t += series.every
        return sorted(starts)

    def forget(self, uid: str) -> None:
        self._resolved.pop(uid, None)

    def usage(self, pod: Pod, t: float, quota: int | None = None) -> dict[str, int]:
        """What `pod` uses at `t` seconds into the scenario: profile (or request), capped at the
        pod's limit and, for cpu, at the agent's quota. Nothing before the pod is Running."""
        if pod.phase != "Running":
            return {CPU: 0, MEMORY: 0}
        result = {}
        limits = pod.limits
        for resource, series, key in self.resolve(pod):
            value = pod.requests.get(resource, 0) if series is None else series.at(t, key)
            limit = limits.get(resource)
            if limit and value > limit:
                value = limit
            if resource == CPU and quota is not None and value > quota:
                value = quota
            result[resource] = value
        return result
