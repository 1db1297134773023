"""ObjectMeta: the part every Kubernetes object shares."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from kubetide.model.reader import Reader


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


def parse_meta(reader: Reader, kind: str, namespaced: bool) -> ObjectMeta:
    meta = reader.child("metadata")
    name = meta.str("name", required=True)
    if not name:
        raise meta.error("must not be empty", "name")
    namespace = (meta.str("namespace") or "default") if namespaced else ""
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
    uid = meta.str("uid") or synthetic_uid(kind, namespace, name)
    return ObjectMeta(
        name=name,
        namespace=namespace,
        uid=uid,
        labels=meta.str_map("labels"),
        annotations=meta.str_map("annotations"),
        owner_references=tuple(owners),
        creation_timestamp=meta.timestamp("creationTimestamp"),
        deletion_timestamp=meta.timestamp("deletionTimestamp"),
    )


def synthetic_uid(kind: str, namespace: str, name: str) -> str:
    """A stable UID for hand-written manifests that have none.

    UIDs matter (downscale ranking breaks ties by UID), so they must not depend on load order.
    """
    digest = hashlib.sha1(f"{kind}/{namespace}/{name}".encode()).hexdigest()
    return f"{digest[:8]}-{digest[8:12]}-{digest[12:16]}-{digest[16:20]}-{digest[20:32]}"
