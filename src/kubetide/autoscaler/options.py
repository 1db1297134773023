"""Every autoscaler flag, with the Cluster Autoscaler's names, defaults and value syntax.

Users of the Cluster Autoscaler should be able to paste their flags into a scenario
(`spec.autoscaler`, as a `flag: value` map or as the container's `args:` list) or `kubetide plan
--set`. The one deliberate difference: max-drain-parallelism defaults to 10, the parallel-drain
design's intent, where CA ships 1.

Every CA flag is classified in ca_flags.py. Those about where and how the process runs
(logging, the API connection, leader election, the cloud provider and its node-group discovery,
metrics) change no decision: a caller that passes `ignored=` (the simulator) gets their names
there, any other caller a warning each, so a pasted `args:` list and `--set` both work as they
are. Approximated flags are accepted with a warning saying what differs; refused ones are errors
unless given CA's default; any other unknown flag is an error with a did-you-mean.
"""

from __future__ import annotations

import contextlib
import dataclasses
import difflib
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kubetide.autoscaler.ca_flags import (
    BOOL,
    CA_FLAGS,
    CA_VERSION,
    DURATION,
    FLOAT,
    INT,
    MULTI,
    CaFlag,
    Treatment,
)
from kubetide.durations import format_duration, parse_duration
from kubetide.errors import ManifestError

EXPANDERS = ("random", "most-pods", "least-nodes", "least-waste", "price", "priority", "grpc")
# CA expanders kubetide knows by name but cannot run: naming one is an error, never a silent no-op.
UNSUPPORTED_EXPANDERS: dict[str, str] = {}
# CA's deprecated flag names -> the flag they set. As in CA, the alias applies only when the flag it
# stands for is not given too.
DEPRECATED_ALIASES = {"max-empty-bulk-delete": "max-scale-down-parallelism"}
# Taints CA treats specially by prefix (utils/taints): a startup taint (ignore-taint is its
# deprecated spelling) makes a Ready node count as not started yet; a status taint only describes
# the node's state. Both are left out of node group templates.
STARTUP_TAINT_PREFIXES = (
    "ignore-taint.cluster-autoscaler.kubernetes.io/",
    "startup-taint.cluster-autoscaler.kubernetes.io/",
)
STATUS_TAINT_PREFIX = "status-taint.cluster-autoscaler.kubernetes.io/"
# The autoscaler a scenario runs (the `policy` flag); the first is the default.
POLICIES = ("kubetide", "cluster-autoscaler", "karpenter")
# What `policy: cluster-autoscaler` changes: CA's own defaults where kubetide's differ (drain
# parallelism 1, a PDB-blocked node sent back to the non-candidates, no surge before evict, no
# replacement onto cheaper groups), each
# unless given beside the policy.
CA_POLICY_DEFAULTS: dict[str, Any] = {
    "max_drain_parallelism": 1,
    "scale_down_budget_wait_keeps_unneeded_time": False,
    "surge_before_evict": False,
    "consolidate_onto_cheaper_groups": False,
}
CONSOLIDATION_POLICIES = ("WhenEmptyOrUnderutilized", "WhenEmpty", "Balanced")
# The status ConfigMap's name unless --status-config-map-name says otherwise (CA's default), in the
# namespace of --namespace (kube-system).
STATUS_CONFIG_MAP_NAME = "cluster-autoscaler-status"
# The first item of a pasted `command:` (the binary), skipped in an args list.
_COMMAND_NAMES = ("cluster-autoscaler", "./cluster-autoscaler", "/cluster-autoscaler")


@dataclass(frozen=True, slots=True)
class ResourceRange:
    """A cluster-wide min:max limit (cores-total, memory-total). max 0 means no limit."""

    min: int
    max: int


