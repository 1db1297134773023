"""StatefulSet controller: stable names `<name>-<ordinal>`, created and removed in ordinal order.

With podManagementPolicy OrderedReady (the default) ordinal i is created only once 0..i-1 are
Running and Ready, and scale-down deletes the highest ordinal first, one at a time, waiting for it
to be gone. With Parallel, all missing ordinals are created and all excess deleted at once. A
replacement for an evicted pod reuses its name, so it is created only after the old pod object is
gone (at the end of its grace period).
"""

from __future__ import annotations

from kubetide.model import Pod, Workload
from kubetide.sim.runtime.controller import Controller
from kubetide.sim.runtime.engine import Engine
from kubetide.sim.runtime.kubelet import Kubelets
from kubetide.sim.runtime.world import World
from kubetide.sim.spec.scenario import ClusterSpec

POD_NAME_LABEL = "statefulset.kubernetes.io/pod-name"
POD_INDEX_LABEL = "apps.kubernetes.io/pod-index"


class StatefulSets(Controller):
    kind = "StatefulSet"

    def __init__(self, engine: Engine, world: World, cluster: ClusterSpec, kubelets: Kubelets):
        super().__init__(engine, world, cluster, kubelets)

    def sync(self, sts: Workload) -> None:
        replicas = sts.replicas or 0
        by_ordinal: dict[int, Pod] = {}
        for pod in self.world.pods_of(sts.meta.uid):
            ordinal = _ordinal(pod.name, sts.name)
            if ordinal is not None:
                by_ordinal[ordinal] = pod
        ordered = sts.pod_management_policy != "Parallel"

        # Scale up / replace, lowest ordinal first.
        for ordinal in range(replicas):
            member = by_ordinal.get(ordinal)
            if member is None:
                name = f"{sts.name}-{ordinal}"
                self.create_pod(sts, name, extra_labels={POD_NAME_LABEL: name, POD_INDEX_LABEL: str(ordinal)})
                if ordered:
                    return
                continue
            if ordered and not (member.phase == "Running" and member.ready and not member.is_terminating):
                return  # wait for this ordinal before touching the next

        # Scale down, highest ordinal first.
        excess = sorted((o for o in by_ordinal if o >= replicas), reverse=True)
        for ordinal in excess:
            pod = by_ordinal[ordinal]
            if pod.is_terminating:
                if ordered:
                    return
                continue
            self.kubelets.delete(pod)
            if ordered:
                return


def _ordinal(pod_name: str, sts_name: str) -> int | None:
    prefix = sts_name + "-"
    if not pod_name.startswith(prefix):
        return None
    rest = pod_name[len(prefix) :]
    return int(rest) if rest.isdigit() else None
