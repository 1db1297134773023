"""`kubetide schedule CLUSTER.yaml [--json]`: place every pending pod on the existing nodes as
kube-scheduler would, and say why the rest cannot run.

CLUSTER.yaml is a dump such as `kubectl get nodes,pods -A -o yaml` prints (Namespaces too, when
pod affinity terms use namespaceSelector). Bound pods occupy their nodes; pending pods (no
nodeName, not finished) are placed one at a time in scheduling-queue order (priority, then age)
with the filters and scoring of kubetide.scheduling, each placement visible to the next. The
reason shown for a pod that fits nowhere is kube-scheduler's summary against the final state,
which is what its next retry would report.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kubetide.cli.json_output import add_json_argument, document
from kubetide.cli.now import add_now_argument, parse_now, resolve_now
from kubetide.cli.output import console, line_width, print_json, warn
from kubetide.cli.progress import Display
from kubetide.durations import rfc3339

# The model, the snapshot and the scheduler are imported by `run`: `schedule --help` needs none.
if TYPE_CHECKING:
    from kubetide.model import Pod
    from kubetide.snapshot import ClusterSnapshot

SCHEDULE_KINDS = frozenset({"Node", "Pod", "Namespace", "PriorityClass"})  # what placements depend on


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "schedule",
        help="place pending pods on the existing nodes as kube-scheduler would",
        description=__doc__.split("\n\n")[0].replace("`", ""),
    )
    parser.add_argument(
        "files", metavar="CLUSTER.yaml", nargs="+", help="nodes and pods (a kubectl dump); - for stdin"
    )
    add_now_argument(parser)
    add_json_argument(parser, "a ScheduleResult")
    parser.set_defaults(run=run)


def run(args) -> int:
    from kubetide.cli.inputs import load_manifests, source_name
    from kubetide.scheduling import PredicateChecker, queue_order, schedule_pods
    from kubetide.snapshot import snapshot_from_dump

    parse_now(args.now)  # a bad --now fails before any file is read
    source = ", ".join(map(source_name, args.files))
    # A large dump takes seconds to read and place: a spinner says so on a terminal (not with --json).
    with Display(not args.json) as display:
        display.stage(f"loading {source}")
        manifests = load_manifests(
            "schedule", (args.files, SCHEDULE_KINDS, "a cluster dump (Nodes and Pods)")
        )
        warn(manifests.warnings)
        snapshot, pending, messages = snapshot_from_dump(manifests.nodes, manifests.pods, source)
        warn(messages)

        display.stage(f"placing {len(pending)} pending pods on {len(snapshot)} nodes")
        namespaces = {ns.name: ns.labels for ns in manifests.namespaces}
        with PredicateChecker(snapshot, namespaces) as checker:
            placements = schedule_pods(snapshot, pending, checker)
            order = sorted(pending, key=queue_order)
            unschedulable = {p.key: checker.explain(p) for p in order if placements[p.uid] is None}

    if args.json:
        print_json(
            document(
                "ScheduleResult",
                {
                    "placements": {p.key: placements[p.uid] for p in order},
                    "unschedulable": unschedulable,
                },
            ),
            args.json,
        )
        return 0
    now, now_source = resolve_now(args.now, manifests)
    _print_table(order, placements, unschedulable, snapshot, f"at {rfc3339(now)} ({now_source})")
    return 0


def _print_table(
    order: list[Pod],
    placements: dict[str, str | None],
    unschedulable: dict[str, str],
    snapshot: ClusterSnapshot,
    at: str,
) -> None:
    from rich.markup import escape
    from rich.table import Table

    out = console()
    # Piped or redirected output is read by tools and people with wide editors: one line per pod,
    # like kubectl, rather than reasons folded into an 80-column box; unless COLUMNS asks for a width.
    out.width = line_width(out)
    if not order:
        out.print(f"No pending pods ({snapshot.pod_count()} bound on {len(snapshot)} nodes) {escape(at)}.")
        return
    names = [p.key for p in order]
    nodes = [placements[p.uid] or "-" for p in order]
    table = Table(show_edge=False, header_style="bold")
    table.add_column("pod", no_wrap=True, min_width=max(map(len, names)))
    table.add_column("priority", justify="right", no_wrap=True)
    table.add_column("node", no_wrap=True, min_width=max(map(len, nodes)))
    table.add_column("reason", overflow="fold")
    for pod, name, node in zip(order, names, nodes):
        table.add_row(escape(name), str(pod.priority), escape(node), escape(unschedulable.get(pod.key, "")))
    out.print(table)
    placed = sum(1 for n in placements.values() if n is not None)
    out.print(
        f"{len(snapshot)} nodes {escape(at)}: placed {placed} of {len(order)} pending pods, "
        f"{len(order) - placed} cannot be scheduled."
    )
