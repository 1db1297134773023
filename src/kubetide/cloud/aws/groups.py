"""Auto Scaling groups as the provider sees them, read from AWS and cached.

One refresh = one DescribeAutoScalingGroups for the groups named by --nodes plus one per
discovery spec (paginated), and, only for groups whose desired capacity is not backed by live
instances, one DescribeScalingActivities to learn whether AWS failed to launch them. A refresh is
reused for `refresh_interval` (the Cluster Autoscaler's ASG cache refreshes every minute) and
invalidated by the provider's own writes, so a loop after a scale-up sees the group as AWS does.
Writes themselves start from a fresh read: a desired capacity computed from a stale one could
lower it, and AWS would then terminate instances of its own choosing.

A refresh that fails keeps the previous state (stale, not wrong for long) and is retried after
RETRY_AFTER_FAILED_REFRESH; only the first one, at start-up, has nothing to fall back on and
raises.
"""

from __future__ import annotations

import dataclasses
import logging
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from kubetide.autoscaler.ports import InstanceError
from kubetide.cloud.aws.flags import ExplicitGroup, TagDiscovery

log = logging.getLogger("kubetide.cloud.aws")

DEFAULT_REFRESH_INTERVAL = 60.0
RETRY_AFTER_FAILED_REFRESH = 10.0
OUT_OF_RESOURCES = "OutOfResources"
# The Cluster Autoscaler's code for placeholders AWS cannot fulfil, when the activity's message
# names no error code of its own.
UNFULFILLABLE_CODE = "placeholder-cannot-be-fulfilled"
# AWS error codes are CamelCase words (InsufficientInstanceCapacity, VcpuLimitExceeded) that
# launch-failure messages quote.
_ERROR_CODE = re.compile(r"\b([A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+)\b")
_NOT_STARTED = ("Pending",)  # Pending, Pending:Wait, Pending:Proceed
_GOING_AWAY = ("Terminating", "Terminated", "Detaching", "Detached")

AWS_ERRORS = (ClientError, BotoCoreError)


class AwsError(Exception):
    """AWS could not be read; the message is one line."""


@dataclass(frozen=True, slots=True)
class AsgInstance:
    instance_id: str
    zone: str
    lifecycle_state: str

    @property
    def creating(self) -> bool:
        return self.lifecycle_state.startswith(_NOT_STARTED)

    @property
    def going_away(self) -> bool:
        return self.lifecycle_state.startswith(_GOING_AWAY)


@dataclass(frozen=True, slots=True)
class Asg:
    """One Auto Scaling group at one refresh."""

    name: str
    min_size: int
    max_size: int
    desired: int
    instances: tuple[AsgInstance, ...]
    zones: tuple[str, ...]
    tags: Mapping[str, str]
    launch: Mapping[str, Any]  # LaunchTemplate / LaunchConfigurationName / MixedInstancesPolicy
    launch_failure: InstanceError | None = None  # set when desired capacity could not be launched

    @property
    def live_instances(self) -> int:
        """Instances that are, or will be, part of the group (not terminating or detaching)."""
        return sum(1 for i in self.instances if not i.going_away)

    @property
    def unlaunched(self) -> int:
        """Desired capacity with no instance behind it yet."""
        return max(0, self.desired - self.live_instances)


def _asg_from_aws(group: Mapping[str, Any]) -> Asg:
    return Asg(
        name=group["AutoScalingGroupName"],
        min_size=group["MinSize"],
        max_size=group["MaxSize"],
        desired=group["DesiredCapacity"],
        instances=tuple(
            AsgInstance(i["InstanceId"], i.get("AvailabilityZone", ""), i.get("LifecycleState", ""))
            for i in group.get("Instances", [])
        ),
        zones=tuple(group.get("AvailabilityZones", [])),
        tags={t["Key"]: t.get("Value", "") for t in group.get("Tags", [])},
        launch={
            key: group[key]
            for key in ("LaunchTemplate", "LaunchConfigurationName", "MixedInstancesPolicy")
            if group.get(key)
        },
    )


def _discovery_filters(spec: TagDiscovery) -> list[dict[str, Any]]:
    # Filters are ANDed by AWS: a group must carry every tag of the spec.
    return [
        {"Name": f"tag:{key}", "Values": [value]} if value else {"Name": "tag-key", "Values": [key]}
        for key, value in spec.tags.items()
    ]


