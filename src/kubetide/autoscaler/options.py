"""Every autoscaler flag, with the Cluster Autoscaler's names, defaults and value syntax.

Users of the Cluster Autoscaler should be able to paste their flags into a scenario
(`spec.autoscaler`, as a `flag: value` map or as the container's `args:` list) or `kubetide plan
--set`. The one deliberate difference: max-drain-parallelism defaults to 10, the parallel-drain
design's intent, where CA ships 1.

CA flags about where and how the process runs (logging, the API connection, leader election, the
cloud provider and its node-group discovery, metrics) change no decision. A caller that passes
`ignored=` (the simulator) gets their names there instead of an error, so a pasted `args:` list
works as it is; any other unknown flag is an error with a did-you-mean.
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

from kubetide.durations import parse_duration
from kubetide.errors import ManifestError

EXPANDERS = ("random", "most-pods", "least-nodes", "least-waste", "price", "priority", "grpc")
# CA expanders kubetide knows by name but cannot run: naming one is an error, never a silent no-op.
UNSUPPORTED_EXPANDERS: dict[str, str] = {}
# CA's deprecated flag names -> the flag they set. As in CA, the alias applies only when the flag it
# stands for is not given too.
DEPRECATED_ALIASES = {"max-empty-bulk-delete": "max-scale-down-parallelism"}
# The Cluster Autoscaler's infrastructure flags (cluster-autoscaler/config/flags, klog, leader
# election, component-base), each with whether it is a boolean: a boolean takes no separate value
# in an args list (`--leader-elect false` is two flags to Go's parser, `--leader-elect=false` one).
INFRASTRUCTURE_FLAGS: dict[str, bool] = {
    # klog
    "v": False,
    "vmodule": False,
    "logtostderr": True,
    "alsologtostderr": True,
    "stderrthreshold": False,
    "log_dir": False,
    "log-dir": False,
    "log_file": False,
    "log-file": False,
    "log_file_max_size": False,
    "log-file-max-size": False,
    "log_backtrace_at": False,
    "skip_headers": True,
    "skip_log_headers": True,
    "one_output": True,
    "add_dir_header": True,
    "logging-format": False,
    # the API server connection and the process's identity
    "kubernetes": False,
    "kubeconfig": False,
    "kube-api-content-type": False,
    "kube-client-qps": False,
    "kube-client-burst": False,
    "kube-api-qps": False,
    "kube-api-burst": False,
    "user-agent": False,
    "cluster-name": False,
    "feature-gates": False,
    # leader election
    "leader-elect": True,
    "leader-elect-lease-duration": False,
    "leader-elect-renew-deadline": False,
    "leader-elect-retry-period": False,
    "leader-elect-resource-lock": False,
    "leader-elect-resource-name": False,
    "leader-elect-resource-namespace": False,
    "lock-object-name": False,
    "lock-object-namespace": False,
    # the cloud provider and how node groups are found (the scenario's nodeGroups stand for them)
    "cloud-provider": False,
    "cloud-config": False,
    "nodes": False,
    "node-group-auto-discovery": False,
    "aws-use-static-instance-list": True,
    "regional": True,
    "gce-concurrent-refreshes": False,
    "gce-mig-instances-min-refresh-wait-time": False,
    "bulk-mig-instances-listing-enabled": True,
    "clusterapi-cloud-config-authoritative": True,
    "async-node-groups": True,
    # metrics, status, health and debugging
    "address": False,
    "profiling": True,
    "emit-per-nodegroup-metrics": True,
    "write-status-configmap": True,
    "record-duplicated-events": True,
    "max-inactivity": False,
    "max-failing-time": False,
    "debugging-snapshot-enabled": True,
    # how fast CA computes, not what it decides
    "cluster-snapshot-parallelism": False,
    "predicate-parallelism": False,
    "frequent-loops-enabled": True,
    "node-info-cache-expire-time": False,
}
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
    # CA's pool of additional non-empty candidates: max(ceil(nodes x ratio), min-count)
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
    # first) when the Deployment allows a surge (autoscaler/scaledown/surge.py)
    surge_before_evict: bool = False
    # Where the status ConfigMap lives, and so where cluster-wide events go (CA's --namespace and
    # --status-config-map-name; `kubetide run` also keeps its lease in this namespace)
    namespace: str = "kube-system"
    status_config_map_name: str = "cluster-autoscaler-status"

    def with_values(self, **changes: Any) -> AutoscalerOptions:
        return dataclasses.replace(self, **changes)


def flag_name(field: str) -> str:
    return field.replace("_", "-")


FLAGS: dict[str, dataclasses.Field[object]] = {
    flag_name(f.name): f for f in dataclasses.fields(AutoscalerOptions)
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
    elif name in ("grpc-expander-url", "grpc-expander-cert"):
        parsed = str(value)  # checked when the expander is built (grpcexpander/)
    elif kind == "str":
        parsed = _parse_object_name(value, label=name == "namespace")
    else:  # pragma: no cover - every field type is handled above
        raise ValueError(f"unsupported flag type {kind}")
    if name in _NON_NEGATIVE and parsed < 0 and name != "expendable-pods-priority-cutoff":
        raise ValueError(f"must be non-negative, got {value!r}")
    if name in _MINIMUM_SECONDS and parsed < _MINIMUM_SECONDS[name]:
        raise ValueError(f"must be at least {_MINIMUM_SECONDS[name]:g}s, got {value!r}")
    if name.endswith("utilization-threshold") and not 0 <= parsed <= 1:
        raise ValueError(f"must be between 0 and 1, got {value!r}")
    if name == "scale-down-candidates-pool-ratio" and not 0 < parsed <= 1:
        raise ValueError(f"must be greater than 0 and at most 1 (1: every node), got {value!r}")
    if name == "max-total-unready-percentage" and not 0 <= parsed <= 100:
        raise ValueError(f"must be between 0 and 100, got {value!r}")
    return parsed


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
) -> AutoscalerOptions:
    """Options from a `flag-name: value` mapping or a CA container's `args:` list; errors name
    the file and the flag.

    Deprecated aliases are accepted, and the deprecation is appended to `warnings` for the caller
    to show (this module does no I/O). With `ignored` given, infrastructure flags
    (INFRASTRUCTURE_FLAGS) are appended there by name instead of being unknown.
    """
    options = base or AutoscalerOptions()
    if not flags:
        return options
    if isinstance(flags, Mapping):
        entries = [
            (
                str(name).removeprefix("--"),
                value,
                f"{field}.{str(name).removeprefix('--')}" if field else str(name),
            )
            for name, value in flags.items()
        ]
    elif isinstance(flags, Sequence) and not isinstance(flags, str):
        entries = _args_entries(flags, source, field)
    else:
        raise ManifestError(
            source, "", field, "expected a mapping of flag names to values, or a list of --flag=value args"
        )
    changes: dict[str, Any] = {}
    aliased: dict[str, tuple[str, Any]] = {}  # flag -> (the alias's path, its value)
    for name, value, path in entries:
        target = DEPRECATED_ALIASES.get(name, name)
        if target not in FLAGS:
            if ignored is not None and name in INFRASTRUCTURE_FLAGS:
                if name not in ignored:
                    ignored.append(name)
                continue
            raise ManifestError(source, "", path, unknown_flag_message(name))
        try:
            parsed = parse_flag(target, value)
        except ValueError as exc:
            raise ManifestError(source, "", path, str(exc)) from None
        if target != name:
            aliased[target] = (path, parsed)
        else:
            changes[FLAGS[name].name] = parsed
    for target, (path, parsed) in aliased.items():
        attribute = FLAGS[target].name
        if attribute in changes:
            note = f"deprecated, and ignored since {target} is given"
        else:
            changes[attribute] = parsed
            note = f"deprecated, use {target} (set to {parsed})"
        if warnings is not None:
            warnings.append(f"{path}: {note}")
    return dataclasses.replace(options, **changes)


def _args_entries(args: Sequence[Any], source: str, field: str) -> list[tuple[str, Any, str]]:
    """(flag, value, field path) from a container's args, read as Go's flag package reads them:
    `--flag=value`, `-flag=value`, or `--flag value` (the next item) for a flag that is not a
    boolean; a boolean alone means true. A later repetition of a flag wins, as in Go."""
    entries = []
    index = 0
    while index < len(args):
        item, path = args[index], f"{field}[{index}]"
        index += 1
        if not isinstance(item, str):
            raise ManifestError(source, "", path, f"expected a --flag=value string, got {item!r}")
        if path.endswith("[0]") and item.strip() in _COMMAND_NAMES:
            continue  # a pasted command: the binary itself
        text = item.strip()
        if not text.startswith("-") or text.lstrip("-") == "":
            raise ManifestError(source, "", path, f"expected a --flag=value string, got {item!r}")
        name, sep, value = text.lstrip("-").partition("=")
        if not sep:
            if _is_boolean(name):
                value = "true"
            elif index < len(args) and isinstance(args[index], str) and not args[index].startswith("-"):
                value = args[index]
                index += 1
            else:
                raise ManifestError(source, "", path, f"--{name} needs a value (--{name}=VALUE)")
        entries.append((name, value, path))
    return entries


def _is_boolean(name: str) -> bool:
    target = DEPRECATED_ALIASES.get(name, name)
    if target in FLAGS:
        return FLAGS[target].type == "bool"
    return INFRASTRUCTURE_FLAGS.get(name, False)


def unknown_flag_message(name: str) -> str:
    close = difflib.get_close_matches(name, FLAGS, n=1, cutoff=0.6)
    hint = f" (did you mean {close[0]}?)" if close else ""
    return f"unknown flag{hint}"


def _parse_bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false", "1", "0", "t", "f"):
        return value.lower() in ("true", "1", "t")
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
