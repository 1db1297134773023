"""PodDisruptionBudgets, Namespaces, PriorityClasses and ConfigMaps from the wire schema
(model/wire.py), as pods and nodes are (model/pod_typed.py): decoded in C, built into the model's
values here. Anything the API server would not have written makes the decode return None, and the
loader reads the object through the Reader (parse_pdb, parse_namespace, parse_priority_class,
parse_configmap), which alone words errors. Already-parsed objects (YAML, JSON read whole) are
converted into the same Structs (`parse_*_typed`); model/typed_kinds.py makes both entry points."""

from __future__ import annotations

from kubetide.errors import ManifestError
from kubetide.model.policy import (
    ConfigMap,
    Namespace,
    PodDisruptionBudget,
    PriorityClass,
    parse_configmap,
    parse_namespace,
    parse_pdb,
    parse_priority_class,
)
from kubetide.model.reader import INT64_MAX, INT64_MIN, Reader
from kubetide.model.selectors import optional_label_selector
from kubetide.model.typed import Declined, typed_meta
from kubetide.model.typed_kinds import wire_decoder, wire_parser
from kubetide.model.validation import percent_problem
from kubetide.model.wire import (
    NamespaceWire,
    PodDisruptionBudgetSpecWire,
    PodDisruptionBudgetWire,
    PriorityClassWire,
)
from kubetide.model.wire_workloads import ConfigMapWire

_NO_SPEC = PodDisruptionBudgetSpecWire()
_EVICTION_POLICIES = ("IfHealthyBudget", "AlwaysAllow")
# parse_priority_class's range for a value (system- classes may go beyond it)
_USER_PRIORITY_MIN, _USER_PRIORITY_MAX = -(2**31), 10**9


def _namespace(wire: NamespaceWire) -> Namespace | None:
    try:
        meta = typed_meta(wire.metadata, "Namespace", namespaced=False)
    except Declined:
        return None
    meta.labels.setdefault("kubernetes.io/metadata.name", meta.name)
    return Namespace(meta)


def _priority_class(wire: PriorityClassWire) -> PriorityClass | None:
    try:
        meta = typed_meta(wire.metadata, "PriorityClass", namespaced=False)
    except Declined:
        return None
    value = wire.value
    if not INT64_MIN <= value <= INT64_MAX:
        return None
    if not _USER_PRIORITY_MIN <= value <= _USER_PRIORITY_MAX and not meta.name.startswith("system-"):
        return None
    policy = "PreemptLowerPriority" if wire.preemption_policy is None else wire.preemption_policy
    return PriorityClass(
        meta=meta, value=value, global_default=bool(wire.global_default), preemption_policy=policy
    )


def _pdb(wire: PodDisruptionBudgetWire) -> PodDisruptionBudget | None:
    try:
        meta = typed_meta(wire.metadata, "PodDisruptionBudget", namespaced=True)
    except Declined:
        return None
    spec = wire.spec or _NO_SPEC
    # The budget and selector (a few fields) through the Reader's own readers, so their lenient
    # forms ("30%", "3") mean the same; any error sends the whole object to parse_pdb to be worded.
    given = {
        "minAvailable": spec.min_available,
        "maxUnavailable": spec.max_unavailable,
        "selector": spec.selector,
    }
    spec_reader = Reader({key: value for key, value in given.items() if value is not None}, "", "", "spec")
    try:
        min_available = spec_reader.int_or_percent("minAvailable")
        max_unavailable = spec_reader.int_or_percent("maxUnavailable")
        selector = optional_label_selector(spec_reader, "selector")
    except ManifestError:
        return None
    for value in (min_available, max_unavailable):
        if value is not None and percent_problem(value) is not None:
            return None
    if min_available is not None and max_unavailable is not None:
        return None
    policy = (
        "IfHealthyBudget"
        if spec.unhealthy_pod_eviction_policy is None
        else spec.unhealthy_pod_eviction_policy
    )
    if policy not in _EVICTION_POLICIES:
        return None
    status = wire.status
    counts = (
        (status.disruptions_allowed, status.current_healthy, status.desired_healthy, status.expected_pods)
        if status is not None
        else (None, None, None, None)
    )
    if any(count is not None and not INT64_MIN <= count <= INT64_MAX for count in counts):
        return None
    return PodDisruptionBudget(
        meta=meta,
        selector=selector,
        min_available=min_available,
        max_unavailable=max_unavailable,
        unhealthy_pod_eviction_policy=policy,
        disruptions_allowed=counts[0],
        current_healthy=counts[1],
        desired_healthy=counts[2],
        expected_pods=counts[3],
    )


def _configmap(wire: ConfigMapWire) -> ConfigMap:
    return ConfigMap(typed_meta(wire.metadata, "ConfigMap", namespaced=True), dict(wire.data or {}))


decode_namespace = wire_decoder(NamespaceWire, _namespace, "Namespace")
decode_priority_class = wire_decoder(PriorityClassWire, _priority_class, "PriorityClass")
decode_pdb = wire_decoder(PodDisruptionBudgetWire, _pdb, "PodDisruptionBudget")
parse_namespace_typed = wire_parser(NamespaceWire, _namespace, parse_namespace)
parse_priority_class_typed = wire_parser(PriorityClassWire, _priority_class, parse_priority_class)
parse_pdb_typed = wire_parser(PodDisruptionBudgetWire, _pdb, parse_pdb)
decode_configmap = wire_decoder(ConfigMapWire, _configmap, "ConfigMap")
parse_configmap_typed = wire_parser(ConfigMapWire, _configmap, parse_configmap)
