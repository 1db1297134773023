"""The AWS provider's flags, as the Cluster Autoscaler spells them. Parsing does no AWS call, so a
bad value is one line and exit 2 before anything is contacted.

    --nodes=MIN:MAX:ASG_NAME                                   (repeatable)
    --node-group-auto-discovery=asg:tag=KEY[=VALUE][,KEY[=VALUE]...]   (repeatable)

A discovery spec selects the Auto Scaling groups carrying every listed tag (with that value when
one is given), e.g. `asg:tag=k8s.io/cluster-autoscaler/enabled,k8s.io/cluster-autoscaler/prod`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from kubetide.errors import UserError

NODES_SYNTAX = "MIN:MAX:ASG_NAME, e.g. --nodes=1:10:my-asg"
DISCOVERY_SYNTAX = (
    "asg:tag=KEY[=VALUE],..., e.g. "
    "--node-group-auto-discovery=asg:tag=k8s.io/cluster-autoscaler/enabled,k8s.io/cluster-autoscaler/my-cluster"
)


@dataclass(frozen=True, slots=True)
class ExplicitGroup:
    """One --nodes flag: this ASG is managed, with these bounds instead of its own."""

    min_size: int
    max_size: int
    name: str


@dataclass(frozen=True, slots=True)
class TagDiscovery:
    """One --node-group-auto-discovery flag: tag key -> required value ("" = any value)."""

    tags: Mapping[str, str]


def parse_nodes_flag(text: str) -> ExplicitGroup:
    parts = text.split(":", 2)
    if len(parts) != 3:
        raise UserError(f"run: --nodes={text}: expected {NODES_SYNTAX}")
    low, high, name = parts
    bounds = []
    for label, value in (("MIN", low), ("MAX", high)):
        if not value.isdigit():
            raise UserError(f"run: --nodes={text}: {label} must be a whole number >= 0, got {value!r}")
        bounds.append(int(value))
    if not name:
        raise UserError(f"run: --nodes={text}: the ASG name is empty ({NODES_SYNTAX})")
    if bounds[1] < bounds[0]:
        raise UserError(f"run: --nodes={text}: MAX ({bounds[1]}) is less than MIN ({bounds[0]})")
    return ExplicitGroup(bounds[0], bounds[1], name)


def parse_discovery_flag(text: str) -> TagDiscovery:
    kind, _, spec = text.partition(":")
    if kind != "asg":
        raise UserError(
            f"run: --node-group-auto-discovery={text}: only asg: is supported ({DISCOVERY_SYNTAX})"
        )
    key, _, pairs = spec.partition("=")
    if key != "tag" or not pairs:
        raise UserError(f"run: --node-group-auto-discovery={text}: expected {DISCOVERY_SYNTAX}")
    tags: dict[str, str] = {}
    for pair in pairs.split(","):
        tag, _, value = pair.partition("=")
        if not tag:
            raise UserError(f"run: --node-group-auto-discovery={text}: empty tag key in {pair!r}")
        tags[tag] = value
    return TagDiscovery(tags)


def parse_aws_flags(
    nodes: Sequence[str], discovery: Sequence[str]
) -> tuple[list[ExplicitGroup], list[TagDiscovery]]:
    """Every --nodes and --node-group-auto-discovery value; at least one must be given."""
    explicit = [parse_nodes_flag(text) for text in nodes]
    seen: set[str] = set()
    for group in explicit:
        if group.name in seen:
            raise UserError(f"run: --nodes: ASG {group.name!r} is named twice")
        seen.add(group.name)
    specs = [parse_discovery_flag(text) for text in discovery]
    if not explicit and not specs:
        raise UserError(
            "run: --cloud-provider aws needs node groups: --nodes=MIN:MAX:ASG_NAME or "
            "--node-group-auto-discovery=asg:tag=..."
        )
    return explicit, specs
