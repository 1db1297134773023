"""A custom metric, registered the way any package would: ext-cpu usage.

Crane sells idle cpu to offline pods as an extended resource (`gocrane.io/cpu`, counted in
millicores). Watching only those pods' cpu lets a NodeQOS rule push offline work back without
touching the online pods:

    - name: offline-cpu
      actionName: throttle
      metricRule: {name: ext_cpu_total_usage, value: 2000}   # millicores, like cpu_total_usage

The metric counts the cpu usage of the pods that hold ext cpu (`selects`), sorts them by the
design's ext-cpu order (ext-cpu users first, then the higher usage/limit ratio, then the general
order), and reuses the cpu throttle, restore and evict functions: everything else (gaps, precise
execution, Preview, restore) comes from the framework.
"""

from __future__ import annotations

from kubetide.model.quantity import CPU
from kubetide.qos.metrics import METRICS, Metric, MetricRegistry, usage_metric
from kubetide.qos.sorters import (
    compare_class_and_priority,
    compare_ext_cpu,
    compare_running_time,
    ext_cpu_limit,
    ordered_by,
)
from kubetide.qos.state import PodState

EXT_CPU_TOTAL_USAGE = "ext_cpu_total_usage"


def uses_ext_cpu(state: PodState) -> bool:
    return ext_cpu_limit(state) > 0


ext_cpu_sorter = ordered_by(compare_ext_cpu, compare_class_and_priority, compare_running_time)

EXT_CPU_METRIC = usage_metric(
    EXT_CPU_TOTAL_USAGE,
    CPU,
    ext_cpu_sorter,
    "cpu usage of the pods on ext (elastic) cpu (millicores)",
    throttles_cpu=True,
    action_priority=4,  # below the node-wide cpu metrics: they win when the agent must pick one
    selects=uses_ext_cpu,
)


def register(registry: MetricRegistry = METRICS) -> Metric:
    """Register the metric (idempotent, so importing twice is harmless)."""
    if EXT_CPU_TOTAL_USAGE in registry:
        return registry[EXT_CPU_TOTAL_USAGE]
    return registry.register(EXT_CPU_METRIC)
