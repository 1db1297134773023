"""Trials on paper (issue 30): placing `paper_pods` with PodMover.move_on_paper and moving the others
gives, pod after pod, the destinations and the next-fit pointer that moving every pod gives, and
leaves the snapshot untouched when every pod is on paper.

Random clusters: nodes of several sizes in two zones, some tainted or labelled for a selector, some
in the skip set, holding pods of random requests (cpu, memory, an extended resource), some with a
hard zone spread, a required anti-affinity or pod affinity over two apps; then a random sequence
of one node's pods (the node tried, in the skip set), each with or without a hint, is placed both
ways from the same pointer; and on paper a third way, runs of paper pods without a hint put on the
pointer's node together (PodMover.fill_on_paper), as the candidate search does. Stand-ins kept from
an earlier loop's cluster (`Standins`, as the planner keeps them) place each pod of the next where a
fresh mover does, pod by pod.
"""

from __future__ import annotations

import dataclasses

from hypothesis import assume, event, given, settings
from hypothesis import strategies as st
from scaledown_fakes import node, pod

from kubetide.autoscaler.scaledown.planning.placement import (
    PodMover,
    Standins,
    _standin_key,
    is_node_local,
    paper_pods,
)
from kubetide.model import LabelSelector, Taint, Toleration
from kubetide.model.pod import Affinity, PodAffinityTerm, TopologySpreadConstraint
from kubetide.scheduling import PredicateChecker
from kubetide.snapshot import ClusterSnapshot

GPU = "example.com/gpu"
ZONE = "topology.kubernetes.io/zone"


@st.composite
def clusters(draw):
    nodes, pods = [], []
    for i in range(draw(st.integers(2, 7))):
        cpu = draw(st.sampled_from([500, 1000, 2000]))
        taints = [Taint("dedicated", "x", "NoSchedule")] if draw(st.booleans()) and i % 3 == 0 else []
        labels = {"disk": "ssd"} if draw(st.booleans()) else {}
        extra = {GPU: draw(st.integers(0, 2))}
        labels[ZONE] = f"z{i % 2}"
        nodes.append(node(f"n{i}", cpu, memory=2 * 2**30, labels=labels, taints=taints, extra=extra))
        for j in range(draw(st.integers(0, 5))):
            p = pod(
                f"p{i}-{j}",
                f"n{i}",
                draw(st.sampled_from([50, 100, 250, 400])),
                memory=draw(st.sampled_from([0, 2**28, 2**29])),
                extra={GPU: 1} if draw(st.integers(0, 4)) == 0 else None,
            )
            if draw(st.integers(0, 3)) == 0:
                p = dataclasses.replace(p, node_selector={"disk": "ssd"})
            if draw(st.integers(0, 3)) == 0:
                p = dataclasses.replace(p, tolerations=(Toleration("dedicated", "Equal", "x", "NoSchedule"),))
            app = draw(st.sampled_from(["a", "b"]))
            p = dataclasses.replace(p, meta=dataclasses.replace(p.meta, labels={"app": app}))
            selector = LabelSelector((("app", draw(st.sampled_from(["a", "b"]))),))
            constraint = draw(st.sampled_from(["", "", "", "spread", "anti", "affinity"]))
            if constraint == "spread":
                hard = TopologySpreadConstraint(1, ZONE, "DoNotSchedule", selector)
                p = dataclasses.replace(p, topology_spread=(hard,))
            elif constraint == "anti":
                anti = PodAffinityTerm(selector, "kubernetes.io/hostname")
                p = dataclasses.replace(p, affinity=Affinity(anti_required=(anti,)))
            elif constraint == "affinity":
                with_ = PodAffinityTerm(selector, ZONE)
                p = dataclasses.replace(p, affinity=Affinity(pod_required=(with_,)))
            pods.append(p)
    return nodes, pods


