"""What one action does to one pod, computed without doing it.

The design gives every metric a throttle, a restore and an evict function that act on a pod and
report what they released. Here they only *plan*: each returns an `Effect` (the new quota and what
the node gets back), and the executor carries it out through the QosActuator port. That keeps the
functions pure, so Preview, `kubetide qos` and the simulator share them with the real agent.

CPU throttling works on the pod's CFS quota, in millicores throughout. Crane clamps the quota
against `limit / 1000 * ratio / 100` (cores) but assigns `limit * ratio / 1000` (a different unit),
so its minCPURatio floor is wrong by a factor of ten; both sides here are millicores.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from kubetide.model.quantity import CPU
from kubetide.qos.state import PodState


@dataclass(frozen=True, slots=True)
class ActionContext:
    """The AvoidanceAction's parameters and the node facts an action needs."""

    min_cpu_ratio: int = 0  # percent of the cpu limit a throttled pod always keeps
    step_cpu_ratio: int = 10  # percent of the quota taken (throttle) or given back (restore) per step
    grace_seconds: int | None = None  # eviction grace period; None = the pod's own
    node_cpu: int = 0  # node cpu capacity (millicores): the ceiling for pods without a cpu limit


@dataclass(frozen=True, slots=True)
class Effect:
    """The planned result of acting on one pod.

    `released` is per resource (cpu millicores, memory bytes): what an eviction or a throttle gives
    back to the node, or, for a restore, how much more the pod may now use (the headroom it takes).
    A resource is absent when the pod's usage is unknown.
    """

    quota: int | None = None  # throttle/restore: the pod's new quota; None = no quota (restore only)
    released: Mapping[str, int] = field(default_factory=dict)
    detail: str = ""


# The smallest CFS quota the kernel takes is 1 ms per period: 10m at the default 100 ms period.
# Steps that close a large gap within one round would otherwise plan a request-less pod down to
# 0m, a quota no cgroup holds (the agent's writer raises it to the minimum, releasing less).
MIN_QUOTA_MILLICORES = 10


def cpu_floor(state: PodState, ctx: ActionContext) -> int:
    """The lowest quota a throttle may set: the cpu request, minCPURatio% of the cpu limit, and
    never under the kernel's minimum quota."""
    floor = max(state.pod.requests.get(CPU, 0), MIN_QUOTA_MILLICORES)
    limit = state.pod.limits.get(CPU)
    if limit:
        floor = max(floor, -(-limit * ctx.min_cpu_ratio // 100))  # ceil: never below the ratio
    return floor


def throttle_cpu(state: PodState, ctx: ActionContext) -> Effect | None:
    """One CFS step down: quota = (current quota, or usage if none) * (1 - step%), floored.

    None when the step would not lower the quota (already at the floor, or nothing to start from).
    """
    usage = state.used(CPU)
    base = state.cpu_quota
    if base is None:
        base = usage if usage is not None else state.pod.limits.get(CPU)
    if not base:
        return None
    quota = max(base * (100 - ctx.step_cpu_ratio) // 100, cpu_floor(state, ctx))
    if quota >= base:
        return None
    released = {CPU: max(0, usage - quota)} if usage is not None else {}
    return Effect(quota=quota, released=released, detail=f"quota {_describe(state.cpu_quota)} -> {quota}m")


def restore_cpu(state: PodState, ctx: ActionContext) -> Effect | None:
    """One CFS step up for a throttled pod: quota * (1 + step%), up to the pod's cpu limit (the
    node's cpu when it has none). Reaching the ceiling removes the quota altogether."""
    quota = state.cpu_quota
    if quota is None:
        return None
    ceiling = state.pod.limits.get(CPU) or ctx.node_cpu
    raised = -(-quota * (100 + ctx.step_cpu_ratio) // 100)
    new: int | None = raised
    if ctx.step_cpu_ratio <= 0 or not ceiling or raised >= ceiling:
        new, raised = None, max(ceiling, quota)
    usage = state.used(CPU)
    base = usage if usage is not None else quota
    return Effect(
        quota=new, released={CPU: max(0, raised - base)}, detail=f"quota {quota}m -> {_describe(new)}"
    )


def evict_pod(state: PodState, ctx: ActionContext) -> Effect:
    """Evicting releases everything the pod uses now."""
    return Effect(released=dict(state.usage) if state.usage is not None else {}, detail="evict")


def _describe(quota: int | None) -> str:
    return "none" if quota is None else f"{quota}m"
