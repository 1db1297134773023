"""Pod sorters: who is acted on first.

A sorter is a chain of comparisons, as in the design: each compares two pods and returns <0 when
the first should be acted on first, >0 when the second should, 0 when it cannot tell; the next
comparison in the chain breaks the tie. `ordered_by(...)` turns a chain into a sorter. The pod key
ends every chain so the order never depends on the input order.

- classAndPriority (the design's first link of every chain): the QoS class first, BestEffort <
  Burstable < Guaranteed, and only between pods of the same class the lower priority value.
- general: classAndPriority, then the shorter running time (the newest pod has lost the least work).
- cpu: classAndPriority, higher cpu usage, higher ext-cpu usage/limit, running time.
- memory: classAndPriority, higher memory usage, running time.

A custom metric composes its own chain from these pieces (see `kubetide.qos.extcpu`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from fractions import Fraction

from kubetide.model.quantity import CPU, MEMORY
from kubetide.qos.state import PodState

Compare = Callable[[PodState, PodState], int]
Sorter = Callable[[Iterable[PodState]], list[PodState]]

QOS_RANK = {"BestEffort": 0, "Burstable": 1, "Guaranteed": 2}
# The extended resource crane's elastic (offline) cpu is sold as; counted in millicores.
EXT_CPU = "gocrane.io/cpu"


def _sign(value: float | Fraction) -> int:
    return (value > 0) - (value < 0)


def compare_priority(a: PodState, b: PodState) -> int:
    return _sign(a.pod.priority - b.pod.priority)


def compare_qos_class(a: PodState, b: PodState) -> int:
    return _sign(QOS_RANK[a.pod.qos_class] - QOS_RANK[b.pod.qos_class])


def compare_class_and_priority(a: PodState, b: PodState) -> int:
    """The design's classAndPriority: QoS class first, then the priority value."""
    return compare_qos_class(a, b) or compare_priority(a, b)


def compare_running_time(a: PodState, b: PodState) -> int:
    """Shorter running time first. A pod that has not started yet counts as the newest."""
    start_a, start_b = a.pod.start_time, b.pod.start_time
    if start_a == start_b:
        return 0
    if start_a is None:
        return -1
    if start_b is None:
        return 1
    return _sign(start_b - start_a)


def _higher_usage_first(resource: str) -> Compare:
    def compare(a: PodState, b: PodState) -> int:
        # Unknown usage sorts as zero: with no evidence a pod uses much, it is not picked for it.
        return _sign((b.used(resource) or 0) - (a.used(resource) or 0))

    compare.__name__ = f"compare_{resource}_usage"
    return compare


compare_cpu_usage = _higher_usage_first(CPU)
compare_memory_usage = _higher_usage_first(MEMORY)


def ext_cpu_limit(state: PodState) -> int:
    """The pod's ext-cpu limit (its request when it sets no limit); 0 when it uses none."""
    return state.pod.limits.get(EXT_CPU) or state.pod.requests.get(EXT_CPU) or 0


def ext_cpu_ratio(state: PodState) -> Fraction | None:
    """cpu usage / ext-cpu limit, or None for a pod that uses no ext cpu."""
    limit = ext_cpu_limit(state)
    if not limit:
        return None
    return Fraction(state.used(CPU) or 0, limit)


def compare_uses_ext_cpu(a: PodState, b: PodState) -> int:
    """Pods that run on ext cpu first."""
    return _sign(int(ext_cpu_limit(b) > 0) - int(ext_cpu_limit(a) > 0))


def compare_ext_cpu(a: PodState, b: PodState) -> int:
    """The design's ext-cpu comparison: first whether each pod uses ext cpu (the user first), and
    when both do, the higher usage/limit ratio first."""
    ratio_a, ratio_b = ext_cpu_ratio(a), ext_cpu_ratio(b)
    if ratio_a is None or ratio_b is None:
        return compare_uses_ext_cpu(a, b)
    return _sign(ratio_b - ratio_a)


def compare_key(a: PodState, b: PodState) -> int:
    return (a.key > b.key) - (a.key < b.key)


def ordered_by(*compares: Compare) -> Sorter:
    """A sorter applying the comparisons in turn, the pod key last."""
    chain = (*compares, compare_key)

    def compare(a: PodState, b: PodState) -> int:
        for step in chain:
            result = step(a, b)
            if result:
                return result
        return 0

    def sort(pods: Iterable[PodState]) -> list[PodState]:
        return sorted(pods, key=functools.cmp_to_key(compare))

    return sort


general_sorter = ordered_by(compare_class_and_priority, compare_running_time)
cpu_sorter = ordered_by(compare_class_and_priority, compare_cpu_usage, compare_ext_cpu, compare_running_time)
memory_sorter = ordered_by(compare_class_and_priority, compare_memory_usage, compare_running_time)
