"""Every API permission `kubetide run` uses, in one table, checked before anything is written.

The same table is what least-privilege RBAC for kubetide must grant. At start-up each entry is
asked of the API server with a SelfSubjectAccessReview (which every authenticated user may
create), so a missing permission is one clear line naming the verb and resource, before the
first write, instead of a failure in the middle of a drain.
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

    def describe(self, verb: str, namespace: str) -> str:
        resource = f"{self.resource}.{self.group}" if self.group else self.resource
        where = f' in namespace "{namespace}"' if self.namespaced_in_own_namespace else " cluster-wide"
        return f"{verb} {resource}{where}"


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
SURGE_BEFORE_EVICT = Permission(
    ("patch",),
    "deployments",
    "apps",
    why="surge before evict: restart a Deployment (kubectl rollout restart) so a pod its budget pins moves replacement first",
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
    """Raise a UserError naming every permission the credentials lack (none: return)."""
    missing: list[str] = []
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
                missing.append(permission.describe(verb, namespace))
    if missing:
        raise UserError(
            f"{client.source}: missing permission: cannot {'; cannot '.join(missing)} "
            "(grant them to the ServiceAccount kubetide runs as: see docs/install.md)"
        )
