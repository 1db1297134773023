"""The deliberate differences from the Cluster Autoscaler 1.30.7, one named predicate each.

A differential test may accept a difference only through one of these; each says why kubetide
differs on purpose, and docs/differences.md lists the same classes for users. A difference in no
class fails its test: it is a bug in kubetide (or a new class to argue for in the docs first).
"""

from __future__ import annotations

from typing import Any

from ca_oracle import SAFE_TO_EVICT

Doc = dict[str, Any]


def pods_on(items: list[Doc], node: str) -> list[Doc]:
    return [i for i in items if i["kind"] == "Pod" and i["spec"].get("nodeName") == node]


def safe_to_evict_at_zero(items: list[Doc], node: str, why: str) -> bool:
    """CA removes, kubetide keeps: the node holds a safe-to-evict "true" pod of a budget with no
    disruption left for it (at the start, or after earlier candidates), and that budget is what
    kubetide refuses or waits for. CA never charges safe-to-evict pods to PDBs and then meets 429s
    on eviction until max-pod-eviction-time; kubetide does not plan a drain the API server will
    refuse (the drains issue, #24)."""
    budgets = {
        (i["metadata"]["namespace"], i["metadata"]["name"])
        for i in items
        if i["kind"] == "PodDisruptionBudget"
    }
    return any(
        p["metadata"]["annotations"].get(SAFE_TO_EVICT) == "true"
        and (p["metadata"]["namespace"], p["metadata"]["labels"]["app"]) in budgets
        and f"PodDisruptionBudget {p['metadata']['namespace']}/{p['metadata']['labels']['app']} " in why
        for p in pods_on(items, node)
    )


def risky_node(ours: Doc, node: str, ca: Doc) -> bool:
    """kubetide removes, CA refuses with NotEnoughPdb: the node holds more pods of one budget than
    the budget allows at once. CA refuses the whole node; kubetide drains it pod by pod, each
    eviction waiting for the replacement to be healthy (the drains issue's risky-node rule)."""
    return node in ours["risky"] and ca.get("pod_reason") == "NotEnoughPdb"


def kube_system_1_30(ca: Doc) -> bool:
    """kubetide removes, CA 1.30 refuses with UnmovableKubeSystemPod: CA 1.30 blocks on every
    kube-system pod without a PDB whatever its age; newer CA, and kubetide, only while the pod is
    younger than blocking-system-pod-distruption-timeout (1h). Setting that flag above the pods'
    age restores 1.30's rule (tested)."""
    return ca.get("reason") == "BlockedByPod" and ca.get("pod_reason") == "UnmovableKubeSystemPod"


def another_blocker_named(ours_node: Doc, ca: Doc) -> bool:
    """Both refuse the node for a blocking pod, and CA names a pod kubetide also reports as
    blocking, with the same reason. kubetide reports them all, the first in the node's pod order
    as CA walks it (test_ca_oracle_blocking_pods.py holds it to CA's first where no simulated move
    came before); after other nodes' simulated drains CA may meet a node's pods in another order
    (pods moved there and back), or a kube-system pod before a pinned one under 1.30's rule."""
    named = {(b["pod"], b["reason"]) for b in ours_node["blocking_pods"]}
    return (ca.get("blocking_pod"), ca.get("pod_reason")) in named


def budget_used_in_this_pass(items: list[Doc], ca: Doc) -> bool:
    """CA refuses the node for a pod its budget refuses, but that budget allowed a disruption when
    the pass began: another node's simulated drain used it first. Which of two nodes sharing a
    budget a pass meets first differs (kubetide checks blocked nodes as it meets them, CA meets
    candidates in Go map order), so one removes the node the other refuses, or names another
    blocker; and where the node's pods fit nowhere anyway kubetide says NoPlaceToMovePods, the
    refusal that does not go away by itself, rather than a budget that comes back."""
    if ca.get("pod_reason") != "NotEnoughPdb":
        return False
    namespace, _, name = ca["blocking_pod"].partition("/")
    pod = next(
        p
        for p in items
        if p["kind"] == "Pod" and (p["metadata"]["namespace"], p["metadata"]["name"]) == (namespace, name)
    )
    return any(
        b["kind"] == "PodDisruptionBudget"
        and b["metadata"]["namespace"] == namespace
        and b["spec"]["selector"]["matchLabels"].items() <= pod["metadata"]["labels"].items()
        and b["status"]["disruptionsAllowed"] >= 1
        for b in items
    )


def waiting_for_budget(ours: Doc, node: str) -> bool:
    """CA removes the node, kubetide waits for budget: the same budget order, seen from the other
    side (kubetide's earlier candidates used the budget; CA met this node first). kubetide keeps
    the node's unneeded time and drains it as soon as the budget is back."""
    return node in ours["waiting_for_budget"]
