"""deploy/'s two installs on a real API server: the autoscaler (deploy/, namespace `kubetide`, Pod
Security "restricted") and the QoS agent (deploy/qos-agent, namespace `kubetide-qos-agent`,
"privileged") hold in any order, and the agent's writes are confined to its own Node by the
ValidatingAdmissionPolicy of deploy/qos-agent/node-confinement.yaml, through the node claim of a
pod-bound ServiceAccount token.

The installs are applied with their own names (and the agent's once more under another namespace
and name suffix: its admission policy must follow the rename), without their workloads: a DaemonSet would put an agent pod on every test's nodes. Pod Security
admission is checked on the workloads' pod templates created as pods (server-side dry run, which
runs admission) and, for the agent, on a real pod bound to one node.
"""

from __future__ import annotations

import copy
import json
import subprocess
import uuid

import kubernetes
import pytest
import yaml
from controlplane import KubeTestContext, wait_until
from test_deploy_rbac import DEPLOY, kubectl, one, render, render_wrapped

from kubetide.autoscaler.scaledown.planning.drainability import SAFE_TO_EVICT_LOCAL_VOLUMES

pytestmark = pytest.mark.controlplane

AUTOSCALER_NAMESPACE = "kubetide"
AGENT_NAMESPACE = "kubetide-qos-agent"
AGENT_SERVICE_ACCOUNT = "kubetide-qos-agent"
ENFORCE = "pod-security.kubernetes.io/enforce"
WORKLOADS = ("Deployment", "DaemonSet")
NOT_APPLIED = (*WORKLOADS, "CustomResourceDefinition")  # the CRDs: tests/kube/data's, per module
TAINT_KEY = "kubetide.io/qos-agent-test"


def apply(kube: KubeTestContext, objects: list[dict], *flags: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [kubectl(), f"--kubeconfig={kube.control_plane.kubeconfig_path}", "apply", *flags, "-f", "-"],
        input=yaml.safe_dump_all(objects),
        capture_output=True,
        text=True,
        timeout=60,
    )


def install(kube: KubeTestContext, objects: list[dict]) -> None:
    applied = [o for o in objects if o["kind"] not in NOT_APPLIED]
    result = apply(kube, applied)
    assert result.returncode == 0, result.stderr


def remove_installs(kube: KubeTestContext, *installs: list[dict]) -> None:
    """Delete what the installs created: their namespaces take everything namespaced with them."""
    objects = [o for objects in installs for o in objects if o["kind"] not in NOT_APPLIED]
    subprocess.run(
        [
            kubectl(),
            f"--kubeconfig={kube.control_plane.kubeconfig_path}",
            "delete",
            "--ignore-not-found",
            "--wait=false",
            "-f",
            "-",
        ],
        input=yaml.safe_dump_all(objects),
        capture_output=True,
        text=True,
        timeout=60,
    )


def namespace_exists(kube: KubeTestContext, name: str) -> bool:
    try:
        kube.core.read_namespace(name)
    except kubernetes.client.ApiException as error:
        if error.status == 404:
            return False
        raise
    return True


def namespace_labels(kube: KubeTestContext, name: str) -> dict[str, str]:
    return kube.core.read_namespace(name).metadata.labels or {}


def pod_from(workload: dict, namespace: str, name: str, node: str | None = None) -> dict:
    template = copy.deepcopy(workload["spec"]["template"])
    spec = template["spec"]
    if node is not None:
        spec["nodeName"] = node
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        # The template's labels and annotations, as the workload's controller copies them.
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": template["metadata"].get("labels", {}),
            "annotations": template["metadata"].get("annotations", {}),
        },
        "spec": spec,
    }


def admit(kube: KubeTestContext, pod: dict) -> kubernetes.client.V1Pod | str:
    """The pod as admission leaves it (a server-side dry run: every admission plugin runs, nothing
    is stored), else the API server's refusal."""
    try:
        return kube.core.create_namespaced_pod(pod["metadata"]["namespace"], pod, dry_run="All")
    except kubernetes.client.ApiException as refused:
        return json.loads(refused.body).get("message", refused.body)


def dry_run_create(kube: KubeTestContext, pod: dict) -> str | None:
    """None when admission lets the pod in, else the API server's refusal."""
    admitted = admit(kube, pod)
    return admitted if isinstance(admitted, str) else None


