"""NodeQOS and AvoidanceAction, in crane's own format (ensurance.crane.io/v1alpha1).

    kind: NodeQOS                       kind: AvoidanceAction
    spec:                               spec:
      selector: {matchLabels: ...}        coolDownSeconds: 300
      rules:                              throttle:
      - name: cpu-high                      cpuThrottle: {minCPURatio: 10, stepCPURatio: 10}
        actionName: evict-low             eviction:
        avoidanceThreshold: 2               terminationGracePeriodSeconds: 30
        restoreThreshold: 2
        strategy: None | Preview
        metricRule: {name: cpu_total_utilization, value: 80}

`objectiveEnsurances` is accepted as the older name of `rules`. Fields crane has and the agent does
not use (nodeQualityProbe, elasticCpu, ...) are ignored. An action with neither throttle nor
eviction is crane's disable-scheduling action: while one of its rules is in force the node carries
a NoSchedule taint, lifted once the rule has been quiet for restoreThreshold samples and the
action's coolDownSeconds have passed since the node last needed it.

Each object parses on its own (the loader calls the parsers); references between them (a rule's
actionName, which actions a metric supports) are checked when a `QosConfig` is built, with the
same file/object/field precision.

A rule naming a metric the registry does not know is skipped with a warning (`QosConfig.skipped`,
`QosConfig.warnings`) and the other rules apply: crane builds its gaps only from registered
metrics, so one mistyped metric name must not disable every rule of the node (rejecting the whole
set did: the live agent kept its previous rules, and after a fresh start enforced none).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction

from kubetide.model import Manifests, Node
from kubetide.model.meta import parse_meta
from kubetide.model.reader import Reader
from kubetide.model.selectors import LabelSelector, parse_label_selector
from kubetide.qos.actions import ActionContext
from kubetide.qos.manifest import NOWHERE, Origin, check_api_version, int_or, origin_of, required_str, str_or
from kubetide.qos.metrics import METRICS, Metric, MetricRegistry
from kubetide.qos.podqos import PodQOS

STRATEGIES = ("None", "Preview")
DEFAULT_COOL_DOWN = 300
DEFAULT_STEP_CPU_RATIO = 10
DEFAULT_MIN_CPU_RATIO = 0

EVICT = "Evict"
THROTTLE_DOWN = "ThrottleDown"
THROTTLE_UP = "ThrottleUp"
ACTION_KINDS = (EVICT, THROTTLE_DOWN, THROTTLE_UP)


@dataclass(frozen=True, slots=True)
class Rule:
    name: str
    action_name: str
    metric: str
    raw_value: object
    watermark: Fraction  # percent for percent metrics, else absolute units (millicores / bytes)
    avoidance_threshold: int = 1
    restore_threshold: int = 1
    strategy: str = "None"
    origin: Origin = NOWHERE

    @property
    def preview(self) -> bool:
        return self.strategy == "Preview"


@dataclass(frozen=True, slots=True)
class SkippedRule:
    """A NodeQOS rule left out of the configuration, and the warning that says why."""

    nodeqos: str
    rule: str
    metric: str
    warning: str


@dataclass(frozen=True, slots=True)
class NodeQOS:
    name: str
    rules: tuple[Rule, ...]
    selector: LabelSelector | None = None  # None: every node
    origin: Origin = NOWHERE

    def matches(self, node: Node) -> bool:
        return self.selector is None or self.selector.matches(node.labels)


@dataclass(frozen=True, slots=True)
class CpuThrottle:
    min_cpu_ratio: int = DEFAULT_MIN_CPU_RATIO
    step_cpu_ratio: int = DEFAULT_STEP_CPU_RATIO


@dataclass(frozen=True, slots=True)
class AvoidanceAction:
    name: str
    cool_down_seconds: int = DEFAULT_COOL_DOWN
    throttle: CpuThrottle | None = None
    evicts: bool = False
    grace_seconds: int | None = None  # eviction.terminationGracePeriodSeconds; None = the pod's
    origin: Origin = NOWHERE

    @property
    def throttles(self) -> bool:
        return self.throttle is not None

    @property
    def disables_scheduling(self) -> bool:
        """Crane's disable-scheduling action: neither throttle nor eviction."""
        return not self.throttles and not self.evicts

    def kinds(self, metric: Metric) -> tuple[str, ...]:
        """The action kinds this action takes when a rule on `metric` triggers."""
        kinds = []
        if self.evicts and metric.evictable:
            kinds.append(EVICT)
        if self.throttles and metric.throttleable:
            kinds.append(THROTTLE_DOWN)
        return tuple(kinds)

    def context(self, node_cpu: int) -> ActionContext:
        throttle = self.throttle or CpuThrottle()
        return ActionContext(
            min_cpu_ratio=throttle.min_cpu_ratio,
            step_cpu_ratio=throttle.step_cpu_ratio,
            grace_seconds=self.grace_seconds,
            node_cpu=node_cpu,
        )


