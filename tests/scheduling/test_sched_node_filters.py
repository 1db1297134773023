"""NodeName, NodeUnschedulable, TaintToleration and NodeAffinity (selector + required affinity)."""

import pytest
from schedtools import cluster, node, pod, reason

AFFINITY = "node(s) didn't match Pod's node affinity/selector"


# -- NodeName -------------------------------------------------------------------------------------


def test_node_name_restricts_to_that_node():
    _, checker = cluster([node("a"), node("b")])
    p = pod(spec={"nodeName": "b"})
    assert reason(checker, p, "a") == "node(s) didn't match the requested node name"
    assert reason(checker, p, "b") is None
    assert checker.fits(p, "a").plugin == "NodeName"


# -- NodeUnschedulable ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tolerations", "fits"),
    [
        ([], False),
        ([{"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}], True),
        ([{"key": "node.kubernetes.io/unschedulable", "operator": "Exists"}], True),
        ([{"operator": "Exists"}], True),
        ([{"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoExecute"}], False),
    ],
)
def test_unschedulable_node_unless_tolerated(tolerations, fits):
    _, checker = cluster([node("a", unschedulable=True)])
    got = reason(checker, pod(spec={"tolerations": tolerations}), "a")
    assert got == (None if fits else "node(s) were unschedulable")


# -- TaintToleration ------------------------------------------------------------------------------

GPU = {"key": "gpu", "value": "true", "effect": "NoSchedule"}


@pytest.mark.parametrize(
    ("taints", "tolerations", "expected"),
    [
        ([GPU], [], "node(s) had untolerated taint {gpu: true}"),
        ([GPU], [{"key": "gpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"}], None),
        ([GPU], [{"key": "gpu", "value": "true"}], None),  # empty effect matches every effect
        (
            [GPU],
            [{"key": "gpu", "operator": "Equal", "value": "false"}],
            "node(s) had untolerated taint {gpu: true}",
        ),
        ([GPU], [{"key": "gpu", "operator": "Exists"}], None),
        (
            [GPU],
            [{"key": "gpu", "operator": "Exists", "effect": "NoExecute"}],
            "node(s) had untolerated taint {gpu: true}",
        ),
        ([GPU], [{"operator": "Exists"}], None),  # empty key + Exists tolerates everything
        ([GPU], [{"key": "other", "operator": "Exists"}], "node(s) had untolerated taint {gpu: true}"),
        (
            [{"key": "evict", "value": "", "effect": "NoExecute"}],
            [],
            "node(s) had untolerated taint {evict: }",
        ),
        ([{"key": "soft", "value": "x", "effect": "PreferNoSchedule"}], [], None),  # never filters
        (
            [{"key": "soft", "value": "x", "effect": "PreferNoSchedule"}, GPU],
            [],
            "node(s) had untolerated taint {gpu: true}",
        ),
        (
            [GPU, {"key": "b", "value": "2", "effect": "NoExecute"}],
            [{"key": "gpu", "operator": "Exists"}],
            "node(s) had untolerated taint {b: 2}",
        ),
    ],
)
def test_taints(taints, tolerations, expected):
    _, checker = cluster([node("a", taints=taints)])
    assert reason(checker, pod(spec={"tolerations": tolerations}), "a") == expected


def test_first_untolerated_taint_is_reported():
    taints = [
        {"key": "x", "value": "1", "effect": "NoSchedule"},
        {"key": "y", "value": "2", "effect": "NoSchedule"},
    ]
    _, checker = cluster([node("a", taints=taints)])
    assert reason(checker, pod(), "a") == "node(s) had untolerated taint {x: 1}"


# -- NodeAffinity ---------------------------------------------------------------------------------

LABELS = {"zone": "a", "disk": "ssd", "cores": "16", "weird": "abc"}


def required(*terms):
    return {
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}
            }
        }
    }


def expr(key, op, *values):
    e = {"key": key, "operator": op}
    if values:
        e["values"] = list(values)
    return e


