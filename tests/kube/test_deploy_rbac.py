"""deploy/ against kube/permissions.py: the install grants exactly what `kubetide run` checks for.

kube/permissions.py is the one list of the permissions kubetide uses; deploy/'s RBAC is written
by hand for readers, and these tests hold it to that list, overlay by overlay: every verb on
every resource, in the right scope (cluster-wide, or only in kubetide's namespace), nothing more,
and no wildcard. They also check what the Deployment promises (probes, security context, the
image's UID) and that docs/install.md's permission table is the one permissions.py gives.

No control plane is needed, only kubectl (for its built-in kustomize).
"""

from __future__ import annotations

import collections
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from kubetide.kube.permissions import (
    CLUSTERAPI,
    KWOK_NODES,
    LEADER_ELECTION,
    PERMISSIONS,
    RESTART_ONLY_MARK,
    SURGE_BEFORE_EVICT,
    SURGE_BEFORE_EVICT_COMPONENT,
    Permission,
)

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
INSTALL_DOC = ROOT / "docs" / "install.md"
IMAGE = "ghcr.io/kubetide/kubetide:0.1.0"
METRICS_PORT = 8085
REQUIRE_VARIABLE = "KUBETIDE_REQUIRE_CONTROL_PLANE"  # CI sets it: kubectl must be there

# What each rendering must grant: `kubetide run` checks PERMISSIONS always, LEADER_ELECTION with
# --leader-elect (the Deployment's two replicas elect a leader), KWOK_NODES with the kwok
# provider, CLUSTERAPI with the clusterapi provider. SURGE_BEFORE_EVICT (--surge-before-evict, or
# a Deployment's opt-in annotation) is granted by no install, only by the opt-in component, with
# the mark its admission policy confines by (COMPONENT_GRANTS).
EXPECTED = {
    ".": (*PERMISSIONS, LEADER_ELECTION, KWOK_NODES),  # deploy/ is the kwok install
    "base": (*PERMISSIONS, LEADER_ELECTION),
    "overlays/kwok": (*PERMISSIONS, LEADER_ELECTION, KWOK_NODES),
    "overlays/aws": (*PERMISSIONS, LEADER_ELECTION),
    "overlays/clusterapi": (*PERMISSIONS, LEADER_ELECTION, *CLUSTERAPI),
}
PROVIDER = {".": "kwok", "overlays/kwok": "kwok", "overlays/aws": "aws", "overlays/clusterapi": "clusterapi"}
COMPONENT = ROOT / SURGE_BEFORE_EVICT_COMPONENT
COMPONENT_GRANTS = (SURGE_BEFORE_EVICT, RESTART_ONLY_MARK)

# (scope, API group, resource, verb); scope is "cluster" or "namespace" (kubetide's own).
Grant = tuple[str, str, str, str]


def kubectl() -> str:
    found = shutil.which("kubectl")
    if found:
        return found
    reason = "kubectl is not installed (its kustomize renders deploy/)"
    if os.environ.get(REQUIRE_VARIABLE) == "1":
        pytest.fail(f"{reason} ({REQUIRE_VARIABLE}=1)", pytrace=False)
    pytest.skip(reason)


