"""`kubetide run` on a real control plane: a running pod annotated
cluster-autoscaler.kubernetes.io/safe-to-evict: "on-completion" holds its node, never evicted,
until it completes; then the node goes.

KWOK's stages complete a Job's pod the moment it runs (kwok-stages.yaml, pod-complete), so a Job
cannot be held running here: the pod is a bare one (the on-completion rule comes before the bare
pod rule, so it holds its node the same way), and it completes when the test marks it Succeeded
through the status subresource, as the kubelet would when its container exits 0."""

from __future__ import annotations

import time

import pytest
from controlplane import KubeTestContext, wait_until
from kubetide_process import (
    FAST_FLAGS,
    Kubetide,
    create_deployment,
    group_nodes,
    kwok_run_args,
    run_bare_pod,
    running,
    scale,
    tainted_for_deletion,
    wait_running,
    write_groups,
)

from kubetide.autoscaler.scaledown.reasons import NodeReason

pytestmark = pytest.mark.controlplane

ON_COMPLETION = {"cluster-autoscaler.kubernetes.io/safe-to-evict": "on-completion"}
# Loops that found the node unneeded for scale-down-unneeded-time and kept it for the pod (--v=4
# logs why each node stays): without the pod, the first of them would have removed it.
HELD_LOOPS = 3


def test_an_on_completion_pod_holds_its_node_until_it_completes(kube: KubeTestContext, tmp_path):
    groups = write_groups(tmp_path)
    create_deployment(kube, "web", 1, "500m", node_selector={"size": "small"})
    kubetide = Kubetide(
        kube,
        tmp_path,
        *kwok_run_args(kube, groups),
        "--status-config-map-name=oncompletion-status",
        "--leader-elect=false",
        *FAST_FLAGS,
    ).start()
    (web,) = wait_running(kube, "web", 1, timeout=90)
    node = web.spec.node_name
    run_bare_pod(
        kube,
        "finish",
        node,
        "the on-completion pod running",
        annotations=ON_COMPLETION,
        restartPolicy="Never",
        terminationGracePeriodSeconds=0,
    )

    # The load goes: the node holds only the running on-completion pod, and stays.
    scale(kube, "web", 0)
    wait_until(lambda: not running(kube, "web"), timeout=30, what="web scaled to 0")

    def loops_held() -> int:
        held = f"  {node}: "  # the loop's line about the node, after the log prefix
        return sum(
            held in line and NodeReason.BLOCKED_BY_ON_COMPLETION_POD in line
            for line in kubetide.log().splitlines()
        )

    deadline = time.monotonic() + 60
    while loops_held() < HELD_LOOPS:
        assert node in {n.metadata.name for n in group_nodes(kube, "small")}, kubetide.log()
        assert node not in tainted_for_deletion(kube), kubetide.log()
        assert time.monotonic() < deadline, f"no {HELD_LOOPS} loops held {node} for its pod\n{kubetide.log()}"
        time.sleep(0.5)
    assert kube.core.read_namespaced_pod("finish", kube.namespace).metadata.deletion_timestamp is None

    # The work completes (its container exited 0): the node goes.
    kube.core.patch_namespaced_pod_status(
        "finish",
        kube.namespace,
        {
            "status": {
                "phase": "Succeeded",
                "containerStatuses": [
                    {
                        "name": "work",
                        "image": "registry.k8s.io/pause:3.10",
                        "imageID": "",
                        "ready": False,
                        "restartCount": 0,
                        "state": {"terminated": {"exitCode": 0, "reason": "Completed"}},
                    }
                ],
            }
        },
    )
    wait_until(
        lambda: node not in {n.metadata.name for n in group_nodes(kube, "small")},
        timeout=60,
        what=f"node {node} removed once the pod completed",
    )
    evictions = kube.core.list_namespaced_event(
        kube.namespace, field_selector="involvedObject.name=finish,reason=ScaleDown"
    ).items
    assert evictions == []  # never evicted: it completed where it ran
    assert kubetide.terminate() == 0
    log = kubetide.log()
    assert f"Scale-down: node {node} removed (empty)" in log, log
    assert "Traceback" not in log
