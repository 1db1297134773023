"""The public API: find_node order, best_node scoring, explain / reasons, schedule_pods, lifecycle."""

import pytest
from schedtools import cluster, load, node, pod, zones

from kubetide.scheduling import PredicateChecker, schedule_pods
from kubetide.scheduling.reasons import summarize
from kubetide.snapshot import ClusterSnapshot, SnapshotError

# -- find_node ------------------------------------------------------------------------------------


def test_find_node_takes_slots_in_order_from_start_and_wraps():
    _, checker = cluster([node(f"n{i}") for i in range(4)])
    p = pod()
    assert checker.find_node(p) == "n0"
    assert checker.find_node(p, start=2) == "n2"
    assert checker.find_node(p, start=3, skip={"n3"}) == "n0"
    assert checker.find_node(p, start=9) == "n0"  # past the last slot wraps around


def test_find_node_tries_the_hint_first_unless_skipped_or_unfit():
    _, checker = cluster([node("n0"), node("n1", cpu="1"), node("n2")])
    p = pod(cpu="2")
    assert checker.find_node(p, hint="n2") == "n2"
    assert checker.find_node(p, hint="n1") == "n0"  # hint does not fit
    assert checker.find_node(p, hint="n2", skip={"n2"}) == "n0"
    assert checker.find_node(p, hint="gone") == "n0"
    assert checker.find_node(p, skip={"n0", "n2"}) is None


def test_find_node_none_is_memoised_only_until_the_snapshot_changes():
    snapshot, checker = cluster([node("n0", cpu="1")])
    p = pod(cpu="2")
    assert checker.find_node(p) is None
    assert checker.find_node(pod(cpu="2")) is None  # same class, memo hit
    snapshot.add_node(node("n1", cpu="4"))
    assert checker.find_node(p) == "n1"


def test_find_node_answer_always_fits():
    snapshot, checker = cluster(zones(2, cpu="1"))
    placed = 0
    while (name := checker.find_node(p := pod(cpu="300m"))) is not None:
        assert checker.fits(p, name) is None
        snapshot.add_pod(p, name)
        placed += 1
    assert placed == 6 * 3


def test_removed_slots_are_never_returned():
    snapshot, checker = cluster([node("n0"), node("n1")])
    snapshot.remove_node("n0")
    assert checker.find_node(pod()) == "n1"
    assert checker.best_node(pod()) == "n1"
    with pytest.raises(SnapshotError):
        checker.fits(pod(), "n0")


# -- best_node -----------------------------------------------------------------------------------


def test_best_node_prefers_least_allocated_then_lowest_slot():
    snapshot, checker = cluster([node("n0"), node("n1"), node("n2")])
    snapshot.add_pod(pod(cpu="2", memory="4Gi"), "n0")
    assert checker.best_node(pod(cpu="1", memory="1Gi")) == "n1"  # n1 and n2 tie: lowest slot


def test_best_node_avoids_prefer_no_schedule_taints():
    soft = [{"key": "spot", "value": "1", "effect": "PreferNoSchedule"}]
    _, checker = cluster([node("n0", taints=soft), node("n1", cpu="2", memory="4Gi")])
    assert checker.best_node(pod()) == "n1"
    tolerant = pod(spec={"tolerations": [{"key": "spot", "operator": "Exists"}]})
    assert checker.best_node(tolerant) == "n0"


def test_best_node_follows_preferred_node_affinity():
    nodes = [node("n0", labels={"disk": "hdd"}), node("n1", cpu="2", labels={"disk": "ssd"})]
    _, checker = cluster(nodes)
    spec = {
        "affinity": {
            "nodeAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "weight": 50,
                        "preference": {
                            "matchExpressions": [{"key": "disk", "operator": "In", "values": ["ssd"]}]
                        },
                    }
                ]
            }
        }
    }
    assert checker.best_node(pod()) == "n0"
    assert checker.best_node(pod(spec=spec)) == "n1"


def test_best_node_spreads_schedule_anyway_constraints():
    snapshot, checker = cluster(zones(1))
    spec = {
        "topologySpreadConstraints": [
            {
                "maxSkew": 1,
                "topologyKey": "topology.kubernetes.io/zone",
                "whenUnsatisfiable": "ScheduleAnyway",
                "labelSelector": {"matchLabels": {"app": "web"}},
            }
        ]
    }
    # Without the constraint, least-allocated alone would keep choosing the emptiest node; with
    # tiny pods the spread score decides.
    names = []
    for _ in range(6):
        p = pod(cpu="1m", labels={"app": "web"}, spec=spec)
        name = checker.best_node(p)
        snapshot.add_pod(p, name)
        names.append(name)
    assert sorted(names) == ["n-a-0", "n-a-0", "n-b-0", "n-b-0", "n-c-0", "n-c-0"]


def test_best_node_none_when_nothing_fits():
    _, checker = cluster([node("n0", cpu="1")])
    assert checker.best_node(pod(cpu="2")) is None


