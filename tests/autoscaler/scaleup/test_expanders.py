import random
from fractions import Fraction

import pytest
from _scaleup_helpers import GIB, node, pod

from kubetide.autoscaler.scaleup.expanders import (
    ExpanderContext,
    ExpansionOption,
    choose,
    least_nodes,
    least_waste,
    most_pods,
    parse_priorities,
    preferred_node_cpu,
    price,
    price_score,
    priorities_from_configmap,
    priority,
    waste_score,
)
from kubetide.model import ConfigMap, ObjectMeta


def option(group, count, pods=1, cpu=1000, mem=GIB, node_cpu=4000, node_mem=16 * GIB, price=None, **extra):
    template = node(f"t-{group}", cpu=node_cpu, mem=node_mem, **extra)
    helped = tuple(pod(f"{group}-p{i}", cpu=cpu, mem=mem) for i in range(pods))
    return ExpansionOption(group, count, helped, template, price)


def ctx(**kwargs):
    return ExpanderContext(random.Random(0), **kwargs)


def ids(options):
    return [o.group_id for o in options]


def test_most_pods_keeps_ties():
    options = [option("a", 1, pods=3), option("b", 2, pods=5), option("c", 1, pods=5)]
    assert ids(most_pods(options, ctx())) == ["b", "c"]


def test_least_nodes_keeps_ties():
    options = [option("a", 2), option("b", 1), option("c", 1)]
    assert ids(least_nodes(options, ctx())) == ["b", "c"]


def test_least_waste_exact_arithmetic():
    # a: 2 nodes of 4 cores / 16 GiB for 6 pods of 1 core / 1 GiB:
    #    cpu (8000-6000)/8000 = 1/4, memory (32-6)/32 = 13/16  -> 17/16
    a = option("a", 2, pods=6)
    # b: 1 node of 8 cores / 8 GiB for the same pods: cpu 2/8 = 1/4, memory 2/8 = 1/4 -> 1/2
    b = option("b", 1, pods=6, node_cpu=8000, node_mem=8 * GIB)
    assert waste_score(a) == Fraction(17, 16)
    assert waste_score(b) == Fraction(1, 2)
    assert ids(least_waste([a, b], ctx())) == ["b"]


def test_least_waste_ties_are_exact():
    # Same waste through different shapes: 1/2 + 1/2 vs 3/4 + 1/4.
    a = option("a", 1, pods=1, cpu=2000, mem=8 * GIB, node_cpu=4000, node_mem=16 * GIB)
    b = option("b", 1, pods=1, cpu=1000, mem=12 * GIB, node_cpu=4000, node_mem=16 * GIB)
    assert waste_score(a) == waste_score(b) == 1
    assert ids(least_waste([a, b], ctx())) == ["a", "b"]


def test_priority_highest_matching_regex_wins():
    prios = parse_priorities("10:\n  - .*spot.*\n50:\n  - ^big-.*\n  - gpu\n")
    options = [
        option("small-spot", 1),
        option("big-ondemand", 1),
        option("x-gpu-pool", 1),
        option("other", 1),
    ]
    assert ids(priority(options, ctx(priorities=prios))) == ["big-ondemand", "x-gpu-pool"]


def test_priority_regex_matches_anywhere_unless_anchored():
    prios = parse_priorities("5: [pool]\n9: ['^pool$']\n")
    options = [option("my-pool-1", 1), option("pool", 1)]
    assert ids(priority(options, ctx(priorities=prios))) == ["pool"]
    assert ids(priority([option("my-pool-1", 1)], ctx(priorities=prios))) == ["my-pool-1"]


def test_priority_drops_unmatched_groups():
    prios = parse_priorities("1: [a]\n")
    context = ctx(priorities=prios)
    assert ids(priority([option("a", 1), option("zzz", 1)], context)) == ["a"]
    assert "dropped zzz" in context.trace[0]


def test_priority_without_any_match_keeps_everything():
    context = ctx(priorities=parse_priorities("1: [nomatch]\n"))
    assert ids(priority([option("a", 1), option("b", 1)], context)) == ["a", "b"]
    assert "no node group matches" in context.trace[0]


def test_priority_configmap_format():
    cm = ConfigMap(
        ObjectMeta("cluster-autoscaler-priority-expander", "kube-system"), {"priorities": "3: [x]"}
    )
    assert list(priorities_from_configmap(cm)) == [3]
    with pytest.raises(ValueError, match="no 'priorities' entry"):
        priorities_from_configmap(ConfigMap(ObjectMeta("c", "kube-system"), {}))
    for bad in ("", "[1, 2]", "ten: [a]", '1: ["("]', "1: {a: b}"):
        with pytest.raises(ValueError):
            parse_priorities(bad)


def test_preferred_node_grows_with_the_cluster():
    assert [preferred_node_cpu(n) for n in (1, 2, 3, 6, 7, 20, 60, 200, 201)] == [
        1000,
        1000,
        2000,
        2000,
        4000,
        4000,
        8000,
        16000,
        32000,
    ]


def test_price_prefers_cheaper_and_better_shaped_nodes():
    cheap = option("cheap", 1, price=0.10)
    dear = option("dear", 1, price=0.20)
    assert ids(price([cheap, dear], ctx(cluster_size=10))) == ["cheap"]
    # Same price per node, but a 4-core node fits a 10-node cluster (preferred: 4 cores).
    fit = option("fit", 1, price=0.1, node_cpu=4000)
    huge = option("huge", 1, price=0.1, node_cpu=64000)
    assert price_score(fit, 10) < price_score(huge, 10)
    assert ids(price([fit, huge], ctx(cluster_size=10))) == ["fit"]


def test_price_makes_gpu_groups_unattractive():
    plain = option("plain", 1, price=1.0)
    gpu = option("gpu", 1, price=0.5, **{"nvidia.com/gpu": 1})
    assert ids(price([plain, gpu], ctx(cluster_size=10))) == ["plain"]


def test_price_without_prices_keeps_options():
    context = ctx()
    assert ids(price([option("a", 1), option("b", 1)], context)) == ["a", "b"]
    assert ids(price([option("a", 1), option("b", 1, price=1.0)], ctx())) == ["b"]


def test_chain_narrows_then_random_breaks_ties_with_the_seed():
    options = [option("a", 1, pods=5), option("b", 2, pods=5), option("c", 1, pods=5), option("d", 1, pods=1)]
    picks = {choose(options, ["most-pods", "least-nodes"], ctx()).group_id for _ in range(5)}
    assert picks <= {"a", "c"} and len(picks) == 1
    # Input order does not change a seeded pick.
    assert choose(options[::-1], ["most-pods", "least-nodes"], ctx()).group_id == picks.pop()


def test_chain_with_single_option_and_empty():
    assert choose([option("a", 1)], ["least-waste"], ctx()).group_id == "a"
    assert choose([], ["least-waste"], ctx()) is None
