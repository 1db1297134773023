"""Prometheus metrics under the Cluster Autoscaler's names, read from what each loop reports.

The names, labels, label values and histogram buckets are CA's (cluster-autoscaler/metrics), so
dashboards and alerts written for CA work unchanged. Everything is registered on a registry of
its own rather than prometheus_client's global one: two autoscalers in one process (tests, the
simulator) must not share counters, and /metrics should show exactly this autoscaler.

Nothing here drives the loop: `observe_loop` is called after `Autoscaler.run_once()` returns
and `observe_deletions` after `drive_deletions()`; they read the LoopResult plus the registry's
and actuator's answers, which decision code keeps anyway. The loop's steps are timed by the
loop with its Timer port (`LoopResult.durations`, CA's function labels); the driver adds main,
poll, autoscaling and loopWait.

Series of CA's metrics.go that kubetide does not export, and why (docs/real-clusters.md lists
them too): function_duration_quantile_seconds (a Summary with quantiles, which
prometheus_client cannot compute; the histogram answers the same queries), nap_enabled,
created_node_groups_total and deleted_node_groups_total (no node auto-provisioning), and the
function labels of steps kubetide does not have (reconfigure, cloudProviderRefresh, and the
legacy scaleDown:findNodesToRemove / scaleDown:miscOperations, whose work is inside
findUnneeded).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    ProcessCollector,
    generate_latest,
)

from kubetide.autoscaler.clusterstate import Readiness
from kubetide.autoscaler.loop import Autoscaler, LoopResult
from kubetide.autoscaler.ports import CHURN_SECONDS, TemplateError
from kubetide.autoscaler.scaledown import NodeReason
from kubetide.autoscaler.scaledown.planning import UNREMOVABLE, ScaleDownPlan, ca_method_name, gpu_resource
from kubetide.autoscaler.scaleup.orchestrator import GIB
from kubetide.model import Node

NAMESPACE = "cluster_autoscaler"
# The text format every Prometheus reads; CA's names need none of format 1.0.0's escaping (and
# prometheus_client before 0.22 has no constant for it under this name).
TEXT_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
# CA's ExponentialBuckets(0.01, 1.5, 30): 10 ms up to about 21 minutes.
FUNCTION_DURATION_BUCKETS = tuple(0.01 * 1.5**i for i in range(30))
# CA's ExponentialBuckets(1, 1.5, 19) for node_removal_latency_seconds: 1 s up to about 24 minutes.
NODE_REMOVAL_LATENCY_BUCKETS = tuple(1.5**i for i in range(19))
# delay_reason of a node nothing held back once its unneeded time had run (CA's "none").
NO_DELAY = "none"
# Reasons that are the unneeded (unready) time itself running, not a delay past it.
_TIMER_REASONS = frozenset({NodeReason.NOT_UNNEEDED_LONG_ENOUGH, NodeReason.NOT_UNREADY_LONG_ENOUGH})

# Label values, as CA spells them.
NODE_STATES = ("ready", "unready", "notStarted", "longUnregistered", "unregistered")
SCALE_DOWN_REASONS = (ca_method_name(empty=True), ca_method_name(empty=False), "unready")
FAILED_SCALE_UP_REASONS = ("cloudProviderError", "apiCallError", "timeout")
ERROR_TYPES = ("cloudProviderError", "apiCallError", "internalError")
# Every function label kubetide measures (CA's names): the driver's, then the loop's steps.
FUNCTION_LABELS = (
    "main",
    "poll",
    "autoscaling",
    "loopWait",
    "updateClusterState",
    "scaleUp",
    "scaleUp:buildPodEquivalenceGroups",
    "filterOutSchedulable",
    "scaleUp:estimate",
    "findUnneeded",
    "scaleDown",
    "scaleDown:nodeDeletion",
    "scaleDown:softTaintUnneeded",
)
# Node labels naming a GPU's type, as the cloud providers CA supports set them; a GPU node
# without one is CA's "generic" GPU.
GPU_TYPE_LABELS = (
    "cloud.google.com/gke-accelerator",
    "k8s.amazonaws.com/accelerator",
    "cluster-api/accelerator",
    "nvidia.com/gpu.product",
)
GENERIC_GPU = "generic"
# The registry's failure codes that have a CA spelling; other codes (the cloud's instance error
# codes, e.g. STOCKOUT) are CA's label values as they are.
_FAILURE_REASONS = {"CloudProviderError": "cloudProviderError", "timeout": "timeout"}


class MetricMaker:
    """Makes metrics of one namespace on one registry: each metric of a group names the same two."""

    def __init__(self, registry: CollectorRegistry, namespace: str):
        self.registry = registry
        self.namespace = namespace

    def gauge(self, name: str, documentation: str, labels: Sequence[str] = ()) -> Gauge:
        return Gauge(name, documentation, labels, namespace=self.namespace, registry=self.registry)

    def counter(self, name: str, documentation: str, labels: Sequence[str] = ()) -> Counter:
        return Counter(name, documentation, labels, namespace=self.namespace, registry=self.registry)

    def histogram(
        self, name: str, documentation: str, labels: Sequence[str], buckets: Sequence[float]
    ) -> Histogram:
        return Histogram(
            name, documentation, labels, namespace=self.namespace, registry=self.registry, buckets=buckets
        )


class AutoscalerMetrics:
    """CA's metrics on a registry of their own. Thread-safe: the HTTP server reads while the
    loop thread writes."""

    def __init__(self, registry: CollectorRegistry | None = None, *, process_metrics: bool = True):
        self.registry = registry if registry is not None else CollectorRegistry()
        ca, own = MetricMaker(self.registry, NAMESPACE), MetricMaker(self.registry, "kubetide")
        if process_metrics:
            # process_resident_memory_bytes and friends, as CA's Go runtime exports them.
            ProcessCollector(registry=self.registry)

        # Cluster state
        self.cluster_safe_to_autoscale = ca.gauge(
            "cluster_safe_to_autoscale",
            "Whether or not cluster is healthy enough for autoscaling. 1 if it is, 0 otherwise.",
        )
        self.nodes_count = ca.gauge("nodes_count", "Number of nodes in cluster.", ["state"])
        self.node_groups_count = ca.gauge(
            "node_groups_count", "Number of node groups managed by CA.", ["node_group_type"]
        )
        self.unschedulable_pods_count = ca.gauge(
            "unschedulable_pods_count", "Number of unschedulable pods in the cluster.", ["type"]
        )
        self.max_nodes_count = ca.gauge("max_nodes_count", "Maximum number of nodes in all node groups")
        self.cluster_cpu_current_cores = ca.gauge(
            "cluster_cpu_current_cores", "Current number of cores in the cluster, minus deleting nodes."
        )
        self.cpu_limits_cores = ca.gauge(
            "cpu_limits_cores", "Minimum and maximum number of cores in the cluster.", ["direction"]
        )
        self.cluster_memory_current_bytes = ca.gauge(
            "cluster_memory_current_bytes",
            "Current number of bytes of memory in the cluster, minus deleting nodes.",
        )
        self.memory_limits_bytes = ca.gauge(
            "memory_limits_bytes", "Minimum and maximum number of bytes of memory in cluster.", ["direction"]
        )

        # Autoscaler execution
        self.last_activity = ca.gauge(
            "last_activity", "Last time certain part of CA logic executed.", ["activity"]
        )
        self.function_duration_seconds = ca.histogram(
            "function_duration_seconds",
            "Time taken by various parts of CA main loop.",
            ["function"],
            buckets=FUNCTION_DURATION_BUCKETS,
        )

        # Autoscaler operations
        self.errors_total = ca.counter("errors", "The number of CA loops failed due to an error.", ["type"])
        self.scaled_up_nodes_total = ca.counter("scaled_up_nodes", "Number of nodes added by CA.")
        self.scaled_up_gpu_nodes_total = ca.counter(
            "scaled_up_gpu_nodes", "Number of GPU nodes added by CA, by GPU name.", ["gpu_name"]
        )
        self.failed_scale_ups_total = ca.counter(
            "failed_scale_ups", "Number of times scale-up operation has failed.", ["reason"]
        )
        self.scaled_down_nodes_total = ca.counter(
            "scaled_down_nodes", "Number of nodes removed by CA.", ["reason"]
        )
        self.scaled_down_gpu_nodes_total = ca.counter(
            "scaled_down_gpu_nodes",
            "Number of GPU nodes removed by CA, by reason and GPU name.",
            ["reason", "gpu_name"],
        )
        self.evicted_pods_total = ca.counter(
            "evicted_pods", "Number of pods evicted by CA", ["eviction_result"]
        )
        # kubetide's own: decided deletions dropped by the validation before acting.
        self.stale_scale_down_decisions_total = own.counter(
            "scale_down_stale_decisions",
            "Decided node deletions not started because the cluster changed since the decision.",
            ["reason"],
        )
        self.unneeded_nodes_count = ca.gauge(
            "unneeded_nodes_count", "Number of nodes currently considered unneeded by CA."
        )
        self.unremovable_nodes_count = ca.gauge(
            "unremovable_nodes_count", "Number of nodes currently considered unremovable by CA.", ["reason"]
        )
        self.scale_down_in_cooldown = ca.gauge(
            "scale_down_in_cooldown", "Whether or not the scale down is in cooldown. 1 if its, 0 otherwise."
        )
        # A counter in CA, but prometheus_client appends "_total" to every counter's name, and
        # this name has to stay CA's: a gauge that only grows reads the same to rate() and alerts.
        self.old_unregistered_nodes_removed_count = ca.gauge(
            "old_unregistered_nodes_removed_count", "Number of unregistered nodes removed by CA."
        )

        # CA 1.35's (opt-in there; always here, it costs a dict entry per unneeded node): from the
        # moment an unneeded node could have gone (its unneeded or unready time run out) until
        # its deletion starts (deleted="true") or it is needed again (deleted="false", observed
        # only when it had waited past that moment). delay_reason: the unremovable reason that
        # last held the node back while it waited (BlockedByOnCompletionPod, NotEnoughPdb's
        # BlockedByPod while a budget is used up, NotUnneededOtherReason for a paused
        # scale-down, ...), "none" when nothing did.
        self.node_removal_latency_seconds = ca.histogram(
            "node_removal_latency_seconds",
            "Latency from when an unneeded node is eligible for scale down until it is removed "
            "(deleted=true) or it became needed again (deleted=false).",
            ["deleted", "delay_reason"],
            buckets=NODE_REMOVAL_LATENCY_BUCKETS,
        )

        # kubetide's own: the live counterparts of the simulator's disruption ledger
        # (sim/runtime/ledger.py), by the same definitions, read from what this process did and
        # from the informer cache (see LiveLedger).
        self.ledger = LiveLedger(self.registry)

        # Series CA creates at start-up, so that rate() and alerts see a 0 before the first event.
        for state in NODE_STATES:
            self.nodes_count.labels(state)
        for error_type in ERROR_TYPES:
            self.errors_total.labels(error_type)
        for reason in FAILED_SCALE_UP_REASONS:
            self.failed_scale_ups_total.labels(reason)
        for reason in SCALE_DOWN_REASONS:
            self.scaled_down_nodes_total.labels(reason)
        for result in ("succeeded", "failed"):
            self.evicted_pods_total.labels(result)
        for reason in NodeReason:
            self.unremovable_nodes_count.labels(reason.value)
        for label in FUNCTION_LABELS:
            self.function_duration_seconds.labels(label)

        # Per Autoscaler (a replica builds a fresh one each time it regains the lease):
        # why each deletion in progress was started, kept from the loop that started it (by the
        # time a node is deleted its readiness says "being deleted", not what it was), and the
        # registry's running count of removed unregistered instances already added up.
        self._autoscaler: Autoscaler | None = None
        self._deletions: dict[str, tuple[str, str]] = {}  # node -> (reason, GPU name or "")
        self._unregistered_removed = 0
        # Unneeded nodes (candidates and nodes waiting for budget) -> (when they could have gone,
        # what last held them back), for node_removal_latency_seconds.
        self._unneeded: dict[str, tuple[float, str]] = {}

    # -- what the loop driver calls -------------------------------------------------------------
    def observe_loop(
        self,
        result: LoopResult,
        duration_seconds: float,
        autoscaler: Autoscaler,
        durations: dict[str, float] | None = None,
    ) -> dict[str, str]:
        """Everything one finished `run_once()` says. `duration_seconds`: the whole iteration's
        wall time (function="main"); `durations`: the driver's other timings (poll,
        autoscaling), beside the loop's own steps in `result.durations`. Returns CA's
        scale-down reason of each node this loop started or finished deleting, as counted, for
        the log to say the same."""
        self._follow(autoscaler)
        self.function_duration_seconds.labels("main").observe(duration_seconds)
        self._observe_durations({**result.durations, **(durations or {})})
        registry = autoscaler.registry
        now = result.now
        healthy = registry.is_cluster_healthy()
        # CA records when each part of the loop last started; all of one loop start at result.now
        # to the second, which is the resolution CA writes.
        self.last_activity.labels("main").set(now)
        if healthy:
            self.last_activity.labels("autoscaling").set(now)
        if result.scale_up is not None:
            self.last_activity.labels("scaleUp").set(now)
        if result.scale_down is not None:
            self.last_activity.labels("scaleDown").set(now)

        self._observe_cluster(autoscaler, healthy, now)
        self._observe_scale_up(result, autoscaler)
        self.ledger.observe(result, autoscaler)
        self.ledger.observe_budgets(now, autoscaler)
        return self._observe_scale_down(result, autoscaler, healthy)

    def observe_deletions(self, result: LoopResult, autoscaler: Autoscaler) -> dict[str, str]:
        """What one `drive_deletions()` between loops did: nodes removed, pods evicted. Without
        this, a drain that ends between loops (most do: they wait for grace periods) was never
        counted in scaled_down_nodes_total."""
        self._follow(autoscaler)
        self._observe_durations(result.durations)
        self.ledger.observe(result, autoscaler)
        return self._observe_deleted(result)

    def observe_wait(self, seconds: float) -> None:
        """The time the driver slept between loops (CA's loopWait)."""
        self.function_duration_seconds.labels("loopWait").observe(seconds)

    def _follow(self, autoscaler: Autoscaler) -> None:
        if autoscaler is not self._autoscaler:
            self._autoscaler = autoscaler
            self._deletions.clear()
            self._unregistered_removed = 0
            self._unneeded.clear()
            self.ledger.follow()

    def _observe_durations(self, durations: dict[str, float]) -> None:
        for label, seconds in durations.items():
            self.function_duration_seconds.labels(label).observe(seconds)

    def observe_failed_loop(self, duration_seconds: float, error_type: str = "internalError") -> None:
        """A loop that raised instead of returning a LoopResult. `error_type` is CA's: apiCallError
        (the API server failed us), cloudProviderError, or internalError (a bug)."""
        self.function_duration_seconds.labels("main").observe(duration_seconds)
        self.errors_total.labels(error_type).inc()

    def exposition(self) -> tuple[bytes, str]:
        """The registry in the Prometheus text format, and its content type."""
        return generate_latest(self.registry), TEXT_CONTENT_TYPE

    # -- parts ------------------------------------------------------------------------------------
    def _observe_cluster(self, autoscaler: Autoscaler, healthy: bool, now: float) -> None:
        registry = autoscaler.registry
        options = autoscaler.options
        self.cluster_safe_to_autoscale.set(1 if healthy else 0)
        counts = registry.node_counts()
        for state, value in zip(
            NODE_STATES,
            (counts.ready, counts.unready, counts.not_started, counts.long_unregistered, counts.unregistered),
        ):
            self.nodes_count.labels(state).set(value)
        groups = registry.node_groups()
        # kubetide has no node auto-provisioning: every group is "autoscaled".
        self.node_groups_count.labels("autoscaled").set(len(groups))
        self.node_groups_count.labels("autoprovisioned").set(0)
        self.max_nodes_count.set(sum(g.max_size for g in groups))

        # CA counts only pods the scheduler gave up on; pods it has not tried yet
        # (scheduler_unprocessed) are counted only for pods of bypassed schedulers, which
        # kubetide does not support.
        unschedulable = sum(
            1 for pod in autoscaler.view.pending_pods() if pod.is_unschedulable and not pod.is_terminating
        )
        self.unschedulable_pods_count.labels("unschedulable").set(unschedulable)
        self.unschedulable_pods_count.labels("scheduler_unprocessed").set(0)

        deleting = registry.being_deleted_nodes() | autoscaler.actuator.being_deleted()
        millicores = memory = 0
        for node in autoscaler.view.snapshot().nodes():
            if node.name not in deleting:
                millicores += node.capacity.get("cpu", 0)
                memory += node.capacity.get("memory", 0)
        self.cluster_cpu_current_cores.set(millicores // 1000)
        self.cluster_memory_current_bytes.set(memory)
        self.cpu_limits_cores.labels("minimum").set(options.cores_total.min)
        self.cpu_limits_cores.labels("maximum").set(options.cores_total.max)
        self.memory_limits_bytes.labels("minimum").set(options.memory_total.min * GIB)
        self.memory_limits_bytes.labels("maximum").set(options.memory_total.max * GIB)

        removed = registry.unregistered_removed_total
        if removed > self._unregistered_removed:
            self.old_unregistered_nodes_removed_count.inc(removed - self._unregistered_removed)
            self._unregistered_removed = removed

    def _observe_scale_up(self, result: LoopResult, autoscaler: Autoscaler) -> None:
        added = sum(result.scaled_up.values())
        if added:
            self.scaled_up_nodes_total.inc(added)
        for node_group in autoscaler.cloud.node_groups():
            delta = result.scaled_up.get(node_group.id, 0)
            if delta:
                try:
                    template = node_group.template_node()
                except TemplateError:  # scale-up said why; CA counts no GPU either
                    continue
                gpu = gpu_name(template) if template is not None else ""
                if gpu:
                    self.scaled_up_gpu_nodes_total.labels(gpu).inc(delta)
        # A failed scale-up backs its group off at the loop's time (an increase the cloud refused,
        # instances it failed to create, nodes that never registered), and the backoff keeps why.
        registry = autoscaler.registry
        for group in registry.node_groups():
            status = registry.backoff_status(group.id, result.now)
            if status.error is None or status.until is None:
                continue
            failed_at = status.until - status.duration
            if math.isclose(failed_at, result.now, rel_tol=0.0, abs_tol=1e-3):
                code = status.error.code
                self.failed_scale_ups_total.labels(_FAILURE_REASONS.get(code, code)).inc()

    def _observe_deleted(self, result: LoopResult) -> dict[str, str]:
        reasons = {}
        for name in result.deleted:
            # A deletion this process did not see start (resumed from a previous leader and
            # finished in the same loop) is labelled by how it ended: drained or empty.
            fallback = ca_method_name(empty=name not in result.deleted_drained)
            reason, gpu = self._deletions.pop(name, (fallback, ""))
            reasons[name] = reason
            self.scaled_down_nodes_total.labels(reason).inc()
            if gpu:
                self.scaled_down_gpu_nodes_total.labels(reason, gpu).inc()
        for name in result.failed_deletions:
            self._deletions.pop(name, None)
        if result.evicted:
            self.evicted_pods_total.labels("succeeded").inc(len(result.evicted))
        if result.started is not None:
            for stale in result.started.stale.values():
                self.stale_scale_down_decisions_total.labels(str(stale)).inc()
        return reasons

    def _observe_scale_down(
        self, result: LoopResult, autoscaler: Autoscaler, healthy: bool
    ) -> dict[str, str]:
        reasons = self._observe_deleted(result)
        started = (
            set(result.started.started_empty + result.started.started_drain) if result.started else set()
        )
        registry = autoscaler.registry
        snapshot = autoscaler.view.snapshot()
        for name, deletion in autoscaler.actuator.deletions.items():
            if name in self._deletions:
                continue
            # Started this loop: the registry classified the node before the taint went on (CA
            # labels by readiness, then by drain). A deletion resumed after a restart finds it
            # "being deleted" and falls back to its kind.
            record = registry.node(name)
            if record is not None and record.readiness is Readiness.UNREADY:
                reason = "unready"
            else:
                reason = ca_method_name(empty=deletion.empty)
            gpu = gpu_name(snapshot.node(name)) if name in snapshot else ""
            self._deletions[name] = (reason, gpu)
        reasons.update({name: self._deletions[name][0] for name in started if name in self._deletions})

        plan = result.scale_down
        if plan is not None:
            self._observe_removal_latency(plan, started, autoscaler)
            self.unneeded_nodes_count.set(len(plan.candidate_set))
            self.scale_down_in_cooldown.set(1 if plan.cooldown is not None else 0)
            unremovable = {reason.value: 0 for reason in NodeReason}
            for status in plan.nodes.values():
                if status.status == UNREMOVABLE and status.reason is not None:
                    unremovable[status.reason.value] += 1
            for reason_value, count in unremovable.items():
                self.unremovable_nodes_count.labels(reason_value).set(count)
        elif not healthy:
            self.unneeded_nodes_count.set(0)  # the halted loop cleared every unneeded timer
        return reasons

    def _observe_removal_latency(
        self, plan: ScaleDownPlan, started: set[str], autoscaler: Autoscaler
    ) -> None:
        """node_removal_latency_seconds for the nodes whose deletion started this loop and those no
        longer unneeded; then follow the unneeded nodes of this loop's plan."""
        now = plan.now
        for name in started:
            removable_at, delay = self._unneeded.pop(name, (now, NO_DELAY))
            self.node_removal_latency_seconds.labels("true", delay).observe(max(0.0, now - removable_at))
        unneeded = [n for n in (*plan.candidate_set, *plan.waiting_for_budget) if n not in started]
        for name in self._unneeded.keys() - set(unneeded) - started:
            removable_at, delay = self._unneeded.pop(name)
            if now > removable_at:  # needed again before it could go: no latency to speak of
                self.node_removal_latency_seconds.labels("false", delay).observe(now - removable_at)
        snapshot = autoscaler.view.snapshot()
        since = autoscaler.planner.unneeded_since
        options = autoscaler.options
        for name in unneeded:
            if name not in snapshot or name not in since:
                continue
            removable_at = since.removable_at(name, ready=snapshot.node(name).ready, options=options)
            delay = self._unneeded.get(name, (removable_at, NO_DELAY))[1]
            reason = plan.nodes[name].reason if name in plan.nodes else None
            if reason is not None and reason not in _TIMER_REASONS:
                delay = str(reason)
            self._unneeded[name] = (removable_at, delay)


class LiveLedger:
    """The simulator's disruption ledger (sim/runtime/ledger.py), live, as Prometheus counters:

    - kubetide_evictions_total{workload_kind}: accepted evictions of this process's drains, by
      the kind of the pod's controller ("Pod" for a bare pod);
    - kubetide_restarts_total{workload_kind}: rollout restarts asked for (surge-before-evict);
    - kubetide_budget_wait_node_seconds_total: seconds draining nodes waited for budget, from a
      refused eviction (429) of one of its pods until none of its pods is refused any more (each
      node once however many of its pods wait);
    - kubetide_churned_nodes_total: nodes removed within CHURN_SECONDS of their creation;
    - kubetide_below_pdb_minimum_seconds_total: budget-seconds a PodDisruptionBudget's status
      said currentHealthy < desiredHealthy while a drain of ours held one of its pods, read from
      the informer cache each loop and counted until the next loop.

    Observed after each loop and each drive of the deletions between loops."""

    def __init__(self, registry: CollectorRegistry):
        metrics = MetricMaker(registry, "kubetide")
        self.evictions_total = metrics.counter(
            "evictions",
            "Pods evicted by the autoscaler's drains, by the kind of their controller.",
            ["workload_kind"],
        )
        self.restarts_total = metrics.counter(
            "restarts",
            "Rollout restarts the autoscaler asked for (surge before evict), by workload kind.",
            ["workload_kind"],
        )
        self.budget_wait_node_seconds_total = metrics.counter(
            "budget_wait_node_seconds",
            "Seconds draining nodes waited for PodDisruptionBudget budget (a refused eviction).",
        )
        self.churned_nodes_total = metrics.counter(
            "churned_nodes", f"Nodes the autoscaler removed within {CHURN_SECONDS:g}s of their creation."
        )
        self.below_pdb_minimum_seconds_total = metrics.counter(
            "below_pdb_minimum_seconds",
            "Seconds PodDisruptionBudgets were below their desired healthy pods while a drain of"
            " the autoscaler held one of their pods (each budget counted).",
        )
        self.follow()

    def follow(self) -> None:
        """A new Autoscaler (a regained lease): nothing of the previous one's is carried over."""
        self._kinds: dict[str, str] = {}  # pod key -> its controller's kind, for pods of our drains
        self._created: dict[str, float | None] = {}  # draining node -> its creationTimestamp
        self._restarts: set[tuple[str, str, str]] = set()  # (node, namespace, Deployment)
        self._refused: dict[str, tuple[float, set[str]]] = {}  # node -> (waiting since, refused keys)
        self._below: tuple[float, int] | None = None  # last loop: its time, budgets below minimum

    def observe(self, result: LoopResult, autoscaler: Autoscaler) -> None:
        now, deletions = result.now, autoscaler.actuator.deletions
        node_of: dict[str, str] = {}
        for name, d in deletions.items():
            if name not in self._created:
                snapshot = autoscaler.view.snapshot()
                self._created[name] = (
                    snapshot.node(name).meta.creation_timestamp if name in snapshot else None
                )
            for pod in (*d.pending.values(), *d.evicted.values(), *d.surged.values()):
                ref = pod.controller
                self._kinds[pod.key] = ref.kind if ref is not None else "Pod"
                node_of[pod.key] = name
            for namespace, deployment in d.restarted:
                if (name, namespace, deployment) not in self._restarts:
                    self._restarts.add((name, namespace, deployment))
                    self.restarts_total.labels("Deployment").inc()
        for key in result.evicted:
            self.evictions_total.labels(self._kinds.get(key, "Pod")).inc()
        self._observe_budget_wait(now, result, deletions, node_of)
        for name in result.deleted:
            created = self._created.pop(name, None)
            if created is not None and now - created <= CHURN_SECONDS:
                self.churned_nodes_total.inc()
        for name in (*result.failed_deletions, *(n for n in self._created if n not in deletions)):
            self._created.pop(name, None)
        for key in [k for k in self._kinds if k not in node_of]:
            del self._kinds[key]
        self._restarts = {r for r in self._restarts if r[0] in deletions}

    def _observe_budget_wait(
        self, now: float, result: LoopResult, deletions: Mapping[str, Any], node_of: Mapping[str, str]
    ) -> None:
        evicted = set(result.evicted)
        for key in result.refused_evictions:
            node = node_of.get(key)
            if node is not None:
                since, keys = self._refused.setdefault(node, (now, set()))
                keys.add(key)
        for node, (since, keys) in list(self._refused.items()):
            d = deletions.get(node)
            pending = {p.key for p in d.pending.values()} if d is not None else set()
            keys &= pending - evicted
            if not keys:  # its refused pods evicted or gone, or the drain over
                self.budget_wait_node_seconds_total.inc(max(0.0, now - since))
                del self._refused[node]

    def observe_budgets(self, now: float, autoscaler: Autoscaler) -> None:
        """Budget-seconds below the minimum since the last loop, then this loop's count."""
        if self._below is not None:
            since, count = self._below
            if count:
                self.below_pdb_minimum_seconds_total.inc(max(0.0, now - since) * count)
        ours = [
            pod
            for d in autoscaler.actuator.deletions.values()
            for pod in (*d.pending.values(), *d.evicted.values(), *d.surged.values())
        ]
        below = 0
        if ours:
            for pdb in autoscaler.view.pdbs():
                current, desired = pdb.current_healthy, pdb.desired_healthy
                if current is not None and desired is not None and current < desired:
                    below += any(pdb.matches(pod) for pod in ours)
        self._below = (now, below)


def gpu_name(node: Node) -> str:
    """CA's gpu_name label of a node: its accelerator label's value, "generic" for a GPU node
    without one, "" (not counted) for a node without GPUs."""
    if gpu_resource(node) is None:
        return ""
    for label in GPU_TYPE_LABELS:
        value = node.labels.get(label)
        if value:
            return value
    return GENERIC_GPU
