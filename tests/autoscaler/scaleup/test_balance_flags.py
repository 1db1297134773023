"""CA's balancing flags, pasted as args: which groups a scale-up is balanced over."""

import pytest
from _scaleup_helpers import GIB, FakeGroup, node, replicas

from kubetide.autoscaler.inputs import LoopInputs
from kubetide.autoscaler.options import parse_options
from kubetide.autoscaler.scaleup.balance import similar
from kubetide.autoscaler.scaleup.orchestrator import ScaleUp
from kubetide.clock import WorkTimer
from kubetide.model.node import ZONE_LABEL
from kubetide.snapshot import ClusterSnapshot

BALANCED = ["--balance-similar-node-groups", "--expander=least-nodes"]


def group(gid, zone, cpu=4000, labels=None):
    labels = {ZONE_LABEL: zone, "kubetide.io/node-group": gid, "pool": "general", **(labels or {})}
    return FakeGroup(gid, node(f"{gid}-template", cpu=cpu, mem=16 * GIB, labels=labels), target=0)


def grown(groups, args):
    options = parse_options([*BALANCED, *args], "s.yaml")
    inputs = LoopInputs(1000.0, ClusterSnapshot([node("n1", cpu=10)]), pending=replicas("web", 8, cpu=1000))
    result = ScaleUp(options, timer=WorkTimer(1e-3), seed=1).plan(inputs, node_groups=groups)
    return sorted(i.group_id for i in result.increases)


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ([], ["a"]),  # the team label differs: not similar
        (["--balancing-ignore-label=team"], ["a", "b"]),
        (["--balancing-ignore-label=other", "--balancing-ignore-label=team"], ["a", "b"]),  # repeatable
        (["--balancing-label=pool"], ["a", "b"]),  # only pool is compared
        (["--balancing-label=pool", "--balancing-label=team"], ["a"]),
    ],
)
def test_balancing_labels_choose_the_similar_groups(args, expected):
    groups = [group("a", "z1", labels={"team": "x"}), group("b", "z2", labels={"team": "y"})]
    assert grown(groups, args) == expected


@pytest.mark.parametrize(("ratio", "expected"), [("0.05", ["a"]), ("0.1", ["a", "b"])])
def test_max_allocatable_difference_ratio_bounds_cpu_and_memory(ratio, expected):
    groups = [group("a", "z1", cpu=4000), group("b", "z2", cpu=3700)]  # 7.5% apart
    assert grown(groups, [f"--max-allocatable-difference-ratio={ratio}"]) == expected


def test_a_balancing_label_missing_on_either_side_is_not_similar():
    a = node("a", cpu=1000, labels={"pool": "x"})
    b = node("b", cpu=9000, labels={"pool": "x"})
    assert similar(a, b, only_labels=["pool"])  # labels only: resources are not compared (CA's)
    assert not similar(a, node("c", cpu=1000), only_labels=["pool"])
