"""kubetide's cheaper-group replacement against a real control plane (issue 38 item 3): `kubetide
run` launches a small node for a large one whose pod fits nowhere else, and drains the large node
only once the small one is Ready; the pod ends on the small node and the large node is gone."""

from __future__ import annotations

import json
import time

import pytest
from controlplane import wait_until
from kubetide_process import (
    FAST_FLAGS,
    TO_BE_DELETED,
    Kubetide,
    create_deployment,
    group_nodes,
    kwok_run_args,
    running,
    scale,
    wait_running,
    write_groups,
)

pytestmark = pytest.mark.controlplane


def is_ready(node) -> bool:
    return any(c.type == "Ready" and c.status == "True" for c in node.status.conditions or [])


def tainted(node) -> bool:
    return any(t.key == TO_BE_DELETED for t in node.spec.taints or [])


def leave_web_alone_on_a_large_node(kube, kubetide: Kubetide):
    """Once the fillers brought up a large node, web's pod joins them there and the fillers go:
    web's pod is alone on a large node and fits on no other, so CA's rule keeps the node; one small
    node ($0.10 against $1.00) can stand in for it. Returns the large node."""
    wait_running(kube, "filler", 7, timeout=120)
    (large,) = group_nodes(kube, "large")
    create_deployment(kube, "web", 1, "500m")
    (web,) = wait_running(kube, "web", 1, timeout=60)
    assert web.spec.node_name == large.metadata.name, kubetide.log()
    scale(kube, "filler", 0)
    return large


def test_a_large_node_is_replaced_by_a_small_one_launched_and_ready_first(kube, tmp_path):
    groups = write_groups(tmp_path)  # small: 2 cpu, $0.10; large: 8 cpu, $1.00
    # Seven 1-cpu pods that only a large node takes bring one up; web's pod joins them there.
    create_deployment(kube, "filler", 7, "1", node_selector={"size": "large"})
    kubetide = Kubetide(
        kube,
        tmp_path,
        *kwok_run_args(kube, groups),
        "--status-config-map-name=replace-status",
        "--leader-elect=false",
        *FAST_FLAGS,
    ).start()
    leave_web_alone_on_a_large_node(kube, kubetide)
    small_ready_when_tainted: bool | None = None
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        larges = group_nodes(kube, "large")
        if small_ready_when_tainted is None and any(tainted(n) for n in larges):
            small_ready_when_tainted = any(is_ready(n) for n in group_nodes(kube, "small"))
        if not larges and running(kube, "web"):
            break
        time.sleep(0.2)
    log = kubetide.log()
    assert not group_nodes(kube, "large"), log
    assert small_ready_when_tainted is True, log
    smalls = {n.metadata.name for n in group_nodes(kube, "small")}
    (moved,) = wait_until(lambda: running(kube, "web"), timeout=30, what="web running")
    assert moved.spec.node_name in smalls
    events = kube.core.list_event_for_all_namespaces().items
    assert any(e.reason == "ScaleDownReplacing" for e in events), log
    assert kubetide.terminate() == 0
    assert "Traceback" not in kubetide.log()


REPLACED_BY = "kubetide.io/replaced-by"


def test_a_replacement_in_flight_survives_a_restart(kube, tmp_path):
    """kubetide is killed right after it launched the small node: the record on the large node
    lets the next process take the replacement back. It launches no second small node, does not
    remove the first as an empty node, and drains the large node onto it."""
    groups = write_groups(tmp_path)
    create_deployment(kube, "filler", 7, "1", node_selector={"size": "large"})
    args = [*kwok_run_args(kube, groups), "--status-config-map-name=replace-restart", "--leader-elect=false"]
    # A slow loop: the node it launched is Ready (KWOK: about a second) long before it would look
    # again, and the record is seen (polled every 0.1 s) well before that, so the kill comes between
    # the launch and the drain.
    first = Kubetide(kube, tmp_path, *args, *FAST_FLAGS, "--scan-interval=5s", name="first").start()
    large = leave_web_alone_on_a_large_node(kube, first)

    def recorded():
        (node,) = group_nodes(kube, "large")
        return (node.metadata.annotations or {}).get(REPLACED_BY)

    record = wait_until(recorded, timeout=120, what="the replacement recorded on the large node")
    first.kill()
    assert json.loads(record)["nodeGroup"] == "small"
    (still,) = group_nodes(kube, "large")
    assert not tainted(still), first.log()  # killed before the drain began
    smalls = wait_until(
        lambda: (found := group_nodes(kube, "small")) and all(is_ready(n) for n in found) and found,
        timeout=60,
        what="the small node Ready",
    )
    assert len(smalls) == 1, first.log()

    second = Kubetide(kube, tmp_path, *args, *FAST_FLAGS, name="second").start()
    seen = {smalls[0].metadata.name}
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        seen |= {n.metadata.name for n in group_nodes(kube, "small")}
        if not group_nodes(kube, "large") and running(kube, "web"):
            break
        time.sleep(0.2)
    second.wait_loops(3)  # a few more loops: the small node stays, no other comes
    seen |= {n.metadata.name for n in group_nodes(kube, "small")}
    log = second.log()
    assert not group_nodes(kube, "large"), log
    assert seen == {n.metadata.name for n in group_nodes(kube, "small")} == {smalls[0].metadata.name}, log
    (moved,) = running(kube, "web")
    assert moved.spec.node_name == smalls[0].metadata.name
    events = kube.core.list_event_for_all_namespaces(
        field_selector=f"involvedObject.name={large.metadata.name}"
    )
    messages = [e.message for e in events.items if e.reason == "ScaleDownReplacing"]
    assert any(m.startswith("taken back after a restart") for m in messages), (messages, log)
    assert second.terminate() == 0
    assert "Traceback" not in second.log()
