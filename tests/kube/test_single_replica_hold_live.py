"""A node held by a single replica's budget, without --surge-before-evict and without
--annotate-scale-down-blockers, on a real control plane: the loop says why it stays and what
would drain it (--surge-before-evict=true or the Deployment annotation) in an Event on the node
and in the status ConfigMap's `unblock`, and says the Event again only after ten minutes. The
loop runs in-process on the real adapters (view, actions): tests/kube/in_process_loop.py."""

from __future__ import annotations

import time

import kubernetes
import pytest
import yaml
from controlplane import KubeTestContext, wait_until
from in_process_loop import GROUP_LABEL, create_spare_node, in_process_autoscaler
from kubetide_process import create_deployment, wait_running

from kubetide.autoscaler.loop import SINGLE_REPLICA_EVENT_INTERVAL
from kubetide.autoscaler.options import AutoscalerOptions
from kubetide.clock import ManualClock

pytestmark = pytest.mark.controlplane

REASON = "ScaleDownBlockedBySingleReplica"


def test_a_single_replica_hold_is_said_in_an_event_and_the_status(kube: KubeTestContext):
    group = f"one-{kube.namespace[-6:]}"
    held, spare = f"{group}-a", f"{group}-b"
    kube.create_fake_node(held, labels={GROUP_LABEL: group})
    kube.wait_node_ready(held)
    create_deployment(kube, "solo", 1, "100m", node_selector={GROUP_LABEL: group})
    wait_running(kube, "solo", 1)
    # The spare node (never a candidate itself) is where the replica could go.
    create_spare_node(kube, spare, group)
    policy = kubernetes.client.PolicyV1Api(kube.api_client)
    policy.create_namespaced_pod_disruption_budget(
        kube.namespace,
        {
            "metadata": {"name": "solo"},
            "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "solo"}}},
        },
    )
    wait_until(
        lambda: (
            policy.read_namespaced_pod_disruption_budget("solo", kube.namespace).status.current_healthy == 1
        ),
        timeout=30,
        what="the budget observed its pod",
    )

    options = AutoscalerOptions().with_values(namespace=kube.namespace, unremovable_node_recheck_timeout=0.0)
    assert not options.surge_before_evict and not options.annotate_scale_down_blockers
    clock = ManualClock(time.time())  # the Event's interval is stepped, not waited for
    with in_process_autoscaler(kube, group, options, clock, namespace=kube.namespace) as (autoscaler, _):

        def events() -> list:
            return kube.core.list_namespaced_event(
                "default", field_selector=f"involvedObject.name={held},reason={REASON}"
            ).items

        first = autoscaler.run_once()
        assert held in first.single_replica_holds, first.single_replica_holds
        wait_until(lambda: len(events()) == 1, timeout=30, what="the Event on the node")
        message = events()[0].message
        pod = next(p.metadata.name for p in kube.core.list_namespaced_pod(kube.namespace).items)
        assert f"PodDisruptionBudget {kube.namespace}/solo allows no disruption" in message
        assert f"single-replica pod {kube.namespace}/{pod}" in message
        assert "--surge-before-evict=true" in message
        assert 'kubetide.io/surge-before-evict: "true"' in message

        status = yaml.safe_load(
            kube.core.read_namespaced_config_map("cluster-autoscaler-status", kube.namespace).data["status"]
        )
        rows = [n for n in status["clusterWide"]["scaleDown"]["unremovable"] if n["node"] == held]
        assert len(rows) == 1, status["clusterWide"]["scaleDown"]
        assert "--surge-before-evict=true" in rows[0]["unblock"], rows[0]

        # Said again only after the interval: a loop before it adds no Event, one after it does.
        clock.advance(SINGLE_REPLICA_EVENT_INTERVAL / 2)
        assert held not in autoscaler.run_once().single_replica_holds
        clock.advance(SINGLE_REPLICA_EVENT_INTERVAL / 2)
        assert held in autoscaler.run_once().single_replica_holds
        wait_until(
            lambda: sum(e.count or 1 for e in events()) == 2, timeout=30, what="the Event said a second time"
        )
