"""Load Kubernetes objects from YAML or JSON files, exactly as kubectl prints them.

Accepts single documents, multi-document YAML, and `kind: List` (nested lists too). Each kind has a
parser registered in `PARSERS`; other packages register their own kinds (the QoS agent adds NodeQOS
and PodMetrics) with `register_kind`. Unknown kinds are skipped with one warning per kind.
Any malformed object aborts the whole load with a ManifestError naming file, object and field.
"""

from __future__ import annotations

import codecs
import contextlib
import dataclasses
import gc
import json
import os
import stat
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import yaml

from kubetide.errors import ManifestError, UserError
from kubetide.model import yaml_chunks
from kubetide.model.bounds import MAX_NESTING, check_text
from kubetide.model.hpa_typed import decode_hpa, parse_hpa_typed
from kubetide.model.meta import ObjectMeta
from kubetide.model.node import Node
from kubetide.model.node_typed import decode_node, parse_node_typed
from kubetide.model.pod import Pod
from kubetide.model.pod_columns import PodColumns
from kubetide.model.pod_typed import CheckedPod, checked_pod, decode_pod, parse_pod_typed, typed_pod
from kubetide.model.policy import (
    SYSTEM_PRIORITY_CLASSES,
    ConfigMap,
    Namespace,
    PodDisruptionBudget,
    PriorityClass,
)
from kubetide.model.policy_typed import (
    decode_configmap,
    decode_namespace,
    decode_pdb,
    decode_priority_class,
    parse_configmap_typed,
    parse_namespace_typed,
    parse_pdb_typed,
    parse_priority_class_typed,
)
from kubetide.model.quantity import MAX_UNITS
from kubetide.model.reader import Reader
from kubetide.model.stream import (
    FIELD,
    ITEM,
    ITEMS,
    POD_RUN,
    TYPED_KINDS,
    JsonObject,
    NotStreamable,
    PodRun,
)
from kubetide.model.stream import members as stream_members
from kubetide.model.typed import label
from kubetide.model.typed_kinds import Decode
from kubetide.model.wire import PodWire
from kubetide.model.workloads import WORKLOAD_KINDS, Workload
from kubetide.model.workloads_typed import (
    WORKLOAD_DECODERS,
    WORKLOAD_PARSERS,
    decode_cronjob,
    parse_cronjob_typed,
)


def yaml_loader() -> type[yaml.SafeLoader] | type[yaml.CSafeLoader]:
    """libyaml's loader (several times faster on large dumps) when PyYAML was built with it, else
    the pure-Python one: both load the same objects and pass the same bounds checks."""
    loader: type[yaml.SafeLoader] | type[yaml.CSafeLoader] | None = getattr(yaml, "CSafeLoader", None)
    return yaml.SafeLoader if loader is None else loader


Parser = Callable[[Reader], Any]

PARSERS: dict[str, Parser] = {
    "Node": parse_node_typed,
    "Pod": parse_pod_typed,
    "PodDisruptionBudget": parse_pdb_typed,
    "PriorityClass": parse_priority_class_typed,
    "Namespace": parse_namespace_typed,
    "ConfigMap": parse_configmap_typed,
    "HorizontalPodAutoscaler": parse_hpa_typed,
    "CronJob": parse_cronjob_typed,
    **WORKLOAD_PARSERS,
}


def register_kind(kind: str, parser: Parser, decoder: Decode | None = None) -> None:
    """Teach the loader a new kind (used by feature packages for their own CRDs); `decoder`, when
    given, decodes a JSON List item's text straight into the kind's wire schema (None: the
    Reader's turn), as model/typed_kinds.py makes one."""
    PARSERS[kind] = parser
    if decoder is not None:
        _TYPED_DECODERS[kind] = decoder
        TYPED_KINDS.add(kind)


# A dump of the largest cluster Kubernetes supports (5,000 nodes, 150,000 pods) with its workloads
# and policies stays well under this; anything over it is a mistake or an alias bomb.
MAX_OBJECTS = 1_000_000
# `kind: List` inside `kind: List`: kubectl never nests them more than once or twice.
MAX_LIST_NESTING = 32


