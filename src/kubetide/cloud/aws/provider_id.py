"""Node <-> EC2 instance: the providerID the AWS cloud controller gives a Node.

`aws:///<zone>/<instance-id>`, as the Cluster Autoscaler reads it: three slashes (no host), a
zone (which it tolerates empty), and an instance id of lower-case letters, digits and dashes. The
ids of placeholder instances (capacity asked for but not launched yet) take the same form, so the
cluster state registry treats them like any instance that has not registered.
"""

from __future__ import annotations

import re

PROVIDER_ID_PREFIX = "aws:///"
PLACEHOLDER_PREFIX = "i-placeholder-"

_PROVIDER_ID = re.compile(r"^aws:///(?P<zone>[-0-9a-z]*)/(?P<instance>[-0-9a-z]+)$")


def provider_id(zone: str, instance_id: str) -> str:
    return f"{PROVIDER_ID_PREFIX}{zone}/{instance_id}"


def instance_id_of(provider_id_text: str) -> str | None:
    """The instance id in an `aws:///<zone>/<id>` providerID, or None for anything else."""
    match = _PROVIDER_ID.match(provider_id_text)
    return match["instance"] if match else None


def placeholder_id(group: str, index: int) -> str:
    """The instance id standing for the index-th requested, not yet launched, instance of a group."""
    return f"{PLACEHOLDER_PREFIX}{group}-{index}"


def is_placeholder(instance_id: str) -> bool:
    return instance_id.startswith(PLACEHOLDER_PREFIX)
