"""Placement on arrays (issue 41 item 1): the removal simulation reads a pod's destinations off its
fit group's mask (`PredicateChecker.vector_mask`) when its filters reduce to per-node vectors, and
puts a run of one stand-in's pods on the pointer's node in one step (`PodMover.fill_on_paper`).

Table: the mask against the checker's answer node by node, for each filter the mask covers
(taints, node selector, unschedulable, requests, an extended resource, host ports) and each it
does not (hard spread, required pod (anti-)affinity, a bound pod's anti-affinity selecting the
pod), where there is no mask. Properties on the shared random clusters (tests/shared), with
constraints added at random: the mover's destination and the pointer it leaves equal a scalar
reference (the checker asked node by node, hint, pointer, its neighbour, then the scan) pod after
pod through a node's drain; and a run placed in one step takes the pods one by one would.
"""

from __future__ import annotations

import dataclasses
import random

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st
from random_clusters import random_cluster

from kubetide.autoscaler.scaledown.planning.placement import PodMover
from kubetide.autoscaler.scaledown.planning.update import pod_order
from kubetide.model import LabelSelector, Pod, Taint, Toleration, load_documents
from kubetide.model.pod import Affinity, PodAffinityTerm, TopologySpreadConstraint
from kubetide.scheduling import PredicateChecker
from kubetide.snapshot import ClusterSnapshot

ZONE = "topology.kubernetes.io/zone"
HOSTNAME = "kubernetes.io/hostname"


def _node_doc(name: str, cpu: str, *, labels=None, taints=(), unschedulable=False, gpu=0) -> dict:
    allocatable = {"cpu": cpu, "memory": "4Gi", "pods": "110"}
    if gpu:
        allocatable["example.com/gpu"] = str(gpu)
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {HOSTNAME: name, ZONE: f"z{name[-1]}", **(labels or {})}},
        "spec": {"taints": list(taints), "unschedulable": unschedulable},
        "status": {"allocatable": allocatable},
    }


def _pod_doc(name: str, node: str = "", cpu: str = "100m", *, app: str = "web", port=None, gpu=0) -> dict:
    requests = {"cpu": cpu}
    if gpu:
        requests["example.com/gpu"] = str(gpu)
    container: dict = {
        "name": "c",
        "image": "i",
        "resources": {"requests": requests, "limits": dict(requests)},
    }
    if port is not None:
        container["ports"] = [{"containerPort": port, "hostPort": port}]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": {"app": app}},
        "spec": {"nodeName": node, "containers": [container]},
        "status": {"phase": "Running" if node else "Pending"},
    }


NODES = [
    _node_doc("n0", "1"),
    _node_doc("n1", "4", taints=[{"key": "dedicated", "value": "x", "effect": "NoSchedule"}]),
    _node_doc("n2", "2", labels={"disk": "ssd"}),
    _node_doc("n3", "50m"),
    _node_doc("n4", "2", unschedulable=True),
    _node_doc("n5", "2", gpu=1),
]
BOUND = [
    _pod_doc("web-on-n0", "n0", "500m", port=8080),
    _pod_doc("db-on-n2", "n2", "500m", app="db"),
]
DB = LabelSelector((("app", "db"),))
WEB = LabelSelector((("app", "web"),))


def _with(pod: Pod, **changes) -> Pod:
    return dataclasses.replace(pod, **changes)


# name, a change to the pending pod, the nodes it fits (None: no mask, the checker's scan decides)
CASES = [
    ("plain", {}, ["n0", "n2", "n5"]),
    ("too big for n0's room", {"cpu": "600m"}, ["n2", "n5"]),
    ("tolerates n1's taint", {"tolerate": True}, ["n0", "n1", "n2", "n5"]),
    ("selects disk=ssd", {"selector": {"disk": "ssd"}}, ["n2"]),
    ("asks for a gpu", {"gpu": 1}, ["n5"]),
    ("host port taken on n0", {"port": 8080}, ["n2", "n5"]),
    ("free host port", {"port": 9090}, ["n0", "n2", "n5"]),
    ("soft spread only", {"spread": "ScheduleAnyway"}, ["n0", "n2", "n5"]),
    ("hard spread", {"spread": "DoNotSchedule"}, None),
    ("required anti-affinity", {"anti": DB}, None),
    ("required pod affinity", {"with": DB}, None),
]