@dataclass
class Manifests:
    """Everything loaded from a set of files, by kind, in file order.

    Pods are Pods in `pods`, or, in a Manifests made with `pod_rows=PodColumns()` (what
    `kubetide downscale` loads), rows of `pod_rows` (model/pod_columns.py), with `pods` left
    empty: `pod_table()` reads either."""

    nodes: list[Node] = field(default_factory=list)
    pods: list[Pod] = field(default_factory=list)
    pdbs: list[PodDisruptionBudget] = field(default_factory=list)
    workloads: list[Workload] = field(default_factory=list)
    priority_classes: list[PriorityClass] = field(default_factory=list)
    namespaces: list[Namespace] = field(default_factory=list)
    configmaps: list[ConfigMap] = field(default_factory=list)
    other: dict[str, list[Any]] = field(default_factory=dict)  # registered extra kinds
    warnings: list[str] = field(default_factory=list)
    # "Kind namespace/name" -> where it was loaded, so a second copy is an error naming both.
    origins: dict[str, str] = field(default_factory=dict, repr=False)
    # Requests of the running pods bound to each node, summed: a node's columns in the snapshot
    # are int64, and a dump may overcommit a node (pods are bound before anyone checks fit).
    bound_requests: dict[str, dict[str, int]] = field(default_factory=dict, repr=False)
    pod_rows: PodColumns | None = field(default=None, repr=False)

    def pod_table(self) -> PodColumns:
        """The pods as columns: `pod_rows`, or the rows of `pods` (whose pod(row) is the Pod)."""
        return self.pod_rows if self.pod_rows is not None else PodColumns.of_pods(self.pods)

    def add(self, kind: str, obj: Any, where: str = "") -> None:
        """Add a parsed object; `where` ("file: items[3]") makes a second copy of it an error."""
        meta = getattr(obj, "meta", None)  # registered kinds may carry no ObjectMeta
        if where and isinstance(meta, ObjectMeta):
            self._note_origin(f"{kind} {meta.key}", where)
        if kind == "Pod":
            self._count_bound(obj.node_name, obj.phase, obj.requests, where)
            if self.pod_rows is not None:
                self.pod_rows.add_pod(obj)
                return
        self._list_of(kind).append(obj)

    def add_pod(self, pod: Pod, where: str) -> None:
        """add("Pod", pod, where), in fewer steps: a dump is mostly pods."""
        meta = pod.meta
        self._note_pod(meta.namespace, meta.name, where)
        if pod.node_name:
            self._count_bound(pod.node_name, pod.phase, pod.requests, where)
        if self.pod_rows is not None:
            self.pod_rows.add_pod(pod)
        else:
            self.pods.append(pod)

    def add_checked_pod(self, wire: PodWire, checked: CheckedPod, where: str) -> None:
        """add_pod for a pod `checked_pod` took, kept as a row of `pod_rows` (no Pod built)."""
        assert self.pod_rows is not None
        name, namespace = checked.meta[0], checked.meta[1]
        self._note_pod(namespace, name, where)
        template, node = checked.spec[:2]
        if node:
            self._count_bound(node, checked.status[0], template.requests, where)
        self.pod_rows.add_checked(wire, checked)

    def _note_pod(self, namespace: str, name: str, where: str) -> None:
        identity = f"Pod {namespace}/{name}" if namespace else f"Pod {name}"
        if identity in self.origins:
            self._note_origin(identity, where)  # raises
        self.origins[identity] = where

    def _note_origin(self, identity: str, where: str) -> None:
        first = self.origins.get(identity)
        if first is not None:
            source, _, location = where.partition(": ")
            raise ManifestError(source, location, "", f"duplicate {identity} (also in {first})")
        self.origins[identity] = where

    def _list_of(self, kind: str) -> list[Any]:
        if kind == "Pod":
            return self.pods
        if kind == "Node":
            return self.nodes
        if kind == "PodDisruptionBudget":
            return self.pdbs
        if kind == "PriorityClass":
            return self.priority_classes
        if kind == "Namespace":
            return self.namespaces
        if kind == "ConfigMap":
            return self.configmaps
        return self.workloads if kind in WORKLOAD_KINDS else self.other.setdefault(kind, [])

    def _count_bound(self, node: str, phase: str, requests: dict[str, int], where: str) -> None:
        """Add the requests of a pod on `node` (none: unscheduled) in `phase` to the node's totals."""
        if not node or phase == "Succeeded" or phase == "Failed":  # Pod.is_terminal
            return
        totals = self.bound_requests.get(node)
        if totals is None:
            totals = self.bound_requests[node] = {}
        for resource, amount in requests.items():
            total = totals.get(resource, 0) + amount
            if total > MAX_UNITS:
                source, _, location = where.partition(": ")
                raise ManifestError(
                    source,
                    location,
                    "spec",
                    f"the {resource} requests of the pods bound to node {node} add up to "
                    f"more than {MAX_UNITS} units (int64)",
                )
            totals[resource] = total

    def extend(self, other: Manifests) -> None:
        for name in (
            "nodes",
            "pods",
            "pdbs",
            "workloads",
            "priority_classes",
            "namespaces",
            "configmaps",
            "warnings",
        ):
            getattr(self, name).extend(getattr(other, name))
        for kind, objects in other.other.items():
            self.other.setdefault(kind, []).extend(objects)
        if other.pod_rows is not None:
            assert self.pod_rows is not None, "rows adopted by a Manifests of Pods"
            self.pod_rows.extend(other.pod_rows)

    def staged(self) -> Manifests:
        """An empty Manifests that knows what this one holds (for duplicates and node totals):
        a file is loaded into it, then adopted, so a failed load leaves this one as it was."""
        staged = Manifests(pod_rows=None if self.pod_rows is None else PodColumns())
        staged.origins = dict(self.origins)
        staged.bound_requests = {node: dict(totals) for node, totals in self.bound_requests.items()}
        return staged

    def adopt(self, staged: Manifests) -> None:
        self.extend(staged)
        self.origins = staged.origins
        self.bound_requests = staged.bound_requests


