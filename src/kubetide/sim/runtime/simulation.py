"""A whole simulated cluster, wired together and driven by the scenario.

    sim = Simulation(load_scenario("nightly.yaml"), seed=7, autoscaler_factory=Autoscaler)
    result = sim.run()            # SimulationResult: summary, timeline rows, events

The autoscaler plugs in through `autoscaler_factory(options, clock, view, actions, cloud)`, which
must return an object with `run_once()`; `kubetide.autoscaler.loop.Autoscaler` has exactly that
constructor. The simulation calls `run_once()` every `scan-interval` of simulated time, and calls
the factory again when the scenario injects an `autoscalerRestart` fault (in-memory state is lost;
what the autoscaler wrote to the cluster stays).

The cluster starts warm: the initial nodes are Ready at t=0 and the initial objects' pods are
created, scheduled and Running before the first loop, so measurements start from a steady state.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, assert_never

from kubetide.autoscaler.events import StatusObject
from kubetide.autoscaler.karpenter.nodepools import NodePool
from kubetide.autoscaler.options import AutoscalerOptions
from kubetide.autoscaler.ports import CloudProvider, ClusterActions, ClusterView
from kubetide.clock import Clock, work_timer
from kubetide.durations import rfc3339
from kubetide.model import Manifests, Pod
from kubetide.model.node import ZONE_LABEL
from kubetide.sim.runtime.adapters import (
    SimClusterActions,
    SimClusterView,
    SimUsageSource,
    WorkloadStatus,
)
from kubetide.sim.runtime.adoption import adopt_pod
from kubetide.sim.runtime.autoscalercounters import AutoscalerCounters
from kubetide.sim.runtime.cloud import SimCloud
from kubetide.sim.runtime.cronjob import CronJobs
from kubetide.sim.runtime.daemonset import DaemonSets
from kubetide.sim.runtime.decisions import DecisionColumns
from kubetide.sim.runtime.deployment import Deployments
from kubetide.sim.runtime.disruption import Budgets
from kubetide.sim.runtime.engine import Engine, Timer
from kubetide.sim.runtime.events import EventLog
from kubetide.sim.runtime.eviction import EvictionApi
from kubetide.sim.runtime.faults import Faults
from kubetide.sim.runtime.hpa import HorizontalPodAutoscalers, hpa_settings
from kubetide.sim.runtime.job import Jobs
from kubetide.sim.runtime.kubelet import Kubelets
from kubetide.sim.runtime.ledger import Ledger
from kubetide.sim.runtime.metrics import Metrics
from kubetide.sim.runtime.namespaces import Namespaces
from kubetide.sim.runtime.nodelifecycle import NodeLifecycle
from kubetide.sim.runtime.replicaset import ReplicaSets
from kubetide.sim.runtime.scheduler import Scheduler
from kubetide.sim.runtime.statefulset import StatefulSets
from kubetide.sim.runtime.world import World
from kubetide.sim.spec.limits import check_timeline
from kubetide.sim.spec.scenario import (
    ApplyEvent,
    DeleteEvent,
    FaultEvent,
    ObjectRef,
    RestartEvent,
    RestartSpec,
    ScaleEvent,
    ScaleSpec,
    Scenario,
    ScenarioEvent,
    SetImageEvent,
    SetImageSpec,
)


class SupportsRunOnce(Protocol):
    def run_once(self) -> Any: ...


AutoscalerFactory = Callable[
    [AutoscalerOptions, Clock, ClusterView, ClusterActions, CloudProvider], SupportsRunOnce
]


class NoAutoscaler:
    """No autoscaler at all: the cluster runs, nothing scales (tests of the simulated components,
    and `kubetide simulate --no-autoscaler` for a baseline)."""

    def __init__(self, options, clock, view, actions, cloud):
        pass

    def run_once(self) -> None:
        return None


def default_autoscaler_factory(
    seed: int, policy: str = "kubetide", node_pools: Sequence[NodePool] = ()
) -> tuple[AutoscalerFactory, str]:
    """The autoscaler the options' policy names: kubetide's (also for `cluster-autoscaler`, whose
    flags options.py has set), its random expander seeded from the scenario, or Karpenter's with
    the scenario's NodePools. Returns (factory, name), the name being the policy's."""
    from kubetide.autoscaler.loop import Autoscaler

    def factory(options, clock, view, actions, cloud):
        if options.policy == "karpenter":
            from kubetide.autoscaler.karpenter.controller import Karpenter

            return Karpenter(options, clock, view, actions, cloud, node_pools)
        service = None
        if "grpc" in options.expander:  # an external expander service: only then import grpc
            from kubetide.grpcexpander import expander_service

            service = expander_service(options)
        return Autoscaler(
            options, clock, view, actions, cloud, seed=seed, timer=work_timer(), expander_service=service
        )

    return factory, policy


@dataclass
class SimulationResult:
    scenario: Scenario
    summary: dict[str, Any]
    timeline: list[dict[str, Any]]
    events: list[dict[str, Any]]
    markers: list[dict[str, Any]] = field(default_factory=list)  # scenario events, for plots
    warnings: list[str] = field(default_factory=list)
    status_yaml: str | None = None  # the autoscaler's last status document
    unfit_pods: dict[str, str] = field(default_factory=dict)  # pods no node group could take -> why
    # the median pod's wait from creation to binding: for comparisons of policies, not in summary.json
    pending_seconds_p50: float = 0.0


class Simulation:
    def __init__(
        self,
        scenario: Scenario,
        *,
        seed: int | None = None,
        autoscaler_factory: AutoscalerFactory | None = None,
        autoscaler_name: str | None = None,
        explain_unremovable: bool = False,
    ):
        self.scenario = scenario
        # Whether run() asks, once at the end, what would unblock the nodes still unremovable
        # (runtime/unremovable.py; kubetide's autoscaler only). `kubetide simulate`, each compared
        # setting and each sweep run ask (their summary.json files are the same run's); the
        # benchmarks and tests that time the simulation do not: it costs a few planner runs per
        # blocked node, up to find_unblocks' caps, which on a short run can exceed the run.
        self.explain_unremovable = explain_unremovable
        self.explain_seconds = 0.0  # CPU time that took (not in summary.json: not deterministic)
        self.seed = scenario.seed if seed is None else seed
        if autoscaler_factory is None:
            autoscaler_factory, default_name = default_autoscaler_factory(
                self.seed, scenario.options.policy, scenario.node_pools
            )
            autoscaler_name = autoscaler_name or default_name
        self.factory = autoscaler_factory
        self.autoscaler_name = autoscaler_name or getattr(autoscaler_factory, "__name__", "custom")
        cluster = scenario.cluster

        limits = scenario.limits
        check_timeline(
            limits, scenario.source, scenario.duration, scenario.options.scan_interval, len(scenario.groups)
        )
        self.engine = engine = Engine(self.seed, start=self.scenario.start)
        self.log = log = EventLog(engine, limits.recorded_events, scenario.source)
        self.world = world = World()
        self.kubelets = kubelets = Kubelets(engine, world, cluster)
        self.lifecycle = lifecycle = NodeLifecycle(
            engine, world, kubelets, log, cluster.notReadyTolerationSeconds
        )
        self.faults = faults = Faults(engine, world, lifecycle, log)
        self.cloud = cloud = SimCloud(engine, world, lifecycle, log, faults, scenario.groups)
        self.budgets = budgets = Budgets(world)
        self.eviction = eviction = EvictionApi(world, budgets, kubelets)
        self.replicasets = ReplicaSets(engine, world, cluster, kubelets, scenario.logarithmic_ranking)
        self.deployments = Deployments(engine, world, cluster, kubelets, self.replicasets, log)
        self.statefulsets = StatefulSets(engine, world, cluster, kubelets)
        self.daemonsets = DaemonSets(engine, world, cluster, kubelets)
        self.jobs = Jobs(engine, world, cluster, kubelets)
        self.cronjobs = CronJobs(engine, world, self.jobs, log, cluster.timeZone)
        namespaces = {ns.name: ns.labels for ns in scenario.objects.namespaces}
        self.scheduler = Scheduler(
            engine, world, log, cluster.schedulerInterval, namespaces, kubelets=kubelets, budgets=budgets
        )
        self.ledger = Ledger(engine, world, budgets, self.jobs)  # after budgets: it reads their counts
        self.metrics = metrics = Metrics(engine, world, cloud, budgets, log, self.ledger)
        self.autoscaler_counters = AutoscalerCounters(cloud)
        self.hpas = HorizontalPodAutoscalers(
            engine, world, log, scenario.usage, hpa_settings(cluster), self._scale_target
        )
        self.namespaces = Namespaces(
            world, kubelets, budgets, self.hpas, self.cronjobs, self._controller, log
        )
        self.status = WorkloadStatus(world, self.deployments)
        self.view = SimClusterView(world, budgets, self.status, StatusObject.of(scenario.options))
        self.actions = SimClusterActions(world, eviction, metrics, log, engine, self.deployments)
        eviction.on_evicted.append(self._evicted)
        # The node QoS agent (runtime/qos.py), only when the scenario has spec.qos.
        self.qos = None
        self.usage: SimUsageSource | None = None
        self.usage_attached = False  # an autoscaler took the usage source (see _new_autoscaler)
        if scenario.qos is not None:
            from kubetide.sim.runtime.qos import NodeAgents

            end = engine.start + scenario.duration
            self.qos = NodeAgents(engine, world, eviction, log, scenario.qos, end)
            # What scale-down's QoS watermark guard sees: the agents' own usage and quotas.
            self.usage = SimUsageSource(engine, world, self.qos.usage, self.qos.quotas, self.qos.config)
        faults.group_nodes = self._group_nodes
        faults.on_restart = self._restart_autoscaler
        self.autoscaler: SupportsRunOnce | None = None
        self.autoscaler_seconds = 0.0  # wall time inside run_once (not in summary.json: not deterministic)
        self._next_loop = 0.0  # when the next autoscaler loop runs
        self._drive_timer: Timer | None = None  # a wake-up for the deletions in progress
        # Called after every autoscaler loop and every drive of its deletions (benchmarks and
        # tests read the autoscaler's state there: its plan, its deletions in progress).
        self.after_autoscaler: list[Callable[[], None]] = []
        self.decisions = DecisionColumns()  # each loop's reasons, as timeline columns
        self.warnings: list[str] = list(scenario.warnings)
        self._markers: list[dict[str, Any]] = []
        self._ready = False

    # -- set-up ------------------------------------------------------------------------------
    def setup(self) -> None:
        """Initial nodes and objects, settled (scheduled and running) at t=0."""
        if self._ready:
            return
        self._ready = True
        # The objects' nodes of a group are its first instances; initialSize tops them up.
        self.cloud.adopt(self.scenario.objects.nodes)
        for group in self.cloud.groups.values():
            group.add_initial(group.config.initial_size - group.target_size())
        self.apply(self.scenario.objects, adopt=True)
        self._settle()
        self.metrics.start()
        self.hpas.start()
        self.cronjobs.start()
        start = self.engine.start
        for event in self.scenario.events:
            self.engine.at(start + event.at, self._scenario_event, event)
        self.autoscaler = self._new_autoscaler()
        if self.qos is not None:
            self.qos.start()
        self.engine.at(start, self._loop)

    def _settle(self) -> None:
        """Run controllers, scheduler and kubelets to a fixed point without letting time pass."""
        controllers = (self.deployments, self.replicasets, self.statefulsets, self.daemonsets, self.jobs)
        self.kubelets.instant = True
        log, self.deployments.log = self.deployments.log, None  # the t=0 state is no news
        try:
            for _ in range(100_000):
                progressed = False
                for controller in controllers:
                    if controller.flush():
                        progressed = True
                if self.scheduler.active:
                    self.scheduler.cancel_timer()
                    self.scheduler.run()
                    progressed = True
                if self.kubelets.start_queued():
                    progressed = True
                if not progressed:
                    break
        finally:
            self.kubelets.instant = False
            self.deployments.log = log

    def _group_nodes(self, group: str) -> list[str]:
        return [i.node_name for i in self.cloud.groups[group].sim_instances() if i.registered]

    # -- objects -----------------------------------------------------------------------------
    def apply(self, manifests: Manifests, adopt: bool = False) -> None:
        """Create the objects; with `adopt` (the scenario's initial objects) pods and nodes are
        kept as they are, with their controllers (sim/adoption.py)."""
        world = self.world
        now = self.engine.now()
        for pc in manifests.priority_classes:
            world.priority_classes[pc.name] = pc
        for cm in manifests.configmaps:
            world.configmaps[(cm.meta.namespace, cm.meta.name)] = cm
        for node in manifests.nodes:
            if node.name not in world.snapshot:
                created = node.meta.creation_timestamp if adopt and node.meta.creation_timestamp else now
                world.add_node(
                    dataclasses.replace(node, meta=dataclasses.replace(node.meta, creation_timestamp=created))
                )
        for pdb in manifests.pdbs:
            self.budgets.apply(pdb)
        for hpa in manifests.other.get("HorizontalPodAutoscaler", ()):
            self.hpas.apply(hpa)
        for cronjob in manifests.other.get("CronJob", ()):
            self.cronjobs.apply(cronjob)
        # ReplicaSets first: a Deployment adopts the ReplicaSets it already owns.
        for workload in sorted(manifests.workloads, key=lambda w: w.kind == "Deployment"):
            self._controller(workload.kind).apply(workload)
        for pod in manifests.pods:
            if not (adopt and adopt_pod(world, self.jobs, pod, now)):
                self._create_bare_pod(pod, now)

    def _create_bare_pod(self, pod: Pod, now: float) -> None:
        if self.world.pod(pod.uid) is not None:
            return
        meta = dataclasses.replace(pod.meta, creation_timestamp=now, deletion_timestamp=None)
        fresh = dataclasses.replace(
            pod,
            meta=meta,
            phase="Pending",
            ready=False,
            ready_transition=None,
            start_time=None,
            scheduled_status="",
            scheduled_reason="",
            scheduled_transition=None,
        )
        if fresh.node_name and fresh.node_name not in self.world.snapshot:
            fresh = dataclasses.replace(fresh, node_name="")
        self.world.add_pod(fresh)

    def _scale_target(self, key: str, replicas: int) -> None:
        """An HPA's write to its target's scale subresource."""
        self.ledger.load_changed()
        self._controller(key.split("/", 1)[0]).scale(key, replicas)

    def _controller(self, kind: str):
        if kind == "Deployment":
            return self.deployments
        if kind == "ReplicaSet":
            return self.replicasets
        return {"StatefulSet": self.statefulsets, "DaemonSet": self.daemonsets, "Job": self.jobs}[kind]

    # -- scenario events -----------------------------------------------------------------------
    def _scenario_event(self, event: ScenarioEvent) -> None:
        label = _describe(event)
        self._markers.append({"time": event.at, "kind": event.kind, "label": label})
        match event:
            case ScaleEvent():
                self.ledger.load_changed()
                self._scale(event.target, event)
            case ApplyEvent():
                self.ledger.load_changed()
                self.log.record("Scenario", event.field, "Normal", "Applied", label, "scenario")
                admitted, refused = self.namespaces.admit(event.manifests)
                if refused:
                    self._ignored(
                        event, refused[0], f"namespace is terminating: {', '.join(refused)} refused"
                    )
                self.apply(admitted)
            case DeleteEvent():
                self.ledger.load_changed()
                self._delete(event.target, event)
            case RestartEvent() | SetImageEvent():
                self._rollout(event.target, event, label)
            case FaultEvent():
                self.faults.inject(event.fault)
            case _:
                assert_never(event)

    def _scale(self, spec: ScaleSpec, event: ScenarioEvent) -> None:
        key = f"{spec.kind}/{spec.namespace}/{spec.name}"
        if key not in self.world.workloads:
            self._missing(event, key)
            return
        self.log.record("Scenario", key, "Normal", "Scaled", f"replicas -> {spec.replicas}", "scenario")
        if spec.kind == "Job":
            self.jobs.scale(key, spec.replicas)
        else:
            self._controller(spec.kind).scale(key, spec.replicas)

    def _delete(self, ref: ObjectRef, event: ScenarioEvent) -> None:
        key = f"{ref.kind}/{ref.namespace}/{ref.name}"
        self.log.record(
            "Scenario", key, "Normal", "Deleted", f"{ref.kind} {ref.namespace}/{ref.name} deleted", "scenario"
        )
        if ref.kind == "PodDisruptionBudget":
            if f"{ref.namespace}/{ref.name}" not in self.world.pdbs:
                self._missing(event, key)
            self.budgets.delete(f"{ref.namespace}/{ref.name}")
        elif ref.kind == "Namespace":
            self.namespaces.terminate(ref.name)
        elif ref.kind == "HorizontalPodAutoscaler":
            if not self.hpas.delete(key):
                self._missing(event, key)
        elif ref.kind == "CronJob":
            if not self.cronjobs.delete(key):
                self._missing(event, key)
        elif ref.kind == "Pod":
            pod = next(
                (p for p in self.world.pods() if p.namespace == ref.namespace and p.name == ref.name), None
            )
            if pod is None:
                self._missing(event, key)
            else:
                self.kubelets.delete(pod)
        elif key not in self.world.workloads:
            self._missing(event, key)
        else:
            self._controller(ref.kind).delete(key)

    def _rollout(self, spec: RestartSpec | SetImageSpec, event: ScenarioEvent, label: str) -> None:
        """A restart or setImage event: the Deployment's template changes and it rolls out."""
        key = f"{spec.kind}/{spec.namespace}/{spec.name}"
        if key not in self.world.workloads:
            self._missing(event, key)
            return
        if isinstance(spec, SetImageSpec):
            try:
                self.deployments.set_images(key, spec.images)
            except ValueError as exc:  # a later apply took the container away
                self._ignored(event, key, f"Deployment {spec.namespace}/{spec.name}: {exc}")
                return
            self.log.record("Scenario", key, "Normal", "ImageSet", label, "scenario")
        else:
            self.deployments.restart(key, self.engine.now())
            self.log.record("Scenario", key, "Normal", "Restarted", label, "scenario")

    def _missing(self, event: ScenarioEvent, key: str) -> None:
        self._ignored(event, key, f"no {key.replace('/', ' ', 1)}")

    def _ignored(self, event: ScenarioEvent, key: str, why: str) -> None:
        message = f"{self.scenario.source}: {event.field}: {why} at {event.at:g}s; event ignored"
        self.warnings.append(message)
        self.log.record("Scenario", key, "Warning", "ScenarioEventIgnored", message, "scenario")

    # -- the autoscaler ------------------------------------------------------------------------
    def _loop(self) -> None:
        self.metrics.c.autoscaler_loops += 1
        loop = None
        if self.autoscaler is not None:
            started = time.perf_counter()
            loop = self.autoscaler.run_once()
            self.autoscaler_seconds += time.perf_counter() - started
            registry = getattr(self.autoscaler, "registry", None)
            if registry is not None:
                self.autoscaler_counters.observe(registry)
            for hook in self.after_autoscaler:
                hook()
            depth = self.world.snapshot.depth
            if depth:
                raise RuntimeError(
                    f"the autoscaler left {depth} snapshot fork(s) open after run_once(); "
                    "ClusterView.snapshot() must be left as found"
                )
        row: dict[str, Any] = self.metrics.sample()  # with the loop's reasons, empty when it halted
        row.update(self.decisions.columns(loop))
        if self.qos is not None:
            self.qos.timeline_columns(row)
        if self.hpas.hpas:
            self.hpas.timeline_columns(row)
        self._next_loop = self.engine.now() + self.scenario.options.scan_interval
        self.engine.at(self._next_loop, self._loop)
        self._schedule_drive(after_loop=True)

    def _schedule_drive(self, *, after_loop: bool = False) -> None:
        """Wake the autoscaler's deletions at the time they ask for when it comes before the next
        loop (CA's deletions run on their own timers, not the loop's). Right after a loop that
        time may be now (node-delete-delay-after-taint 0s: the deletions it started go at once);
        after a drive it is always later, so drives never repeat at one instant."""
        next_wakeup = getattr(self.autoscaler, "next_wakeup", None)
        wake = next_wakeup() if next_wakeup is not None else None
        now = self.engine.now()
        if wake is None or wake >= self._next_loop or wake < now or (wake == now and not after_loop):
            return
        if self._drive_timer is not None and self._drive_timer.active:
            if self._drive_timer.when <= wake:
                return
            self._drive_timer.cancel()
        self._drive_timer = self.engine.at(wake, self._drive)

    def _drive(self) -> None:
        self._drive_timer = None
        drive = getattr(self.autoscaler, "drive_deletions", None)
        if drive is None:
            return
        started = time.perf_counter()
        drive()
        self.autoscaler_seconds += time.perf_counter() - started
        for hook in self.after_autoscaler:
            hook()
        if self.world.snapshot.depth:
            raise RuntimeError("the autoscaler left a snapshot fork open after drive_deletions()")
        self._schedule_drive()

    def _evicted(self, pod: Pod) -> None:
        """An accepted eviction: the autoscaler's count in its metrics; the QoS agent's do not."""
        if self.qos is None or not self.qos.evicting:
            self.metrics.evicted(pod)

    def _new_autoscaler(self) -> SupportsRunOnce:
        autoscaler = self.factory(
            self.scenario.options, self.engine.clock, self.view, self.actions, self.cloud
        )
        if self.usage is not None and hasattr(autoscaler, "usage"):
            # An autoscaler that takes a usage source (kubetide's) gets the agents' usage; the
            # factory cannot carry it, since qos.compare reruns the scenario with the same factory.
            autoscaler.usage = self.usage
            self.usage_attached = True
        return autoscaler

    def _restart_autoscaler(self) -> None:
        self.metrics.c.autoscaler_restarts += 1
        self.autoscaler = self._new_autoscaler()
        self.autoscaler_counters.restarted()

    # -- running -------------------------------------------------------------------------------
    def run(self, progress: Callable[[float], None] | None = None) -> SimulationResult:
        """Simulate the whole scenario. `progress(elapsed_seconds)` is called as time advances."""
        wall = time.perf_counter()
        self.setup()
        end = self.engine.start + self.scenario.duration
        on_step = None
        if progress is not None:
            start = self.engine.start
            step = max(1.0, self.scenario.duration / 500)
            next_report = [start]

            def on_step(now: float) -> None:
                if now >= next_report[0]:
                    next_report[0] = now + step
                    progress(now - start)

        self.engine.run_until(end, on_step)
        if progress is not None:
            progress(self.scenario.duration)
        self.scheduler.close()
        summary = self.summary(wall_seconds=time.perf_counter() - wall)
        if self.usage_attached and self.scenario.options.scale_down_enabled:
            from kubetide.sim.runtime.qosguard import guard_summary

            summary["qos"]["scale_down_guard"] = guard_summary(self.scenario, summary)
        unremovable = self._unremovable_at_end()
        if unremovable is not None:
            summary["scale_down"]["unremovable_at_end"] = unremovable
        return SimulationResult(
            scenario=self.scenario,
            summary=summary,
            timeline=self.metrics.timeline,
            events=self.log.entries,
            markers=self._markers,
            warnings=self.warnings,
            status_yaml=self._status_yaml(),
            unfit_pods=dict(self.decisions.unfit),
            pending_seconds_p50=self.metrics.pending_seconds_percentile(50),
        )

    def _unremovable_at_end(self) -> dict[str, Any] | None:
        """The nodes kubetide's autoscaler could not remove at the end, and what would unblock each
        (runtime/unremovable.py), or None (another autoscaler, scale-down off, not asked)."""
        from kubetide.autoscaler.loop import Autoscaler

        if not (self.explain_unremovable and isinstance(self.autoscaler, Autoscaler)):
            return None
        from kubetide.sim.runtime.unremovable import unremovable_at_end

        started = time.process_time()
        try:
            return unremovable_at_end(
                self.scenario.options,
                self.view,
                self.cloud,
                self.engine.now(),
                timer=work_timer(),
                usage=self.usage if self.usage_attached else None,
                namespaces={ns.name: ns.labels for ns in self.scenario.objects.namespaces},
            )
        finally:
            self.explain_seconds = time.process_time() - started

    def _status_yaml(self) -> str | None:
        where = self.view.status_object
        cm = self.view.configmap(where.namespace, where.name)
        return None if cm is None else cm.data.get("status")

    def _pods_by_zone(self) -> dict[str, int]:
        """Running pods (DaemonSet pods aside) per zone, when nodes carry zone labels."""
        snapshot = self.world.snapshot
        counts: dict[str, int] = {}
        for node in snapshot.nodes():
            zone = _zone_of(node)
            if not zone:
                continue
            counts.setdefault(zone, 0)
            for pod in snapshot.pods_on(node.name).values():
                if pod.phase == "Running" and not pod.is_terminating and not pod.is_daemonset:
                    counts[zone] += 1
        return dict(sorted(counts.items()))

    def _autoscaler_summary(self) -> dict[str, Any]:
        """cluster_health and node_groups (sim/runtime/autoscalercounters.py), when the autoscaler
        keeps a cluster-state registry. After an autoscalerRestart they count from the restart."""
        registry = getattr(self.autoscaler, "registry", None)
        return self.autoscaler_counters.summary(registry, self.engine.now())

    def summary(self, wall_seconds: float) -> dict[str, Any]:
        c = self.metrics.c
        node_seconds = self.metrics.node_seconds()
        groups = {}
        for name, group in self.cloud.groups.items():
            gauges = self.metrics.groups[name]
            hours = node_seconds[name] / 3600
            groups[name] = {
                "initial": group.config.initial_size,
                "final": gauges.registered,
                "target": group.target_size(),
                "node_hours": round(hours, 3),
                "cost": round(hours * group.config.price, 4),
            }
        node_hours = sum(node_seconds.values()) / 3600
        pending = self.world.pending.values()
        summary: dict[str, Any] = {
            "scenario": self.scenario.name,
            "seed": self.seed,
            "start": rfc3339(self.engine.start),  # the wall time simulated second 0 stands for
            "simulated_seconds": round(self.scenario.duration, 3),
            "wall_seconds": round(wall_seconds, 3),
            "autoscaler": self.autoscaler_name,
            "nodes": {
                "initial": self.metrics.initial_nodes,
                "final": len(self.world.snapshot),
                "peak": c.peak_nodes,
            },
            "node_hours": round(node_hours, 3),
            "cost": round(sum(g["cost"] for g in groups.values()), 4),
            "pods": {
                "pending_pod_seconds": round(self.metrics.pending_pod_seconds(), 3),
                "max_pending": self.metrics.max_pending(),
                "pending_seconds_p99": self.metrics.pending_seconds_p99(),
                "pending_at_end": len(self.world.pending),
                "unschedulable_at_end": sum(1 for p in pending if p.is_unschedulable),
                "running_at_end": self.metrics.running,
                "created": self.world._uids,
                "jobs_completed": len(self.jobs.completed_jobs),
            },
            "scale_up": self.metrics.scale_up_counts(),
            "scale_down": {
                "nodes_removed": c.nodes_removed,
                "empty_removed": c.empty_removed,
                "drained_removed": c.drained_removed,
                "max_concurrent_drains": c.max_concurrent_drains,
                "first_removal_at": None if c.first_removal_at is None else round(c.first_removal_at, 3),
                "last_removal_at": None if c.last_removal_at is None else round(c.last_removal_at, 3),
            },
            "evictions": c.evictions,
            "evictions_refused": c.evictions_refused,
            "node_controller_evictions": self.lifecycle.evictions,
            "disruption": self.ledger.result().as_dict(),
            "invariants": {
                "pdb_violations": c.pdb_violations,
                "pods_lost": c.pods_lost,
                "nodes_deleted_with_pods": c.nodes_deleted_with_pods,
            },
            "groups": groups,
            **self._autoscaler_summary(),
            "autoscaler_loops": c.autoscaler_loops,
            "autoscaler_restarts": c.autoscaler_restarts,
            "faults_injected": self.faults.injected,
            "scheduler": {"passes": self.scheduler.passes, "bindings": self.scheduler.bound},
            "events": dict(sorted(self.log.reasons.items())),
        }
        zones = self._pods_by_zone()
        if zones:
            summary["pods"]["by_zone_at_end"] = zones
        if self.qos is not None:
            summary["qos"] = self.qos.summary()
        if self.hpas.history:
            summary["hpa"] = self.hpas.summary()
        if self.cronjobs.cronjobs or self.cronjobs.started:
            summary["cronjobs"] = self.cronjobs.summary()
        summary["downscale"] = {"deletion_age_ratio": self.replicasets.age_ratio.as_dict()}
        return summary


def _zone_of(node) -> str:
    return node.labels.get(ZONE_LABEL, "")


def _describe(event: ScenarioEvent) -> str:
    match event:
        case ScaleEvent(target=target):
            return f"scale {target.kind} {target.name} to {target.replicas}"
        case ApplyEvent(manifests=manifests):
            count = (
                len(manifests.workloads) + len(manifests.pods) + len(manifests.pdbs) + len(manifests.nodes)
            )
            return f"apply {count} object{'s' if count != 1 else ''}"
        case DeleteEvent(target=ref):
            return f"delete {ref.kind} {ref.name}"
        case RestartEvent(target=restart):
            return f"restart {restart.kind} {restart.name}"
        case SetImageEvent(target=set_image):
            images = ", ".join(f"{name}={image}" for name, image in set_image.images.items())
            return f"set image {set_image.kind} {set_image.name} {images}"
        case FaultEvent(fault=fault):
            label = fault.type
            if fault.nodeGroup:
                label += f" {fault.nodeGroup}"
            if fault.count:
                label += f" x{fault.count}"
            return label
        case _:
            assert_never(event)
