"""`kubetide downscale PODS.yaml --replicas N [--owner KIND/NAME] [--now RFC3339] [--legacy] [--json]`:
which pods a ReplicaSet would delete to shrink to N replicas, in order, and why.

PODS.yaml holds the pods (as `kubectl get pods -o yaml` prints them) and, when available, their
ReplicaSets and Deployment. The ranking is kube-controller-manager's (KEP-2185): see
kubetide.workloads. Related pods (every ReplicaSet of the same controller, matched by its UID, so a
Deployment's or an Argo Rollout's alike) count towards a node's rank; without the ReplicaSet objects
the controller is recognised by the pod-template-hash (or rollouts-pod-template-hash) label.
--owner picks the ReplicaSet (KIND/NAME or KIND/NAMESPACE/NAME; a Deployment means its one
ReplicaSet with active pods); without it the file must hold pods of exactly one owner.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING

import msgspec

from kubetide.cli.json_output import add_json_argument, document, rfc3339, rfc3339_all
from kubetide.cli.now import add_now_argument, parse_now, resolve_now
from kubetide.cli.output import console, line_width, print_json, text_table, warn
from kubetide.cli.progress import Display
from kubetide.errors import UserError
from kubetide.workloads.cost import DELETION_COST_ANNOTATION
from kubetide.workloads.timebuckets import format_age, to_ns

# The model, the ranking and NumPy are imported by the functions using them: `downscale --help`
# needs none of them.
if TYPE_CHECKING:
    from kubetide.model import Pod
    from kubetide.workloads.ranking import Ranking

DOWNSCALE_KINDS = frozenset({"Pod", "ReplicaSet", "Deployment", "ReplicationController"})


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "downscale",
        help="show which pods a ReplicaSet would delete to reach N replicas, and why",
        description="Which pods a ReplicaSet would delete to shrink to N replicas, in order, and why "
        "(kube-controller-manager's ranking, KEP-2185).",
    )
    parser.add_argument(
        "files", metavar="PODS.yaml", nargs="+", help="pods, and their ReplicaSets/Deployment; - for stdin"
    )
    parser.add_argument("--replicas", metavar="N", type=int, required=True, help="the replica count to reach")
    parser.add_argument(
        "--owner",
        metavar="KIND/NAME",
        help="the Deployment (or Argo Rollout), ReplicaSet or ReplicationController",
    )
    add_now_argument(parser)
    parser.add_argument(
        "--legacy",
        action="store_true",
        help="rank by exact timestamps, newest first (before LogarithmicScaleDown), for comparison",
    )
    add_json_argument(parser, "a DownscaleResult")
    parser.set_defaults(run=run)


def run(args) -> int:
    from kubetide.cli.inputs import load_manifests, source_name
    from kubetide.model.loader import without_gc_passes

    if args.replicas < 0:
        raise UserError(f"--replicas must be 0 or more, got {args.replicas}")
    parse_now(args.now)  # a bad --now fails before any file is read
    source = ", ".join(map(source_name, args.files))
    # Thousands of pods take seconds to read and rank: a spinner says so on a terminal (not with --json).
    with Display(not args.json) as display:
        display.stage(f"loading {source}")
        # The pods as rows of columns (model/pod_columns.py): a Pod is built only for a pod printed
        # as a table row, never for --json.
        manifests = load_manifests(
            "downscale", (args.files, DOWNSCALE_KINDS, "pods and their ReplicaSets"), pod_rows=True
        )
        warn(manifests.warnings)
        display.stage(f"ranking the pods of {args.owner or 'the owner'}")
        # The ranking, its texts and the document's rows are a million acyclic objects for
        # 100,000 pods: the cycle collector's passes over them (a tenth of a second) free nothing.
        with without_gc_passes():
            return _run(args, source, manifests, display)


def _run(args, source: str, manifests, display: Display) -> int:
    """Rank the owner's pods, take the display off the terminal, print the answer."""
    from kubetide.model.pod_columns import take
    from kubetide.workloads import deletion_reasons
    from kubetide.workloads.owners import resolve_owner
    from kubetide.workloads.ranking import rank_rows

    now, now_source = resolve_now(args.now, manifests)
    target = resolve_owner(manifests, args.owner, source)
    current = len(target.rows)
    if args.replicas > current:
        raise UserError(
            f"--replicas {args.replicas} is more than the {current} active pods of {target.label}: "
            "downscale only removes pods"
        )
    diff = current - args.replicas
    logarithmic = not args.legacy
    if diff == current:  # every pod goes: the controller does not sort (nor do we)
        order = target.rows  # the rows of the pods in deletion order
        reasons = ["every pod goes"] * diff
        ranking = None
    else:
        ranking = rank_rows(
            target.table,
            target.rows,
            now,
            target.related_rows if target.has_controller else None,
            logarithmic=logarithmic,
            owner_has_controller=target.has_controller,
        )
        order = take(target.rows, ranking.index)
        reasons = deletion_reasons(ranking, diff)[1]

    display.close()
    if args.json:
        print_json(downscale_json(target, args.replicas, now, ranking, order, reasons), args.json)
        return 0
    ranks = ranking.node_counts if ranking is not None else None
    deleted, kept = target.table.pods(order[:diff]), target.table.pods(order[diff:])
    _print_human(target, args.replicas, (now, now_source), logarithmic, deleted, reasons, kept, ranks)
    return 0


