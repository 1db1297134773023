"""summary.json's `cluster_health` and `node_groups`: what the simulator counts of the autoscaler.

The autoscaler's cluster-state registry answers questions (is the cluster healthy, is a group
backed off); it keeps no totals for reports. The simulator keeps them here instead, from what it
sees: after every loop, whether the registry found the cluster unhealthy (the loop halts on each
such loop; the unhealthy time is measured between the registry's updates, up to the end), and in
its own cloud, the repairs the loop made (unregistered instances deleted, UC5; a group's target
lowered to its registered nodes, S4/UC4). A group's backed-off time is the registry's backoff's
own accounting (`backed_off_seconds`).

An autoscalerRestart starts a new process with a new registry: the counts start over with it,
as a real process's would.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from kubetide.sim.runtime.cloud import SimCloud


class RegistryView(Protocol):
    """What is read of an autoscaler's cluster-state registry (kubetide's ClusterStateRegistry)."""

    @property
    def last_update(self) -> float | None: ...

    def is_cluster_healthy(self) -> bool: ...

    @property
    def backoff(self) -> Any: ...  # backed_off_seconds(group_id, now) -> float


@dataclass
class _GroupRepairs:
    unregistered_removed: int = 0
    target_size_fixes: int = 0


@dataclass
class _Counts:
    unhealthy_seconds: float = 0.0
    halted_loops: int = 0
    last_update: float | None = None  # the registry update last observed
    unhealthy: bool = False  # what that update found
    groups: dict[str, _GroupRepairs] = field(default_factory=dict)


class AutoscalerCounters:
    """Counts kept beside the autoscaler, for the summary; `observe` after every loop."""

    def __init__(self, cloud: SimCloud):
        self.cloud = cloud
        self.c = _Counts()
        cloud.hooks.unregistered_deleted.append(self._unregistered_deleted)
        cloud.hooks.target_decreased.append(self._target_decreased)

    def restarted(self) -> None:
        """A new autoscaler process: its counts start from zero."""
        self.c = _Counts()

    def observe(self, registry: RegistryView) -> None:
        """After a loop: a registry update that found the cluster unhealthy halted the loop."""
        update = registry.last_update
        if update is None or update == self.c.last_update:
            return  # the loop did not get as far as the registry
        c = self.c
        if c.unhealthy and c.last_update is not None:
            c.unhealthy_seconds += update - c.last_update
        c.unhealthy = not registry.is_cluster_healthy()
        if c.unhealthy:
            c.halted_loops += 1
        c.last_update = update

    def summary(self, registry: RegistryView | None, now: float) -> dict[str, Any]:
        """`cluster_health` and `node_groups`; nothing for an autoscaler without a registry."""
        if registry is None:
            return {}
        c = self.c
        unhealthy = c.unhealthy_seconds
        if c.unhealthy and c.last_update is not None:
            unhealthy += max(0.0, now - c.last_update)
        node_groups = {}
        for group_id in self.cloud.groups:
            repairs = c.groups.get(group_id, _GroupRepairs())
            node_groups[group_id] = {
                "backoff_seconds": registry.backoff.backed_off_seconds(group_id, now),
                "unregistered_removed": repairs.unregistered_removed,
                "target_size_fixes": repairs.target_size_fixes,
            }
        return {
            "cluster_health": {"unhealthy_seconds": unhealthy, "halted_loops": c.halted_loops},
            "node_groups": node_groups,
        }

    # -- the cloud ---------------------------------------------------------------------------
    def _unregistered_deleted(self, group_id: str, count: int) -> None:
        self.c.groups.setdefault(group_id, _GroupRepairs()).unregistered_removed += count

    def _target_decreased(self, group_id: str, decrease: int) -> None:
        self.c.groups.setdefault(group_id, _GroupRepairs()).target_size_fixes += 1