def render(directory: Path) -> list[dict]:
    """`kubectl kustomize DIRECTORY`, parsed: the objects `kubectl apply -k` would send."""
    result = subprocess.run(
        [kubectl(), "kustomize", str(directory)], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    return [doc for doc in yaml.safe_load_all(result.stdout) if doc]


def render_wrapped(
    directory: Path,
    resources: list[Path],
    components: tuple[Path, ...] = (),
    **fields: str,
) -> list[dict]:
    """`resources` (and `components`) rendered through a kustomization of our own in `directory`,
    with its other `fields` (namespace, nameSuffix): as a user's overlay on top of deploy/'s."""
    directory.mkdir(parents=True, exist_ok=True)
    # kustomize accepts only relative paths to a base; JSON, so that every string stays a string
    # (a suffix like "-1e5000" is a number to YAML).
    (directory / "kustomization.yaml").write_text(
        json.dumps(
            {
                "apiVersion": "kustomize.config.k8s.io/v1beta1",
                "kind": "Kustomization",
                **fields,
                "resources": [os.path.relpath(r, directory) for r in resources],
                "components": [os.path.relpath(c, directory) for c in components],
            }
        )
    )
    return render(directory)


def one(objects: list[dict], kind: str, name: str | None = None) -> dict:
    found = [o for o in objects if o["kind"] == kind and (name is None or o["metadata"]["name"] == name)]
    assert len(found) == 1, f"expected one {kind} {name or ''}, found {len(found)}"
    return found[0]


def expected_grants(permissions: tuple[Permission, ...]) -> collections.Counter[Grant]:
    return collections.Counter(
        ("namespace" if p.namespaced_in_own_namespace else "cluster", p.group, p.resource, verb)
        for p in permissions
        for verb in p.verbs
    )


def granted(objects: list[dict]) -> collections.Counter[Grant]:
    """Every (scope, group, resource, verb) the rendering grants its ServiceAccount, counted (a
    grant made twice is redundant RBAC). Fails on wildcards, resourceNames, non-resource URLs,
    aggregation, bindings to anyone else, and bindings to roles the rendering does not define."""
    account = one(objects, "ServiceAccount")
    namespace = account["metadata"]["namespace"]
    subject = {"kind": "ServiceAccount", "name": account["metadata"]["name"], "namespace": namespace}
    roles = {(o["kind"], o["metadata"]["name"]): o for o in objects if o["kind"] in ("ClusterRole", "Role")}
    grants: collections.Counter[Grant] = collections.Counter()
    bound: set[tuple[str, str]] = set()
    for binding in (o for o in objects if o["kind"] in ("ClusterRoleBinding", "RoleBinding")):
        name = f"{binding['kind']} {binding['metadata']['name']}"
        assert binding["subjects"] == [subject], f"{name} binds {binding['subjects']}, not {subject}"
        ref = binding["roleRef"]
        assert ref["apiGroup"] == "rbac.authorization.k8s.io"
        role = roles.get((ref["kind"], ref["name"]))
        assert role is not None, f"{name} refers to {ref['kind']} {ref['name']}, which is not rendered"
        if binding["kind"] == "RoleBinding":
            assert binding["metadata"]["namespace"] == namespace, name
            scope = "namespace"
        else:
            scope = "cluster"
        if role["kind"] == "Role":
            assert role["metadata"]["namespace"] == namespace, f"Role {ref['name']}"
        bound.add((ref["kind"], ref["name"]))
        assert "aggregationRule" not in role, f"{ref['kind']} {ref['name']}"
        for rule in role["rules"]:
            where = f"{ref['kind']} {ref['name']}: {rule}"
            assert not {"resourceNames", "nonResourceURLs"} & rule.keys(), where
            for field in ("apiGroups", "resources", "verbs"):
                assert rule[field] and not any("*" in item for item in rule[field]), where
            for group in rule["apiGroups"]:
                for resource in rule["resources"]:
                    for verb in rule["verbs"]:
                        grants[(scope, group, resource, verb)] += 1
    assert bound == set(roles), f"roles bound to no one: {sorted(set(roles) - bound)}"
    return grants


@pytest.mark.parametrize("component", [False, True], ids=["default", "surge-before-evict"])
@pytest.mark.parametrize("variant", sorted(EXPECTED))
def test_rbac_grants_exactly_what_kubetide_checks_for(variant, component, tmp_path):
    if component:
        objects = render_wrapped(tmp_path / "overlay", [DEPLOY / variant], (COMPONENT,), namespace="kubetide")
        permissions = (*EXPECTED[variant], *COMPONENT_GRANTS)
    else:
        objects = render(DEPLOY / variant)
        permissions = EXPECTED[variant]
    grants = granted(objects)
    expected = expected_grants(permissions)
    extra = sorted(set(grants) - set(expected))
    missing = sorted(set(expected) - set(grants))
    assert not extra, f"{variant} grants what kubetide does not use: {extra}"
    assert not missing, f"{variant} lacks what kubetide checks for: {missing}"
    twice = sorted(grant for grant, count in grants.items() if count > 1)
    assert not twice, f"{variant} grants these more than once: {twice}"


def container_of(objects: list[dict]) -> tuple[dict, dict]:
    deployment = one(objects, "Deployment")
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    return deployment, container


@pytest.mark.parametrize("variant", sorted(EXPECTED))
def test_deployment_is_highly_available_probed_and_confined(variant):
    objects = render(DEPLOY / variant)
    deployment, container = container_of(objects)
    pod = deployment["spec"]["template"]["spec"]
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    namespace = one(objects, "ServiceAccount")["metadata"]["namespace"]

    assert deployment["metadata"]["namespace"] == namespace
    assert pod["serviceAccountName"] == one(objects, "ServiceAccount")["metadata"]["name"]
    assert deployment["spec"]["replicas"] == 2
    assert container["image"] == IMAGE
    args = container["args"]
    assert args[0] == "run"
    assert "--leader-elect=true" in args
    assert f"--address=:{METRICS_PORT}" in args
    # The Lease and status ConfigMap go where the Role grants: the pod's own namespace.
    assert "--namespace=$(POD_NAMESPACE)" in args
    (env,) = [e for e in container["env"] if e["name"] == "POD_NAMESPACE"]
    assert env["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.namespace"
    if variant in PROVIDER:
        assert [a for a in args if a.startswith("--cloud-provider=")] == [
            f"--cloud-provider={PROVIDER[variant]}"
        ]
    assert pod["priorityClassName"] == "system-cluster-critical"

    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
        check = container[probe]["httpGet"]
        assert check["path"] == "/health-check", probe
        assert ports.get(check["port"], check["port"]) == METRICS_PORT, probe
    for kind in ("requests", "limits"):
        assert set(container["resources"][kind]) == {"cpu", "memory"}, kind

    security = container["securityContext"]
    assert security["allowPrivilegeEscalation"] is False
    assert security["readOnlyRootFilesystem"] is True
    assert security["capabilities"] == {"drop": ["ALL"]}
    assert security.get("privileged", False) is False
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    assert not pod.get("hostNetwork") and not pod.get("hostPID") and not pod.get("hostIPC")

    # The image runs as the same fixed UID the pod asks for (tests/image/ runs the built image so).
    build = (ROOT / "deploy" / "image" / "build.sh").read_text()
    uid = pod["securityContext"]["runAsUser"]
    assert uid != 0
    assert re.search(rf"^UID_GID={uid}:{uid}$", build, re.MULTILINE), "build.sh UID_GID"
    assert '--config.user "$UID_GID"' in build
    assert f"kubetide:x:{uid}:{uid}:" in build  # its /etc/passwd entry

    budget = one(objects, "PodDisruptionBudget")
    assert budget["metadata"]["namespace"] == namespace
    assert budget["spec"]["selector"]["matchLabels"].items() <= labels.items()
    assert budget["spec"].get("maxUnavailable") == 1 or budget["spec"].get("minAvailable") == 1
    service = one(objects, "Service")
    assert service["metadata"]["namespace"] == namespace
    assert service["spec"]["selector"].items() <= labels.items()
    (port,) = service["spec"]["ports"]
    assert port["port"] == METRICS_PORT
    assert ports.get(port["targetPort"], port["targetPort"]) == METRICS_PORT


def run_parser_choices() -> list[str]:
    from kubetide.cli.main import build_parser

    parser = build_parser()
    (subparsers,) = [a for a in parser._actions if a.dest == "command"]
    run = subparsers.choices["run"]
    (provider,) = [a for a in run._actions if a.dest == "cloud_provider"]
    return list(provider.choices)


@pytest.mark.parametrize("variant", sorted(PROVIDER))
def test_overlay_arguments_are_accepted_by_kubetide_run(variant, tmp_path):
    """The Deployment's arguments parse as `kubetide run` parses them, for each provider kubetide
    has (one not implemented yet is skipped, and checked once it lands); the kwok overlay's
    node-groups file is valid and mounted where --node-groups says."""
    from kubetide.cli.main import build_parser
    from kubetide.cli.run import parse_autoscaler_flags

    if PROVIDER[variant] not in run_parser_choices():
        pytest.skip(f"kubetide run has no --cloud-provider={PROVIDER[variant]} yet")
    objects = render(DEPLOY / variant)
    deployment, container = container_of(objects)
    args = [a.replace("$(POD_NAMESPACE)", "kubetide") for a in container["args"]]
    parsed, extra = build_parser().parse_known_args(args)
    parse_autoscaler_flags(extra)
    if PROVIDER[variant] != "kwok":
        return
    from kubetide.cloud.kwok import KwokCloudProvider

    groups_path = Path(parsed.node_groups)
    (mount,) = [m for m in container["volumeMounts"] if groups_path.parent == Path(m["mountPath"])]
    assert mount.get("readOnly") is True
    (volume,) = [v for v in deployment["spec"]["template"]["spec"]["volumes"] if v["name"] == mount["name"]]
    config_map = one(objects, "ConfigMap", volume["configMap"]["name"])
    local = tmp_path / groups_path.name
    local.write_text(config_map["data"][groups_path.name])
    KwokCloudProvider.check_file(str(local))


def permission_table() -> str:
    """docs/install.md's table of permissions, from kube/permissions.py."""
    rows = [
        "| verbs | resource | where | what for |",
        "| --- | --- | --- | --- |",
    ]
    extra = {LEADER_ELECTION: "leader election between the replicas"}
    only = {KWOK_NODES: "kwok", **dict.fromkeys(CLUSTERAPI, "clusterapi")}
    for permission in (*PERMISSIONS, LEADER_ELECTION, KWOK_NODES, *CLUSTERAPI, *COMPONENT_GRANTS):
        # Spelled as kubetide's "missing permission" error spells it (resource.group).
        resource = permission.resource_name()
        if permission in only:
            where = f"cluster-wide, {only[permission]} overlay only"
        elif permission.granted_by:
            where = f"cluster-wide, component `{permission.granted_by}` only"
        elif permission.namespaced_in_own_namespace:
            where = "kubetide's namespace"
        else:
            where = "cluster-wide"
        why = permission.why or extra.get(permission) or "read into the informer caches"
        rows.append(f"| {', '.join(permission.verbs)} | `{resource}` | {where} | {why} |")
    return "\n".join(rows) + "\n"


def test_install_doc_lists_every_permission_from_permissions_py():
    table = permission_table()
    assert table in INSTALL_DOC.read_text(), (
        "docs/install.md's permission table is not the one kube/permissions.py gives; replace it "
        f"with:\n{table}"
    )
