"""A slow, obviously-written reference for kube-scheduler's filters, to check the fast checker.

It rescans every bound pod on every call and shares no code with kubetide.scheduling; only the
model's own matching primitives (Requirement, LabelSelector, Toleration) are reused.
"""

from __future__ import annotations

from kubetide.model.node import Taint
from kubetide.model.selectors import LabelSelector, Requirement

NO_MIN = 2**31 - 1


def _tolerates(pod, taint):
    return any(t.tolerates(taint) for t in pod.tolerations)


def _node_affinity(pod, node):
    if any(node.labels.get(k) != v for k, v in pod.node_selector.items()):
        return False
    terms = pod.affinity.node_required
    if terms is None:
        return True
    for term in terms:
        if not term.match_expressions and not term.match_fields:
            continue
        if all(r.matches(node.labels) for r in term.match_expressions) and all(
            r.matches({"metadata.name": node.name}) for r in term.match_fields
        ):
            return True
    return False


def _untolerated(pod, node):
    for taint in node.taints:
        if taint.effect in ("NoSchedule", "NoExecute") and not _tolerates(pod, taint):
            return taint
    return None


def _selector(selector, owner, match_keys, mismatch_keys=()):
    if selector is None:
        return None
    extra = [Requirement(k, "In", (owner.labels[k],)) for k in match_keys if k in owner.labels]
    extra += [Requirement(k, "NotIn", (owner.labels[k],)) for k in mismatch_keys if k in owner.labels]
    return LabelSelector(selector.match_labels, selector.match_expressions + tuple(extra))


def _term_selects(term, owner, target, ns_labels):
    """Does `owner`'s pod affinity term select `target`?"""
    selector = _selector(term.label_selector, owner, term.match_label_keys, term.mismatch_label_keys)
    if selector is None:
        return False
    namespaces = set(term.namespaces)
    if not namespaces and term.namespace_selector is None:
        namespaces = {owner.namespace}
    in_ns = target.namespace in namespaces or (
        term.namespace_selector is not None and term.namespace_selector.matches(ns_labels(target.namespace))
    )
    return in_ns and selector.matches(target.labels)


def bound(snapshot):
    return [(p, snapshot.node(snapshot.node_of(p.uid))) for p in snapshot.pods()]


def check(snapshot, pod, node_name, ns_labels):
    """(plugin, reasons) of the first failing filter, or None."""
    node = snapshot.node(node_name)
    if node.unschedulable and not _tolerates(
        pod, Taint("node.kubernetes.io/unschedulable", "", "NoSchedule")
    ):
        return ("NodeUnschedulable", ("node(s) were unschedulable",))
    if pod.node_name and pod.node_name != node.name:
        return ("NodeName", ("node(s) didn't match the requested node name",))
    taint = _untolerated(pod, node)
    if taint is not None:
        return ("TaintToleration", (f"node(s) had untolerated taint {{{taint.key}: {taint.value}}}",))
    if not _node_affinity(pod, node):
        return ("NodeAffinity", ("node(s) didn't match Pod's node affinity/selector",))

    here = [p for p, n in bound(snapshot) if n.name == node.name]
    used_ports = [hp for p in here for hp in p.host_ports]
    for want in pod.host_ports:
        for have in used_ports:
            if (want.protocol, want.port) == (have.protocol, have.port) and (
                want.ip == have.ip or "0.0.0.0" in (want.ip, have.ip)
            ):
                return ("NodePorts", ("node(s) didn't have free ports for the requested pod ports",))

    requested: dict[str, int] = {}
    for p in here:
        for r, a in p.requests.items():
            requested[r] = requested.get(r, 0) + a
    short = []
    order = {"pods": 0, "cpu": 1, "memory": 2, "ephemeral-storage": 3}
    for r, a in sorted(pod.requests.items(), key=lambda i: (order.get(i[0], 4), i[0])):
        if a > 0 and a > node.allocatable.get(r, 0) - requested.get(r, 0):
            short.append("Too many pods" if r == "pods" else f"Insufficient {r}")
    if short:
        return ("NodeResourcesFit", tuple(short))

    failure = _spread(snapshot, pod, node)
    if failure:
        return ("PodTopologySpread", (failure,))
    failure = _interpod(snapshot, pod, node, ns_labels)
    if failure:
        return ("InterPodAffinity", (failure,))
    return None


def _spread(snapshot, pod, node):
    hard = [c for c in pod.topology_spread if c.when_unsatisfiable == "DoNotSchedule"]
    if not hard:
        return None
    everything = bound(snapshot)
    nodes = list(snapshot.nodes())
    for c in hard:
        selector = _selector(c.label_selector, pod, c.match_label_keys)
        counts: dict[str, int] = {}
        for n in nodes:
            if not all(k.topology_key in n.labels for k in hard):
                continue
            if c.node_affinity_policy == "Honor" and not _node_affinity(pod, n):
                continue
            if c.node_taints_policy == "Honor" and _untolerated(pod, n) is not None:
                continue
            value = n.labels[c.topology_key]
            counts.setdefault(value, 0)
            for p, where in everything:
                if (
                    where.name == n.name
                    and p.namespace == pod.namespace
                    and p.meta.deletion_timestamp is None
                    and selector is not None
                    and selector.matches(p.labels)
                ):
                    counts[value] += 1
        if c.topology_key not in node.labels:
            return "node(s) didn't match pod topology spread constraints (missing required label)"
        low = min(counts.values()) if counts else NO_MIN
        if c.min_domains is not None and len(counts) < c.min_domains:
            low = 0
        mine = 1 if selector is not None and selector.matches(pod.labels) else 0
        if counts.get(node.labels[c.topology_key], 0) + mine - low > c.max_skew:
            return "node(s) didn't match pod topology spread constraints"
    return None


def _interpod(snapshot, pod, node, ns_labels):
    everything = bound(snapshot)
    terms = pod.affinity.pod_required
    if terms:
        if any(t.topology_key not in node.labels for t in terms):
            return "node(s) didn't match pod affinity rules"
        matching = [(p, n) for p, n in everything if all(_term_selects(t, pod, p, ns_labels) for t in terms)]
        anywhere = any(t.topology_key in n.labels for _, n in matching for t in terms)
        satisfied = all(
            any(n.labels.get(t.topology_key) == node.labels[t.topology_key] for _, n in matching)
            for t in terms
        )
        if not satisfied:
            self_match = all(_term_selects(t, pod, pod, ns_labels) for t in terms)
            if anywhere or not self_match:
                return "node(s) didn't match pod affinity rules"
    for t in pod.affinity.anti_required:
        if t.topology_key not in node.labels:
            continue
        for p, n in everything:
            if n.labels.get(t.topology_key) == node.labels[t.topology_key] and _term_selects(
                t, pod, p, ns_labels
            ):
                return "node(s) didn't match pod anti-affinity rules"
    for p, n in everything:
        for t in p.affinity.anti_required:
            key = t.topology_key
            if (
                key in n.labels
                and node.labels.get(key) == n.labels[key]
                and _term_selects(t, p, pod, ns_labels)
            ):
                return "node(s) didn't satisfy existing pods anti-affinity rules"
    return None