def load_files(paths: Iterable[str | Path]) -> Manifests:
    """Every object in the files; an object given twice (in one file or two) is an error."""
    paths = list(paths)
    result = Manifests()
    for path in paths:
        load_file(path, into=result)
    resolve_priorities(result, source=", ".join(str(p) for p in paths))
    return result


def load_file(path: str | Path, into: Manifests | None = None) -> Manifests:
    """Every object in one file; a List dump is read an item at a time (model/stream.py)."""
    source = str(path)
    result = Manifests() if into is None else into
    with without_gc_passes():
        if stream_list_file(path, source, result) is not None:
            return result
        return load_documents(parse_text(read_text(path), source), source, result)


def stream_list_file(path: str | Path, source: str, into: Manifests) -> set[str] | None:
    """Load a List dump an item at a time into `into`, and return the kinds of its items; None,
    with nothing loaded, when the file is not one model/stream.py streams or anything goes wrong
    on the way: the caller then loads it whole, whose checks and messages are the reference."""
    if not _regular_file_within_cap(path):
        return None  # devices, pipes and files over the cap: read_text reads or refuses them whole
    check_text_head(path, source)
    for fast_yaml in (yaml_chunks.members, None):
        staged = into.staged()
        kinds: set[str] = set()
        try:
            with Path(path).open("rb") as stream:  # JSON is read as bytes, YAML as text (stream.py)
                members = stream_members(stream, yaml_loader(), fast_yaml=fast_yaml)
                _load_members(_noting_kinds(members, kinds), source, staged)
        except yaml_chunks.Declined:
            continue  # the fast way could not vouch for the YAML: PyYAML's event stream may
        except Exception:  # anything at all: the whole-file load is the reference
            return None
        into.adopt(staged)
        return kinds
    return None


def _regular_file_within_cap(path: str | Path) -> bool:
    try:
        status = os.stat(path)
    except OSError:
        return False
    return stat.S_ISREG(status.st_mode) and status.st_size <= max_input_bytes()


