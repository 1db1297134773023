"""NodeResourcesFit: every resource column, extended resources, the pod count."""

import pytest
from schedtools import cluster, node, pod, reason


@pytest.mark.parametrize(
    ("requests", "expected"),
    [
        ({"cpu": "1"}, None),
        ({"cpu": "2"}, None),  # exactly what is free
        ({"cpu": "2001m"}, "Insufficient cpu"),
        ({"memory": "4Gi"}, None),
        ({"memory": "5Gi"}, "Insufficient memory"),
        ({"cpu": "3", "memory": "5Gi"}, "Insufficient cpu, Insufficient memory"),
        ({"ephemeral-storage": "11Gi"}, "Insufficient ephemeral-storage"),
        ({"nvidia.com/gpu": "1"}, "Insufficient nvidia.com/gpu"),  # node has no such resource
        ({"example.com/dongle": "1"}, "Insufficient example.com/dongle"),  # unknown to the snapshot
    ],
)
def test_resource_fit(requests, expected):
    n = node("a", cpu="4", memory="8Gi", **{"ephemeral-storage": "10Gi"})
    _, checker = cluster([n], [(pod(cpu="2", memory="4Gi"), "a")])
    p = pod(cpu=None, requests=requests)
    assert reason(checker, p, "a") == expected
    assert (checker.find_node(p) is None) == (expected is not None)


def test_extended_resources_fit_until_used_up():
    snapshot, checker = cluster([node("cpu-only"), node("gpu", **{"nvidia.com/gpu": "2"})])
    p = pod(requests={"nvidia.com/gpu": "1"})
    assert reason(checker, p, "cpu-only") == "Insufficient nvidia.com/gpu"
    assert checker.find_node(p) == "gpu"
    snapshot.add_pod(p, "gpu")
    q = pod(requests={"nvidia.com/gpu": "1"})
    assert checker.find_node(q) == "gpu"
    snapshot.add_pod(q, "gpu")
    assert checker.find_node(pod(requests={"nvidia.com/gpu": "1"})) is None


def test_pod_count_is_checked_with_kube_wording():
    snapshot, checker = cluster([node("a", pods=2)])
    snapshot.add_pod(pod(), "a")
    assert reason(checker, pod(), "a") is None
    snapshot.add_pod(pod(), "a")
    assert reason(checker, pod(cpu=None), "a") == "Too many pods"


def test_zero_request_pod_fits_an_overcommitted_node():
    """Only resources the pod asks for are compared, as in kube-scheduler."""
    snapshot, checker = cluster([node("a", cpu="1")])
    snapshot.add_pod(pod(cpu="3"), "a")  # bound pods may exceed allocatable (static pods, races)
    assert reason(checker, pod(cpu=None), "a") is None
    assert reason(checker, pod(cpu="1m"), "a") == "Insufficient cpu"


def test_resource_reasons_are_counted_per_reason():
    _, checker = cluster([node("a", cpu="1", memory="1Gi"), node("b", cpu="1", memory="8Gi")])
    p = pod(cpu="2", memory="2Gi")
    assert checker.reasons(p) == {"Insufficient cpu": 2, "Insufficient memory": 1}
    assert checker.explain(p) == "0/2 nodes are available: 1 Insufficient memory, 2 Insufficient cpu."


def test_fit_follows_pods_leaving_and_fork_revert():
    snapshot, checker = cluster([node("a", cpu="1")])
    big = pod(cpu="800m")
    snapshot.add_pod(big, "a")
    p = pod(cpu="500m")
    assert checker.find_node(p) is None
    snapshot.fork()
    snapshot.remove_pod(big.uid)
    assert checker.find_node(p) == "a"
    snapshot.revert()
    assert checker.find_node(p) is None


def test_new_resource_column_added_after_checker_creation():
    snapshot, checker = cluster([node("a")])
    p = pod(requests={"example.com/fpga": "1"})
    assert checker.find_node(p) is None
    snapshot.add_node(node("b", **{"example.com/fpga": "1"}))
    assert checker.find_node(p) == "b"
    assert reason(checker, p, "a") == "Insufficient example.com/fpga"