class RankKeys(msgspec.Struct, gc=False):
    """What kube-controller-manager compares, criterion by criterion (kubetide.workloads.ranking),
    and the sort key itself (`sort_key`, ranking.key(pod)). Age buckets exist only in the
    logarithmic ranking. A Struct (fields encoded in this order, None as null): 100,000 of them are
    made in C from the columns below, where as many dicts cost a second; untracked by the cycle
    collector (`gc=False`: they hold no cycles), so building them starts no collections."""

    assigned: bool
    phase: str
    ready: bool
    deletion_cost: int
    related_pods_on_node: int
    ready_time: str | None
    ready_age_bucket: int | None
    restarts: int
    sidecar_restarts: int
    creation_time: str | None
    creation_age_bucket: int | None
    sort_key: tuple[int, ...]


class PodDecision(msgspec.Struct, gc=False):
    """One pod of the DownscaleResult: what happens to it and why (the schema's `pods` items)."""

    pod: str
    node: str | None
    decision: str
    why: str | None
    rank_keys: RankKeys | None


def downscale_json(
    target, replicas: int, now: float, ranking: Ranking | None, order: list[int], reasons: list[str]
) -> dict:
    """The DownscaleResult document: the order (`order`: the target's table's rows in deletion
    order, the first len(reasons) deleted), each pod's rank keys and why it goes first. Its rows
    are built column by column: the table's and the ranking's fields taken in deletion order by
    index (in C), times written all at once; one pod at a time, 100,000 of them cost more than
    ranking them."""
    from kubetide.model.pod_columns import take

    table = target.table
    names = table.keys(order)
    nodes = [node or None for node in take(table.nodes, order)]
    rank_keys: Iterable[RankKeys | None] = (
        _rank_keys(ranking, lambda column: take(column, ranking.index))
        if ranking is not None
        else itertools.repeat(None, len(order))
    )
    deleted = len(reasons)
    kept = len(order) - deleted
    decisions = ["delete"] * deleted + ["keep"] * kept
    whys: list[str | None] = [*reasons, *itertools.repeat(None, kept)]
    return document(
        "DownscaleResult",
        {
            "owner": target.label,
            "deployment": target.deployment,
            "controller": target.controller.label if target.controller is not None else None,
            "active_pods": len(order),
            "replicas": replicas,
            "now": rfc3339(now),
            "ranking": None if ranking is None else "logarithmic" if ranking.logarithmic else "legacy",
            "delete": names[:deleted],
            "keep": names[deleted:],
            "pods": list(map(PodDecision, names, nodes, decisions, whys, rank_keys)),
        },
    )