# -- parsing ----------------------------------------------------------------------------------


def _threshold(reader: Reader, key: str) -> int:
    value = int_or(reader, key, 1)
    if value < 0:
        raise reader.error(f"must be at least 1, got {value}", key)
    return value or 1  # 0 is Go's "unset": crane defaults it to 1


def _ratio(reader: Reader, key: str, default: int) -> int:
    value = int_or(reader, key, default)
    if not 0 <= value <= 100:
        raise reader.error(f"must be a percentage between 0 and 100, got {value}", key)
    return value


def parse_metric_rule(reader: Reader, registry: MetricRegistry = METRICS) -> tuple[str, object, Fraction]:
    """(metric name, raw value, watermark). The value of a metric the registry does not know
    cannot be read (a percentage? a quantity?): its watermark is 0 until `QosConfig.build`, which
    skips the rule with a warning, or reads it with the registry it is given."""
    name = required_str(reader, "name")
    raw = reader.raw("value")
    if raw is None:
        raise reader.error("required field is missing", "value")
    metric = registry.get(name)
    if metric is None:
        return name, raw, Fraction(0)
    try:
        watermark = metric.parse_watermark(raw)
    except ValueError as exc:
        raise reader.error(str(exc), "value") from None
    return name, raw, watermark


def parse_rule(reader: Reader, registry: MetricRegistry = METRICS) -> Rule:
    name = required_str(reader, "name")
    action_name = required_str(reader, "actionName")
    strategy = str_or(reader, "strategy", "None")
    if strategy not in STRATEGIES:
        raise reader.error(f'must be None or Preview, got "{strategy}"', "strategy")
    if not reader.has("metricRule"):
        raise reader.error("required field is missing", "metricRule")
    metric, raw, watermark = parse_metric_rule(reader.child("metricRule"), registry)
    return Rule(
        name=name,
        action_name=action_name,
        metric=metric,
        raw_value=raw,
        watermark=watermark,
        avoidance_threshold=_threshold(reader, "avoidanceThreshold"),
        restore_threshold=_threshold(reader, "restoreThreshold"),
        strategy=strategy,
        origin=origin_of(reader),
    )


def parse_nodeqos(reader: Reader) -> NodeQOS:
    check_api_version(reader)
    meta = parse_meta(reader, "NodeQOS", namespaced=False)
    spec = reader.child("spec")
    if spec.has("rules") and spec.has("objectiveEnsurances"):
        raise spec.error("set rules or objectiveEnsurances (its older name), not both", "objectiveEnsurances")
    key = "objectiveEnsurances" if spec.has("objectiveEnsurances") else "rules"
    rules: list[Rule] = []
    for item in spec.items(key):
        rule = parse_rule(item)
        if any(r.name == rule.name for r in rules):
            raise item.error(f'duplicate rule name "{rule.name}"', "name")
        rules.append(rule)
    selector = parse_label_selector(spec.child("selector")) if spec.has("selector") else None
    return NodeQOS(meta.name, tuple(rules), selector, origin_of(reader))


def parse_avoidance_action(reader: Reader) -> AvoidanceAction:
    check_api_version(reader)
    meta = parse_meta(reader, "AvoidanceAction", namespaced=False)
    spec = reader.child("spec")
    cool_down = int_or(spec, "coolDownSeconds", DEFAULT_COOL_DOWN)
    if cool_down < 0:
        raise spec.error(f"must be non-negative, got {cool_down}", "coolDownSeconds")
    throttle = None
    if spec.raw("throttle") is not None:
        cpu = spec.child("throttle").child("cpuThrottle")
        throttle = CpuThrottle(
            min_cpu_ratio=_ratio(cpu, "minCPURatio", DEFAULT_MIN_CPU_RATIO),
            step_cpu_ratio=_ratio(cpu, "stepCPURatio", DEFAULT_STEP_CPU_RATIO),
        )
    evicts = spec.raw("eviction") is not None
    grace = None
    if evicts:
        eviction = spec.child("eviction")
        grace = eviction.int("terminationGracePeriodSeconds")
        if grace is not None and grace < 0:
            raise eviction.error(f"must be non-negative, got {grace}", "terminationGracePeriodSeconds")
    return AvoidanceAction(meta.name, cool_down, throttle, evicts, grace, origin_of(reader))


# -- the checked configuration ---------------------------------------------------------------


