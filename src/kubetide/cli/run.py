"""`kubetide run`: the autoscaler on a live cluster.

    kubetide run --kubeconfig PATH --cloud-provider kwok --node-groups GROUPS.yaml [--FLAG=VALUE ...]
    kubetide run --kubeconfig PATH --cloud-provider clusterapi [--node-group-auto-discovery=clusterapi:...]
    kubetide run --kubeconfig PATH --cloud-provider aws [--nodes=MIN:MAX:ASG ...] [--node-group-auto-discovery=asg:tag=...]

Every autoscaler flag scenarios accept is taken as the Cluster Autoscaler spells it on its
command line (`--scale-down-unneeded-time=2m`, `--expander=least-waste`), beside the flags of the
process itself (leader election, the status ConfigMap, the HTTP address, client rate limits).

Nothing is written to the cluster before every check has passed: flags, the node-groups file,
the kubeconfig, the API server's reachability, and each permission kubetide will use. Then the
informers fill their caches, the replica waits for the leader lease, and the same
`Autoscaler.run_once()` the simulator runs is called every --scan-interval (earlier when new
unschedulable pods appear; never two at once). Between loops, deletions in progress are driven
when their timers say (`Autoscaler.drive_deletions()` at `next_wakeup()`: an empty node goes
--node-delete-delay-after-taint after its taint, as CA's deletion goroutines do, not at the next
loop). SIGTERM or SIGINT ends the current loop, releases the lease and exits 0.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import socket
import threading
import time
import uuid
from collections.abc import Sequence

from kubetide.cli.output import warn
from kubetide.errors import ManifestError, UserError
from kubetide.grpcexpander import expander_service

log = logging.getLogger("kubetide.run")

# After a loop, an early wake-up for new unschedulable pods waits at least this long, so that a
# burst of pod creations is answered by one loop rather than one per pod.
MIN_LOOP_GAP_SECONDS = 1.0
INFORMER_SYNC_TIMEOUT = 120.0


def _duration(text: str) -> float:
    from kubetide.durations import parse_duration

    try:
        seconds = parse_duration(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    if seconds <= 0:
        raise argparse.ArgumentTypeError(f"must be positive, got {text!r}")
    return seconds


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text!r}")
    return value


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {text!r}")
    return value


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "run",
        help="run the autoscaler against a live cluster",
        description="Run the autoscaler against a live cluster. Any Cluster Autoscaler flag kubetide "
        "supports may follow, as --FLAG=VALUE (e.g. --scale-down-unneeded-time=2m); a boolean alone "
        "means true (--leader-elect, --write-status-configmap=false), as on CA's command line.",
        # Go's flags have no abbreviations: --leader-elect is a flag of its own, not a prefix.
        allow_abbrev=False,
    )
    add = parser.add_argument
    add("--kubeconfig", metavar="PATH", help="kubeconfig file (default: the pod's in-cluster configuration)")
    add("--context", metavar="NAME", help="kubeconfig context (default: the current one)")
    add(
        "--cloud-provider", required=True, choices=["kwok", "clusterapi", "aws"], help="where nodes come from"
    )
    add("--node-groups", metavar="GROUPS.yaml", help="kwok: node groups (the nodeGroups schema)")
    add(
        "--node-group-auto-discovery",
        action="append",
        default=[],
        metavar="SPEC",
        help="clusterapi: clusterapi:namespace=NS,clusterName=NAME,LABEL=VALUE; "
        "aws: asg:tag=KEY[=VALUE],... (repeatable)",
    )
    add(
        "--nodes",
        action="append",
        default=[],
        metavar="MIN:MAX:ASG_NAME",
        help="aws: a node group (repeatable)",
    )
    add("--namespace", default="kube-system", help="for the status ConfigMap and the lease (kube-system)")
    # default: the options' (autoscaler/options.py STATUS_CONFIG_MAP_NAME, not imported for --help)
    add("--status-config-map-name", metavar="NAME")
    # --write-status-configmap and --leader-elect (RUN_BOOLEANS) are read with the autoscaler's
    # flags, as Go booleans: argparse has no option that is both `--flag` and `--flag=false`.
    add("--address", default=":8085", help="where /metrics and /health-check are served (:8085)")
    add("--leader-elect-lease-duration", type=_duration, default=15.0, metavar="DURATION")
    add("--leader-elect-renew-deadline", type=_duration, default=10.0, metavar="DURATION")
    add("--leader-elect-retry-period", type=_duration, default=2.0, metavar="DURATION")
    add("--leader-elect-resource-name", default="cluster-autoscaler", metavar="NAME")
    add("--kube-client-qps", type=_positive_float, default=5.0, metavar="QPS")
    add("--kube-client-burst", type=_positive_int, default=10, metavar="N")
    add(
        "--usage-metrics-interval",
        type=_duration,
        default=0.0,
        metavar="DURATION",
        help="read metrics.k8s.io and crane's NodeQOS this often, so scale-down keeps destinations "
        "under the node QoS agent's watermarks (0, the default: off)",
    )
    add("--max-inactivity", type=_duration, default=600.0, metavar="DURATION")
    add("--max-failing-time", type=_duration, default=900.0, metavar="DURATION")
    add(
        "--v",
        "-v",
        type=int,
        default=0,
        metavar="LEVEL",
        help="log verbosity, klog's: 0 every action (scale-up, taint, drain, deletion, abandon, halt), "
        "4 every loop and why each node stays, 8 every HTTP request",
    )
    add(
        "--logging-format",
        choices=["text", "json"],
        default="text",
        help="text (klog's header) or json (component-base's: one object a line)",
    )
    parser.set_defaults(run=run, accepts_extra_flags=True)


# CA's boolean flags that `kubetide run` acts on itself, with CA's defaults.
RUN_BOOLEANS = {"leader-elect": True, "write-status-configmap": True}


def parse_autoscaler_flags(extra: Sequence[str], booleans: dict[str, bool] | None = None):
    """The flags argparse did not declare, read as CA's command line reads them (options.py):
    the autoscaler's options, and RUN_BOOLEANS' values into `booleans`. Every mistake is said,
    in one line."""
    from kubetide.autoscaler.options import FlagErrors, parse_options

    warnings: list[str] = []
    ignored: list[str] = []
    infrastructure: dict[str, object] = {}
    try:
        options = parse_options(
            list(extra), "run", field="", warnings=warnings, ignored=ignored, infrastructure=infrastructure
        )
    except FlagErrors as exc:
        said = "; ".join(_refusal(e) for e in exc.errors)
        raise UserError(f"run: {len(exc.errors)} flags refused: {said}") from None
    except ManifestError as exc:
        raise UserError(f"run: {_refusal(exc)}") from None
    if options.policy == "karpenter":
        raise UserError("run: --policy=karpenter runs in the simulator only (kubetide simulate)")
    warn(f"run: --{w}" for w in warnings)
    others = [name for name in ignored if name not in RUN_BOOLEANS]
    if others:
        warn([f"run: ignored, Cluster Autoscaler infrastructure flags: {', '.join(others)}"])
    if booleans is not None:
        booleans.update({name: bool(infrastructure.get(name, on)) for name, on in RUN_BOOLEANS.items()})
    return options


def _refusal(error: ManifestError) -> str:
    # A flag is named by its name; a stray argument ("[3]": its place) by what it is.
    return error.message if error.field.startswith("[") else f"--{error.field}: {error.message}"


def run(args) -> int:
    # The status ConfigMap's place is an autoscaler option (events about the cluster go there
    # too): checked as every other flag, one line and exit 2 for a name the API would refuse.
    booleans: dict[str, bool] = {}
    options = parse_autoscaler_flags(
        [
            *getattr(args, "extra_flags", []),
            f"--namespace={args.namespace}",
            *(
                [f"--status-config-map-name={name}"]
                if (name := args.status_config_map_name) is not None
                else []
            ),
        ],
        booleans,
    )
    args.leader_elect = booleans["leader-elect"]
    args.write_status_configmap = booleans["write-status-configmap"]
    if args.leader_elect and not (
        args.leader_elect_retry_period < args.leader_elect_renew_deadline < args.leader_elect_lease_duration
    ):
        raise UserError(
            "run: leader election needs retry period < renew deadline < lease duration (got "
            f"{args.leader_elect_retry_period:g}s, {args.leader_elect_renew_deadline:g}s, "
            f"{args.leader_elect_lease_duration:g}s)"
        )
    from kubetide.kube.logs import configure

    configure(args.v, args.logging_format)
    # Heavy imports after the flags are known good: a typo answers at once.
    from kubetide.cloud.kwok import KwokCloudProvider
    from kubetide.kube.client import ApiError, connect
    from kubetide.kube.permissions import (
        CLUSTERAPI,
        KWOK_NODES,
        LEADER_ELECTION,
        PERMISSIONS,
        SURGE_BEFORE_EVICT,
        check_permissions,
        missing_permissions,
    )
    from kubetide.kube.server import parse_address

    # Everything that can be checked without the network first.
    parse_address(args.address)
    if args.nodes and args.cloud_provider != "aws":
        raise UserError(f"run: --nodes is for --cloud-provider=aws, not {args.cloud_provider}")
    if args.cloud_provider == "clusterapi":
        from kubetide.cloud.providers import clusterapi_cloud_factory

        cloud_factory = clusterapi_cloud_factory(
            args.node_group_auto_discovery, args.node_groups, INFORMER_SYNC_TIMEOUT
        )
        provider_permissions = CLUSTERAPI
    elif args.cloud_provider == "aws":
        from kubetide.cloud.providers import aws_cloud_factory

        build_aws = aws_cloud_factory(args.nodes, args.node_group_auto_discovery, args.node_groups)
        provider_permissions = ()  # AWS credentials come from boto3's chain, not Kubernetes RBAC

        def cloud_factory(args, client, snapshot):
            return build_aws(args, client, snapshot)
    else:
        if not args.node_groups:
            raise UserError("run: --cloud-provider=kwok needs --node-groups=GROUPS.yaml")
        KwokCloudProvider.check_file(args.node_groups)
        provider_permissions = (KWOK_NODES,)

        def cloud_factory(args, client, snapshot):
            return KwokCloudProvider.from_file(args.node_groups, client, snapshot)

    client = connect(args.kubeconfig, args.context, qps=args.kube_client_qps, burst=args.kube_client_burst)
    try:
        version = client.request("GET", "/version", timeout=10.0)
    except ApiError as exc:
        raise UserError(f"{client.source}: {exc.message if exc.status == 0 else exc}") from None
    needed = (
        *PERMISSIONS,
        *provider_permissions,
        *((LEADER_ELECTION,) if args.leader_elect else ()),
        *((SURGE_BEFORE_EVICT,) if options.surge_before_evict else ()),
    )
    if args.usage_metrics_interval:
        from kubetide.kube.usage import USAGE_PERMISSIONS

        needed = (*needed, *USAGE_PERMISSIONS)
    check_permissions(client, needed, args.namespace)
    log.info(
        "API server %s (%s): every permission kubetide uses is granted",
        client.server,
        version.get("gitVersion"),
    )
    if not options.surge_before_evict and missing_permissions(client, (SURGE_BEFORE_EVICT,), args.namespace):
        # A Deployment may still opt in by its annotation: without the permission its restart
        # would be refused in the middle of a drain, loop after loop. Said once, here; the plan
        # says it of each node it keeps (autoscaler/scaledown/planning/surge.py).
        from kubetide.autoscaler.scaledown.planning import SURGE_ANNOTATION

        log.warning(
            'surge before evict: Deployments annotated %s: "true" are not surged: cannot %s '
            "(add the kustomize component %s to your overlay: see docs/install.md)",
            SURGE_ANNOTATION,
            SURGE_BEFORE_EVICT.describe("patch", args.namespace),
            SURGE_BEFORE_EVICT.granted_by,
        )
        options = options.with_values(may_restart_deployments=False)
    return Runner(args, options, client, cloud_factory).serve()


class Runner:
    """The process: caches, lease, HTTP endpoints, and the loop."""

    def __init__(self, args, options, client, cloud_factory) -> None:
        from kubetide.clock import WallClock
        from kubetide.kube.metrics import AutoscalerMetrics
        from kubetide.kube.server import HealthCheck, StatusServer
        from kubetide.kube.view import KubeClusterView

        self.args, self.options, self.client = args, options, client
        self.clock = WallClock()
        self.stop = threading.Event()
        self.metrics = AutoscalerMetrics()
        self._last_loop_seconds = 0.0
        self.health = HealthCheck(args.max_inactivity, args.max_failing_time)
        self.server = StatusServer(args.address, self.metrics.exposition, self.health)
        self.view = KubeClusterView(client, namespace=args.namespace)
        self.cloud = cloud_factory(args, client, self.view.snapshot)
        self.expander_service = expander_service(options)  # --expander=grpc's, checked before acting
        self.identity = f"{socket.gethostname()}_{uuid.uuid4()}"
        from kubetide.kube import events
        from kubetide.kube.client import connect

        def own_client(qps: float = args.kube_client_qps, burst: int = args.kube_client_burst):
            return connect(args.kubeconfig, args.context, qps=qps, burst=burst)

        # Events and the lease each get a client (and so a rate limiter) of their own: a hundred
        # events must not hold the loop for twenty seconds, and a renewal must never queue behind
        # a drain's evictions. The events' rate is theirs, not --kube-client-qps: at 5 a second a
        # 2,000-pod burst's TriggeredScaleUps would be written minutes after the scale-up.
        event_client = own_client(
            max(args.kube_client_qps, events.WRITE_QPS), max(args.kube_client_burst, events.WRITE_BURST)
        )
        self.events = events.BackgroundEvents(
            events.EventRecorder(event_client, self.clock), writers=events.WRITERS
        )
        self.elector = None
        if args.leader_elect:
            from kubetide.kube.leader import LeaderElector

            lease_client = own_client()
            self.elector = LeaderElector(
                lease_client,
                args.namespace,
                args.leader_elect_resource_name,
                self.identity,
                lease_duration=args.leader_elect_lease_duration,
                renew_deadline=args.leader_elect_renew_deadline,
                retry_period=args.leader_elect_retry_period,
            )

    def _leading(self) -> bool:
        return self.elector is None or self.elector.is_leader()

    def serve(self) -> int:
        previous = {sig: signal.signal(sig, self._on_signal) for sig in (signal.SIGTERM, signal.SIGINT)}
        try:
            self.view.start()
            missing = self.view.wait_for_sync(INFORMER_SYNC_TIMEOUT)
            if missing:
                raise UserError(
                    f"{self.client.source}: caches not filled within {INFORMER_SYNC_TIMEOUT:g}s: {'; '.join(missing)}"
                )
            log.info(
                "caches filled: %d nodes, %d pods; serving /metrics and /health-check on port %d",
                len(self.view.snapshot()),
                self.view.pod_count(),
                self.server.port,
            )
            if self.elector is not None:
                self.elector.run_in_background(self.stop)
            while not self.stop.is_set():
                if self.elector is not None:
                    log.info(
                        "waiting for the lease %s/%s",
                        self.args.namespace,
                        self.args.leader_elect_resource_name,
                    )
                    if not self.elector.wait_until_leader(self.stop):
                        break
                    log.info("became the leader as %s", self.identity)
                self._lead()
        finally:
            self.stop.set()
            # What this leader said, written before another may speak: within the renew
            # deadline, the time a leader has to give up; node events first (kube/events.py).
            self.events.close(self.args.leader_elect_renew_deadline)
            if self.elector is not None:
                self.elector.release()
            self.view.stop()
            self.server.close()
            for sig, handler in previous.items():
                signal.signal(sig, handler)
        log.info("stopped")
        return 0

    def _on_signal(self, signum, _frame) -> None:
        log.info("%s received: finishing the current loop", signal.Signals(signum).name)
        self.stop.set()
        self.view.new_unschedulable.set()  # wake a sleeping loop

    def _lead(self) -> None:
        """Run loops while this replica leads. A fresh Autoscaler each time it (re)gains the
        lease: what another leader did meanwhile is read back from the cluster (restart safety),
        never assumed from this replica's memory."""
        from kubetide.autoscaler.loop import Autoscaler
        from kubetide.kube.actions import KubeClusterActions

        actions = KubeClusterActions(
            self.client,
            self.clock,
            namespace=self.options.namespace,
            status_configmap=self.options.status_config_map_name,
            write_status_configmap=self.args.write_status_configmap,
            may_write=self._leading,
            events=self.events,
        )
        usage = None
        if self.args.usage_metrics_interval:
            from kubetide.kube.usage import KubeUsageSource

            usage = KubeUsageSource(self.client, self.view.snapshot, self.args.usage_metrics_interval)
        autoscaler = Autoscaler(
            self.options,
            self.clock,
            self.view,
            actions,
            self.cloud,
            seed=os.getpid(),
            timer=time.perf_counter,
            usage=usage,
            expander_service=self.expander_service,
        )
        self.health.start_monitoring()
        try:
            while not self.stop.is_set():
                if not self._leading():
                    log.warning("lost the lease: stopped acting")
                    return
                started = time.monotonic()
                self._loop_once(autoscaler, actions)
                self._sleep_until_next(started, autoscaler, actions)
                self.metrics.observe_wait(time.monotonic() - started - self._last_loop_seconds)
        finally:
            self.health.stop_monitoring()
            autoscaler.close()
            if self.expander_service is not None:
                self.expander_service.close()

    def _loop_once(self, autoscaler, actions) -> None:
        started = time.perf_counter()
        self.view.new_unschedulable.clear()
        self.view.sync()
        polled = time.perf_counter()
        try:
            result = autoscaler.run_once()
        except Exception:
            # A bug, not bad input: log it with its traceback, count it, keep the process alive
            # (the health check turns red if it keeps happening).
            log.exception("loop failed")
            self.metrics.observe_failed_loop(time.perf_counter() - started)
            self.health.loop_finished(succeeded=False)
            return
        ran = time.perf_counter()
        actions.events.flush()
        duration = time.perf_counter() - started
        self._last_loop_seconds = duration
        reasons = self.metrics.observe_loop(
            result, duration, autoscaler, durations={"poll": polled - started, "autoscaling": ran - polled}
        )
        self.health.loop_finished(succeeded=True)
        self._log_result(result, duration, reasons)

    def _log_result(self, result, duration: float, reasons: dict[str, str]) -> None:
        from kubetide.cli.run_log import loop_lines

        lines = loop_lines(result, reasons)
        for line in lines:
            log.log(line.level, "%s", line.message, extra={"fields": line.fields})
        # --v=4: every loop, even one with nothing to do.
        log.debug(
            "loop %.3fs: %d actions", duration, len(lines), extra={"fields": {"seconds": round(duration, 3)}}
        )
        if log.isEnabledFor(logging.DEBUG) and result.scale_down is not None:
            # --v=4: why each node stays, as `kubetide plan` would say it.
            plan = result.scale_down
            if plan.cooldown:
                log.debug("scale-down in cooldown: %s", plan.cooldown)
            for status in plan.nodes.values():
                log.debug("  %s", status.explain())

    def _sleep_until_next(self, started: float, autoscaler=None, actions=None) -> None:
        """Sleep until scan-interval after the loop started, or until new unschedulable pods
        appear (but at least MIN_LOOP_GAP_SECONDS after this loop). Meanwhile, drive the
        deletions in progress when their timers say (`Autoscaler.next_wakeup`: the end of
        node-delete-delay-after-taint, an eviction retry, a batch), as CA's goroutines do."""
        interval = self.options.scan_interval
        earliest = time.monotonic() + MIN_LOOP_GAP_SECONDS
        deadline = started + interval
        woken = self.view.new_unschedulable
        driven_for: float | None = None  # the wake-up last driven: never twice (a failing drive)
        while not self.stop.is_set():
            now = time.monotonic()
            if now >= deadline:
                return
            until = deadline
            wake = autoscaler.next_wakeup() if autoscaler is not None else None
            if wake is not None and (driven_for is None or wake > driven_for):
                due = now + (wake - self.clock.now())  # the autoscaler's time is the Clock's
                if due <= now:
                    if not self._leading():
                        return
                    driven_for = wake
                    self._drive_deletions(autoscaler, actions)
                    continue
                until = min(until, due)
            if woken.is_set():
                if now >= earliest:
                    return
                self.stop.wait(min(earliest, until) - now)
                continue
            woken.wait(until - now)

    def _drive_deletions(self, autoscaler, actions) -> None:
        self.view.sync()
        try:
            result = autoscaler.drive_deletions()
        except Exception:
            log.exception("driving deletions failed")
            return
        if actions is not None:
            actions.events.flush()
        from kubetide.cli.run_log import deletion_lines

        reasons = self.metrics.observe_deletions(result, autoscaler)
        for line in deletion_lines(result, reasons):
            log.log(line.level, "%s", line.message, extra={"fields": line.fields})
