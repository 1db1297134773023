"""PodTopologySpread as a filter: DoNotSchedule constraints only."""

from schedtools import cluster, feasible, node, pod, reason, zones

SPREAD = "node(s) didn't match pod topology spread constraints"
MISSING = SPREAD + " (missing required label)"
ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"
WEB = {"app": "web"}


def spread(key=ZONE, max_skew=1, labels=WEB, when="DoNotSchedule", **extra):
    c = {"maxSkew": max_skew, "topologyKey": key, "whenUnsatisfiable": when, **extra}
    if labels is not None:
        c["labelSelector"] = {"matchLabels": labels}
    return c


def web(*constraints, labels=WEB, **kw):
    return pod(labels=labels, spec={"topologySpreadConstraints": list(constraints), **kw})


def bound(layout, labels=WEB, **kw):
    """layout: node name -> number of matching pods."""
    return [(pod(labels=labels, **kw), n) for n, count in layout.items() for _ in range(count)]


def test_max_skew_one_across_zones():
    _, checker = cluster(zones(1), bound({"n-a-0": 2, "n-b-0": 1, "n-c-0": 1}))
    assert feasible(checker, web(spread())) == ["n-b-0", "n-c-0"]
    assert reason(checker, web(spread()), "n-a-0") == SPREAD
    assert feasible(checker, web(spread(max_skew=2))) == ["n-a-0", "n-b-0", "n-c-0"]


def test_pod_not_matching_its_own_selector_adds_no_self_count():
    _, checker = cluster(zones(1), bound({"n-a-0": 2, "n-b-0": 1, "n-c-0": 1}))
    other = web(spread(), labels={"app": "other"})
    # skew on a = 2 + 0 - 1 = 1 <= 1
    assert feasible(checker, other) == ["n-a-0", "n-b-0", "n-c-0"]


def test_schedule_anyway_never_filters():
    _, checker = cluster(zones(1), bound({"n-a-0": 5}))
    assert len(feasible(checker, web(spread(when="ScheduleAnyway")))) == 3


def test_nodes_without_the_topology_key_are_infeasible():
    nodes = [*zones(1), node("bare")]
    _, checker = cluster(nodes)
    assert reason(checker, web(spread()), "bare") == MISSING
    # and they are not a domain: their pods do not count
    _, checker = cluster(nodes, bound({"bare": 3}))
    assert feasible(checker, web(spread())) == ["n-a-0", "n-b-0", "n-c-0"]


def test_a_node_needs_every_constraints_key():
    nodes = [*zones(1), node("zone-only", labels={ZONE: "a"})]
    _, checker = cluster(nodes)
    p = web(spread(), spread("rack"))
    assert reason(checker, p, "zone-only") == MISSING
    assert feasible(checker, p) == []


def test_min_domains_treats_global_minimum_as_zero_until_enough_domains():
    nodes = zones(1, zone_names=("a", "b"))
    _, checker = cluster(nodes, bound({"n-a-0": 1, "n-b-0": 1}))
    assert feasible(checker, web(spread())) == ["n-a-0", "n-b-0"]
    assert feasible(checker, web(spread(minDomains=2))) == ["n-a-0", "n-b-0"]
    # Only 2 of the 3 wanted domains exist: the minimum is 0, so 1 + 1 - 0 > 1 everywhere.
    assert feasible(checker, web(spread(minDomains=3))) == []
    assert feasible(checker, web(spread(max_skew=2, minDomains=3))) == ["n-a-0", "n-b-0"]


def test_node_affinity_policy_honor_limits_domains_to_matching_nodes():
    _, checker = cluster(zones(1), bound({"n-a-0": 1, "n-b-0": 1}))
    affinity = {
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": ZONE, "operator": "In", "values": ["a", "b"]}]}
                    ]
                }
            }
        }
    }
    honor = web(spread(), **affinity)
    assert feasible(checker, honor) == ["n-a-0", "n-b-0"]
    ignore = web(spread(nodeAffinityPolicy="Ignore"), **affinity)
    # zone c (0 pods) is now a domain: the minimum is 0 and a, b are at the limit
    assert feasible(checker, ignore) == []
    assert checker.reasons(ignore) == {SPREAD: 2, "node(s) didn't match Pod's node affinity/selector": 1}


def test_node_selector_counts_as_node_affinity_for_the_policy():
    _, checker = cluster(zones(1), bound({"n-a-0": 1}))
    p = web(spread(), nodeSelector={ZONE: "a"})
    assert feasible(checker, p) == ["n-a-0"]


def test_node_taints_policy():
    nodes = [
        *zones(1, zone_names=("a", "b")),
        node(
            "n-c-0",
            labels={ZONE: "c", HOST: "n-c-0"},
            taints=[{"key": "ded", "value": "x", "effect": "NoSchedule"}],
        ),
    ]
    _, checker = cluster(nodes, bound({"n-a-0": 1, "n-b-0": 1}))
    # Default Ignore: the tainted zone is a domain with 0 pods, so a and b are full.
    assert feasible(checker, web(spread())) == []
    assert feasible(checker, web(spread(nodeTaintsPolicy="Honor"))) == ["n-a-0", "n-b-0"]


def test_pods_on_excluded_nodes_do_not_count():
    nodes = [*zones(1, zone_names=("a", "b")), node("n-a-1", labels={ZONE: "a", "pool": "spot"})]
    layout = {"n-a-1": 3, "n-b-0": 1}
    _, checker = cluster(nodes, bound(layout))
    spec = {
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": [{"key": "pool", "operator": "DoesNotExist"}]}]
                }
            }
        }
    }
    # Honor: n-a-1 is not eligible, so zone a has 0 counted pods and takes the next one.
    assert feasible(checker, web(spread(), **spec)) == ["n-a-0"]


def test_match_label_keys():
    layout = {"n-a-0": 2}
    _, checker = cluster(zones(1), bound(layout, labels={"app": "web", "rev": "1"}))
    new = web(spread(matchLabelKeys=["rev"]), labels={"app": "web", "rev": "2"})
    assert feasible(checker, new) == ["n-a-0", "n-b-0", "n-c-0"]
    old = web(spread(matchLabelKeys=["rev"]), labels={"app": "web", "rev": "1"})
    assert feasible(checker, old) == ["n-b-0", "n-c-0"]


def test_only_same_namespace_and_live_pods_count():
    bound_pods = bound({"n-a-0": 3}, namespace="other") + bound({"n-b-0": 3}, deleting=True)
    _, checker = cluster(zones(1), bound_pods)
    assert len(feasible(checker, web(spread()))) == 3


def test_hostname_spread():
    _, checker = cluster(zones(1), bound({"n-a-0": 1, "n-b-0": 1}))
    assert feasible(checker, web(spread(HOST))) == ["n-c-0"]


def test_missing_label_selector_selects_no_pods():
    _, checker = cluster(zones(1), bound({"n-a-0": 3}))
    assert len(feasible(checker, web(spread(labels=None)))) == 3


def test_spread_follows_binds_and_reverts():
    snapshot, checker = cluster(zones(1))
    p = web(spread())
    placed = []
    snapshot.fork()
    for _ in range(6):
        q = web(spread())
        name = checker.find_node(q)
        snapshot.add_pod(q, name)
        placed.append(name)
    assert sorted(placed) == ["n-a-0", "n-a-0", "n-b-0", "n-b-0", "n-c-0", "n-c-0"]
    snapshot.revert()
    assert feasible(checker, p) == ["n-a-0", "n-b-0", "n-c-0"]
