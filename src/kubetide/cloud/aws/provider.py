"""The NodeGroup and CloudProvider ports over AWS Auto Scaling groups.

Cluster Autoscaler's semantics: the target size is the group's DesiredCapacity; growing sets it
(SetDesiredCapacity, HonorCooldown false) within the group's max; deleting chosen nodes
terminates their instances with ShouldDecrementDesiredCapacity, so AWS neither replaces them nor
picks other victims; lowering the target only drops capacity that has no instance yet (AWS would
otherwise choose which running instance to terminate). Every write starts from a fresh read of
the group, for the same reason: a desired capacity computed from a stale one could lower it.

Instances are the group's EC2 instances (Pending* -> CREATING, InService and others -> RUNNING,
Terminating*/Detaching -> DELETING) plus one CREATING placeholder per unit of desired capacity
not backed by an instance. When AWS failed to launch them (a Failed scaling activity since our
last increase, e.g. InsufficientInstanceCapacity) the placeholders carry an OutOfResources
InstanceError: the cluster state registry then backs the group off and lowers its target, as for
the simulator's stockout. Deleting a placeholder lowers the desired capacity by one.

A group's price is the bundled table's (cloud/prices.py) on-demand list price of the dearest
instance type its launch settings name, or None when the table lacks one of them (said once).

Writes retry with botocore's standard retry mode (exponential backoff with jitter, throttling
included); an error that outlasts the retries is an ActionError, which the loop reports (event,
backoff, status) and survives.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from datetime import datetime
from email.utils import parsedate_to_datetime
from typing import Any

from kubetide.autoscaler.ports import (
    TO_BE_DELETED_TAINT,
    ActionError,
    Instance,
    InstanceState,
    PriceError,
    TemplateError,
)
from kubetide.cloud.aws.flags import ExplicitGroup, TagDiscovery
from kubetide.cloud.aws.groups import AWS_ERRORS, DEFAULT_REFRESH_INTERVAL, Asg, AsgCache, AwsError
from kubetide.cloud.aws.provider_id import instance_id_of, is_placeholder, placeholder_id, provider_id
from kubetide.cloud.aws.template import (
    InstanceTypes,
    build_template,
    chooses_by_attributes,
    instance_types_of,
)
from kubetide.cloud.prices import PriceTable, bundled_table
from kubetide.cloud.static import template_from_node
from kubetide.model import Node
from kubetide.snapshot import ClusterSnapshot

log = logging.getLogger("kubetide.cloud.aws")

# Attempts per AWS call (the first plus retries), botocore's standard retry mode.
DEFAULT_MAX_ATTEMPTS = 5


def _aws_time(response: dict[str, Any]) -> datetime | None:
    """When AWS handled the call (its Date header), to compare with its activities' times
    without trusting this machine's clock."""
    date = response.get("ResponseMetadata", {}).get("HTTPHeaders", {}).get("date")
    try:
        return parsedate_to_datetime(date) if date else None
    except ValueError:
        return None


