"""ClusterStateRegistry: what the cloud and Kubernetes disagree about, and whether that is fine.

Updated once per loop with the Node objects and the cloud provider; answers the questions of the
cluster-state-registry design (S1-S4) for the use cases UC1-UC8:

- S1 ``is_cluster_healthy``: too many unjustified unready nodes halt the autoscaler (UC8).
- S2 ``is_node_group_healthy``: a group with too many unready or never-registered nodes is not
  scaled up; nor is one holding any node that registered and never became Ready
  (``never_ready_nodes``, UC3: "do not expand this node pool"), even once its backoff has ended.
- S3 ``upcoming_nodes``: nodes requested or booting that scale-up must count as coming (UC1, UC2).
- S4 scale-up requests: a request not registered within max-node-provision-time, or refused by the
  cloud (instance errors), is a failed scale-up: the group backs off exponentially and
  ``size_fixes`` says how far to lower its target (UC4).
- ``unregistered_nodes_to_delete`` (UC5), ``unready_nodes_at_target`` (UC6), being-deleted nodes (UC7).

Time only comes in as ``now`` arguments; nothing here reads a clock.

Each loop, in order: ``update``; forward ``take_events``; stop if not ``is_cluster_healthy``;
act on ``unregistered_nodes_to_delete`` and ``size_fixes`` (then ``record_unregistered_removed``
/ ``record_target_size_fixed``); scale up with ``upcoming_nodes`` and ``is_node_group_safe_to_scale_up``
(then ``register_scale_up`` or ``register_failed_scale_up``); scale down, holding the drains of
``unready_nodes_at_target`` (UC6: such a node goes once the node controller has removed its pods).
"""

from __future__ import annotations

import dataclasses
import math
import operator
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from kubetide.autoscaler.clusterstate.backoff import BackoffStatus, ExponentialBackoff
from kubetide.autoscaler.clusterstate.readiness import NodeReadiness, Readiness, classify, first_status
from kubetide.autoscaler.clusterstate.records import (
    GroupState,
    HealthRecord,
    NodeCounts,
    ScaleUpRequest,
    SizeFix,
    UnregisteredInstance,
)
from kubetide.autoscaler.events import Event, StatusObject
from kubetide.autoscaler.options import AutoscalerOptions
from kubetide.autoscaler.ports import (
    TO_BE_DELETED_TAINT,
    CloudProvider,
    Instance,
    InstanceError,
    InstanceState,
    NodeGroup,
)
from kubetide.durations import format_duration
from kubetide.model import Node, Taint
from kubetide.snapshot import Memo

OTHER_ERROR = "OtherError"
TIMEOUT_CODE = "timeout"


@dataclass(slots=True)
class _NodeMemory:
    """What the registry remembers about a node between loops."""

    created: float
    seen_ready: bool = False
    unready_seen_at: float | None = None  # first loop it was seen NotReady (since the last Ready)
    deletion_seen_at: float | None = None

    def note(self, *, being_deleted: bool, ready: bool, now: float) -> None:
        """Keep the first loop the node was seen being deleted, and NotReady, since it last was not."""
        if being_deleted:
            if self.deletion_seen_at is None:
                self.deletion_seen_at = now
        else:
            self.deletion_seen_at = None
        if ready:
            self.unready_seen_at = None
        elif self.unready_seen_at is None:
            self.unready_seen_at = now


def _remembered(remembered: _NodeMemory | None, node: Node, now: float) -> _NodeMemory:
    """What is remembered of a node, anew when it is new or was re-created under the same name."""
    created = node.meta.creation_timestamp
    if remembered is None or (created is not None and remembered.created != created):
        return _NodeMemory(created=created if created is not None else now)
    return remembered


def _unready_since(
    readiness: Readiness, node: Node, remembered: _NodeMemory, *, starting: bool
) -> float | None:
    """Since when a not-started or unready node has been so: its Ready condition's transition,
    else what the registry saw (a startup-tainted node counts from its creation)."""
    if readiness not in (Readiness.NOT_STARTED, Readiness.UNREADY):
        return None
    since = remembered.created if starting else node.ready_transition
    if since is not None:
        return since
    return remembered.created if readiness is Readiness.NOT_STARTED else remembered.unready_seen_at