@pytest.fixture
def installs(kube: KubeTestContext):
    autoscaler, agent = render(DEPLOY), render(DEPLOY / "qos-agent")
    for name in (AUTOSCALER_NAMESPACE, AGENT_NAMESPACE):
        # The previous test's namespaces may still be terminating.
        wait_until(
            lambda name=name: not namespace_exists(kube, name), timeout=90, what=f"namespace {name} gone"
        )
    kube.add_cleanup(lambda: remove_installs(kube, autoscaler, agent))
    return autoscaler, agent


def test_both_installs_hold_in_either_order_under_pod_security_admission(kube, installs):
    autoscaler, agent = installs
    deployment, daemonset = one(autoscaler, "Deployment"), one(agent, "DaemonSet")
    assert deployment["metadata"]["namespace"] == AUTOSCALER_NAMESPACE
    assert daemonset["metadata"]["namespace"] == AGENT_NAMESPACE
    # The agent after the autoscaler, then the autoscaler after the agent (the order that used
    # to refuse every new agent pod): after each step both namespaces keep their own level.
    for step, (objects, _) in enumerate(
        ((autoscaler, "autoscaler"), (agent, "agent"), (autoscaler, "again"))
    ):
        install(kube, objects)
        assert namespace_labels(kube, AUTOSCALER_NAMESPACE).get(ENFORCE) == "restricted", step
        if step > 0:
            assert namespace_labels(kube, AGENT_NAMESPACE).get(ENFORCE) == "privileged", step
        wait_until(
            lambda: kube.core.list_namespaced_service_account(AUTOSCALER_NAMESPACE).items,
            what="the autoscaler's ServiceAccount",
        )
        if step > 0:
            wait_until(
                lambda: (
                    kube.core.list_namespaced_service_account(
                        AGENT_NAMESPACE, field_selector=f"metadata.name={AGENT_SERVICE_ACCOUNT}"
                    ).items
                ),
                what="the agent's ServiceAccount",
            )
            # Each workload's pods are admitted in its own namespace...
            assert dry_run_create(kube, pod_from(deployment, AUTOSCALER_NAMESPACE, "autoscaler")) is None
            assert dry_run_create(kube, pod_from(daemonset, AGENT_NAMESPACE, "agent")) is None
            # ...and "restricted" is enforced for real: the agent's pod is refused in the autoscaler's.
            misplaced = pod_from(daemonset, AUTOSCALER_NAMESPACE, "agent")
            misplaced["spec"]["serviceAccountName"] = deployment["spec"]["template"]["spec"][
                "serviceAccountName"
            ]
            refused = dry_run_create(kube, misplaced)
            assert refused is not None and 'violates PodSecurity "restricted:latest"' in refused, refused


def test_the_autoscaler_s_pod_is_admitted_with_its_priority_class(kube, installs):
    # system-cluster-critical outside kube-system: a stock API server admits it in any namespace;
    # a cluster may confine it with the ResourceQuota admission's limitedResources (docs/install.md).
    autoscaler, _ = installs
    install(kube, autoscaler)
    wait_until(
        lambda: kube.core.list_namespaced_service_account(AUTOSCALER_NAMESPACE).items,
        what="the autoscaler's ServiceAccount",
    )
    template = one(autoscaler, "Deployment")["spec"]["template"]
    priority_class = template["spec"]["priorityClassName"]
    assert priority_class == "system-cluster-critical"
    admitted = admit(kube, pod_from(one(autoscaler, "Deployment"), AUTOSCALER_NAMESPACE, "autoscaler"))
    assert not isinstance(admitted, str), admitted
    # The Priority admission plugin resolved the class to its value: the scheduler will preempt
    # for this pod, and nothing below it preempts it.
    value = kubernetes.client.SchedulingV1Api(kube.api_client).read_priority_class(priority_class).value
    assert (admitted.spec.priority_class_name, admitted.spec.priority) == (priority_class, value)
    assert value == 2000000000
    # The annotation that keeps it from pinning its node is the pod's, as admitted.
    assert admitted.metadata.annotations == template["metadata"]["annotations"]
    assert admitted.metadata.annotations[SAFE_TO_EVICT_LOCAL_VOLUMES] == "tmp"


def agent_client(kube: KubeTestContext, token: str) -> kubernetes.client.CoreV1Api:
    admin = kube.api_client.configuration
    configuration = kubernetes.client.Configuration()
    configuration.host = admin.host
    configuration.ssl_ca_cert = admin.ssl_ca_cert
    configuration.api_key = {"authorization": f"Bearer {token}"}
    client = kubernetes.client.ApiClient(configuration)
    kube.add_cleanup(client.close)
    return kubernetes.client.CoreV1Api(client)


