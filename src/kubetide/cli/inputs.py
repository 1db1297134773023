"""Opening the files a command reads.

`-` stands for standard input wherever a command takes a file. Each file is checked for being of
the right kind before it is parsed further, so that a Scenario given to `plan`, a cluster dump
given to `simulate` or a NodeQOS file given to `schedule` is one line saying what the file is and
which command reads it, rather than an empty answer or a complaint about some field.
"""

from __future__ import annotations

import gc
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from kubetide.errors import UserError
from kubetide.model import Manifests, load_documents
from kubetide.model.loader import (
    max_input_bytes,
    parse_text,
    read_stream_text,
    read_text,
    resolve_priorities,
    stream_list_file,
    without_gc_passes,
)

STDIN = "-"
STDIN_SOURCE = "<stdin>"
SCENARIO_KIND = "Scenario"

# Kinds a cluster dump is made of (kubectl get ... -o yaml); a file holding one of them is a dump.
CLUSTER_KINDS = frozenset(
    {
        "Node",
        "Pod",
        "PodDisruptionBudget",
        "PriorityClass",
        "Namespace",
        "ConfigMap",
        "Deployment",
        "ReplicaSet",
        "StatefulSet",
        "DaemonSet",
        "Job",
        "ReplicationController",
    }
)
QOS_KINDS = frozenset({"NodeQOS", "AvoidanceAction", "PodQOS"})


def source_name(path: str) -> str:
    return STDIN_SOURCE if path == STDIN else path


def read_input(path: str) -> str:
    """The text of a file, or of standard input for `-`; unreadable input is a ManifestError."""
    if path != STDIN:
        return read_text(path)
    return read_stream_text(sys.stdin.buffer, STDIN_SOURCE, max_input_bytes())


def check_single_stdin(values: Iterable[Any]) -> None:
    """Standard input can be read once: `-` given for two inputs is a usage error."""
    count = 0
    for value in values:
        items = value if isinstance(value, list) else [value]
        count += sum(1 for item in items if item == STDIN)
    if count > 1:
        raise UserError(f"standard input ({STDIN}) is given for {count} inputs; it can be read only once")


# Files of one role: their paths, the kinds that make a file fit the role, the role in words.
FileGroup = tuple[Sequence[str], frozenset[str], str]


def load_manifests(command: str, *groups: FileGroup, pod_rows: bool = False) -> Manifests:
    """Every object in the files (`-` is standard input), as `kubetide.model.load_files` reads them.

    A file with none of its group's kinds is an error saying what it holds instead and which
    command reads that; the group's words say what `command` wanted (e.g. "a cluster dump").
    `pod_rows`: the pods as rows of columns (Manifests.pod_rows, model/pod_columns.py), no Pods.
    """
    from kubetide.model.pod_columns import PodColumns

    result = Manifests(pod_rows=PodColumns() if pod_rows else None)
    sources = []
    with without_gc_passes():
        for paths, accepts, wanted in groups:
            for path in paths:
                source = source_name(path)
                sources.append(source)
                # A List dump (what kubectl prints) is streamed: memory holds the objects kept,
                # not the whole document's text and dicts (a 1.7 GB dump: 0.8 GB, not 4.9).
                kinds = None if path == STDIN else stream_list_file(path, source, result)
                if kinds is not None:
                    check_kind_set(kinds, True, source, command, accepts, wanted)
                    continue
                documents = parse_text(read_input(path), source)
                check_kinds(documents, source, command, accepts, wanted)
                load_documents(documents, source, into=result)
                del documents
        resolve_priorities(result, source=", ".join(sources))
        # The loaded objects live as long as the command; frozen, later cycle-collector passes
        # skip them instead of walking millions of objects that cannot be garbage (a third of a
        # large plan). Frozen before the collector is back: its first pass would otherwise walk
        # them all once, every one still young (0.3 s after a 150,000-pod dump).
        gc.freeze()
    warn_overcommitted(result, ", ".join(sources))
    return result


SHOWN_NODES = 3  # an over-commit warning names this many nodes, then says how many more


def warn_overcommitted(manifests: Manifests, source: str) -> None:
    """One warning line when the dump's bound pods request more than some nodes can allocate."""
    from kubetide.cli.output import warn
    from kubetide.model.overcommit import overcommitted_nodes
    from kubetide.model.quantity import format_units

    # the loader summed the bound pods' requests per node already (its int64 check)
    found = overcommitted_nodes(manifests.nodes, manifests.pods, manifests.bound_requests)
    if not found:
        return
    shown = ", ".join(
        f"{o.node} ({o.resource} {format_units(o.resource, o.requested)} requested of "
        f"{format_units(o.resource, o.allocatable)}, {o.percent:.0f}%)"
        for o in found[:SHOWN_NODES]
    )
    more = f" and {len(found) - SHOWN_NODES} more" if len(found) > SHOWN_NODES else ""
    nodes = "node is" if len(found) == 1 else "nodes are"
    warn(
        [
            f"{source}: {len(found)} {nodes} over-committed, their pods requesting more than "
            f"allocatable (taken as they are): {shown}{more}"
        ]
    )


