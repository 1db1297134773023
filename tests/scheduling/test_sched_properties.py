"""Property tests: the fast checker agrees with the slow reference, before and after fork/revert."""

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schedref import check as reference_check

from kubetide.model import load_documents
from kubetide.scheduling import PredicateChecker
from kubetide.snapshot import ClusterSnapshot

NAMESPACES = {"default": {"env": "prod"}, "other": {"env": "dev"}}
KEYS = ["topology.kubernetes.io/zone", "kubernetes.io/hostname", "rack"]


def ns_labels(namespace):
    return NAMESPACES.get(namespace, {"kubernetes.io/metadata.name": namespace})


def label_sets():
    return st.fixed_dictionaries(
        {}, optional={"app": st.sampled_from(["a", "b"]), "tier": st.sampled_from(["x", "y"])}
    )


def selectors():
    return st.one_of(
        st.builds(lambda labels: {"matchLabels": labels}, label_sets()),
        st.just({"matchExpressions": [{"key": "app", "operator": "Exists"}]}),
        st.just({"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["a"]}]}),
    )


def affinity_terms():
    return st.builds(
        lambda key, sel, ns, keys: {
            "topologyKey": key,
            "labelSelector": sel,
            **ns,
            **({"matchLabelKeys": keys} if keys else {}),
        },
        st.sampled_from(KEYS),
        selectors(),
        st.sampled_from(
            [
                {},
                {"namespaces": ["other"]},
                {"namespaceSelector": {"matchLabels": {"env": "prod"}}},
                {"namespaceSelector": {}},
            ]
        ),
        st.sampled_from([[], ["tier"]]),
    )


def spread_constraints():
    return st.builds(
        lambda key, skew, sel, when, extra: {
            "topologyKey": key,
            "maxSkew": skew,
            "labelSelector": sel,
            "whenUnsatisfiable": when,
            # minDomains is only valid with DoNotSchedule
            **{k: v for k, v in extra.items() if k != "minDomains" or when == "DoNotSchedule"},
        },
        st.sampled_from(KEYS),
        st.integers(1, 2),
        selectors(),
        st.sampled_from(["DoNotSchedule", "DoNotSchedule", "ScheduleAnyway"]),
        st.sampled_from(
            [
                {},
                {"minDomains": 3},
                {"nodeAffinityPolicy": "Ignore"},
                {"nodeTaintsPolicy": "Honor"},
                {"matchLabelKeys": ["tier"]},
            ]
        ),
    )


TAINTS = [
    {"key": "gpu", "value": "true", "effect": "NoSchedule"},
    {"key": "soft", "value": "1", "effect": "PreferNoSchedule"},
    {"key": "evict", "value": "", "effect": "NoExecute"},
]
TOLERATIONS = [
    {"key": "gpu", "operator": "Exists"},
    {"operator": "Exists"},
    {"key": "evict", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"},
]


@st.composite
def node_docs(draw, name):
    labels = {}
    if draw(st.integers(0, 4)):
        labels["topology.kubernetes.io/zone"] = draw(st.sampled_from(["a", "b", "c"]))
    if draw(st.booleans()):
        labels["rack"] = draw(st.sampled_from(["r1", "r2"]))
    return {
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "taints": draw(st.lists(st.sampled_from(TAINTS), max_size=2, unique_by=lambda t: t["key"])),
            "unschedulable": draw(st.integers(0, 6)) == 0,
        },
        "status": {
            "allocatable": {
                "cpu": draw(st.sampled_from(["1", "2", "4"])),
                "memory": "4Gi",
                "pods": draw(st.sampled_from(["3", "110"])),
            }
        },
    }


@st.composite
def pod_docs(draw, name, incoming):
    spec = {}
    container = {
        "name": "c",
        "resources": {"requests": {"cpu": draw(st.sampled_from(["100m", "500m", "1"]))}},
    }
    if draw(st.integers(0, 5)) == 0:
        container["ports"] = [
            {
                "containerPort": 80,
                "hostPort": 80,
                **draw(st.sampled_from([{}, {"hostIP": "10.0.0.1"}, {"protocol": "UDP"}])),
            }
        ]
    spec["containers"] = [container]
    affinity = {}
    if draw(st.integers(0, 3)) == 0:
        affinity["podAntiAffinity"] = {
            "requiredDuringSchedulingIgnoredDuringExecution": [draw(affinity_terms())]
        }
    if incoming:
        if draw(st.integers(0, 2)) == 0:
            terms = draw(st.lists(affinity_terms(), min_size=1, max_size=2))
            affinity["podAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": terms}
        if draw(st.booleans()):
            # at most one constraint per {topologyKey, whenUnsatisfiable}, as the API server requires
            spec["topologySpreadConstraints"] = draw(
                st.lists(
                    spread_constraints(),
                    min_size=1,
                    max_size=2,
                    unique_by=lambda c: (c["topologyKey"], c["whenUnsatisfiable"]),
                )
            )
        if draw(st.integers(0, 3)) == 0:
            spec["nodeSelector"] = {"topology.kubernetes.io/zone": draw(st.sampled_from(["a", "b"]))}
        spec["tolerations"] = draw(st.lists(st.sampled_from(TOLERATIONS), max_size=2))
    if affinity:
        spec["affinity"] = affinity
    meta = {
        "name": name,
        "namespace": draw(st.sampled_from(["default", "default", "other"])),
        "labels": draw(label_sets()),
    }
    if not incoming and draw(st.integers(0, 6)) == 0:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return {"kind": "Pod", "metadata": meta, "spec": spec}


@st.composite
def clusters(draw):
    node_count = draw(st.integers(1, 5))
    nodes = load_documents([draw(node_docs(f"n{i}")) for i in range(node_count)], "t").nodes
    pod_count = draw(st.integers(0, 8))
    pods = load_documents([draw(pod_docs(f"b{i}", incoming=False)) for i in range(pod_count)], "t").pods
    places = [draw(st.sampled_from([n.name for n in nodes])) for _ in pods]
    probes = load_documents([draw(pod_docs(f"p{i}", incoming=True)) for i in range(3)], "t").pods
    return nodes, list(zip(pods, places)), probes


def assert_agrees(snapshot, checker, probes):
    for p in probes:
        feasible = set()
        for n in snapshot.nodes():
            got = checker.fits(p, n.name)
            got = None if got is None else (got.plugin, got.reasons)
            assert got == reference_check(snapshot, p, n.name, ns_labels), (p.name, n.name)
            if got is None:
                feasible.add(n.name)
        found = checker.find_node(p)
        assert (found is None) == (not feasible)
        assert found is None or found in feasible
        best = checker.best_node(p)
        assert best is None or best in feasible
        assert (best is None) == (not feasible)


SETTINGS = settings(max_examples=60, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(clusters())
def test_fits_agrees_with_reference(cluster):
    nodes, bound, probes = cluster
    snapshot = ClusterSnapshot(nodes)
    for p, n in bound:
        snapshot.add_pod(p, n)
    checker = PredicateChecker(snapshot, NAMESPACES)
    assert_agrees(snapshot, checker, probes)


@SETTINGS
@given(clusters(), st.data())
def test_indexes_survive_fork_and_revert(cluster, data):
    nodes, bound, probes = cluster
    snapshot = ClusterSnapshot(nodes)
    checker = PredicateChecker(snapshot, NAMESPACES)  # built before the pods: everything incremental
    for p, n in bound:
        snapshot.add_pod(p, n)
    # Warm the caches so the revert has something to invalidate.
    assert_agrees(snapshot, checker, probes)

    snapshot.fork()
    extra = load_documents([data.draw(pod_docs(f"x{i}", incoming=False)) for i in range(3)], "t").pods
    for step, p in enumerate(extra):
        names = [n.name for n in snapshot.nodes()]
        snapshot.add_pod(p, data.draw(st.sampled_from(names)))
        action = data.draw(st.sampled_from(["remove-pod", "remove-node", "relabel", "add-node", "none"]))
        if action == "remove-pod" and snapshot.pod_count():
            snapshot.remove_pod(data.draw(st.sampled_from(sorted(q.uid for q in snapshot.pods()))))
        elif action == "remove-node" and len(snapshot) > 1:
            snapshot.remove_node(data.draw(st.sampled_from(names)))
        elif action == "relabel":
            doc = data.draw(node_docs(data.draw(st.sampled_from(names))))
            snapshot.replace_node(load_documents([doc], "t").nodes[0])
        elif action == "add-node":
            snapshot.add_node(load_documents([data.draw(node_docs(f"new{step}"))], "t").nodes[0])
        assert_agrees(snapshot, checker, probes)
    snapshot.revert()

    assert_agrees(snapshot, checker, probes)
    fresh = PredicateChecker(snapshot, NAMESPACES)
    for p in probes:
        assert checker.reasons(p) == fresh.reasons(p)
        assert checker.find_node(p) == fresh.find_node(p)
        assert checker.best_node(p) == fresh.best_node(p)
    fresh.close()


@settings(SETTINGS, max_examples=30)
@given(clusters(), st.data())
def test_indexes_follow_a_batch_of_removals_as_they_follow_single_ones(cluster, data):
    # ClusterSnapshot.remove_pods hands an observer one batch per node (a feed's mass
    # deletion); the index kept up to date from batches answers as one built afresh.
    nodes, bound, probes = cluster
    snapshot = ClusterSnapshot(nodes)
    checker = PredicateChecker(snapshot, NAMESPACES)  # built before the pods: everything incremental
    for p, n in bound:
        snapshot.add_pod(p, n)
    assert_agrees(snapshot, checker, probes)  # warm the caches the batch must invalidate
    gone = data.draw(st.lists(st.sampled_from(bound), unique_by=lambda b: b[0].uid)) if bound else []
    by_node: dict[str, list[str]] = {}
    for p, n in gone:
        by_node.setdefault(n, []).append(p.uid)
    for n, uids in by_node.items():
        snapshot.remove_pods(n, uids)
    assert snapshot.pod_count() == len(bound) - len(gone)
    assert_agrees(snapshot, checker, probes)
    fresh = PredicateChecker(snapshot, NAMESPACES)
    for p in probes:
        assert checker.reasons(p) == fresh.reasons(p)
        assert checker.best_node(p) == fresh.best_node(p)
    fresh.close()