@dataclass(frozen=True)
class AutoscalerOptions:
    # Loop and cluster-wide limits
    scan_interval: float = 10.0
    max_nodes_total: int = 0
    cores_total: ResourceRange = ResourceRange(0, 320000)
    memory_total: ResourceRange = ResourceRange(0, 6400000)  # GiB
    max_node_provision_time: float = 900.0
    max_node_startup_time: float = 900.0
    max_total_unready_percentage: float = 45.0
    ok_total_unready_count: int = 3
    initial_node_group_backoff_duration: float = 300.0
    max_node_group_backoff_duration: float = 1800.0
    node_group_backoff_reset_timeout: float = 10800.0
    # Scale-up
    expander: tuple[str, ...] = ("least-waste",)
    new_pod_scale_up_delay: float = 0.0
    expendable_pods_priority_cutoff: int = -10
    max_nodes_per_scaleup: int = 1000
    max_nodegroup_binpacking_duration: float = 10.0
    max_binpacking_time: float = 300.0
    balance_similar_node_groups: bool = False
    # Similar groups: labels left out of the comparison besides the zone's and the group's own;
    # balancing-label, when given, compares these labels only (CA's label comparator)
    balancing_ignore_label: tuple[str, ...] = ()
    balancing_label: tuple[str, ...] = ()
    # how far apart two similar groups' allocatable cpu and memory may be (of the larger)
    max_allocatable_difference_ratio: float = 0.05
    enforce_node_group_min_size: bool = False
    scale_up_from_zero: bool = True
    # The grpc expander's service (host:port) and the CA certificate to trust for it (PEM)
    grpc_expander_url: str = ""
    grpc_expander_cert: str = ""
    # Scale-down
    scale_down_enabled: bool = True
    scale_down_utilization_threshold: float = 0.5
    scale_down_gpu_utilization_threshold: float = 0.5
    scale_down_unneeded_time: float = 600.0
    scale_down_unready_time: float = 1200.0
    scale_down_unready_enabled: bool = True
    scale_down_delay_after_add: float = 600.0
    scale_down_delay_after_delete: float = 0.0
    scale_down_delay_after_failure: float = 180.0
    scale_down_simulation_timeout: float = 30.0
    unremovable_node_recheck_timeout: float = 300.0
    max_scale_down_parallelism: int = 10
    max_drain_parallelism: int = 10  # CA: 1. The parallel-drain design intends more.
    max_graceful_termination_sec: int = 600
    max_pod_eviction_time: float = 120.0
    node_delete_delay_after_taint: float = 5.0
    node_deletion_delay_timeout: float = 120.0
    # CA batches the deletions of one node group for this long (0: each goes at once)
    node_deletion_batcher_interval: float = 0.0
    # The legacy scale-down's candidate pool (non-empty count, max(ceil(nodes x ratio), min-count)):
    # accepted and checked, read by no decision, as in CA's parallel-drain planner (1.31+: read
    # nowhere). What bounds the search is CA's unneeded-nodes limit (scaledown/planning/limit.py).
    scale_down_non_empty_candidates_count: int = 30
    scale_down_candidates_pool_ratio: float = 0.1
    scale_down_candidates_pool_min_count: int = 50
    skip_nodes_with_system_pods: bool = True
    # CA's own spelling. A kube-system pod without a PDB blocks its node until strictly older.
    blocking_system_pod_distruption_timeout: float = 3600.0
    skip_nodes_with_local_storage: bool = True
    skip_nodes_with_custom_controller_pods: bool = True
    min_replica_count: int = 0
    ignore_daemonsets_utilization: bool = False
    ignore_mirror_pods_utilization: bool = False
    daemonset_eviction_for_empty_nodes: bool = False
    daemonset_eviction_for_occupied_nodes: bool = True
    max_bulk_soft_taint_count: int = 10
    max_bulk_soft_taint_time: float = 3.0
    # kubetide's own (the parallel-drain design's recent_evictions list)
    recent_evictions_ttl: float = 300.0
    # kubetide's own: with a usage source, scale-down keeps destinations under the node QoS
    # agents' watermarks, counting each workload's usage peak over the window
    scale_down_respect_qos_watermarks: bool = True
    scale_down_usage_window: float = 3600.0
    # kubetide's own: an unneeded node held back only by PodDisruptionBudget budget that other
    # drains use for now keeps its unneeded time; false treats it as CA does (non-candidate for
    # unremovable-node-recheck-timeout, timer restarted)
    scale_down_budget_wait_keeps_unneeded_time: bool = True
    # kubetide's own: a pod a budget pins for good leaves by its Deployment's rollout (replacement
    # first) when the Deployment allows a surge (autoscaler/scaledown/planning/surge.py)
    surge_before_evict: bool = False
    # Not a flag: whether kubetide's credentials may restart Deployments (patch deployments.apps,
    # which deploy/components/surge-before-evict grants). `kubetide run` asks at start; without
    # it no Deployment is surged, whether the flag or its annotation asks (the flag then stops
    # the process at start instead).
    may_restart_deployments: bool = dataclasses.field(default=True, metadata={"flag": False})
    # kubetide's own: unremovable nodes carry kubetide.io/scale-down-blocker, the reason and what
    # would unblock them in one line (autoscaler/scaledown/explanation/unblock_search.py; a few planner runs a node)
    annotate_scale_down_blockers: bool = False
    # kubetide's own: nodes whose pods fit nowhere else may be replaced by one cheaper node of
    # another group when the saving clears Karpenter's Balanced score (autoscaler/consolidation.py;
    # scaledown/planning/replacement.py): the replacement is launched, and the nodes drained once
    # it is Ready
    consolidate_onto_cheaper_groups: bool = True
    # kubetide's own, within the above: nodes above scale-down-utilization-threshold whose
    # utilization stayed the same for scale-down-unneeded-time are removed or replaced too, as
    # Karpenter consolidates without a threshold; false keeps the threshold's word for every node
    consolidate_busy_nodes: bool = True
    # Where the status ConfigMap lives, and so where cluster-wide events go (CA's --namespace and
    # --status-config-map-name; `kubetide run` also keeps its lease in this namespace)
    namespace: str = "kube-system"
    status_config_map_name: str = STATUS_CONFIG_MAP_NAME
    # Taint keys, besides CA's prefixes: startup taints (ignore-taint: CA's deprecated spelling of
    # the same), which keep a Ready node "not started" while they last, and status taints; both
    # are left out of templates.
    startup_taint: tuple[str, ...] = ()
    startup_taint_prefix: tuple[str, ...] = ()
    ignore_taint: tuple[str, ...] = ()
    status_taint: tuple[str, ...] = ()
    # kubetide's own: which autoscaler decides (POLICIES). `kubetide` is kubetide's own scale-up
    # and scale-down; `cluster-autoscaler` the same code held to CA's behaviour (CA_POLICY_DEFAULTS
    # for every flag not given beside it); `karpenter` Karpenter's provisioning and disruption
    # (autoscaler/karpenter/), set up by the karpenter-* flags below.
    policy: str = "kubetide"
    # Karpenter's NodePool disruption settings, for policy karpenter (model/nodepool.py)
    karpenter_consolidation_policy: str = "WhenEmptyOrUnderutilized"
    karpenter_consolidate_after: float = 0.0
    # spec.disruption.budgets: `NODES[:REASON+REASON][@CRON/DURATION]` entries joined by `;`
    karpenter_budgets: str = "10%"
    # the NodeClaim's terminationGracePeriod: a drain longer than this deletes the node anyway
    # (0: none, the drain waits for its pods however long)
    karpenter_termination_grace_period: float = 0.0
    # Karpenter's SpotToSpotConsolidation feature gate (off, as Karpenter's default): a spot node
    # may be replaced by a cheaper spot node (autoscaler/karpenter/nodepools.py)
    karpenter_spot_to_spot_consolidation: bool = False

    def with_values(self, **changes: Any) -> AutoscalerOptions:
        return dataclasses.replace(self, **changes)

    def is_startup_taint(self, key: str) -> bool:
        return (
            key in self.startup_taint
            or key in self.ignore_taint
            or key.startswith(STARTUP_TAINT_PREFIXES)
            or key.startswith(self.startup_taint_prefix)
        )

    def is_status_taint(self, key: str) -> bool:
        return key in self.status_taint or key.startswith(STATUS_TAINT_PREFIX)


