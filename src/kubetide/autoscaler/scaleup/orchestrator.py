"""ScaleUp.plan: pending pods in, "grow these groups by this much, and why" out.

The steps, each in its own module:

    select_pending        unschedulable, old enough, not expendable          (pending.py)
    filter_schedulable    drop pods that fit existing or upcoming nodes       (filter_schedulable.py)
    group_pods            equivalence groups                                  (equivalence.py)
    per node group        skip (no template, backoff, unhealthy, never-Ready nodes, at max,
                          cluster limits),
                          else template net of DaemonSets (template.py) and
                          binpacking estimate within the limits              (estimator.py)
    choose                expander chain from the `expander` flag             (expanders.py)
    balance               split across similar groups                         (balance.py)

Planning is pure: it reads the snapshot (forked and reverted, so it is left as found), the
groups' sizes and templates and the inputs the caller passes, and returns a ScaleUpPlan. The
loop acts on it: for each increase it calls `group.increase_size(delta)`; on success it emits
`plan.events_after(succeeded)`: those of each group that grew (ScaledUpGroup, and TriggeredScaleUp
for its pods) and NotTriggerScaleUp for pods no group could help; on failure it emits
FailedToScaleUpGroup and backs the group off. Every event carries the loop's time.

What the cluster state registry knows is taken as plain inputs: `upcoming` (group -> nodes
requested but not yet registered and ready), `backed_off` and `healthy` (group id -> bool) and
`never_ready` (group id -> its nodes that registered and never became Ready, UC3), so this module
does not depend on the registry's API. Upcoming nodes count against every limit and
are represented by template copies while filtering, so pods waiting for them do not ask again.
"""

from __future__ import annotations

import dataclasses
import random
import re
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kubetide.autoscaler.events import Event, StatusObject
from kubetide.autoscaler.inputs import LoopInputs, PrioritiesSource
from kubetide.autoscaler.options import AutoscalerOptions
from kubetide.autoscaler.ports import NodeGroup, PriceError, TemplateError
from kubetide.autoscaler.scaleup.balance import BalanceTarget, similar, split
from kubetide.autoscaler.scaleup.equivalence import PodGroup, group_pods
from kubetide.autoscaler.scaleup.estimator import TIME_LIMIT_REASON, BinpackingEstimator, Estimate, NodeLimit
from kubetide.autoscaler.scaleup.expanders import (
    ExpanderContext,
    ExpanderService,
    ExpansionOption,
    choose,
    parse_priorities,
    priorities_from_configmap,
    priorities_from_mapping,
)
from kubetide.autoscaler.scaleup.filter_schedulable import filter_schedulable, nodes_being_deleted
from kubetide.autoscaler.scaleup.pending import select_pending
from kubetide.autoscaler.scaleup.skips import GroupSkip, SkipReason
from kubetide.autoscaler.scaleup.template import GroupTemplate, build_template, daemonsets_of
from kubetide.clock import Timer
from kubetide.model import ConfigMap, Node, Pod, Workload
from kubetide.model.quantity import CPU, MEMORY
from kubetide.scheduling import PredicateChecker
from kubetide.snapshot import ClusterSnapshot

# The priority expander's configuration: its ConfigMap, the `priorities` text, or that parsed.

GIB = 2**30


@dataclass(frozen=True, slots=True)
class Increase:
    group_id: str
    delta: int
    current: int  # target size before
    max_size: int
    pods: tuple[str, ...]  # keys of the pods this scale-up is for (the chosen option's)

    @property
    def new_size(self) -> int:
        return self.current + self.delta


