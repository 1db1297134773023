"""deploy/ on a real control plane (RBAC on): the API server accepts the install, and `kubetide run`
works end to end with exactly the install's permissions, and says which one is missing if one is.

Each test renders an overlay (kwok's; every provider's for the dry run) for its own namespace (kubetide's --namespace) with a unique
suffix on every name, so cluster-scoped objects (ClusterRoles and their bindings) never collide
with another test's; those are deleted at teardown, the rest goes with the namespace.
"""

from __future__ import annotations

import collections
import subprocess
import uuid
from pathlib import Path

import kubernetes
import pytest
import yaml
from controlplane import KubeTestContext, wait_until
from kubetide_process import (
    FAST_FLAGS,
    Kubetide,
    create_deployment,
    run_kubetide,
    running,
    scale,
    wait_running,
)
from test_deploy_rbac import DEPLOY, expected_grants, kubectl, one, render_wrapped

from kubetide.kube.permissions import KWOK_NODES, LEADER_ELECTION, PERMISSIONS

pytestmark = pytest.mark.controlplane

OVERLAY = DEPLOY / "overlays" / "kwok"
RBAC_KINDS = ("ServiceAccount", "ClusterRole", "Role", "ClusterRoleBinding", "RoleBinding")
CLUSTER_SCOPED = {"ClusterRole": "cluster_role", "ClusterRoleBinding": "cluster_role_binding"}
GROUP_LABEL = "kubetide.io/node-group"
DELETION_COST = "controller.kubernetes.io/pod-deletion-cost"
# What `kubetide run` with the kwok provider and leader election checks for at start-up.
NEEDED = (*PERMISSIONS, KWOK_NODES, LEADER_ELECTION)


def render_install(
    kube: KubeTestContext, directory: Path, overlay: Path = OVERLAY, components: tuple[Path, ...] = ()
) -> list[dict]:
    """An overlay (kwok's unless told; with `components`) as `kubectl apply -k` would send it, but
    in the test's namespace and with a unique suffix on every name (kustomize follows the renames
    into bindings and references)."""
    return render_wrapped(
        directory / "install",
        [overlay],
        components,
        namespace=kube.namespace,
        nameSuffix=f"-{uuid.uuid4().hex[:6]}",
    )


def admin_kubectl(kube: KubeTestContext, *args: str, objects: list[dict]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [kubectl(), f"--kubeconfig={kube.control_plane.kubeconfig_path}", *args, "-f", "-"],
        input=yaml.safe_dump_all(objects),
        capture_output=True,
        text=True,
        timeout=60,
    )


def install_rbac(kube: KubeTestContext, objects: list[dict]) -> str:
    """Create the install's ServiceAccount, roles and bindings for real (as the admin); return the
    ServiceAccount's name. Cluster-scoped ones are deleted at teardown."""
    rbac = kubernetes.client.RbacAuthorizationV1Api(kube.api_client)
    wanted = [o for o in objects if o["kind"] in RBAC_KINDS]
    for obj in wanted:
        if obj["kind"] in CLUSTER_SCOPED:
            delete = getattr(rbac, f"delete_{CLUSTER_SCOPED[obj['kind']]}")
            kube.add_cleanup(
                lambda delete=delete, name=obj["metadata"]["name"]: delete_if_there(delete, name)
            )
    result = admin_kubectl(kube, "create", objects=wanted)
    assert result.returncode == 0, result.stderr
    return one(objects, "ServiceAccount")["metadata"]["name"]


def delete_if_there(delete, name: str) -> None:
    # Registered before the objects are created, so that a create failing half-way leaves nothing.
    try:
        delete(name)
    except kubernetes.client.ApiException as error:
        if error.status != 404:
            raise


def wait_authorized(kube: KubeTestContext, account: str, permissions, *, except_for=()) -> None:
    """Wait until the API server's RBAC cache has the new roles: every permission is granted to
    the account (but the `except_for` (verb, resource) pairs, which must not be)."""
    authorization = kubernetes.client.AuthorizationV1Api(kube.api_client)
    user = f"system:serviceaccount:{kube.namespace}:{account}"

    def answers() -> dict[tuple[str, str], bool]:
        result = {}
        for grant in sorted(expected_grants(permissions)):
            scope, group, resource, verb = grant
            name, _, subresource = resource.partition("/")
            attributes = {"verb": verb, "group": group, "resource": name, "subresource": subresource}
            if scope == "namespace":
                attributes["namespace"] = kube.namespace
            review = authorization.create_subject_access_review(
                {"spec": {"user": user, "resourceAttributes": attributes}}
            )
            result[(verb, resource)] = review.status.allowed
        return result

    wait_until(
        lambda: all(
            allowed != ((verb, resource) in except_for) for (verb, resource), allowed in answers().items()
        ),
        timeout=30,
        what=f"RBAC for {user}",
    )