# -- explain / reasons ---------------------------------------------------------------------------


def test_explain_uses_kube_scheduler_format_and_order():
    gpu = [{"key": "gpu", "value": "true", "effect": "NoSchedule"}]
    nodes = [node(f"c{i}", cpu="1") for i in range(3)] + [node(f"g{i}", taints=gpu) for i in range(2)]
    _, checker = cluster(nodes)
    p = pod(cpu="2")
    assert checker.reasons(p) == {"Insufficient cpu": 3, "node(s) had untolerated taint {gpu: true}": 2}
    # kube-scheduler sorts the rendered "count reason" strings
    assert checker.explain(p) == (
        "0/5 nodes are available: 2 node(s) had untolerated taint {gpu: true}, 3 Insufficient cpu."
    )


def test_summary_sorts_like_go_strings():
    assert summarize({"b": 10, "a": 2}, 12) == "0/12 nodes are available: 10 b, 2 a."
    assert summarize({}, 0) == "no nodes available to schedule pods"
    assert summarize({"x": 1}, 3, fitting=2) == "2/3 nodes are available: 1 x."


def test_explain_for_a_pod_that_fits():
    _, checker = cluster([node("n0"), node("n1", cpu="1")])
    assert checker.explain(pod(cpu="2")) == "1/2 nodes are available: 1 Insufficient cpu."
    assert checker.reasons(pod(cpu="1")) == {}


# -- schedule_pods -------------------------------------------------------------------------------


def test_schedule_pods_in_priority_then_age_order():
    snapshot, checker = cluster([node("n0", cpu="2")])
    low_old = pod("low-old", cpu="1", priority=0, created="2026-01-01T00:00:00Z")
    high = pod("high", cpu="1", priority=100, created="2026-01-03T00:00:00Z")
    low_new = pod("low-new", cpu="1", priority=0, created="2026-01-02T00:00:00Z")
    result = schedule_pods(snapshot, [low_new, low_old, high], checker)
    assert result == {high.uid: "n0", low_old.uid: "n0", low_new.uid: None}
    assert list(result) == [high.uid, low_old.uid, low_new.uid]
    assert snapshot.node_of(high.uid) == "n0"
    assert not snapshot.has_pod(low_new.uid)


def test_schedule_pods_later_pods_see_earlier_ones():
    snapshot, checker = cluster(zones(1))
    anti = {
        "affinity": {
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {"topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabels": {"app": "db"}}}
                ]
            }
        }
    }
    pods = [pod(f"db-{i}", labels={"app": "db"}, spec=anti) for i in range(4)]
    result = schedule_pods(snapshot, pods, checker)
    assert sorted(n for n in result.values() if n) == ["n-a-0", "n-b-0", "n-c-0"]
    assert list(result.values()).count(None) == 1
    loser = next(p for p in pods if result[p.uid] is None)
    assert (
        checker.explain(loser) == "0/3 nodes are available: 3 node(s) didn't match pod anti-affinity rules."
    )


def test_schedule_pods_needs_the_checkers_snapshot():
    _, checker = cluster([node("n0")])
    with pytest.raises(ValueError):
        schedule_pods(ClusterSnapshot([node("n0")]), [pod()], checker)


# -- lifecycle -----------------------------------------------------------------------------------


def test_close_detaches_the_observer():
    snapshot = ClusterSnapshot([node("n0")])
    with PredicateChecker(snapshot) as checker:
        assert checker.find_node(pod()) == "n0"
    assert snapshot._observers == []


def test_checker_on_a_populated_snapshot_sees_existing_pods():
    m = load(
        """
        kind: List
        items:
        - kind: Node
          metadata: {name: n0, labels: {kubernetes.io/hostname: n0}}
          status: {allocatable: {cpu: "1", memory: 1Gi, pods: "10"}}
        - kind: Pod
          metadata: {name: web, labels: {app: web}}
          spec:
            nodeName: n0
            containers: [{name: c, resources: {requests: {cpu: 500m}}}]
        """
    )
    snapshot = ClusterSnapshot(m.nodes, m.pods)
    checker = PredicateChecker(snapshot)
    assert checker.fits(pod(cpu="600m"), "n0").reason == "Insufficient cpu"
    assert checker.fits(pod(cpu="500m"), "n0") is None


def test_many_nodes_grow_the_indexes():
    snapshot, checker = cluster([node("n0", cpu="1")])
    p = pod(
        cpu="2",
        spec={
            "topologySpreadConstraints": [
                {
                    "maxSkew": 1,
                    "topologyKey": "kubernetes.io/hostname",
                    "whenUnsatisfiable": "DoNotSchedule",
                    "labelSelector": {},
                }
            ]
        },
    )
    assert checker.find_node(p) is None
    for i in range(1, 200):
        snapshot.add_node(node(f"n{i}", cpu="1" if i < 199 else "4"))
    assert checker.find_node(p) == "n199"
    assert checker.best_node(p) == "n199"