def _deletion_since(readiness: Readiness, taint: Taint | None, remembered: _NodeMemory) -> float | None:
    """Since when a node has been being deleted: its ToBeDeleted taint's time, else first seen."""
    if readiness is not Readiness.BEING_DELETED:
        return None
    since = _taint_time(taint) if taint is not None else None
    return since if since is not None else remembered.deletion_seen_at


@dataclass(slots=True)
class _Scan:
    """One group's raw numbers during an update, before they become a GroupState."""

    group: NodeGroup
    target: int
    records: _GroupRecords
    in_target: int
    fresh: list[str]  # unregistered instance ids within max-node-provision-time
    stale: list[str]  # unregistered instance ids past it
    errored: list[Instance]

    @property
    def not_arrived(self) -> int:
        return self.records.not_arrived

    @property
    def never_ready(self) -> tuple[str, ...]:
        return self.records.never_ready


@dataclass(frozen=True, slots=True)
class _GroupRecords:
    """A group's readiness records and what the update reads of them."""

    records: tuple[NodeReadiness, ...]
    counts: NodeCounts  # without the unregistered instances
    not_arrived: int  # registered nodes never Ready since creation (never being deleted: all in target)
    never_ready: tuple[str, ...]  # past max-node-startup-time and never Ready (UC3), by name

    @classmethod
    def of(cls, records: Sequence[NodeReadiness]) -> _GroupRecords:
        never_ready = sorted(r.name for r in records if r.never_started and r.readiness is Readiness.UNREADY)
        return cls(
            tuple(records),
            _count(records, 0, 0),
            sum(1 for r in records if r.never_started),
            tuple(never_ready),
        )


@dataclass(frozen=True, slots=True)
class _NodePass:
    """What the update reads of a classify pass's nodes and records beyond the records
    themselves. It changes only with them, so a loop whose pass was skipped (the same Node
    objects, all READY: `_still_all_ready`) reuses the last one instead of walking every node
    and record again."""

    registered_ids: frozenset[str]  # the nodes' provider ids
    names_by_provider_id: dict[str, tuple[str, ...]]
    by_group: dict[str | None, _GroupRecords]
    counts: NodeCounts  # of every record, without the unregistered instances

    @classmethod
    def of(cls, nodes: Sequence[Node], records: Mapping[str, NodeReadiness]) -> _NodePass:
        names: dict[str, list[str]] = {}
        for node in nodes:
            names.setdefault(node.provider_id, []).append(node.name)
        grouped: dict[str | None, list[NodeReadiness]] = {}
        for record in records.values():
            grouped.setdefault(record.group_id, []).append(record)
        return cls(
            frozenset(node.provider_id for node in nodes if node.provider_id),
            {provider_id: tuple(of_id) for provider_id, of_id in names.items()},
            {group_id: _GroupRecords.of(of_group) for group_id, of_group in grouped.items()},
            _count(list(records.values()), 0, 0),
        )


@dataclass(slots=True)
class _Shortfall:
    """A group with fewer instances than its target (Cluster Autoscaler's IncorrectNodeGroupSize)."""

    registered: int
    target: int
    first_observed: float


