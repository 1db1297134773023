"""deploy/ is safe by default, and its admission policies survive renames (rendering only).

No kustomization under deploy/ (every overlay, the QoS agent's, deploy/ itself) lets anyone it
binds write to a workload; only the opt-in component deploy/components/surge-before-evict grants
`patch` on Deployments, and this test's own check sees it there. Both admission policies (the
component's restart-only policy, the QoS agent's node confinement) know whom they confine by an
RBAC mark asked of the authorizer: rendered under another namespace and name suffix, the mark is
still bound to the install's own ServiceAccount and no expression names a namespace or account.

Live behaviour (the 403s) is tests/kube/test_surge_component_live.py's and test_install_live.py's.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
import yaml
from test_deploy_rbac import COMPONENT, DEPLOY, one, render, render_wrapped

from kubetide.kube.permissions import RESTART_ONLY_MARK, SURGE_BEFORE_EVICT

WORKLOADS = {
    ("apps", "deployments"),
    ("apps", "replicasets"),
    ("apps", "statefulsets"),
    ("apps", "daemonsets"),
    ("extensions", "deployments"),
    ("extensions", "replicasets"),
    ("extensions", "daemonsets"),
    ("", "replicationcontrollers"),
    ("batch", "jobs"),
    ("batch", "cronjobs"),
}
WRITE_VERBS = {"create", "update", "patch", "delete", "deletecollection", "*"}
QOS_AGENT_MARK = ("admission.kubetide.io", "nodes", "own-node-only")
# What the policies' match conditions must ask the authorizer (group, resource, verb), by file.
MARKS = {
    "kubetide-restart-only": (
        RESTART_ONLY_MARK.group,
        RESTART_ONLY_MARK.resource,
        RESTART_ONLY_MARK.verbs[0],
    ),
    "kubetide-qos-agent-own-node": QOS_AGENT_MARK,
}


def kustomizations() -> dict[str, str]:
    """Every kustomization under deploy/, by directory relative to deploy/: its kind."""
    found = {}
    for path in sorted(DEPLOY.rglob("kustomization.yaml")):
        found[str(path.parent.relative_to(DEPLOY))] = yaml.safe_load(path.read_text())["kind"]
    return found


def installs() -> list[str]:
    return [d for d, kind in kustomizations().items() if kind == "Kustomization"]


def workload_writes(objects: list[dict]) -> list[str]:
    """Each write to a workload that a rendering's bindings grant, to whomever: "Role name: verb
    group/resource" (subresources such as deployments/scale count as their workload)."""
    roles = {(o["kind"], o["metadata"]["name"]): o for o in objects if o["kind"] in ("ClusterRole", "Role")}
    writes = []
    for binding in (o for o in objects if o["kind"] in ("ClusterRoleBinding", "RoleBinding")):
        ref = binding["roleRef"]
        role = roles[(ref["kind"], ref["name"])]
        for rule in role.get("rules") or ():
            for group in rule.get("apiGroups") or ():
                for resource in rule.get("resources") or ():
                    base = resource.split("/")[0]
                    is_workload = (
                        (group, base) in WORKLOADS
                        or "*" in (group, base)
                        or (group in {g for g, _ in WORKLOADS} and base == "*")
                    )
                    for verb in set(rule.get("verbs") or ()) & WRITE_VERBS:
                        if is_workload:
                            writes.append(f"{ref['kind']} {ref['name']}: {verb} {group}/{resource}")
    return sorted(writes)


def test_every_install_under_deploy_is_found():
    # The check below covers what rglob finds: make sure that is every install there is.
    assert {".", "base", "overlays/kwok", "overlays/aws", "overlays/clusterapi", "qos-agent"} <= set(
        installs()
    )
    assert kustomizations()["components/surge-before-evict"] == "Component"


@pytest.mark.parametrize("install", installs())
def test_no_install_may_write_a_workload(install):
    writes = workload_writes(render(DEPLOY / install))
    assert not writes, f"deploy/{install} lets its accounts write to workloads: {writes}"


@pytest.mark.parametrize("install", ["overlays/kwok", "overlays/aws", "overlays/clusterapi"])
def test_only_the_component_grants_patch_on_deployments(install, tmp_path):
    """The check above sees a workload write where there is one: the component's patch, and
    nothing else."""
    objects = render_wrapped(tmp_path / "overlay", [DEPLOY / install], (COMPONENT,), namespace="kubetide")
    assert workload_writes(objects) == [
        f"ClusterRole kubetide-surge-before-evict: {verb} apps/deployments"
        for verb in SURGE_BEFORE_EVICT.verbs
    ]


def expressions(policy: dict) -> list[str]:
    spec = policy["spec"]
    return [
        item.get(field, "")
        for key in ("matchConditions", "variables", "validations")
        for item in spec.get(key) or ()
        for field in ("expression", "messageExpression")
    ]


def authorizer_checks(expression: str) -> set[tuple[str, str, str]]:
    """(group, resource, verb) of each authorizer.group(..).resource(..).check(..) in a CEL expression."""
    found = re.findall(
        r"authorizer\.group\('([^']*)'\)\.resource\('([^']*)'\)\.check\('([^']*)'\)\.allowed\(\)", expression
    )
    return set(found)


