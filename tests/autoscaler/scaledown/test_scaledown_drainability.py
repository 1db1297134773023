"""Drainability rules: each rule, the flags that switch rules off, and the order between them."""

import pytest
from scaledown_fakes import pdb, pod, workload

from kubetide.autoscaler.scaledown.planning.drainability import (
    SAFE_TO_EVICT,
    SAFE_TO_EVICT_LOCAL_VOLUMES,
    DrainContext,
    DrainRules,
    Outcome,
    drain_node,
    index_workloads,
    pods_needing_homes,
    verdict,
)
from kubetide.autoscaler.scaledown.planning.pdb import PdbTracker
from kubetide.autoscaler.scaledown.reasons import PodReason
from kubetide.model.pod import MIRROR_ANNOTATION, Volume

NOW = 10_000.0
WORKLOADS = [
    workload("ReplicaSet", "rs", 3),
    workload("ReplicaSet", "small", 1),
    workload("StatefulSet", "sts", 2),
    workload("Job", "job", None),
    workload("ReplicaSet", "rs", 3, namespace="kube-system"),
]
MIRROR = {MIRROR_ANNOTATION: "x"}
UNSAFE = {SAFE_TO_EVICT: "false"}
SAFE = {SAFE_TO_EVICT: "true"}
HOST_PATH = (Volume("data", "hostPath"),)
EMPTY_DIR = (Volume("scratch", "emptyDir"),)


def ctx(pods=(), pdbs=(), workloads=WORKLOADS, **rules):
    index = index_workloads(workloads) if workloads is not None else None
    return DrainContext(DrainRules(**rules), PdbTracker(list(pdbs), list(pods), index), NOW, index)


def judge(p, pdbs=(), workloads=WORKLOADS, **rules):
    return verdict(p, ctx([p], pdbs, workloads, **rules))


