"""IntOrString counts (3 or "30%") as numbers of pods, shared by PodDisruptionBudgets, Deployment
rollouts and surge-before-evict (upstream's GetScaledValueFromIntOrPercent and ResolveFenceposts)."""

from __future__ import annotations


def scaled_value(value: int | str, total: int, round_up: bool) -> int:
    """`value` as a number of pods out of `total`; a percentage rounds up or down as asked."""
    if isinstance(value, int):
        return value
    percent = int(value.rstrip("%"))
    if round_up:
        return -(-percent * total // 100)
    return percent * total // 100


def resolve_fenceposts(max_surge: int | str, max_unavailable: int | str, replicas: int) -> tuple[int, int]:
    """(maxSurge, maxUnavailable) in pods for a Deployment of `replicas`: surge rounds up,
    unavailable down, and both at 0 makes unavailable 1, as the Deployment controller does."""
    surge = scaled_value(max_surge, replicas, round_up=True)
    unavailable = scaled_value(max_unavailable, replicas, round_up=False)
    if surge == 0 and unavailable == 0:
        unavailable = 1
    return surge, unavailable