def flag_name(field: str) -> str:
    return field.replace("_", "-")


FLAGS: dict[str, dataclasses.Field[object]] = {
    flag_name(f.name): f for f in dataclasses.fields(AutoscalerOptions) if f.metadata.get("flag", True)
}

# Go durations ("10m"); the remaining floats are plain numbers (thresholds, percentages).
_DURATION_FLAGS = {
    name
    for name, f in FLAGS.items()
    if f.type == "float" and not name.endswith(("threshold", "percentage", "ratio"))
}
_NON_NEGATIVE = {name for name, f in FLAGS.items() if f.type in ("int", "float")}
# Lower bounds beyond zero. A loop re-armed every nanosecond never lets simulated time advance.
_MINIMUM_SECONDS = {"scan-interval": 1.0}
_MAY_BE_NEGATIVE = {"expendable-pods-priority-cutoff", "scale-down-non-empty-candidates-count"}


def parse_flag(name: str, value: Any) -> Any:
    """One flag's value in CA syntax. Raises KeyError for an unknown flag, ValueError for a bad value."""
    field = FLAGS[name]
    kind = field.type
    if name in _DURATION_FLAGS:
        parsed: Any = parse_duration(value)
    elif kind == "bool":
        parsed = _parse_bool(value)
    elif kind == "int":
        parsed = _parse_int(value)
    elif kind == "float":
        parsed = _parse_float(value)
    elif kind == "ResourceRange":
        parsed = _parse_range(value)
    elif name == "expander":
        parsed = _parse_expanders(value)
    elif name == "policy":
        parsed = _parse_choice(value, POLICIES, "policy")
    elif name == "karpenter-consolidation-policy":
        parsed = _parse_choice(value, CONSOLIDATION_POLICIES, "consolidation policy")
    elif name == "karpenter-budgets":
        parsed = _parse_budgets(value)
    elif name in ("grpc-expander-url", "grpc-expander-cert"):
        parsed = str(value)  # checked when the expander is built (grpcexpander/)
    elif kind == "str":
        parsed = _parse_object_name(value, label=name == "namespace")
    elif kind == "tuple[str, ...]":
        parsed = _parse_names(value)
    else:  # pragma: no cover - every field type is handled above
        raise ValueError(f"unsupported flag type {kind}")
    # CA takes a negative priority cutoff, and a non-positive candidates count as "no limit".
    if name in _NON_NEGATIVE and parsed < 0 and name not in _MAY_BE_NEGATIVE:
        raise ValueError(f"must be non-negative, got {value!r}")
    if name in _MINIMUM_SECONDS and parsed < _MINIMUM_SECONDS[name]:
        raise ValueError(f"must be at least {_MINIMUM_SECONDS[name]:g}s, got {value!r}")
    if name.endswith("utilization-threshold") and not 0 <= parsed <= 1:
        raise ValueError(f"must be between 0 and 1, got {value!r}")
    if name == "scale-down-candidates-pool-ratio" and not 0 < parsed <= 1:
        raise ValueError(f"must be greater than 0 and at most 1 (1: every node), got {value!r}")
    if name == "max-allocatable-difference-ratio" and not 0 <= parsed <= 1:
        raise ValueError(f"must be between 0 and 1, got {value!r}")
    if name == "max-total-unready-percentage" and not 0 <= parsed <= 100:
        raise ValueError(f"must be between 0 and 100, got {value!r}")
    return parsed


