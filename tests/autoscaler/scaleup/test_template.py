from _scaleup_helpers import GIB, daemonset, node, taint, tolerate

from kubetide.autoscaler.ports import TO_BE_DELETED_TAINT
from kubetide.autoscaler.scaleup.template import build_template, daemonsets_of
from kubetide.model.node import HOSTNAME_LABEL
from kubetide.scheduling import PredicateChecker
from kubetide.snapshot import ClusterSnapshot


def build(raw, daemonsets=()):
    snapshot = ClusterSnapshot([node("existing")])
    with PredicateChecker(snapshot) as checker:
        before = [n.name for n in snapshot.nodes()], snapshot.pod_count()
        template = build_template("g", raw, list(daemonsets), snapshot, checker)
        assert ([n.name for n in snapshot.nodes()], snapshot.pod_count()) == before
    return template


def test_daemonset_overhead_comes_off_allocatable():
    raw = node("raw", cpu=4000, mem=16 * GIB, pods=110, labels={"disk": "ssd"})
    template = build(
        raw,
        [
            daemonset("logs", cpu=100, mem=GIB),
            daemonset("ssd-only", cpu=50, node_selector={"disk": "ssd"}),
            daemonset("hdd-only", cpu=70, node_selector={"disk": "hdd"}),
        ],
    )
    assert template.node.allocatable == {"cpu": 3850, "memory": 15 * GIB, "pods": 108}
    assert template.node.capacity == raw.capacity
    assert template.daemonsets == ("DaemonSet/kube-system/logs", "DaemonSet/kube-system/ssd-only")


def test_daemonsets_respect_taints():
    raw = node("raw", taints=[taint("gpu", "true")], **{"nvidia.com/gpu": 4})
    template = build(
        raw,
        [daemonset("plain", cpu=100), daemonset("gpu-plugin", cpu=20, tolerations=[tolerate("gpu", "true")])],
    )
    assert template.daemonsets == ("DaemonSet/kube-system/gpu-plugin",)
    assert template.node.allocatable["cpu"] == 3980
    assert template.node.allocatable["nvidia.com/gpu"] == 4


def test_daemonset_that_does_not_fit_is_ignored():
    template = build(node("raw", cpu=1000), [daemonset("huge", cpu=2000), daemonset("small", cpu=100)])
    assert template.daemonsets == ("DaemonSet/kube-system/small",)
    assert template.node.allocatable["cpu"] == 900


def test_node_state_taints_and_cordon_are_dropped():
    raw = node(
        "raw",
        taints=[
            taint(TO_BE_DELETED_TAINT, "123"),
            taint("node.kubernetes.io/not-ready", effect="NoExecute"),
            taint("dedicated", "batch"),
        ],
    )
    raw = raw.__class__(raw.meta, raw.allocatable, raw.capacity, raw.taints, unschedulable=True, ready=False)
    template = build(raw)
    assert [t.key for t in template.node.taints] == ["dedicated"]
    assert not template.node.unschedulable and template.node.ready


def test_copies_have_unique_names_and_hostnames():
    template = build(node("raw"))
    a, b = template.copy(0), template.copy(1)
    assert a.name != b.name
    assert a.labels[HOSTNAME_LABEL] == a.name and b.labels[HOSTNAME_LABEL] == b.name
    assert a.allocatable == template.node.allocatable


def test_daemonsets_of_picks_daemonsets_only():
    ds = daemonset("x")
    other = ds.__class__("Deployment", ds.meta, ds.selector, ds.template, replicas=1)
    assert daemonsets_of([ds, other]) == [ds]