def kubetide_args(kube: KubeTestContext, objects: list[dict], directory: Path, kubeconfig: Path) -> list[str]:
    """The Deployment's own arguments, for a process on this machine: the pod's namespace is the
    test's, the node-groups file is the overlay's ConfigMap written to disk, and HTTP on a free port."""
    deployment = one(objects, "Deployment")
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    groups = directory / "groups.yaml"
    (config_map,) = [o for o in objects if o["kind"] == "ConfigMap"]
    groups.write_text(config_map["data"]["groups.yaml"])
    args = []
    for arg in container["args"][1:]:  # [0] is the `run` subcommand
        name = arg.partition("=")[0]
        if name == "--address":
            arg = "--address=127.0.0.1:0"
        elif name == "--node-groups":
            arg = f"--node-groups={groups}"
        args.append(arg.replace("$(POD_NAMESPACE)", kube.namespace))
    return [f"--kubeconfig={kubeconfig}", *args, *FAST_FLAGS]


def service_account_kubeconfig(kube: KubeTestContext, account: str) -> Path:
    token = kube.core.create_namespaced_service_account_token(
        account, kube.namespace, {"spec": {"expirationSeconds": 3600}}
    ).status.token
    return kube.control_plane.write_token_kubeconfig(token, name=f"{kube.namespace}-{account}")


def with_log(kubetide: Kubetide, wait, *args, **kwargs):
    """`wait(*args, **kwargs)`, with kubetide's log in the failure message if it times out."""
    try:
        return wait(*args, **kwargs)
    except AssertionError as timeout:
        raise AssertionError(f"{timeout}\n--- kubetide's log ---\n{kubetide.log()}") from None


def all_ready(kube: KubeTestContext, app: str, count: int) -> bool:
    found = kube.core.list_namespaced_pod(kube.namespace, label_selector=f"app={app}").items
    return len(found) == count and all(
        any(c.type == "Ready" and c.status == "True" for c in pod.status.conditions or ()) for pod in found
    )


@pytest.mark.parametrize("provider", ["kwok", "aws", "clusterapi"])
def test_rendered_install_is_accepted_by_the_api_server(kube, tmp_path, provider):
    objects = render_install(kube, tmp_path, DEPLOY / "overlays" / provider)
    namespace = one(objects, "Namespace")
    # The test's namespace stands in for the install's: give it the install's labels (the
    # restricted Pod Security Standard, enforced) and dry-run the rest into it.
    kube.core.patch_namespace(kube.namespace, {"metadata": {"labels": namespace["metadata"]["labels"]}})
    rest = [o for o in objects if o["kind"] != "Namespace"]

    result = admin_kubectl(kube, "apply", "--dry-run=server", objects=rest)
    assert result.returncode == 0, result.stderr
    assert "Warning" not in result.stderr, result.stderr
    lines = result.stdout.strip().splitlines()
    assert len(lines) == len(rest), result.stdout
    assert all(line.endswith(" created (server dry run)") for line in lines), result.stdout
    # The Namespace object itself, under a name of its own.
    namespace["metadata"]["name"] = f"{kube.namespace[:50]}-dry"
    created = kube.core.create_namespace(namespace, dry_run="All")
    assert created.metadata.labels["pod-security.kubernetes.io/enforce"] == "restricted"

    # The pods the Deployment makes pass admission: the restricted Pod Security Standard and the
    # system-cluster-critical priority class (its ServiceAccount must exist for that).
    install_rbac(kube, objects)
    template = one(objects, "Deployment")["spec"]["template"]
    pod = {"metadata": {"name": "kubetide-dry-run", **template["metadata"]}, "spec": template["spec"]}
    admitted = kube.core.create_namespaced_pod(kube.namespace, pod, dry_run="All")
    assert admitted.spec.priority == 2_000_000_000
    assert admitted.spec.service_account_name == one(objects, "ServiceAccount")["metadata"]["name"]