class ClusterStateRegistry:
    def __init__(self, options: AutoscalerOptions):
        self.options = options
        self.backoff = ExponentialBackoff(
            options.initial_node_group_backoff_duration,
            options.max_node_group_backoff_duration,
            options.node_group_backoff_reset_timeout,
        )
        self._last_update: float | None = None
        self._nodes: dict[str, NodeReadiness] = {}
        self._memory: dict[str, _NodeMemory] = {}
        # READY records, tagged with the Node object each was made from. Node objects are
        # immutable, so the same object means the same node; see the fast path in _classify_nodes.
        self._ready: Memo[str, NodeReadiness] = Memo()
        # The nodes and instance->group map of the last pass, kept only when it left every node
        # READY with its group found by its instance: the same Node objects then classify the
        # same while no instance is being deleted, and the pass is skipped (see _classify_nodes).
        self._all_ready: tuple[tuple[Node, ...], dict[str, str]] | None = None
        self._pass: _NodePass | None = None  # of the last classify pass
        self._groups: dict[str, GroupState] = {}
        self._group_of_instance: dict[str, str] = {}
        self._unregistered_since: dict[str, float] = {}
        self._removed_unregistered: set[str] = set()
        self._unregistered_removed_total = 0
        self._errored_seen: set[str] = set()
        self._requests: dict[str, ScaleUpRequest] = {}
        self._shortfalls: dict[str, _Shortfall] = {}
        self._fixed_since_update: set[str] = set()
        self._counts = NodeCounts()
        self._health: HealthRecord | None = None
        self._group_health: dict[str, HealthRecord] = {}
        self._events: list[Event] = []

    # ----------------------------------------------------------------------------------- update

    def update(self, nodes: Sequence[Node], cloud: CloudProvider, now: float) -> None:
        """Take in this loop's view of the cluster and the cloud, and recompute every answer."""
        if self._last_update is not None and now < self._last_update:
            raise ValueError(f"time went backwards ({now} < {self._last_update})")
        groups = list(cloud.node_groups())
        instances: dict[str, list[Instance]] = {}
        instance_by_id: dict[str, Instance] = {}
        self._group_of_instance = {}
        for group in groups:
            listed = list(group.instances())
            instances[group.id] = listed
            for instance in listed:
                instance_by_id[instance.id] = instance
                self._group_of_instance[instance.id] = group.id

        node_pass = self._pass
        if not self._classify_nodes(nodes, cloud, instance_by_id, now) or node_pass is None:
            node_pass = self._pass = _NodePass.of(nodes, self._nodes)
        self.backoff.remove_stale(now)

        registered_ids = node_pass.registered_ids
        # Nodes whose instance the cloud is deleting: already out of the group's target size.
        names_by_provider_id = node_pass.names_by_provider_id
        gone = {
            name
            for instance_id, instance in instance_by_id.items()
            if instance.state is InstanceState.DELETING
            for name in names_by_provider_id.get(instance_id, ())
        }

        # Instances the cloud lists that Kubernetes does not know (yet).
        unregistered_now: set[str] = set()
        errored_now: set[str] = set()
        scans: dict[str, _Scan] = {}
        for group in groups:
            target = group.target_size()
            fresh: list[str] = []
            stale: list[str] = []
            errored: list[Instance] = []
            for instance in instances[group.id]:
                if instance.state is InstanceState.DELETING or instance.id in registered_ids:
                    continue
                if instance.error is not None:
                    errored.append(instance)
                    errored_now.add(instance.id)
                    continue
                unregistered_now.add(instance.id)
                since = self._unregistered_since.setdefault(instance.id, now)
                if now - since > self.options.max_node_provision_time:
                    stale.append(instance.id)
                else:
                    fresh.append(instance.id)
            records = node_pass.by_group.get(group.id, _NO_RECORDS)
            in_target = (
                sum(1 for r in records.records if r.name not in gone) if gone else len(records.records)
            )
            scans[group.id] = _Scan(group, target, records, in_target, fresh, stale, errored)
        self._unregistered_since = {
            i: t for i, t in self._unregistered_since.items() if i in unregistered_now
        }
        self._removed_unregistered &= unregistered_now

        self._handle_instance_errors(scans, now)
        self._errored_seen = errored_now
        self._update_requests(scans, now)

        self._groups = {}
        for group_id, scan in scans.items():
            counts = dataclasses.replace(
                scan.records.counts, unregistered=len(scan.fresh), long_unregistered=len(scan.stale)
            )
            missing = max(
                0, scan.target - scan.in_target - len(scan.fresh) - len(scan.stale) - len(scan.errored)
            )
            upcoming = counts.not_started + len(scan.fresh)
            if not self.backoff.is_backed_off(group_id, now):
                upcoming += missing  # a failed group's missing slots are not coming
            self._groups[group_id] = GroupState(
                id=group_id,
                min_size=scan.group.min_size,
                max_size=scan.group.max_size,
                target=scan.target,
                counts=counts,
                in_target=scan.in_target,
                unregistered=tuple(scan.fresh),
                long_unregistered=tuple(scan.stale),
                errored=tuple(scan.errored),
                missing=missing,
                upcoming=upcoming,
                not_arrived=scan.not_arrived,
                never_ready=scan.never_ready,
            )
        self._update_shortfalls(now)
        self._fixed_since_update = set()

        all_fresh = sum(len(g.unregistered) for g in self._groups.values())
        all_stale = sum(len(g.long_unregistered) for g in self._groups.values())
        self._counts = dataclasses.replace(
            node_pass.counts, unregistered=all_fresh, long_unregistered=all_stale
        )
        self._update_health(now)
        self._count_never_ready_as_upcoming()
        self._last_update = now

    def _classify_nodes(
        self,
        nodes: Sequence[Node],
        cloud: CloudProvider,
        instance_by_id: Mapping[str, Instance],
        now: float,
    ) -> bool:
        """Classify every node; True when the pass was skipped (its records are the last ones)."""
        group_of_instance = self._group_of_instance
        if self._still_all_ready(nodes, group_of_instance, instance_by_id):
            return True  # every record and memory entry is what the pass below would make again
        records: dict[str, NodeReadiness] = {}
        memory: dict[str, _NodeMemory] = {}
        old_memory, ready = self._memory, self._ready
        ready.new_pass()
        all_ready = True
        for node in nodes:
            name = node.name
            provider_id = node.provider_id
            group_id = group_of_instance.get(provider_id) if provider_id else None
            if group_id is None:
                all_ready = False
                group = cloud.node_group_for(node)
                group_id = group.id if group is not None else None
            instance = instance_by_id.get(provider_id) if provider_id else None

            previous = self._still_ready(node, group_id, instance)
            if previous is not None:
                records[name] = previous
                memory[name] = old_memory[name]
                continue

            remembered = memory[name] = _remembered(old_memory.get(name), node, now)
            record = records[name] = self._classify_node(node, group_id, instance, remembered, now)
            if record.readiness is Readiness.READY:
                ready.put(name, record, tag=node)
            else:
                all_ready = False
        self._nodes = records
        self._memory = memory
        self._all_ready = (tuple(nodes), dict(group_of_instance)) if all_ready else None
        return False

    def _still_ready(
        self, node: Node, group_id: str | None, instance: Instance | None
    ) -> NodeReadiness | None:
        """The last pass's READY record of this very Node object, when it still holds.

        The same Node object, still Ready, not tainted (or it would not have been READY), in the
        same group and its instance not being deleted: classify would say READY again with the
        same times, and the memory (seen Ready, no unready or deletion times) is already what a
        pass would leave. Nothing here depends on `now`."""
        previous = self._ready.get(node.name, tag=node)
        if previous is None or previous.group_id != group_id:
            return None
        if instance is not None and instance.state is InstanceState.DELETING:
            return None
        # A pass since (the instance deleting, then not) may have left times in the memory that a
        # pass would now clear: only a memory without them is what a pass would leave.
        memory = self._memory.get(node.name)
        if memory is None or memory.deletion_seen_at is not None or memory.unready_seen_at is not None:
            return None
        return previous

    def _classify_node(
        self,
        node: Node,
        group_id: str | None,
        instance: Instance | None,
        remembered: _NodeMemory,
        now: float,
    ) -> NodeReadiness:
        """One node's readiness record; updates what is remembered about it."""
        taint = next((t for t in node.taints if t.key == TO_BE_DELETED_TAINT), None)
        cloud_deleting = instance is not None and instance.state is InstanceState.DELETING
        being_deleted = taint is not None or cloud_deleting
        # A Ready node with a startup taint (--startup-taint, startup-taint.cluster-autoscaler.
        # kubernetes.io/...) is not capacity yet: CA judges it as a node whose first status
        # is NotReady, so it is coming (not started) within max-node-startup-time.
        starting = node.ready and any(self.options.is_startup_taint(t.key) for t in node.taints)
        is_ready = node.ready and not starting
        remembered.note(being_deleted=being_deleted, ready=is_ready, now=now)

        never_started = (
            not node.ready
            and not being_deleted
            and not remembered.seen_ready
            and first_status(remembered.created, node.ready_transition)
        )
        readiness, reason = classify(
            ready=is_ready,
            being_deleted=being_deleted,
            created=remembered.created,
            ready_transition=remembered.created if starting else node.ready_transition,
            seen_ready=remembered.seen_ready and not starting,
            now=now,
            max_node_startup_time=self.options.max_node_startup_time,
        )
        if starting and readiness is not Readiness.BEING_DELETED:
            reason = f"{reason} (startup taint)"
        record = NodeReadiness(
            name=node.name,
            group_id=group_id,
            readiness=readiness,
            created=remembered.created,
            ready_transition=node.ready_transition,
            unready_since=_unready_since(readiness, node, remembered, starting=starting),
            deletion_since=_deletion_since(readiness, taint, remembered),
            reason=reason,
            never_started=never_started,
        )
        if is_ready:
            remembered.seen_ready = True
        return record

    def _still_all_ready(
        self, nodes: Sequence[Node], group_of_instance: dict[str, str], instance_by_id: Mapping[str, Instance]
    ) -> bool:
        """Whether the last pass left every node READY and nothing it read has changed: the same
        Node objects (immutable), the same instance->group map, no instance being deleted. Then
        each node would take the fast path below; this answers for all of them in C-level
        comparisons (the per-node pass was a tenth of a 300-node simulation's loop)."""
        last = self._all_ready
        if last is None:
            return False
        last_nodes, last_groups = last
        if len(nodes) != len(last_nodes) or not all(map(operator.is_, nodes, last_nodes)):
            return False
        if group_of_instance != last_groups:
            return False
        deleting = InstanceState.DELETING
        return not any(instance.state is deleting for instance in instance_by_id.values())

    def _handle_instance_errors(self, scans: Mapping[str, _Scan], now: float) -> None:
        """Instances the cloud newly failed to create fail the group's running scale-up at once."""
        for group_id, scan in scans.items():
            new = [i for i in scan.errored if i.id not in self._errored_seen]
            request = self._requests.get(group_id)
            if not new or request is None:
                continue
            request.increase -= len(new)
            if request.increase <= 0:
                del self._requests[group_id]
            first = new[0].error
            assert first is not None
            messages = _unique(i.error.message for i in new if i.error is not None)
            error = InstanceError(first.error_class, first.code, "; ".join(messages[:3]))
            self._fail(group_id, error, now)
            self._events.append(
                Event.scale_up_failed(
                    StatusObject.of(self.options),
                    f"Failed adding {len(new)} nodes to group {group_id} due to "
                    f"{first.error_class}.{first.code}; source errors: {error.message}",
                    now,
                )
            )

    def _update_requests(self, scans: Mapping[str, _Scan], now: float) -> None:
        for group_id, request in list(self._requests.items()):
            scan = scans.get(group_id)
            if scan is None:
                del self._requests[group_id]
                continue
            # Fulfilled once the target's nodes have all been Ready: a node registered but never
            # Ready has not arrived, however long ago it registered (UC3).
            if scan.in_target - scan.not_arrived >= scan.target:
                del self._requests[group_id]  # fulfilled: the group has recovered
                self.backoff.remove(group_id, now)
                continue
            if request.expected_add_time < now:
                del self._requests[group_id]
                waited = format_duration(now - request.time)
                cause = next((i.error for i in scan.errored if i.error is not None), None)
                if cause is None:
                    cause = InstanceError(
                        OTHER_ERROR,
                        TIMEOUT_CODE,
                        f"Scale-up timed out for node group {group_id} after {waited}",
                    )
                self._fail(group_id, cause, now)
                self._events.append(
                    Event.scale_up_timed_out(StatusObject.of(self.options), group_id, waited, now)
                )

    def _count_never_ready_as_upcoming(self) -> None:
        """UC3: a node that registered but never became Ready has not arrived, so its scale-up
        request stays open until max-node-provision-time, and until then the node is still the
        capacity that request is waiting for: the pods it was for are not asked for again (which
        would restart the request's clock, so that it never timed out and the broken group was
        grown over and over). Only up to what the request still waits for, and not once the
        group is unhealthy: such nodes are then plainly not coming, and the pods go elsewhere.

        Cluster Autoscaler counts such a node as provisioned once it is max-node-startup-time old;
        with max-node-startup-time shorter than max-node-provision-time its request is then
        fulfilled, the backoff cleared, and the group grown again (docs/architecture.md)."""
        for group_id, request in self._requests.items():
            state = self._groups.get(group_id)
            if state is None or not self.is_node_group_healthy(group_id):
                continue
            awaited = min(len(state.never_ready), max(0, request.increase - state.upcoming))
            if awaited:
                self._groups[group_id] = dataclasses.replace(state, upcoming=state.upcoming + awaited)

    def _update_shortfalls(self, now: float) -> None:
        """Track how long each group has had target slots without a live instance."""
        shortfalls: dict[str, _Shortfall] = {}
        for group_id, state in self._groups.items():
            if state.missing + len(state.errored) <= 0:
                continue
            registered = state.counts.registered
            previous = self._shortfalls.get(group_id)
            if previous is not None and (previous.registered, previous.target) == (registered, state.target):
                shortfalls[group_id] = previous
            else:
                shortfalls[group_id] = _Shortfall(registered, state.target, now)
        self._shortfalls = shortfalls

    def _update_health(self, now: float) -> None:
        counts = self._counts
        healthy = not self._too_many_unready(counts.unready, counts.registered)
        message = (
            f"ready={counts.ready} unready={counts.unready} notStarted={counts.not_started} "
            f"beingDeleted={counts.being_deleted} registered={counts.registered} "
            f"longUnregistered={counts.long_unregistered}"
        )
        self._health = _transition(self._health, healthy, counts.unready, counts.registered, message, now)
        group_health: dict[str, HealthRecord] = {}
        for group_id, state in self._groups.items():
            c = state.counts
            unjustified = c.unready + c.long_unregistered
            total = c.ready + c.unready + c.not_started + c.long_unregistered
            group_healthy = not self._too_many_unready(unjustified, total)
            message = (
                f"ready={c.ready} unready={c.unready} notStarted={c.not_started} "
                f"registered={c.registered} longUnregistered={c.long_unregistered} "
                f"cloudProviderTarget={state.target} (minSize={state.min_size}, maxSize={state.max_size})"
            )
            if state.never_ready:
                message += f"; {never_ready_text(state.never_ready)}"
            group_health[group_id] = _transition(
                self._group_health.get(group_id), group_healthy, unjustified, total, message, now
            )
        self._group_health = group_health

    def _too_many_unready(self, unready: int, total: int) -> bool:
        return (
            unready > self.options.ok_total_unready_count
            and unready > self.options.max_total_unready_percentage / 100.0 * total
        )

    def _fail(self, group_id: str, error: InstanceError, now: float) -> None:
        self.backoff.backoff(group_id, error, now)

    # ---------------------------------------------------------------------------- loop inputs

    def register_scale_up(self, group_id: str, delta: int, now: float) -> None:
        """The loop raised (delta > 0) or lowered a group's target for a scale-up.

        A raise restarts the request's max-node-provision-time clock; a decrease only shrinks it.
        """
        request = self._requests.get(group_id)
        deadline = now + self.options.max_node_provision_time
        if request is None:
            if delta > 0:
                self._requests[group_id] = ScaleUpRequest(group_id, delta, now, deadline)
            return
        if request.increase + delta <= 0:
            del self._requests[group_id]
            return
        request.increase += delta
        if delta > 0:
            request.time = now
            request.expected_add_time = deadline

    def register_failed_scale_up(
        self, group_id: str, reason: str, now: float, message: str = "", error_class: str = OTHER_ERROR
    ) -> None:
        """A scale-up of the group failed (e.g. ``increase_size`` raised): back the group off."""
        self._fail(group_id, InstanceError(error_class, reason, message or reason), now)

    def record_unregistered_removed(self, group_id: str, instance_ids: Iterable[str], now: float) -> None:
        """The loop deleted these unregistered instances (UC5)."""
        ids = [i for i in instance_ids if i not in self._removed_unregistered]
        self._removed_unregistered.update(ids)
        self._unregistered_removed_total += len(ids)

    def record_target_size_fixed(self, group_id: str, decrease: int, now: float) -> None:
        """The loop lowered the group's target by ``decrease`` (S4, UC4)."""
        self._fixed_since_update.add(group_id)
        self._shortfalls.pop(group_id, None)

    # -------------------------------------------------------------------------------- answers

    @property
    def last_update(self) -> float | None:
        return self._last_update

    def take_events(self) -> list[Event]:
        """Events raised since the last call (ScaleUpTimedOut, ScaleUpFailed), oldest first."""
        events, self._events = self._events, []
        return events

    def node(self, name: str) -> NodeReadiness | None:
        return self._nodes.get(name)

    def nodes(self) -> list[NodeReadiness]:
        return list(self._nodes.values())

    def nodes_in(self, readiness: Readiness) -> list[NodeReadiness]:
        return [r for r in self._nodes.values() if r.readiness is readiness]

    def being_deleted_nodes(self) -> set[str]:
        """UC7: names of nodes that are neither unready nor capacity."""
        return {r.name for r in self._nodes.values() if r.readiness is Readiness.BEING_DELETED}

    def node_counts(self) -> NodeCounts:
        return self._counts

    def node_groups(self) -> list[GroupState]:
        """Every group the cloud listed at the last update, in the cloud's order."""
        return list(self._groups.values())

    def node_group(self, group_id: str) -> GroupState | None:
        return self._groups.get(group_id)

    # S1
    def is_cluster_healthy(self) -> bool:
        """Healthy unless unready nodes exceed both ok-total-unready-count and
        max-total-unready-percentage of registered nodes. Only unjustified unready nodes count:
        nodes still starting and nodes being deleted do not."""
        return self._health is None or self._health.healthy

    def cluster_health(self) -> HealthRecord | None:
        return self._health

    # S2
    def is_node_group_healthy(self, group_id: str) -> bool:
        """The same thresholds over the group: unready nodes (including those that never started
        within max-node-startup-time) plus instances that never registered, out of the group's
        ready, unready, starting and long-unregistered nodes."""
        record = self._group_health.get(group_id)
        return record is None or record.healthy

    def node_group_health(self, group_id: str) -> HealthRecord | None:
        return self._group_health.get(group_id)

    def never_ready_nodes(self, group_id: str) -> tuple[str, ...]:
        """UC3: the group's nodes that registered but never became Ready within
        max-node-startup-time, by name. The design's action is "do not expand this node pool":
        scale-up passes the group over while any is left, whether the group is healthy or not
        and whether its backoff has ended or not, until the node turns Ready or is gone (scale-down
        removes it once unneeded for scale-down-unready-time)."""
        state = self._groups.get(group_id)
        return state.never_ready if state is not None else ()

    def is_node_group_safe_to_scale_up(self, group_id: str, now: float) -> bool:
        return (
            self.is_node_group_healthy(group_id)
            and not self.is_backed_off(group_id, now)
            and not self.never_ready_nodes(group_id)
        )

    # S3
    def upcoming_nodes(self) -> dict[str, int]:
        """Nodes per group that will become capacity without another request: registered but not
        started (UC2), created but not registered yet (UC1), and requested slots with no instance
        yet unless the group is backed off. Never negative; groups with none are left out."""
        return {gid: state.upcoming for gid, state in self._groups.items() if state.upcoming > 0}

    # S4
    def scale_up_request(self, group_id: str) -> ScaleUpRequest | None:
        return self._requests.get(group_id)

    def is_node_group_scaling_up(self, group_id: str) -> bool:
        """A registered scale-up whose nodes are still coming."""
        request = self._requests.get(group_id)
        if request is None:
            return False
        state = self._groups.get(group_id)
        if self._last_update is None or request.time >= self._last_update or state is None:
            return True  # requested after the last update: the registry has not seen it yet
        return state.arrived < state.target

    def backoff_status(self, group_id: str, now: float) -> BackoffStatus:
        return self.backoff.status(group_id, now)

    def is_backed_off(self, group_id: str, now: float) -> bool:
        return self.backoff.is_backed_off(group_id, now)

    def size_fixes(self, now: float) -> list[SizeFix]:
        """S4/UC4: target sizes to lower to what exists.

        Instances the cloud failed to create (they carry an error) are dropped at once. Requested
        slots with no instance at all are dropped once the group has stayed short by the same
        amount for longer than max-node-provision-time (Cluster Autoscaler's fixNodeGroupSize).
        Instances that exist but never registered are not counted: UC5 deletes them.
        """
        fixes = []
        for group_id, state in self._groups.items():
            if group_id in self._fixed_since_update:
                continue
            decrease = len(state.errored)
            shortfall = self._shortfalls.get(group_id)
            if (
                state.missing
                and shortfall is not None
                and now - shortfall.first_observed > self.options.max_node_provision_time
            ):
                decrease += state.missing
            # Never below what exists, even if a cloud keeps listing failed instances it dropped.
            live = state.in_target + len(state.unregistered) + len(state.long_unregistered)
            decrease = min(decrease, state.target - live)
            if decrease <= 0:
                continue
            error = state.errored[0].error if state.errored else None
            reason = error.code if error is not None else TIMEOUT_CODE
            fixes.append(
                SizeFix(
                    group_id,
                    decrease,
                    reason,
                    f"Decreasing target size of {group_id} by {decrease}: target={state.target} "
                    f"registered={state.counts.registered} failed={len(state.errored)} "
                    f"missing={state.missing} ({reason})",
                )
            )
        return fixes

    # UC5
    def unregistered_nodes_to_delete(self, now: float) -> dict[str, list[UnregisteredInstance]]:
        """Instances (RUNNING or CREATING, no error) whose id matches no Node's providerID for
        longer than max-node-provision-time, per group, never taking a group below its min size.
        The loop deletes them (event DeleteUnregistered) and calls ``record_unregistered_removed``."""
        result: dict[str, list[UnregisteredInstance]] = {}
        for group_id, state in self._groups.items():
            room = state.target - state.min_size
            chosen: list[UnregisteredInstance] = []
            for instance_id in state.long_unregistered:
                if instance_id in self._removed_unregistered:
                    continue
                if len(chosen) >= room:
                    break
                chosen.append(
                    UnregisteredInstance(group_id, instance_id, self._unregistered_since[instance_id])
                )
            if chosen:
                result[group_id] = chosen
        return result

    # UC6
    def unready_nodes_at_target(self) -> set[str]:
        """UC6's nodes: unready (not starting, not being deleted) in a group whose registered
        nodes equal its target size, so nothing about the group explains them.

        The design includes such a node in scale-down "only if node controller has already
        removed all of its pods": scale-down may delete it when empty, but must not drain it (its
        kubelet cannot stop the pods anyway). How long it has been unready is scale-down's
        timer (scale-down-unready-time), not asked here.
        """
        at_target = {g.id for g in self._groups.values() if g.in_target == g.target}
        return {
            r.name
            for r in self._nodes.values()
            if r.readiness is Readiness.UNREADY and r.group_id in at_target
        }

    @property
    def unregistered_removed_total(self) -> int:
        """Instances the loop has deleted as unregistered (UC5) since start, each once: the
        old_unregistered_nodes_removed_count metric. (The simulator counts its own, per group.)"""
        return self._unregistered_removed_total


