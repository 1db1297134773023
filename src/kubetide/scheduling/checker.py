"""PredicateChecker: kube-scheduler's filters over a ClusterSnapshot, fast.

A query goes class -> base mask of its fit group (node-static results cached per node, host ports,
resources vectorised over `alloc - used`; shared per snapshot version) -> the pod's own spread and
inter-pod terms from a pre-filter state computed once per class and version -> bound pods'
anti-affinity against this pod's labels. All counts come from the incrementally maintained index.
`fits` evaluates one slot from the same data, in kube-scheduler's filter order, so it names the
first failing plugin.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Container, Mapping
from typing import Any

import numpy as np

from kubetide.model.pod import Pod
from kubetide.scheduling import reasons as R
from kubetide.scheduling.classes import (
    AntiProfile,
    FitGroup,
    PodClass,
    Resolved,
    SpreadRule,
    State,
    StaticClass,
    class_key,
    fit_key,
    static_key,
)
from kubetide.scheduling.index import AntiEntry, SchedulingIndex
from kubetide.scheduling.reasons import Unfit
from kubetide.scheduling.scoring import resource_scores, score_nodes
from kubetide.scheduling.terms import affinity_matcher, spread_matcher
from kubetide.snapshot import ClusterSnapshot, SnapshotError

NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"
_NO_MIN = 2**31 - 1  # kube-scheduler's "no domain yet" minimum (MaxInt32)
_CACHE_LIMIT = 200_000
_NO_STATE = State([], [], False, False, [])


class PredicateChecker:
    """Answers "can this pod run there?" the way kube-scheduler's filters would.

    `namespaces` maps namespace name -> labels (for namespaceSelector in affinity terms); a
    namespace it does not list has just the `kubernetes.io/metadata.name` label every namespace
    gets. The checker observes the snapshot from construction until `close()`.
    """

    def __init__(self, snapshot: ClusterSnapshot, namespaces: Mapping[str, Mapping[str, str]] | None = None):
        self.snapshot = snapshot
        self._namespaces = {name: dict(labels) for name, labels in (namespaces or {}).items()}
        self._index = SchedulingIndex(snapshot, self._ns_labels)
        self._statics: dict[tuple[Any, ...], StaticClass] = {}
        self._groups: dict[tuple[Any, ...], FitGroup] = {}
        self._classes: dict[tuple[Any, ...], PodClass] = {}
        self._profiles: dict[tuple[Any, ...], AntiProfile] = {}  # for label-free classes
        self._pod_class: dict[str, tuple[Pod, PodClass]] = {}
        # _diagnose's answers at one index version: (class, anti-affinity entries) -> result.
        self._diagnosed: dict[tuple[PodClass, tuple[AntiEntry, ...]], tuple[int, dict[str, int]]] = {}
        self._diagnosed_version = -1

    def close(self) -> None:
        self._index.close()

    def __enter__(self) -> PredicateChecker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- public API --------------------------------------------------------------------------
    def fits(self, pod: Pod, node_name: str) -> Unfit | None:
        """None if `pod` fits on `node_name` now, else the first failing filter and its reasons."""
        try:
            slot = self._index.slot[node_name]
        except KeyError:
            raise SnapshotError(f"no node {node_name!r} in the snapshot") from None
        cls = self._class(pod)
        return self._check(cls, self._existing(cls, pod), slot)

    def find_node(
        self,
        pod: Pod,
        *,
        hint: str | None = None,
        skip: Container[str] | None = None,
        start: int = 0,
    ) -> str | None:
        """The first node that fits: `hint` first, then slot order from `start`, wrapping around."""
        cls = self._class(pod)
        version = self._index.version
        if cls.none_at == version or cls.group.none_at == version:
            return None
        existing = self._existing(cls, pod)
        if hint is not None and (skip is None or hint not in skip):
            slot = self._index.slot.get(hint)
            if slot is not None and self._check(cls, existing, slot) is None:
                return hint
        mask = self._feasible(cls, existing)
        candidates = np.flatnonzero(mask)
        if not len(candidates):
            self._fits_nowhere(cls, existing, version)
            return None
        if start:
            cut = int(np.searchsorted(candidates, start % len(mask)))
            if cut:
                candidates = np.concatenate([candidates[cut:], candidates[:cut]])
        node_at = self.snapshot.node_at
        for slot in candidates.tolist():
            node = node_at(slot)
            if node is not None and (skip is None or node.name not in skip):
                return node.name
        return None

    def best_node(self, pod: Pod) -> str | None:
        """The node kube-scheduler would pick: feasible, highest score (see scoring), lowest slot."""
        cls = self._class(pod)
        version = self._index.version
        if cls.none_at == version or cls.group.none_at == version:
            return None
        existing = self._existing(cls, pod)
        mask = self._feasible(cls, existing)
        if not mask.any():
            self._fits_nowhere(cls, existing, version)
            return None
        res = self._resolve(cls)
        if any(r.honor_taints and not r.honor_affinity for r in res.soft):
            self._materialize(cls.static)
        scores = score_nodes(self.snapshot, cls, cls.static, mask, self._fit_scores(cls.group))
        node = self.snapshot.node_at(int(np.argmax(np.where(mask, scores, -1))))
        return node.name if node is not None else None

    def reasons(self, pod: Pod) -> dict[str, int]:
        """Reason -> number of nodes failing with it (a node can give several resource reasons)."""
        return self._diagnose(pod)[1]

    def explain(self, pod: Pod) -> str:
        """kube-scheduler's summary, e.g. "0/5 nodes are available: 2 ..., 3 Insufficient cpu."."""
        fitting, counts = self._diagnose(pod)
        return R.summarize(counts, len(self.snapshot), fitting)

    # -- classes -----------------------------------------------------------------------------
    def _ns_labels(self, namespace: str) -> Mapping[str, str]:
        labels = self._namespaces.get(namespace)
        if labels is None:
            labels = self._namespaces[namespace] = {NAMESPACE_NAME_LABEL: namespace}
        return labels

    def _class(self, pod: Pod) -> PodClass:
        cached = self._pod_class.get(pod.uid)
        if cached is not None and cached[0] is pod:
            return cached[1]
        key = class_key(pod)
        cls = self._classes.get(key)
        if cls is None:
            skey = static_key(pod)
            static = self._statics.get(skey)
            if static is None:
                static = self._statics[skey] = StaticClass(pod, self._index.capacity)
            gkey = fit_key(pod)
            group = self._groups.get(gkey)
            if group is None:
                group = self._groups[gkey] = FitGroup(static, pod.shape.requests, pod.host_ports)
            if len(self._classes) >= _CACHE_LIMIT:
                self._classes.clear()  # a cache: classes rebuild their state on demand
            cls = self._classes[key] = PodClass(pod, group)
        if len(self._pod_class) >= _CACHE_LIMIT:
            self._pod_class.clear()
        self._pod_class[pod.uid] = (pod, cls)
        return cls

    def _fits_nowhere(self, cls: PodClass, existing: list[Any], version: int) -> None:
        # A label-free class stands for pods with different labels; if bound pods' anti-affinity
        # took part, the answer was about this pod's labels only.
        if not (cls.label_free and existing):
            cls.none_at = version

    def _static(self, cls: PodClass | FitGroup) -> StaticClass:
        """The class's node-static results, caught up with every node added or changed since."""
        static = cls.static
        index = self._index
        end = index.log_base + len(index.node_log)
        if static.pos == end:
            return static
        static.grow(index.capacity)
        node_at = self.snapshot.node_at
        if static.pos < index.log_base:
            slots = list(index.slot.values())
            if static.pinned is not None:
                static.defer(slots)
                slots = [index.slot[name] for name in static.pinned if name in index.slot]
        else:
            slots = index.node_log[static.pos - index.log_base :]
        for slot in slots:
            node = node_at(slot)
            if node is not None:
                static.compute(slot, node)
        static.pos = end
        return static

    def _materialize(self, static: StaticClass) -> None:
        """Evaluate deferred slots (only spread eligibility that ignores affinity needs them)."""
        node_at = self.snapshot.node_at
        for slot in np.flatnonzero(static.lazy[: self._index.capacity]).tolist():
            node = node_at(slot)
            if node is not None:
                static.compute(slot, node)

    def _resolve(self, cls: PodClass) -> Resolved:
        if cls.resolved is not None:
            return cls.resolved
        pod, index, ns = cls.pod, self._index, self._ns_labels
        spread: list[SpreadRule] = []
        soft: list[SpreadRule] = []
        for c in pod.topology_spread:
            matcher = spread_matcher(c, pod)
            rule = SpreadRule(
                constraint=c,
                topology=index.topology(c.topology_key),
                pods=index.pod_set((matcher,), skip_terminating=True),
                self_match=int(matcher.matches(pod.namespace, pod.labels, ns)),
                honor_affinity=c.node_affinity_policy == "Honor",
                honor_taints=c.node_taints_policy == "Honor",
            )
            (spread if c.when_unsatisfiable == "DoNotSchedule" else soft).append(rule)
        terms = pod.affinity.pod_required
        matchers = tuple(affinity_matcher(t, pod) for t in terms)
        anti = []
        for term in pod.affinity.anti_required:
            matcher = affinity_matcher(term, pod)
            anti.append(
                (index.topology(term.topology_key), index.pod_set((matcher,), skip_terminating=False))
            )
        cls.resolved = Resolved(
            spread=spread,
            soft=soft,
            affinity_topologies=[index.topology(t.topology_key) for t in terms],
            affinity_pods=index.pod_set(matchers, skip_terminating=False) if matchers else None,
            affinity_self=bool(matchers) and all(m.matches(pod.namespace, pod.labels, ns) for m in matchers),
            anti=anti,
        )
        return cls.resolved

    def _existing(self, cls: PodClass, pod: Pod) -> list[tuple[Any, ...]]:
        """Bound pods' anti-affinity terms in force that select this pod: (topology, counts)."""
        return self._padded(self._anti_in_force(cls, pod))

    def _anti_in_force(self, cls: PodClass, pod: Pod) -> tuple[AntiEntry, ...]:
        """Bound pods' anti-affinity terms that select this pod and have pods behind them now."""
        entries = self._index.anti_entries
        if not entries:
            return ()
        profile = cls.profile
        if profile is None:
            key = (pod.namespace, tuple(sorted(pod.labels.items())))
            profile = self._profiles.get(key)
            if profile is None:
                if len(self._profiles) >= _CACHE_LIMIT:
                    self._profiles.clear()
                profile = self._profiles[key] = AntiProfile(pod.namespace, pod.labels)
        if profile.seen < len(entries):
            for entry in entries[profile.seen :]:
                if entry.matcher.matches(profile.namespace, profile.labels, self._ns_labels):
                    profile.matched.append(entry)
            profile.seen = len(entries)
        return tuple(entry for entry in profile.matched if entry.total > 0)

    def _padded(self, entries: tuple[AntiEntry, ...]) -> list[tuple[Any, ...]]:
        """(topology, domain counts + a trailing 0) per entry, cached on the entry per version."""
        result = []
        version = self._index.version
        for entry in entries:
            if entry.padded_version != version:
                entry.padded = np.append(entry.domain_counts(), 0)
                entry.padded_version = version
            result.append((entry.topology, entry.padded))
        return result

    # -- pre-filter state ---------------------------------------------------------------------
    def _state(self, cls: PodClass) -> State:
        version = self._index.version
        if cls.state_version == version and cls.state is not None:
            return cls.state
        res = self._resolve(cls)
        spread = self._spread_state(cls, res.spread) if res.spread else []
        affinity = []
        exists = False
        if res.affinity_pods is not None:
            for topology in res.affinity_topologies:
                counts = res.affinity_pods.domain_counts(topology)
                exists = exists or bool(counts.sum() > 0)
                affinity.append((topology, np.append(counts, 0)))
        anti = [(t, np.append(pods.domain_counts(t), 0)) for t, pods in res.anti if pods.total]
        cls.state = State(spread, affinity, exists, res.affinity_self, anti)
        cls.state_version = version
        return cls.state

    def _spread_state(self, cls: PodClass, rules: list[SpreadRule]) -> list[Any]:
        """Per constraint: matching pods per domain over the pod's eligible nodes, and the minimum.

        Eligibility is pod-specific (node inclusion policies), so domains are aggregated here from
        per-slot counts kept by the index, in one vectorised pass per constraint.
        """
        static = self._static(cls)
        if any(r.honor_taints and not r.honor_affinity for r in rules):
            self._materialize(static)
        cap = self._index.capacity
        has_all = self.snapshot.valid[:cap].copy()
        for rule in rules:
            has_all &= rule.topology.dom[:cap] >= 0
        result = []
        for rule in rules:
            eligible = has_all
            if rule.honor_affinity:
                eligible = eligible & static.aff_ok[:cap]
            if rule.honor_taints:
                eligible = eligible & static.taint_ok[:cap]
            n = rule.topology.size
            dom = rule.topology.dom[:cap][eligible]
            counts = np.bincount(dom, weights=rule.pods.per_slot[:cap][eligible], minlength=n)
            counts = counts.astype(np.int64)
            present = np.bincount(dom, minlength=n) > 0
            domains = int(present.sum())
            low = int(counts[present].min()) if domains else _NO_MIN
            min_domains = rule.constraint.min_domains
            if min_domains is not None and domains < min_domains:
                low = 0
            result.append((rule, np.append(counts, 0), low))
        return result

    # -- filters -----------------------------------------------------------------------------
    def _rows(self, pos: int) -> np.ndarray | slice:
        """Slots touched since absolute log position `pos` (repeats allowed), or every slot when
        there are many (one vectorised pass is then cheaper) or the log no longer reaches back."""
        index = self._index
        end = index.touched_base + len(index.touched)
        if pos < index.touched_base or end - pos > index.capacity // 8:
            return slice(None)
        return np.array(index.touched[pos - index.touched_base :], dtype=np.int64)

    def _grow(self, group: FitGroup) -> None:
        cap = self._index.capacity
        if len(group.mask) < cap:
            grow = cap - len(group.mask)
            group.mask = np.concatenate([group.mask, np.zeros(grow, dtype=bool)])
            group.fit = np.concatenate([group.fit, np.zeros(grow, dtype=np.int64)])
            group.pos = group.fit_pos = -1

    def _refresh(self, group: FitGroup) -> None:
        """Bring the group's base mask up to date for the slots touched since it last looked."""
        index = self._index
        end = index.touched_base + len(index.touched)
        if group.pos == end and len(group.mask) == index.capacity:
            return
        static = self._static(group)
        self._grow(group)
        snapshot = self.snapshot
        rows = self._rows(group.pos)
        alloc, used = snapshot.alloc[rows], snapshot.used[rows]
        mask = snapshot.valid[rows] & static.ok[rows]
        columns = snapshot.columns.index
        for name, amount in group.need:
            col = columns.get(name)
            if col is None:
                mask &= False
                break
            mask &= (alloc[:, col] - used[:, col]) >= amount
        group.mask[rows] = mask
        if group.ports:
            port_slots = list(index.ports) if isinstance(rows, slice) else rows.tolist()
            for slot in port_slots:
                if group.mask[slot] and index.port_conflict(slot, group.ports):
                    group.mask[slot] = False
        group.pos = end

    def _fit_scores(self, group: FitGroup) -> np.ndarray:
        """The group's resource scores per slot, brought up to date the same way."""
        index = self._index
        end = index.touched_base + len(index.touched)
        self._grow(group)
        if group.fit_pos != end:
            rows = self._rows(group.fit_pos)
            snapshot = self.snapshot
            group.fit[rows] = resource_scores(
                snapshot.alloc[rows], snapshot.used[rows], group.cpu, group.memory, snapshot.columns.index
            )
            group.fit_pos = end
        return group.fit

    def _base_mask(self, group: FitGroup) -> np.ndarray:
        """Valid, node-static, host ports and resources (the group's own array: do not modify)."""
        self._refresh(group)
        if not group.mask.any():
            group.none_at = self._index.version
        return group.mask

    def _feasible(self, cls: PodClass, existing: list[Any]) -> np.ndarray:
        """Boolean mask over slots: nodes passing every filter (do not modify it)."""
        mask = self._base_mask(cls.group)
        if not (cls.dynamic or existing) or not mask.any():
            return mask
        mask = mask.copy()
        cap = len(mask)
        for topology, counts in existing:
            mask &= counts[topology.dom[:cap]] == 0
        if not cls.dynamic:
            return mask
        state = self._state(cls)
        for rule, counts, low in state.spread:
            dom = rule.topology.dom[:cap]
            mask &= (dom >= 0) & (counts[dom] + rule.self_match - low <= rule.max_skew)
        if state.affinity:
            placed = np.ones(cap, dtype=bool)
            has_all = np.ones(cap, dtype=bool)
            for topology, counts in state.affinity:
                dom = topology.dom[:cap]
                has_all &= dom >= 0
                placed &= counts[dom] > 0
            if not state.affinity_exists and state.affinity_self:
                placed[:] = True
            mask &= has_all & placed
        for topology, counts in state.anti:
            mask &= counts[topology.dom[:cap]] == 0
        return mask

    def _check(self, cls: PodClass, existing: list[Any], slot: int) -> Unfit | None:
        """Every filter on one slot, in kube-scheduler's order; the first failure wins."""
        static = self._static(cls)
        if static.lazy[slot]:
            node = self.snapshot.node_at(slot)
            if node is not None:  # always: _check is only asked about slots that hold nodes
                static.compute(slot, node)
        reason = static.reason[slot]
        if reason is not None:
            return Unfit(reason[0], (reason[1],))
        if cls.ports and self._index.port_conflict(slot, cls.ports):
            return Unfit(R.NODE_PORTS, (R.PORTS_CONFLICT,))
        snapshot = self.snapshot
        index = snapshot.columns.index
        alloc, used = snapshot.alloc, snapshot.used
        short = []
        for name, amount in cls.need:
            col = index.get(name)
            if col is None or alloc[slot, col] - used[slot, col] < amount:
                short.append(R.insufficient(name))
        if short:
            return Unfit(R.NODE_RESOURCES_FIT, tuple(short))
        if not (cls.dynamic or existing):
            return None
        state = self._state(cls) if cls.dynamic else _NO_STATE
        for rule, counts, low in state.spread:
            d = rule.topology.dom[slot]
            if d < 0:
                return Unfit(R.POD_TOPOLOGY_SPREAD, (R.SPREAD_MISSING_LABEL,))
            if counts[d] + rule.self_match - low > rule.max_skew:
                return Unfit(R.POD_TOPOLOGY_SPREAD, (R.SPREAD_MISMATCH,))
        if state.affinity:
            placed = True
            for topology, counts in state.affinity:
                d = topology.dom[slot]
                if d < 0:
                    return Unfit(R.INTER_POD_AFFINITY, (R.AFFINITY_MISMATCH,))
                if counts[d] <= 0:
                    placed = False
            if not placed and (state.affinity_exists or not state.affinity_self):
                return Unfit(R.INTER_POD_AFFINITY, (R.AFFINITY_MISMATCH,))
        for topology, counts in state.anti:
            if counts[topology.dom[slot]] > 0:
                return Unfit(R.INTER_POD_AFFINITY, (R.ANTI_AFFINITY_MISMATCH,))
        for topology, counts in existing:
            if counts[topology.dom[slot]] > 0:
                return Unfit(R.INTER_POD_AFFINITY, (R.EXISTING_ANTI_AFFINITY_MISMATCH,))
        return None

    def _diagnose(self, pod: Pod) -> tuple[int, dict[str, int]]:
        """(nodes that fit, reason -> nodes), worked out once per class and set of bound pods'
        anti-affinity terms selecting the pod: nothing else the filters read differs between
        pods with those in common, so the per-node pass is not repeated for each of them."""
        cls = self._class(pod)
        anti = self._anti_in_force(cls, pod)
        version = self._index.version
        if self._diagnosed_version != version or len(self._diagnosed) >= _CACHE_LIMIT:
            self._diagnosed.clear()
            self._diagnosed_version = version
        key = (cls, anti)
        known = self._diagnosed.get(key)
        if known is None:
            known = self._diagnosed[key] = self._diagnose_nodes(cls, self._padded(anti))
        return known[0], dict(known[1])

    def _diagnose_nodes(self, cls: PodClass, existing: list[Any]) -> tuple[int, dict[str, int]]:
        """`_check` on every node at once: the filters in kube-scheduler's order, each over the
        nodes every earlier one passed, so each node counts under its first failing filter
        (NodeResourcesFit under each short resource). One class on 5,000 nodes is a few numpy
        passes rather than 5,000 calls."""
        index, snapshot = self._index, self.snapshot
        static = self._static(cls)
        left = np.fromiter(index.slot.values(), dtype=np.int64, count=len(index.slot))
        for slot in left[static.lazy[left]].tolist():
            node = snapshot.node_at(slot)
            if node is not None:  # always: every slot in index.slot holds a node
                static.compute(slot, node)
        counts: Counter[str] = Counter()
        passed = static.ok[left]
        for slot in left[~passed].tolist():
            reason = static.reason[slot]
            if reason is not None:  # always: a node-static failure has its reason
                counts[reason[1]] += 1
        left = left[passed]

        def drop(left: np.ndarray, failed: np.ndarray, reason: str) -> np.ndarray:
            """The slots in `left` that pass, counting the others under `reason`."""
            n = int(failed.sum())
            if n:
                counts[reason] += n
            kept: np.ndarray = left[~failed]
            return kept

        if cls.ports and len(left):
            ports = cls.ports
            conflict = np.array([index.port_conflict(s, ports) for s in left.tolist()], dtype=bool)
            left = drop(left, conflict, R.PORTS_CONFLICT)
        if cls.need and len(left):
            alloc, used = snapshot.alloc[left], snapshot.used[left]
            short_any = np.zeros(len(left), dtype=bool)
            for name, amount in cls.need:
                col = snapshot.columns.index.get(name)
                short = (
                    np.ones(len(left), dtype=bool) if col is None else alloc[:, col] - used[:, col] < amount
                )
                n = int(short.sum())
                if n:
                    counts[R.insufficient(name)] += n
                short_any |= short
            left = left[~short_any]
        if not (cls.dynamic or existing) or not len(left):
            return len(left), dict(counts)
        state = self._state(cls) if cls.dynamic else _NO_STATE
        for rule, spread_counts, low in state.spread:
            left = drop(left, rule.topology.dom[left] < 0, R.SPREAD_MISSING_LABEL)
            dom = rule.topology.dom[left]
            left = drop(left, spread_counts[dom] + rule.self_match - low > rule.max_skew, R.SPREAD_MISMATCH)
        if state.affinity:
            missing = np.zeros(len(left), dtype=bool)
            placed = np.ones(len(left), dtype=bool)
            for topology, affinity_counts in state.affinity:
                dom = topology.dom[left]
                missing |= dom < 0
                placed &= affinity_counts[dom] > 0
            if state.affinity_exists or not state.affinity_self:
                missing |= ~placed
            left = drop(left, missing, R.AFFINITY_MISMATCH)
        for topology, anti_counts in state.anti:
            left = drop(left, anti_counts[topology.dom[left]] > 0, R.ANTI_AFFINITY_MISMATCH)
        for topology, anti_counts in existing:
            left = drop(left, anti_counts[topology.dom[left]] > 0, R.EXISTING_ANTI_AFFINITY_MISMATCH)
        return len(left), dict(counts)