def taint_node(core: kubernetes.client.CoreV1Api, name: str) -> str | None:
    """Add a taint the agent's way (read, then replace the Node); None if allowed, else the refusal.
    A conflict (KWOK heartbeats the Node meanwhile) is retried, as the agent retries it."""
    for _ in range(20):
        node = core.read_node(name)
        others = [t for t in node.spec.taints or [] if t.key != TAINT_KEY]
        # A new value each time: every call is a real change, whether or not an earlier one got in.
        taint = kubernetes.client.V1Taint(key=TAINT_KEY, value=uuid.uuid4().hex[:8], effect="NoSchedule")
        node.spec.taints = [*others, taint]
        try:
            core.replace_node(name, node)
        except kubernetes.client.ApiException as refused:
            if refused.status == 409:
                continue
            return f"{refused.status} {json.loads(refused.body).get('message', refused.body)}"
        return None
    raise AssertionError(f"Node {name}: 20 conflicts in a row")


@pytest.mark.parametrize("renamed", [False, True], ids=["as-shipped", "renamed"])
def test_the_agent_may_update_only_the_node_its_token_is_bound_to(kube, installs, tmp_path, renamed):
    _, agent = installs
    if renamed:
        # Another namespace and a name suffix (an overlay of one's own, or `kustomize edit set
        # namespace`): the confinement follows the ServiceAccount, it is not switched off.
        agent = render_wrapped(
            tmp_path / "agent",
            [DEPLOY / "qos-agent"],
            namespace=f"{kube.namespace[:50]}-agents",
            nameSuffix="-r",
        )
        kube.add_cleanup(lambda: remove_installs(kube, agent))
    account = one(agent, "ServiceAccount")["metadata"]
    agent_namespace, agent_account = account["namespace"], account["name"]
    assert renamed == ((agent_namespace, agent_account) != (AGENT_NAMESPACE, AGENT_SERVICE_ACCOUNT))
    install(kube, agent)
    suffix = kube.namespace[-6:]
    own, other = f"agent-own-{suffix}", f"agent-other-{suffix}"
    kube.create_fake_node(own)
    kube.create_fake_node(other)
    wait_until(
        lambda: (
            kube.core.list_namespaced_service_account(
                agent_namespace, field_selector=f"metadata.name={agent_account}"
            ).items
        ),
        what="the agent's ServiceAccount",
    )
    # The DaemonSet's pod, as its controller would make it for node `own`.
    pod = kube.core.create_namespaced_pod(
        agent_namespace, pod_from(one(agent, "DaemonSet"), agent_namespace, f"agent-{suffix}", node=own)
    )
    kube.add_cleanup(
        lambda: kube.core.delete_namespaced_pod(pod.metadata.name, agent_namespace, grace_period_seconds=0)
    )
    # The token the kubelet projects into that pod: bound to the pod, hence to its node.
    bound = kube.core.create_namespaced_service_account_token(
        agent_account,
        agent_namespace,
        {
            "spec": {
                "audiences": [],
                "expirationSeconds": 3600,
                "boundObjectRef": {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "name": pod.metadata.name,
                    "uid": pod.metadata.uid,
                },
            }
        },
    ).status.token
    unbound = kube.core.create_namespaced_service_account_token(
        agent_account, agent_namespace, {"spec": {"audiences": [], "expirationSeconds": 3600}}
    ).status.token

    # The API server takes up a new admission policy within a few seconds: wait for it to refuse
    # the token bound to no node (it names no node, so it may update none).
    unbound_api = agent_client(kube, unbound)
    refused = wait_until(lambda: taint_node(unbound_api, own), timeout=30, what="the policy in force")
    assert "has a token bound to no node" in refused, refused

    agent_api = agent_client(kube, bound)
    # RBAC still lets it read every node (its watch selects its own by field selector)...
    assert {own, other} <= {n.metadata.name for n in agent_api.list_node().items}
    # ...and update its own...
    assert taint_node(agent_api, own) is None
    assert TAINT_KEY in {t.key for t in kube.core.read_node(own).spec.taints or []}
    # ...but not another node.
    refused = taint_node(agent_api, other)
    assert refused is not None and refused.startswith("403 "), refused
    assert f"the QoS agent on {own} may update only its own Node, not {other}" in refused, refused
    assert TAINT_KEY not in {t.key for t in kube.core.read_node(other).spec.taints or []}
    # The admin (anyone outside the agent's namespace) is not affected.
    assert taint_node(kube.core, other) is None
