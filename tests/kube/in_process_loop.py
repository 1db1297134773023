"""Helpers for live tests that run the loop in-process on the real adapters (view, actions) of the
test's control plane, with node groups read from the nodes' group label, read-only, as
`kubetide plan` finds them."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from controlplane import KubeTestContext, wait_until

from kubetide.autoscaler.loop import Autoscaler
from kubetide.autoscaler.options import AutoscalerOptions
from kubetide.clock import Clock
from kubetide.cloud.static import StaticCloud
from kubetide.kube.actions import KubeClusterActions
from kubetide.kube.client import connect
from kubetide.kube.view import KubeClusterView

GROUP_LABEL = "kubetide.io/node-group"
SCALE_DOWN_DISABLED = "cluster-autoscaler.kubernetes.io/scale-down-disabled"


def create_spare_node(kube: KubeTestContext, name: str, group: str) -> None:
    """A node of `group` where a blocked node's pods can go, never a scale-down candidate itself
    (scale-down-disabled); returns once it is Ready and schedulable."""
    kube.create_fake_node(name, labels={GROUP_LABEL: group})
    kube.core.patch_node(name, {"metadata": {"annotations": {SCALE_DOWN_DISABLED: "true"}}})
    kube.wait_node_ready(name)
    # The node lifecycle controller takes the not-ready taint off a little after Ready: until
    # then no pod may move there.
    wait_until(
        lambda: (
            not any(
                t.key.startswith("node.kubernetes.io/") for t in kube.core.read_node(name).spec.taints or ()
            )
        ),
        timeout=60,
        what="the spare node's not-ready taint removed",
    )


@contextmanager
def in_process_autoscaler(
    kube: KubeTestContext, group: str, options: AutoscalerOptions, clock: Clock, **actions_options: Any
) -> Iterator[tuple[Autoscaler, KubeClusterView]]:
    """An Autoscaler on a synced view of the control plane and its actions (`actions_options` to
    KubeClusterActions), managing the nodes of `group`; the view and client are closed after."""
    client = connect(str(kube.control_plane.kubeconfig_path), qps=100, burst=200)
    view = KubeClusterView(client)
    view.start()
    try:
        assert view.wait_for_sync(30) == []
        ours = [n for n in view.snapshot().nodes() if n.labels.get(GROUP_LABEL) == group]
        actions = KubeClusterActions(client, clock, **actions_options)
        cloud = StaticCloud.from_nodes(ours)
        yield Autoscaler(options, clock, view, actions, cloud, timer=time.perf_counter), view
    finally:
        view.stop()
        client.close()
