"""`kubetide scenario from-cluster DUMP [--node-groups GROUPS.yaml] [--kubeconfig PATH] [--usage USAGE.yaml]
[--out FILE]`:
a Scenario that starts from your cluster as it is.

DUMP is what `kubectl get nodes,pods,pdb,priorityclasses,deploy,rs,sts,ds,jobs,hpa,cronjobs -A -o yaml`
prints
(`-` reads it from stdin); `--kubeconfig` reads the live cluster instead, read-only, with the code
`kubetide plan --kubeconfig` uses. The Scenario has:

- node groups as `kubetide plan` finds them (cloud/static.py): from GROUPS.yaml, else one per
  provider group label (kubetide.io/node-group, eks.amazonaws.com/nodegroup,
  cloud.google.com/gke-nodepool, kubernetes.azure.com/agentpool, karpenter.sh/nodepool), each
  with a template copied from one of its nodes, its minSize/maxSize/price from GROUPS.yaml or
  plan's bounds (min 0, max 10 x its nodes; price 0), said in a comment above the group, and
  initialSize = its nodes in the dump;
- the dump's objects inline under spec.objects, each with only the fields the simulator reads
  (sim/spec/export.py: names, labels, requests and limits, scheduling constraints, the status it
  adopts, the annotations kubetide interprets; never env, command lines, probes, hooks, volume
  sources, other annotations or messages), and no finished Job or kind the simulator does not
  model. The simulator adopts them (sim/runtime/adoption.py): a group's nodes are its
  instances, every pod keeps its name, node, phase, readiness and age, and belongs to its
  controller. Simulating it with no events keeps the cluster as it is until the autoscaler acts;
- HorizontalPodAutoscalers and CronJobs with their status (what each HPA last read, each
  CronJob's last schedule time), which the simulator runs (sim/runtime/hpa.py, sim/runtime/cronjob.py);
- with `--usage USAGE.yaml` (PodMetrics, as `plan --usage` reads them), spec.usage: each
  workload's pods at their mean usage, a constant profile the HPAs read;
- no events (a commented example) and no autoscaler flags: paste yours, a map or the Cluster
  Autoscaler's container `args:` list.

A group name that is not a valid scenario name (`GPU_Pool`) is lower-cased and dashed (`gpu-pool`),
and its nodes get the label kubetide.io/node-group with the new name so they stay its members.
The written file is loaded back as a scenario before it is written: what this command writes,
`kubetide simulate` runs.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import re
import sys
import textwrap
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from kubetide.cli.output import warn
from kubetide.durations import rfc3339
from kubetide.errors import UserError
from kubetide.model.quantity import format_quantity

if TYPE_CHECKING:
    from kubetide.cloud.static import StaticCloud, StaticNodeGroup
    from kubetide.model import Manifests, Node

# `kubetide --help` imports every command: the model, the clouds and the simulator are imported
# when a scenario is exported, not here.

GROUP_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
GROUP_NAME_LENGTH = 40  # the scenario schema's limit (cloud/schema.py)
PLAN_BOUNDS = "plan"  # a group's bounds are kubetide plan's guess (min 0, max 10 x its nodes)


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "scenario",
        help="write a scenario: from-cluster turns a cluster dump into one that starts from it",
        description="Write scenarios for `kubetide simulate`.",
    )
    commands = parser.add_subparsers(dest="scenario_command", metavar="SUBCOMMAND", parser_class=type(parser))
    export = commands.add_parser(
        "from-cluster",
        help="a scenario that starts from a cluster dump (or a live cluster) as it is",
        description="A Scenario that starts from your cluster as it is: node groups from provider labels "
        "(or GROUPS.yaml), the dump's nodes as their instances, every pod adopted by its controller.",
    )
    export.add_argument(
        "dump", metavar="DUMP", nargs="?", help="a cluster dump (kubectl -o yaml); - for stdin"
    )
    export.add_argument("--kubeconfig", metavar="PATH", help="read the live cluster instead (read-only)")
    export.add_argument("--context", metavar="NAME", help="with --kubeconfig: the context to use")
    export.add_argument(
        "--node-groups",
        metavar="GROUPS.yaml",
        help="node groups and their bounds (default: from node labels)",
    )
    export.add_argument(
        "--usage",
        metavar="USAGE.yaml",
        action="append",
        default=[],
        help="PodMetrics (kubectl get --raw /apis/metrics.k8s.io/v1beta1/pods): each workload's pods get "
        "their average usage as a constant profile under spec.usage (what HPAs read); repeatable",
    )
    export.add_argument(
        "--trace",
        metavar="DIR",
        help="replay a recording (`kubetide record --out DIR`): its start, with each workload's replicas, "
        "usage and Job run times as recorded (instead of DUMP or --kubeconfig)",
    )
    export.add_argument("--out", metavar="FILE", help="write the scenario here (default: stdout)")
    export.add_argument("--force", action="store_true", help="replace --out FILE if it exists")
    export.add_argument(
        "--keep-env",
        action="store_true",
        help="keep the containers' env, names and values (default: dropped, as everything else the "
        "simulator does not read: they often hold secrets)",
    )
    export.add_argument("--name", help="the scenario's metadata.name (default: from DUMP's file name)")
    export.add_argument("--duration", default="1h", help="spec.duration (default: 1h)")
    export.set_defaults(run=run_from_cluster)
    parser.set_defaults(run=lambda args: _usage(parser))


def _usage(parser) -> int:
    parser.print_help(sys.stderr)
    return 2


def run_from_cluster(args) -> int:
    from kubetide.cli.progress import Display

    # Reading and exporting a large cluster takes tens of seconds: say what is being done.
    with Display(True) as display:
        return _from_cluster(args, display)


def _from_cluster(args, display) -> int:
    from kubetide.cli.inputs import check_single_stdin, read_input, read_node_groups, source_name
    from kubetide.cli.simulate import duration_flag
    from kubetide.model.loader import parse_text

    duration = duration_flag(args.duration)
    out = Path(args.out) if args.out else None
    if out is not None:
        check_out_path(out, force=args.force)
    elif args.force:
        raise UserError("--force: only with --out FILE (it replaces that file)")
    check_single_stdin([args.dump, args.node_groups])
    if args.trace:
        return _from_recording(args, out, display)
    definitions = read_node_groups(args.node_groups) if args.node_groups else None
    if args.kubeconfig and args.dump:
        raise UserError("scenario from-cluster: give a cluster dump (DUMP) or --kubeconfig, not both")
    if args.kubeconfig:
        display.stage("reading the live cluster (read-only)")
        documents, source = _read_live_cluster(args.kubeconfig, args.context)
    elif args.dump:
        source = source_name(args.dump)
        display.stage(f"reading {source}")
        documents = parse_text(read_input(args.dump), source)
    else:
        raise UserError("scenario from-cluster: give a cluster dump (DUMP, - for stdin) or --kubeconfig PATH")
    name = args.name or _scenario_name(
        Path(args.dump).stem if args.dump and args.dump != "-" else "my-cluster"
    )
    pod_metrics = None
    if args.usage:
        from kubetide.cli.plan import _read_usage

        pod_metrics = _read_usage(args.usage).other.get("PodMetrics", [])
    display.stage(f"writing the scenario {name} and loading it back as simulate will")
    summary = ExportSummary(source)
    text, warnings = export_scenario(
        documents,
        source,
        definitions,
        name=name,
        duration=duration,
        pod_metrics=pod_metrics,
        keep_env=args.keep_env,
        summary=summary,
    )
    display.close()
    warn(warnings)
    if out is None:
        sys.stdout.write(text)
        print_export_summary(summary, None, sys.stderr)
        return 0
    try:
        with out.open("w" if args.force else "x", encoding="utf-8") as file:
            file.write(text)
    except OSError as exc:
        raise UserError(f"--out {out}: cannot write: {exc.strerror or exc}") from None
    print_export_summary(summary, out, sys.stdout)
    return 0


def _from_recording(args, out: Path | None, display) -> int:
    """`--trace DIR`: the recording's start, replayed (sim/spec/recording.py); checked as simulate
    will load it before anything is written."""
    from kubetide.durations import format_duration
    from kubetide.model.loader import parse_text
    from kubetide.sim.spec.recording import scenario_from_recording
    from kubetide.sim.spec.scenario import parse_scenario

    others = [f for f, v in (("DUMP", args.dump), ("--kubeconfig", args.kubeconfig)) if v]
    others += [f for f, v in (("--node-groups", args.node_groups), ("--usage", args.usage)) if v]
    others += [f for f, v in (("--keep-env", args.keep_env), ("--name", args.name)) if v]
    if others:
        raise UserError(
            f"scenario from-cluster --trace: {', '.join(others)} cannot be given with it (the recording has its start)"
        )
    directory = Path(args.trace)
    if not directory.is_dir():
        raise UserError(f"--trace {directory}: not a directory (give the one `kubetide record --out` wrote)")
    scenario_dir = (out.parent if out is not None else Path.cwd()).resolve()
    display.stage(f"replaying the recording in {directory}")
    replay = scenario_from_recording(directory.resolve(), scenario_dir)
    where = f"the replay of {directory}"
    parse_scenario(parse_text(replay.text, where)[0], where, base_dir=scenario_dir)
    display.close()
    if out is None:
        sys.stdout.write(replay.text)
        stream = sys.stderr
    else:
        try:
            with out.open("w" if args.force else "x", encoding="utf-8") as file:
                file.write(replay.text)
        except OSError as exc:
            raise UserError(f"--out {out}: cannot write: {exc.strerror or exc}") from None
        stream = sys.stdout
    lines = [
        f"{'wrote ' + str(out) if out else 'the scenario is on stdout'}: {format_duration(replay.duration)} "
        f"of {directory} replayed",
        f"  replicas traced: {', '.join(replay.traced) or 'none (no workload changed)'}",
    ]
    if replay.dropped_hpas:
        lines.append(f"  HPAs left out (the trace holds their decisions): {', '.join(replay.dropped_hpas)}")
    lines.append(f"  usage: {'as recorded (PodMetrics)' if replay.usage else 'requests (none recorded)'}")
    if replay.job_run is not None:
        lines.append(
            f"  jobRunDuration: {format_duration(round(replay.job_run))} (the recorded Job pods' median)"
        )
    lines += [f"  note: {note}" for note in replay.notes]
    if out is not None:
        lines.append(f"next: kubetide simulate {out} (--compare to try other settings)")
    stream.write("\n".join(lines) + "\n")
    return 0


@dataclass
class GroupLine:
    name: str
    nodes: int
    min_size: int
    max_size: int
    price: float
    bounds_from: str  # GROUPS.yaml, the CA status, or plan's bounds
    price_from: str  # GROUPS.yaml, a guess from <type>, or unknown


@dataclass
class ExportSummary:
    """What a from-cluster export holds, for the one-screen summary it ends with."""

    source: str
    taken: str = ""
    nodes: int = 0
    pods: int = 0
    pending: int = 0
    workloads: int = 0
    pdbs: int = 0
    unmanaged: list[str] = dataclasses.field(default_factory=list)
    groups: list[GroupLine] = dataclasses.field(default_factory=list)
    price_date: str = ""


def print_export_summary(summary: ExportSummary, out: Path | None, stream: TextIO) -> None:
    """A screenful: what was exported, each group's bounds and price and where they came from,
    what to check, what to run next."""
    from kubetide.autoscaler.options import STATUS_CONFIG_MAP_NAME
    from kubetide.cli.output import console, line_width, text_table, wrap

    where = f"wrote {out}" if out is not None else "the scenario is on stdout"
    lines = [
        f"{where}: {summary.source} as it is at {summary.taken}",
        f"{summary.nodes} nodes, {summary.pods} pods ({summary.pending} pending), "
        f"{summary.workloads} workloads, {summary.pdbs} PodDisruptionBudgets",
    ]
    rows = [
        (
            g.name,
            str(g.nodes),
            f"{g.min_size}-{g.max_size}",
            f"${g.price:g}",
            f"bounds: {g.bounds_from}; price: {g.price_from}",
        )
        for g in summary.groups
    ]
    width = line_width(console())
    table = text_table(("node group", "nodes", "min-max", "price/h", "from"), rows, width)
    notes = []
    if summary.unmanaged:
        shown = ", ".join(summary.unmanaged[:3])
        more = f" and {len(summary.unmanaged) - 3} more" if len(summary.unmanaged) > 3 else ""
        notes.append(f"not in any node group (kept, never autoscaled): {shown}{more}")
    if any(g.price_from.startswith("a guess") for g in summary.groups):
        notes.append(
            f"a guessed price is the on-demand list price of the nodes' instance type (kubetide's "
            f"table of {summary.price_date}): set `price:` in the file to compare costs"
        )
    if any(g.bounds_from == PLAN_BOUNDS for g in summary.groups):
        notes.append(
            "bounds from plan are not your cloud's (min 0, max 10 x the nodes): set them in the file, "
            "give --node-groups GROUPS.yaml, or add CA's status to the dump (kubectl get cm -n "
            f"kube-system {STATUS_CONFIG_MAP_NAME} -o yaml)"
        )
    if out is not None:
        notes.append(f"next: kubetide simulate {out}")
    for note in notes:
        table += wrap(note, width, more="  ")
    text = "\n".join(lines + table) + "\n"
    stream.write(text)


def check_out_path(out: Path, *, force: bool = False) -> None:
    """Refuse an --out that cannot be written before any work: reading a large cluster takes
    minutes, and its scenario would be lost. An existing file is replaced only with --force."""
    if out.is_dir():
        raise UserError(f"--out {out}: is a directory")
    if (out.exists() or out.is_symlink()) and not force:
        raise UserError(f"--out {out}: the file exists (--force replaces it)")
    folder = out.parent
    if not folder.is_dir():
        problem = f"{folder} is not a directory" if folder.exists() else f"no such directory {folder}"
        raise UserError(f"--out {out}: {problem}")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise UserError(f"--out {out}: cannot write into {folder} (permission denied)")


def _read_live_cluster(kubeconfig: str, context: str | None) -> tuple[list[Any], str]:
    from kubetide.kube.client import connect
    from kubetide.kube.dump import SIMULATED, raw_objects

    client = connect(kubeconfig, context)
    try:
        items = [
            {"apiVersion": resource.group_version, "kind": resource.kind, **raw}
            for resource, raw in raw_objects(client, SIMULATED)
        ]
        return [{"apiVersion": "v1", "kind": "List", "items": items}], client.server
    finally:
        client.close()


# -- the scenario ------------------------------------------------------------------------------


def export_scenario(
    documents: list[Any],
    source: str,
    definitions=None,
    *,
    name: str = "my-cluster",
    duration: float = 3600.0,
    pod_metrics: list[Any] | None = None,
    keep_env: bool = False,
    summary: ExportSummary | None = None,
) -> tuple[str, list[str]]:
    """(the Scenario's YAML text, warnings) for a dump's decoded documents; `pod_metrics`
    (metrics-server's PodMetrics) add each workload's average usage under spec.usage."""
    from kubetide.cloud.observed import observed_bounds
    from kubetide.cloud.static import StaticCloud
    from kubetide.durations import format_duration
    from kubetide.model import load_documents
    from kubetide.model.loader import parse_text, resolve_priorities
    from kubetide.model.timestamps import newest_timestamp
    from kubetide.sim.spec.errors import ScenarioError
    from kubetide.sim.spec.limits import LIMIT_FLAG, NO_LIMITS
    from kubetide.sim.spec.scenario import parse_scenario

    manifests = load_documents(documents, source)
    resolve_priorities(manifests, source)
    if not manifests.nodes:
        raise UserError(f"{source}: no Node in the dump: a scenario needs the cluster's nodes")
    cloud = StaticCloud.from_nodes(manifests.nodes, definitions)
    warnings = list(manifests.warnings) + list(cloud.warnings)
    groups = list(cloud.groups.values())
    if not groups:
        raise UserError(
            f"{source}: no node carries a node group label (see `kubetide plan --help`); "
            "give --node-groups GROUPS.yaml"
        )
    names = _group_names([g.id for g in groups])
    given_templates = {d.name for d in definitions or () if d.template is not None}
    members = {node.name: names[g.id] for g in groups for node in g.nodes}
    objects = [obj for obj in _clean(documents, members, keep_env) if obj is not None]
    newest = newest_timestamp(manifests)

    lines = _header(source, manifests, cloud, newest)
    lines += ["apiVersion: kubetide.io/v1alpha1", "kind: Scenario"]
    lines += _yaml({"metadata": {"name": name, "description": f"{source} as it is, in the simulator"}})
    lines += ["spec:"]
    lines += _indent(_yaml({"duration": format_duration(duration), "seed": 0}))
    lines += [
        "  # Your Cluster Autoscaler flags: a map (scale-down-unneeded-time: 5m), or its container's",
        "  # args: list as it is; flags about infrastructure (--v, --cloud-provider, --nodes...) are",
        "  # ignored in the simulator.",
        "  autoscaler: {}",
        "  nodeGroups:",
    ]
    observed = observed_bounds(documents)
    if summary is not None:
        _summarize(summary, manifests, cloud, newest)
    for group in groups:
        spec, notes = _group_spec(group, names[group.id], group.id in given_templates, observed, summary)
        lines += [f"  # {line}" for note in notes for line in textwrap.wrap(note, 94)]
        lines += _indent(_yaml([spec]))
    lines += [
        "  # What happens tonight, for example the load drops:",
        f"  # - {{at: 10m, scale: {_example_scale(manifests)}}}",
        "  events: []",
    ]
    lines += [
        f"  # {line}"
        for line in textwrap.wrap(
            f"{source}'s objects, adopted as they are, with only the fields the simulator reads: "
            "names, labels, requests, scheduling constraints, status. Env, command lines, probes, "
            "hooks, volume sources, messages and other annotations are left out, as are kinds the "
            "simulator does not model.",
            94,
        )
    ]
    lines += _indent(_yaml({"objects": objects}))
    if pod_metrics is not None:
        usage = _usage_profiles(manifests, pod_metrics)
        lines += [
            "  # Each workload's pods at their average usage in the PodMetrics given (--usage), held",
            "  # constant: HPAs read it. Give a trace instead to move it (docs/scenarios.md).",
        ]
        lines += _indent(_yaml({"usage": usage}) if usage else ["usage: []"])
    text = "\n".join(lines) + "\n"
    # What is written, simulate runs: a failure here is kubetide's bug, not the user's. A cluster
    # larger than the simulator's default limits is still exported, with a word on --limit.
    exported = f"the scenario exported from {source}"
    data = parse_text(text, exported)[0]
    try:
        parse_scenario(data, exported, base_dir=Path("."))
    except ScenarioError as exc:
        if LIMIT_FLAG not in str(exc):
            raise
        warnings.append(f"simulate refuses it as it is: {exc}")
        parse_scenario(data, exported, base_dir=Path("."), limits=NO_LIMITS)
    return text, warnings


def _summarize(
    summary: ExportSummary, manifests: Manifests, cloud: StaticCloud, newest: float | None
) -> None:
    from kubetide.cloud.prices import bundled_table

    managed = {node.name for group in cloud.groups.values() for node in group.nodes}
    summary.taken = rfc3339(newest) if newest is not None else "an unknown time (no timestamps)"
    summary.nodes = len(manifests.nodes)
    summary.pods = sum(1 for p in manifests.pods if not p.is_terminal)
    summary.pending = sum(1 for p in manifests.pods if not p.node_name and not p.is_terminal)
    summary.workloads = len(manifests.workloads)
    summary.pdbs = len(manifests.pdbs)
    summary.unmanaged = [n.name for n in manifests.nodes if n.name not in managed]
    summary.price_date = bundled_table().date


def _header(source: str, manifests: Manifests, cloud: StaticCloud, newest: float | None) -> list[str]:
    taken = rfc3339(newest) if newest is not None else "unknown (the dump carries no timestamps)"
    lines = [
        f"# A scenario that starts from {source} as it is (kubetide scenario from-cluster).",
        f"# The dump's newest timestamp, {taken}, is the scenario's start: every pod and node keeps",
        "# its age. The simulator adopts the objects: a group's nodes are its instances, each pod",
        "# stays on its node with its controller. With no events the cluster stays as it is until",
        "# the autoscaler acts.",
    ]
    managed = {node.name for group in cloud.groups.values() for node in group.nodes}
    unmanaged = [n.name for n in manifests.nodes if n.name not in managed]
    if unmanaged:
        shown = ", ".join(unmanaged[:5]) + (f" and {len(unmanaged) - 5} more" if len(unmanaged) > 5 else "")
        lines.append(f"# Not in any node group (kept, never autoscaled): {shown}.")
    return lines


def _group_spec(
    group: StaticNodeGroup,
    name: str,
    template_given: bool,
    observed: Mapping[str, tuple[int, int]],
    summary: ExportSummary | None = None,
) -> tuple[dict[str, Any], list[str]]:
    """A scenario nodeGroups entry, and the comment lines that say where its values came from.

    Without GROUPS.yaml: minSize and maxSize as the Cluster Autoscaler's status ConfigMap in the
    dump reports them, else plan's bounds; the price guessed from the nodes' instance type."""
    from kubetide.cloud.observed import bounds_for
    from kubetide.cloud.prices import guess_group_price
    from kubetide.cloud.static import GROUPS_YAML, template_source
    from kubetide.sim.spec.scenario import MAX_GROUP_SIZE

    count = len(group.nodes)
    defined = group.origin == GROUPS_YAML
    notes = [
        f"{name}: {count} node(s) in the dump"
        + (f" (from {group.origin}={group.id})" if not defined else f" (defined in {GROUPS_YAML})")
    ]
    min_size, max_size, price = group.min_size, group.max_size, group.price_per_hour()
    seen = None if defined else bounds_for(group.id, observed)
    if seen is not None:
        min_size, max_size = seen[1][0], max(seen[1][1], seen[1][0])
    if max_size > MAX_GROUP_SIZE:
        notes.append(f"maxSize {max_size} is more than the simulator runs; {MAX_GROUP_SIZE} here")
        max_size = MAX_GROUP_SIZE
    guess = None if defined else guess_group_price(group.nodes)
    if defined:
        notes.append(f"minSize, maxSize and price from {GROUPS_YAML}")
    elif seen is not None:
        notes.append(
            f"minSize {min_size} and maxSize {max_size}: the Cluster Autoscaler's status ConfigMap "
            f"in the dump (its group {seen[0]})"
        )
    else:
        notes.append(
            f"minSize 0 and maxSize {max_size} (10 x its nodes) are kubetide plan's bounds, not your "
            "cloud's: set them here or with --node-groups GROUPS.yaml"
        )
    if guess is not None:
        price = guess.price
        notes.append(f"price {price}: a guess, {guess.describe()}; set yours to compare costs")
    elif not defined:
        notes.append("price 0: its instance type is not in kubetide's price table; set it to compare costs")
    initial = min(count, max_size)
    if initial < count:
        notes.append(f"it has more nodes than its maxSize: all {count} are adopted, and it cannot grow")
    template = group.template_node()
    if template_given:
        notes.append(f"template from {GROUPS_YAML}")
    else:
        notes.append(f"template copied from node {template_source(group.nodes).name}")
    if summary is not None:
        bounds_from = GROUPS_YAML if defined else "CA's status" if seen is not None else PLAN_BOUNDS
        if defined:
            price_from = GROUPS_YAML
        elif guess is not None:
            price_from = f"a guess from {guess.instance_type}"
        else:
            price_from = "unknown instance type, 0"
        summary.groups.append(
            GroupLine(name, count, min(min_size, max_size), max_size, price, bounds_from, price_from)
        )
    spec = {
        "name": name,
        "minSize": min(min_size, max_size),
        "maxSize": max_size,
        "initialSize": initial,
        "price": price,
        "template": _template_manifest(template),
    }
    return spec, notes


def _template_manifest(node: Node) -> dict[str, Any]:
    """A template Node as the scenario schema takes it (parse_template adds the group label)."""
    from kubetide.cloud.schema import NODE_GROUP_LABEL

    labels = {k: v for k, v in sorted(node.labels.items()) if k != NODE_GROUP_LABEL}
    manifest: dict[str, Any] = {"metadata": {"labels": labels}}
    if node.taints:
        manifest["spec"] = {
            "taints": [
                {"key": t.key, **({"value": t.value} if t.value else {}), "effect": t.effect}
                for t in node.taints
            ]
        }
    manifest["status"] = {
        "allocatable": _quantities(node.allocatable),
        "capacity": _quantities(node.capacity),
    }
    return manifest


def _quantities(units: dict[str, int]) -> dict[str, str]:
    """Exact quantities from the model's integer units (millicores for cpu, base units otherwise)."""
    return {r: format_quantity(r, v) for r, v in sorted(units.items())}


def _group_names(ids: Sequence[str]) -> dict[str, str]:
    """Scenario names for the groups: as they are when valid, else lower-cased and dashed."""
    names: dict[str, str] = {}
    taken: set[str] = set()
    for group_id in ids:
        name = group_id
        if not GROUP_NAME.match(name) or len(name) > GROUP_NAME_LENGTH:
            base = re.sub(r"[^a-z0-9]+", "-", group_id.lower()).strip("-")[:GROUP_NAME_LENGTH].strip("-")
            name, n = base or "group", 2
            while name in taken or name in ids:
                suffix = f"-{n}"
                name = base[: GROUP_NAME_LENGTH - len(suffix)].strip("-") + suffix
                n += 1
        names[group_id] = name
        taken.add(name)
    return names


def _clean(
    documents: Iterable[Any], members: dict[str, str], keep_env: bool
) -> Iterable[dict[str, Any] | None]:
    """The objects to export, `kind: List`s flattened (the loader has checked their shape and
    bounded their nesting)."""
    pending = list(reversed(list(documents)))
    while pending:
        doc = pending.pop()
        kind = doc.get("kind", "")
        if kind.endswith("List") and "items" in doc:
            items = doc.get("items") or []
            if kind != "List":
                items = [{"kind": kind[: -len("List")], **item} for item in items]
            pending.extend(reversed(items))
        else:
            yield _clean_object(doc, members, keep_env)


def _clean_object(obj: dict[str, Any], members: dict[str, str], keep_env: bool) -> dict[str, Any] | None:
    """What the scenario keeps of one object (sim/spec/export.py), or None to leave it out."""
    from kubetide.autoscaler.options import AutoscalerOptions
    from kubetide.autoscaler.scaleup.expanders import PRIORITY_CONFIGMAP
    from kubetide.cloud.schema import NODE_GROUP_LABEL
    from kubetide.sim.spec.export import exported

    kind = obj.get("kind")
    meta = obj.get("metadata") or {}
    if kind == "ConfigMap":
        # The one the simulated autoscaler reads (its namespace flag's default, as CA's).
        if (meta.get("namespace"), meta.get("name")) != (AutoscalerOptions().namespace, PRIORITY_CONFIGMAP):
            return None
    elif kind == "Job" and _finished(obj):
        return None
    kept = exported(obj, keep_env)
    if kept is not None and kind == "Node" and meta.get("name") in members:
        labels = kept["metadata"].get("labels") or {}
        kept["metadata"]["labels"] = {**labels, NODE_GROUP_LABEL: members[meta["name"]]}
    return kept


def _finished(job: dict[str, Any]) -> bool:
    """A Job whose Complete or Failed condition is true: it creates no pod again (the simulator
    does not read Job status, and would otherwise run it anew when its pods are gone)."""
    conditions = (job.get("status") or {}).get("conditions") or []
    return any(
        isinstance(c, dict) and c.get("type") in ("Complete", "Failed") and c.get("status") == "True"
        for c in conditions
    )


def _usage_profiles(manifests: Manifests, pod_metrics: list[Any]) -> list[dict[str, Any]]:
    """spec.usage entries: per workload (a Deployment over its ReplicaSets' pods), the mean of
    its pods' PodMetrics usage; pods with no metrics are left out of the mean."""
    from kubetide.model.quantity import CPU, MEMORY

    usage = {m.key: m.usage for m in pod_metrics}
    owners = {
        (w.kind, w.namespace, w.name): w.meta.controller
        for w in manifests.workloads
        if w.meta.controller is not None
    }
    totals: dict[tuple[str, str, str], list[dict[str, int]]] = {}
    for pod in manifests.pods:
        sample = usage.get(pod.key)
        ref = pod.meta.controller
        if sample is None or pod.is_terminal:
            continue
        if ref is None:
            workload = ("Pod", pod.namespace, pod.name)
        else:
            parent = owners.get((ref.kind, pod.namespace, ref.name))
            kind, name = (parent.kind, parent.name) if parent is not None else (ref.kind, ref.name)
            workload = (kind, pod.namespace, name)
        totals.setdefault(workload, []).append(sample)
    entries = []
    for (kind, namespace, name), samples in sorted(
        totals.items(), key=lambda item: (item[0][1], item[0][0], item[0][2])
    ):
        entry: dict[str, Any] = {"match": {"kind": kind, "namespace": namespace, "name": name}}
        for resource in (CPU, MEMORY):
            values = [sample[resource] for sample in samples if resource in sample]
            if values:
                entry[resource] = format_quantity(resource, sum(values) // len(values))
        if len(entry) > 1:
            entries.append(entry)
    return entries


def _example_scale(manifests: Manifests) -> str:
    """A scale event for the dump's largest Deployment (else StatefulSet or ReplicaSet)."""
    for kind in ("Deployment", "StatefulSet", "ReplicaSet"):
        workloads = [w for w in manifests.workloads if w.kind == kind and w.replicas]
        if workloads:
            w = max(workloads, key=lambda w: w.replicas or 0)
            fewer = (w.replicas or 0) // 4
            return f"{{kind: {kind}, namespace: {w.namespace}, name: {w.name}, replicas: {fewer}}}"
    return "{kind: Deployment, namespace: default, name: web, replicas: 2}"


def _scenario_name(text: str) -> str:
    name = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:63].strip("-")
    return name or "my-cluster"


def _yaml(data: Any) -> list[str]:
    import yaml

    text = yaml.dump(data, Dumper=_no_alias_dumper(), sort_keys=False, default_flow_style=False, width=100)
    return text.splitlines()


@functools.cache
def _no_alias_dumper() -> type:
    """libyaml's dumper (several times faster) writing a shared subtree out in full each time:
    an alias would make simulate walk the alias screen, and refuse a file whose aliases expand it
    more than model/bounds.py allows, although the dump it came from loaded."""
    import yaml

    base = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    return type("NoAliasDumper", (base,), {"ignore_aliases": lambda self, data: True})


def _indent(lines: list[str], by: int = 2) -> list[str]:
    return [" " * by + line if line else line for line in lines]
