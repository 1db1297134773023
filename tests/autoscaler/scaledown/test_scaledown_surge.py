"""Surge before evict: which budget-pinned pods may leave by their Deployment's rollout (the
planner), and the actuator restarting each Deployment once, replacement first, never evicting."""

import dataclasses

import pytest
from scaledown_fakes import FakeActions, FakeCloud, FakeGroup, node, pdb, pod, snapshot_of

from kubetide.autoscaler.inputs import LoopInputs
from kubetide.autoscaler.options import AutoscalerOptions
from kubetide.autoscaler.scaledown.actuation.actuator import Actuator, Phase
from kubetide.autoscaler.scaledown.planning.planner import Planner
from kubetide.autoscaler.scaledown.planning.surge import SURGE_ANNOTATION
from kubetide.autoscaler.scaledown.reasons import NodeReason, PodReason
from kubetide.clock import WorkTimer
from kubetide.kube.permissions import SURGE_BEFORE_EVICT_COMPONENT
from kubetide.model import LabelSelector, ObjectMeta, OwnerReference, PodTemplate, Workload

BUSY = {"cluster-autoscaler.kubernetes.io/scale-down-disabled": "true"}
# One replica behind minAvailable 1: no eviction can ever take it.
PINNED = {"min_available": 1, "allowed": 0, "current_healthy": 1, "desired_healthy": 1, "expected_pods": 1}


def deployment(
    name="api", *, replicas=1, strategy="RollingUpdate", max_surge="25%", annotations=None, **status
):
    return Workload(
        "Deployment",
        ObjectMeta(name, "default", f"uid-{name}", annotations=dict(annotations or {})),
        LabelSelector((("app", name),)),
        PodTemplate(pod("template", owner=None)),
        replicas=replicas,
        strategy=strategy,
        max_surge=max_surge,
        max_unavailable="25%" if strategy == "RollingUpdate" else 0,
        **status,
    )


def replicaset(name="api", owner=("Deployment", "api")):
    meta = ObjectMeta(
        name,
        "default",
        f"uid-{name}",
        owner_references=(OwnerReference(owner[0], owner[1], f"uid-{owner[1]}", controller=True),),
    )
    return Workload(
        "ReplicaSet", meta, LabelSelector((("app", "api"),)), PodTemplate(pod("t", owner=None)), replicas=1
    )


def world(dep, *, enabled=True, owner=("ReplicaSet", "api")):
    options = AutoscalerOptions(surge_before_evict=enabled, node_delete_delay_after_taint=5)
    pinned = pod("api-0", "a", 200, owner=owner, labels={"app": "api"})
    snapshot = snapshot_of(
        [node("a"), node("d", annotations=BUSY)], [pinned, pod("other", "a", 100, owner=("ReplicaSet", "rs"))]
    )
    workloads = [
        dep,
        replicaset(),
        Workload(
            "ReplicaSet",
            ObjectMeta("rs", "default", "uid-rs"),
            LabelSelector((("app", "rs"),)),
            PodTemplate(pod("t", owner=None)),
            replicas=5,
        ),
    ]
    if owner[0] == "StatefulSet":
        workloads.append(
            dataclasses.replace(dep, kind="StatefulSet", meta=ObjectMeta("db", "default", "uid-db"))
        )
    return options, snapshot, workloads


def plan_for(options, snapshot, workloads, planner=None):
    cloud = FakeCloud()
    cloud.add(FakeGroup("g"), "a", "d")
    planner = planner or Planner(options, timer=WorkTimer(1e-3), timers_expired=True)
    return planner.update(
        LoopInputs(0.0, snapshot, pdbs=[pdb("api", "api", **PINNED)], workloads=workloads), cloud=cloud
    ), cloud


