"""ObjectMeta: the part every Kubernetes object shares."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kubetide.model.reader import Reader
from kubetide.model.validation import labels_problem, namespace_problem, object_name_problem


@dataclass(frozen=True, slots=True)
class OwnerReference:
    kind: str
    name: str
    uid: str = ""
    controller: bool = False


@dataclass(frozen=True, slots=True)
class ObjectMeta:
    name: str
    namespace: str = ""
    uid: str = ""
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    owner_references: tuple[OwnerReference, ...] = ()
    creation_timestamp: float | None = None
    deletion_timestamp: float | None = None

    @property
    def key(self) -> str:
        """`namespace/name`, or just `name` for cluster-scoped objects."""
        return f"{self.namespace}/{self.name}" if self.namespace else self.name

    @property
    def controller(self) -> OwnerReference | None:
        for ref in self.owner_references:
            if ref.controller:
                return ref
        return None


class ObjectIdentity:
    """The identity of an object that keeps its metadata in `meta`: its name, its namespace ("" for
    cluster-scoped kinds) and its key, `namespace/name` (just `name` when cluster-scoped)."""

    __slots__ = ()  # the dataclasses using it keep their slots
    meta: ObjectMeta

    @property
    def name(self) -> str:
        return self.meta.name

    @property
    def namespace(self) -> str:
        return self.meta.namespace

    @property
    def key(self) -> str:
        return self.meta.key


class KindKeyedIdentity(ObjectIdentity):
    """An ObjectIdentity whose key starts with its kind, `Kind/namespace/name`: the keys of the
    workload kinds, CronJobs and HPAs share one space in the simulator's world."""

    __slots__ = ()

    if TYPE_CHECKING:  # a field of Workload, a class attribute of CronJob and HPA; at run time
        # not here, where dataclasses would take it for the Workload field's default

        @property
        def kind(self) -> str: ...

    @property
    def key(self) -> str:
        return f"{self.kind}/{self.meta.key}"


def parse_meta(reader: Reader, kind: str, namespaced: bool) -> ObjectMeta:
    meta = reader.child("metadata")
    name = meta.str("name", required=True)
    if not name:
        raise meta.error("must not be empty", "name")
    problem = object_name_problem(kind, name)
    if problem is not None:
        raise meta.error(problem, "name")
    namespace = (meta.str("namespace") or "default") if namespaced else ""
    problem = namespace_problem(namespace) if namespaced else None
    if problem is not None:
        raise meta.error(problem, "namespace")
    owners = []
    for ref in meta.items("ownerReferences"):
        owners.append(
            OwnerReference(
                kind=ref.str("kind", required=True),
                name=ref.str("name", required=True),
                uid=ref.str("uid", default=""),
                controller=ref.bool("controller"),
            )
        )
    if sum(owner.controller for owner in owners) > 1:
        raise meta.error("only one reference can have controller set to true", "ownerReferences")
    uid = meta.str("uid") or synthetic_uid(kind, namespace, name)
    return ObjectMeta(
        name=name,
        namespace=namespace,
        uid=uid,
        labels=checked_labels(meta, "labels"),
        annotations=meta.str_map("annotations"),
        owner_references=tuple(owners),
        creation_timestamp=meta.timestamp("creationTimestamp"),
        deletion_timestamp=meta.timestamp("deletionTimestamp"),
    )


def checked_labels(reader: Reader, key: str) -> dict[str, str]:
    """The label map under `key`, each key and value as the API server validates them."""
    labels = reader.str_map(key)
    bad = labels_problem(labels)
    if bad is not None:
        raise reader.error(bad[1], f"{key}.{bad[0]}")
    return labels


def synthetic_uid(kind: str, namespace: str, name: str) -> str:
    """A stable UID for hand-written manifests that have none.

    UIDs matter (downscale ranking breaks ties by UID), so they must not depend on load order.
    """
    digest = hashlib.sha1(f"{kind}/{namespace}/{name}".encode()).hexdigest()
    return f"{digest[:8]}-{digest[8:12]}-{digest[12:16]}-{digest[16:20]}-{digest[20:32]}"
