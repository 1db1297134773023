"""deploy/components/surge-before-evict on a real API server (RBAC and ValidatingAdmissionPolicy on).

The kwok install is rendered for the test's namespace with a unique name suffix (so the policy is
shown to hold under a rename), with or without the component, and created for real. As the
installed ServiceAccount (a token of its own):

- with the component, kubetide's own restart (KubeClusterActions.restart_deployment, the PATCH of
  the pod template's restartedAt annotation) succeeds, and rewriting the Deployment (a new image
  and hostNetwork, replicas, a label, another annotation) is refused with 403 by the policy;
- without it, RBAC refuses the restart (403), `kubetide run --surge-before-evict=true` stops at
  start naming the component (exit 2), and with the flag off it says once that annotated
  Deployments are not surged.
"""

from __future__ import annotations

import subprocess

import kubernetes
import pytest
import yaml
from controlplane import KubeTestContext, wait_until
from kubetide_process import Kubetide, apps, create_deployment, run_kubetide
from test_deploy import (
    NEEDED,
    admin_kubectl,
    install_rbac,
    kubetide_args,
    render_install,
    service_account_kubeconfig,
    wait_authorized,
    with_log,
)
from test_deploy_rbac import COMPONENT, kubectl, one

from kubetide.autoscaler.ports import ActionError
from kubetide.clock import ManualClock
from kubetide.kube.actions import KubeClusterActions
from kubetide.kube.client import ApiError, KubeClient, connect
from kubetide.kube.permissions import RESTART_ONLY_MARK, SURGE_BEFORE_EVICT, SURGE_BEFORE_EVICT_COMPONENT

pytestmark = pytest.mark.controlplane

AT = 1_800_000_000.0  # 2027-01-15T08:00:00Z
RESTARTED_AT = "kubectl.kubernetes.io/restartedAt"
POLICY_KINDS = ("ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding")
STRATEGIC = "application/strategic-merge-patch+json"
# The rewrite the autoscaler's token could make when every install granted `patch`.
TAKEOVER = {
    "spec": {
        "template": {
            "spec": {"hostNetwork": True, "containers": [{"name": "pause", "image": "evil.example/pause:1"}]}
        }
    }
}


def admission_policies_served(kube: KubeTestContext) -> None:
    """The component's policy needs ValidatingAdmissionPolicy (GA in 1.30): fail clearly if this
    API server does not serve it, rather than pass a test that checked nothing."""
    resources = kubernetes.client.AdmissionregistrationV1Api(kube.api_client).get_api_resources().resources
    kinds = {r.kind for r in resources}
    assert set(POLICY_KINDS) <= kinds, f"this API server serves no ValidatingAdmissionPolicy: {sorted(kinds)}"


def install(kube: KubeTestContext, tmp_path, components) -> tuple[list[dict], str]:
    """The rendered install's RBAC and admission policies, created; the ServiceAccount's name."""
    objects = render_install(kube, tmp_path, components=components)
    policies = [o for o in objects if o["kind"] in POLICY_KINDS]
    if policies:
        # Cluster-scoped: deleted at teardown, registered before they exist (a half-failed create).
        kube.add_cleanup(
            lambda: subprocess.run(
                [
                    kubectl(),
                    f"--kubeconfig={kube.control_plane.kubeconfig_path}",
                    "delete",
                    "--ignore-not-found",
                    "-f",
                    "-",
                ],
                input=yaml.safe_dump_all(policies),
                capture_output=True,
                text=True,
                timeout=60,
            )
        )
        result = admin_kubectl(kube, "create", objects=policies)
        assert result.returncode == 0, result.stderr
    return objects, install_rbac(kube, objects)


def patch(
    client: KubeClient, namespace: str, name: str, body: dict, *, dry_run: bool = False
) -> ApiError | None:
    """The Deployment patched as `client`; None if allowed, else the refusal."""
    try:
        client.request(
            "PATCH",
            f"/apis/apps/v1/namespaces/{namespace}/deployments/{name}",
            query={"dryRun": "All"} if dry_run else None,
            body=body,
            content_type=STRATEGIC,
        )
    except ApiError as refused:
        return refused
    return None


def template(kube: KubeTestContext, name: str) -> dict:
    deployment = apps(kube).read_namespaced_deployment(name, kube.namespace)
    return kube.api_client.sanitize_for_serialization(deployment.spec.template)


# Changes the component's account may not make, and the path the refusal names.
REFUSED = [
    (TAKEOVER, "spec.template.spec"),
    ({"spec": {"replicas": 5}}, "spec.replicas"),
    ({"spec": {"template": {"metadata": {"labels": {"tier": "x"}}}}}, "spec.template.metadata.labels"),
    (
        {"spec": {"template": {"metadata": {"annotations": {"example.com/x": "y", RESTARTED_AT: "now"}}}}},
        "spec.template.metadata.annotations[example.com/x]",
    ),
    ({"metadata": {"labels": {"owner": "kubetide"}}}, "metadata.labels"),
    ({"metadata": {"annotations": {"owner": "kubetide"}}}, "metadata.annotations"),
]


