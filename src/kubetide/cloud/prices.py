"""Guessing a node group's price from its nodes' instance type: a bundled, dated table.

A dump says what each node is (node.kubernetes.io/instance-type) but not what it costs. For the
common AWS, GCP and Azure types, data/prices/instance-prices.yaml holds the on-demand Linux list
price in one region, and the month it was taken; `scenario from-cluster` uses it, says it is a
guess and from when, when no GROUPS.yaml gives a price.
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from importlib import resources

import yaml

from kubetide.model import Node

TABLE = "data/prices/instance-prices.yaml"
INSTANCE_TYPE_LABELS = ("node.kubernetes.io/instance-type", "beta.kubernetes.io/instance-type")
PROVIDER_NAMES = {"aws": "AWS", "gcp": "GCP", "azure": "Azure"}


@dataclass(frozen=True)
class PriceGuess:
    price: float  # USD per node-hour
    instance_type: str
    provider: str  # aws, gcp, azure
    region: str
    date: str  # when the table's prices were taken, YYYY-MM

    def describe(self) -> str:
        """`m6i.xlarge's AWS us-east-1 on-demand list price (kubetide's table of 2026-06)`."""
        return (
            f"{self.instance_type}'s {PROVIDER_NAMES[self.provider]} {self.region} on-demand list "
            f"price (kubetide's table of {self.date})"
        )


@dataclass(frozen=True)
class PriceTable:
    date: str
    regions: Mapping[str, str]
    prices: Mapping[str, tuple[str, float]]  # instance type -> (provider, USD per hour)

    def guess(self, instance_type: str) -> PriceGuess | None:
        found = self.prices.get(instance_type)
        if found is None:
            return None
        provider, price = found
        return PriceGuess(price, instance_type, provider, self.regions[provider], self.date)


@functools.cache
def bundled_table() -> PriceTable:
    text = resources.files("kubetide").joinpath(TABLE).read_text(encoding="utf-8")
    return parse_table(yaml.safe_load(text))


def parse_table(data: Mapping) -> PriceTable:
    prices: dict[str, tuple[str, float]] = {}
    for provider in PROVIDER_NAMES:
        for instance_type, price in (data.get(provider) or {}).items():
            prices[str(instance_type)] = (provider, float(price))
    return PriceTable(str(data["date"]), dict(data["regions"]), prices)


def instance_type(node: Node) -> str | None:
    for label in INSTANCE_TYPE_LABELS:
        value = node.labels.get(label)
        if value:
            return value
    return None


def guess_group_price(nodes: Iterable[Node], table: PriceTable | None = None) -> PriceGuess | None:
    """The price of the instance type most of the nodes have (the first seen on a tie), when the
    table knows it."""
    types = Counter(t for t in map(instance_type, nodes) if t is not None)
    if not types:
        return None
    common = types.most_common(1)[0][0]
    return (table or bundled_table()).guess(common)
