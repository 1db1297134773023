"""`explain` and `reasons` are worked out once per equivalence class, and say for every pod exactly
what a node-by-node pass for that pod alone says.

Random clusters: nodes with zones, racks, taints and cordons; bound pods whose required
anti-affinity reads the `app` or `tier` label; pending pods in families that share a spec and
differ only in labels (some read by those terms or by the family's own spread and affinity terms,
plus a unique `id` label nothing reads). Every explanation is compared with one rebuilt from the
slow reference filters (schedref), before and after the pending pods are placed.
"""

import random
from collections import Counter

import pytest
from schedref import check as reference_check

from kubetide.model import load_documents
from kubetide.scheduling import PredicateChecker, schedule_pods
from kubetide.scheduling.reasons import summarize
from kubetide.snapshot import ClusterSnapshot

NAMESPACES = {"default": {"env": "prod"}, "other": {"env": "dev"}}
KEYS = ["topology.kubernetes.io/zone", "kubernetes.io/hostname", "rack"]
TAINTS = [
    {"key": "gpu", "value": "true", "effect": "NoSchedule"},
    {"key": "soft", "value": "1", "effect": "PreferNoSchedule"},
]


def load(docs):
    return load_documents(docs, "test.yaml")


def ns_labels(namespace):
    return NAMESPACES.get(namespace, {"kubernetes.io/metadata.name": namespace})


def read_labels(rng):
    """Labels that the terms below select on, drawn independently per pod."""
    labels = {}
    if rng.random() < 0.7:
        labels["app"] = rng.choice(["a", "b"])
    if rng.random() < 0.5:
        labels["tier"] = rng.choice(["x", "y"])
    return labels


