"""A ReplicaSet's pods and its related pods, found in loaded manifests.

The ReplicaSet controller ranks the ReplicaSet's active pods against its *related* pods: the pods
of every ReplicaSet whose controller is the same object, whatever its kind (a Deployment's old and
new ReplicaSets, an Argo Rollout's canary and stable ones), de-duplicated by UID. Like
kube-controller-manager's getReplicaSetsWithSameController, ReplicaSets are grouped by the UID of
their controller ownerReference; a hand-written reference without a UID is matched by kind and name
in the namespace instead (the API server would have filled the UID in). A pod belongs to the
ReplicaSet named by its own controller reference (upstream lists each related ReplicaSet's pods by
its selector; the two agree for every pod the ReplicaSet controller has claimed).

Without the ReplicaSet object, the controller is inferred from the pod-template-hash naming
convention: a ReplicaSet called `<owner>-<hash>` whose pods carry `pod-template-hash: <hash>` is a
Deployment's (`rollouts-pod-template-hash: <hash>`: an Argo Rollout's).

ReplicationControllers scale down with the same ranking and have no controller of their own. A
target without a controller has no related pods at all (kube-controller-manager lists them through
the controller), so its pods all rank 0.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kubetide.errors import UserError
from kubetide.model import Manifests, Pod
from kubetide.model.meta import OwnerReference
from kubetide.model.pod_columns import PodColumns
from kubetide.workloads.ranking import active_row

POD_TEMPLATE_HASH = "pod-template-hash"
ROLLOUTS_POD_TEMPLATE_HASH = "rollouts-pod-template-hash"  # Argo Rollouts' ReplicaSets
# label on the pods -> the kind of the controller that names its ReplicaSets `<name>-<hash>`
TEMPLATE_HASH_LABELS = ((POD_TEMPLATE_HASH, "Deployment"), (ROLLOUTS_POD_TEMPLATE_HASH, "Rollout"))
KIND_ALIASES = {
    "deployment": "Deployment",
    "deployments": "Deployment",
    "deploy": "Deployment",
    "rollout": "Rollout",
    "rollouts": "Rollout",
    "ro": "Rollout",
    "replicaset": "ReplicaSet",
    "replicasets": "ReplicaSet",
    "rs": "ReplicaSet",
    "replicationcontroller": "ReplicationController",
    "replicationcontrollers": "ReplicationController",
    "rc": "ReplicationController",
}
SCALED_BY_RANKING = ("ReplicaSet", "ReplicationController")
CONTROLLERS_OF_REPLICASETS = ("Deployment", "Rollout")  # --owner kinds that mean one of their ReplicaSets


@dataclass(frozen=True, slots=True)
class Controller:
    """The object that controls a ReplicaSet: a Deployment, an Argo Rollout, any kind."""

    kind: str
    name: str
    uid: str = ""  # "" when not known (a hand-written reference, or inferred from the naming)
    source: str = ""  # "ReplicaSet object" (authoritative) or "<label> label" (inferred)

    def identity(self, namespace: str) -> tuple[str, ...]:
        """What makes two ReplicaSets siblings: the controller's UID, unique in the cluster, as
        kube-controller-manager's controllerUIDIndex keys them; without one, kind and name in
        the namespace."""
        return ("uid", self.uid) if self.uid else ("name", namespace, self.kind, self.name)

    @property
    def label(self) -> str:
        return f"{self.kind}/{self.name}"


def controller_identity(namespace: str, ref: OwnerReference) -> tuple[str, ...]:
    """The sibling key of a ReplicaSet whose controller reference is `ref` (see Controller)."""
    return Controller(ref.kind, ref.name, ref.uid).identity(namespace)


@dataclass
class Target:
    """One ReplicaSet (or ReplicationController) and the pods its controller would rank: rows of
    the loaded pods' table (model/pod_columns.py); `pods`, `inactive` and `related` build their
    Pods when read."""

    kind: str
    namespace: str
    name: str
    controller: Controller | None  # who controls this ReplicaSet, when known
    table: PodColumns = field(default_factory=PodColumns, repr=False)
    rows: list[int] = field(default_factory=list)  # active pods, in file order
    inactive_rows: list[int] = field(default_factory=list)  # terminating or finished: not ranked
    related_rows: list[int] = field(default_factory=list)  # pods of every sibling, itself
    # included; none without a controller
    siblings: list[str] = field(default_factory=list)  # the other ReplicaSets of the same controller

    @property
    def pods(self) -> list[Pod]:
        return self.table.pods(self.rows)

    @property
    def inactive(self) -> list[Pod]:
        return self.table.pods(self.inactive_rows)

    @property
    def related(self) -> list[Pod]:
        return self.table.pods(self.related_rows)

    @property
    def has_controller(self) -> bool:
        """Whether a controlling owner is known: without one, every rank is 0."""
        return self.controller is not None

    @property
    def deployment(self) -> str | None:
        """The controlling Deployment's name, when the controller is a Deployment."""
        c = self.controller
        return c.name if c is not None and c.kind == "Deployment" else None

    @property
    def label(self) -> str:
        return f"{self.kind}/{self.namespace}/{self.name}"