CASES = [
    # (description, pod, pdbs, rules, outcome, reason)
    ("plain ReplicaSet pod moves", pod("a"), (), {}, Outcome.MOVE, None),
    (
        "1: mirror pod is skipped",
        pod("m", owner=("Node", "n1"), annotations=MIRROR),
        (),
        {},
        Outcome.SKIP,
        None,
    ),
    (
        "1 before 9: mirror pod with safe-to-evict=false is still skipped",
        pod("m", owner=None, annotations={**MIRROR, **UNSAFE}),
        (),
        {},
        Outcome.SKIP,
        None,
    ),
    (
        "2: terminating past grace + 30 s is skipped even when bare",
        pod("t", owner=None, deleted=NOW - 61, grace=30),
        (),
        {},
        Outcome.SKIP,
        None,
    ),
    (
        "2: terminating within grace + 30 s is judged normally",
        pod("t", owner=None, deleted=NOW - 59, grace=30),
        (),
        {},
        Outcome.BLOCK,
        PodReason.NOT_REPLICATED,
    ),
    (
        "3: missing ReplicaSet blocks",
        pod("x", owner=("ReplicaSet", "gone")),
        (),
        {},
        Outcome.BLOCK,
        PodReason.CONTROLLER_NOT_FOUND,
    ),
    (
        "3: missing StatefulSet blocks",
        pod("x", owner=("StatefulSet", "gone")),
        (),
        {},
        Outcome.BLOCK,
        PodReason.CONTROLLER_NOT_FOUND,
    ),
    (
        "3 before 5: missing controller blocks even with safe-to-evict=true",
        pod("x", owner=("Job", "gone"), annotations=SAFE),
        (),
        {},
        Outcome.BLOCK,
        PodReason.CONTROLLER_NOT_FOUND,
    ),
    (
        "3: ReplicaSet below min-replica-count blocks",
        pod("x", owner=("ReplicaSet", "small")),
        (),
        {"min_replica_count": 2},
        Outcome.BLOCK,
        PodReason.MIN_REPLICAS_REACHED,
    ),
    (
        "3: StatefulSets are not held to min-replica-count",
        pod("x", owner=("StatefulSet", "sts")),
        (),
        {"min_replica_count": 5},
        Outcome.MOVE,
        None,
    ),
    (
        "3 is off without skip-nodes-with-custom-controller-pods",
        pod("x", owner=("ReplicaSet", "gone")),
        (),
        {"skip_nodes_with_custom_controller_pods": False},
        Outcome.MOVE,
        None,
    ),
    ("4: DaemonSet pod", pod("d", owner=("DaemonSet", "ds")), (), {}, Outcome.DAEMONSET, None),
    (
        "4 before 8: DaemonSet pod in kube-system without PDB",
        pod("d", namespace="kube-system", owner=("DaemonSet", "ds")),
        (),
        {},
        Outcome.DAEMONSET,
        None,
    ),
    (
        "5 before 7: bare pod with safe-to-evict=true moves",
        pod("b", owner=None, annotations=SAFE),
        (),
        {},
        Outcome.MOVE,
        None,
    ),
    (
        "5 before 10: local storage with safe-to-evict=true moves",
        pod("l", volumes=HOST_PATH, annotations=SAFE),
        (),
        {},
        Outcome.MOVE,
        None,
    ),
    (
        "6 before 7: a finished bare pod needs no home",
        pod("f", owner=None, phase="Succeeded"),
        (),
        {},
        Outcome.DONE,
        None,
    ),
    ("7: bare pod blocks", pod("b", owner=None), (), {}, Outcome.BLOCK, PodReason.NOT_REPLICATED),
    (
        "7: custom controller blocks while the flag is on",
        pod("c", owner=("CronTab", "ct")),
        (),
        {},
        Outcome.BLOCK,
        PodReason.NOT_REPLICATED,
    ),
    (
        "7: custom controller is replicated when the flag is off",
        pod("c", owner=("CronTab", "ct")),
        (),
        {"skip_nodes_with_custom_controller_pods": False},
        Outcome.MOVE,
        None,
    ),
    (
        "8: young kube-system pod without PDB blocks",
        pod("k", namespace="kube-system", created=NOW - 60),
        (),
        {},
        Outcome.BLOCK,
        PodReason.UNMOVABLE_KUBE_SYSTEM_POD,
    ),
    (
        "8: kube-system pod with a PDB moves",
        pod("k", namespace="kube-system", created=NOW - 60),
        (pdb("k", "rs", namespace="kube-system", allowed=1),),
        {},
        Outcome.MOVE,
        None,
    ),
    (
        "8: a PDB in another namespace does not count",
        pod("k", namespace="kube-system", created=NOW - 60),
        (pdb("k", "rs", namespace="default", allowed=1),),
        {},
        Outcome.BLOCK,
        PodReason.UNMOVABLE_KUBE_SYSTEM_POD,
    ),
    (
        "8: older than an hour it no longer blocks (the reference's rule)",
        pod("k", namespace="kube-system", created=NOW - 3601),
        (),
        {},
        Outcome.MOVE,
        None,
    ),
    (
        "8 is off without skip-nodes-with-system-pods",
        pod("k", namespace="kube-system", created=NOW - 60),
        (),
        {"skip_nodes_with_system_pods": False},
        Outcome.MOVE,
        None,
    ),
    (
        "7 before 8: bare kube-system pod is NotReplicated",
        pod("k", namespace="kube-system", owner=None),
        (),
        {},
        Outcome.BLOCK,
        PodReason.NOT_REPLICATED,
    ),
    (
        "9: safe-to-evict=false blocks",
        pod("u", annotations=UNSAFE),
        (),
        {},
        Outcome.BLOCK,
        PodReason.NOT_SAFE_TO_EVICT_ANNOTATION,
    ),
    (
        "9 before 10: safe-to-evict=false with local storage names the annotation",
        pod("u", annotations=UNSAFE, volumes=HOST_PATH),
        (),
        {},
        Outcome.BLOCK,
        PodReason.NOT_SAFE_TO_EVICT_ANNOTATION,
    ),
    (
        "10: hostPath blocks",
        pod("l", volumes=HOST_PATH),
        (),
        {},
        Outcome.BLOCK,
        PodReason.LOCAL_STORAGE_REQUESTED,
    ),
    (
        "10: emptyDir on disk blocks",
        pod("l", volumes=EMPTY_DIR),
        (),
        {},
        Outcome.BLOCK,
        PodReason.LOCAL_STORAGE_REQUESTED,
    ),
    (
        "10: emptyDir in memory does not",
        pod("l", volumes=(Volume("shm", "emptyDir", "Memory"),)),
        (),
        {},
        Outcome.MOVE,
        None,
    ),
    (
        "10: volumes listed in safe-to-evict-local-volumes do not",
        pod(
            "l", volumes=(*HOST_PATH, *EMPTY_DIR), annotations={SAFE_TO_EVICT_LOCAL_VOLUMES: "data, scratch"}
        ),
        (),
        {},
        Outcome.MOVE,
        None,
    ),
    (
        "10: one unlisted local volume still blocks",
        pod("l", volumes=(*HOST_PATH, *EMPTY_DIR), annotations={SAFE_TO_EVICT_LOCAL_VOLUMES: "data"}),
        (),
        {},
        Outcome.BLOCK,
        PodReason.LOCAL_STORAGE_REQUESTED,
    ),
    (
        "10 is off without skip-nodes-with-local-storage",
        pod("l", volumes=HOST_PATH),
        (),
        {"skip_nodes_with_local_storage": False},
        Outcome.MOVE,
        None,
    ),
    (
        "expendable pods never block, even bare with local storage",
        pod("e", owner=None, priority=-100, volumes=HOST_PATH),
        (),
        {},
        Outcome.SKIP,
        None,
    ),
    (
        "the cutoff is exclusive: priority equal to it is not expendable",
        pod("e", owner=None, priority=-10),
        (),
        {},
        Outcome.BLOCK,
        PodReason.NOT_REPLICATED,
    ),
]


