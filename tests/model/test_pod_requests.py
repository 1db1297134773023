"""Effective pod requests follow the scheduler's rules (k8s.io/component-helpers resource.PodRequests)."""

import yaml

from kubetide.model import load_documents


def pod(spec: str):
    doc = yaml.safe_load(f"kind: Pod\nmetadata: {{name: p}}\nspec:\n{spec}")
    return load_documents([doc], "t.yaml").pods[0]


def test_containers_add_up():
    p = pod(
        "  containers:\n  - {name: a, resources: {requests: {cpu: 100m, memory: 1Mi}}}\n  - {name: b, resources: {requests: {cpu: 200m}}}"
    )
    assert p.requests == {"cpu": 300, "memory": 2**20, "pods": 1}


def test_largest_init_container_wins_over_sum():
    p = pod(
        "  containers: [{name: a, resources: {requests: {cpu: 100m}}}]\n  initContainers: [{name: i, resources: {requests: {cpu: '1'}}}]"
    )
    assert p.requests["cpu"] == 1000


def test_sidecars_add_to_steady_state_and_later_init_containers():
    p = pod(
        "  containers: [{name: a, resources: {requests: {cpu: 100m}}}]\n"
        "  initContainers:\n"
        "  - {name: early, resources: {requests: {cpu: 300m}}}\n"
        "  - {name: side, restartPolicy: Always, resources: {requests: {cpu: 50m}}}\n"
        "  - {name: late, resources: {requests: {cpu: 260m}}}"
    )
    # steady: 100 + 50 = 150; early: 300; late runs beside the sidecar: 260 + 50 = 310.
    assert p.requests["cpu"] == 310


def test_overhead_is_added():
    p = pod("  overhead: {cpu: 250m}\n  containers: [{name: a, resources: {requests: {cpu: 100m}}}]")
    assert p.requests["cpu"] == 350


def test_limits_without_requests_become_requests():
    p = pod("  containers: [{name: a, resources: {limits: {cpu: 500m, memory: 1Gi}}}]")
    assert p.requests == {"cpu": 500, "memory": 2**30, "pods": 1}
    assert p.qos_class == "Guaranteed"


def test_qos_classes():
    assert pod("  containers: [{name: a}]").qos_class == "BestEffort"
    assert pod("  containers: [{name: a, resources: {requests: {cpu: 1}}}]").qos_class == "Burstable"


def test_extended_resources_and_host_ports():
    p = pod(
        "  containers: [{name: a, resources: {limits: {nvidia.com/gpu: 2}}, ports: [{containerPort: 80, hostPort: 8080}]}]"
    )
    assert p.requests["nvidia.com/gpu"] == 2
    assert [(h.port, h.protocol, h.ip) for h in p.host_ports] == [(8080, "TCP", "0.0.0.0")]


def test_status_fields():
    doc = yaml.safe_load(
        """
kind: Pod
metadata: {name: p, creationTimestamp: "2024-01-01T00:00:00Z"}
spec: {nodeName: n1, containers: [{name: a}], initContainers: [{name: s, restartPolicy: Always}]}
status:
  phase: Running
  conditions:
  - {type: Ready, status: "True", lastTransitionTime: "2024-01-01T00:01:00Z"}
  containerStatuses: [{name: a, restartCount: 3}]
  initContainerStatuses: [{name: s, restartCount: 5}]
"""
    )
    p = load_documents([doc], "t.yaml").pods[0]
    assert (p.phase, p.ready, p.node_name, p.restarts, p.sidecar_restarts) == ("Running", True, "n1", 3, 5)
    assert p.ready_transition - p.meta.creation_timestamp == 60


def test_nominated_node_name_is_read_from_status():
    doc = yaml.safe_load(
        "kind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: a}]}\n"
        "status: {phase: Pending, nominatedNodeName: n2}"
    )
    assert load_documents([doc], "t.yaml").pods[0].nominated_node_name == "n2"
    assert pod("  containers: [{name: a}]").nominated_node_name == ""
