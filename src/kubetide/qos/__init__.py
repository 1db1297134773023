"""Node QoS agent: when a node's real usage crosses a watermark, throttle or evict just enough
low-priority pods to get back under it (crane's "pod sorting and precise execution" design).

    config.py    NodeQOS / AvoidanceAction (ensurance.crane.io/v1alpha1), checked into a QosConfig
    podqos.py    PodQOS: which pods each AvoidanceAction may touch
    manifest.py  what every crane object shares (API group, where it was written)
    state.py     NodeState / PodState (what the agent sees), PodMetrics / NodeMetrics parsing
    wire.py      the wire schema of the kinds above (msgspec Structs); config_typed.py and
                 state_typed.py build them from it, leaving anything odd to the parsers
    metrics.py   the metric registry and the four built-in metrics; extcpu.py a custom one
    sorters.py   general, cpu and memory pod orders, built from comparison chains
    actions.py   what throttling, restoring and evicting one pod would do (pure)
    analyzer.py  rules -> watermarks, consecutive-sample thresholds, coolDown
    executor.py  gaps and precise execution through the QosActuator port
    agent.py     QosAgent.step: one collect interval on one node

Importing the package registers the kinds NodeQOS, AvoidanceAction, PodQOS, PodMetrics and
NodeMetrics (and their *List forms) with the model loader.
"""

from kubetide.model import register_kind
from kubetide.qos import extcpu
from kubetide.qos.actions import ActionContext, Effect, evict_pod, restore_cpu, throttle_cpu
from kubetide.qos.agent import AgentOptions, QosAgent, RoundResult
from kubetide.qos.analyzer import Analysis, Analyzer, Watermark
from kubetide.qos.config import (
    ACTION_KINDS,
    EVICT,
    THROTTLE_DOWN,
    THROTTLE_UP,
    AvoidanceAction,
    CpuThrottle,
    NodeQOS,
    QosConfig,
    Rule,
)
from kubetide.qos.config_typed import parse_avoidance_action_typed, parse_nodeqos_typed, parse_podqos_typed
from kubetide.qos.executor import (
    Decision,
    Execution,
    Executor,
    QosActuator,
    compute_gaps,
    over_evictions,
)
from kubetide.qos.metrics import METRICS, Metric, MetricRegistry, register_metric, usage_metric
from kubetide.qos.podqos import PodQOS, scope_refusal
from kubetide.qos.sorters import (
    compare_class_and_priority,
    compare_cpu_usage,
    compare_ext_cpu,
    compare_memory_usage,
    compare_priority,
    compare_qos_class,
    compare_running_time,
    cpu_sorter,
    general_sorter,
    memory_sorter,
    ordered_by,
)
from kubetide.qos.state import (
    CRITICAL_PRIORITY,
    NodeMetrics,
    NodeState,
    PodMetrics,
    PodState,
    parse_empty_list,
)
from kubetide.qos.state_typed import (
    decode_node_metrics,
    decode_pod_metrics,
    parse_node_metrics_typed,
    parse_pod_metrics_typed,
)

register_kind("NodeQOS", parse_nodeqos_typed)
register_kind("AvoidanceAction", parse_avoidance_action_typed)
register_kind("PodQOS", parse_podqos_typed)
register_kind("PodMetrics", parse_pod_metrics_typed, decode_pod_metrics)
register_kind("NodeMetrics", parse_node_metrics_typed, decode_node_metrics)
register_kind("PodMetricsList", parse_empty_list)
register_kind("NodeMetricsList", parse_empty_list)
extcpu.register()

__all__ = [
    "ACTION_KINDS",
    "CRITICAL_PRIORITY",
    "EVICT",
    "METRICS",
    "THROTTLE_DOWN",
    "THROTTLE_UP",
    "ActionContext",
    "AgentOptions",
    "Analysis",
    "Analyzer",
    "AvoidanceAction",
    "CpuThrottle",
    "Decision",
    "Effect",
    "Execution",
    "Executor",
    "Metric",
    "MetricRegistry",
    "NodeMetrics",
    "NodeQOS",
    "NodeState",
    "PodMetrics",
    "PodQOS",
    "PodState",
    "QosActuator",
    "QosAgent",
    "QosConfig",
    "RoundResult",
    "Rule",
    "Watermark",
    "compare_class_and_priority",
    "compare_cpu_usage",
    "compare_ext_cpu",
    "compare_memory_usage",
    "compare_priority",
    "compare_qos_class",
    "compare_running_time",
    "compute_gaps",
    "cpu_sorter",
    "evict_pod",
    "general_sorter",
    "memory_sorter",
    "ordered_by",
    "over_evictions",
    "register_metric",
    "restore_cpu",
    "scope_refusal",
    "throttle_cpu",
    "usage_metric",
]
