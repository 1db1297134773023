"""How much a node may use before its QoS agent acts: the ceilings scale-down keeps under.

For every resource, the lowest watermark among the rules that evict or throttle (not Preview, not
disable-scheduling only) of the NodeQOS objects selecting the node, as an absolute amount: the
agent acts when usage is strictly above it. Rules on a metric that counts only some pods'
usage (`Metric.selects`, e.g. ext-cpu) are left out: a node's total usage says nothing about them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from kubetide.model import Node
from kubetide.qos.config import QosConfig
from kubetide.qos.state import NodeState


@dataclass(frozen=True, slots=True)
class Ceiling:
    resource: str
    amount: int  # millicores or bytes; usage above it makes the agent act
    source: str  # the rule, for people


def node_ceilings(config: QosConfig, node: Node) -> list[Ceiling]:
    """The node's lowest evict-or-throttle watermark per resource, in the order first seen."""
    state = NodeState(node, ())
    lowest: dict[str, Ceiling] = {}
    for qos in config.for_node(node):
        for rule in qos.rules:
            metric = config.registry.get(rule.metric)
            action = config.actions.get(rule.action_name)
            if metric is None or action is None or rule.preview or metric.selects is not None:
                continue
            if not action.kinds(metric):
                continue  # disable-scheduling: keeps new pods off, evicts nothing
            amount = math.floor(metric.to_absolute(rule.watermark, state))
            if metric.percent and not state.capacity(metric.resource):
                continue
            unit = "%" if metric.percent else ""
            source = f"NodeQOS {qos.name} rule {rule.name}: {metric.name} above {rule.raw_value}{unit}"
            found = lowest.get(metric.resource)
            if found is None or amount < found.amount:
                lowest[metric.resource] = Ceiling(metric.resource, amount, source)
    return list(lowest.values())