@dataclass
class QosConfig:
    """NodeQOS, AvoidanceAction and PodQOS objects with every reference resolved and checked."""

    nodeqos: tuple[NodeQOS, ...] = ()
    actions: Mapping[str, AvoidanceAction] = field(default_factory=dict)
    registry: MetricRegistry = METRICS
    warnings: list[str] = field(default_factory=list)
    podqos: tuple[PodQOS, ...] = ()  # none: every action may touch every candidate
    skipped: tuple[SkippedRule, ...] = ()  # rules on metrics the registry does not know

    @classmethod
    def build(
        cls,
        nodeqos: Iterable[NodeQOS],
        actions: Iterable[AvoidanceAction],
        registry: MetricRegistry = METRICS,
        podqos: Iterable[PodQOS] = (),
    ) -> QosConfig:
        by_name: dict[str, AvoidanceAction] = {}
        for action in actions:
            if action.name in by_name:
                raise action.origin.error(f'duplicate AvoidanceAction "{action.name}"', "metadata.name")
            by_name[action.name] = action
        seen: set[str] = set()
        checked: list[NodeQOS] = []
        warnings: list[str] = []
        skipped: list[SkippedRule] = []
        for qos in nodeqos:
            if qos.name in seen:
                raise qos.origin.error(f'duplicate NodeQOS "{qos.name}"', "metadata.name")
            seen.add(qos.name)
            rules = []
            for rule in qos.rules:
                if rule.metric not in registry:
                    skipped.append(_skip(qos, rule, registry))
                    warnings.append(skipped[-1].warning)
                    continue
                rules.append(_check_rule(rule, by_name, registry))
            checked.append(NodeQOS(qos.name, tuple(rules), qos.selector, qos.origin))
        scopes = _check_podqos(podqos, by_name, warnings)
        return cls(tuple(checked), by_name, registry, warnings, scopes, tuple(skipped))

    @classmethod
    def from_manifests(cls, manifests: Manifests, registry: MetricRegistry = METRICS) -> QosConfig:
        return cls.build(
            manifests.other.get("NodeQOS", ()),
            manifests.other.get("AvoidanceAction", ()),
            registry,
            manifests.other.get("PodQOS", ()),
        )

    def for_node(self, node: Node) -> list[NodeQOS]:
        return [q for q in self.nodeqos if q.matches(node)]


def _check_podqos(
    podqos: Iterable[PodQOS], actions: Mapping[str, AvoidanceAction], warnings: list[str]
) -> tuple[PodQOS, ...]:
    checked: dict[str, PodQOS] = {}
    for qos in podqos:
        if qos.name in checked:
            raise qos.origin.error(f'duplicate PodQOS "{qos.name}"', "metadata.name")
        checked[qos.name] = qos
        for index, name in enumerate(qos.allowed_actions):
            if name not in actions:
                known = ", ".join(sorted(actions)) or "none loaded"
                raise qos.origin.error(
                    f'unknown AvoidanceAction "{name}" (known: {known})', f"spec.allowedActions[{index}]"
                )
        if qos.selects_nothing:
            warnings.append(
                f'{qos.origin.source}: PodQOS "{qos.name}" has neither a labelSelector nor a '
                "scopeSelector: it selects no pod"
            )
    return tuple(checked.values())


def _skip(qos: NodeQOS, rule: Rule, registry: MetricRegistry) -> SkippedRule:
    problem = rule.origin.error(
        f'unknown metric "{rule.metric}" (known: {", ".join(registry.names())}): '
        f'rule "{rule.name}" skipped, the other rules apply',
        "metricRule.name",
    )
    return SkippedRule(qos.name, rule.name, rule.metric, str(problem))


def _check_rule(rule: Rule, actions: Mapping[str, AvoidanceAction], registry: MetricRegistry) -> Rule:
    metric = registry[rule.metric]
    try:
        watermark = metric.parse_watermark(rule.raw_value)
    except ValueError as exc:
        raise rule.origin.error(str(exc), "metricRule.value") from None
    action = actions.get(rule.action_name)
    if action is None:
        known = ", ".join(sorted(actions)) or "none loaded"
        raise rule.origin.error(
            f'unknown AvoidanceAction "{rule.action_name}" (known: {known})', "actionName"
        )
    if not action.disables_scheduling and not action.kinds(metric):
        can = [w for w, ok in (("throttled", metric.throttleable), ("evicted", metric.evictable)) if ok]
        raise rule.origin.error(
            f'AvoidanceAction "{action.name}" only {"throttles" if action.throttles else "evicts"}, but '
            f"{metric.name} can only be {' or '.join(can) or 'watched'}",
            "actionName",
        )
    if watermark != rule.watermark:
        return Rule(
            rule.name,
            rule.action_name,
            rule.metric,
            rule.raw_value,
            watermark,
            rule.avoidance_threshold,
            rule.restore_threshold,
            rule.strategy,
            rule.origin,
        )
    return rule
