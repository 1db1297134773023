"""Issue 26 items 1-2 on the real control plane: after a 500-pod burst and its scale-down, every
removed node has both its Events, stamped within one loop of what they report, and the --v=0 log
tells each scale-up, marking and removal. (2,000 pods: benchmarks/bench_events.py.)"""

from __future__ import annotations

import re

import pytest
from burst import MARKED, SCAN_INTERVAL, burst_then_scale_down

pytestmark = pytest.mark.controlplane

# Event timestamps are whole seconds (metav1.Time): one loop, plus the second they round to.
ONE_LOOP = SCAN_INTERVAL + 1.0


def test_a_500_pod_burst_then_its_scale_down_leaves_every_node_its_events_on_time(kube, tmp_path):
    run = burst_then_scale_down(kube, tmp_path, 500)
    assert run.nodes_added >= 5, run.log  # 110 pods a node at most
    assert len(run.gone) == run.nodes_added, run.log
    assert run.missing_events() == {}, run.log
    assert len(run.lateness()) == len(run.gone)
    assert run.late(ONE_LOOP) == {}
    for node, events in run.events.items():
        if node in run.gone:
            # Two Events, not one overwritten: each said once.
            assert events[MARKED].count == 1

    # SIGTERM: what is queued is written (node events first) within the renew deadline (10 s).
    assert run.stop_seconds < 10 + SCAN_INTERVAL + 5, run.stop_seconds
    log = run.log
    assert "Traceback" not in log
    # --v=0: the scale-up with its counts, then each node's marking and removal with its reason.
    scale_ups = re.findall(
        r"Scale-up: setting group burst size to (\d+) instead of (\d+) \(max: 60\) for (\d+) pods", log
    )
    assert scale_ups and int(scale_ups[-1][0]) == run.nodes_added, log
    reasons = {}
    for node in run.gone:
        # The ReplicaSet controller deletes pods at its own pace: a node may be drained of the
        # last few (underutilized) or found empty; the marking and the removal say the same.
        marked = re.search(rf"Scale-down: marked node {node} toBeDeleted \((drain|empty), (\w+)", log)
        assert marked, node
        assert f"Scale-down: node {node} removed ({marked.group(2)})" in log, node
        reasons[node] = marked.group(2)
    assert "nothing to do" not in log  # that is --v=4's every-loop line
    # scaled_down_nodes_total{reason} counts each removed node once, under the reason its log says.
    counted = run.scaled_down()
    assert {reason: counted.get(reason, 0) for reason in ("empty", "underutilized", "unready")} == {
        reason: sum(1 for r in reasons.values() if r == reason)
        for reason in ("empty", "underutilized", "unready")
    }, run.metrics
