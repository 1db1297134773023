"""Expanders: which of the possible scale-ups to do.

Each expander narrows a list of expansion options to the ones it likes best and keeps ties; the
`expander` flag chains them (`priority,least-waste`), each working on what the previous one kept,
and a final random choice with a seeded `random.Random` breaks any remaining tie, so a scenario
replays the same decisions. An expander that has nothing to go on (no priority configuration, no
prices) keeps its input unchanged rather than dropping every option, so a misconfiguration
costs a preference, not the scale-up; the reason is noted in the trace.

Rules, from the Cluster Autoscaler's expanders:

- random: one option, uniformly.
- most-pods: the options that help the most pods.
- least-nodes: the options that add the fewest nodes.
- least-waste: lowest (cap_cpu*n - req_cpu)/(cap_cpu*n) + (cap_mem*n - req_mem)/(cap_mem*n), with
  `cap` the template node's capacity, `n` the node count and `req` the helped pods' requests.
  Computed with exact fractions, so equal scores really tie (CA compares floats).
- price: lowest score = unfitness * (node_price*n + s) / (pod_price + s). `s` is the price of a
  stabilisation pod (500m, 500 MiB) that keeps tiny requests from dominating. Unfitness compares
  the template's CPU with a preferred node size that doubles each time the cluster triples
  (1 core up to 2 nodes, 2 up to 6, 4 up to 20, 8 up to 60, 16 up to 200, 32 beyond) as
  max(pref/cpu, cpu/pref), and is damped as the option's node count grows
  ((u-1)*(1-tanh((n-1)/15))+1); groups with GPUs get a fixed unfitness of 1000 so they are only
  chosen for pods that need them. Our simplification: CA asks the cloud's pricing model for pod
  prices; kubetide prices a pod at fixed reference rates (GCE n1 on-demand: $0.033174 per core-hour
  and $0.004446 per GiB-hour) since NodeGroup only offers a node price. The pod price is the same
  for every option that helps the same pods, so only the node price and the shape decide.
- priority: Cluster Autoscaler's `cluster-autoscaler-priority-expander` ConfigMap, key
  `priorities`, YAML `integer -> [regex, ...]`. A group's priority is the highest one with a regex
  that matches anywhere in its id (Go's FindStringIndex, i.e. Python's `re.search`; anchor with
  ^...$ for a full match). Options with the highest priority survive; groups that match no regex
  are dropped, unless no group matches at all, when every option survives. (CA starts its search
  at -1, so priorities below -1 can never win there; kubetide ranks any integer.)

- grpc: Cluster Autoscaler's external expander protocol. The options go to a service (the
  `ExpanderService` port; kubetide/grpcexpander/ calls it over gRPC) and the ones it names come
  back. As in CA: if the call fails or times out, or names no option we offered, every option is
  kept for the next expander (and the final random choice); if it answers with no option at all,
  nothing is chosen and there is no scale-up this loop.
"""

from __future__ import annotations

import math
import random
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Protocol

import yaml

from kubetide.model import ConfigMap, Node, Pod
from kubetide.model.quantity import CPU, MEMORY

PRIORITY_CONFIGMAP = "cluster-autoscaler-priority-expander"
PRIORITY_KEY = "priorities"

GIB = 2**30
CORE_HOUR_PRICE = 0.033174
GIB_HOUR_PRICE = 0.004446
STABILISATION_CPU, STABILISATION_MEMORY = 500, 500 * 2**20
GPU_UNFITNESS = 1000.0


@dataclass(frozen=True, slots=True)
class ExpansionOption:
    """Growing `group_id` by `node_count` nodes would let `pods` schedule."""

    group_id: str
    node_count: int
    pods: tuple[Pod, ...]
    template: Node  # the group's template node (capacity, labels; GPUs)
    price_per_hour: float | None = None
    requested: Mapping[str, int] | None = None  # total requests of `pods`, when already known

    def total(self, resource: str) -> int:
        if self.requested is not None:
            return self.requested.get(resource, 0)
        return sum(p.requests.get(resource, 0) for p in self.pods)

    @property
    def pod_keys(self) -> list[str]:
        return [p.key for p in self.pods]


@dataclass(slots=True)
class ExpanderContext:
    rng: random.Random
    cluster_size: int = 0  # nodes in the cluster now, for the price expander's preferred node
    priorities: Mapping[int, Sequence[re.Pattern[str]]] | None = None
    service: ExpanderService | None = None  # the grpc expander's
    trace: list[str] = field(default_factory=list)


Expander = Callable[[list[ExpansionOption], ExpanderContext], list[ExpansionOption]]


class ExpanderServiceError(Exception):
    """The expander service could not answer (unreachable, timed out, refused, malformed)."""


