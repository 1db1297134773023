"""Kubernetes objects as immutable values, parsed from real manifests.

Quantities are exact integers (millicores, bytes). Objects are frozen dataclasses: code that needs
a changed object makes a new one with `dataclasses.replace`, so snapshots can share them freely.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kubetide.lazy import lazy_exports

if TYPE_CHECKING:
    from kubetide.model.loader import Manifests, load_documents, load_file, load_files, register_kind
    from kubetide.model.meta import ObjectMeta, OwnerReference
    from kubetide.model.node import Node, Taint, Toleration
    from kubetide.model.pod import Pod
    from kubetide.model.policy import ConfigMap, Namespace, PodDisruptionBudget, PriorityClass
    from kubetide.model.selectors import LabelSelector, Requirement
    from kubetide.model.workloads import PodTemplate, Workload
else:
    # Each name's module is imported when the name is first read (kubetide.lazy says why).
    __getattr__ = lazy_exports(
        __name__,
        {
            "kubetide.model.loader": (
                "Manifests",
                "load_documents",
                "load_file",
                "load_files",
                "register_kind",
            ),
            "kubetide.model.meta": ("ObjectMeta", "OwnerReference"),
            "kubetide.model.node": ("Node", "Taint", "Toleration"),
            "kubetide.model.pod": ("Pod",),
            "kubetide.model.policy": ("ConfigMap", "Namespace", "PodDisruptionBudget", "PriorityClass"),
            "kubetide.model.selectors": ("LabelSelector", "Requirement"),
            "kubetide.model.workloads": ("PodTemplate", "Workload"),
        },
    )

__all__ = [
    "ConfigMap",
    "LabelSelector",
    "Manifests",
    "Namespace",
    "Node",
    "ObjectMeta",
    "OwnerReference",
    "Pod",
    "PodDisruptionBudget",
    "PodTemplate",
    "PriorityClass",
    "Requirement",
    "Taint",
    "Toleration",
    "Workload",
    "load_documents",
    "load_file",
    "load_files",
    "register_kind",
]