def test_kubetide_runs_end_to_end_as_the_installed_service_account(kube, tmp_path):
    objects = render_install(kube, tmp_path)
    account = install_rbac(kube, objects)
    wait_authorized(kube, account, NEEDED)
    kubeconfig = service_account_kubeconfig(kube, account)
    # Six pods of 1.5 CPUs: no node exists, so a group must grow.
    create_deployment(kube, "web", 6, "1500m")
    # FAST_FLAGS, but scale-down waits a little after a scale-up: on a loaded machine the new
    # nodes may still be empty (pods not yet bound) when they would be found unneeded.
    args = (*kubetide_args(kube, objects, tmp_path, kubeconfig), "--scale-down-delay-after-add=8s")
    kubetide = Kubetide(kube, tmp_path, *args).start()

    with_log(kubetide, wait_running, kube, "web", 6, timeout=60)
    grown = kube.core.list_node(label_selector=GROUP_LABEL).items
    assert grown, kubetide.log()
    # The status ConfigMap and the Lease, in kubetide's namespace (the test's).
    status = kube.core.read_namespaced_config_map("cluster-autoscaler-status", kube.namespace)
    assert "autoscalerStatus: Running" in status.data["status"]
    coordination = kubernetes.client.CoordinationV1Api(kube.api_client)
    lease = coordination.read_namespaced_lease("cluster-autoscaler", kube.namespace)
    assert lease.spec.holder_identity

    # Half the load goes: scale-down taints, drains (evictions) and deletes nodes. All six pods
    # Ready first: the ReplicaSet deletes unready pods before anything else.
    with_log(kubetide, wait_until, lambda: all_ready(kube, "web", 6), timeout=30, what="6 ready pods")
    by_node = collections.defaultdict(list)
    for pod in running(kube, "web"):
        by_node[pod.spec.node_name].append(pod.metadata.name)
    assert sorted(map(len, by_node.values())) == [2, 2, 2], f"{dict(by_node)}\n{kubetide.log()}"
    # The ReplicaSet deletes the pods of lowest deletion cost first: one from each node, which
    # leaves 1+1+1 pods of 1.5 CPUs on 4-CPU nodes, so that freeing a node needs an eviction.
    for first, _ in by_node.values():
        kube.core.patch_namespaced_pod(
            first, kube.namespace, {"metadata": {"annotations": {DELETION_COST: "-100"}}}
        )
    scale(kube, "web", 3)
    with_log(
        kubetide,
        wait_until,
        lambda: len(kube.core.list_node(label_selector=GROUP_LABEL).items) < len(grown),
        timeout=60,
        what="a node removed by scale-down",
    )
    with_log(kubetide, wait_running, kube, "web", 3, timeout=30)
    # The node removed had a pod, evicted by the Eviction API (CA's ScaleDown event on the pod).
    with_log(
        kubetide,
        wait_until,
        lambda: (
            kube.core.list_namespaced_event(
                kube.namespace, field_selector="reason=ScaleDown,involvedObject.kind=Pod"
            ).items
        ),
        timeout=10,
        what="a ScaleDown event on an evicted pod",
    )
    assert kubetide.terminate() == 0
    log = kubetide.log()
    assert "every permission kubetide uses is granted" in log
    for sign_of_refusal in ("forbidden", " 403", "Traceback"):
        assert sign_of_refusal.lower() not in log.lower(), log


@pytest.mark.parametrize(
    ("kind", "resource", "verb", "expected"),
    [
        ("ClusterRole", "pods/eviction", "create", "cannot create pods/eviction cluster-wide"),
        ("ClusterRole", "nodes", "update", "cannot update nodes cluster-wide"),
        ("Role", "leases", "update", 'cannot update leases.coordination.k8s.io in namespace "{namespace}"'),
    ],
)
def test_a_verb_removed_from_the_install_is_named_in_one_line(kube, tmp_path, kind, resource, verb, expected):
    objects = render_install(kube, tmp_path)
    ((role, rule),) = [
        (o, r)
        for o in objects
        if o["kind"] == kind
        for r in o["rules"]
        if resource in r["resources"] and verb in r["verbs"]
    ]
    rule["verbs"].remove(verb)
    if not rule["verbs"]:
        role["rules"].remove(rule)
    account = install_rbac(kube, objects)
    wait_authorized(kube, account, NEEDED, except_for={(verb, resource)})
    kubeconfig = service_account_kubeconfig(kube, account)

    # --v=0 (the default, whatever FAST_FLAGS say): what the user sees is then stderr as a whole.
    result = run_kubetide(*kubetide_args(kube, objects, tmp_path, kubeconfig), "--v=0")
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    (line,) = lines
    assert line.startswith("kubetide: error: "), line
    assert "missing permission" in line
    assert expected.format(namespace=kube.namespace) in line
    # Only that one is named.
    assert line.count("cannot ") == 1, line
    assert not kube.core.list_node(label_selector=GROUP_LABEL).items
    assert not kube.core.list_namespaced_config_map(
        kube.namespace, field_selector="metadata.name=cluster-autoscaler-status"
    ).items