# (description, the Deployment, --surge-before-evict, pod owner, surged, words in the node's why)
CASES = [
    (
        "on: the rollout moves the pinned pod",
        deployment(),
        True,
        ("ReplicaSet", "api"),
        True,
        "surge before evict: restarts Deployment default/api first",
    ),
    (
        "off: plan says it would go with the flag",
        deployment(),
        False,
        ("ReplicaSet", "api"),
        False,
        'with --surge-before-evict (or the Deployment annotated kubetide.io/surge-before-evict: "true") it would go',
    ),
    (
        "off, but the Deployment opts in",
        deployment(annotations={SURGE_ANNOTATION: "true"}),
        False,
        ("ReplicaSet", "api"),
        True,
        "restarts Deployment default/api first",
    ),
    (
        "on, but the Deployment opts out",
        deployment(annotations={SURGE_ANNOTATION: "false"}),
        True,
        ("ReplicaSet", "api"),
        False,
        'opts out of surge before evict (kubetide.io/surge-before-evict: "false")',
    ),
    (
        "Recreate never surges",
        deployment(strategy="Recreate"),
        True,
        ("ReplicaSet", "api"),
        False,
        "is never surged: its strategy is Recreate",
    ),
    (
        "maxSurge rounding to 0 never surges",
        deployment(max_surge=0),
        True,
        ("ReplicaSet", "api"),
        False,
        "its maxSurge 0 rounds to 0 pods",
    ),
    (
        "a StatefulSet's pod never surges",
        deployment(),
        True,
        ("StatefulSet", "db"),
        False,
        "its controller is a StatefulSet, and only Deployments start a replacement first",
    ),
]


