"""PodQOS (ensurance.crane.io/v1alpha1): which pods each AvoidanceAction may touch.

    kind: PodQOS
    metadata: {name: batch-pods}
    spec:
      allowedActions: [evict-batch, throttle-batch]   # AvoidanceAction names
      labelSelector: {matchLabels: {tier: batch}}
      scopeSelector:
        matchExpressions:
        - {scopeName: Namespace, operator: In, values: [batch, reports]}
        - {scopeName: Priority, operator: In, values: ["0-999", "5000"]}   # values or inclusive ranges
        - {scopeName: QOSClass, operator: NotIn, values: [Guaranteed]}

Every selector present must match (AND). A PodQOS with neither a label selector nor a scope
selector selects no pod, as in crane. A pod is a candidate for an action when some PodQOS that
selects it lists the action in allowedActions. Without any PodQOS, every pod the agent may touch
at all is a candidate for every action (`scope_refusal`).

The safety floor holds whatever a PodQOS says: pods at or above system-cluster-critical, static
(mirror) pods and DaemonSet pods are never candidates (the executor checks them first). The other
way round, a pod without a controller or annotated not to be disrupted is an eviction candidate
ONLY through a PodQOS that selects it and allows the eviction (protection.py).

Crane's Priority NotIn only honours its last value (a loop overwrites the result for each one);
here a pod matches NotIn when its priority is in none of the values and ranges. Fields the agent
does not use (resourceQOS, podQualityProbe) are ignored.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from kubetide.model import Pod
from kubetide.model.meta import parse_meta
from kubetide.model.reader import Reader
from kubetide.model.selectors import LabelSelector, parse_label_selector
from kubetide.qos.manifest import NOWHERE, Origin, check_api_version, origin_of, required_str

NAMESPACE_SCOPE = "Namespace"
PRIORITY_SCOPE = "Priority"
QOS_CLASS_SCOPE = "QOSClass"
SCOPES = (NAMESPACE_SCOPE, PRIORITY_SCOPE, QOS_CLASS_SCOPE)
SCOPE_OPERATORS = ("In", "NotIn")
QOS_CLASSES = ("BestEffort", "Burstable", "Guaranteed")

_PRIORITY = re.compile(r"^\s*(-?\d+)\s*(?:-\s*(-?\d+)\s*)?$")  # "1000" or "1000-3000" (also "-10-0")


@dataclass(frozen=True, slots=True)
class PriorityRange:
    low: int
    high: int

    def contains(self, priority: int) -> bool:
        return self.low <= priority <= self.high


@dataclass(frozen=True, slots=True)
class ScopeRequirement:
    """One scopeSelector expression: the pod's namespace, priority or QoS class In / NotIn values."""

    scope: str
    operator: str
    values: tuple[str, ...]
    priorities: tuple[PriorityRange, ...] = ()  # the values parsed, for the Priority scope

    def matches(self, pod: Pod) -> bool:
        if self.scope == PRIORITY_SCOPE:
            found = any(r.contains(pod.priority) for r in self.priorities)
        else:
            found = (pod.namespace if self.scope == NAMESPACE_SCOPE else pod.qos_class) in self.values
        return found if self.operator == "In" else not found


@dataclass(frozen=True, slots=True)
class PodQOS:
    name: str
    allowed_actions: tuple[str, ...]
    label_selector: LabelSelector | None = None  # None: not set
    scope: tuple[ScopeRequirement, ...] = ()
    origin: Origin = NOWHERE

    @property
    def selects_nothing(self) -> bool:
        return (self.label_selector is None or self.label_selector.empty) and not self.scope

    def selects(self, pod: Pod) -> bool:
        if self.selects_nothing:
            return False
        if self.label_selector is not None and not self.label_selector.matches(pod.labels):
            return False
        return all(requirement.matches(pod) for requirement in self.scope)


def scope_refusal(podqos: Sequence[PodQOS], pod: Pod, actions: Sequence[str]) -> str | None:
    """Why none of `actions` (AvoidanceAction names) may touch `pod`; None when one may. Without
    any PodQOS every action may touch every pod."""
    if not podqos:
        return None
    selecting = [q for q in podqos if q.selects(pod)]
    if not selecting:
        return "no PodQOS selects it"
    if any(action in q.allowed_actions for q in selecting for action in actions):
        return None
    names = ", ".join(q.name for q in selecting)
    return f"PodQOS {names} does not allow {' or '.join(actions)}"


# -- parsing ----------------------------------------------------------------------------------


def parse_priority(reader: Reader, key: str, text: str) -> PriorityRange:
    match = _PRIORITY.match(text)
    if match is None:
        raise reader.error(f'expected a priority or a range like "1000-3000", got "{text}"', key)
    low = int(match.group(1))
    high = int(match.group(2)) if match.group(2) is not None else low
    if high < low:
        raise reader.error(f'the range "{text}" ends below its start', key)
    return PriorityRange(low, high)


def parse_scope_requirement(reader: Reader) -> ScopeRequirement:
    scope = required_str(reader, "scopeName")
    if scope not in SCOPES:
        raise reader.error(f'unknown scopeName "{scope}" (expected one of {", ".join(SCOPES)})', "scopeName")
    operator = required_str(reader, "operator")
    if operator not in SCOPE_OPERATORS:
        raise reader.error(f'unknown operator "{operator}" (expected In or NotIn)', "operator")
    values = tuple(reader.str_list("values"))
    if not values:
        raise reader.error(f"operator {operator} needs at least one value", "values")
    priorities: tuple[PriorityRange, ...] = ()
    if scope == PRIORITY_SCOPE:
        priorities = tuple(parse_priority(reader, f"values[{i}]", v) for i, v in enumerate(values))
    if scope == QOS_CLASS_SCOPE:
        for index, value in enumerate(values):
            if value not in QOS_CLASSES:
                raise reader.error(
                    f'unknown QoS class "{value}" (expected one of {", ".join(QOS_CLASSES)})',
                    f"values[{index}]",
                )
    return ScopeRequirement(scope, operator, values, priorities)


def parse_podqos(reader: Reader) -> PodQOS:
    check_api_version(reader)
    meta = parse_meta(reader, "PodQOS", namespaced=False)
    spec = reader.child("spec")
    actions = tuple(spec.str_list("allowedActions"))
    label_selector = parse_label_selector(spec.child("labelSelector")) if spec.has("labelSelector") else None
    scope = tuple(parse_scope_requirement(r) for r in spec.child("scopeSelector").items("matchExpressions"))
    return PodQOS(meta.name, actions, label_selector, scope, origin_of(reader))