def check_kinds(
    documents: list[Any], source: str, command: str, accepts: frozenset[str], wanted: str
) -> None:
    check_kind_set(
        kinds_in(documents), any(_is_list(doc) for doc in documents), source, command, accepts, wanted
    )


def check_kind_set(
    kinds: set[str], is_list: bool, source: str, command: str, accepts: frozenset[str], wanted: str
) -> None:
    """A file whose objects have none of the accepted kinds is an error naming what it holds."""
    if kinds & accepts or (not kinds and is_list):
        return  # an empty List is what kubectl prints for a namespace without such objects
    raise UserError(f"{source}: {describe(kinds)}, not {wanted}: {reader_hint(kinds, command)}")


def kinds_in(documents: Iterable[Any]) -> set[str]:
    """The kinds of the objects in decoded documents, `kind: List` items included."""
    kinds: set[str] = set()
    pending = [(doc, "") for doc in documents]
    while pending:
        obj, list_kind = pending.pop()
        if not isinstance(obj, Mapping):
            continue
        kind = obj.get("kind")
        if not isinstance(kind, str) or not kind:
            kind = list_kind  # items of a typed list (NodeList) may leave their kind out
        items = obj.get("items")
        if kind.endswith("List") and isinstance(items, list):
            item_kind = kind.removesuffix("List") if kind != "List" else ""
            pending += [(item, item_kind) for item in items]
        elif kind:
            kinds.add(kind)
    return kinds


def _is_list(document: Any) -> bool:
    kind = document.get("kind") if isinstance(document, Mapping) else None
    return isinstance(kind, str) and kind.endswith("List") and isinstance(document.get("items"), list)


def describe(kinds: set[str]) -> str:
    if not kinds:
        return "holds no Kubernetes objects"
    if SCENARIO_KIND in kinds:
        return "is a Scenario"
    if kinds & CLUSTER_KINDS:
        return f"is a cluster dump ({', '.join(sorted(kinds & CLUSTER_KINDS))})"
    return f"holds {', '.join(sorted(kinds))} objects"


def reader_hint(kinds: set[str], command: str) -> str:
    """Which command reads what the file holds."""
    if SCENARIO_KIND in kinds:
        return "run it with `kubetide simulate`"
    if kinds & CLUSTER_KINDS:
        return "`kubetide plan` and `kubetide schedule` read cluster dumps"
    if kinds & QOS_KINDS:
        return "NodeQOS objects go to `kubetide qos --nodeqos`"
    return f"see `kubetide {command} --help`"


# -- spec files: scenarios and GROUPS.yaml ------------------------------------------------------------


def read_scenario(path: str | None, demo: str, limits=None):
    """(Scenario, its bytes) from a file or `-`; without `path`, the bundled scenario `demo`
    (a resource path inside the kubetide package). `limits`: sim/spec/limits.py's, else the
    defaults."""
    from importlib import resources

    if path is not None:
        return _scenario(read_input(path), source_name(path), scenario_base_dir(path), limits)
    with resources.as_file(resources.files("kubetide").joinpath(demo)) as demo_path:
        return _scenario(demo_path.read_text(encoding="utf-8"), str(demo_path), demo_path.parent, limits)


def scenario_base_dir(path: str) -> Path:
    """Where a scenario's relative `file:` paths are read from: its folder, or the current
    directory for stdin."""
    return Path.cwd() if path == STDIN else Path(path).parent


def _scenario(text: str, source: str, base_dir: Path, limits=None):
    from kubetide.sim.spec.limits import DEFAULT_LIMITS
    from kubetide.sim.spec.scenario import scenario_from_documents

    documents = parse_text(text, source)
    kinds = kinds_in(documents)
    if SCENARIO_KIND not in kinds:
        raise UserError(
            f"{source}: {describe(kinds)}, not a Scenario (kind: {SCENARIO_KIND}): "
            f"{reader_hint(kinds, 'simulate')}"
        )
    return scenario_from_documents(documents, source, base_dir, limits or DEFAULT_LIMITS), text.encode(
        "utf-8"
    )


def read_node_groups(path: str):
    """GROUPS.yaml (or `-`): the node group definitions; a Kubernetes object or Scenario is an error."""
    from kubetide.cloud.static import groups_from_documents

    source = source_name(path)
    documents = parse_text(read_input(path), source)
    kinds = kinds_in(documents)
    if kinds:
        raise UserError(
            f"{source}: {describe(kinds)}, not node groups (nodeGroups: [...]): {reader_hint(kinds, 'plan')}"
        )
    return groups_from_documents(documents, source)