def format_flag(name: str, value: Any) -> str:
    """An option's value as the flag would be written (parse_flag's inverse): `10m`, `0.5`,
    `true`, `least-waste,random`, `0:320000`; what the sweep's table shows for a setting that
    leaves the flag at the scenario's value."""
    if name in _DURATION_FLAGS:
        return format_duration(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, ResourceRange):
        return f"{value.min}:{value.max}"
    if isinstance(value, tuple):
        return ",".join(value)
    return str(value)


_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")


def _parse_object_name(value: Any, *, label: bool) -> str:
    """A namespace (a DNS-1123 label) or a ConfigMap name (a DNS-1123 subdomain), as the API
    server validates them: a name it would refuse is refused here, before any loop."""
    text = str(value)
    limit = 63 if label else 253
    parts = [text] if label else text.split(".")
    if not text or len(text) > limit or not all(_DNS_LABEL.fullmatch(p) for p in parts):
        kind = "DNS-1123 label" if label else "DNS-1123 subdomain"
        raise ValueError(
            f"must be a {kind} (lower-case letters, digits and '-', at most {limit}), got {text!r}"
        )
    return text


def parse_options(
    flags: Mapping[str, Any] | Sequence[Any] | None,
    source: str,
    field: str = "spec.autoscaler",
    base: AutoscalerOptions | None = None,
    warnings: list[str] | None = None,
    ignored: list[str] | None = None,
    infrastructure: dict[str, Any] | None = None,
) -> AutoscalerOptions:
    """Options from a `flag-name: value` mapping or a CA container's `args:` list; errors name
    the file and the flag, and say how kubetide treats it (ca_flags.py).

    Both forms read every flag the same way. What the caller should show goes to `warnings` (this
    module does no I/O): deprecated aliases, approximated flags, and infrastructure flags, which
    go to `ignored` by name instead when the caller passes it (to say them in one line).
    Infrastructure flags' values are checked as their kind (CA's flag package would refuse
    `--leader-elect=maybe` too) and, when the caller passes `infrastructure`, put there by name:
    `kubetide run` acts on a few of them itself.
    """
    options = base or AutoscalerOptions()
    if not flags:
        return options
    # Every refused flag is said, in one error (FlagErrors), not only the first.
    errors: list[ManifestError] = []
    if isinstance(flags, Mapping):
        entries = [
            (str(name).removeprefix("--"), value, _flag_path(field, str(name).removeprefix("--")))
            for name, value in flags.items()
        ]
    elif isinstance(flags, Sequence) and not isinstance(flags, str):
        entries = _args_entries(flags, source, field, errors)
    else:
        raise ManifestError(
            source, "", field, "expected a mapping of flag names to values, or a list of --flag=value args"
        )
    changes: dict[str, Any] = {}
    aliased: dict[str, tuple[str, Any]] = {}  # flag -> (the alias's path, its value)
    for name, value, path in entries:
        target = DEPRECATED_ALIASES.get(name, name)
        try:
            if target not in FLAGS:
                parsed = _check_other_flag(name, value, source, path, warnings, ignored)
                if infrastructure is not None and treatment_of(name) is Treatment.INFRASTRUCTURE:
                    infrastructure[name] = parsed
                continue
            try:
                parsed = parse_flag(target, value)
            except ValueError as exc:
                raise ManifestError(source, "", path, str(exc)) from None
        except ManifestError as exc:
            errors.append(exc)
            continue
        attribute = FLAGS[target].name
        if target != name:
            aliased[target] = (path, parsed)
        elif FLAGS[name].type == "tuple[str, ...]" and name != "expander":
            # Go's repeatable flags: each occurrence adds (the result replaces `base`'s list).
            changes[attribute] = tuple(dict.fromkeys((*changes.get(attribute, ()), *parsed)))
        else:
            changes[attribute] = parsed
        flag = CA_FLAGS.get(name)
        if flag is not None and flag.treatment is Treatment.APPROXIMATED and warnings is not None:
            warnings.append(f"{path}: approximated: {flag.note}")
    for target, (path, parsed) in aliased.items():
        attribute = FLAGS[target].name
        if attribute in changes:
            note = f"deprecated, and ignored since {target} is given"
        else:
            changes[attribute] = parsed
            note = f"deprecated, use {target} (set to {parsed})"
        if warnings is not None:
            warnings.append(f"{path}: {note}")
    if len(errors) == 1:
        raise errors[0]
    if errors:
        raise FlagErrors(source, errors)
    if changes.get("policy") == "cluster-autoscaler":
        changes = {**CA_POLICY_DEFAULTS, **changes}
    return dataclasses.replace(options, **changes)


