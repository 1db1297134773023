"""spec.nodePools: Karpenter's NodePools for `policy: karpenter` (autoscaler/karpenter/nodepools.py).

    nodePools:
      - name: reserved
        weight: 50                        # higher first (0-100, Karpenter's range; default 0)
        requirements:                     # over the node groups' template labels
          - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
        limits: {cpu: "64", memory: 256Gi}  # the most capacity its nodes may have
        disruption:                       # left out: the karpenter-* flags' values
          consolidationPolicy: WhenEmptyOrUnderutilized   # or WhenEmpty, Balanced
          consolidateAfter: 5m
          budgets:
            - nodes: "10%"
            - {nodes: "0", reasons: [Underutilized], schedule: "0 9 * * 1-5", duration: 8h}
        terminationGracePeriod: 1h

The shape is checked by the models below (unknown fields are errors, with a did-you-mean), the
requirements by the Pod reader's own node-selector rules (model/selectors.py), the limits as
Kubernetes quantities; a pool whose requirements select no node group is refused.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from kubetide.autoscaler.karpenter.nodepools import NodePool
from kubetide.cloud.schema import Duration
from kubetide.cloud.schema import StrictModel as _Model
from kubetide.errors import ManifestError
from kubetide.model import Node
from kubetide.model.nodepool import MAX_BUDGETS, REASONS, Budget, budget
from kubetide.model.quantity import QuantityError, parse_capacity
from kubetide.model.reader import Reader
from kubetide.model.selectors import NODE_OPERATORS, parse_requirement
from kubetide.sim.spec.errors import ScenarioError

NAME_PATTERN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"


class RequirementSpec(_Model):
    key: str = Field(min_length=1)
    operator: str
    values: list[str] = Field(default_factory=list)


class BudgetSpec(_Model):
    nodes: str = "10%"
    reasons: list[Literal[REASONS]] = Field(default_factory=list)  # type: ignore[valid-type]
    schedule: str | None = None
    duration: str | None = None


class DisruptionSpec(_Model):
    consolidationPolicy: Literal["WhenEmpty", "WhenEmptyOrUnderutilized", "Balanced"] | None = None
    consolidateAfter: Duration | None = None
    budgets: list[BudgetSpec] | None = Field(default=None, max_length=MAX_BUDGETS)


class NodePoolSpec(_Model):
    name: str = Field(min_length=1, max_length=63, pattern=NAME_PATTERN)
    weight: int = Field(default=0, ge=0, le=100)
    requirements: list[RequirementSpec] = Field(default_factory=list)
    limits: dict[str, str | int] = Field(default_factory=dict)
    disruption: DisruptionSpec = DisruptionSpec()
    terminationGracePeriod: Duration | None = None


def load_node_pools(
    pools: list[NodePoolSpec], templates: dict[str, Node], source: str
) -> tuple[NodePool, ...]:
    """The checked NodePools; `templates`: each node group's template, whose labels the
    requirements must select at least one of."""
    loaded: list[NodePool] = []
    for index, spec in enumerate(pools):
        where = f"spec.nodePools[{index}]"
        if any(p.name == spec.name for p in loaded):
            raise ScenarioError(source, f"{where}.name", f'duplicate NodePool "{spec.name}"')
        requirements = []
        for number, requirement in enumerate(spec.requirements):
            reader = Reader(requirement.model_dump(), source, "", f"{where}.requirements[{number}]")
            try:
                requirements.append(parse_requirement(reader, NODE_OPERATORS))
            except ManifestError as exc:
                raise ScenarioError(source, exc.field, exc.message) from None
        pool = NodePool(
            name=spec.name,
            weight=spec.weight,
            requirements=tuple(requirements),
            limits=tuple(_limits(spec.limits, source, f"{where}.limits")),
            consolidation_policy=spec.disruption.consolidationPolicy,
            consolidate_after=spec.disruption.consolidateAfter,
            budgets=_budgets(spec.disruption.budgets, source, f"{where}.disruption.budgets"),
            termination_grace_period=spec.terminationGracePeriod,
        )
        if not any(pool.admits(template.labels) for template in templates.values()):
            raise ScenarioError(
                source,
                f"{where}.requirements",
                "select no node group (each group's template labels must meet all of them; "
                f"the groups are {', '.join(sorted(templates))})",
            )
        loaded.append(pool)
    return tuple(loaded)


def _limits(limits: dict[str, Any], source: str, where: str) -> list[tuple[str, int]]:
    parsed = []
    for resource, value in limits.items():
        try:
            parsed.append((resource, parse_capacity(resource, value)))
        except QuantityError as exc:
            raise ScenarioError(source, f"{where}.{resource}", str(exc)) from None
    return parsed


def _budgets(budgets: list[BudgetSpec] | None, source: str, where: str) -> tuple[Budget, ...] | None:
    if budgets is None:
        return None
    parsed = []
    for index, entry in enumerate(budgets):
        try:
            parsed.append(budget(entry.nodes, tuple(entry.reasons), entry.schedule, entry.duration))
        except ValueError as exc:
            raise ScenarioError(source, f"{where}[{index}]", str(exc)) from None
    return tuple(parsed)