def launch_failure(activities: Sequence[Mapping[str, Any]], since: datetime | None) -> InstanceError | None:
    """The error of the newest finished scaling activity since `since`, if it failed.

    Activities before our last increase belong to an earlier scale-up (already backed off);
    a success after a failure means AWS got capacity again.
    """
    finished = [
        a
        for a in activities
        if a.get("StatusCode") in ("Successful", "Failed", "Cancelled")
        and (since is None or a["StartTime"] >= since)
    ]
    if not finished:
        return None
    newest = max(finished, key=lambda a: a["StartTime"])
    if newest["StatusCode"] != "Failed":
        return None
    message = newest.get("StatusMessage") or newest.get("Description") or "launching instances failed"
    code = _ERROR_CODE.search(message)
    return InstanceError(OUT_OF_RESOURCES, code[1] if code else UNFULFILLABLE_CODE, message)


class AsgCache:
    def __init__(
        self,
        autoscaling: Any,  # a boto3 "autoscaling" client
        explicit: Sequence[ExplicitGroup],
        discovery: Sequence[TagDiscovery],
        refresh_interval: float = DEFAULT_REFRESH_INTERVAL,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.autoscaling = autoscaling
        self.explicit = list(explicit)
        self.discovery = list(discovery)
        self.refresh_interval = refresh_interval
        self.clock = clock
        self._groups: dict[str, Asg] | None = None
        self._next_refresh = 0.0
        self._instance_group: dict[str, str] = {}
        # When we last raised each group's desired capacity, in AWS's time (the response's Date).
        self._increased_at: dict[str, datetime] = {}

    def groups(self) -> dict[str, Asg]:
        """The managed groups by name, refreshed when due."""
        if self._groups is None or self.clock() >= self._next_refresh:
            self._refresh()
        assert self._groups is not None
        return self._groups

    def fresh_groups(self) -> dict[str, Asg]:
        """The groups as AWS has them now, for a write that must not act on a stale desired
        capacity (AWS would terminate instances of its own choosing). Raises AwsError."""
        try:
            groups = self._describe()
        except AWS_ERRORS as exc:
            raise AwsError(f"reading Auto Scaling groups: {exc}") from None
        self._store(groups)
        return groups

    def group_of_instance(self, instance_id: str) -> str | None:
        self.groups()
        return self._instance_group.get(instance_id)

    def invalidate(self) -> None:
        self._next_refresh = 0.0

    def note_desired(
        self,
        name: str,
        desired: int,
        increased_at: datetime | None = None,
        terminating: Sequence[str] = (),
    ) -> None:
        """Our write succeeded: answer with it until the next refresh reads it back. The
        instances we terminated are Terminating from now on too, so a desired capacity that
        already left them out is never seen beside them still InService (the min-size check
        would count their deletions twice) should the next refresh fail."""
        if increased_at is not None:
            self._increased_at[name] = increased_at
        if self._groups is not None and name in self._groups:
            old = self._groups[name]
            # A new increase is a new attempt: an earlier launch failure no longer applies to it.
            failure = None if increased_at is not None else old.launch_failure
            instances = tuple(
                dataclasses.replace(i, lifecycle_state="Terminating")
                if i.instance_id in terminating and not i.going_away
                else i
                for i in old.instances
            )
            self._groups[name] = dataclasses.replace(
                old, desired=desired, launch_failure=failure, instances=instances
            )
        self.invalidate()

    def _refresh(self) -> None:
        try:
            groups = self._describe()
        except AWS_ERRORS as exc:
            if self._groups is None:
                raise AwsError(f"reading Auto Scaling groups: {exc}") from None
            log.warning("reading Auto Scaling groups failed, using the last state: %s", exc)
            self._next_refresh = self.clock() + RETRY_AFTER_FAILED_REFRESH
            return
        self._store(groups)

    def _store(self, groups: dict[str, Asg]) -> None:
        self._groups = groups
        self._instance_group = {i.instance_id: g.name for g in groups.values() for i in g.instances}
        self._next_refresh = self.clock() + self.refresh_interval

    def _describe(self) -> dict[str, Asg]:
        paginator = self.autoscaling.get_paginator("describe_auto_scaling_groups")
        found: dict[str, Asg] = {}
        if self.explicit:
            names = [g.name for g in self.explicit]
            for page in paginator.paginate(AutoScalingGroupNames=names):
                for group in page["AutoScalingGroups"]:
                    found[group["AutoScalingGroupName"]] = _asg_from_aws(group)
        for spec in self.discovery:
            for page in paginator.paginate(Filters=_discovery_filters(spec)):
                for group in page["AutoScalingGroups"]:
                    found.setdefault(group["AutoScalingGroupName"], _asg_from_aws(group))
        for name, asg in found.items():
            if asg.unlaunched:
                response = self.autoscaling.describe_scaling_activities(AutoScalingGroupName=name)
                failure = launch_failure(response.get("Activities", []), self._increased_at.get(name))
                if failure is not None:
                    found[name] = dataclasses.replace(asg, launch_failure=failure)
        return found