class FlagErrors(ManifestError):
    """Several flags refused at once: each named with its reason, on one line, so that a command
    line with three mistakes is fixed in one try rather than three."""

    def __init__(self, source: str, errors: Sequence[ManifestError]):
        self.errors = tuple(errors)
        said = "; ".join(f"{e.field}: {e.message}" if e.field else e.message for e in self.errors)
        super().__init__(source, "", "", f"{len(self.errors)} flags refused: {said}")


def _flag_path(field: str, name: str) -> str:
    return f"{field}.{name}" if field else name


def _check_other_flag(
    name: str,
    value: Any,
    source: str,
    path: str,
    warnings: list[str] | None,
    ignored: list[str] | None,
) -> Any:
    """A CA flag without an options field: its value checked as its kind, then accepted (and
    said) and returned, or refused with the reason; an unknown flag is an error with a
    did-you-mean."""
    flag = CA_FLAGS.get(name)
    if flag is None:
        raise ManifestError(source, "", path, unknown_flag_message(name))
    try:
        parsed = _parse_kind(flag, value)
        if flag.choices and parsed not in flag.choices:
            raise ValueError(f"kubetide does {', '.join(flag.choices)} only, got {value!r}")
    except ValueError as exc:
        raise ManifestError(source, "", path, str(exc)) from None
    if flag.treatment is Treatment.INFRASTRUCTURE:
        if ignored is not None:
            if name not in ignored:
                ignored.append(name)
        elif warnings is not None:
            warnings.append(f"{path}: ignored, an infrastructure flag: {flag.note}")
        return parsed
    if flag.treatment is Treatment.REFUSED:
        if flag.inert is not None and parsed == _parse_kind(flag, flag.inert):
            return parsed  # CA's default: the feature stays off, as in kubetide
        raise ManifestError(source, "", path, refused_message(name))
    if flag.treatment is Treatment.APPROXIMATED and warnings is not None:
        warnings.append(f"{path}: approximated: {flag.note}")
    return parsed


