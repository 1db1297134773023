"""`kubetide qos-agent`: the node QoS agent on the node it runs on (a DaemonSet, deploy/qos-agent).

Every --interval it reads the node's usage (/proc and the pod cgroups, or the kubelet's summary
API), and when a NodeQOS rule's watermark is crossed it throttles (the pod cgroup's CFS quota),
evicts (the Eviction API: PodDisruptionBudgets hold) or taints the node, just enough to get back
under it: the decisions of `kubetide qos` and the simulator, made by the same code. SIGTERM gives
every throttled pod its original quota back and exits 0.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
from pathlib import Path

from kubetide.durations import parse_duration
from kubetide.errors import UserError

log = logging.getLogger("kubetide.agent")

DEFAULT_INTERVAL = "10s"  # crane-agent's collect interval
DEFAULT_ADDRESS = ":8086"
DEFAULT_STATE_FILE = "/var/lib/kubetide-qos-agent/throttle.json"
SYNC_TIMEOUT_SECONDS = 30.0


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "qos-agent",
        help="run the node QoS agent on this node (throttle, evict, disable scheduling)",
        description=__doc__.split("\n\n")[0].replace("`", ""),
    )
    parser.add_argument("--kubeconfig", help="kubeconfig file (default: the pod's service account)")
    parser.add_argument("--node-name", default=None, help="this node's name (default: $NODE_NAME)")
    parser.add_argument("--proc-root", default="/proc", help="the host's /proc (default /proc)")
    parser.add_argument(
        "--cgroup-root", default="/sys/fs/cgroup", help="the host's cgroup mount (default /sys/fs/cgroup)"
    )
    parser.add_argument(
        "--cgroup-driver",
        choices=("auto", "cgroupfs", "systemd"),
        default="auto",
        help="the kubelet's cgroup driver (default: detected)",
    )
    parser.add_argument(
        "--usage-source",
        choices=("cgroup", "summary"),
        default="cgroup",
        help="/proc and pod cgroups, or the kubelet's summary API through the API server",
    )
    parser.add_argument("--interval", default=DEFAULT_INTERVAL, help="time between samples (default 10s)")
    parser.add_argument(
        "--address", default=DEFAULT_ADDRESS, help="/metrics and /health-check (default :8086)"
    )
    parser.add_argument(
        "--state-file",
        default=DEFAULT_STATE_FILE,
        help="where throttled pods' original quotas are kept across restarts (on a hostPath)",
    )
    parser.add_argument("--dry-run", action="store_true", help="log the decisions; change nothing")
    parser.set_defaults(run=run)


def run(args) -> int:
    node_name = args.node_name or os.environ.get("NODE_NAME")
    if not node_name:
        raise UserError(
            "qos-agent: no --node-name and no NODE_NAME in the environment (the downward API sets it)"
        )
    try:
        interval = parse_duration(args.interval)
    except ValueError as exc:
        raise UserError(f"qos-agent: --interval: {exc}") from None
    if interval <= 0:
        raise UserError(f"qos-agent: --interval must be positive, got {args.interval}")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname).1s %(name)s] %(message)s")

    # Heavy imports after the flags are known good.
    from kubetide.agent.actuator import NodeActuator, node_events
    from kubetide.agent.cgroups import CgroupError, detect_layout
    from kubetide.agent.loop import NodeAgentLoop
    from kubetide.agent.permissions import AGENT_PERMISSIONS, SUMMARY_PERMISSION
    from kubetide.agent.throttle import CgroupThrottler
    from kubetide.agent.usage import CgroupUsageSource, SummaryUsageSource, UsageSource, read_cpu_ticks
    from kubetide.agent.watch import CRANE_RESOURCES, NodeWatch
    from kubetide.clock import WallClock
    from kubetide.kube.client import ApiError, connect
    from kubetide.kube.permissions import check_permissions
    from kubetide.kube.server import HealthCheck, StatusServer, parse_address

    # Everything that can be checked on the node first.
    parse_address(args.address)
    layout = detect_layout(Path(args.cgroup_root), args.cgroup_driver)
    proc_root = Path(args.proc_root)
    if args.usage_source == "cgroup":
        try:
            read_cpu_ticks(proc_root)
        except (CgroupError, ValueError) as exc:
            raise UserError(f"qos-agent: --proc-root={proc_root}: {exc}") from None
    # A dry run neither reads nor writes the state file: restoring what an earlier run throttled
    # (when no NodeQOS selects the node, or at exit) would be a change.
    state_file = None if args.dry_run else Path(args.state_file)
    throttler = CgroupThrottler(
        lambda pod: layout.pod(pod.uid, pod.qos_class), state_file, cgroup_root=Path(args.cgroup_root)
    )

    client = connect(args.kubeconfig)
    try:
        client.request("GET", f"/api/v1/nodes/{node_name}", timeout=10.0)
    except ApiError as exc:
        if exc.status == 404:
            raise UserError(f"qos-agent: --node-name={node_name}: no such Node") from None
        raise UserError(f"{client.source}: {exc.message if exc.status == 0 else exc}") from None
    summary = (SUMMARY_PERMISSION,) if args.usage_source == "summary" else ()
    check_permissions(client, (*AGENT_PERMISSIONS, *summary), "")
    for resource in CRANE_RESOURCES:
        try:
            client.request("GET", resource.list_path, query={"limit": "1"}, timeout=10.0)
        except ApiError as exc:
            if exc.status != 404:
                raise UserError(f"{client.source}: {exc}") from None
            raise UserError(
                f"qos-agent: {resource.kind} ({resource.group_version}) is not served by the API server: "
                "install the crane CRDs (deploy/qos-agent/crds.yaml)"
            ) from None

    clock = WallClock()
    usage: UsageSource = (
        CgroupUsageSource(proc_root, layout)
        if args.usage_source == "cgroup"
        else SummaryUsageSource(client, node_name)
    )
    watch = NodeWatch(client, node_name)
    unsynced = watch.start(SYNC_TIMEOUT_SECONDS)
    if unsynced:
        watch.stop()
        raise UserError(
            f"qos-agent: cannot list {'; '.join(unsynced)} (are the crane CRDs installed? deploy/qos-agent has them)"
        )
    actuator = None if args.dry_run else NodeActuator(client, clock, throttler)
    events = None if args.dry_run else node_events(client, clock, node_name)
    loop = NodeAgentLoop(watch, usage, throttler, actuator, events, clock)
    health = HealthCheck(max_inactivity=max(600.0, 3 * interval))
    server = StatusServer(args.address, loop.metrics.exposition, health)

    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    log.info(
        "qos-agent on node %s: cgroup v%d (%s driver), usage from %s, every %gs%s; metrics on port %d",
        node_name,
        layout.version,
        layout.driver,
        args.usage_source,
        interval,
        " (dry run)" if args.dry_run else "",
        server.port,
    )
    health.start_monitoring()
    try:
        while not stop.is_set():
            try:
                sample = loop.sample()
                if sample.skipped:
                    log.info("sample: %s", sample.skipped)
                health.loop_finished(True)
            except Exception:  # a bug or an unexpected node state: log it, try again next sample
                log.exception("sample failed")
                health.loop_finished(False)
            stop.wait(interval)
    finally:
        restored = loop.restore_all()
        if restored:
            log.info("restored the cpu quota of %s", ", ".join(restored))
        watch.stop()
        server.close()
    return 0
