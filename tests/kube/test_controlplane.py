"""The control-plane fixture itself: each component does what the end-to-end tests rely on."""

import kubernetes
import pytest
from controlplane import ControlPlane, KubeTestContext, wait_until

APP_LABELS = {"app": "pause"}


def create_pause_deployment(kube: KubeTestContext, replicas: int) -> None:
    kubernetes.client.AppsV1Api(kube.api_client).create_namespaced_deployment(
        kube.namespace,
        {
            "metadata": {"name": "pause"},
            "spec": {
                "replicas": replicas,
                "selector": {"matchLabels": APP_LABELS},
                "template": {
                    "metadata": {"labels": APP_LABELS},
                    "spec": {
                        # KWOK fakes the containers: the image is never pulled.
                        "containers": [
                            {
                                "name": "pause",
                                "image": "registry.k8s.io/pause:3.10",
                                "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}},
                            }
                        ]
                    },
                },
            },
        },
    )


def running_pods(kube: KubeTestContext) -> list:
    pods = kube.core.list_namespaced_pod(kube.namespace, label_selector="app=pause").items
    return [pod for pod in pods if pod.status.phase == "Running" and pod.metadata.deletion_timestamp is None]


def wait_running_pods(kube: KubeTestContext, count: int, without: str | None = None) -> list:
    """Wait until exactly `count` pods run, none of them named `without`; returns them."""

    def settled():
        pods = running_pods(kube)
        names = {pod.metadata.name for pod in pods}
        return pods if len(pods) == count and without not in names else None

    return wait_until(settled, timeout=30, what=f"{count} Running pods")


def test_api_server_reports_its_version(control_plane: ControlPlane):
    with kubernetes.config.new_client_from_config(config_file=str(control_plane.kubeconfig_path)) as client:
        version = kubernetes.client.VersionApi(client).get_code()

    assert version.git_version == "v1.36.2"


def test_kwok_makes_an_annotated_node_ready(kube: KubeTestContext):
    kube.create_fake_node("kwok-ready")

    node = kube.wait_node_ready("kwok-ready")

    assert node.status.allocatable == {"cpu": "4", "memory": "8Gi", "pods": "110"}


def test_scheduler_binds_kwok_runs_and_replicaset_keeps_three_pods(kube: KubeTestContext):
    kube.create_fake_node("kwok-workers")
    kube.wait_node_ready("kwok-workers")
    create_pause_deployment(kube, replicas=3)

    pods = wait_running_pods(kube, 3)
    assert {pod.spec.node_name for pod in pods} == {"kwok-workers"}

    kube.core.delete_namespaced_pod(pods[0].metadata.name, kube.namespace)
    replaced = wait_running_pods(kube, 3, without=pods[0].metadata.name)
    assert {pod.spec.node_name for pod in replaced} == {"kwok-workers"}


def test_disruption_controller_and_eviction_api_enforce_a_pdb(kube: KubeTestContext):
    kube.create_fake_node("kwok-pdb")
    kube.wait_node_ready("kwok-pdb")
    create_pause_deployment(kube, replicas=3)
    pods = wait_running_pods(kube, 3)
    policy = kubernetes.client.PolicyV1Api(kube.api_client)
    policy.create_namespaced_pod_disruption_budget(
        kube.namespace,
        {"metadata": {"name": "pause"}, "spec": {"minAvailable": 2, "selector": {"matchLabels": APP_LABELS}}},
    )

    status = wait_until(
        lambda: (
            (budget := policy.read_namespaced_pod_disruption_budget("pause", kube.namespace).status)
            and budget.current_healthy == 3
            and budget
        ),
        timeout=30,
        what="the disruption controller to fill the PDB status",
    )
    assert (status.disruptions_allowed, status.desired_healthy, status.expected_pods) == (1, 2, 3)

    def evict(pod_name: str) -> int:
        eviction = {"metadata": {"name": pod_name, "namespace": kube.namespace}}
        _, code, _ = kube.core.create_namespaced_pod_eviction_with_http_info(
            pod_name, kube.namespace, eviction
        )
        return code

    # Cordoned as a drain does: the replacement stays Pending, so the budget stays spent. Otherwise
    # KWOK runs it within milliseconds and the second eviction may rightly pass.
    kube.core.patch_node("kwok-pdb", {"spec": {"unschedulable": True}})
    assert evict(pods[0].metadata.name) == 201
    with pytest.raises(kubernetes.client.ApiException) as refused:
        evict(pods[1].metadata.name)
    assert refused.value.status == 429


def test_lists_and_watches_work_after_the_api_server_restarts(kube: KubeTestContext):
    kube.core.create_namespaced_config_map(kube.namespace, {"metadata": {"name": "before-restart"}})

    kube.control_plane.restart_apiserver()

    # The data survived (same etcd), and a list followed by a watch from its resourceVersion works,
    # as an informer re-lists after a restart.
    listed = kube.core.list_namespaced_config_map(kube.namespace)
    assert "before-restart" in {config_map.metadata.name for config_map in listed.items}
    kube.core.create_namespaced_config_map(kube.namespace, {"metadata": {"name": "after-restart"}})
    watch = kubernetes.watch.Watch()
    seen = []
    for event in watch.stream(
        kube.core.list_namespaced_config_map,
        kube.namespace,
        resource_version=listed.metadata.resource_version,
        timeout_seconds=10,
    ):
        seen.append((event["type"], event["object"].metadata.name))
        if event["object"].metadata.name == "after-restart":
            watch.stop()
    assert ("ADDED", "after-restart") in seen


def test_service_account_without_rbac_is_forbidden(kube: KubeTestContext):
    kube.core.create_namespaced_service_account(kube.namespace, {"metadata": {"name": "no-rights"}})
    token = kube.core.create_namespaced_service_account_token(
        "no-rights", kube.namespace, {"spec": {"expirationSeconds": 600}}
    ).status.token
    kubeconfig = kube.control_plane.write_token_kubeconfig(token, name="no-rights")

    with (
        kubernetes.config.new_client_from_config(config_file=str(kubeconfig)) as client,
        pytest.raises(kubernetes.client.ApiException) as denied,
    ):
        kubernetes.client.CoreV1Api(client).list_namespaced_pod(kube.namespace)

    # 403, not 401: the token authenticated, and RBAC refused.
    assert denied.value.status == 403
