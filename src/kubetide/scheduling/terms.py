"""Matching rules shared by the filters: node selectors, tolerations, pod affinity terms.

These are the per-object predicates. Everything here is pure, so the checker can cache results per
equivalence class and the tests can use them as a readable statement of the semantics.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from kubetide.model.node import UNSCHEDULABLE_TAINT, Node, Taint, Toleration
from kubetide.model.pod import NodeSelectorTerm, Pod, PodAffinityTerm, TopologySpreadConstraint
from kubetide.model.selectors import LabelSelector, Requirement

FILTER_EFFECTS = ("NoSchedule", "NoExecute")
_UNSCHEDULABLE = Taint(UNSCHEDULABLE_TAINT, "", "NoSchedule")

NamespaceLabels = Callable[[str], Mapping[str, str]]


# -- node-static checks ------------------------------------------------------------------------


def tolerated(tolerations: Iterable[Toleration], taint: Taint) -> bool:
    return any(t.tolerates(taint) for t in tolerations)


def first_untolerated_taint(
    tolerations: tuple[Toleration, ...], taints: Iterable[Taint], effects: tuple[str, ...] = FILTER_EFFECTS
) -> Taint | None:
    for taint in taints:
        if taint.effect in effects and not tolerated(tolerations, taint):
            return taint
    return None


def unschedulable_blocks(pod: Pod, node: Node) -> bool:
    """NodeUnschedulable: cordoned nodes take only pods tolerating the unschedulable taint."""
    return node.unschedulable and not tolerated(pod.tolerations, _UNSCHEDULABLE)


def term_matches_node(term: NodeSelectorTerm, node: Node) -> bool:
    # An empty term selects no node, unlike an empty label selector.
    if not term.match_expressions and not term.match_fields:
        return False
    labels = node.labels
    if not all(r.matches(labels) for r in term.match_expressions):
        return False
    fields = {"metadata.name": node.name}
    return all(r.matches(fields) for r in term.match_fields)


def node_affinity_matches(pod: Pod, node: Node) -> bool:
    """NodeAffinity filter: spec.nodeSelector AND (any required term)."""
    labels = node.labels
    for key, value in pod.node_selector.items():
        if labels.get(key) != value:
            return False
    required = pod.affinity.node_required
    if required is None:
        return True
    return any(term_matches_node(t, node) for t in required)


def preferred_affinity_weight(pod: Pod, node: Node) -> int:
    return sum(w.weight for w in pod.affinity.node_preferred if term_matches_node(w.term, node))


def intolerable_prefer_no_schedule(pod: Pod, node: Node) -> int:
    return sum(1 for t in node.taints if t.effect == "PreferNoSchedule" and not tolerated(pod.tolerations, t))


# -- pod matchers ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PodMatcher:
    """Which pods an affinity term or a spread constraint counts.

    A pod counts when its namespace is listed or its namespace's labels match the namespace
    selector, and its labels match the selector. A None selector matches no pod (a null
    labelSelector in a term selects nothing), an empty one every pod.
    """

    namespaces: frozenset[str]
    namespace_selector: LabelSelector | None
    selector: LabelSelector | None

    def matches(self, namespace: str, labels: Mapping[str, str], ns_labels: NamespaceLabels) -> bool:
        if self.selector is None:
            return False
        if namespace not in self.namespaces and (
            self.namespace_selector is None or not self.namespace_selector.matches(ns_labels(namespace))
        ):
            return False
        return self.selector.matches(labels)


def _with_label_keys(
    selector: LabelSelector | None, labels: Mapping[str, str], match: Iterable[str], mismatch: Iterable[str]
) -> LabelSelector | None:
    """matchLabelKeys / mismatchLabelKeys: AND `key in (v)` / `key notin (v)` for the owner's labels.

    Keys the owner does not carry are ignored, as the API server does. Requirements are appended
    rather than merged into matchLabels so a conflicting value selects nothing instead of
    overriding the written selector.
    """
    if selector is None:
        return None
    extra = [Requirement(k, "In", (labels[k],)) for k in match if k in labels]
    extra += [Requirement(k, "NotIn", (labels[k],)) for k in mismatch if k in labels]
    if not extra:
        return selector
    return LabelSelector(selector.match_labels, (*selector.match_expressions, *extra))


def affinity_matcher(term: PodAffinityTerm, owner: Pod) -> PodMatcher:
    """A pod affinity term as seen from the pod that carries it (namespaces default to its own)."""
    namespaces = frozenset(term.namespaces)
    if not namespaces and term.namespace_selector is None:
        namespaces = frozenset((owner.namespace,))
    selector = _with_label_keys(
        term.label_selector, owner.labels, term.match_label_keys, term.mismatch_label_keys
    )
    return PodMatcher(namespaces, term.namespace_selector, selector)


def spread_matcher(constraint: TopologySpreadConstraint, owner: Pod) -> PodMatcher:
    """Spread constraints count pods in the owner's namespace only."""
    selector = _with_label_keys(constraint.label_selector, owner.labels, constraint.match_label_keys, ())
    return PodMatcher(frozenset((owner.namespace,)), None, selector)