class AwsNodeGroup:
    def __init__(self, name: str, provider: AwsCloudProvider, bounds: ExplicitGroup | None):
        self.name = name
        self.provider = provider
        self.bounds = bounds  # --nodes overrides the ASG's own min and max

    def _asg(self) -> Asg:
        asg = self.provider.cache.groups().get(self.name)
        if asg is None:
            raise ActionError(f"{self.name}: the Auto Scaling group no longer exists")
        return asg

    def _fresh_asg(self) -> Asg:
        try:
            asg = self.provider.cache.fresh_groups().get(self.name)
        except AwsError as exc:
            raise ActionError(f"{self.name}: {exc}") from None
        if asg is None:
            raise ActionError(f"{self.name}: the Auto Scaling group no longer exists")
        return asg

    @property
    def id(self) -> str:
        return self.name

    @property
    def min_size(self) -> int:
        return self.bounds.min_size if self.bounds else self._asg().min_size

    @property
    def max_size(self) -> int:
        return self.bounds.max_size if self.bounds else self._asg().max_size

    def target_size(self) -> int:
        return self._asg().desired

    def increase_size(self, delta: int) -> None:
        if delta <= 0:
            raise ActionError(f"{self.name}: size increase must be positive, got {delta}")
        desired = self._fresh_asg().desired + delta
        if desired > self.max_size:
            raise ActionError(f"{self.name}: size increase too large: desired {desired}, max {self.max_size}")
        response = self._set_desired(desired)
        self.provider.cache.note_desired(
            self.name, desired, increased_at=_aws_time(response) or datetime.now().astimezone()
        )

    def decrease_target_size(self, delta: int) -> None:
        if delta >= 0:
            raise ActionError(f"{self.name}: size decrease must be negative, got {delta}")
        asg = self._fresh_asg()
        desired = asg.desired + delta
        if desired < asg.live_instances:
            raise ActionError(
                f"{self.name}: attempt to delete existing nodes: target {asg.desired}, delta {delta}, "
                f"existing instances {asg.live_instances}"
            )
        self._set_desired(desired)
        self.provider.cache.note_desired(self.name, desired)

    def delete_nodes(self, nodes: Sequence[Node]) -> None:
        asg = self._fresh_asg()
        members = {i.instance_id: i for i in asg.instances}
        terminate: list[str] = []
        placeholders = 0
        for node in nodes:
            instance_id = instance_id_of(node.provider_id)
            if instance_id is not None and is_placeholder(instance_id):
                placeholders += 1
                continue
            instance = members.get(instance_id or "")
            if instance is None:
                raise ActionError(
                    f"{self.name}: node {node.name} ({node.provider_id or 'no providerID'}) is not in this group"
                )
            if not instance.going_away and instance_id not in terminate:
                terminate.append(instance.instance_id)
        if placeholders > asg.unlaunched:
            # Launched meanwhile: lowering the desired capacity now would terminate a live instance.
            raise ActionError(
                f"{self.name}: {placeholders} requested instances to drop, but only {asg.unlaunched} "
                "are not launched yet"
            )
        removed = len(terminate) + placeholders
        if asg.desired - removed < self.min_size:
            raise ActionError(
                f"{self.name}: min size reached: deleting {removed} of {asg.desired} would go below {self.min_size}"
            )
        autoscaling = self.provider.autoscaling
        try:
            for instance_id in terminate:
                autoscaling.terminate_instance_in_auto_scaling_group(
                    InstanceId=instance_id, ShouldDecrementDesiredCapacity=True
                )
        except AWS_ERRORS as exc:
            self.provider.cache.invalidate()
            raise ActionError(f"{self.name}: terminating instance {instance_id}: {exc}") from None
        desired = asg.desired - len(terminate)
        if placeholders:
            desired -= placeholders
            self._set_desired(desired)
        self.provider.cache.note_desired(self.name, desired, terminating=terminate)

    def _set_desired(self, desired: int) -> dict[str, Any]:
        try:
            return dict(
                self.provider.autoscaling.set_desired_capacity(
                    AutoScalingGroupName=self.name, DesiredCapacity=desired, HonorCooldown=False
                )
            )
        except AWS_ERRORS as exc:
            self.provider.cache.invalidate()
            raise ActionError(f"{self.name}: setting desired capacity to {desired}: {exc}") from None

    def instances(self) -> Sequence[Instance]:
        asg = self._asg()
        result = []
        for instance in asg.instances:
            if instance.going_away:
                state = InstanceState.DELETING
            elif instance.creating:
                state = InstanceState.CREATING
            else:
                state = InstanceState.RUNNING
            result.append(Instance(provider_id(instance.zone, instance.instance_id), state))
        zone = asg.zones[0] if asg.zones else ""
        live = asg.live_instances
        for index in range(live, live + asg.unlaunched):
            result.append(
                Instance(
                    provider_id(zone, placeholder_id(self.name, index)),
                    InstanceState.CREATING,
                    asg.launch_failure,
                )
            )
        return result

    def template_node(self) -> Node:
        """From a live node of the group when one is Ready (its allocatable is what the kubelet
        really reserves, as CA prefers), else from the instance type and the group's tags.
        Raises TemplateError when the group is gone or AWS does not say what it launches."""
        live = self.provider.live_member(self.name)
        if live is not None:
            return template_from_node(live, self.name)
        try:
            return self.provider.template_from_aws(self._asg())
        except (AwsError, ActionError) as exc:
            raise TemplateError(self.id, str(exc)) from None

    def price_per_hour(self) -> float | None:
        """The on-demand list price of the dearest instance type the group may launch, from
        kubetide's bundled table (cloud/prices.py); None when the table does not know one of
        them. Raises PriceError when AWS cannot say what the group launches."""
        try:
            return self.provider.price_of(self._asg())
        except (AwsError, ActionError) as exc:
            raise PriceError(self.id, str(exc)) from None