def _draw_trial(data, nodes, pods):
    """A trial drawn on the cluster: the node whose removal is tried (its pods move; it is in the
    skip set with up to two others), its pods in a random order each with or without a hint, and
    where the pointer starts."""
    names = [n.name for n in nodes]
    source = data.draw(st.sampled_from(names))
    own = [p for p in pods if p.node_name == source]
    assume(own)
    skip = {source} | set(data.draw(st.lists(st.sampled_from(names), max_size=2)))
    trial = data.draw(st.permutations(own))
    hints = [data.draw(st.none() | st.sampled_from(names)) for _ in trial]
    start = data.draw(st.integers(0, len(nodes) - 1))
    return skip, trial, hints, start


def _moved_one_by_one(mover, snapshot, trial, hints, skip, start):
    """The reference: (destination, pointer) per pod of `trial`, each moved for real with
    PodMover.move from `start`, up to the first that finds no place; the snapshot is reverted after."""
    mover.pointer = start
    snapshot.fork()
    moved: list[tuple[str | None, int]] = []
    for p, hint in zip(trial, hints, strict=True):
        dest = mover.move(p.uid, hint, skip)
        moved.append((dest, mover.pointer))
        if dest is None:
            break
    snapshot.revert()
    return moved


@settings(max_examples=300)
@given(cluster=clusters(), data=st.data())
def test_a_trial_on_paper_finds_what_moving_the_pods_finds(cluster, data):
    nodes, pods = cluster
    skip, trial, hints, start = _draw_trial(data, nodes, pods)

    snapshot = ClusterSnapshot(nodes, pods)
    with PredicateChecker(snapshot) as checker:
        mover = PodMover(snapshot, checker)
        stamps = [s for _, s in snapshot.stamps()]
        paper = paper_pods(trial)
        mover.pointer = start
        added: dict[str, dict[str, int]] = {}
        on_paper = []
        snapshot.fork()
        for p, hint in zip(trial, hints, strict=True):
            if p.uid in paper:
                dest = mover.move_on_paper(p, hint, skip, added)
            else:
                dest = mover.move(p.uid, hint, skip, added=added)
            on_paper.append((dest, mover.pointer))
            if dest is None:
                break
        snapshot.revert()
        if len(paper) == len(trial):
            assert [s for _, s in snapshot.stamps()] == stamps  # nothing moved

        # The same on paper, with each run of paper pods without a hint put on the pointer's
        # node together first (fill_on_paper), as simulate_removal does.
        assert _moves(mover, snapshot, trial, hints, skip, start, paper) == on_paper

        moved = _moved_one_by_one(mover, snapshot, trial, hints, skip, start)
    event("all on paper" if len(paper) == len(trial) else "some on paper" if paper else "none on paper")
    assert on_paper == moved


def test_only_pods_whose_fit_reads_their_node_alone_go_on_paper():
    plain = pod("plain", "n0")
    selector = LabelSelector((("app", "plain"),))
    soft = TopologySpreadConstraint(1, "zone", "ScheduleAnyway", selector)
    hard = dataclasses.replace(soft, when_unsatisfiable="DoNotSchedule")
    term = PodAffinityTerm(selector, "kubernetes.io/hostname")
    assert is_node_local(plain)
    assert is_node_local(dataclasses.replace(plain, topology_spread=(soft,)))
    assert not is_node_local(dataclasses.replace(plain, topology_spread=(hard,)))
    assert not is_node_local(dataclasses.replace(plain, affinity=Affinity(anti_required=(term,))))
    assert not is_node_local(dataclasses.replace(plain, affinity=Affinity(pod_required=(term,))))


def _changed(p, change):
    """`p` as a later loop may show it under the same UID: as it was (the same object), as an equal
    copy (a new object), or with other labels, requests or node selector."""
    if change == "copy":
        return dataclasses.replace(p)
    if change == "labels":
        other = "b" if p.meta.labels.get("app") == "a" else "a"
        return dataclasses.replace(p, meta=dataclasses.replace(p.meta, labels={"app": other}))
    if change == "requests":
        return pod(p.name, p.node_name, 300, memory=2**27)
    if change == "selector":
        return dataclasses.replace(p, node_selector={} if p.node_selector else {"disk": "ssd"})
    return p