@pytest.mark.parametrize(
    ("spec", "fits"),
    [
        ({"nodeSelector": {"zone": "a"}}, True),
        ({"nodeSelector": {"zone": "a", "disk": "ssd"}}, True),
        ({"nodeSelector": {"zone": "b"}}, False),
        ({"nodeSelector": {"missing": ""}}, False),
        (required({"matchExpressions": [expr("zone", "In", "a", "b")]}), True),
        (required({"matchExpressions": [expr("zone", "In", "b")]}), False),
        (required({"matchExpressions": [expr("zone", "NotIn", "b")]}), True),
        (required({"matchExpressions": [expr("missing", "NotIn", "b")]}), True),
        (required({"matchExpressions": [expr("zone", "NotIn", "a")]}), False),
        (required({"matchExpressions": [expr("disk", "Exists")]}), True),
        (required({"matchExpressions": [expr("missing", "Exists")]}), False),
        (required({"matchExpressions": [expr("missing", "DoesNotExist")]}), True),
        (required({"matchExpressions": [expr("disk", "DoesNotExist")]}), False),
        (required({"matchExpressions": [expr("cores", "Gt", "8")]}), True),
        (required({"matchExpressions": [expr("cores", "Gt", "16")]}), False),
        (required({"matchExpressions": [expr("cores", "Lt", "32")]}), True),
        (required({"matchExpressions": [expr("cores", "Lt", "16")]}), False),
        # Gt / Lt against a label that is not an integer never match (either way round).
        (required({"matchExpressions": [expr("weird", "Gt", "1")]}), False),
        (required({"matchExpressions": [expr("weird", "Lt", "1")]}), False),
        (required({"matchExpressions": [expr("missing", "Lt", "1")]}), False),
        # AND of expressions within a term
        (required({"matchExpressions": [expr("zone", "In", "a"), expr("disk", "In", "hdd")]}), False),
        (required({"matchExpressions": [expr("zone", "In", "a"), expr("disk", "In", "ssd")]}), True),
        # OR of terms
        (
            required(
                {"matchExpressions": [expr("zone", "In", "b")]},
                {"matchExpressions": [expr("disk", "Exists")]},
            ),
            True,
        ),
        (
            required(
                {"matchExpressions": [expr("zone", "In", "b")]}, {"matchExpressions": [expr("x", "Exists")]}
            ),
            False,
        ),
        # matchFields on metadata.name
        (required({"matchFields": [expr("metadata.name", "In", "node-a")]}), True),
        (required({"matchFields": [expr("metadata.name", "In", "node-b")]}), False),
        (required({"matchFields": [expr("metadata.name", "NotIn", "node-b")]}), True),
        # fields and expressions in one term are ANDed
        (
            required(
                {
                    "matchFields": [expr("metadata.name", "In", "node-a")],
                    "matchExpressions": [expr("zone", "In", "b")],
                }
            ),
            False,
        ),
        # an empty term selects nothing
        (required({}), False),
        # nodeSelector and affinity must both hold
        ({"nodeSelector": {"zone": "b"}, **required({"matchExpressions": [expr("zone", "In", "a")]})}, False),
    ],
)
def test_node_affinity(spec, fits):
    _, checker = cluster([node("node-a", labels=LABELS)])
    assert reason(checker, pod(spec=spec), "node-a") == (None if fits else AFFINITY)


def test_filter_order_reports_the_earliest_plugin():
    """NodeUnschedulable runs before TaintToleration, which runs before NodeAffinity and NodeResourcesFit."""
    n = node("a", cpu="1", unschedulable=True, taints=[GPU], labels={"zone": "x"})
    _, checker = cluster([n])
    p = pod(cpu="2", spec={"nodeSelector": {"zone": "y"}})
    assert checker.fits(p, "a").plugin == "NodeUnschedulable"
    _, checker = cluster([node("a", cpu="1", taints=[GPU], labels={"zone": "x"})])
    assert checker.fits(p, "a").plugin == "TaintToleration"
    _, checker = cluster([node("a", cpu="1", labels={"zone": "x"})])
    assert checker.fits(p, "a").plugin == "NodeAffinity"


def test_node_static_cache_follows_replaced_and_added_nodes():
    snapshot, checker = cluster([node("a", labels={"zone": "x"})])
    p = pod(spec={"nodeSelector": {"zone": "y"}})
    assert checker.find_node(p) is None
    snapshot.fork()
    snapshot.replace_node(node("a", labels={"zone": "y"}))
    assert checker.find_node(p) == "a"
    snapshot.revert()
    assert checker.find_node(p) is None
    snapshot.add_node(node("b", labels={"zone": "y"}))
    assert checker.find_node(p) == "b"
    snapshot.remove_node("b")
    assert checker.find_node(p) is None


def test_pods_pinned_by_match_fields_report_every_nodes_own_reason():
    """DaemonSet pods: only the named nodes are evaluated up front, yet each other node still
    reports the first filter that rejects it, in kube-scheduler's order."""
    from schedref import check

    nodes = [
        node("a"),
        node("b", unschedulable=True),
        node("c", taints=[GPU]),
        node("d", cpu="1"),
    ]
    snapshot, checker = cluster(nodes)
    pinned = pod(cpu="2", spec=required({"matchFields": [expr("metadata.name", "In", "d", "a")]}))
    assert checker.find_node(pinned) == "a"
    for n in nodes:
        got = checker.fits(pinned, n.name)
        want = check(snapshot, pinned, n.name, lambda ns: {})
        assert (got and (got.plugin, got.reasons)) == want
    assert checker.reasons(pinned) == {
        "node(s) were unschedulable": 1,
        "node(s) had untolerated taint {gpu: true}": 1,
        "Insufficient cpu": 1,
    }
    snapshot.add_node(node("e"))
    assert reason(checker, pinned, "e") == AFFINITY


def test_pinned_pod_spread_honouring_taints_but_not_affinity():
    from schedref import check

    zone = "topology.kubernetes.io/zone"
    nodes = [
        node("a", labels={zone: "x"}),
        node("b", labels={zone: "y"}, taints=[GPU]),
        node("c", labels={zone: "z"}),
    ]
    snapshot, checker = cluster(nodes)
    spread = {
        "maxSkew": 1,
        "topologyKey": zone,
        "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": {"app": "ds"}},
        "nodeAffinityPolicy": "Ignore",
        "nodeTaintsPolicy": "Honor",
    }
    snapshot.add_pod(pod(labels={"app": "ds"}), "c")
    p = pod(
        labels={"app": "ds"},
        spec={
            **required({"matchFields": [expr("metadata.name", "In", "c")]}),
            "topologySpreadConstraints": [spread],
        },
    )
    for n in nodes:
        got = checker.fits(p, n.name)
        assert (got and (got.plugin, got.reasons)) == check(snapshot, p, n.name, lambda ns: {})
    assert checker.find_node(p) is None  # c already holds one; domain y is tainted, so min is x = 0
