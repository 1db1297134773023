"""Workload controllers (Deployment, ReplicaSet, StatefulSet, DaemonSet, Job) and their templates."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from kubetide.model.meta import ObjectMeta, OwnerReference, parse_meta
from kubetide.model.pod import Pod, parse_pod_spec
from kubetide.model.reader import Reader
from kubetide.model.selectors import LabelSelector, parse_label_selector


@dataclass(frozen=True, slots=True)
class PodTemplate:
    """spec.template, parsed once into a prototype Pod that controllers stamp copies of."""

    prototype: Pod

    @property
    def labels(self) -> dict[str, str]:
        return self.prototype.labels

    def instantiate(
        self, name: str, namespace: str, uid: str, owner: OwnerReference, created: float, node_name: str = ""
    ) -> Pod:
        meta = ObjectMeta(
            name=name,
            namespace=namespace,
            uid=uid,
            labels=dict(self.prototype.labels),
            annotations=dict(self.prototype.annotations),
            owner_references=(owner,),
            creation_timestamp=created,
        )
        return dataclasses.replace(self.prototype, meta=meta, node_name=node_name)


@dataclass(frozen=True, slots=True)
class Workload:
    """Fields every controller kind shares. `replicas` is None for DaemonSets."""

    kind: str
    meta: ObjectMeta
    selector: LabelSelector
    template: PodTemplate
    replicas: int | None = None
    # Job
    parallelism: int | None = None
    completions: int | None = None
    # StatefulSet
    pod_management_policy: str = "OrderedReady"
    # status, as the API server last reported it
    status_replicas: int | None = None
    status_ready_replicas: int | None = None

    @property
    def name(self) -> str:
        return self.meta.name

    @property
    def namespace(self) -> str:
        return self.meta.namespace

    @property
    def key(self) -> str:
        return f"{self.kind}/{self.meta.key}"

    def owner_reference(self) -> OwnerReference:
        return OwnerReference(self.kind, self.meta.name, self.meta.uid, controller=True)


WORKLOAD_KINDS = ("Deployment", "ReplicaSet", "StatefulSet", "DaemonSet", "Job")


def parse_template(reader: Reader, namespace: str) -> PodTemplate:
    template = reader.child("template")
    tmeta = template.child("metadata")
    meta = ObjectMeta(
        name=tmeta.str("name", default="") or "",
        namespace=namespace,
        labels=tmeta.str_map("labels"),
        annotations=tmeta.str_map("annotations"),
    )
    return PodTemplate(parse_pod_spec(template, meta))


def parse_workload(reader: Reader, kind: str) -> Workload:
    meta = parse_meta(reader, kind, namespaced=True)
    spec = reader.child("spec")
    template = parse_template(spec, meta.namespace)
    if spec.has("selector"):
        selector = parse_label_selector(spec.child("selector"))
    elif kind == "Job":
        selector = LabelSelector(tuple(sorted(template.labels.items())))
    else:
        raise spec.error("required field is missing", "selector")
    if kind != "Job" and not selector.matches(template.labels):
        raise spec.error("selector does not match the template labels", "selector")
    replicas = None
    if kind in ("Deployment", "ReplicaSet", "StatefulSet"):
        replicas = spec.int("replicas", default=1)
        if replicas < 0:
            raise spec.error(f"must be non-negative, got {replicas}", "replicas")
    status = reader.child("status")
    parallelism = completions = None
    if kind == "Job":
        parallelism = spec.int("parallelism", default=1)
        completions = spec.int("completions")
        for name, value in (("parallelism", parallelism), ("completions", completions)):
            if value is not None and value < 0:
                raise spec.error(f"must be non-negative, got {value}", name)
    return Workload(
        kind=kind,
        meta=meta,
        selector=selector,
        template=template,
        replicas=replicas,
        parallelism=parallelism,
        completions=completions,
        pod_management_policy=spec.str("podManagementPolicy", default="OrderedReady"),
        status_replicas=status.int("replicas"),
        status_ready_replicas=status.int("readyReplicas"),
    )