def _pending(change: dict) -> Pod:
    doc = _pod_doc(
        "pending", "", change.get("cpu", "100m"), port=change.get("port"), gpu=change.get("gpu", 0)
    )
    pod = load_documents([doc], "test.yaml").pods[0]
    if change.get("tolerate"):
        pod = _with(pod, tolerations=(Toleration("dedicated", "Equal", "x", "NoSchedule"),))
    if "selector" in change:
        pod = _with(pod, node_selector=change["selector"])
    if "spread" in change:
        pod = _with(pod, topology_spread=(TopologySpreadConstraint(1, ZONE, change["spread"], WEB),))
    if "anti" in change:
        pod = _with(pod, affinity=Affinity(anti_required=(PodAffinityTerm(change["anti"], HOSTNAME),)))
    if "with" in change:
        pod = _with(pod, affinity=Affinity(pod_required=(PodAffinityTerm(change["with"], HOSTNAME),)))
    return pod


@pytest.mark.parametrize(("change", "fits"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_the_mask_is_the_checkers_answer_for_pods_whose_filters_are_vectors(change, fits):
    manifests = load_documents([*NODES, *BOUND], "test.yaml")
    snapshot = ClusterSnapshot(manifests.nodes, manifests.pods)
    pod = _pending(change)
    with PredicateChecker(snapshot) as checker:
        by_checker = [n.name for n in snapshot.nodes() if checker.fits(pod, n.name) is None]
        mask = checker.vector_mask(pod)
        if fits is None:
            assert mask is None
        else:
            assert mask is not None
            assert [n.name for n in snapshot.nodes() if mask[snapshot.slot_of(n.name)]] == fits
            assert by_checker == fits


def test_a_bound_pods_anti_affinity_selecting_the_pod_takes_its_mask_away():
    guard = load_documents([_pod_doc("guard", "n2", app="guard")], "test.yaml").pods[0]
    guard = _with(guard, affinity=Affinity(anti_required=(PodAffinityTerm(WEB, HOSTNAME),)))
    manifests = load_documents(NODES, "test.yaml")
    snapshot = ClusterSnapshot(manifests.nodes, [guard])
    web, db = _pending({}), load_documents([_pod_doc("db", app="db")], "test.yaml").pods[0]
    with PredicateChecker(snapshot) as checker:
        assert checker.vector_mask(web) is None  # the guard's term selects app=web
        assert checker.fits(web, "n2") is not None
        mask = checker.vector_mask(db)  # ... and not app=db
        assert mask is not None and mask[snapshot.slot_of("n2")]
        snapshot.remove_pod(guard.uid)
        mask = checker.vector_mask(web)  # no pod behind the term any more
        assert mask is not None and mask[snapshot.slot_of("n2")]


def test_the_mask_follows_the_snapshot_through_a_move_and_a_revert():
    manifests = load_documents([*NODES, *BOUND], "test.yaml")
    snapshot = ClusterSnapshot(manifests.nodes, manifests.pods)
    pod = _pending({"cpu": "400m"})
    with PredicateChecker(snapshot) as checker:
        n0 = snapshot.slot_of("n0")
        assert checker.vector_mask(pod)[n0]  # type: ignore[index]
        snapshot.fork()
        snapshot.add_pod(_pending({"cpu": "200m"}), "n0")  # 300m left
        assert not checker.vector_mask(pod)[n0]  # type: ignore[index]
        snapshot.revert()
        assert checker.vector_mask(pod)[n0]  # type: ignore[index]


# -- properties on random clusters -------------------------------------------------------------


def _scalar_destination(
    mover: PodMover, pod: Pod, hint: str | None, skip: set[str]
) -> tuple[str | None, int]:
    """The reference: the checker asked node by node, as the mover did before the mask: the hint,
    the pointer's node, its neighbour below, then the checker's scan from the pointer."""
    snapshot, checker, pointer = mover.snapshot, mover.checker, mover.pointer
    if hint is not None and hint not in skip and hint in snapshot and checker.fits(pod, hint) is None:
        return hint, pointer
    for slot in (pointer, pointer - 1):
        node = snapshot.node_at(slot) if 0 <= slot < len(snapshot.valid) else None
        if node is not None and node.name not in skip and checker.fits(pod, node.name) is None:
            return node.name, slot
    found = checker.find_node(pod, skip=skip, start=pointer)
    return found, pointer if found is None else snapshot.slot_of(found)


def _cluster(seed: int) -> tuple[list, list[Pod]]:
    """The shared random cluster of `seed`, with taints, tolerations, selectors and pod
    constraints added at random (the shared generator has none of them on bound pods)."""
    dump, _, _ = random_cluster(seed)
    manifests = load_documents(dump["items"], "random.yaml")
    rng = random.Random(seed)
    nodes = []
    for i, node in enumerate(manifests.nodes):
        labels = {**node.labels, ZONE: f"z{i % 2}", **({"disk": "ssd"} if rng.random() < 0.5 else {})}
        taints = (Taint("dedicated", "x", "NoSchedule"),) if rng.random() < 0.25 else ()
        meta = dataclasses.replace(node.meta, labels=labels)
        nodes.append(dataclasses.replace(node, meta=meta, taints=taints))
    pods = []
    for pod in manifests.pods:
        if not pod.node_name:
            continue
        draw = rng.random()
        if draw < 0.1:
            pod = _with(pod, tolerations=(Toleration("dedicated", "Equal", "x", "NoSchedule"),))
        elif draw < 0.2:
            pod = _with(pod, node_selector={"disk": "ssd"})
        elif draw < 0.3:
            selector = LabelSelector((("app", pod.labels.get("app", "")),))
            pod = _with(pod, topology_spread=(TopologySpreadConstraint(1, ZONE, "DoNotSchedule", selector),))
        elif draw < 0.35:
            selector = LabelSelector((("app", pod.labels.get("app", "")),))
            pod = _with(pod, affinity=Affinity(anti_required=(PodAffinityTerm(selector, HOSTNAME),)))
        pods.append(pod)
    return nodes, pods


@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 10**6), data=st.data())
def test_the_arrays_place_every_pod_where_the_scalar_search_does(seed, data):
    nodes, pods = _cluster(seed)
    names = [n.name for n in nodes]
    source = data.draw(st.sampled_from(names))
    own = sorted((p for p in pods if p.node_name == source), key=pod_order)
    skip = {source} | set(data.draw(st.lists(st.sampled_from(names), max_size=2)))
    hints = [data.draw(st.none() | st.sampled_from(names)) for _ in own]
    snapshot = ClusterSnapshot(nodes, pods)
    with PredicateChecker(snapshot) as checker:
        mover = PodMover(snapshot, checker)
        mover.pointer = data.draw(st.integers(0, len(nodes) - 1))
        masked = 0
        for pod, hint in zip(own, hints, strict=True):
            snapshot.remove_pod(pod.uid)
            standin = mover.standin(pod)
            masked += checker.vector_mask(standin) is not None
            expected = _scalar_destination(mover, standin, hint, skip)
            dest = mover.destination(standin, hint, skip)
            assert (dest, mover.pointer) == expected
            if dest is None:
                break
            snapshot.add_pod(pod, dest)
    event("some pods masked" if masked else "no pod masked")


