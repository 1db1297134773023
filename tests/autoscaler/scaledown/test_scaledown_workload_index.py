"""A pod's workload as the single-replica hold and the unblock checks find it (`replicas_of`), through
the index each LoopInputs keeps of its own workloads: the first workload of a kind, namespace and
name; none when the workloads are unknown; and a copy with other workloads, or other inputs asked
in between, answer from their own workloads, never from an index built for others."""

from __future__ import annotations

import dataclasses

import pytest
from scaledown_fakes import pod, workload

from kubetide.autoscaler.inputs import LoopInputs
from kubetide.autoscaler.scaledown.explanation.unblock_search import replicas_of
from kubetide.snapshot import ClusterSnapshot

WORKLOADS = (
    workload("ReplicaSet", "web", replicas=3),
    workload("ReplicaSet", "web", replicas=7),  # the same identity again: the first one counts
    workload("ReplicaSet", "web", replicas=5, namespace="other"),
    workload("StatefulSet", "web", replicas=1),
    workload("ReplicaSet", "solo", replicas=1),
)


def inputs_with(workloads) -> LoopInputs:
    return LoopInputs(0.0, ClusterSnapshot([], []), workloads=workloads)


@pytest.mark.parametrize(
    ("owner", "namespace", "replicas"),
    [
        (("ReplicaSet", "web"), "default", 3),
        (("ReplicaSet", "web"), "other", 5),
        (("StatefulSet", "web"), "default", 1),
        (("ReplicaSet", "solo"), "default", 1),
        (("ReplicaSet", "gone"), "default", None),  # a controller the workloads lack
        (("Deployment", "web"), "default", None),  # the name of another kind's
        (None, "default", None),  # a bare pod
    ],
)
def test_a_pod_finds_the_first_workload_of_its_controllers_kind_namespace_and_name(
    owner, namespace, replicas
):
    p = pod("p", "n0", namespace=namespace, owner=owner)
    inputs = inputs_with(WORKLOADS)
    assert replicas_of(p, inputs) == replicas
    assert replicas_of(p, inputs) == replicas  # asked again: from the index built the first time


def test_unknown_workloads_answer_nothing():
    assert replicas_of(pod("p", "n0", owner=("ReplicaSet", "web")), inputs_with(None)) is None


def test_inputs_with_other_workloads_answer_from_their_own():
    p = pod("p", "n0", owner=("ReplicaSet", "web"))
    first = inputs_with(WORKLOADS)
    assert replicas_of(p, first) == 3
    scaled = dataclasses.replace(first, workloads=(workload("ReplicaSet", "web", replicas=4),))
    assert replicas_of(p, scaled) == 4
    assert replicas_of(p, dataclasses.replace(first, workloads=())) is None
    assert replicas_of(p, first) == 3  # the first inputs' answer is unchanged by the others
    assert replicas_of(p, inputs_with(WORKLOADS[3:])) is None
    assert first == dataclasses.replace(first)  # the index is no part of the inputs' value