def test_with_the_component_kubetide_may_restart_a_deployment_and_change_nothing_else(kube, tmp_path):
    admission_policies_served(kube)
    objects, account = install(kube, tmp_path, (COMPONENT,))
    policy = one(objects, "ValidatingAdmissionPolicy")["metadata"]["name"]
    wait_authorized(kube, account, (*NEEDED, SURGE_BEFORE_EVICT, RESTART_ONLY_MARK))
    create_deployment(kube, "web", 1, "100m")
    client = connect(str(service_account_kubeconfig(kube, account)))
    before = template(kube, "web")

    # The API server takes up a new policy within a few seconds: wait, by dry runs (admission
    # runs, nothing is stored), until it refuses the takeover.
    wait_until(
        lambda: patch(client, kube.namespace, "web", TAKEOVER, dry_run=True),
        timeout=30,
        what="the restart-only policy in force",
    )
    for body, changed in REFUSED:
        refused = patch(client, kube.namespace, "web", body)
        assert refused is not None, f"{body} was allowed"
        assert (refused.status, refused.reason) == (403, "Forbidden"), refused
        assert f"ValidatingAdmissionPolicy '{policy}'" in refused.message, refused
        assert (
            f"system:serviceaccount:{kube.namespace}:{account} may only restart Deployments"
            in refused.message
        )
        assert refused.message.endswith(f"not change {changed}"), refused.message
    assert template(kube, "web") == before
    # The component grants `patch` on Deployments and nothing more: RBAC still refuses the scale
    # subresource, and a server-side apply that would create a Deployment (which needs `create`).
    deployments = f"/apis/apps/v1/namespaces/{kube.namespace}/deployments"
    for path, query, content_type, body in [
        (f"{deployments}/web/scale", None, "application/merge-patch+json", {"spec": {"replicas": 5}}),
        (
            f"{deployments}/takeover",
            {"fieldManager": "takeover"},
            "application/apply-patch+yaml",
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {"name": "takeover"},
                "spec": {
                    "selector": {"matchLabels": {"app": "takeover"}},
                    "template": {"metadata": {"labels": {"app": "takeover"}}, **TAKEOVER["spec"]["template"]},
                },
            },
        ),
    ]:
        with pytest.raises(ApiError) as refused_by_rbac:
            client.request("PATCH", path, query=query, body=body, content_type=content_type)
        assert refused_by_rbac.value.status == 403 and "cannot " in refused_by_rbac.value.message, path
    assert template(kube, "web") == before

    # kubetide's own restart goes through, and changes the one annotation.
    KubeClusterActions(client, ManualClock(AT), events=object()).restart_deployment(kube.namespace, "web", AT)  # type: ignore[arg-type]
    after = template(kube, "web")
    assert after["metadata"].pop("annotations") == {RESTARTED_AT: "2027-01-15T08:00:00Z"}
    assert after == before

    # The policy confines the marked account only: the administrator may still change anything.
    assert patch(connect(str(kube.control_plane.kubeconfig_path)), kube.namespace, "web", TAKEOVER) is None


def test_without_the_component_the_restart_is_refused_and_kubetide_says_so(kube, tmp_path):
    objects, account = install(kube, tmp_path, ())
    assert not [o for o in objects if o["kind"] in POLICY_KINDS]
    wait_authorized(kube, account, (*NEEDED, SURGE_BEFORE_EVICT), except_for={("patch", "deployments")})
    create_deployment(kube, "web", 1, "100m")
    kubeconfig = service_account_kubeconfig(kube, account)
    client = connect(str(kubeconfig))
    before = template(kube, "web")

    refused = patch(client, kube.namespace, "web", TAKEOVER)
    assert refused is not None and refused.status == 403, refused
    assert 'cannot patch resource "deployments" in API group "apps"' in refused.message, refused
    with pytest.raises(ActionError, match="403 Forbidden"):
        KubeClusterActions(client, ManualClock(AT), events=object()).restart_deployment(  # type: ignore[arg-type]
            kube.namespace, "web", AT
        )
    assert template(kube, "web") == before

    # The flag asks for what the install does not grant: one line, the permission and the
    # component, exit 2, nothing written.
    args = kubetide_args(kube, objects, tmp_path, kubeconfig)
    result = run_kubetide(*args, "--v=0", "--surge-before-evict=true")
    assert result.returncode == 2, result.stderr
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("kubetide: error: ") and "missing permission" in line, line
    assert "cannot patch deployments.apps cluster-wide" in line, line
    assert f"add the kustomize component {SURGE_BEFORE_EVICT_COMPONENT} to your overlay" in line, line
    assert line.count("cannot ") == 1, line
    assert not kube.core.list_namespaced_config_map(
        kube.namespace, field_selector="metadata.name=cluster-autoscaler-status"
    ).items

    # Flag off: kubetide runs, and says once, at start, that the opt-in annotation is not honoured.
    kubetide = Kubetide(kube, tmp_path, *args).start()
    warning = 'Deployments annotated kubetide.io/surge-before-evict: "true" are not surged'
    with_log(
        kubetide, wait_until, lambda: "caches filled" in kubetide.log(), timeout=60, what="kubetide started"
    )
    assert kubetide.terminate() == 0
    log = kubetide.log()
    (said,) = [line for line in log.splitlines() if warning in line]
    assert SURGE_BEFORE_EVICT_COMPONENT in said and "cannot patch deployments.apps cluster-wide" in said, said