def _moves(mover, snapshot, trial, hints, skip, start, paper):
    """(destination, pointer) per pod of `trial` as simulate_removal gives them: runs of paper pods
    without a hint filled on the pointer's node, other paper pods moved on paper, the rest moved;
    the snapshot is reverted after."""
    mover.pointer = start
    added: dict[str, dict[str, int]] = {}
    found: list[tuple[str | None, int]] = []
    snapshot.fork()
    i = 0
    while i < len(trial) and (not found or found[-1][0] is not None):
        p, hint = trial[i], hints[i]
        if p.uid in paper and hint is None:
            end = i + 1
            while end < len(trial) and hints[end] is None and trial[end].uid in paper:
                end += 1
            placed = mover.fill_on_paper(trial[i:end], skip, added)
            found.extend((mover.pointer_node(), mover.pointer) for _ in range(placed))
            i += placed
            if placed:
                continue
        if p.uid in paper:
            dest = mover.move_on_paper(p, hint, skip, added)
        else:
            dest = mover.move(p.uid, hint, skip, added=added)
        found.append((dest, mover.pointer))
        i += 1
    snapshot.revert()
    return found


@settings(max_examples=150)
@given(cluster=clusters(), data=st.data())
def test_stand_ins_kept_from_an_earlier_loop_place_every_pod_where_a_fresh_search_does(cluster, data):
    """The planner keeps its pods' stand-ins across loops (`Standins`). A search on the next loop's
    cluster (pods replaced under their UIDs, or gone) with the kept stand-ins places each pod, on
    paper and for real, where moving it pod by pod with a fresh mover does."""
    nodes, pods = cluster
    standins = Standins()
    before = ClusterSnapshot(nodes, pods)
    with PredicateChecker(before) as checker:
        mover = PodMover(before, checker, standins)
        for p in pods:  # the last loop's search asked for every pod's stand-in
            mover.standin(p)
    changes = ["same", "same", "copy", "labels", "requests", "selector", "gone"]
    later = [_changed(p, c) for p in pods if (c := data.draw(st.sampled_from(changes))) != "gone"]
    standins.new_pass()

    skip, trial, hints, start = _draw_trial(data, nodes, later)
    snapshot = ClusterSnapshot(nodes, later)
    with PredicateChecker(snapshot) as checker:
        kept = PodMover(snapshot, checker, standins)
        for p in later:  # each stand-in is of the pod's own class, whichever pod it was copied from
            assert _standin_key(kept.standin(p)) == _standin_key(p)
        found = _moves(kept, snapshot, trial, hints, skip, start, paper_pods(trial))
        reference = _moved_one_by_one(PodMover(snapshot, checker), snapshot, trial, hints, skip, start)
    assert found == reference


def test_a_stand_in_is_reused_only_for_a_pod_of_its_class():
    """Table: what a kept stand-in answers for a pod seen again under its UID in a later pass."""
    first = dataclasses.replace(
        pod("web-1", "n0", 100), meta=dataclasses.replace(pod("web-1", "n0").meta, labels={"app": "a"})
    )
    twin = dataclasses.replace(first, meta=dataclasses.replace(first.meta, name="web-2", uid="web-2"))
    cases = [
        # (the pod in the later pass, whether it gets the very stand-in the first pass made)
        (first, True),  # the same object
        (dataclasses.replace(first), True),  # an equal copy: same class, the kept stand-in
        (twin, True),  # another pod of the same class
        (_changed(first, "labels"), False),
        (_changed(first, "requests"), False),
        (_changed(first, "selector"), False),
    ]
    for later, same in cases:
        standins = Standins()
        made = standins.of(first)
        assert made.node_name == ""
        standins.new_pass()
        got = standins.of(later)
        assert (got is made) == same, later
        assert _standin_key(got) == _standin_key(later)
