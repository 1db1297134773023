"""`kubetide run` with bad configuration: one clear line, exit 2, nothing written to the cluster."""

from __future__ import annotations

import kubernetes
import pytest
from controlplane import KubeTestContext
from kubetide_process import FAST_FLAGS, run_kubetide, write_groups

pytestmark = pytest.mark.controlplane

# The autoscaler's own permissions minus one (pods/eviction create): see kube/permissions.py.
ROLE_RULES = [
    {
        "apiGroups": [""],
        "resources": ["nodes"],
        "verbs": ["get", "list", "watch", "update", "delete", "create"],
    },
    {
        "apiGroups": [""],
        "resources": ["pods", "replicationcontrollers", "namespaces"],
        "verbs": ["list", "watch"],
    },
    {"apiGroups": [""], "resources": ["events"], "verbs": ["create", "patch"]},
    {"apiGroups": ["policy"], "resources": ["poddisruptionbudgets"], "verbs": ["list", "watch"]},
    {
        "apiGroups": ["apps"],
        "resources": ["deployments", "replicasets", "statefulsets", "daemonsets"],
        "verbs": ["list", "watch"],
    },
    {"apiGroups": ["batch"], "resources": ["jobs"], "verbs": ["list", "watch"]},
    {"apiGroups": ["scheduling.k8s.io"], "resources": ["priorityclasses"], "verbs": ["list", "watch"]},
    {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "watch", "create", "update"]},
    {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["get", "create", "update"]},
]


def assert_one_line_error(result, *fragments: str) -> None:
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    # One error line; argparse's usage errors add the project's "(see ... --help)" hint.
    assert len(lines) == 1 or (len(lines) == 2 and lines[1].startswith("  (see ")), result.stderr
    assert lines[0].startswith("kubetide: error: ")
    assert "Traceback" not in result.stderr
    for fragment in fragments:
        assert fragment in lines[0]


def assert_nothing_written(kube: KubeTestContext, name: str) -> None:
    coordination = kubernetes.client.CoordinationV1Api(kube.api_client)
    leases = [lease.metadata.name for lease in coordination.list_namespaced_lease("kube-system").items]
    assert name not in leases
    configmaps = [cm.metadata.name for cm in kube.core.list_namespaced_config_map("kube-system").items]
    assert f"{name}-status" not in configmaps
    assert not kube.core.list_node(label_selector="kubetide.io/node-group").items


def args_for(kube: KubeTestContext, groups, name: str, kubeconfig=None) -> list[str]:
    return [
        f"--kubeconfig={kubeconfig or kube.control_plane.kubeconfig_path}",
        "--cloud-provider=kwok",
        f"--node-groups={groups}",
        "--address=127.0.0.1:0",
        f"--status-config-map-name={name}-status",
        f"--leader-elect-resource-name={name}",
        *FAST_FLAGS,
    ]


def test_missing_rbac_permission_is_named_and_nothing_is_written(kube, tmp_path):
    rbac = kubernetes.client.RbacAuthorizationV1Api(kube.api_client)
    account = "kubetide-partial"
    kube.core.create_namespaced_service_account(kube.namespace, {"metadata": {"name": account}})
    role = f"{kube.namespace}-partial"
    rbac.create_cluster_role({"metadata": {"name": role}, "rules": ROLE_RULES})
    kube.add_cleanup(lambda: rbac.delete_cluster_role(role))
    rbac.create_cluster_role_binding(
        {
            "metadata": {"name": role},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
            "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": kube.namespace}],
        }
    )
    kube.add_cleanup(lambda: rbac.delete_cluster_role_binding(role))
    token = kube.core.create_namespaced_service_account_token(
        account, kube.namespace, {"spec": {"expirationSeconds": 3600}}
    ).status.token
    kubeconfig = kube.control_plane.write_token_kubeconfig(token, name="partial")
    groups = write_groups(tmp_path)

    result = run_kubetide(*args_for(kube, groups, "rbac", kubeconfig))
    assert_one_line_error(result, "missing permission", "create pods/eviction")
    assert_nothing_written(kube, "rbac")


@pytest.mark.parametrize(
    ("case", "extra", "fragments"),
    [
        ("bad flag value", ["--scale-down-unneeded-time=soon"], ["--scale-down-unneeded-time"]),
        ("unknown flag", ["--scale-down-unneeded-tme=1m"], ["did you mean scale-down-unneeded-time"]),
        ("bad lease timing", ["--leader-elect-renew-deadline=20s"], ["renew deadline < lease duration"]),
        ("bad address", ["--address=nowhere"], ["--address=nowhere"]),
        ("bad qps", ["--kube-client-qps=-1"], ["--kube-client-qps"]),
    ],
)
def test_bad_flags(kube, tmp_path, case, extra, fragments):
    groups = write_groups(tmp_path)
    result = run_kubetide(*args_for(kube, groups, "flags"), *extra)
    assert_one_line_error(result, *fragments)
    assert_nothing_written(kube, "flags")


def test_bad_kubeconfig_unreachable_server_and_bad_groups(kube, tmp_path):
    groups = write_groups(tmp_path)
    garbage = tmp_path / "garbage.kubeconfig"
    garbage.write_text("clusters: [this is not a kubeconfig\n")
    assert_one_line_error(run_kubetide(*args_for(kube, groups, "bad", garbage)), str(garbage))
    missing = tmp_path / "missing.kubeconfig"
    assert_one_line_error(run_kubetide(*args_for(kube, groups, "bad", missing)), "no such file")

    unreachable = tmp_path / "unreachable.kubeconfig"
    text = kube.control_plane.kubeconfig_path.read_text().replace(
        kube.control_plane.server, "https://127.0.0.1:1"
    )
    unreachable.write_text(text)
    assert_one_line_error(
        run_kubetide(*args_for(kube, groups, "bad", unreachable)), "cannot reach the API server"
    )

    no_template = write_groups(tmp_path, "nodeGroups:\n- {name: small, maxSize: 3}\n")
    assert_one_line_error(run_kubetide(*args_for(kube, no_template, "bad")), "template", "kwok")
    assert_nothing_written(kube, "bad")