@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 10**6), data=st.data())
def test_a_run_goes_on_the_pointers_node_as_its_pods_would_one_by_one(seed, data):
    nodes, pods = _cluster(seed)
    names = [n.name for n in nodes]
    source = data.draw(st.sampled_from(names))
    # Pods of a few shapes, repeated: runs of one stand-in, as a ReplicaSet's pods sort together.
    own = sorted((p for p in pods if p.node_name == source), key=pod_order)
    trial = [p for p in own for _ in range(data.draw(st.integers(1, 4)))]
    trial = [
        dataclasses.replace(p, meta=dataclasses.replace(p.meta, uid=f"{p.uid}-{i}"))
        for i, p in enumerate(trial)
    ]
    skip = {source}
    snapshot = ClusterSnapshot(nodes, pods)
    with PredicateChecker(snapshot) as checker:
        mover = PodMover(snapshot, checker)
        mover.pointer = data.draw(st.integers(0, len(nodes) - 1))
        pointer = mover.pointer
        added: dict[str, dict[str, int]] = {}
        placed = mover.fill_on_paper(trial, skip, added)
        # One by one: move_on_paper on the pointer's node only, until the first that does not go.
        one_by_one: dict[str, dict[str, int]] = {}
        taken = 0
        target = snapshot.node_at(pointer)
        for pod in trial:
            if target is None or target.name in skip:
                break
            mover.pointer = pointer
            if mover.move_on_paper(pod, None, set(names) - {target.name}, one_by_one) != target.name:
                break
            taken += 1
        assert mover.pointer == pointer
        assert placed == taken
        assert added == one_by_one
    event(f"placed {'none' if not placed else 'all' if placed == len(trial) else 'some'}")
