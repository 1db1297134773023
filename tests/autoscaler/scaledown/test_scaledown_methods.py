"""Disruption methods (planning/methods.py): CA's two, the order the planner tries them in, and
what it refuses of a method."""

from dataclasses import dataclass

import pytest
from scaledown_fakes import cloud_for, node, pod, snapshot_of, workload

from kubetide.autoscaler.inputs import LoopInputs
from kubetide.autoscaler.options import AutoscalerOptions
from kubetide.autoscaler.scaledown.planning import (
    CA_METHODS,
    REMOVABLE,
    Command,
    DisruptionMethod,
    EmptyNodeDeletion,
    MethodInputs,
    NodeStatus,
    Planner,
    ScaleDownPlan,
    UnderutilizedNodeRemoval,
    ca_method_name,
    propose_in_order,
)
from kubetide.clock import WorkTimer

OPTS = AutoscalerOptions()
BUSY = {"cluster-autoscaler.kubernetes.io/scale-down-disabled": "true"}  # a destination only


def inputs_for(ready, empty=(), risky=(), earlier=()):
    plan = ScaleDownPlan(now=0.0)
    for name in ready:
        plan.nodes[name] = NodeStatus(name, REMOVABLE, name in empty, 0.1)
    plan.candidate_set = list(ready)
    plan.risky = {name: "risky" for name in risky}
    return MethodInputs(plan, tuple(ready), snapshot_of([], []), cloud_for(), OPTS, tuple(earlier))


@pytest.mark.parametrize(
    ("ready", "empty", "risky", "claimed", "expected"),
    [
        # (ready in search order, empty ones, risky ones, claimed by an earlier method) ->
        # (empty-node deletion's nodes, underutilised-node removal's nodes)
        (["a", "b", "c"], ["b"], [], [], (("b",), ("a", "c"))),
        (["a", "b", "c", "d"], [], ["a", "c"], [], (None, ("b", "d", "a", "c"))),
        (["a", "b"], ["a", "b"], [], [], (("a", "b"), None)),
        (["a", "b", "c"], ["a"], [], ["a", "c"], (None, ("b",))),
        ([], [], [], [], (None, None)),
    ],
)
def test_ca_methods_split_ready_candidates_by_emptiness_and_drains_by_risk(
    ready, empty, risky, claimed, expected
):
    earlier = (Command("earlier", tuple(claimed)),) if claimed else ()
    inputs = inputs_for(ready, empty, risky, earlier)
    empties, drains = EmptyNodeDeletion().propose(inputs), UnderutilizedNodeRemoval().propose(inputs)
    assert (None if empties is None else empties.nodes, None if drains is None else drains.nodes) == expected
    for command, name in ((empties, "empty"), (drains, "underutilized")):
        if command is not None:
            assert (command.method, command.replacements) == (name, ())


def test_ca_method_names_are_the_scale_down_reason_labels():
    assert [m.name for m in CA_METHODS] == [ca_method_name(empty=True), ca_method_name(empty=False)]
    assert [m.name for m in CA_METHODS] == ["empty", "underutilized"]


# -- methods plugged into the planner -------------------------------------------------------------
@dataclass
class Prefer:
    """A test-only method: proposes one node, if it may go."""

    node: str
    name: str = "prefer"

    def propose(self, inputs: MethodInputs) -> Command | None:
        return Command(self.name, (self.node,)) if self.node in inputs.ready else None


@dataclass
class OnlyIfFirst:
    """Karpenter's rule around another method: it proposes only when no earlier method did."""

    inner: DisruptionMethod

    @property
    def name(self) -> str:
        return self.inner.name

    def propose(self, inputs: MethodInputs) -> Command | None:
        return None if inputs.earlier else self.inner.propose(inputs)


def planned(methods):
    """An empty node (a), two drains (b, c) and a destination (d), planned with `methods`."""
    nodes = [node("a"), node("b"), node("c"), node("d", annotations=BUSY)]
    pods = [pod("pb", "b", 300), pod("pc", "c", 300), pod("pd", "d", 200)]
    planner = Planner(OPTS, timer=WorkTimer(1e-3), timers_expired=True, methods=methods)
    inputs = LoopInputs(0.0, snapshot_of(nodes, pods), workloads=[workload("ReplicaSet", "rs", 100)])
    plan = planner.update(inputs, cloud=cloud_for("a", "b", "c", "d"))
    assert plan.candidate_set == ["a", "b", "c"]  # the search does not depend on the methods
    return plan.empty_to_delete, plan.drain_to_delete


@pytest.mark.parametrize(
    ("methods", "expected"),
    [
        (CA_METHODS, (["a"], ["b", "c"])),
        ((), ([], [])),
        ((UnderutilizedNodeRemoval(),), ([], ["b", "c"])),
        ((EmptyNodeDeletion(),), (["a"], [])),
        # A method before CA's claims its node first, and CA's leave it to it.
        ((Prefer("c"), *CA_METHODS), (["a"], ["c", "b"])),
        ((Prefer("c"),), ([], ["c"])),
        # Karpenter's shape: the first method that proposes wins the loop.
        ((EmptyNodeDeletion(), OnlyIfFirst(UnderutilizedNodeRemoval())), (["a"], [])),
        ((OnlyIfFirst(Prefer("zz")), OnlyIfFirst(UnderutilizedNodeRemoval())), ([], ["b", "c"])),
    ],
)
def test_the_planner_removes_what_its_methods_propose_in_order(methods, expected):
    assert planned(methods) == expected


@dataclass
class Propose:
    """A test-only method proposing exactly `command`."""

    command: Command
    name: str = "propose"

    def propose(self, inputs: MethodInputs) -> Command | None:
        return self.command


@pytest.mark.parametrize(
    ("methods", "words"),
    [
        ((Propose(Command("propose", ("x",))),), "proposed x: not a candidate removable now"),
        ((EmptyNodeDeletion(), Propose(Command("propose", ("b",)))), "proposed b: not a candidate"),
        # With a replacement, any node of the cluster; never one it lacks.
        ((Propose(Command("propose", ("x",), ("g",))),), "proposed x: not a candidate"),
    ],
)
def test_a_method_proposing_what_the_planner_cannot_carry_out_is_refused(methods, words):
    with pytest.raises(ValueError, match=words):
        propose_in_order(methods, inputs_for(["a", "b"], empty=["b"]))
