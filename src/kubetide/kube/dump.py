"""A live cluster read once into the same Manifests a dump file gives: `kubetide plan --kubeconfig`.

Read-only: a paginated LIST of each resource the autoscaler looks at, parsed by the model's own
parsers, so `plan` explains a live cluster exactly as it explains `kubectl get -o yaml` output.
"""

from __future__ import annotations

from collections.abc import Iterator

from kubetide.errors import UserError
from kubetide.kube.client import ApiError, KubeClient
from kubetide.kube.resources import (
    CRONJOBS,
    HPAS,
    NAMESPACES,
    NODES,
    PDBS,
    PODS,
    PRIORITY_CLASSES,
    WORKLOADS,
    Resource,
    configmaps_in,
    parser_for,
)
from kubetide.model import Manifests
from kubetide.model.loader import resolve_priorities

PRIORITY_EXPANDER_NAMESPACE = "kube-system"


# Every resource `plan` and the simulator use, in the order they are read.
RESOURCES = (
    NODES,
    PODS,
    PDBS,
    PRIORITY_CLASSES,
    NAMESPACES,
    *WORKLOADS,
    configmaps_in(PRIORITY_EXPANDER_NAMESPACE),
)
# What `scenario from-cluster --kubeconfig` reads: the above, and the controllers the simulator
# runs beside the autoscaler (sim/runtime/hpa.py, sim/runtime/cronjob.py). Not `plan`'s: it needs no more RBAC.
SIMULATED = (*RESOURCES, HPAS, CRONJOBS)


def read_cluster(client: KubeClient) -> Manifests:
    """Every object `plan` uses; an unreadable resource is one UserError naming it."""
    manifests = Manifests()
    for resource, raw in raw_objects(client):
        obj = parser_for(resource.kind, client.server)(raw)
        # ReplicationControllers are workloads for every check that reads them.
        if resource.kind == "ReplicationController":
            manifests.workloads.append(obj)
        else:
            manifests.add(resource.kind, obj)
    resolve_priorities(manifests, client.server)
    return manifests


def raw_objects(
    client: KubeClient, resources: tuple[Resource, ...] = RESOURCES
) -> Iterator[tuple[Resource, dict]]:
    """(resource, object as the API server returned it) for every object of `resources`; an
    unreadable resource is one UserError naming it (`kubetide scenario from-cluster` keeps them
    as they are)."""
    for resource in resources:
        try:
            for page in client.list_pages(resource.list_path):
                for raw in page.get("items") or ():
                    yield resource, raw
        except ApiError as exc:
            action = "cannot reach the API server" if exc.status == 0 else f"cannot list {resource.plural}"
            raise UserError(f"{client.source}: {action}: {exc.message if exc.status == 0 else exc}") from None