class ExpanderService(Protocol):
    """An external expander (Cluster Autoscaler's BestOptions call): given the options, the ids
    of the node groups it prefers, best first; an empty answer means none. Raises
    ExpanderServiceError when it cannot answer."""

    def best_options(self, options: Sequence[ExpansionOption]) -> Sequence[str]: ...

    def close(self) -> None: ...


def _keep_best(
    options: list[ExpansionOption],
    score: Callable[[ExpansionOption], Fraction | float],
    lower_is_better: bool,
) -> list[ExpansionOption]:
    scores = [score(o) for o in options]
    best = min(scores) if lower_is_better else max(scores)
    return [o for o, s in zip(options, scores) if s == best]


def random_expander(options: list[ExpansionOption], ctx: ExpanderContext) -> list[ExpansionOption]:
    return [ctx.rng.choice(options)] if options else []


def most_pods(options: list[ExpansionOption], ctx: ExpanderContext) -> list[ExpansionOption]:
    return _keep_best(options, lambda o: len(o.pods), lower_is_better=False)


def least_nodes(options: list[ExpansionOption], ctx: ExpanderContext) -> list[ExpansionOption]:
    return _keep_best(options, lambda o: o.node_count, lower_is_better=True)


def _capacity(node: Node, resource: str) -> int:
    return node.capacity.get(resource) or node.allocatable.get(resource, 0)


def waste_score(option: ExpansionOption) -> Fraction:
    """The least-waste score, exactly. A resource the template lacks adds nothing."""
    total = Fraction(0)
    for resource in (CPU, MEMORY):
        available = _capacity(option.template, resource) * option.node_count
        if available <= 0:
            continue
        total += Fraction(available - option.total(resource), available)
    return total


def least_waste(options: list[ExpansionOption], ctx: ExpanderContext) -> list[ExpansionOption]:
    return _keep_best(options, waste_score, lower_is_better=True)


def preferred_node_cpu(cluster_size: int) -> int:
    """Millicores of the node size CA prefers for a cluster of this many nodes."""
    for limit, cores in ((2, 1), (6, 2), (20, 4), (60, 8), (200, 16)):
        if cluster_size <= limit:
            return cores * 1000
    return 32 * 1000


def _has_gpu(node: Node) -> bool:
    return any(r.endswith("/gpu") and v > 0 for r, v in node.allocatable.items())


def pod_price(cpu_millis: int, memory_bytes: int) -> float:
    return cpu_millis / 1000 * CORE_HOUR_PRICE + memory_bytes / GIB * GIB_HOUR_PRICE


def price_score(option: ExpansionOption, cluster_size: int) -> float | None:
    if option.price_per_hour is None:
        return None
    node_cost = option.price_per_hour * option.node_count
    pods_cost = pod_price(option.total(CPU), option.total(MEMORY))
    stabiliser = pod_price(STABILISATION_CPU, STABILISATION_MEMORY)
    ratio = (node_cost + stabiliser) / (pods_cost + stabiliser)
    if _has_gpu(option.template):
        unfitness = GPU_UNFITNESS
    else:
        preferred = preferred_node_cpu(cluster_size)
        cpu = _capacity(option.template, CPU) or 1
        raw = max(preferred / cpu, cpu / preferred)
        unfitness = (raw - 1.0) * (1.0 - math.tanh((option.node_count - 1) / 15.0)) + 1.0
    return unfitness * ratio


def price(options: list[ExpansionOption], ctx: ExpanderContext) -> list[ExpansionOption]:
    scored = [(o, price_score(o, ctx.cluster_size)) for o in options]
    priced = [(o, s) for o, s in scored if s is not None]
    if not priced:
        ctx.trace.append("price: no node group has a price; keeping every option")
        return options
    if len(priced) < len(scored):
        unpriced = ", ".join(o.group_id for o, s in scored if s is None)
        ctx.trace.append(f"price: dropped {unpriced} (no price)")
    best = min(s for _, s in priced)
    return [o for o, s in priced if s == best]


def parse_priorities(text: str) -> dict[int, list[re.Pattern[str]]]:
    """The `priorities` value of the priority expander's ConfigMap. Raises ValueError."""
    if not text or not text.strip():
        raise ValueError(f"the {PRIORITY_KEY} entry is empty")
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ValueError(f"cannot parse the {PRIORITY_KEY} YAML: {exc}") from None
    return priorities_from_mapping(data)


