"""Load Kubernetes objects from YAML or JSON files, exactly as kubectl prints them.

Accepts single documents, multi-document YAML, and `kind: List` (nested lists too). Each kind has a
parser registered in `PARSERS`; other packages register their own kinds (the QoS agent adds NodeQOS
and PodMetrics) with `register_kind`. Unknown kinds are skipped with one warning per kind.
Any malformed object aborts the whole load with a ManifestError naming file, object and field.
"""

from __future__ import annotations

import dataclasses
import json
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from kubetide.errors import ManifestError
from kubetide.model.node import Node, parse_node
from kubetide.model.pod import Pod, parse_pod
from kubetide.model.policy import (
    SYSTEM_PRIORITY_CLASSES,
    ConfigMap,
    Namespace,
    PodDisruptionBudget,
    PriorityClass,
    parse_configmap,
    parse_namespace,
    parse_pdb,
    parse_priority_class,
)
from kubetide.model.reader import Reader
from kubetide.model.workloads import WORKLOAD_KINDS, Workload, parse_workload

try:  # libyaml is several times faster on large cluster dumps
    _YamlLoader = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - depends on how PyYAML was built
    _YamlLoader = yaml.SafeLoader

Parser = Callable[[Reader], Any]

PARSERS: dict[str, Parser] = {
    "Node": parse_node,
    "Pod": parse_pod,
    "PodDisruptionBudget": parse_pdb,
    "PriorityClass": parse_priority_class,
    "Namespace": parse_namespace,
    "ConfigMap": parse_configmap,
    **{kind: (lambda reader, kind=kind: parse_workload(reader, kind)) for kind in WORKLOAD_KINDS},
}


def register_kind(kind: str, parser: Parser) -> None:
    """Teach the loader a new kind (used by feature packages for their own CRDs)."""
    PARSERS[kind] = parser


@dataclass
class Manifests:
    """Everything loaded from a set of files, by kind, in file order."""

    nodes: list[Node] = field(default_factory=list)
    pods: list[Pod] = field(default_factory=list)
    pdbs: list[PodDisruptionBudget] = field(default_factory=list)
    workloads: list[Workload] = field(default_factory=list)
    priority_classes: list[PriorityClass] = field(default_factory=list)
    namespaces: list[Namespace] = field(default_factory=list)
    configmaps: list[ConfigMap] = field(default_factory=list)
    other: dict[str, list[Any]] = field(default_factory=dict)  # registered extra kinds
    warnings: list[str] = field(default_factory=list)

    def add(self, kind: str, obj: Any) -> None:
        target = {
            "Node": self.nodes,
            "Pod": self.pods,
            "PodDisruptionBudget": self.pdbs,
            "PriorityClass": self.priority_classes,
            "Namespace": self.namespaces,
            "ConfigMap": self.configmaps,
        }.get(kind)
        if target is None:
            target = self.workloads if kind in WORKLOAD_KINDS else self.other.setdefault(kind, [])
        target.append(obj)

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

    def workloads_of(self, kind: str) -> list[Workload]:
        return [w for w in self.workloads if w.kind == kind]


def load_files(paths: Iterable[str | Path]) -> Manifests:
    result = Manifests()
    for path in paths:
        result.extend(load_file(path))
    resolve_priorities(result, source=", ".join(str(p) for p in paths))
    return result


def load_file(path: str | Path) -> Manifests:
    source = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ManifestError(source, "", "", "no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ManifestError(source, "", "", f"cannot read: {exc}") from None
    manifests = load_documents(parse_text(text, source), source)
    return manifests


def parse_text(text: str, source: str) -> list[Any]:
    """The documents in a YAML or JSON text."""
    stripped = text.lstrip()
    if stripped.startswith(("{", "[")):
        try:
            return [json.loads(text)]
        except json.JSONDecodeError:
            pass  # YAML flow style also starts with "{"; let the YAML parser have a go
    try:
        return [doc for doc in yaml.load_all(text, Loader=_YamlLoader) if doc is not None]
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ManifestError(source, where, "", f"invalid YAML: {problem}") from None


def load_documents(documents: list[Any], source: str) -> Manifests:
    """Parse already-decoded documents (used for files and for manifests inlined in scenarios)."""
    result = Manifests()
    skipped: Counter[str] = Counter()
    multi = len(documents) > 1
    for index, doc in enumerate(documents):
        prefix = f"document {index + 1}" if multi else ""
        for location, obj in _flatten(doc, prefix, source):
            kind = obj.get("kind")
            parser = PARSERS.get(kind) if isinstance(kind, str) else None
            if parser is None:
                if not isinstance(kind, str) or not kind:
                    raise ManifestError(source, location, "kind", "required field is missing")
                skipped[kind] += 1
                continue
            label = _describe(obj, kind)
            reader = Reader(obj, source, f"{location} ({label})" if location else label)
            result.add(kind, parser(reader))
    if skipped:
        kinds = ", ".join(f"{k} ({n})" if n > 1 else k for k, n in sorted(skipped.items()))
        result.warnings.append(f"{source}: skipped unknown kinds: {kinds}")
    return result


def _flatten(doc: Any, location: str, source: str) -> Iterator[tuple[str, dict]]:
    if not isinstance(doc, dict):
        raise ManifestError(source, location, "", "expected a Kubernetes object (a mapping with a kind)")
    kind = doc.get("kind")
    if isinstance(kind, str) and kind.endswith("List") and "items" in doc:
        items = doc.get("items") or []
        if not isinstance(items, list):
            raise ManifestError(source, location, "items", "expected a list")
        for index, item in enumerate(items):
            inner = f"items[{index}]"
            if kind != "List" and isinstance(item, dict) and "kind" not in item:
                # Typed lists as the API server returns them (PodMetricsList, PodList) leave the
                # kind off their items: it is the list's kind without "List".
                item = {"kind": kind[: -len("List")], **item}
            yield from _flatten(item, f"{location}: {inner}" if location else inner, source)
        return
    yield location, doc


def _describe(obj: dict, kind: str) -> str:
    meta = obj.get("metadata")
    if not isinstance(meta, dict) or not isinstance(meta.get("name"), str):
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
    for pod in manifests.pods:
        if pod.explicit_priority and pod.priority_class_name:
            classes.setdefault(pod.priority_class_name, pod.priority)
    default = 0
    for pc in manifests.priority_classes:
        classes[pc.name] = pc.value
        if pc.global_default:
            default = pc.value
    unknown_in_templates: set[str] = set()

    def resolve(pod: Pod, where: str, field: str | None) -> Pod:
        if pod.explicit_priority:
            return pod
        if not pod.priority_class_name:
            return dataclasses.replace(pod, priority=default) if default else pod
        if pod.priority_class_name not in classes:
            if field is None:
                unknown_in_templates.add(pod.priority_class_name)
                return pod
            raise ManifestError(
                source,
                where,
                field,
                f'unknown PriorityClass "{pod.priority_class_name}" (add its manifest or set spec.priority)',
            )
        return dataclasses.replace(pod, priority=classes[pod.priority_class_name])

    manifests.pods[:] = [resolve(p, f"Pod {p.key}", "spec.priorityClassName") for p in manifests.pods]
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
