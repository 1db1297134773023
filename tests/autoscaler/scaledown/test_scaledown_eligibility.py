"""Eligibility: utilization and each reason a node is not even considered."""

import pytest
from scaledown_fakes import GI, FakeCloud, FakeGroup, cloud_for, node, pod

from kubetide.autoscaler.options import AutoscalerOptions, ResourceRange
from kubetide.autoscaler.scaledown.planning.eligibility import (
    SCALE_DOWN_DISABLED_ANNOTATION,
    EligibilityChecker,
    RemovalLimits,
    utilization,
)
from kubetide.autoscaler.scaledown.reasons import NodeReason
from kubetide.model.pod import MIRROR_ANNOTATION

NOW = 1000.0


def check(n, pods=(), options=None, cloud=None, **kw):
    cloud = cloud if cloud is not None else cloud_for(n.name)
    return EligibilityChecker(options or AutoscalerOptions(), cloud, NOW).check(n, pods, **kw)


def test_utilization_is_the_larger_of_cpu_and_memory():
    u = utilization(node("n", 1000, 4 * GI), [pod("a", cpu=200, memory=2 * GI)])
    assert (u.cpu, u.memory, u.value, u.resource) == (0.2, 0.5, 0.5, "memory")


def test_daemonset_and_mirror_pods_count_unless_ignored():
    n = node("n", 1000)
    pods = [
        pod("a", cpu=100),
        pod("ds", cpu=300, owner=("DaemonSet", "ds")),
        pod("m", cpu=200, annotations={MIRROR_ANNOTATION: "x"}),
    ]
    assert utilization(n, pods).value == pytest.approx(0.6)
    assert utilization(n, pods, ignore_daemonsets=True).value == pytest.approx(0.3)
    assert utilization(n, pods, ignore_mirror=True).value == pytest.approx(0.4)
    options = AutoscalerOptions(ignore_daemonsets_utilization=True, ignore_mirror_pods_utilization=True)
    assert check(n, pods, options).utilization.value == pytest.approx(0.1)


def test_long_terminating_pods_do_not_count():
    pods = [pod("a", cpu=300), pod("gone", cpu=500, deleted=NOW - 100, grace=30)]
    assert utilization(node("n"), pods, now=NOW).value == pytest.approx(0.3)


def test_gpu_nodes_are_judged_by_gpu_alone_with_their_own_threshold():
    n = node("gpu", 1000, extra={"nvidia.com/gpu": 4})
    pods = [pod("train", cpu=900, extra={"nvidia.com/gpu": 1})]
    u = utilization(n, pods)
    assert (u.value, u.resource) == (0.25, "nvidia.com/gpu")
    assert check(n, pods).eligible
    strict = AutoscalerOptions(scale_down_gpu_utilization_threshold=0.2)
    assert check(n, pods, strict).reason is NodeReason.NOT_UNDERUTILIZED


def test_eligible():
    e = check(node("n"), [pod("a", cpu=100)])
    assert e.eligible and e.reason is None and e.group.id == "g"


@pytest.mark.parametrize(
    ("make", "reason"),
    [
        (lambda: check(node("n"), [pod("a", cpu=600)]), NodeReason.NOT_UNDERUTILIZED),
        # exactly at the threshold: underutilized (CA 1.35 on; 1.30 kept the node)
        (lambda: check(node("n"), [pod("a", cpu=500)]), None),
        (lambda: check(node("n"), being_deleted=True), NodeReason.CURRENTLY_BEING_DELETED),
        (lambda: check(node("n"), recently_unremovable=True), NodeReason.RECENTLY_UNREMOVABLE),
        (
            lambda: check(node("n", annotations={SCALE_DOWN_DISABLED_ANNOTATION: "true"})),
            NodeReason.SCALE_DOWN_DISABLED_ANNOTATION,
        ),
        (lambda: check(node("n"), cloud=FakeCloud()), NodeReason.NOT_AUTOSCALED),
        (lambda: check(node("n", cpu=0)), NodeReason.UNEXPECTED_ERROR),
        (
            lambda: check(
                node("n", ready=False), options=AutoscalerOptions(scale_down_unready_enabled=False)
            ),
            NodeReason.NOT_UNNEEDED_OTHER_REASON,
        ),
    ],
    ids=[
        "not-underutilized",
        "at-threshold",
        "being-deleted",
        "recently-unremovable",
        "annotation",
        "not-autoscaled",
        "no-allocatable",
        "unready-disabled",
    ],
)
def test_reasons(make, reason):
    assert make().reason is reason


def test_annotation_must_say_true():
    assert check(node("n", annotations={SCALE_DOWN_DISABLED_ANNOTATION: "false"})).eligible


def test_reasons_come_in_cas_order():
    n = node("n", annotations={SCALE_DOWN_DISABLED_ANNOTATION: "true"})
    assert check(n, [pod("a", cpu=900)], recently_unremovable=True, being_deleted=True).reason is (
        NodeReason.RECENTLY_UNREMOVABLE
    )
    assert check(n, [pod("a", cpu=900)], being_deleted=True).reason is NodeReason.CURRENTLY_BEING_DELETED
    assert (
        check(n, [pod("a", cpu=900)], cloud=FakeCloud()).reason is NodeReason.SCALE_DOWN_DISABLED_ANNOTATION
    )


def test_unready_nodes_are_eligible_when_underutilized():
    assert check(node("n", ready=False), [pod("a", cpu=100)]).eligible


def limits(nodes, groups, options=None, being_deleted=(), in_progress=None):
    return RemovalLimits(options or AutoscalerOptions(), groups, nodes, set(being_deleted), in_progress or {})


def test_group_min_size_counts_deletions_in_progress():
    group = FakeGroup("g", min_size=2)
    group.members.extend(["a", "b", "c", "d"])
    nodes = [node(n) for n in "abcd"]
    lim = limits(nodes, [group], in_progress={"g": 1})
    assert lim.check(nodes[0], group) is None
    lim.take(nodes[0], group)
    assert lim.check(nodes[1], group) is NodeReason.NODE_GROUP_MIN_SIZE_REACHED


def test_cluster_minimum_cores_and_memory():
    group = FakeGroup("g")
    group.members.extend(["a", "b", "c"])
    nodes = [node(n, cpu=2000, memory=8 * GI) for n in "abc"]
    cores = limits(nodes, [group], AutoscalerOptions(cores_total=ResourceRange(4, 100)))
    assert cores.check(nodes[0], group) is None
    cores.take(nodes[0], group)
    assert cores.check(nodes[1], group) is NodeReason.MINIMAL_RESOURCE_LIMIT_EXCEEDED
    memory = limits(nodes, [group], AutoscalerOptions(memory_total=ResourceRange(20, 100)))
    assert memory.check(nodes[0], group) is NodeReason.MINIMAL_RESOURCE_LIMIT_EXCEEDED
    # Nodes already being deleted do not count towards the total.
    gone = limits(nodes, [group], AutoscalerOptions(cores_total=ResourceRange(2, 100)), being_deleted=["a"])
    assert gone.check(nodes[1], group) is None
    gone.take(nodes[1], group)
    assert gone.check(nodes[2], group) is NodeReason.MINIMAL_RESOURCE_LIMIT_EXCEEDED
