"""CA's startup and status taints (--startup-taint, --ignore-taint, --startup-taint-prefix,
--status-taint and the *-taint.cluster-autoscaler.kubernetes.io/ prefixes): a Ready node with a
startup taint is still coming, not capacity; status taints only describe the node. Both are left
out of a group's template."""

import dataclasses

import pytest
from clusterstate_fakes import T0, FakeCloud, FakeGroup, node

from kubetide.autoscaler.clusterstate import ClusterStateRegistry
from kubetide.autoscaler.clusterstate.readiness import Readiness
from kubetide.autoscaler.options import parse_options
from kubetide.autoscaler.scaleup.template import build_template
from kubetide.model import Taint
from kubetide.scheduling import PredicateChecker
from kubetide.snapshot import ClusterSnapshot

CASES = [
    # (flags, taint key on a Ready node, readiness a minute after creation)
    ([], "example.com/init", Readiness.READY),
    (["--startup-taint=example.com/init"], "example.com/init", Readiness.NOT_STARTED),
    (["--ignore-taint=example.com/init"], "example.com/init", Readiness.NOT_STARTED),  # deprecated spelling
    (["--startup-taint-prefix=example.com/"], "example.com/init", Readiness.NOT_STARTED),
    (["--status-taint=example.com/init"], "example.com/init", Readiness.READY),
    ([], "startup-taint.cluster-autoscaler.kubernetes.io/cni", Readiness.NOT_STARTED),
    ([], "ignore-taint.cluster-autoscaler.kubernetes.io/cni", Readiness.NOT_STARTED),
    ([], "status-taint.cluster-autoscaler.kubernetes.io/gpu", Readiness.READY),
]


def tainted(key, created):
    return dataclasses.replace(node("n0", created=created), taints=(Taint(key, "", "NoSchedule"),))


def classify(flags, key, age):
    registry = ClusterStateRegistry(parse_options(flags, "s.yaml"))
    group = FakeGroup("ng", target=1)
    group.add("n0")
    registry.update([tainted(key, T0)], FakeCloud(group), T0 + age)
    (record,) = registry.nodes()
    return record, registry


@pytest.mark.parametrize(("flags", "key", "expected"), CASES)
def test_a_startup_taint_keeps_a_ready_node_coming(flags, key, expected):
    record, registry = classify(flags, key, 60)
    assert record.readiness is expected
    # Coming capacity is what scale-up counts before asking for more nodes.
    assert registry.upcoming_nodes() == ({"ng": 1} if expected is Readiness.NOT_STARTED else {})


def test_a_startup_taint_past_max_node_startup_time_is_unready():
    record, _ = classify(["--startup-taint=example.com/init"], "example.com/init", 901)
    assert record.readiness is Readiness.UNREADY
    assert record.unready_since == T0


@pytest.mark.parametrize(("flags", "key", "expected"), CASES)
def test_startup_and_status_taints_are_left_out_of_templates(flags, key, expected):
    raw = tainted(key, T0)
    snapshot = ClusterSnapshot([])
    checker = PredicateChecker(snapshot)
    template = build_template("ng", raw, [], snapshot, checker, parse_options(flags, "s.yaml"))
    special = flags or key.endswith(("/cni", "/gpu"))
    assert [t.key for t in template.node.taints] == ([] if special else [key])
