"""Every API permission `kubetide run` uses, in one table, checked before anything is written.

The same table is what least-privilege RBAC for kubetide must grant. At start-up each entry is
asked of the API server with a SelfSubjectAccessReview (which every authenticated user may
create), so a missing permission is one clear line naming the verb and resource, before the
first write, instead of a failure in the middle of a drain.

Optional features' permissions are granted by a kustomize component of their own, which
`granted_by` names, so that the line says what to install: no default install lets kubetide
write to a workload.
"""

from __future__ import annotations

from dataclasses import dataclass

from kubetide.errors import UserError
from kubetide.kube.client import ApiError, KubeClient


@dataclass(frozen=True, slots=True)
class Permission:
    verbs: tuple[str, ...]
    resource: str  # plural, "pods/eviction" for a subresource
    group: str = ""  # "" is the core group
    namespaced_in_own_namespace: bool = False  # only in --namespace (ConfigMaps, Leases)
    why: str = ""
    granted_by: str = ""  # the kustomize component that grants it, for an optional feature's

    def resource_name(self) -> str:
        """As kubectl and the API server's refusals spell it: resource.group."""
        return f"{self.resource}.{self.group}" if self.group else self.resource

    def describe(self, verb: str, namespace: str) -> str:
        where = f' in namespace "{namespace}"' if self.namespaced_in_own_namespace else " cluster-wide"
        return f"{verb} {self.resource_name()}{where}"


WATCH = ("list", "watch")

PERMISSIONS: tuple[Permission, ...] = (
    Permission(("get", "list", "watch", "update"), "nodes", why="cache nodes; taint them"),
    Permission(("delete",), "nodes", why="remove a drained node's object"),
    Permission(WATCH, "pods", why="cache pods"),
    Permission(("create",), "pods/eviction", why="drain nodes through the Eviction API"),
    Permission(WATCH, "poddisruptionbudgets", "policy", why="respect disruption budgets"),
    Permission(WATCH, "deployments", "apps"),
    Permission(WATCH, "replicasets", "apps"),
    Permission(WATCH, "statefulsets", "apps"),
    Permission(WATCH, "daemonsets", "apps"),
    Permission(WATCH, "jobs", "batch"),
    Permission(WATCH, "replicationcontrollers"),
    Permission(WATCH, "priorityclasses", "scheduling.k8s.io"),
    Permission(WATCH, "namespaces", why="namespace selectors in pod affinity"),
    Permission(("create", "patch"), "events", why="events on nodes and pods (cluster-wide)"),
    Permission(
        ("get", "list", "watch", "create", "update"),
        "configmaps",
        namespaced_in_own_namespace=True,
        why="the status ConfigMap and the priority expander's",
    ),
)
LEADER_ELECTION = Permission(
    ("get", "create", "update"), "leases", "coordination.k8s.io", namespaced_in_own_namespace=True
)
KWOK_NODES = Permission(("create",), "nodes", why="the kwok provider creates Node objects")
SURGE_BEFORE_EVICT_COMPONENT = "deploy/components/surge-before-evict"
SURGE_BEFORE_EVICT = Permission(
    ("patch",),
    "deployments",
    "apps",
    why="surge before evict: restart a Deployment (kubectl rollout restart) so a pod its budget pins moves replacement first",
    granted_by=SURGE_BEFORE_EVICT_COMPONENT,
)
# Not an API anyone serves, and never asked by kubetide: the mark the component's admission policy
# asks the authorizer about, to know the accounts it confines to restarts (whatever the install
# renames them to). Granted with SURGE_BEFORE_EVICT by the same ClusterRole.
RESTART_ONLY_MARK = Permission(
    ("restart-only",),
    "deployments",
    "admission.kubetide.io",
    why="not an API: marks the account that the admission policy kubetide-restart-only confines to restarts",
    granted_by=SURGE_BEFORE_EVICT_COMPONENT,
)
CLUSTERAPI: tuple[Permission, ...] = (
    *(
        Permission(
            ("get", "list", "watch", "update", "patch"),
            plural,
            "cluster.x-k8s.io",
            why="the clusterapi provider's node groups and Machines (the delete-machine annotation)",
        )
        for plural in ("machinedeployments", "machinesets", "machines")
    ),
    *(
        Permission(("get", "update"), f"{plural}/scale", "cluster.x-k8s.io", why="replicas, as CA scales")
        for plural in ("machinedeployments", "machinesets")
    ),
)


def check_permissions(client: KubeClient, permissions: tuple[Permission, ...], namespace: str) -> None:
    """Raise a UserError naming every permission the credentials lack (none: return), and the
    components to install for those an optional feature needs."""
    missing = missing_permissions(client, permissions, namespace)
    if not missing:
        return
    remedies = []
    if any(not p.granted_by for p, _ in missing):
        remedies.append("grant them to the ServiceAccount kubetide runs as")
    components = sorted({p.granted_by for p, _ in missing if p.granted_by})
    if components:
        remedies.append(f"add the kustomize component {', '.join(components)} to your overlay")
    raise UserError(
        f"{client.source}: missing permission: cannot "
        f"{'; cannot '.join(p.describe(verb, namespace) for p, verb in missing)} "
        f"({'; '.join(remedies)}: see docs/install.md)"
    )


def missing_permissions(
    client: KubeClient, permissions: tuple[Permission, ...], namespace: str
) -> list[tuple[Permission, str]]:
    """Each (permission, verb) the credentials lack, asked with SelfSubjectAccessReviews; an API
    server that cannot answer is a UserError."""
    missing: list[tuple[Permission, str]] = []
    for permission in permissions:
        resource, _, subresource = permission.resource.partition("/")
        for verb in permission.verbs:
            attributes = {"verb": verb, "group": permission.group, "resource": resource}
            if subresource:
                attributes["subresource"] = subresource
            if permission.namespaced_in_own_namespace:
                attributes["namespace"] = namespace
            review = {
                "apiVersion": "authorization.k8s.io/v1",
                "kind": "SelfSubjectAccessReview",
                "spec": {"resourceAttributes": attributes},
            }
            try:
                answer = client.request(
                    "POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", body=review
                )
            except ApiError as exc:
                raise UserError(
                    f"{client.source}: cannot check permissions on {client.server}: {exc}"
                ) from None
            if not (answer.get("status") or {}).get("allowed"):
                missing.append((permission, verb))
    return missing
