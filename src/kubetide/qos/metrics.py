"""The metric registry: which node metrics a NodeQOS rule may watch and what the agent can do
about each.

Every metric carries the design's attributes: a name, an action priority (0 lowest .. 10 highest,
used to pick one metric when the agent cannot act precisely), whether and how its pods sort,
whether it can throttle (and whether a throttle's release is quantified) with its throttle and
restore functions, and whether it can evict (quantified or not) with its evict function.

kubetide adds what the design leaves implicit: `resource` (the unit its gaps and releases are
counted in: millicores for cpu, bytes for memory), `percent` (watermarks are percentages of the
node's capacity, converted to absolute amounts before any arithmetic) and `selects` (which pods'
usage counts toward it; all of them unless said otherwise).

## Registering a custom metric

Build a `Metric` and register it before the NodeQOS objects that name it are loaded::

    from kubetide.qos import Metric, register_metric, evict_pod, ordered_by, compare_class_and_priority

    register_metric(Metric(name="my_metric", resource="cpu", action_priority=3,
                           sortable=True, sort=ordered_by(compare_class_and_priority, my_compare),
                           evictable=True, evict_quantified=True, evict=evict_pod))

`usage_metric` builds one the way the built-in metrics are built (sorted pods, quantified
eviction, and throttling for cpu usage). `kubetide.qos.extcpu` is a complete example (ext-cpu
usage with its own sorter), built with it and registered by default through exactly this call.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from fractions import Fraction

from kubetide.model.quantity import CPU, MEMORY, QuantityError, format_units, parse_quantity, to_units
from kubetide.qos.actions import ActionContext, Effect, evict_pod, restore_cpu, throttle_cpu
from kubetide.qos.sorters import Sorter, cpu_sorter, general_sorter, memory_sorter
from kubetide.qos.state import NodeState, PodState

ActionFunc = Callable[[PodState, ActionContext], Effect | None]

CPU_TOTAL_USAGE = "cpu_total_usage"
CPU_TOTAL_UTILIZATION = "cpu_total_utilization"
MEMORY_TOTAL_USAGE = "memory_total_usage"
MEMORY_TOTAL_UTILIZATION = "memory_total_utilization"

_PLAIN_NUMBER = re.compile(r"^[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)$")


@dataclass(frozen=True)
class Metric:
    name: str
    resource: str
    action_priority: int = 5
    percent: bool = False
    sortable: bool = False
    sort: Sorter | None = None
    throttleable: bool = False
    throttle_quantified: bool = False
    throttle: ActionFunc | None = None
    restore: ActionFunc | None = None
    evictable: bool = False
    evict_quantified: bool = False
    evict: ActionFunc | None = None
    selects: Callable[[PodState], bool] | None = None
    description: str = ""

    def __post_init__(self) -> None:
        problems = []
        if not 0 <= self.action_priority <= 10:
            problems.append(f"action_priority must be 0..10, got {self.action_priority}")
        if self.sortable and self.sort is None:
            problems.append("sortable needs a sort function")
        if self.throttleable and (self.throttle is None or self.restore is None):
            problems.append("throttleable needs throttle and restore functions")
        if self.throttle_quantified and not self.throttleable:
            problems.append("throttle_quantified needs throttleable")
        if self.evictable and self.evict is None:
            problems.append("evictable needs an evict function")
        if self.evict_quantified and not self.evictable:
            problems.append("evict_quantified needs evictable")
        if problems:
            raise ValueError(f"metric {self.name}: " + "; ".join(problems))

    # -- measuring ---------------------------------------------------------------------------
    def counts(self, state: PodState) -> bool:
        return self.selects is None or self.selects(state)

    def node_usage(self, node: NodeState) -> int | None:
        """The node's absolute usage for the metric (None when nothing measures it). A metric
        that `selects` pods sums the selected pods' known usage, as the node's own usage sums its
        pods' when it has no NodeMetrics: one unmeasured pod does not make the node's usage
        unknown, only all of them do."""
        if self.selects is None:
            return node.used(self.resource)
        selected = [p.used(self.resource) for p in node.pods if self.counts(p)]
        known = [u for u in selected if u is not None]
        if selected and not known:
            return None
        return sum(known)

    def value(self, node: NodeState) -> Fraction | None:
        """The metric as rules compare it: absolute usage, or a percentage of capacity."""
        usage = self.node_usage(node)
        if usage is None:
            return None
        if not self.percent:
            return Fraction(usage)
        capacity = node.capacity(self.resource)
        return Fraction(usage * 100, capacity) if capacity else None

    def to_absolute(self, amount: Fraction, node: NodeState) -> Fraction:
        """A difference in the metric's own terms as an absolute amount: percentage points become
        millicores (gap * cores * 1000 / 100) or bytes (gap * total / 100)."""
        return amount * node.capacity(self.resource) / 100 if self.percent else amount

    def released(self, state: PodState, effect: Effect) -> int | None:
        """What an effect on this pod gives back toward this metric (None when unknown)."""
        if not self.counts(state):
            return 0
        return effect.released.get(self.resource)

    # -- configuration -----------------------------------------------------------------------
    def parse_watermark(self, raw: object) -> Fraction:
        """A metricRule value: a percentage (0-100) for percent metrics, otherwise a quantity in
        `resource` units. For cpu a bare number is millicores, as crane reads it (`value: 4000` is
        4 cores) and a suffixed one is a Kubernetes quantity (`4000m` is also 4 cores).
        Raises ValueError with the message to show."""
        try:
            amount = parse_quantity(raw)
        except QuantityError as exc:
            raise ValueError(str(exc)) from None
        if amount < 0:
            raise ValueError(f"must be non-negative, got {raw!r}")
        if self.percent:
            if amount > 100:
                raise ValueError(f"{self.name} is a percentage: must be between 0 and 100, got {raw!r}")
            return amount
        if self.resource == CPU and _PLAIN_NUMBER.match(str(raw).strip()):
            return amount
        return Fraction(to_units(self.resource, amount))

    def format(self, amount: Fraction | int | None) -> str:
        """An absolute amount of the metric's resource, for people (rounded up)."""
        if amount is None:
            return "unknown"
        units = math.ceil(amount)
        sign = "-" if units < 0 else ""
        return sign + format_units(self.resource, abs(units))