def term(rng):
    selector = rng.choice(
        [
            {"matchLabels": {"app": rng.choice(["a", "b"])}},
            {"matchLabels": {"tier": rng.choice(["x", "y"])}},
            {"matchExpressions": [{"key": "app", "operator": "Exists"}]},
            {"matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["x"]}]},
        ]
    )
    extra = rng.choice([{}, {}, {"namespaces": ["default", "other"]}, {"namespaceSelector": {}}])
    return {"topologyKey": rng.choice(KEYS), "labelSelector": selector, **extra}


def node_doc(rng, i):
    labels = {"kubernetes.io/hostname": f"n{i}"}
    if rng.random() < 0.85:
        labels["topology.kubernetes.io/zone"] = rng.choice("abc")
    if rng.random() < 0.5:
        labels["rack"] = rng.choice(["r1", "r2"])
    return {
        "kind": "Node",
        "metadata": {"name": f"n{i}", "labels": labels},
        "spec": {"taints": rng.sample(TAINTS, rng.choice([0, 0, 1])), "unschedulable": rng.random() < 0.1},
        "status": {"allocatable": {"cpu": rng.choice(["1", "2", "4"]), "memory": "4Gi", "pods": "110"}},
    }


def pod_doc(name, namespace, labels, spec):
    return {"kind": "Pod", "metadata": {"name": name, "namespace": namespace, "labels": labels}, "spec": spec}


def bound_doc(rng, i):
    spec = {"containers": [{"name": "c", "resources": {"requests": {"cpu": "100m"}}}]}
    if rng.random() < 0.6:
        spec["affinity"] = {
            "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term(rng)]}
        }
    return pod_doc(f"b{i}", rng.choice(["default", "other"]), read_labels(rng), spec)


def family_spec(rng):
    """What pods of one Deployment share: requests, ports, node constraints, own pod terms."""
    container = {"name": "c", "resources": {"requests": {"cpu": rng.choice(["100m", "500m", "1", "3"])}}}
    if rng.random() < 0.2:
        container["ports"] = [{"containerPort": 80, "hostPort": 80}]
    spec = {"containers": [container]}
    if rng.random() < 0.3:
        spec["nodeSelector"] = {"topology.kubernetes.io/zone": rng.choice("ab")}
    if rng.random() < 0.3:
        spec["tolerations"] = [{"key": "gpu", "operator": "Exists"}]
    affinity = {}
    if rng.random() < 0.3:
        affinity["podAntiAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": [term(rng)]}
    if rng.random() < 0.2:
        affinity["podAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": [term(rng)]}
    if affinity:
        spec["affinity"] = affinity
    if rng.random() < 0.3:
        spec["topologySpreadConstraints"] = [
            {
                "topologyKey": rng.choice(KEYS),
                "maxSkew": 1,
                "whenUnsatisfiable": rng.choice(["DoNotSchedule", "ScheduleAnyway"]),
                "labelSelector": {"matchExpressions": [{"key": "app", "operator": "Exists"}]},
            }
        ]
    return spec


def random_cluster(seed):
    rng = random.Random(seed)
    nodes = load([node_doc(rng, i) for i in range(rng.randint(3, 12))]).nodes
    bound = load([bound_doc(rng, i) for i in range(rng.randint(0, 15))]).pods
    pending_docs = []
    for f in range(rng.randint(2, 6)):
        spec, namespace = family_spec(rng), rng.choice(["default", "default", "other"])
        for i in range(rng.randint(2, 8)):
            labels = {**read_labels(rng), "id": f"{f}-{i}"}
            pending_docs.append(pod_doc(f"f{f}-{i}", namespace, labels, spec))
    snapshot = ClusterSnapshot(nodes)
    for p in bound:
        snapshot.add_pod(p, rng.choice(nodes).name)
    pending = load(pending_docs).pods
    rng.shuffle(pending)
    return snapshot, pending


def reference_counts(snapshot, pod):
    """(fitting nodes, reason -> nodes) by asking the slow reference about each node in turn."""
    counts, fitting = Counter(), 0
    for node in snapshot.nodes():
        unfit = reference_check(snapshot, pod, node.name, ns_labels)
        if unfit is None:
            fitting += 1
        else:
            counts.update(unfit[1])
    return fitting, dict(counts)


def assert_explained_as_alone(snapshot, checker, pods):
    for pod in pods:
        fitting, counts = reference_counts(snapshot, pod)
        assert checker.reasons(pod) == counts, pod.name
        assert checker.explain(pod) == summarize(counts, len(snapshot), fitting), pod.name


@pytest.mark.parametrize("seed", range(40))
def test_explanation_per_pod_unchanged_by_sharing(seed):
    snapshot, pending = random_cluster(seed)
    checker = PredicateChecker(snapshot, NAMESPACES)
    assert_explained_as_alone(snapshot, checker, pending)
    placements = schedule_pods(snapshot, pending, checker)
    left = [p for p in pending if placements[p.uid] is None]
    assert_explained_as_alone(snapshot, checker, left)
    assert_explained_as_alone(snapshot, checker, reversed(left))  # answers served from the cache
    checker.close()


def test_pods_differing_in_labels_a_bound_term_reads_get_their_own_answer():
    nodes = load(
        [
            {
                "kind": "Node",
                "metadata": {"name": f"n{i}", "labels": {"kubernetes.io/hostname": f"n{i}"}},
                "status": {"allocatable": {"cpu": "2", "memory": "4Gi", "pods": "110"}},
            }
            for i in range(3)
        ]
    ).nodes
    guard = load(
        [
            pod_doc(
                "guard",
                "default",
                {},
                {
                    "containers": [{"name": "c"}],
                    "affinity": {
                        "podAntiAffinity": {
                            "requiredDuringSchedulingIgnoredDuringExecution": [
                                {
                                    "topologyKey": "kubernetes.io/hostname",
                                    "labelSelector": {"matchLabels": {"app": "a"}},
                                }
                            ]
                        }
                    },
                },
            )
        ]
    ).pods[0]
    spec = {"containers": [{"name": "c", "resources": {"requests": {"cpu": "3"}}}]}
    a, b = load(
        [pod_doc("a", "default", {"app": "a"}, spec), pod_doc("b", "default", {"app": "b"}, spec)]
    ).pods
    snapshot = ClusterSnapshot(nodes)
    snapshot.add_pod(guard, "n0")
    checker = PredicateChecker(snapshot)
    # Too big for every node either way; only `a` is also kept off n0 by the guard, and
    # InterPodAffinity comes after NodeResourcesFit, so both read the same; a smaller request
    # then tells them apart.
    assert checker.explain(a) == checker.explain(b) == "0/3 nodes are available: 3 Insufficient cpu."
    small = {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}
    a, b = load(
        [pod_doc("a2", "default", {"app": "a"}, small), pod_doc("b2", "default", {"app": "b"}, small)]
    ).pods
    assert checker.explain(a) == (
        "2/3 nodes are available: 1 node(s) didn't satisfy existing pods anti-affinity rules."
    )
    assert checker.explain(b) == "3/3 nodes are available."
    checker.close()


def test_a_class_is_examined_node_by_node_once(monkeypatch):
    """200 pods of one shape with unique labels on 20 nodes: one pass over the nodes, not 200."""
    passes = Counter()
    original = PredicateChecker._diagnose_nodes

    def counted(self, cls, existing):
        passes["nodes"] += 1
        return original(self, cls, existing)

    monkeypatch.setattr(PredicateChecker, "_diagnose_nodes", counted)
    nodes = load(
        [
            {
                "kind": "Node",
                "metadata": {"name": f"n{i}"},
                "status": {"allocatable": {"cpu": "1", "memory": "4Gi", "pods": "110"}},
            }
            for i in range(20)
        ]
    ).nodes
    spec = {"containers": [{"name": "c", "resources": {"requests": {"cpu": "2"}}}]}
    pods = load([pod_doc(f"p{i}", "default", {"app": "x", "id": str(i)}, spec) for i in range(200)]).pods
    checker = PredicateChecker(ClusterSnapshot(nodes))
    answers = {checker.explain(p) for p in pods}
    assert answers == {"0/20 nodes are available: 20 Insufficient cpu."}
    assert passes["nodes"] == 1
    checker.close()