class AwsCloudProvider:
    """Managed groups: those named by --nodes plus those the discovery specs find, re-read at
    every refresh of the ASG cache."""

    def __init__(
        self,
        autoscaling: Any,
        ec2: Any,
        region: str,
        explicit: Sequence[ExplicitGroup],
        discovery: Sequence[TagDiscovery],
        *,
        snapshot: Callable[[], ClusterSnapshot] | None = None,
        refresh_interval: float = DEFAULT_REFRESH_INTERVAL,
        clock: Callable[[], float] | None = None,
    ):
        self.autoscaling = autoscaling
        self.ec2 = ec2
        self.region = region
        self.explicit = {g.name: g for g in explicit}
        self.cache = AsgCache(autoscaling, explicit, discovery, refresh_interval, clock or time.monotonic)
        self.instance_types = InstanceTypes(ec2)
        self._snapshot = snapshot
        self._groups: dict[str, AwsNodeGroup] = {}
        self._templates: dict[str, tuple[tuple[Any, ...], Node]] = {}
        # Per group: its launch settings and the instance types they launch, then its price.
        self._launch_types: dict[str, tuple[Any, tuple[str, ...]]] = {}
        self._prices: dict[str, tuple[Any, float | None]] = {}
        self.price_table: PriceTable = bundled_table()

    def check_explicit_groups(self) -> None:
        """Read AWS once; every ASG named by --nodes must exist. Raises AwsError."""
        groups = self.cache.groups()
        missing = [name for name in self.explicit if name not in groups]
        if missing:
            raise AwsError(
                f"--nodes: no Auto Scaling group named {', '.join(missing)} in region {self.region}"
            )

    def node_groups(self) -> Sequence[AwsNodeGroup]:
        return [self._group(name) for name in self.cache.groups()]

    def node_group_for(self, node: Node) -> AwsNodeGroup | None:
        instance_id = instance_id_of(node.provider_id)
        name = self.cache.group_of_instance(instance_id) if instance_id else None
        return self._group(name) if name is not None else None

    def _group(self, name: str) -> AwsNodeGroup:
        # One object per group for the life of the process, as the loop may hold on to it.
        group = self._groups.get(name)
        if group is None:
            group = self._groups[name] = AwsNodeGroup(name, self, self.explicit.get(name))
        return group

    def live_member(self, group: str) -> Node | None:
        """A Ready, schedulable node of the group that is not being deleted, if the view has one."""
        if self._snapshot is None:
            return None
        asg = self.cache.groups().get(group)
        if asg is None:
            return None
        members = {i.instance_id for i in asg.instances if not i.going_away}
        for node in self._snapshot().nodes():
            if (
                instance_id_of(node.provider_id) in members
                and node.ready
                and not node.unschedulable
                and not node.has_taint(TO_BE_DELETED_TAINT)
            ):
                return node
        return None

    def template_from_aws(self, asg: Asg) -> Node:
        """Rebuilt only when the group's launch settings, tags or zones change: a launch template
        version named $Latest or $Default is read again only then."""
        key = (asg.launch, asg.tags, asg.zones)
        cached = self._templates.get(asg.name)
        if cached is not None and cached[0] == key:
            return cached[1]
        instance_type = self.launch_types(asg)[0]
        node = build_template(asg, self.instance_types.get(instance_type), self.region)
        self._templates[asg.name] = (key, node)
        return node

    def launch_types(self, asg: Asg) -> tuple[str, ...]:
        """The instance types the group launches (template.instance_types_of), read again only
        when its launch settings change. Raises AwsError."""
        cached = self._launch_types.get(asg.name)
        if cached is not None and cached[0] == asg.launch:
            return cached[1]
        types = instance_types_of(asg, self.autoscaling, self.ec2)
        self._launch_types[asg.name] = (asg.launch, types)
        return types

    def price_of(self, asg: Asg) -> float | None:
        """The group's price per node-hour, worked out (and said in the log) once per launch
        settings. A mixed instances group may launch any of its types (its allocation strategy,
        capacity and spot decide which), so it is priced at the dearest: a replacement onto it
        must save even then, and the price expander never takes it for cheaper than it may be.
        Raises AwsError."""
        cached = self._prices.get(asg.name)
        if cached is not None and cached[0] == asg.launch:
            return cached[1]
        price = self._work_out_price(asg)
        self._prices[asg.name] = (asg.launch, price)
        return price

    def _work_out_price(self, asg: Asg) -> float | None:
        skipped = "no price: cheaper-group replacement and the price expander pass the group over"
        if chooses_by_attributes(asg):
            log.warning(
                "%s: %s (its mixed instances policy chooses instance types by attributes)", asg.name, skipped
            )
            return None
        types = self.launch_types(asg)
        guesses = [self.price_table.guess(t) for t in types]
        unknown = [t for t, g in zip(types, guesses, strict=True) if g is None or g.provider != "aws"]
        if unknown:
            log.warning(
                "%s: %s (%s not in kubetide's AWS price table of %s)",
                asg.name,
                skipped,
                ", ".join(unknown),
                self.price_table.date,
            )
            return None
        dearest = max((g for g in guesses if g is not None), key=lambda g: g.price)
        log.info(
            "%s: priced at $%g/h, %s%s",
            asg.name,
            dearest.price,
            dearest.describe(),
            f", the dearest of {', '.join(types)}" if len(types) > 1 else "",
        )
        return dearest.price
