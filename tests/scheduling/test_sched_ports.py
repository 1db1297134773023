"""NodePorts: host port conflicts per protocol and IP; 0.0.0.0 conflicts with every IP."""

import pytest
from schedtools import cluster, node, pod, reason

CONFLICT = "node(s) didn't have free ports for the requested pod ports"


def port(host_port, protocol=None, ip=None):
    p = {"containerPort": 8080, "hostPort": host_port}
    if protocol:
        p["protocol"] = protocol
    if ip:
        p["hostIP"] = ip
    return p


@pytest.mark.parametrize(
    ("existing", "wanted", "conflict"),
    [
        (port(80), port(80), True),
        (port(80), port(81), False),
        (port(80), port(80, "UDP"), False),
        (port(80, "UDP"), port(80, "UDP"), True),
        (port(80, "SCTP"), port(80, "TCP"), False),
        (port(80, ip="10.0.0.1"), port(80, ip="10.0.0.2"), False),
        (port(80, ip="10.0.0.1"), port(80, ip="10.0.0.1"), True),
        (port(80, ip="10.0.0.1"), port(80), True),  # wanted 0.0.0.0 vs a specific IP
        (port(80), port(80, ip="10.0.0.1"), True),  # existing 0.0.0.0 vs a specific IP
        (port(80, ip="0.0.0.0"), port(80, ip="10.0.0.1"), True),
        (port(80, "UDP", ip="10.0.0.1"), port(80, "TCP"), False),
    ],
)
def test_host_port_conflicts(existing, wanted, conflict):
    _, checker = cluster([node("a")], [(pod(ports=[existing]), "a")])
    assert reason(checker, pod(ports=[wanted]), "a") == (CONFLICT if conflict else None)


def test_container_ports_without_host_port_never_conflict():
    _, checker = cluster([node("a")], [(pod(ports=[{"containerPort": 80}]), "a")])
    assert reason(checker, pod(ports=[{"containerPort": 80}]), "a") is None


def test_host_network_uses_container_ports_as_host_ports():
    existing = pod(ports=[{"containerPort": 9100}], spec={"hostNetwork": True})
    _, checker = cluster([node("a")], [(existing, "a")])
    assert reason(checker, pod(ports=[port(9100)]), "a") == CONFLICT


def test_ports_free_again_after_pod_leaves_and_after_revert():
    snapshot, checker = cluster([node("a"), node("b")])
    first = pod(ports=[port(443)])
    snapshot.add_pod(first, "a")
    second = pod(ports=[port(443)])
    assert checker.find_node(second) == "b"
    snapshot.fork()
    snapshot.remove_pod(first.uid)
    assert checker.find_node(second) == "a"
    snapshot.revert()
    assert checker.find_node(second) == "b"
    assert checker.reasons(second) == {CONFLICT: 1}


def test_ports_run_before_resources():
    _, checker = cluster([node("a", cpu="1")], [(pod(ports=[port(80)]), "a")])
    assert checker.fits(pod(cpu="2", ports=[port(80)]), "a").plugin == "NodePorts"
