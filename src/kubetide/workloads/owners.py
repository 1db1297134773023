"""A ReplicaSet's pods and its related pods, found in loaded manifests.

The ReplicaSet controller ranks the ReplicaSet's active pods against its *related* pods: the pods
of every ReplicaSet owned by the same controller (for a Deployment, its old and new ReplicaSets),
de-duplicated by UID. Here a pod belongs to the ReplicaSet named by its controller owner reference.
A ReplicaSet's controller comes from the ReplicaSet object when it was loaded; otherwise from the
Deployment naming convention: a Deployment's ReplicaSet is called `<deployment>-<hash>` and stamps
`pod-template-hash: <hash>` on its pods.

ReplicationControllers scale down with the same ranking and have no controller of their own. A
target without a controller has no related pods at all (kube-controller-manager lists them through
the controller), so its pods all rank 0.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kubetide.errors import UserError
from kubetide.model import Manifests, Pod
from kubetide.workloads.ranking import is_active

POD_TEMPLATE_HASH = "pod-template-hash"
KIND_ALIASES = {
    "deployment": "Deployment",
    "deployments": "Deployment",
    "deploy": "Deployment",
    "replicaset": "ReplicaSet",
    "replicasets": "ReplicaSet",
    "rs": "ReplicaSet",
    "replicationcontroller": "ReplicationController",
    "replicationcontrollers": "ReplicationController",
    "rc": "ReplicationController",
}
SCALED_BY_RANKING = ("ReplicaSet", "ReplicationController")


@dataclass
class Target:
    """One ReplicaSet (or ReplicationController) and the pods its controller would rank."""

    kind: str
    namespace: str
    name: str
    deployment: str | None  # the controlling Deployment's name, when there is one
    deployment_source: str = ""  # "ReplicaSet object" (authoritative) or "pod-template-hash label"
    pods: list[Pod] = field(default_factory=list)  # active pods, in file order
    inactive: list[Pod] = field(default_factory=list)  # terminating or finished: not ranked
    related: list[Pod] = field(default_factory=list)  # pods of every sibling, itself included; none
    # without a controller
    siblings: list[str] = field(default_factory=list)  # the other ReplicaSets of the Deployment

    @property
    def has_controller(self) -> bool:
        """Whether a controlling owner (a Deployment) is known: without one, every rank is 0."""
        return self.deployment is not None

    @property
    def label(self) -> str:
        return f"{self.kind}/{self.namespace}/{self.name}"


def find_targets(manifests: Manifests) -> list[Target]:
    """Every ReplicaSet or ReplicationController that controls pods (or was loaded as an object)."""
    targets: dict[tuple[str, str, str], Target] = {}
    for workload in manifests.workloads:
        if workload.kind == "ReplicaSet":
            owner = workload.meta.controller
            deployment = owner.name if owner is not None and owner.kind == "Deployment" else None
            targets[("ReplicaSet", workload.namespace, workload.name)] = Target(
                "ReplicaSet",
                workload.namespace,
                workload.name,
                deployment,
                "ReplicaSet object",
            )
    for pod in manifests.pods:
        owner = pod.controller
        if owner is None or owner.kind not in SCALED_BY_RANKING:
            continue
        key = (owner.kind, pod.namespace, owner.name)
        target = targets.get(key)
        if target is None:
            target = targets[key] = Target(owner.kind, pod.namespace, owner.name, None)
        if target.deployment is None and not target.deployment_source and owner.kind == "ReplicaSet":
            template_hash = pod.labels.get(POD_TEMPLATE_HASH, "")
            if template_hash and owner.name.endswith("-" + template_hash):
                target.deployment = owner.name[: -len(template_hash) - 1]
                target.deployment_source = "pod-template-hash label"
        (target.pods if is_active(pod) else target.inactive).append(pod)

    by_deployment: dict[tuple[str, str], list[Target]] = {}
    for target in targets.values():
        if target.deployment is not None:
            by_deployment.setdefault((target.namespace, target.deployment), []).append(target)
    for target in targets.values():
        if target.deployment is None:
            continue
        family = by_deployment.get((target.namespace, target.deployment), [target])
        seen: set[str] = set()
        for member in family:
            for pod in (*member.pods, *member.inactive):
                if pod.uid not in seen:
                    seen.add(pod.uid)
                    target.related.append(pod)
        target.siblings = [m.name for m in family if m is not target]
    return list(targets.values())


def resolve_owner(manifests: Manifests, owner: str | None, source: str = "the input") -> Target:
    """The target named by `--owner KIND/NAME` (or KIND/NAMESPACE/NAME), or the only one there is."""
    targets = find_targets(manifests)
    with_pods = [t for t in targets if t.pods]
    if owner is None:
        if len(with_pods) == 1:
            return with_pods[0]
        if not with_pods:
            raise UserError(f"{source}: no active pods controlled by a ReplicaSet or ReplicationController")
        raise UserError(
            f"{source}: pods of {len(with_pods)} owners ({_listing(with_pods)}); choose one with --owner KIND/NAME"
        )
    kind, namespace, name = _parse_owner(owner)
    if kind == "Deployment":
        family = [
            t for t in targets if t.deployment == name and (namespace is None or t.namespace == namespace)
        ]
        if not family:
            raise UserError(
                f"--owner {owner}: no ReplicaSet of Deployment {name} in {source}{_known(targets)}"
            )
        _one_namespace(owner, family)
        active = [t for t in family if t.pods]
        if len(active) == 1:
            return active[0]
        if not active:
            raise UserError(f"--owner {owner}: Deployment {name} has no active pods in {source}")
        raise UserError(
            f"--owner {owner}: Deployment {name} has active pods in {len(active)} ReplicaSets "
            f"({_listing(active)}) and would split the scale-down between them; "
            "choose one with --owner ReplicaSet/NAME"
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
            "use a Deployment, ReplicaSet or ReplicationController"
        )
    return kind, (parts[1] if len(parts) == 3 else None), parts[-1]


def _one_namespace(owner: str, targets: list[Target]) -> None:
    namespaces = sorted({t.namespace for t in targets})
    if len(namespaces) > 1:
        raise UserError(
            f"--owner {owner}: found in namespaces {', '.join(namespaces)}; write KIND/NAMESPACE/NAME"
        )


def _listing(targets: list[Target]) -> str:
    return ", ".join(
        f"{t.label} ({len(t.pods)} pod{'s' if len(t.pods) != 1 else ''})"
        for t in sorted(targets, key=lambda t: t.label)
    )


def _known(targets: list[Target]) -> str:
    with_pods = [t for t in targets if t.pods]
    return f" (found: {_listing(with_pods)})" if with_pods else ""