def assert_confines_the_install_account(
    objects: list[dict], policy_name: str, *, namespace: str, suffix: str
):
    """The policy (renamed with `suffix`) is bound, matches on its mark and not on a name, and the
    mark is granted to the rendering's ServiceAccount, in `namespace`, and to no one else."""
    policy = one(objects, "ValidatingAdmissionPolicy", policy_name + suffix)
    binding = one(objects, "ValidatingAdmissionPolicyBinding")
    assert binding["spec"]["policyName"] == policy["metadata"]["name"]
    assert binding["spec"]["validationActions"] == ["Deny"]
    assert policy["spec"]["failurePolicy"] == "Fail"
    assert all(v.get("reason") == "Forbidden" for v in policy["spec"]["validations"])
    group, resource, verb = MARKS[policy_name]
    (condition,) = policy["spec"]["matchConditions"]
    # Marked, and not an administrator whose wildcard grants every verb (the mark included).
    assert authorizer_checks(condition["expression"]) == {
        (group, resource, verb),
        (group, resource, "unconfined"),
    }
    assert (
        f"!authorizer.group('{group}').resource('{resource}').check('unconfined')" in condition["expression"]
    )
    account = one(objects, "ServiceAccount")["metadata"]
    assert account["namespace"] == namespace and account["name"].endswith(suffix)
    for text in expressions(policy):
        # Nothing a rename would have to follow: no account, no namespace.
        assert "system:serviceaccount" not in text, text
        assert f"'{namespace}'" not in text and f":{namespace}:" not in text, text
    marked = [
        o
        for o in objects
        if o["kind"] == "ClusterRole"
        and any(
            group in r["apiGroups"] and resource in r["resources"] and verb in r["verbs"] for r in o["rules"]
        )
    ]
    (role,) = marked
    (bound,) = [
        b
        for b in objects
        if b["kind"] == "ClusterRoleBinding" and b["roleRef"]["name"] == role["metadata"]["name"]
    ]
    assert bound["subjects"] == [{"kind": "ServiceAccount", "name": account["name"], "namespace": namespace}]
    return role


@pytest.mark.parametrize(("namespace", "suffix"), [("kubetide", ""), ("platform-autoscaling", "-b7")])
def test_the_restart_only_policy_follows_renames(namespace, suffix, tmp_path):
    fields = {"namespace": namespace, **({"nameSuffix": suffix} if suffix else {})}
    objects = render_wrapped(tmp_path / "overlay", [DEPLOY / "overlays/kwok"], (COMPONENT,), **fields)
    role = assert_confines_the_install_account(
        objects, "kubetide-restart-only", namespace=namespace, suffix=suffix
    )
    # The mark is on the role that grants the patch: no one gets the patch unconfined.
    assert {"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["patch"]} in role["rules"]


@pytest.mark.parametrize("how", ["edited", "overlay"])
def test_the_qos_agent_confinement_follows_a_namespace_change(how, tmp_path):
    """`kustomize edit set namespace other` in deploy/qos-agent (the copy's namespace line
    changed), or an overlay with another namespace and a name suffix."""
    if how == "edited":
        copy = tmp_path / "qos-agent"
        shutil.copytree(DEPLOY / "qos-agent", copy)
        kustomization = copy / "kustomization.yaml"
        text = kustomization.read_text()
        assert "\nnamespace: kubetide-qos-agent\n" in text
        kustomization.write_text(text.replace("\nnamespace: kubetide-qos-agent\n", "\nnamespace: other\n"))
        objects, namespace, suffix = render(copy), "other", ""
    else:
        objects = render_wrapped(
            tmp_path / "overlay", [DEPLOY / "qos-agent"], namespace="node-agents", nameSuffix="-b7"
        )
        namespace, suffix = "node-agents", "-b7"
    assert one(objects, "Namespace")["metadata"]["name"] == namespace
    assert_confines_the_install_account(
        objects, "kubetide-qos-agent-own-node", namespace=namespace, suffix=suffix
    )
    # The agent's own permissions follow too (its binding once named the namespace itself).
    (binding,) = [
        o
        for o in objects
        if o["kind"] == "ClusterRoleBinding" and o["roleRef"]["name"] == f"kubetide-qos-agent{suffix}"
    ]
    assert binding["subjects"][0]["namespace"] == namespace


ENABLE = "components:\n  - ../../components/surge-before-evict"


def test_the_component_is_a_kustomize_component_enabled_by_the_documented_line():
    kustomization = yaml.safe_load((COMPONENT / "kustomization.yaml").read_text())
    assert kustomization["kind"] == "Component"
    doc = (Path(__file__).resolve().parents[2] / "docs" / "install.md").read_text()
    assert ENABLE in doc


@pytest.mark.parametrize("overlay", ["overlays/kwok", "overlays/aws", "overlays/clusterapi"])
def test_uncommenting_the_overlay_hint_installs_the_component(overlay, tmp_path):
    """Each overlay carries the line, commented out; uncommented (in a copy of deploy/), the
    install is the default one plus the component's grants and its admission policy."""
    copy = tmp_path / "deploy"
    shutil.copytree(DEPLOY, copy, ignore=shutil.ignore_patterns("image", "dashboards"))
    kustomization = copy / overlay / "kustomization.yaml"
    commented = "\n".join(f"# {line}" for line in ENABLE.splitlines())
    text = kustomization.read_text()
    assert text.count(commented) == 1, f"deploy/{overlay} lacks the commented line:\n{commented}"
    kustomization.write_text(text.replace(commented, ENABLE))
    enabled, default = render(copy / overlay), render(DEPLOY / overlay)
    assert workload_writes(default) == []
    assert workload_writes(enabled) == ["ClusterRole kubetide-surge-before-evict: patch apps/deployments"]
    assert [o["kind"] for o in enabled if o["kind"].startswith("ValidatingAdmissionPolicy")] == [
        "ValidatingAdmissionPolicy",
        "ValidatingAdmissionPolicyBinding",
    ]
    assert len(enabled) == len(default) + 4  # the role, its binding, the policy, its binding
