"""The sorters: who goes first. Table-driven: each row lists pods in the expected order."""

import pytest
from qos_factories import pod, ps

from kubetide.qos import cpu_sorter, general_sorter, memory_sorter
from kubetide.qos.extcpu import ext_cpu_sorter
from kubetide.qos.sorters import (
    compare_class_and_priority,
    compare_ext_cpu,
    compare_qos_class,
    compare_running_time,
)

BE = {}  # BestEffort: no requests or limits
BU = {"cpu": "100m"}  # Burstable
GU = {"cpu": "1", "cpu_limit": "1", "memory": "1Gi", "memory_limit": "1Gi"}  # Guaranteed


def keys(pods):
    return [p.pod.name for p in pods]


def test_qos_class_order_is_besteffort_burstable_guaranteed():
    be, bu, gu = ps(pod("be", **BE)), ps(pod("bu", **BU)), ps(pod("gu", **GU))
    assert [be.pod.qos_class, bu.pod.qos_class, gu.pod.qos_class] == ["BestEffort", "Burstable", "Guaranteed"]
    assert compare_qos_class(be, bu) < 0 < compare_qos_class(gu, bu)


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        # the QoS class decides before the priority value (the design's classAndPriority)
        (pod("be-high", priority=1000, **BE), pod("gu-low", priority=-5, **GU), -1),
        (pod("bu-high", priority=1000, **BU), pod("gu-low", priority=-5, **GU), -1),
        (pod("gu-low", priority=-5, **GU), pod("be-high", priority=1000, **BE), 1),
        # the same class: the lower priority value first
        (pod("bu-low", priority=0, **BU), pod("bu-high", priority=10, **BU), -1),
        (pod("a", priority=7, **BU), pod("b", priority=7, **BU), 0),
    ],
)
def test_class_and_priority_compares_the_qos_class_first(a, b, expected):
    assert compare_class_and_priority(ps(a), ps(b)) == expected


@pytest.mark.parametrize(
    ("pods", "expected"),
    [
        # the QoS class first, whatever the priority: BestEffort < Burstable < Guaranteed
        (
            [
                ps(pod("gu", priority=-5, **GU)),
                ps(pod("bu", priority=50, **BU)),
                ps(pod("be", priority=100, **BE)),
            ],
            ["be", "bu", "gu"],
        ),
        # within a class the lower priority value first, whatever the age
        (
            [
                ps(pod("high", priority=100, start="2024-01-03T00:00:00Z")),
                ps(pod("low", priority=-5, start="2024-01-01T00:00:00Z")),
            ],
            ["low", "high"],
        ),
        # same priority and class: the shorter running time first
        (
            [
                ps(pod("old", start="2024-01-01T00:00:00Z")),
                ps(pod("new", start="2024-01-03T00:00:00Z")),
                ps(pod("mid", start="2024-01-02T00:00:00Z")),
            ],
            ["new", "mid", "old"],
        ),
        # usage does not matter to the general sorter; the key breaks the last tie
        ([ps(pod("b"), cpu=10), ps(pod("a"), cpu=5000)], ["a", "b"]),
    ],
)
def test_general_sorter(pods, expected):
    assert keys(general_sorter(pods)) == expected
    assert keys(general_sorter(reversed(pods))) == expected  # input order never matters


def test_a_pod_that_has_not_started_counts_as_the_newest():
    started, unstarted = ps(pod("started")), ps(pod("unstarted", start=None))
    assert compare_running_time(unstarted, started) < 0
    assert keys(general_sorter([started, unstarted])) == ["unstarted", "started"]


@pytest.mark.parametrize(
    ("pods", "expected"),
    [
        # the QoS class comes first, even before a lower priority and a higher usage
        ([ps(pod("bu", priority=0, **BU), cpu=3000), ps(pod("be", priority=10, **BE), cpu=10)], ["be", "bu"]),
        # then the priority value
        ([ps(pod("hot", priority=10), cpu=3000), ps(pod("cool", priority=0), cpu=10)], ["cool", "hot"]),
        # then the higher cpu usage
        (
            [ps(pod("a"), cpu=100), ps(pod("b"), cpu=900), ps(pod("c"), cpu=500)],
            ["b", "c", "a"],
        ),
        # then ext cpu: the user of ext cpu first, and between users the higher usage/limit
        (
            [
                ps(pod("plain"), cpu=500),
                ps(pod("ext-low", ext_cpu=2000), cpu=500),
                ps(pod("ext-high", ext_cpu=1000), cpu=500),
            ],
            ["ext-high", "ext-low", "plain"],
        ),
        # then running time
        (
            [
                ps(pod("old", start="2024-01-01T00:00:00Z"), cpu=5),
                ps(pod("new", start="2024-02-01T00:00:00Z"), cpu=5),
            ],
            ["new", "old"],
        ),
        # missing usage sorts as zero
        ([ps(pod("unknown"), cpu=None), ps(pod("busy"), cpu=1)], ["busy", "unknown"]),
    ],
)
def test_cpu_sorter(pods, expected):
    assert keys(cpu_sorter(pods)) == expected
    assert keys(cpu_sorter(reversed(pods))) == expected


@pytest.mark.parametrize(
    ("pods", "expected"),
    [
        ([ps(pod("hog", priority=1), memory=8 << 30), ps(pod("small"), memory=1)], ["small", "hog"]),
        ([ps(pod("gu", **GU), memory=8 << 30), ps(pod("bu", **BU), memory=1)], ["bu", "gu"]),
        # the class before the priority
        (
            [ps(pod("gu", priority=-1, **GU), memory=8 << 30), ps(pod("bu", priority=9, **BU), memory=1)],
            ["bu", "gu"],
        ),
        (
            [ps(pod("a"), memory=1 << 20), ps(pod("b"), memory=3 << 30), ps(pod("c"), memory=2 << 30)],
            ["b", "c", "a"],
        ),
        # cpu does not matter to the memory sorter; age does
        (
            [
                ps(pod("old", start="2024-01-01T00:00:00Z"), cpu=9000, memory=5),
                ps(pod("new", start="2024-02-01T00:00:00Z"), cpu=1, memory=5),
            ],
            ["new", "old"],
        ),
    ],
)
def test_memory_sorter(pods, expected):
    assert keys(memory_sorter(pods)) == expected
    assert keys(memory_sorter(reversed(pods))) == expected


def test_ext_cpu_compare_and_sorter():
    a = ps(pod("a", ext_cpu=1000), cpu=900)  # ratio 0.9
    b = ps(pod("b", ext_cpu=4000), cpu=1000)  # ratio 0.25
    plain = ps(pod("plain", priority=-10), cpu=3000)
    assert compare_ext_cpu(a, b) < 0 < compare_ext_cpu(b, a)
    assert compare_ext_cpu(plain, a) > 0  # the ext-cpu user first
    assert compare_ext_cpu(plain, ps(pod("other"), cpu=1)) == 0
    # the ext-cpu metric's own sorter puts ext-cpu users first, even before lower priorities
    assert keys(ext_cpu_sorter([plain, b, a])) == ["a", "b", "plain"]
