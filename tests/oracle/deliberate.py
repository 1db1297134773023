"""The deliberate differences from the Cluster Autoscaler, one named predicate each, for the CA
versions it applies to (1.30.7, 1.36.1: the oracles of ca_oracle.py).

A differential test may accept a difference only through one of these; each says why kubetide
differs on purpose, and docs/differences.md lists the same classes for users. A difference in no
class fails its test: it is a bug in kubetide (or a new class to argue for in the docs first).
Every predicate takes the CA version compared with first, and accepts nothing for a version it
does not name: where 1.30 and 1.36 differ kubetide follows 1.36, so a class of 1.30 alone (its
kube-system rule, its reading of "on-completion") must not excuse a difference from 1.36.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from ca_oracle import CA_1_30, CA_1_36, SAFE_TO_EVICT

from kubetide.autoscaler.options import AutoscalerOptions

Doc = dict[str, Any]
ON_COMPLETION = "on-completion"


def applies_to(*versions: str) -> Callable[[Callable[..., bool]], Callable[..., bool]]:
    """The predicate, called as predicate(version, ...): False for any other CA version."""

    def wrap(predicate: Callable[..., bool]) -> Callable[..., bool]:
        @functools.wraps(predicate)
        def accepts(version: str, *args: Any) -> bool:
            return version in versions and predicate(*args)

        return accepts

    return wrap


def pods_on(items: list[Doc], node: str) -> list[Doc]:
    return [i for i in items if i["kind"] == "Pod" and i["spec"].get("nodeName") == node]


@applies_to(CA_1_30, CA_1_36)
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


@applies_to(CA_1_30, CA_1_36)
def risky_node(ours: Doc, node: str, ca: Doc) -> bool:
    """kubetide removes, CA refuses with NotEnoughPdb a node holding more pods of one budget than
    the budget allows at once. CA removes such a node too (IsRisky) while the budget has at least 1
    disruption left after its earlier candidates' charges, and refuses it only when its own pass
    has left fewer; kubetide's charges per budget wave can leave it one (docs/differences.md)."""
    return node in ours["risky"] and ca.get("pod_reason") == "NotEnoughPdb"


@applies_to(CA_1_30)
def kube_system_1_30(ca: Doc) -> bool:
    """kubetide removes, CA 1.30 refuses with UnmovableKubeSystemPod: CA 1.30 blocks on every
    kube-system pod without a PDB whatever its age; CA 1.33 on (1.36 checked), and kubetide, only
    while the pod is younger than blocking-system-pod-distruption-timeout (1h). Setting that flag
    above the pods' age restores 1.30's rule (tested)."""
    return ca.get("reason") == "BlockedByPod" and ca.get("pod_reason") == "UnmovableKubeSystemPod"


@applies_to(CA_1_30)
def on_completion_1_30(items: list[Doc], node: str, ours: Doc, as_1_30: Doc) -> bool:
    """kubetide and CA 1.30 differ on a node whose verdict changes when safe-to-evict
    "on-completion" is read as CA 1.30 reads it, and the cluster has such a pod. CA 1.30 does not
    know the value: it moves such a pod like any other (it needs room elsewhere, counts against
    its budget, and blocks as a bare, kube-system or local-storage pod would). CA 1.36, and
    kubetide, leave it to finish: it needs no room, and its node is unneeded but not deleted
    until it completes (BlockedByOnCompletionPod). `as_1_30` is kubetide's plan with the
    annotation dropped and CA 1.30's kube-system rule, whose verdicts CA 1.30 agrees with."""
    held = any(
        p["kind"] == "Pod"
        and p["metadata"]["annotations"].get(SAFE_TO_EVICT) == ON_COMPLETION
        and p["status"]["phase"] not in ("Succeeded", "Failed")
        for p in items
    )
    return held and verdict(ours, node) != verdict(as_1_30, node)


@applies_to(CA_1_30)
def old_kube_system_pods_1_30(items: list[Doc], node: str, ours: Doc, as_1_30: Doc) -> bool:
    """What follows from `kube_system_1_30` on other nodes: the cluster has kube-system pods, and
    the node's verdict changes under CA 1.30's rules (the pods kubetide moves off a node 1.30
    keeps take room elsewhere; the budget such a drain uses is not left for another node)."""
    system = any(p["kind"] == "Pod" and p["metadata"]["namespace"] == "kube-system" for p in items)
    return system and verdict(ours, node) != verdict(as_1_30, node)


@applies_to(CA_1_30)
def at_threshold_1_30(ours_node: Doc, ca: Doc) -> bool:
    """kubetide finds the node underutilized, CA 1.30 NotUnderutilized: its utilization is exactly
    scale-down-utilization-threshold. CA 1.30 keeps such a node (`>=`), CA 1.35 on (1.36 checked)
    and kubetide let it go (`>`)."""
    threshold = AutoscalerOptions().scale_down_utilization_threshold
    return ca.get("reason") == "NotUnderutilized" and ours_node["utilization"] == threshold


def verdict(plan: Doc, node: str) -> tuple:
    """A node's scale-down verdict in a kubetide plan: what the comparisons tell apart."""
    return (
        node in plan["candidate_set"],
        node in plan["waiting_for_budget"],
        plan["nodes"][node]["reason"],
        plan["nodes"][node]["blocking_pod"],
    )


@applies_to(CA_1_30, CA_1_36)
def another_blocker_named(ours_node: Doc, ca: Doc) -> bool:
    """Both refuse the node for a blocking pod, and CA names a pod kubetide also reports as
    blocking, with the same reason. kubetide reports them all, the first in the node's pod order
    as CA walks it (test_ca_oracle_blocking_pods.py holds it to CA's first where no simulated move
    came before); after other nodes' simulated drains CA may meet a node's pods in another order
    (pods moved there and back), or a kube-system pod before a pinned one under 1.30's rule."""
    named = {(b["pod"], b["reason"]) for b in ours_node["blocking_pods"]}
    return (ca.get("blocking_pod"), ca.get("pod_reason")) in named


@applies_to(CA_1_30, CA_1_36)
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


@applies_to(CA_1_30, CA_1_36)
def waiting_for_budget(ours: Doc, node: str) -> bool:
    """CA removes the node, kubetide waits for budget: the same budget order, seen from the other
    side (kubetide's earlier candidates used the budget; CA met this node first). kubetide keeps
    the node's unneeded time and drains it as soon as the budget is back."""
    return node in ours["waiting_for_budget"]


@applies_to(CA_1_36)
def taint_named(ours: tuple | None, theirs: tuple | None) -> bool:
    """The same verdict from the same plugin, TaintToleration, in other words: kubetide names the
    taint, "node(s) had untolerated taint {key: value}", as CA 1.30's scheduler did; CA 1.36's
    scheduler no longer names it ("node(s) had untolerated taint(s)"). Which taint keeps a pod off
    a node is what a user asking "why is my pod pending?" needs, so kubetide keeps saying it."""
    return (
        ours is not None
        and theirs is not None
        and ours[0] == theirs[0] == "TaintToleration"
        and theirs[1] == ("node(s) had untolerated taint(s)",)
        and len(ours[1]) == 1
        and ours[1][0].startswith("node(s) had untolerated taint {")
    )