def refused_message(name: str) -> str:
    flag = CA_FLAGS[name]
    inert = ""
    if flag.inert is not None:
        value = flag.inert or '""'
        inert = f"; only {value} (CA's default) is accepted"
    return f"refused, a Cluster Autoscaler flag kubetide does not support: {flag.note}{inert}"


def _parse_kind(flag: CaFlag, value: Any) -> Any:
    if flag.kind == BOOL:
        return _parse_bool(value)
    if flag.kind == INT:
        return _parse_int(value)
    if flag.kind == FLOAT:
        return _parse_float(value)
    if flag.kind == DURATION:
        return parse_duration(value)
    if flag.kind == MULTI:
        return _parse_names(value)
    return "" if value is None else str(value)


def _args_entries(
    args: Sequence[Any], source: str, field: str, errors: list[ManifestError]
) -> list[tuple[str, Any, str]]:
    """(flag, value, field path) from a container's args, read as CA's command line (pflag) reads
    them: `--flag=value`, `-flag=value`, or `--flag value` (the next item) for a flag that is not a
    boolean; a boolean takes its value joined (`--flag=false`) and alone means true, so in
    `--flag false` the `false` is a stray argument, not the flag's value. A later repetition of a
    flag wins, as in Go (a repeatable flag adds). An item that is not a flag is named by its
    index; a flag by its name. Mistakes go to `errors`, every one, and reading goes on."""
    entries: list[tuple[str, Any, str]] = []
    index = 0
    bare_boolean = ""  # the boolean flag just read without a value, for a stray value's hint
    while index < len(args):
        item, path = args[index], f"{field}[{index}]"
        index += 1
        after, bare_boolean = bare_boolean, ""
        if not isinstance(item, str):
            errors.append(ManifestError(source, "", path, f"expected a --flag=value string, got {item!r}"))
            continue
        if path.endswith("[0]") and item.strip() in _COMMAND_NAMES:
            continue  # a pasted command: the binary itself
        text = item.strip()
        if not text.startswith("-") or text.lstrip("-") == "":
            hint = f" (a boolean takes its value joined: --{after}={text})" if after else ""
            errors.append(
                ManifestError(source, "", path, f"expected a --flag=value string, got {item!r}{hint}")
            )
            continue
        name, sep, text_value = text.lstrip("-").partition("=")
        value: Any = text_value
        path = _flag_path(field, name)
        if not sep:
            if is_boolean_flag(name):
                value, bare_boolean = "true", name
            elif index < len(args) and isinstance(args[index], str) and not args[index].startswith("-"):
                value = args[index]
                index += 1
            elif treatment_of(name) is None:
                value = None  # an unknown flag: said as unknown, with a did-you-mean
            else:
                errors.append(ManifestError(source, "", path, f"--{name} needs a value (--{name}=VALUE)"))
                continue
        entries.append((name, value, path))
    return entries


def is_boolean_flag(name: str) -> bool:
    """Whether a flag takes no separate value on a command line (alone, it means true)."""
    target = DEPRECATED_ALIASES.get(name, name)
    if target in FLAGS:
        return FLAGS[target].type == "bool"
    flag = CA_FLAGS.get(name)
    return flag is not None and flag.kind == BOOL