class MetricRegistry:
    """Metrics by name, in registration order (which also breaks action-priority ties)."""

    def __init__(self, metrics: Iterable[Metric] = ()):
        self._metrics: dict[str, Metric] = {}
        for metric in metrics:
            self.register(metric)

    def register(self, metric: Metric, *, replace: bool = False) -> Metric:
        if metric.name in self._metrics and not replace:
            raise ValueError(f"metric {metric.name} is already registered (pass replace=True)")
        self._metrics[metric.name] = metric
        return metric

    def unregister(self, name: str) -> None:
        del self._metrics[name]

    def get(self, name: str) -> Metric | None:
        return self._metrics.get(name)

    def __getitem__(self, name: str) -> Metric:
        return self._metrics[name]

    def __contains__(self, name: object) -> bool:
        return name in self._metrics

    def __iter__(self) -> Iterator[Metric]:
        return iter(self._metrics.values())

    def names(self) -> list[str]:
        return list(self._metrics)

    def copy(self) -> MetricRegistry:
        return MetricRegistry(self._metrics.values())

    def rank(self, name: str) -> int:
        """Registration position, for deterministic ordering."""
        return list(self._metrics).index(name)


def usage_metric(
    name: str,
    resource: str,
    sort: Sorter,
    description: str,
    *,
    percent: bool = False,
    throttles_cpu: bool = False,
    action_priority: int = 5,
    selects: Callable[[PodState], bool] | None = None,
) -> Metric:
    """A metric as the built-in ones are: its pods sort by `sort` and it evicts them (`evict_pod`,
    quantified); a cpu usage metric also throttles them (`throttle_cpu` / `restore_cpu`, quantified).
    A percentage cannot be throttled precisely, and memory not at all."""
    return Metric(
        name=name,
        resource=resource,
        action_priority=action_priority,
        percent=percent,
        sortable=True,
        sort=sort,
        throttleable=throttles_cpu,
        throttle_quantified=throttles_cpu,
        throttle=throttle_cpu if throttles_cpu else None,
        restore=restore_cpu if throttles_cpu else None,
        evictable=True,
        evict_quantified=True,
        evict=evict_pod,
        selects=selects,
        description=description,
    )


BUILTIN_METRICS = (
    usage_metric(CPU_TOTAL_USAGE, CPU, cpu_sorter, "node cpu usage (millicores)", throttles_cpu=True),
    usage_metric(
        CPU_TOTAL_UTILIZATION,
        CPU,
        cpu_sorter,
        "node cpu usage as a percentage of its cpu capacity",
        percent=True,
    ),
    usage_metric(
        MEMORY_TOTAL_USAGE,
        MEMORY,
        memory_sorter,
        "node memory usage (bytes); memory cannot be throttled, only evicted",
    ),
    usage_metric(
        MEMORY_TOTAL_UTILIZATION,
        MEMORY,
        memory_sorter,
        "node memory usage as a percentage of its memory capacity",
        percent=True,
    ),
)

# The registry NodeQOS manifests are validated against and agents use unless given another.
METRICS = MetricRegistry(BUILTIN_METRICS)


def register_metric(metric: Metric, *, replace: bool = False) -> Metric:
    """Add a metric to the default registry (see the module docstring)."""
    return METRICS.register(metric, replace=replace)


def sorter_for(metric: Metric) -> Sorter:
    return metric.sort if metric.sortable and metric.sort is not None else general_sorter
