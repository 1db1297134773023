"""Why a pod fits on no other node: kube-scheduler's filter reasons, node by node, in its words.

The planner says NoPlaceToMovePods and names the pod; an operator then asks *why*. The scheduling
checker answers per node (`PredicateChecker.fits`, the first failing filter in kube-scheduler's
order) and counts (`reasons`); here those become one clause, e.g.

    2 node(s) didn't match pod anti-affinity rules (term app=web on kubernetes.io/hostname): b, c;
    1 Insufficient cpu: d

The question is asked of the cluster as the plan leaves it: the blocked node, the candidates and
the nodes being deleted are gone (candidates' pods on the destinations the plan gave them), so
the nodes named are the ones the pod really had to choose from. When some node would take the
pod alone, it was the node's other pods, moved first (largest first), that took the room: said so.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping

from kubetide.autoscaler.scaledown.planning.placement import homeless
from kubetide.model import Node, Pod
from kubetide.model.pod import PodAffinityTerm
from kubetide.scheduling import reasons as R
from kubetide.scheduling.checker import NAMESPACE_NAME_LABEL, PredicateChecker
from kubetide.scheduling.terms import affinity_matcher
from kubetide.snapshot import ClusterSnapshot

# Nodes named per reason; the count says how many there are.
NAMED = 3
NamespaceLabels = Callable[[str], Mapping[str, str]]


def refusal(
    snapshot: ClusterSnapshot,
    checker: PredicateChecker,
    pod_key: str,
    *,
    node: str,
    gone: Collection[str] = (),
    destinations: Mapping[str, str] | None = None,
    namespaces: Mapping[str, Mapping[str, str]] | None = None,
) -> str:
    """The clause saying why pod `pod_key` (on `node`, or moved there) fits on no other node, ''
    when the pod is not found. `gone`: nodes that leave with the plan (candidates, being deleted);
    `destinations`: pod key -> node, where the plan moves their pods. `snapshot` (which `checker`
    observes) is left as found."""
    pod = _find(snapshot, pod_key, node)
    if pod is None:
        return ""
    standin = homeless(pod)
    snapshot.fork()
    try:
        _leave(snapshot, [node, *(n for n in gone if n != node)], destinations or {})
        return _words(snapshot, checker, standin, namespaces or {})
    finally:
        snapshot.revert()


def _find(snapshot: ClusterSnapshot, key: str, node: str) -> Pod | None:
    if node in snapshot:
        for pod in snapshot.pods_on(node).values():
            if pod.key == key:
                return pod
    return next((p for p in snapshot.pods() if p.key == key), None)  # moved here from another node


def _leave(snapshot: ClusterSnapshot, nodes: list[str], destinations: Mapping[str, str]) -> None:
    leaving = {n for n in nodes if n in snapshot}
    for name in leaving:
        for pod in list(snapshot.pods_on(name).values()):
            dest = destinations.get(pod.key)
            if dest is not None and dest in snapshot and dest not in leaving:
                snapshot.move_pod(pod.uid, dest)
    for name in leaving:
        snapshot.remove_node(name)


def _words(
    snapshot: ClusterSnapshot,
    checker: PredicateChecker,
    pod: Pod,
    namespaces: Mapping[str, Mapping[str, str]],
) -> str:
    if not len(snapshot):
        return R.NO_NODES
    counts = checker.reasons(pod)
    named: dict[str, list[str]] = {reason: [] for reason in counts}
    fitting: list[str] = []
    for node in snapshot.nodes():
        unfit = checker.fits(pod, node.name)
        if unfit is None:
            fitting.append(node.name)
            continue
        for reason in unfit.reasons:
            names = named.setdefault(reason, [])
            if len(names) < NAMED:
                names.append(node.name)

    def ns_labels(namespace: str) -> Mapping[str, str]:
        return namespaces.get(namespace) or {NAMESPACE_NAME_LABEL: namespace}

    # kube-scheduler's order of its summary: "count reason" strings sorted
    parts = []
    for reason, n in sorted(counts.items(), key=lambda item: f"{item[1]} {item[0]}"):
        names = named.get(reason, [])
        terms = _terms(snapshot, pod, reason, names, ns_labels)
        detail = f" ({terms})" if terms else ""
        more = f" and {n - len(names)} more" if n > len(names) else ""
        parts.append(f"{n} {reason}{detail}: {', '.join(names)}{more}")
    if fitting:
        shown = ", ".join(fitting[:NAMED]) + (
            f" and {len(fitting) - NAMED} more" if len(fitting) > NAMED else ""
        )
        parts.append(f"alone it fits on {shown}, but the node's other pods take that room first")
    return "; ".join(parts)


def _terms(
    snapshot: ClusterSnapshot, pod: Pod, reason: str, nodes: list[str], ns_labels: NamespaceLabels
) -> str:
    """The affinity terms behind an inter-pod affinity reason on the named nodes, in words."""
    found: list[str] = []
    for name in nodes:
        node = snapshot.node(name)
        for words in _terms_on(snapshot, pod, reason, node, ns_labels):
            if words not in found:
                found.append(words)
    return "; ".join(found)


def _terms_on(
    snapshot: ClusterSnapshot, pod: Pod, reason: str, node: Node, ns_labels: NamespaceLabels
) -> list[str]:
    if reason == R.ANTI_AFFINITY_MISMATCH:
        return [
            _term_words("term", term)
            for term in pod.affinity.anti_required
            if any(
                affinity_matcher(term, pod).matches(other.namespace, other.labels, ns_labels)
                for other in _in_domain(snapshot, node, term.topology_key)
            )
        ]
    if reason == R.EXISTING_ANTI_AFFINITY_MISMATCH:
        return [
            _term_words(f"pod {other.key}'s term", term)
            for other in snapshot.pods()
            if other.affinity.anti_required
            for term in other.affinity.anti_required
            if node.labels.get(term.topology_key) is not None
            and affinity_matcher(term, other).matches(pod.namespace, pod.labels, ns_labels)
            and _same_domain(snapshot, other, node, term.topology_key)
        ][:1]
    if reason == R.AFFINITY_MISMATCH:
        return [
            _term_words("term", term)
            for term in pod.affinity.pod_required
            if not any(
                affinity_matcher(term, pod).matches(other.namespace, other.labels, ns_labels)
                for other in _in_domain(snapshot, node, term.topology_key)
            )
        ]
    return []


def _in_domain(snapshot: ClusterSnapshot, node: Node, key: str) -> list[Pod]:
    """The pods on the nodes sharing `node`'s value of label `key`."""
    value = node.labels.get(key)
    if value is None:
        return []
    return [
        p for n in snapshot.nodes() if n.labels.get(key) == value for p in snapshot.pods_on(n.name).values()
    ]


def _same_domain(snapshot: ClusterSnapshot, other: Pod, node: Node, key: str) -> bool:
    home = other.node_name
    return home in snapshot and snapshot.node(home).labels.get(key) == node.labels.get(key)


def _term_words(owner: str, term: PodAffinityTerm) -> str:
    selector = term.label_selector.describe() if term.label_selector is not None else "<none>"
    return f"{owner} {selector} on {term.topology_key}"
