"""How kubetide treats each Cluster Autoscaler flag: the table behind options.py and docs/ca-flags.md.

Every flag of CA's own list (config/flags/flags.go of the release named by CA_VERSION, plus the
flags other packages register in its binary: klog, leader election, component-base logging) is
exactly one of:

- implemented: an AutoscalerOptions field with CA's name, default and meaning (options.py); a
  field is implemented unless this table says otherwise;
- approximated: accepted and checked, but kubetide does not do all of what CA does with it; the
  note says what differs, and setting it gives a warning saying so;
- infrastructure: about where and how the process runs (logging, the API connection, leader
  election, the cloud provider and its discovery, metrics, parallelism): no decision depends on it;
  accepted and named as ignored;
- refused: a feature kubetide does not have. Given with CA's default (`inert`) it changes nothing
  and is accepted; any other value is refused with the reason, before anything runs.

A flag in none of these is unknown. tests/autoscaler/test_ca_flag_table.py reads CA's list
(tests/autoscaler/data/ca-flags-<version>.tsv) and fails for any flag this table does not classify,
so a new CA release shows what is missing; it also checks docs/ca-flags.md against this table.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

CA_VERSION = "1.36.1"


class Treatment(enum.Enum):
    IMPLEMENTED = "implemented"
    APPROXIMATED = "approximated"
    INFRASTRUCTURE = "infrastructure"
    REFUSED = "refused"


# Value kinds of flags that are not AutoscalerOptions fields, as CA's flag package reads them.
BOOL, INT, FLOAT, DURATION, STRING, MULTI = "bool", "int", "float", "duration", "string", "multi"


@dataclass(frozen=True, slots=True)
class CaFlag:
    treatment: Treatment
    note: str = ""
    # For flags that are not AutoscalerOptions fields: how the value is read (a bool takes no
    # separate value in an args list) and checked.
    kind: str = STRING
    # Refused flags: CA's default, with which the flag changes nothing and is accepted.
    inert: str | None = None
    # Implemented flags that are not fields: the only values kubetide does (CA's default first).
    choices: tuple[str, ...] = ()


def _infra(note: str, kind: str = STRING) -> CaFlag:
    return CaFlag(Treatment.INFRASTRUCTURE, note, kind)


def _approx(note: str, kind: str = STRING) -> CaFlag:
    return CaFlag(Treatment.APPROXIMATED, note, kind)


def _refused(note: str, kind: str, inert: str) -> CaFlag:
    return CaFlag(Treatment.REFUSED, note, kind, inert)


_KLOG = "klog's logging; kubetide logs to stderr (`run --v`, `--logging-format`)"
_CONNECTION = "the API server connection; `kubetide run` takes --kubeconfig and its own client settings"
_LEADER = "leader election; `kubetide run` has its own --leader-elect flags (a Lease)"
_PROVIDER = "the cloud provider and its node groups; a scenario's nodeGroups, `--node-groups` or `run`'s provider flags stand for them"
_METRICS = "metrics, status or debugging output, not a decision"
_SPEED = "how fast CA computes, not what it decides"
_STARTUP = (
    "a Ready node with the taint counts as not started (coming capacity, then unready after "
    "max-node-startup-time) and is left out of templates; scale-down still counts it as Ready"
)
_PROVREQ = "tunes ProvisioningRequests, which kubetide refuses (enable-provisioning-requests): no effect"
_BUFFERS = "capacity buffers (CapacityBuffer objects) are not read by kubetide"

# Flags that are not AutoscalerOptions fields, and fields whose treatment is not "implemented".
CA_FLAGS: dict[str, CaFlag] = {
    # -- klog and component-base logging (registered outside flags.go) -------------------------
    "v": _infra(_KLOG),
    "vmodule": _infra(_KLOG),
    "logtostderr": _infra(_KLOG, BOOL),
    "alsologtostderr": _infra(_KLOG, BOOL),
    "stderrthreshold": _infra(_KLOG),
    "log_dir": _infra(_KLOG),
    "log-dir": _infra(_KLOG),
    "log_file": _infra(_KLOG),
    "log-file": _infra(_KLOG),
    "log_file_max_size": _infra(_KLOG),
    "log-file-max-size": _infra(_KLOG),
    "log_backtrace_at": _infra(_KLOG),
    "skip_headers": _infra(_KLOG, BOOL),
    "skip_log_headers": _infra(_KLOG, BOOL),
    "one_output": _infra(_KLOG, BOOL),
    "add_dir_header": _infra(_KLOG, BOOL),
    "logging-format": _infra(_KLOG),
    "feature-gates": _infra("component-base feature gates of CA's binary"),
    # -- the API server connection and the process's identity ---------------------------------
    "kubernetes": _infra(_CONNECTION),
    "kubeconfig": _infra(_CONNECTION),
    "kube-api-content-type": _infra(_CONNECTION),
    "kube-client-qps": _infra(_CONNECTION),
    "kube-client-burst": _infra(_CONNECTION),
    "kube-api-qps": _infra(_CONNECTION),
    "kube-api-burst": _infra(_CONNECTION),
    "user-agent": _infra(_CONNECTION),
    "cluster-name": _infra("names the cluster to some cloud providers"),
    "max-startup-time": _infra("how long CA's own start-up (informer sync) may take"),
    # -- leader election (component-base, registered outside flags.go) ------------------------
    "leader-elect": _infra(_LEADER, BOOL),
    "leader-elect-lease-duration": _infra(_LEADER),
    "leader-elect-renew-deadline": _infra(_LEADER),
    "leader-elect-retry-period": _infra(_LEADER),
    "leader-elect-resource-lock": _infra(_LEADER),
    "leader-elect-resource-name": _infra(_LEADER),
    "leader-elect-resource-namespace": _infra(_LEADER),
    "lock-object-name": _infra(_LEADER),
    "lock-object-namespace": _infra(_LEADER),
    # -- the cloud provider and how node groups are found --------------------------------------
    "cloud-provider": _infra(_PROVIDER),
    "cloud-config": _infra(_PROVIDER),
    "nodes": _infra(_PROVIDER, MULTI),
    "node-group-auto-discovery": _infra(_PROVIDER, MULTI),
    "aws-use-static-instance-list": _infra(_PROVIDER, BOOL),
    "regional": _infra(_PROVIDER, BOOL),
    "gce-concurrent-refreshes": _infra(_PROVIDER),
    "gce-mig-instances-min-refresh-wait-time": _infra(_PROVIDER),
    "bulk-mig-instances-listing-enabled": _infra(_PROVIDER, BOOL),
    "clusterapi-cloud-config-authoritative": _infra(_PROVIDER, BOOL),
    "async-node-groups": _infra("creates node groups asynchronously (node auto-provisioning)", BOOL),
    # -- metrics, status, health and debugging -------------------------------------------------
    "address": _infra("where /metrics and /health-check are served (`kubetide run --address`)"),
    "profiling": _infra(_METRICS, BOOL),
    "emit-per-nodegroup-metrics": _infra(_METRICS, BOOL),
    "write-status-configmap": _infra(
        "`kubetide run --write-status-configmap`; the simulator always writes status.yaml", BOOL
    ),
    "record-duplicated-events": _infra(_METRICS, BOOL),
    "max-inactivity": _infra("CA's liveness probe (`kubetide run --max-inactivity`)"),
    "max-failing-time": _infra("CA's liveness probe (`kubetide run --max-failing-time`)"),
    "debugging-snapshot-enabled": _infra(_METRICS, BOOL),
    "node-removal-latency-tracking-enabled": _infra(_METRICS, BOOL),
    "max-node-skip-eval-time-tracker-enabled": _infra(_METRICS, BOOL),
    # -- how fast CA computes ------------------------------------------------------------------
    "cluster-snapshot-parallelism": _infra(_SPEED),
    "predicate-parallelism": _infra(_SPEED),
    "frequent-loops-enabled": _infra(_SPEED, BOOL),
    "node-info-cache-expire-time": _infra(_SPEED),
    "fastpath-binpacking-enabled": _infra(_SPEED, BOOL),
    "parallel-scale-up": _infra(
        "whether CA calls the cloud for several groups at once; the increases decided are the same", BOOL
    ),
    # -- implemented without an options field --------------------------------------------------
    "estimator": CaFlag(
        Treatment.IMPLEMENTED,
        "binpacking, CA's only estimator, is kubetide's",
        STRING,
        choices=("binpacking",),
    ),
    # -- approximated ---------------------------------------------------------------------------
    # Startup taints: the registry and scale-up see the node as not started (options.py), but
    # scale-down still judges it by its Ready condition (scale-down-unneeded-time, where CA would
    # wait scale-down-unready-time).
    "startup-taint": _approx(_STARTUP),
    "ignore-taint": _approx(_STARTUP + " (deprecated spelling of startup-taint)"),
    "startup-taint-prefix": _approx(_STARTUP),
    "max-free-difference-ratio": _approx(
        "similar groups are compared on their templates, which have no free resources beyond "
        "allocatable (max-allocatable-difference-ratio)",
        FLOAT,
    ),
    "memory-difference-ratio": _approx(
        "similar groups are compared on template allocatable (max-allocatable-difference-ratio), "
        "not on capacity",
        FLOAT,
    ),
    "gpu-total": _approx("GPU totals are not enforced; cores-total and memory-total are", MULTI),
    "cordon-node-before-terminating": _approx(
        "kubetide never sets spec.unschedulable; the ToBeDeletedByClusterAutoscaler NoSchedule "
        "taint keeps new pods off the node as cordoning would",
        BOOL,
    ),
    "force-delete-unregistered-nodes": _approx(
        "unregistered nodes are removed down to their group's min size, never below it", BOOL
    ),
    "force-delete-failed-nodes": _approx(
        "instances the cloud failed to create fail the scale-up and back the group off; a group is "
        "never taken below its min size for them (what this flag lets CA do)",
        BOOL,
    ),
    "drain-priority-config": _approx(
        "a node's pods are evicted together, not in priority bands with their own grace periods "
        "(max-graceful-termination-sec bounds every pod)"
    ),
    "dynamic-node-delete-delay-after-taint-enabled": _approx(
        "the delay stays node-delete-delay-after-taint (CA lengthens it by the API server's latency)",
        BOOL,
    ),
    "node-deletion-candidate-ttl": _approx(
        "at restart kubetide keeps the DeletionCandidate taint of a node still unneeded and "
        "removes the others, whatever the taint's age",
        DURATION,
    ),
    "enable-dynamic-resource-allocation": _approx(
        "ResourceClaims are not simulated: a pod is placed on its other requests", BOOL
    ),
    "pod-injection-limit": _approx(
        "tunes pod injection for capacity buffers and ProvisioningRequests, which kubetide refuses: no effect",
        INT,
    ),
    "check-capacity-batch-processing": _approx(_PROVREQ, BOOL),
    "check-capacity-processor-instance": _approx(_PROVREQ),
    "check-capacity-provisioning-request-batch-timebox": _approx(_PROVREQ, DURATION),
    "check-capacity-provisioning-request-max-batch-size": _approx(_PROVREQ, INT),
    "provisioning-request-initial-backoff-time": _approx(_PROVREQ, DURATION),
    "provisioning-request-max-backoff-cache-size": _approx(_PROVREQ, INT),
    "provisioning-request-max-backoff-time": _approx(_PROVREQ, DURATION),
    "capacity-buffer-pod-dry-run-enabled": _approx(_BUFFERS + ": no effect", BOOL),
    "salvo-scale-up-budget": _approx("tunes salvo-scale-up, which kubetide refuses: no effect", DURATION),
    # -- refused --------------------------------------------------------------------------------
    "enable-provisioning-requests": _refused(
        "ProvisioningRequests (autoscaling.x-k8s.io) are not read", BOOL, "false"
    ),
    "capacity-buffer-controller-enabled": _refused(_BUFFERS, BOOL, "false"),
    "capacity-buffer-pod-injection-enabled": _refused(_BUFFERS, BOOL, "false"),
    "capacity-quotas-enabled": _refused("capacity quota objects are not read", BOOL, "false"),
    "enable-proactive-scaleup": _refused(
        "scale-up is for pods that exist, not for pods their controllers are about to create", BOOL, "false"
    ),
    "enable-csi-node-aware-scheduling": _refused(
        "CSI volume limits per node are not simulated", BOOL, "false"
    ),
    "force-ds": _refused(
        "a group too small for its DaemonSets is not held back; those DaemonSets are left out of its template",
        BOOL,
        "false",
    ),
    "salvo-scale-up": _refused("salvo scale-up is not implemented", BOOL, "false"),
    "scale-down-delay-type-local": _refused(
        "scale-down delays after add, delete and failure are cluster-wide, not per node group",
        BOOL,
        "false",
    ),
    "scale-from-unschedulable": _refused("not implemented", BOOL, "false"),
    "scaleup-simulation-for-skipped-node-groups-enabled": _refused(
        "skipped node groups are not simulated", BOOL, "false"
    ),
}