@pytest.mark.parametrize(
    ("pod_", "pdbs", "rules", "outcome", "reason"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_rule(pod_, pdbs, rules, outcome, reason):
    v = judge(pod_, pdbs, **rules)
    assert (v.outcome, v.reason) == (outcome, reason)


def test_unknown_controllers_leave_rule_3_silent():
    assert judge(pod("x", owner=("ReplicaSet", "gone")), workloads=None).outcome is Outcome.MOVE


def test_drain_node_sorts_pods_and_stops_at_the_first_blocker():
    pods = [
        pod("a"),
        pod("ds", owner=("DaemonSet", "ds")),
        pod("m", owner=None, annotations=MIRROR),
        pod("done", phase="Failed"),
        pod("exp", priority=-50),
    ]
    c = ctx(pods)
    d = drain_node(pods, c)
    assert [p.name for p in d.movable] == ["a"]
    assert [p.name for p in d.daemonset] == ["ds"]
    assert [p.name for p in d.terminal] == ["done"]
    assert [p.name for p in d.skipped] == ["m", "exp"]
    assert d.blocking is None and not d.empty

    blocked = drain_node([pod("a"), pod("bare", owner=None), pod("z")], c)
    assert blocked.blocking.pod.name == "bare"
    assert blocked.blocking.reason is PodReason.NOT_REPLICATED
    assert blocked.blocking.to_json() == {"pod": "default/bare", "reason": "NotReplicated"}
    assert not blocked.empty


def test_daemonset_and_mirror_pods_leave_a_node_empty():
    pods = [pod("ds", owner=("DaemonSet", "ds")), pod("m", owner=None, annotations=MIRROR)]
    assert drain_node(pods, ctx(pods)).empty


def test_nodes_being_drained_count_blocked_pods_as_needing_homes():
    pods = [
        pod("a"),
        pod("bare", owner=None),
        pod("ds", owner=("DaemonSet", "ds")),
        pod("m", annotations=MIRROR),
    ]
    assert [p.name for p in pods_needing_homes(pods, ctx(pods))] == ["a", "bare"]