def _noting_kinds(members: Iterable[tuple[str, Any, Any]], kinds: set[str]) -> Iterator[tuple[str, Any, Any]]:
    """The members, passed on unchanged, with each item's kind added to `kinds` (the list's own
    kind for items of a typed list that leave theirs out)."""
    list_kind = ""
    for what, key, value in members:
        if what == FIELD and key == "kind" and isinstance(value, str):
            list_kind = value.removesuffix("List") if value != "List" else ""
        elif what == POD_RUN:
            kinds.add("Pod")
        elif what == ITEM and isinstance(value, JsonObject):
            kinds.add(value.kind)
        elif what == ITEM and isinstance(value, dict):
            kind = value.get("kind") or list_kind
            if isinstance(kind, str) and kind:
                kinds.add(kind)
        yield what, key, value


@contextlib.contextmanager
def without_gc_passes() -> Iterator[None]:
    """Loading builds millions of acyclic objects and keeps most of them; the cycle collector's
    passes over that growing heap cost a sixth of the load and can free nothing."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _load_members(members: Iterable[tuple[str, Any, Any]], source: str, result: Manifests) -> None:
    """load_documents for one streamed List; raises NotStreamable where the whole-file load might
    see the file differently (a typed list's kind given after its items, nested lists, ...)."""
    kind: Any = None
    has_items = False
    skipped: Counter[str] = Counter()
    for what, key, value in members:
        if what == FIELD:
            if key == "kind":
                kind = value
            elif key == "items":
                raise NotStreamable  # items: null, or given twice
            continue
        if what == ITEMS:
            has_items = True
            continue
        if what == POD_RUN:
            _add_pod_run(value, key, source, result, skipped)
            continue
        if isinstance(value, JsonObject) and key < MAX_OBJECTS:
            decoded = _typed(value)
            if decoded is not None:
                where = f"{source}: items[{key}] ({decoded[1]})"
                if value.kind == "Pod":
                    result.add_pod(decoded[0], where)
                else:
                    result.add(value.kind, decoded[0], where)
                continue
            value = json.loads(bytes(value.raw()))  # the Reader words the error, or reads the odd form
        if not isinstance(value, dict) or key >= MAX_OBJECTS:
            raise NotStreamable
        if "kind" not in value:
            if not (isinstance(kind, str) and kind != "List" and kind.endswith("List")):
                raise NotStreamable
            value = {"kind": kind[: -len("List")], **value}
        item_kind = value.get("kind")
        if isinstance(item_kind, str) and item_kind.endswith("List") and "items" in value:
            raise NotStreamable
        _add_object(result, value, f"items[{key}]", source, skipped)
    if not (has_items and isinstance(kind, str) and kind.endswith("List")):
        raise NotStreamable
    _warn_skipped(result, source, skipped)


def _add_pod_run(run: PodRun, first: int, source: str, result: Manifests, skipped: Counter[str]) -> None:
    """The pods of a run, items[first] on, built and recorded in file order, in one loop; a pod
    the wire schema does not take is read by the Reader in its place, as any other item."""
    if first + len(run) > MAX_OBJECTS:
        raise NotStreamable  # the whole-file load refuses the count
    if result.pod_rows is not None:
        _add_pod_rows(run, first, source, result, skipped)
        return
    add_pod = result.add_pod
    for offset, wire in enumerate(run.wires):
        pod = typed_pod(wire, "", "")
        if pod is None:
            value = json.loads(bytes(run.raw(offset)))
            _add_object(result, value, f"items[{first + offset}]", source, skipped)
        else:
            add_pod(pod, f"{source}: items[{first + offset}] ({label('Pod', wire.metadata)})")


def _add_pod_rows(run: PodRun, first: int, source: str, result: Manifests, skipped: Counter[str]) -> None:
    """_add_pod_run into `pod_rows`: each pod's row written from its wire once `checked_pod`
    has made typed_pod's checks (no Pod built); a pod it does not take is the Reader's, as there."""
    add_checked_pod = result.add_checked_pod
    for offset, wire in enumerate(run.wires):
        checked = checked_pod(wire)
        if checked is None:
            value = json.loads(bytes(run.raw(offset)))
            _add_object(result, value, f"items[{first + offset}]", source, skipped)
        else:
            add_checked_pod(
                wire, checked, f"{source}: items[{first + offset}] ({label('Pod', wire.metadata)})"
            )


def _typed(value: JsonObject) -> tuple[Any, str] | None:
    """The model object of a List item decoded into the wire schema, and the loader's name for it;
    None when the Reader must read it."""
    if value.kind == "Pod":
        return decode_pod(value.raw())
    return _TYPED_DECODERS[value.kind](value.raw())


# The decoder of each of stream.TYPED_KINDS but Pod (decode_pod, above).
_TYPED_DECODERS: dict[str, Decode] = {
    "Node": decode_node,
    "Namespace": decode_namespace,
    "PriorityClass": decode_priority_class,
    "PodDisruptionBudget": decode_pdb,
    "ConfigMap": decode_configmap,
    "HorizontalPodAutoscaler": decode_hpa,
    "CronJob": decode_cronjob,
    **WORKLOAD_DECODERS,
}


# Every input is read whole (or, for a List dump, streamed once its size is known), so a size cap
# keeps /dev/zero, an endless pipe or a runaway file from taking all memory or reading forever.
# 2 GiB holds the largest dump measured (1.7 GB, BENCHMARKS.md) with room to spare; a larger
# cluster's dump can raise it through the environment, for every command at once.
MAX_INPUT_BYTES_VARIABLE = "KUBETIDE_MAX_INPUT_BYTES"
DEFAULT_MAX_INPUT_BYTES = 2 * 2**30
_READ_CHUNK_BYTES = 1 << 20


def max_input_bytes() -> int:
    """The size cap on any one input, from KUBETIDE_MAX_INPUT_BYTES (a byte count) or the default."""
    text = os.environ.get(MAX_INPUT_BYTES_VARIABLE, "").strip()
    if not text:
        return DEFAULT_MAX_INPUT_BYTES
    if not text.isdigit() or int(text) == 0 or len(text) > 19:
        raise UserError(f"{MAX_INPUT_BYTES_VARIABLE}={text[:40]!r}: expected a positive number of bytes")
    return int(text)


def too_large(source: str, limit: int) -> ManifestError:
    return ManifestError(
        source,
        "",
        "",
        f"larger than {limit:,} bytes, the input size limit (set {MAX_INPUT_BYTES_VARIABLE} to raise it)",
    )


def read_text(path: str | Path) -> str:
    """A file's UTF-8 text; a missing file, a directory, binary content or a file over the size
    cap (max_input_bytes) is a ManifestError. Devices and pipes are read a chunk at a time and
    refused at the first chunk that is not text, so `/dev/zero` is one line, not a MemoryError."""
    source = str(path)
    limit = max_input_bytes()
    try:
        with open(path, "rb") as file:
            status = os.fstat(file.fileno())
            if stat.S_ISREG(status.st_mode) and status.st_size > limit:
                raise too_large(source, limit)
            # A regular file too, a chunk at a time: a 1.9 GB file of NULs is refused at its first
            # chunk, where reading it whole and decoding it took twice its size (a MemoryError).
            return read_stream_text(file, source, limit)
    except FileNotFoundError:
        raise ManifestError(source, "", "", "no such file") from None
    except IsADirectoryError:
        raise ManifestError(source, "", "", "is a directory, not a file") from None
    except UnicodeDecodeError as exc:
        raise ManifestError(source, "", "", f"not UTF-8 text (byte {exc.start})") from None
    except OSError as exc:
        raise ManifestError(source, "", "", f"cannot read: {exc.strerror or exc}") from None


def read_stream_text(stream: BinaryIO, source: str, limit: int) -> str:
    """UTF-8 text from a stream of unknown length (standard input, a pipe, a device), refused as
    soon as it passes `limit` bytes or holds a byte no YAML or JSON text can (NUL, bad UTF-8)."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    parts: list[str] = []
    offset = 0
    while chunk := stream.read(_READ_CHUNK_BYTES):
        if offset + len(chunk) > limit:
            raise too_large(source, limit)
        nul = chunk.find(b"\0")
        if nul >= 0:
            raise _not_text(source, offset + nul)
        try:
            parts.append(decoder.decode(chunk))
        except UnicodeDecodeError as exc:
            raise ManifestError(source, "", "", f"not UTF-8 text (byte {offset + exc.start})") from None
        offset += len(chunk)
    try:
        parts.append(decoder.decode(b"", final=True))
    except UnicodeDecodeError:
        raise ManifestError(source, "", "", f"not UTF-8 text (cut short at byte {offset})") from None
    return "".join(parts)


def _not_text(source: str, offset: int) -> ManifestError:
    return ManifestError(source, "", "", f"not a text file (a NUL byte at byte {offset})")


def check_text_head(path: str | Path, source: str) -> None:
    """Refuse a regular file whose first chunk holds a NUL byte (no YAML or JSON text does) before
    the List streamer commits memory to it: it goes far into a file before it finds out. Anything
    else (a file gone since) is read_text's to word."""
    try:
        with open(path, "rb") as file:
            head = file.read(_READ_CHUNK_BYTES)
    except OSError:
        return
    nul = head.find(b"\0")
    if nul >= 0:
        raise _not_text(source, nul)


def parse_text(text: str, source: str) -> list[Any]:
    """The documents in a YAML or JSON text; an error if there are none (an empty or blank file)."""
    documents = _documents(text, source)
    if not documents:
        raise ManifestError(source, "", "", "no YAML or JSON document in the file (is it empty?)")
    return documents


def _documents(text: str, source: str) -> list[Any]:
    stripped = text.lstrip()
    if stripped.startswith(("{", "[")):
        try:
            return [json.loads(text)]
        except RecursionError:
            raise ManifestError(source, "", "", f"nested more than {MAX_NESTING} levels deep") from None
        except ValueError:
            pass  # YAML flow style also starts with "{"; let the YAML parser have a go
    loader = yaml_loader()
    check_text(text, source, loader)
    try:
        return [doc for doc in yaml.load_all(text, Loader=loader) if doc is not None]
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ManifestError(source, where, "", f"invalid YAML: {problem}") from None
    except ValueError as exc:  # an integer longer than Python converts (over 4,300 digits)
        raise ManifestError(source, "", "", f"invalid YAML: {exc}") from None


def load_documents(documents: list[Any], source: str, into: Manifests | None = None) -> Manifests:
    """Parse already-decoded documents (used for files and for manifests inlined in scenarios),
    adding them to `into` when given, so that duplicates across several calls are caught."""
    result = Manifests() if into is None else into
    skipped: Counter[str] = Counter()
    multi = len(documents) > 1
    for location, obj in _objects(documents, source, multi):
        _add_object(result, obj, location, source, skipped)
    _warn_skipped(result, source, skipped)
    return result


def _add_object(
    result: Manifests, obj: dict[str, Any], location: str, source: str, skipped: Counter[str]
) -> None:
    kind = obj.get("kind")
    if not isinstance(kind, str) or not kind:
        raise ManifestError(source, location, "kind", "required field is missing")
    parser = PARSERS.get(kind)
    if parser is None:
        skipped[kind] += 1
        return
    label = _describe(obj, kind)
    where = f"{location} ({label})" if location else label
    result.add(kind, parser(Reader(obj, source, where)), f"{source}: {where}")


def _warn_skipped(result: Manifests, source: str, skipped: Counter[str]) -> None:
    if skipped:
        kinds = ", ".join(f"{k} ({n})" if n > 1 else k for k, n in sorted(skipped.items()))
        result.warnings.append(f"{source}: skipped unknown kinds: {kinds}")


def _objects(documents: list[Any], source: str, multi: bool) -> list[tuple[str, dict[str, Any]]]:
    """(location, object) for every object, `kind: List` items flattened, before any is parsed:
    an alias bomb of nested lists is refused by its count, not after parsing millions of pods."""
    found: list[tuple[str, dict[str, Any]]] = []
    pending = [(f"document {index + 1}" if multi else "", doc, 0) for index, doc in enumerate(documents)]
    pending.reverse()
    while pending:
        location, doc, depth = pending.pop()
        if not isinstance(doc, dict):
            raise ManifestError(source, location, "", "expected a Kubernetes object (a mapping with a kind)")
        kind = doc.get("kind")
        if not (isinstance(kind, str) and kind.endswith("List") and "items" in doc):
            found.append((location, doc))
            if len(found) > MAX_OBJECTS:
                raise ManifestError(source, location, "", f"more than {MAX_OBJECTS:,} objects")
            continue
        items = doc.get("items") or []
        if not isinstance(items, list):
            raise ManifestError(source, location, "items", "expected a list")
        if depth >= MAX_LIST_NESTING:
            raise ManifestError(source, location, "items", f"lists nested more than {MAX_LIST_NESTING} deep")
        children = []
        for index, item in enumerate(items):
            if kind != "List" and isinstance(item, dict) and "kind" not in item:
                # Typed lists as the API server returns them (PodMetricsList, PodList) leave the
                # kind off their items: it is the list's kind without "List".
                item = {"kind": kind[: -len("List")], **item}
            inner = f"{location}: items[{index}]" if location else f"items[{index}]"
            children.append((inner, item, depth + 1))
        pending.extend(reversed(children))
    return found


def _describe(obj: dict[str, Any], kind: str) -> str:
    meta = obj.get("metadata")
    if not isinstance(meta, dict) or not isinstance(meta.get("name"), str) or not meta["name"]:
        return kind
    namespace = meta.get("namespace")
    name = f"{namespace}/{meta['name']}" if isinstance(namespace, str) and namespace else meta["name"]
    return f"{kind} {name}"


def resolve_priorities(manifests: Manifests, source: str) -> None:
    """Fill in pod priorities from priorityClassName, as the Priority admission plugin does.

    Class values come from PriorityClass objects, the built-in system classes, and admitted pods:
    `kubectl get ... -o yaml` dumps omit PriorityClasses, but every admitted pod carries both its
    class name and its resolved spec.priority. A pod naming an unknown class without a priority is
    an error (the API server would have rejected it); a workload template naming one is not (the
    class may simply be missing from the dump), so it gets a warning and priority 0.
    """
    classes = dict(SYSTEM_PRIORITY_CLASSES)
    rows = manifests.pod_rows
    if rows is not None:
        for explicit, name, value in zip(
            rows.explicit_priorities, rows.priority_class_names, rows.priorities, strict=True
        ):
            if explicit and name:
                classes.setdefault(name, value)
    for pod in manifests.pods:
        if pod.explicit_priority and pod.priority_class_name:
            classes.setdefault(pod.priority_class_name, pod.priority)
    default = 0
    for pc in manifests.priority_classes:
        classes[pc.name] = pc.value
        if pc.global_default:
            default = pc.value
    unknown_in_templates: set[str] = set()

    def unknown_class(name: str, where: str, field: str) -> ManifestError:
        return ManifestError(
            source, where, field, f'unknown PriorityClass "{name}" (add its manifest or set spec.priority)'
        )

    def resolve(pod: Pod, where: str | None, field: str | None) -> Pod:
        """`where` None: the pod's own `Pod namespace/name`, written only for an error."""
        if pod.explicit_priority:
            return pod
        if not pod.priority_class_name:
            # priority is not part of the shape: the parsed one still holds
            return dataclasses.replace(pod, priority=default, parsed_shape=pod.shape) if default else pod
        if pod.priority_class_name not in classes:
            if field is None:
                unknown_in_templates.add(pod.priority_class_name)
                return pod
            raise unknown_class(pod.priority_class_name, f"Pod {pod.key}" if where is None else where, field)
        return dataclasses.replace(pod, priority=classes[pod.priority_class_name], parsed_shape=pod.shape)

    if rows is not None:  # the same, on the rows: pod(row) gives a Pod the priority written here
        priorities = rows.priorities
        for row, (explicit, name) in enumerate(zip(rows.explicit_priorities, rows.priority_class_names)):
            if explicit:
                continue
            if not name:
                priorities[row] = default
            elif name in classes:
                priorities[row] = classes[name]
            else:
                raise unknown_class(name, f"Pod {rows.key(row)}", "spec.priorityClassName")
    manifests.pods[:] = [resolve(p, None, "spec.priorityClassName") for p in manifests.pods]
    for index, w in enumerate(manifests.workloads):
        prototype = resolve(w.template.prototype, w.key, None)
        if prototype is not w.template.prototype:
            template = dataclasses.replace(w.template, prototype=prototype)
            manifests.workloads[index] = dataclasses.replace(w, template=template)
    if unknown_in_templates:
        names = ", ".join(sorted(unknown_in_templates))
        manifests.warnings.append(
            f"{source}: unknown PriorityClass {names} in workload templates; using priority 0"
        )
