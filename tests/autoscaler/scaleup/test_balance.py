from _scaleup_helpers import GIB, node, taint

from kubetide.autoscaler.scaleup.balance import BalanceTarget, similar, split


def template(name, zone="a", cpu=4000, mem=16 * GIB, labels=None, **kwargs):
    base = {"topology.kubernetes.io/zone": zone, "kubetide.io/node-group": name, "pool": "general"}
    return node(name, cpu=cpu, mem=mem, labels={**base, **(labels or {})}, **kwargs)


def test_zone_hostname_and_group_labels_are_ignored():
    assert similar(template("g-a", "a"), template("g-b", "b", labels={"eks.amazonaws.com/nodegroup": "x"}))


def test_other_labels_must_match():
    assert not similar(template("g-a"), template("g-b", labels={"pool": "batch"}))
    assert not similar(template("g-a"), template("g-b", labels={"extra": "1"}))


def test_cpu_and_memory_within_five_percent():
    assert similar(template("a", cpu=4000), template("b", cpu=3800))  # 200 <= 5% of 4000
    assert not similar(template("a", cpu=4000), template("b", cpu=3799))
    assert similar(template("a", mem=100 * GIB), template("b", mem=95 * GIB))
    assert not similar(template("a", mem=100 * GIB), template("b", mem=94 * GIB))


def test_other_resources_must_be_exact():
    assert not similar(template("a", pods=110), template("b", pods=109))
    gpu = {"nvidia.com/gpu": 1}
    assert not similar(template("a", **gpu), template("b"))
    assert similar(template("a", **gpu), template("b", **gpu))


def test_taints_must_match():
    t = taint("dedicated", "batch")
    assert not similar(template("a", taints=[t]), template("b"))
    assert similar(template("a", taints=[t]), template("b", taints=[t]))


def test_split_fills_the_smallest_first():
    targets = [BalanceTarget("a", 5, 100), BalanceTarget("b", 2, 100), BalanceTarget("c", 3, 100)]
    # b: 2->5 (3), c: 3->5 (2) = 5 used, then one each: 2 left -> a, b (ties: earlier target first)
    assert split(7, targets) == {"b": 4, "c": 2, "a": 1}


def test_split_respects_max_sizes_and_drops_the_rest():
    targets = [BalanceTarget("a", 0, 2), BalanceTarget("b", 0, 3)]
    deltas = split(10, targets)
    assert deltas == {"a": 2, "b": 3}
    assert split(4, [BalanceTarget("full", 5, 5)]) == {}


def test_split_even_sizes():
    targets = [BalanceTarget(g, 0, 10) for g in "abc"]
    assert split(9, targets) == {"a": 3, "b": 3, "c": 3}
    assert split(4, targets) == {"a": 2, "b": 1, "c": 1}