def _rank_keys(ranking: Ranking, take: Callable[[Sequence], list]) -> list[RankKeys]:
    """Each pod's RankKeys in deletion order, from the ranking's columns."""
    import numpy as np

    from kubetide.workloads.ranking import NO_TIME_BUCKET

    fields = ranking.inputs
    assert fields is not None
    index = np.asarray(ranking.index, dtype=np.int64)
    columns = [
        np.asarray(c)[index].tolist() if isinstance(c, np.ndarray) else take(c) for c in ranking.columns
    ]
    readies = take(fields.ready)
    ready_times = rfc3339_all(take(fields.ready_at))  # ready_at: the transition of ready pods only
    creation_times = rfc3339_all(take(fields.created))
    if ranking.logarithmic:
        ready_buckets = [None if k == NO_TIME_BUCKET else k for k in columns[2]]
        creation_buckets = [None if k == NO_TIME_BUCKET else k for k in columns[5]]
    else:
        ready_buckets = creation_buckets = [None] * len(readies)
    return list(
        map(
            RankKeys,
            take(fields.assigned),
            take(fields.phases),
            readies,
            take(fields.cost),
            take(fields.rank),
            ready_times,
            ready_buckets,
            take(fields.restarts),
            take(fields.sidecar_restarts),
            creation_times,
            creation_buckets,
            zip(*columns, strict=True),
        )
    )


def _print_human(target, replicas, at, logarithmic, deleted, reasons, kept, ranks) -> None:
    from rich.markup import escape

    from kubetide.workloads.ranking import active_row

    console_ = console()
    width = line_width(console_)

    def say(text: str = "", *, laid_out: bool = False) -> None:
        # A table line is laid out here (rich must not wrap it again); a sentence wraps between words.
        console_.print(text, soft_wrap=laid_out)

    now, now_source = at
    now_ns = to_ns(now)
    owner = target.label.removeprefix(f"{target.kind}/")
    controller = target.controller
    family = f" of {controller.kind} {controller.name}" if controller is not None else ""
    mode = "newest first (--legacy)" if not logarithmic else "logarithmic age buckets (KEP-2185)"
    say(
        f"[bold]{target.kind} {escape(owner)}[/bold]{escape(family)}: "
        f"{len(deleted) + len(kept)} active pods -> {replicas}, [bold]{len(deleted)} to delete[/bold]"
    )
    say(f"Ranking: {mode}, at {rfc3339(now)} ({escape(now_source)}).")
    if target.siblings:
        others = ", ".join(target.siblings)
        table = target.table
        active = sum(active_row(table.phases[r], table.deleted[r]) for r in target.related_rows)
        say(
            f"Related pods: {active} active in this ReplicaSet and {escape(others)} (a node's count is its rank)."
        )
    if not target.has_controller:
        say("No controlling owner: no related pods, so every pod's rank is 0 (as kube-controller-manager).")
    if target.inactive:
        names = ", ".join(p.name for p in target.inactive)
        say(f"Not counted: {len(target.inactive)} terminating or finished pod(s): {escape(names)}.")

    number = len(str(len(deleted) + len(kept)))
    header = ("#".rjust(number), "", "pod", "node", "state", "why it goes first" if kept else "why")
    rows = []
    for i, (pod, why) in enumerate(zip(deleted, reasons), 1):
        state = _state(pod, now_ns, ranks)
        rows.append((str(i).rjust(number), "delete", pod.key, pod.node_name or "-", state, why))
    for i, pod in enumerate(kept, len(deleted) + 1):
        rows.append(
            (str(i).rjust(number), "keep", pod.key, pod.node_name or "-", _state(pod, now_ns, ranks), "")
        )
    say()
    for n, line in enumerate(text_table(header, rows, width)):
        say(f"[bold]{escape(line)}[/bold]" if n == 0 else escape(line), laid_out=True)
    if not deleted:
        say("\nNothing to delete: the ReplicaSet already has that many pods.")


def _state(pod: Pod, now_ns: int, ranks: dict[str, int] | None) -> str:
    parts = []
    if pod.phase != "Running":
        parts.append(pod.phase)
    if not pod.ready:
        parts.append("not ready")
    elif pod.ready_transition is None:
        parts.append("ready")
    else:
        parts.append(f"ready {format_age(now_ns - to_ns(pod.ready_transition))}")
    if pod.restarts:
        parts.append(f"{pod.restarts} restart{'s' if pod.restarts != 1 else ''}")
    if pod.sidecar_restarts:
        parts.append(f"{pod.sidecar_restarts} sidecar restarts")
    cost = pod.annotations.get(DELETION_COST_ANNOTATION)
    if cost is not None:
        parts.append(f"cost {cost}")
    if ranks is not None and pod.node_name:
        parts.append(f"{ranks.get(pod.node_name, 0)} on node")
    return ", ".join(parts)
