"""What one autoscaler loop reads, as one value: the cluster as the view serves it, and what the
driver knows. `decide` (decision.py) takes it, and passes it on to scale-up (`ScaleUp.plan`) and
scale-down (`Planner.update`), which read the parts they need."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field

from kubetide.autoscaler.ports import UsageSample
from kubetide.model import ConfigMap, Pod, PodDisruptionBudget, Workload
from kubetide.snapshot import ClusterSnapshot

# The priority expander's configuration: its ConfigMap, its `priorities` text, or a parsed mapping.
PrioritiesSource = ConfigMap | str | Mapping[object, object]


@dataclass(frozen=True, slots=True)
class LoopInputs:
    """`workloads`: Deployments, ReplicaSets, StatefulSets, DaemonSets and Jobs with their status,
    or None when unknown. `controllers_known`: False when pods name controller kinds the input
    lacks (a dump without the ReplicaSets its pods name): scale-down's controller checks then
    stay silent, while scale-up still uses the DaemonSets there are. `being_deleted`: nodes whose
    deletion is under way (the actuator's, tracked by this process); `deletions_in_progress`:
    (empty, drained) among them, for the parallelism budgets; None (plan's, with no actuator)
    counts the nodes the plan finds being deleted (tainted ToBeDeleted by a previous run, which
    a restarted loop would resume). `usage`: this loop's usage sample, if there is a source.
    """

    now: float
    snapshot: ClusterSnapshot
    pending: Sequence[Pod] = ()
    pdbs: Sequence[PodDisruptionBudget] = ()
    workloads: Sequence[Workload] | None = None
    controllers_known: bool = True
    namespaces: Mapping[str, Mapping[str, str]] | None = None
    priorities: PrioritiesSource | None = None
    usage: UsageSample | None = None
    being_deleted: Collection[str] = ()
    deletions_in_progress: tuple[int, int] | None = None
    # (kind, namespace, name) -> the first such workload, indexed on first use (`workload`): the
    # loop asks once per blocked node and per unblock check, thousands of times on a large cluster.
    # Empty in a copy made with dataclasses.replace, which may hold other workloads.
    _workload_index: dict[tuple[str, str, str], Workload] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    @property
    def controllers(self) -> Sequence[Workload] | None:
        """The workloads scale-down's drain rules consult, or None when unknown."""
        return self.workloads if self.controllers_known else None

    def workload(self, kind: str, namespace: str, name: str) -> Workload | None:
        """The first workload of this kind, namespace and name, or None (also when the workloads
        are unknown)."""
        if self.workloads is None:
            return None
        index = self._workload_index
        if not index:
            for w in self.workloads:
                index.setdefault((w.kind, w.namespace, w.name), w)
        return index.get((kind, namespace, name))
