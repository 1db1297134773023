"""PodDisruptionBudget, PriorityClass, Namespace and ConfigMap."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kubetide.model.meta import ObjectIdentity, ObjectMeta, parse_meta
from kubetide.model.reader import Reader
from kubetide.model.scaled import scaled_value
from kubetide.model.selectors import LabelSelector, optional_label_selector
from kubetide.model.validation import percent_problem

if TYPE_CHECKING:
    from kubetide.model.pod import Pod


@dataclass(frozen=True, slots=True)
class PodDisruptionBudget(ObjectIdentity):
    meta: ObjectMeta
    selector: LabelSelector | None  # None selects nothing; an empty selector selects every pod
    min_available: int | str | None = None
    max_unavailable: int | str | None = None
    unhealthy_pod_eviction_policy: str = "IfHealthyBudget"
    # status, as the disruption controller last computed it (None when the manifest has no status)
    disruptions_allowed: int | None = None
    current_healthy: int | None = None
    desired_healthy: int | None = None
    expected_pods: int | None = None

    def matches(self, pod: Pod) -> bool:
        return (
            self.selector is not None
            and pod.namespace == self.meta.namespace
            and self.selector.matches(pod.labels)
        )

    def desired_healthy_for(self, expected_pods: int) -> int:
        """How many healthy pods the budget requires when `expected_pods` are expected.

        Percentages round up for minAvailable and maxUnavailable alike, as the disruption
        controller does (GetScaledValueFromIntOrPercent with roundUp=true).
        """
        if self.max_unavailable is not None:
            return max(0, expected_pods - scaled_value(self.max_unavailable, expected_pods, round_up=True))
        if self.min_available is not None:
            return scaled_value(self.min_available, expected_pods, round_up=True)
        return 0


def parse_pdb(reader: Reader) -> PodDisruptionBudget:
    meta = parse_meta(reader, "PodDisruptionBudget", namespaced=True)
    spec = reader.child("spec")
    min_available = spec.int_or_percent("minAvailable")
    max_unavailable = spec.int_or_percent("maxUnavailable")
    for key, value in (("minAvailable", min_available), ("maxUnavailable", max_unavailable)):
        problem = None if value is None else percent_problem(value)
        if problem is not None:
            raise spec.error(problem, key)
    if min_available is not None and max_unavailable is not None:
        raise spec.error("minAvailable and maxUnavailable cannot both be set")
    policy = spec.str("unhealthyPodEvictionPolicy", default="IfHealthyBudget")
    if policy not in ("IfHealthyBudget", "AlwaysAllow"):
        raise spec.error(
            f'must be IfHealthyBudget or AlwaysAllow, got "{policy}"', "unhealthyPodEvictionPolicy"
        )
    status = reader.child("status")
    return PodDisruptionBudget(
        meta=meta,
        selector=optional_label_selector(spec, "selector"),
        min_available=min_available,
        max_unavailable=max_unavailable,
        unhealthy_pod_eviction_policy=policy,
        disruptions_allowed=status.int("disruptionsAllowed"),
        current_healthy=status.int("currentHealthy"),
        desired_healthy=status.int("desiredHealthy"),
        expected_pods=status.int("expectedPods"),
    )


@dataclass(frozen=True, slots=True)
class PriorityClass(ObjectIdentity):
    meta: ObjectMeta
    value: int
    global_default: bool = False
    preemption_policy: str = "PreemptLowerPriority"


def parse_priority_class(reader: Reader) -> PriorityClass:
    meta = parse_meta(reader, "PriorityClass", namespaced=False)
    value = reader.int("value", required=True)
    if not -(2**31) <= value <= 10**9 and not meta.name.startswith("system-"):
        raise reader.error(f"must be between -2147483648 and 1000000000, got {value}", "value")
    return PriorityClass(
        meta=meta,
        value=value,
        global_default=reader.bool("globalDefault"),
        preemption_policy=reader.str("preemptionPolicy", default="PreemptLowerPriority"),
    )


# Built into every cluster; pods may name them without a manifest.
SYSTEM_PRIORITY_CLASSES = {"system-cluster-critical": 2_000_000_000, "system-node-critical": 2_000_001_000}


@dataclass(frozen=True, slots=True)
class Namespace(ObjectIdentity):
    meta: ObjectMeta

    @property
    def labels(self) -> dict[str, str]:
        return self.meta.labels


def parse_namespace(reader: Reader) -> Namespace:
    meta = parse_meta(reader, "Namespace", namespaced=False)
    meta.labels.setdefault("kubernetes.io/metadata.name", meta.name)
    return Namespace(meta)


@dataclass(frozen=True, slots=True)
class ConfigMap:
    meta: ObjectMeta
    data: dict[str, str] = field(default_factory=dict)


def parse_configmap(reader: Reader) -> ConfigMap:
    return ConfigMap(parse_meta(reader, "ConfigMap", namespaced=True), reader.str_map("data"))