def priorities_from_mapping(data: object) -> dict[int, list[re.Pattern[str]]]:
    """Priorities given as data (a scenario's `expanderPriorities`): integer -> regex list."""
    if not isinstance(data, Mapping):
        raise ValueError(f"{PRIORITY_KEY} must map integers to lists of regular expressions")
    result: dict[int, list[re.Pattern[str]]] = {}
    for raw_priority, patterns in data.items():
        if isinstance(raw_priority, bool):
            raise ValueError(f"priority {raw_priority!r} is not an integer")
        try:
            priority = int(raw_priority)
        except (TypeError, ValueError):
            raise ValueError(f"priority {raw_priority!r} is not an integer") from None
        if isinstance(patterns, str | re.Pattern):
            patterns = [patterns]
        if not isinstance(patterns, list | tuple) or not all(
            isinstance(p, str | re.Pattern) for p in patterns
        ):
            raise ValueError(f"priority {priority}: expected a list of regular expressions")
        for pattern in patterns:
            if isinstance(pattern, re.Pattern):
                result.setdefault(priority, []).append(pattern)
                continue
            try:
                result.setdefault(priority, []).append(re.compile(pattern))
            except re.error as exc:
                raise ValueError(f"priority {priority}: bad regular expression {pattern!r}: {exc}") from None
    return result


def priorities_from_configmap(configmap: ConfigMap) -> dict[int, list[re.Pattern[str]]]:
    if PRIORITY_KEY not in configmap.data:
        raise ValueError(f"ConfigMap {configmap.meta.key} has no {PRIORITY_KEY!r} entry")
    return parse_priorities(configmap.data[PRIORITY_KEY])


def group_priority(group_id: str, priorities: Mapping[int, Sequence[re.Pattern[str]]]) -> int | None:
    """The highest priority with a regex matching the group id, or None."""
    matching = [p for p, patterns in priorities.items() if any(r.search(group_id) for r in patterns)]
    return max(matching) if matching else None


def priority(options: list[ExpansionOption], ctx: ExpanderContext) -> list[ExpansionOption]:
    if ctx.priorities is None:
        ctx.trace.append(f"priority: no {PRIORITY_CONFIGMAP} configuration; keeping every option")
        return options
    ranked = [(o, group_priority(o.group_id, ctx.priorities)) for o in options]
    matched = [(o, p) for o, p in ranked if p is not None]
    if not matched:
        ctx.trace.append("priority: no node group matches any priority; keeping every option")
        return options
    unmatched = [o.group_id for o, p in ranked if p is None]
    if unmatched:
        ctx.trace.append(f"priority: dropped {', '.join(unmatched)} (no matching priority)")
    best = max(p for _, p in matched)
    return [o for o, p in matched if p == best]


def grpc(options: list[ExpansionOption], ctx: ExpanderContext) -> list[ExpansionOption]:
    if ctx.service is None:
        ctx.trace.append("grpc: no expander service configured; keeping every option")
        return options
    try:
        named = list(ctx.service.best_options(options))
    except ExpanderServiceError as exc:
        ctx.trace.append(f"grpc: the expander service failed ({exc}); keeping every option")
        return options
    if not named:
        ctx.trace.append("grpc: the expander service chose no option")
        return []
    by_id = {o.group_id: o for o in options}
    unknown = [g for g in named if g not in by_id]
    if unknown:
        ctx.trace.append(f"grpc: ignored node group(s) not among the options: {', '.join(unknown)}")
    kept = [by_id[g] for g in dict.fromkeys(named) if g in by_id]
    if not kept:
        ctx.trace.append("grpc: no known node group in the answer; keeping every option")
        return options
    return kept


EXPANDERS: dict[str, Expander] = {
    "random": random_expander,
    "most-pods": most_pods,
    "least-nodes": least_nodes,
    "least-waste": least_waste,
    "price": price,
    "priority": priority,
    "grpc": grpc,
}
# Expanders whose empty answer is a decision ("none of these"), not a lack of information.
DECISIVE_WHEN_EMPTY = frozenset({"grpc"})


def choose(
    options: Sequence[ExpansionOption], chain: Sequence[str], ctx: ExpanderContext
) -> ExpansionOption | None:
    """Run the expander chain, then break a remaining tie at random (seeded)."""
    remaining = list(options)
    for name in chain:
        if len(remaining) <= 1:
            break
        narrowed = EXPANDERS[name](remaining, ctx)
        ctx.trace.append(f"{name}: {', '.join(o.group_id for o in narrowed) or '(none)'}")
        if not narrowed and name in DECISIVE_WHEN_EMPTY:
            return None
        remaining = narrowed or remaining
    if not remaining:
        return None
    if len(remaining) == 1:
        return remaining[0]
    # Order by id first, so the draw depends on the seed only, not on the input order.
    remaining.sort(key=lambda o: o.group_id)
    picked = ctx.rng.choice(remaining)
    ctx.trace.append(f"random tie-break: {picked.group_id}")
    return picked