@dataclass(slots=True)
class ScaleUpPlan:
    at: float = 0.0  # the loop's time: when its events happened
    pending: list[str] = field(default_factory=list)  # pods a new node was sought for
    options: list[ExpansionOption] = field(default_factory=list)
    chosen: ExpansionOption | None = None
    increases: list[Increase] = field(default_factory=list)
    helped: list[str] = field(default_factory=list)
    not_helped: dict[str, str] = field(default_factory=dict)
    # Of not_helped, the pods every node group refused on scheduling grounds alone (no limit,
    # backoff or time budget among the reasons): no scale-up of any group would give them a node.
    fits_no_group: list[str] = field(default_factory=list)
    schedulable: dict[str, str] = field(default_factory=dict)  # pod key -> existing/upcoming node
    skipped_groups: dict[str, GroupSkip] = field(default_factory=dict)  # group id -> why
    estimates: dict[str, Estimate] = field(default_factory=dict)
    # Each event with the group whose increase it reports (None: emitted regardless).
    planned_events: list[tuple[Event, str | None]] = field(default_factory=list)
    trace: list[str] = field(default_factory=list)  # expander steps and warnings
    # Seconds (by the Timer) of the steps CA times, under CA's function_duration_seconds labels.
    durations: dict[str, float] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The `scale_up` object of `kubetide plan --json`."""
        return {
            "pending": list(self.pending),
            "options": [
                {"node_group": o.group_id, "node_count": o.node_count, "pods": o.pod_keys}
                for o in self.options
            ],
            "chosen": (
                {"node_group": self.chosen.group_id, "node_count": self.chosen.node_count}
                if self.chosen is not None
                else None
            ),
            "not_helped": dict(self.not_helped),
        }

    def describe(self) -> list[str]:
        """A few human lines saying what would happen and why."""
        lines = []
        if not self.pending:
            lines.append("scale-up: no pending pod needs a new node")
        else:
            lines.append(f"scale-up: {len(self.pending)} pending pod(s) need a new node")
        for option in self.options:
            lines.append(
                f"  option {option.group_id}: +{option.node_count} node(s) for {len(option.pods)} pod(s)"
            )
        for group_id, skip in self.skipped_groups.items():
            lines.append(f"  skipped {group_id}: {skip}")
        for increase in self.increases:
            lines.append(
                f"  increase {increase.group_id} {increase.current}->{increase.new_size} (max {increase.max_size})"
            )
        if self.pending and not self.increases:
            lines.append("  no scale-up")
        reasons = Counter(self.not_helped.values())
        for reason, n in reasons.most_common(5):
            lines.append(f"  {n} pod(s) not helped: {reason}")
        return lines

    @property
    def events(self) -> list[Event]:
        """Every event this plan would emit if all its increases succeed."""
        return [event for event, _ in self.planned_events]

    def events_after(self, succeeded: Collection[str]) -> list[Event]:
        """What to emit once the increases of the groups `succeeded` are done."""
        return [event for event, group in self.planned_events if group is None or group in succeeded]


def _as_predicate(
    value: Callable[[str], bool] | Collection[str] | None, default: bool
) -> Callable[[str], bool]:
    if value is None:
        return lambda _id: default
    if callable(value):
        return value
    members = set(value)
    return lambda group_id: group_id in members


# A group's nodes that registered and never became Ready (UC3), by group id.
NeverReady = Callable[[str], Sequence[str]] | Mapping[str, Sequence[str]]


def _never_ready_of(value: NeverReady | None) -> Callable[[str], Sequence[str]]:
    if value is None:
        return lambda _id: ()
    if callable(value):
        return value
    return lambda group_id: value.get(group_id, ())


def _ask_provider(group: NodeGroup) -> tuple[Node, float | None] | GroupSkip:
    """The group's template and price, or why the provider's answer passes the group over."""
    try:
        template = group.template_node()
        if template is None:
            return GroupSkip(SkipReason.NO_TEMPLATE)
        price = group.price_per_hour()
        return template, None if price is None else float(price)
    except TemplateError as exc:
        return GroupSkip(SkipReason.TEMPLATE_ERROR, str(exc), str(exc.code))
    except PriceError as exc:
        return GroupSkip(SkipReason.PRICE_ERROR, str(exc), str(exc.code))


def _add_upcoming(
    snapshot: ClusterSnapshot, upcoming: Mapping[str, int], templates: Mapping[str, GroupTemplate]
) -> tuple[int, int, int]:
    """Template copies of the nodes on their way, into the snapshot: how many, and their cpu and
    memory (a group without a template counts its nodes but adds no copies)."""
    total = cpu = mem = 0
    for group_id, count in upcoming.items():
        if count <= 0:
            continue
        total += count
        template = templates.get(group_id)
        if template is None:
            continue
        cpu += _capacity(template.node, CPU) * count
        mem += _capacity(template.node, MEMORY) * count
        for i in range(count):
            snapshot.add_node(template.copy(f"upcoming-{i}"))
    return total, cpu, mem


def _state_skip(
    group_id: str,
    is_backed_off: Callable[[str], bool],
    is_healthy: Callable[[str], bool],
    never_ready_of: Callable[[str], Sequence[str]],
) -> GroupSkip | None:
    """Why the registry's view of the group passes it over (backoff, unhealthy, never-Ready
    nodes), in that order, or None."""
    if is_backed_off(group_id):
        return GroupSkip(SkipReason.BACKED_OFF)
    if not is_healthy(group_id):
        return GroupSkip(SkipReason.NOT_READY)
    if stuck := never_ready_of(group_id):
        return GroupSkip(SkipReason.NEVER_READY, ", ".join(stuck))
    return None


def _capacity(node: Node, resource: str) -> int:
    return node.capacity.get(resource) or node.allocatable.get(resource, 0)


# Refusals that say a group could not grow (now), not that its nodes cannot take the pod.
_LIMIT_REASONS = frozenset({*(str(reason) for reason in SkipReason), TIME_LIMIT_REASON})

# Between two of NodeResourcesFit's reasons (scheduling/reasons.py joins them with ", "); no other
# reason has a comma followed by "Insufficient" or "Too many pods".
_RESOURCE_REASONS = re.compile(r", (?=Insufficient |Too many pods)")


def not_triggered_message(reasons: Iterable[str]) -> str:
    """CA's NotTriggerScaleUp text: "pod didn't trigger scale-up: 1 max node group size reached, ...",
    from one refusal per node group. A refusal of NodeResourcesFit names every short resource
    ("Insufficient cpu, Insufficient memory"): CA counts each reason of a group on its own ("2
    Insufficient cpu, 2 Insufficient memory"), not the pair as one reason."""
    counts = Counter(part for reason in reasons for part in _RESOURCE_REASONS.split(reason))
    parts = sorted(f"{n} {reason}" for reason, n in counts.items())
    if not parts:
        return "pod didn't trigger scale-up: no node group can be scaled up"
    return "pod didn't trigger scale-up: " + ", ".join(parts)


def min_size_increases(
    node_groups: Sequence[NodeGroup],
    *,
    backed_off: Callable[[str], bool] | Collection[str] | None = None,
    healthy: Callable[[str], bool] | Collection[str] | None = None,
    never_ready: NeverReady | None = None,
) -> list[Increase]:
    """enforce-node-group-min-size: raise groups below their min size to it, pods or not.

    Groups in backoff, not healthy or holding never-Ready nodes are left alone, as for any
    scale-up. The loop calls this when the flag is set, after the pod-driven scale-up (whose
    increases it should subtract).
    """
    is_backed_off = _as_predicate(backed_off, False)
    is_healthy = _as_predicate(healthy, True)
    never_ready_of = _never_ready_of(never_ready)
    result = []
    for group in node_groups:
        target = group.target_size()
        if (
            target < group.min_size
            and _state_skip(group.id, is_backed_off, is_healthy, never_ready_of) is None
        ):
            result.append(Increase(group.id, group.min_size - target, target, group.max_size, ()))
    return result


class ScaleUp:
    """Plans scale-ups with fixed options; `seed` makes the expanders' random choices replayable."""

    def __init__(
        self,
        options: AutoscalerOptions,
        *,
        seed: int | random.Random = 0,
        timer: Timer,
        expander_service: ExpanderService | None = None,
    ):
        self.options = options
        self.rng = seed if isinstance(seed, random.Random) else random.Random(seed)
        self.timer = timer
        self.expander_service = expander_service  # for the grpc expander

    def plan(
        self,
        inputs: LoopInputs,
        *,
        node_groups: Sequence[NodeGroup],
        upcoming: Mapping[str, int] | None = None,
        backed_off: Callable[[str], bool] | Collection[str] | None = None,
        healthy: Callable[[str], bool] | Collection[str] | None = None,
        never_ready: NeverReady | None = None,
        checker: PredicateChecker | None = None,
    ) -> ScaleUpPlan:
        """One scale-up decision on `inputs` (its snapshot, pending pods, workloads for the
        DaemonSets, the priority expander's configuration, namespaces). See the module docstring
        for what the caller does with it.

        `upcoming`: nodes per group requested but not yet ready. `backed_off` / `healthy`: per
        group id, as a predicate or a collection of ids. `never_ready`: per group id, its nodes
        that registered and never became Ready (the group is passed over while there are any).
        `checker`: a PredicateChecker already
        attached to the snapshot (one is made and closed otherwise).
        """
        snapshot = inputs.snapshot
        plan = ScaleUpPlan(at=inputs.now)
        selection = select_pending(inputs.pending, self.options, inputs.now)
        for key, reason in {**selection.too_young, **selection.expendable}.items():
            plan.not_helped[key] = reason
        plan.trace.extend(f"{key}: {warning}" for key, warning in selection.warnings.items())
        if not selection.pods:
            return plan
        own_checker = checker is None
        if checker is None:
            checker = PredicateChecker(snapshot, inputs.namespaces)
        # Each group's target size as it stands, read before planning adds upcoming nodes to the
        # snapshot as template copies: a provider that counts its group's nodes in the snapshot
        # (kwok) would count those copies too, and each scale-up's "instead of" would then
        # differ from the size the previous one set.
        targets = {group.id: group.target_size() for group in node_groups}
        snapshot.fork()
        try:
            self._plan(
                plan,
                snapshot,
                checker,
                selection.pods,
                node_groups,
                targets,
                inputs.workloads or (),
                upcoming or {},
                backed_off,
                healthy,
                never_ready,
                inputs.priorities,
            )
        finally:
            snapshot.revert()
            if own_checker:
                checker.close()
        return plan

    # -- the steps ----------------------------------------------------------------------------
    def _plan(
        self,
        plan: ScaleUpPlan,
        snapshot: ClusterSnapshot,
        checker: PredicateChecker,
        candidates: Sequence[Pod],
        node_groups: Sequence[NodeGroup],
        targets: Mapping[str, int],
        workloads: Sequence[Workload],
        upcoming: Mapping[str, int],
        backed_off: Callable[[str], bool] | Collection[str] | None,
        healthy: Callable[[str], bool] | Collection[str] | None,
        never_ready: NeverReady | None,
        priorities: PrioritiesSource | None,
    ) -> None:
        options = self.options
        is_backed_off = _as_predicate(backed_off, False)
        is_healthy = _as_predicate(healthy, True)
        never_ready_of = _never_ready_of(never_ready)
        real_nodes = list(snapshot.nodes())
        if not options.scale_up_from_zero and not any(n.ready for n in real_nodes):
            plan.trace.append("no ready node and scale-up-from-zero is false: no scale-up")
            for pod in candidates:
                plan.not_helped[pod.key] = (
                    "pod didn't trigger scale-up: no ready node (scale-up-from-zero is false)"
                )
            return
        deleting = nodes_being_deleted(snapshot)
        templates, prices = self._provider_answers(plan, node_groups, workloads, snapshot, checker)
        # Upcoming nodes take pods first, as template copies.
        upcoming_total, upcoming_cpu, upcoming_mem = _add_upcoming(snapshot, upcoming, templates)

        started = self.timer()
        all_groups = group_pods(candidates)
        grouped = self.timer()
        filtered = filter_schedulable(
            snapshot, checker, candidates, skip=deleting, keep=True, groups=all_groups
        )
        plan.durations["scaleUp:buildPodEquivalenceGroups"] = grouped - started
        plan.durations["filterOutSchedulable"] = self.timer() - grouped
        plan.schedulable = filtered.placed
        still = filtered.pending
        keys = [p.key for p in still]
        plan.pending = keys
        if not still:
            return
        placed = filtered.placed_uids
        groups: list[PodGroup] = []
        for pod_group in all_groups:
            members = [p for p in pod_group.pods if p.uid not in placed] if placed else pod_group.pods
            if members:
                groups.append(dataclasses.replace(pod_group, pods=members))

        # Cluster-wide headroom, counting nodes on their way.
        node_total = len(real_nodes) + upcoming_total
        cpu_total = sum(_capacity(n, CPU) for n in real_nodes) + upcoming_cpu
        mem_total = sum(_capacity(n, MEMORY) for n in real_nodes) + upcoming_mem
        estimator = BinpackingEstimator(
            snapshot, checker, timer=self.timer, max_group_duration=options.max_nodegroup_binpacking_duration
        )
        deadline = self.timer() + options.max_binpacking_time
        # Why groups refused pods: reasons for every pod (skipped groups), and per pod (by id).
        common: list[str] = []
        per_pod: dict[int, list[str]] = {}
        sizes: dict[str, tuple[int, int]] = {}

        for group in node_groups:
            gid = group.id
            template = templates.get(gid)
            if template is None:
                continue
            target = targets[gid]
            sizes[gid] = (target, group.max_size)
            limit = self._limit(group, template, target, node_total, cpu_total, mem_total)
            skip = _state_skip(gid, is_backed_off, is_healthy, never_ready_of)
            if skip is None and limit.max_nodes <= 0:
                skip = GroupSkip(limit.reason)
            elif skip is None and self.timer() > deadline:
                skip = GroupSkip(SkipReason.BINPACKING_TIME)
            if skip is not None:
                plan.skipped_groups[gid] = skip
                common.append(skip.reason)
                continue
            started = self.timer()
            estimate = estimator.estimate(template, groups, limit, deadline)
            plan.durations["scaleUp:estimate"] = plan.durations.get("scaleUp:estimate", 0.0) + (
                self.timer() - started
            )
            plan.estimates[gid] = estimate
            for pods, why in estimate.refused_runs:
                for pod in pods:
                    per_pod.setdefault(id(pod), []).append(why)
            if estimate.node_count > 0:
                plan.options.append(
                    ExpansionOption(
                        gid,
                        estimate.node_count,
                        tuple(estimate.helped),
                        template.node,
                        prices[gid],
                        dict(estimate.requested),
                    )
                )

        if plan.options:
            context = ExpanderContext(
                self.rng,
                cluster_size=len(real_nodes),
                priorities=self._priorities(priorities, plan),
                service=self.expander_service,
            )
            plan.chosen = choose(plan.options, options.expander, context)
            plan.trace.extend(context.trace)
        if plan.chosen is not None:
            self._increase(plan, plan.chosen, templates, sizes)
        self._explain(plan, still, keys, common, per_pod)

    def _limit(
        self,
        group: NodeGroup,
        template: GroupTemplate,
        target: int,
        node_total: int,
        cpu_total: int,
        mem_total: int,
    ) -> NodeLimit:
        """The tightest of the limits on this group's new nodes, and its reason."""
        options = self.options
        limits = [NodeLimit(group.max_size - target, SkipReason.MAX_SIZE)]
        if options.max_nodes_per_scaleup > 0:
            limits.append(NodeLimit(options.max_nodes_per_scaleup, SkipReason.MAX_PER_SCALEUP))
        if options.max_nodes_total > 0:
            limits.append(NodeLimit(options.max_nodes_total - node_total, SkipReason.MAX_TOTAL_NODES))
        node_cpu = _capacity(template.node, CPU)
        if options.cores_total.max > 0 and node_cpu > 0:
            left = options.cores_total.max * 1000 - cpu_total
            limits.append(NodeLimit(left // node_cpu, SkipReason.MAX_CPU))
        node_mem = _capacity(template.node, MEMORY)
        if options.memory_total.max > 0 and node_mem > 0:
            left = options.memory_total.max * GIB - mem_total
            limits.append(NodeLimit(left // node_mem, SkipReason.MAX_MEMORY))
        tightest = min(limits, key=lambda lim: lim.max_nodes)
        return NodeLimit(max(0, tightest.max_nodes), tightest.reason)

    def _provider_answers(
        self,
        plan: ScaleUpPlan,
        node_groups: Sequence[NodeGroup],
        workloads: Sequence[Workload],
        snapshot: ClusterSnapshot,
        checker: PredicateChecker,
    ) -> tuple[dict[str, GroupTemplate], dict[str, float | None]]:
        """Each group's template (net of its DaemonSets) and price. A group whose provider gave
        no template or raised a ProviderError is passed over this loop, with its reason in the
        plan (for the status) and an Event; any other exception is a provider bug and goes up."""
        templates: dict[str, GroupTemplate] = {}
        prices: dict[str, float | None] = {}
        daemonsets = daemonsets_of(workloads)
        status = StatusObject.of(self.options)
        for group in node_groups:
            answer = _ask_provider(group)
            if isinstance(answer, GroupSkip):
                plan.skipped_groups[group.id] = answer
                name = answer.provider_name
                assert name is not None  # _ask_provider skips for the provider's reasons only
                warning = answer.reason is not SkipReason.NO_TEMPLATE
                event = Event.node_group_skipped(status, group.id, name, str(answer), warning, plan.at)
                plan.planned_events.append((event, None))
                continue
            raw, prices[group.id] = answer
            templates[group.id] = build_template(group.id, raw, daemonsets, snapshot, checker, self.options)
        return templates, prices

    def _priorities(
        self, source: PrioritiesSource | None, plan: ScaleUpPlan
    ) -> dict[int, list[re.Pattern[str]]] | None:
        if source is None:
            return None
        try:
            if isinstance(source, ConfigMap):
                return priorities_from_configmap(source)
            if isinstance(source, str):
                return parse_priorities(source)
            return priorities_from_mapping(source)
        except ValueError as exc:
            plan.trace.append(f"priority expander configuration ignored: {exc}")
            return None

    def _increase(
        self,
        plan: ScaleUpPlan,
        chosen: ExpansionOption,
        templates: Mapping[str, GroupTemplate],
        sizes: Mapping[str, tuple[int, int]],
    ) -> None:
        total = chosen.node_count
        members = [chosen.group_id]
        if self.options.balance_similar_node_groups:
            helped = {id(p) for p in chosen.pods}
            base = templates[chosen.group_id].node
            for gid, estimate in plan.estimates.items():
                if gid == chosen.group_id or gid not in templates:
                    continue
                if not similar(
                    base,
                    templates[gid].node,
                    ignore_labels=self.options.balancing_ignore_label,
                    only_labels=self.options.balancing_label,
                    tolerance=self.options.max_allocatable_difference_ratio,
                ):
                    continue
                # A similar group must be able to take every pod the chosen option is for.
                if not helped <= {id(p) for p in estimate.helped}:
                    continue
                members.append(gid)
            if len(members) > 1:
                plan.trace.append(f"balancing {total} node(s) across {', '.join(members)}")
        targets = [BalanceTarget(gid, *sizes[gid]) for gid in members]
        deltas = split(total, targets)
        pods = tuple(p.key for p in chosen.pods)
        for gid in members:
            delta = deltas.get(gid, 0)
            if delta > 0:
                current, max_size = sizes[gid]
                plan.increases.append(Increase(gid, delta, current, max_size, pods))
        plan.helped = list(pods)

    def _explain(
        self,
        plan: ScaleUpPlan,
        still: Sequence[Pod],
        keys: Sequence[str],
        common: Sequence[str],
        per_pod: Mapping[int, Sequence[str]],
    ) -> None:
        status, now = StatusObject.of(self.options), plan.at
        helped = {id(p) for p in plan.chosen.pods} if plan.chosen is not None else set()
        fits_in: dict[int, list[str]] = {}
        for option in plan.options:
            if plan.chosen is not None and option.group_id == plan.chosen.group_id:
                continue
            for pod in option.pods:
                if id(pod) not in helped:
                    fits_in.setdefault(id(pod), []).append(option.group_id)
        summary = ", ".join(
            f"{{{i.group_id} {i.current}->{i.new_size} (max: {i.max_size})}}" for i in plan.increases
        )
        for inc in plan.increases:
            event = Event.scaled_up_group(status, inc.group_id, inc.current, inc.new_size, inc.max_size, now)
            plan.planned_events.append((event, inc.group_id))
        trigger_group = plan.increases[0].group_id if plan.increases else None
        for pod, key in zip(still, keys):
            ident = id(pod)
            if ident in helped:
                plan.planned_events.append((Event.triggered_scale_up(key, summary, now), trigger_group))
                continue
            fits = fits_in.get(ident)
            if fits:
                # It would fit another option; the next loop looks again once these nodes exist.
                plan.not_helped[key] = f"not chosen this loop: fits node group(s) {', '.join(fits)}"
                continue
            reasons = [*common, *per_pod.get(ident, ())]
            message = not_triggered_message(reasons)
            plan.not_helped[key] = message
            if not common and not _LIMIT_REASONS.intersection(reasons):
                plan.fits_no_group.append(key)
            plan.planned_events.append((Event.not_trigger_scale_up(key, message, now), None))
