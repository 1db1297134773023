"""Node group bounds as the Cluster Autoscaler observed them: its status ConfigMap in a dump.

CA writes kube-system/cluster-autoscaler-status (key `status`, YAML since CA 1.30), with each node
group's `health.minSize` and `health.maxSize` as its cloud provider reported them. A dump taken
with `kubectl get ... cm -n kube-system` holds it, so `scenario from-cluster` can take a group's
real bounds from it rather than guess.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import yaml

from kubetide.autoscaler.options import STATUS_CONFIG_MAP_NAME

STATUS_NAMESPACE = "kube-system"


def _objects(documents: Iterable[Any]) -> Iterable[Mapping[str, Any]]:
    for doc in documents:
        if not isinstance(doc, Mapping):
            continue
        items = doc.get("items")
        if isinstance(items, list) and str(doc.get("kind", "")).endswith("List"):
            yield from _objects(items)
        else:
            yield doc


def observed_bounds(documents: Iterable[Any]) -> dict[str, tuple[int, int]]:
    """CA's node group name -> (minSize, maxSize), from its status ConfigMap; {} without one (or
    with the pre-1.30 plain-text status, which names bounds only in prose)."""
    for obj in _objects(documents):
        meta = obj.get("metadata") or {}
        if obj.get("kind") != "ConfigMap" or (meta.get("namespace"), meta.get("name")) != (
            STATUS_NAMESPACE,
            STATUS_CONFIG_MAP_NAME,
        ):
            continue
        try:
            status = yaml.safe_load((obj.get("data") or {}).get("status") or "")
        except yaml.YAMLError:
            return {}
        groups = status.get("nodeGroups") if isinstance(status, Mapping) else None
        bounds = {}
        for group in groups if isinstance(groups, list) else []:
            health = group.get("health") if isinstance(group, Mapping) else None
            if isinstance(health, Mapping) and isinstance(health.get("minSize"), int):
                bounds[str(group.get("name"))] = (health["minSize"], int(health.get("maxSize") or 0))
        return bounds
    return {}


def bounds_for(group: str, observed: Mapping[str, tuple[int, int]]) -> tuple[str, tuple[int, int]] | None:
    """(CA's name for it, its bounds) for one of our groups: the same name, or an EKS managed node
    group's Auto Scaling group (eks-<nodegroup>-<id>)."""
    if group in observed:
        return group, observed[group]
    for name, bounds in observed.items():
        if name.startswith(f"eks-{group}-"):
            return name, bounds
    return None