def find_targets(manifests: Manifests) -> list[Target]:
    """Every ReplicaSet or ReplicationController that controls pods (or was loaded as an object)."""
    table = manifests.pod_table()
    targets: dict[tuple[str, str, str], Target] = {}
    for workload in manifests.workloads:
        if workload.kind == "ReplicaSet":
            ref = workload.meta.controller
            controller = None if ref is None else Controller(ref.kind, ref.name, ref.uid, "ReplicaSet object")
            key = ("ReplicaSet", workload.namespace, workload.name)
            targets[key] = Target("ReplicaSet", workload.namespace, workload.name, controller, table)
    loaded = set(targets)
    namespaces, phases, deleted = table.namespaces, table.phases, table.deleted
    for row, owner in enumerate(table.controllers):
        if owner is None or owner.kind not in SCALED_BY_RANKING:
            continue
        namespace = namespaces[row]
        key = (owner.kind, namespace, owner.name)
        target = targets.get(key)
        if target is None:
            target = targets[key] = Target(owner.kind, namespace, owner.name, None, table)
        if target.controller is None and key not in loaded and owner.kind == "ReplicaSet":
            target.controller = _inferred_controller(table.labels[row], owner.name)
        (target.rows if active_row(phases[row], deleted[row]) else target.inactive_rows).append(row)

    # A controller inferred from the naming (no UID) is the one a loaded ReplicaSet names with its
    # UID, when kind and name agree: both groups are one family.
    uids = {
        (t.namespace, c.kind, c.name): c.uid
        for t in targets.values()
        if (c := t.controller) is not None and c.uid
    }
    families: dict[tuple[str, ...], list[Target]] = {}
    for target in targets.values():
        c = target.controller
        if c is None:
            continue
        uid = c.uid or uids.get((target.namespace, c.kind, c.name), "")
        identity = Controller(c.kind, c.name, uid).identity(target.namespace)
        families.setdefault(identity, []).append(target)
    uids_of_rows = table.uids
    for family in families.values():
        related: list[int] = []
        seen: set[str] = set()
        for member in family:
            for row in (*member.rows, *member.inactive_rows):
                if uids_of_rows[row] not in seen:
                    seen.add(uids_of_rows[row])
                    related.append(row)
        for target in family:
            target.related_rows = list(related)
            target.siblings = [m.name for m in family if m is not target]
    return list(targets.values())


def _inferred_controller(labels: dict[str, str], replicaset: str) -> Controller | None:
    """The controller a ReplicaSet's name and its pod's template-hash label imply, if any."""
    for label, kind in TEMPLATE_HASH_LABELS:
        template_hash = labels.get(label, "")
        if template_hash and replicaset.endswith("-" + template_hash):
            return Controller(kind, replicaset[: -len(template_hash) - 1], source=f"{label} label")
    return None


def resolve_owner(manifests: Manifests, owner: str | None, source: str = "the input") -> Target:
    """The target named by `--owner KIND/NAME` (or KIND/NAMESPACE/NAME), or the only one there is."""
    targets = find_targets(manifests)
    with_pods = [t for t in targets if t.rows]
    if owner is None:
        return _the_one(
            with_pods,
            f"{source}: no active pods controlled by a ReplicaSet or ReplicationController",
            f"{source}: pods of {len(with_pods)} owners ({_listing(with_pods)}); choose one with --owner KIND/NAME",
        )
    kind, namespace, name = _parse_owner(owner)
    if kind in CONTROLLERS_OF_REPLICASETS:
        family = [
            t
            for t in targets
            if (c := t.controller) is not None
            and (c.kind, c.name) == (kind, name)
            and (namespace is None or t.namespace == namespace)
        ]
        if not family:
            raise UserError(f"--owner {owner}: no ReplicaSet of {kind} {name} in {source}{_known(targets)}")
        _one_namespace(owner, family)
        active = [t for t in family if t.rows]
        return _the_one(
            active,
            f"--owner {owner}: {kind} {name} has no active pods in {source}",
            f"--owner {owner}: {kind} {name} has active pods in {len(active)} ReplicaSets "
            f"({_listing(active)}) and would split the scale-down between them; "
            "choose one with --owner ReplicaSet/NAME",
        )
    matches = [
        t
        for t in targets
        if t.kind == kind and t.name == name and (namespace is None or t.namespace == namespace)
    ]
    if not matches:
        raise UserError(f"--owner {owner}: no {kind} {name} in {source}{_known(targets)}")
    _one_namespace(owner, matches)
    return matches[0]


def _parse_owner(owner: str) -> tuple[str, str | None, str]:
    parts = owner.split("/")
    if len(parts) not in (2, 3) or not all(parts):
        raise UserError(f"--owner {owner}: expected KIND/NAME or KIND/NAMESPACE/NAME, e.g. Deployment/web")
    kind = KIND_ALIASES.get(parts[0].lower())
    if kind is None:
        raise UserError(
            f"--owner {owner}: {parts[0]} does not scale down by ranking pods; "
            "use a Deployment, Rollout, ReplicaSet or ReplicationController"
        )
    return kind, (parts[1] if len(parts) == 3 else None), parts[-1]


def _one_namespace(owner: str, targets: list[Target]) -> None:
    namespaces = sorted({t.namespace for t in targets})
    if len(namespaces) > 1:
        raise UserError(
            f"--owner {owner}: found in namespaces {', '.join(namespaces)}; write KIND/NAMESPACE/NAME"
        )


def _the_one(candidates: list[Target], if_none: str, if_several: str) -> Target:
    """The only candidate; UserError with the message that says why there is not exactly one."""
    if len(candidates) == 1:
        return candidates[0]
    raise UserError(if_several if candidates else if_none)


def _listing(targets: list[Target]) -> str:
    return ", ".join(
        f"{t.label} ({len(t.rows)} pod{'s' if len(t.rows) != 1 else ''})"
        for t in sorted(targets, key=lambda t: t.label)
    )


def _known(targets: list[Target]) -> str:
    with_pods = [t for t in targets if t.rows]
    return f" (found: {_listing(with_pods)})" if with_pods else ""