def never_ready_text(names: Sequence[str]) -> str:
    """Why a group holding UC3 nodes is not scaled up, in one line (its health text and status)."""
    shown = ", ".join(names[:NEVER_READY_NAMED])
    more = f" +{len(names) - NEVER_READY_NAMED} more" if len(names) > NEVER_READY_NAMED else ""
    return (
        f"neverReady={len(names)} ({shown}{more}): registered, never Ready within "
        "max-node-startup-time; not scaled up until Ready or gone"
    )


# Never-Ready nodes a health line names (the rest are counted).
NEVER_READY_NAMED = 3


def _count(records: Sequence[NodeReadiness], unregistered: int, long_unregistered: int) -> NodeCounts:
    # list.count compares by identity first, in C; a dict tally would hash each enum member in
    # Python, which was most of this function's cost on a 1000-node cluster (runs twice a loop).
    readiness = [record.readiness for record in records]
    return NodeCounts(
        registered=len(records),
        ready=readiness.count(Readiness.READY),
        not_started=readiness.count(Readiness.NOT_STARTED),
        being_deleted=readiness.count(Readiness.BEING_DELETED),
        unready=readiness.count(Readiness.UNREADY),
        long_unregistered=long_unregistered,
        unregistered=unregistered,
    )


# A group without registered nodes.
_NO_RECORDS = _GroupRecords.of(())


def _transition(
    previous: HealthRecord | None, healthy: bool, unready: int, total: int, message: str, now: float
) -> HealthRecord:
    since = now if previous is None or previous.healthy != healthy else previous.last_transition_time
    return HealthRecord(healthy, unready, total, now, since, message)


def _taint_time(taint: Taint) -> float | None:
    """When the ToBeDeleted taint was added: timeAdded, else its value (Unix seconds)."""
    if taint.time_added is not None:
        return taint.time_added
    try:
        value = float(taint.value)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _unique(values: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(values))