@pytest.mark.parametrize(
    ("dep", "enabled", "owner", "surged", "words"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_which_pinned_pods_may_leave_by_a_surge(dep, enabled, owner, surged, words):
    options, snapshot, workloads = world(dep, enabled=enabled, owner=owner)
    plan, _ = plan_for(options, snapshot, workloads)
    a = plan.nodes["a"]
    assert words in a.explain()
    if surged:
        assert plan.candidate_set == ["a"] and plan.surges["a"].deployments == (("default", "api"),)
        assert plan.surges["a"].pods == {"uid-default-api-0"}
        assert plan.pdb_remaining == {"default/api": 0}  # a surge uses no budget
    else:
        assert plan.candidate_set == [] and plan.surges == {}
        assert (a.reason, a.blocking_pod.reason) == (NodeReason.BLOCKED_BY_POD, PodReason.NOT_ENOUGH_PDB)


@pytest.mark.parametrize(
    ("annotations", "enabled", "words"),
    [
        (
            {SURGE_ANNOTATION: "true"},
            False,
            "Deployment default/api is not surged: kubetide may not restart Deployments",
        ),
        # Not opted in: the plan still says what would let it go, as with the permission.
        ({}, False, "with --surge-before-evict (or the Deployment annotated"),
        # `kubetide run` stops at start in this case; the planner alone still never surges.
        ({}, True, "Deployment default/api is not surged: kubetide may not restart Deployments"),
        # Opting out is said first: that Deployment would not be surged even with the permission.
        ({SURGE_ANNOTATION: "false"}, True, "opts out of surge before evict"),
    ],
    ids=["opted-in", "flag-off", "flag-on", "opted-out"],
)
def test_without_the_permission_to_restart_deployments_none_is_surged(annotations, enabled, words):
    options, snapshot, workloads = world(deployment(annotations=annotations), enabled=enabled)
    allowed, _ = plan_for(options, snapshot, workloads)
    plan, _ = plan_for(options.with_values(may_restart_deployments=False), snapshot, workloads)
    a = plan.nodes["a"]
    assert plan.candidate_set == [] and plan.surges == {}
    assert (a.reason, a.blocking_pod.reason) == (NodeReason.BLOCKED_BY_POD, PodReason.NOT_ENOUGH_PDB)
    assert words in a.explain()
    if "may not restart" in words:
        # The component kubetide run's start-up line names too (decision code imports no kube/).
        assert SURGE_BEFORE_EVICT_COMPONENT in a.explain()
        # The permission is all that differs: with it, the same node goes by a surge.
        assert allowed.candidate_set == ["a"] and allowed.surges["a"].deployments == (("default", "api"),)


def test_may_restart_deployments_is_no_flag():
    from kubetide.autoscaler.options import FLAGS

    assert "may-restart-deployments" not in FLAGS and "surge-before-evict" in FLAGS


def started(dep, **status):
    options, snapshot, workloads = world(dep)
    plan, cloud = plan_for(options, snapshot, workloads)
    actions = FakeActions()
    actuator = Actuator(options, actions, cloud)
    actuator.start(plan, snapshot, 0.0)
    return actuator, actions, snapshot, workloads


def test_the_actuator_restarts_the_deployment_once_and_never_evicts_the_pinned_pod():
    actuator, actions, snapshot, workloads = started(deployment())
    actuator.tick(snapshot, 5.0, workloads=workloads)
    restarts = [c for c in actions.calls if c[0] == "restart_deployment"]
    assert restarts == [("restart_deployment", "default/api", 5.0)]
    assert "default/api-0" not in actions.evicted and "default/other" in actions.evicted
    assert ("Deployment", "default/api", "Normal", "SurgeBeforeEvict") in [e[:4] for e in actions.events]
    # The pod is still there (its replacement is not available yet): watched, not restarted again.
    snapshot.remove_pod("uid-default-other")
    actuator.tick(snapshot, 15.0, workloads=workloads)
    assert len([c for c in actions.calls if c[0] == "restart_deployment"]) == 1
    assert actuator.deletions["a"].phase is Phase.EVICTING
    # The Deployment controller removed it once the replacement was available: the drain goes on.
    snapshot.remove_pod("uid-default-api-0")
    assert actuator.tick(snapshot, 25.0, workloads=workloads).deleted == ["a"]


def test_a_deployment_already_rolling_out_is_waited_for_not_restarted():
    rolling = deployment(generation=3, status_observed_generation=3, status_updated_replicas=0)
    actuator, actions, snapshot, workloads = started(rolling)
    actuator.tick(snapshot, 5.0, workloads=workloads)
    assert not [c for c in actions.calls if c[0] == "restart_deployment"]
    assert "default/api-0" not in actions.evicted


def test_a_refused_restart_abandons_the_drain_and_says_why():
    actuator, actions, snapshot, workloads = started(deployment())
    actions.fail_restart = True
    result = actuator.tick(snapshot, 5.0, workloads=workloads)
    assert "could not restart Deployment default/api to surge its pods" in result.failed["a"]
    assert "a" not in actuator.deletions


def test_a_restarted_process_resumes_a_surge_from_its_recovery_plan():
    from kubetide.autoscaler.ports import TO_BE_DELETED_TAINT
    from kubetide.autoscaler.scaledown.actuation.restart import recover
    from kubetide.model import Taint

    options, snapshot, workloads = world(deployment())
    tainted = dataclasses.replace(
        snapshot.node("a"), taints=(Taint(TO_BE_DELETED_TAINT, "100", "NoSchedule"),)
    )
    snapshot = snapshot_of([tainted, snapshot.node("d")], list(snapshot.pods()))
    cloud = FakeCloud()
    cloud.add(FakeGroup("g"), "a", "d")
    actions = FakeActions()
    planner = Planner(options, timer=WorkTimer(1e-3))
    actuator = Actuator(options, actions, cloud, planner)
    report = recover(
        planner,
        actuator,
        snapshot,
        cloud=cloud,
        now=110.0,
        pdbs=[pdb("api", "api", **PINNED)],
        workloads=workloads,
    )
    assert report.resumed == ["a"]
    actuator.tick(snapshot, 110.0, workloads=workloads)
    assert ("restart_deployment", "default/api", 110.0) in actions.calls
    assert "default/api-0" not in actions.evicted
