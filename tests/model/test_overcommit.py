"""Over-committed nodes in a dump: requests of the bound pods above what the node can allocate."""

from kubetide.model import load_documents
from kubetide.model.overcommit import bound_totals, overcommitted_nodes


def _node(name: str, cpu: str = "4", gpu: str | None = None) -> dict:
    allocatable = {"cpu": cpu, "memory": "16Gi", "pods": "110"}
    if gpu is not None:
        allocatable["nvidia.com/gpu"] = gpu
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name},
        "status": {"allocatable": allocatable},
    }


def _pod(name: str, node: str, cpu: str = "1", gpu: str | None = None, phase: str = "Running") -> dict:
    requests = {"cpu": cpu}
    limits = {}
    if gpu is not None:
        requests["nvidia.com/gpu"] = limits["nvidia.com/gpu"] = gpu
    resources = {"requests": requests, **({"limits": limits} if limits else {})}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"nodeName": node, "containers": [{"name": "c", "image": "i", "resources": resources}]},
        "status": {"phase": phase},
    }


def _found(*objects):
    manifests = load_documents(list(objects), "dump.yaml")
    found = overcommitted_nodes(manifests.nodes, manifests.pods)
    # The loader's per-node totals (what the commands pass) say the same as the pods summed here.
    assert manifests.bound_requests == bound_totals(manifests.pods)
    assert overcommitted_nodes(manifests.nodes, [], manifests.bound_requests) == found
    return found


def test_a_node_whose_pods_request_more_than_allocatable_is_found_with_its_worst_resource():
    found = _found(
        _node("gpu-1", cpu="8", gpu="1"),
        _pod("train-a", "gpu-1", cpu="5", gpu="1"),
        _pod("train-b", "gpu-1", cpu="4", gpu="1"),
    )
    assert [(o.node, o.resource, o.requested, o.allocatable, o.percent) for o in found] == [
        ("gpu-1", "nvidia.com/gpu", 2, 1, 200.0)
    ]


def test_requests_up_to_allocatable_pending_and_finished_pods_are_not_over_commitment():
    found = _found(
        _node("a"),
        _pod("fits", "a", cpu="4"),
        _pod("done", "a", cpu="4", phase="Succeeded"),
        {**_pod("pending", "", cpu="4"), "spec": {**_pod("pending", "", cpu="4")["spec"], "nodeName": ""}},
    )
    assert found == []


def test_nodes_come_in_the_dump_order():
    found = _found(
        _node("b", cpu="1"),
        _node("a", cpu="1"),
        _pod("p1", "a", cpu="2"),
        _pod("p2", "b", cpu="1500m"),
    )
    assert [(o.node, o.percent) for o in found] == [("b", 150.0), ("a", 200.0)]