def treatment_of(name: str) -> Treatment | None:
    """How kubetide treats a flag: None for a flag that is neither CA's nor kubetide's."""
    name = DEPRECATED_ALIASES.get(name, name)
    flag = CA_FLAGS.get(name)
    if flag is not None:
        return flag.treatment
    return Treatment.IMPLEMENTED if name in FLAGS else None


def unknown_flag_message(name: str) -> str:
    close = difflib.get_close_matches(name, [*FLAGS, *CA_FLAGS], n=1, cutoff=0.6)
    if close:
        return f"unknown flag (did you mean {close[0]}?)"
    return f"unknown flag: neither a Cluster Autoscaler {CA_VERSION} flag nor kubetide's"


def _parse_names(value: Any) -> tuple[str, ...]:
    """A repeatable flag's values (taint keys, label keys): a YAML list, or one text with commas."""
    items = value if isinstance(value, list | tuple) else [value]
    if any(not isinstance(item, str) for item in items):
        raise ValueError(f"expected names (a list, or one text with commas), got {value!r}")
    names = tuple(part.strip() for item in items for part in item.split(",") if part.strip())
    if not names:
        raise ValueError("expected at least one name")
    return names


# Go's strconv.ParseBool, which CA's flags (pflag's and the flag package's booleans) use: these
# spellings exactly ("tRUE", "yes" and "on" are refused, as CA refuses them).
GO_TRUE = ("1", "t", "T", "TRUE", "true", "True")
GO_FALSE = ("0", "f", "F", "FALSE", "false", "False")


def _parse_bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value in GO_TRUE + GO_FALSE:
        return value in GO_TRUE
    raise ValueError(f"expected true or false, got {value!r}")


def _parse_int(value: Any) -> int:
    number = None
    if isinstance(value, int) and not isinstance(value, bool):
        number = value
    elif isinstance(value, str):
        with contextlib.suppress(ValueError):
            number = int(value.strip(), 10)
    if number is None:
        raise ValueError(f"expected an integer, got {value!r}")
    if not -(2**63) <= number < 2**63:  # the Cluster Autoscaler's flags are Go ints
        raise ValueError(f"{value!r:.40} is out of range (int64)")
    return number


def _parse_float(value: Any) -> float:
    if isinstance(value, bool):
        raise ValueError(f"expected a number, got {value!r}")
    number = None
    if isinstance(value, int | float | str):
        with contextlib.suppress(ValueError, OverflowError):  # OverflowError: a 400-digit int
            number = float(value.strip() if isinstance(value, str) else value)
    if number is None or not math.isfinite(number):
        raise ValueError(f"expected a number, got {value!r}")
    return number


def _parse_range(value: Any) -> ResourceRange:
    text = str(value).strip()
    low, sep, high = text.partition(":")
    try:
        if not sep:
            raise ValueError
        result = ResourceRange(int(low), int(high))
    except ValueError:
        raise ValueError(f'expected "min:max" integers, got {value!r}') from None
    if result.min < 0 or result.max < 0 or (result.max and result.min > result.max):
        raise ValueError(f"expected 0 <= min <= max, got {value!r}")
    return result


def _parse_choice(value: Any, choices: Sequence[str], what: str) -> str:
    text = str(value).strip()
    if text not in choices:
        raise ValueError(f"unknown {what} {text!r}; expected one of {', '.join(choices)}")
    return text


def _parse_budgets(value: Any) -> str:
    """karpenter-budgets, checked by the parser that reads it (model/nodepool.py)
    and kept as written, so a sweep's table shows it as given."""
    from kubetide.model.nodepool import parse_budgets

    text = str(value).strip()
    parse_budgets(text)
    return text


def _parse_expanders(value: Any) -> tuple[str, ...]:
    names = tuple(part.strip() for part in str(value).split(",") if part.strip())
    if not names:
        raise ValueError("expected at least one expander")
    for name in names:
        if name in UNSUPPORTED_EXPANDERS:
            raise ValueError(f'expander "{name}" is not supported yet: it {UNSUPPORTED_EXPANDERS[name]}')
        if name not in EXPANDERS:
            close = difflib.get_close_matches(name, EXPANDERS, n=1)
            hint = f" (did you mean {close[0]}?)" if close else ""
            raise ValueError(f'unknown expander "{name}"{hint}; expected one of {", ".join(EXPANDERS)}')
    return names
