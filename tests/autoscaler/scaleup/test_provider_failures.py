"""Ports that say how they fail (issue 40, item 3): a group whose provider gives no template, or
raises one of the port's typed errors, is passed over with a named reason that the plan, the status
document and an Event all carry; the other groups go on. Anything else a provider raises is a bug
and goes up, never a silently skipped group."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from _scaleup_helpers import FakeGroup, node, pod

from kubetide.autoscaler.inputs import LoopInputs
from kubetide.autoscaler.loop import Autoscaler
from kubetide.autoscaler.options import AutoscalerOptions
from kubetide.autoscaler.ports import PriceError, ProviderErrorCode, TemplateError
from kubetide.autoscaler.scaleup.orchestrator import ScaleUp
from kubetide.autoscaler.scaleup.skips import GroupSkip, SkipReason
from kubetide.autoscaler.status import ProviderFailure, parse_status_yaml, status_yaml
from kubetide.clock import ManualClock, WorkTimer
from kubetide.model import Node
from kubetide.snapshot import ClusterSnapshot


def _raise(exc: Exception) -> Callable[[], object]:
    def answer() -> object:
        raise exc

    return answer


class AnsweringGroup(FakeGroup):
    """A group whose template and price come from the given callables."""

    def __init__(self, gid: str, template: Callable[[], object], price: Callable[[], object]):
        super().__init__(gid, node(f"{gid}-template"), max_size=5)
        self._answer_template, self._answer_price = template, price

    def template_node(self):
        return self._answer_template()

    def price_per_hour(self):
        return self._answer_price()


def fine_template() -> Node:
    return node("template")


# name, template answer, price answer, the skip, event reason, event type
CASES = [
    (
        "no template",
        lambda: None,
        lambda: 1.0,
        GroupSkip(SkipReason.NO_TEMPLATE),
        "NoTemplateNode",
        "Normal",
    ),
    (
        "template error from the cloud",
        _raise(TemplateError("broken", "broken: describing launch template lt-1: Throttling")),
        lambda: 1.0,
        GroupSkip(
            SkipReason.TEMPLATE_ERROR,
            "broken: describing launch template lt-1: Throttling",
            "cloudProviderError",
        ),
        "FailedToGetTemplateNode",
        "Warning",
    ),
    (
        "template error in the group's settings",
        _raise(
            TemplateError("broken", "broken: capacity annotations: cpu: bad", ProviderErrorCode.CONFIGURATION)
        ),
        lambda: 1.0,
        GroupSkip(SkipReason.TEMPLATE_ERROR, "broken: capacity annotations: cpu: bad", "configurationError"),
        "FailedToGetTemplateNode",
        "Warning",
    ),
    (
        "price error",
        fine_template,
        _raise(PriceError("broken", "pricing API: 503")),
        GroupSkip(SkipReason.PRICE_ERROR, "pricing API: 503", "cloudProviderError"),
        "FailedToGetNodePrice",
        "Warning",
    ),
]
IDS = [case[0] for case in CASES]


def groups_with(template, price) -> list[FakeGroup]:
    # "broken" sorts first and would be as good a choice as "fine" if it answered.
    return [AnsweringGroup("broken", template, price), FakeGroup("fine", node("fine-template"), max_size=5)]


def plan(groups, pending):
    snapshot = ClusterSnapshot([node("n1", cpu=10)])
    inputs = LoopInputs(1000.0, snapshot, pending=pending)
    return ScaleUp(AutoscalerOptions(), timer=WorkTimer(1e-3), seed=1).plan(inputs, node_groups=groups)


@pytest.mark.parametrize(("name", "template", "price", "skip", "reason", "type_"), CASES, ids=IDS)
def test_the_group_is_skipped_with_its_named_reason_and_an_event(name, template, price, skip, reason, type_):
    result = plan(groups_with(template, price), [pod("p", cpu=100)])
    assert result.skipped_groups == {"broken": skip}
    assert skip.provider_name == reason
    assert [(i.group_id, i.delta) for i in result.increases] == [("fine", 1)]
    [event] = [e for e in result.events if e.reason == reason]
    assert (event.kind, event.key, event.type.value) == (
        "ConfigMap",
        "kube-system/cluster-autoscaler-status",
        type_,
    )
    assert event.message == f"Scale-up skipped group broken: {skip}"
    assert event in result.events_after(())  # said whether or not any increase succeeds


class View:
    def __init__(self, snapshot: ClusterSnapshot, pending):
        self._snapshot, self._pending = snapshot, pending

    def snapshot(self):
        return self._snapshot

    def pending_pods(self):
        return self._pending

    def pdbs(self):
        return []

    def workloads(self):
        return []

    def configmap(self, namespace, name):
        return None

    def refresh(self):
        pass


class Cloud:
    def __init__(self, groups):
        self._groups = groups

    def node_groups(self):
        return self._groups

    def node_group_for(self, n):
        return None


class Actions:
    def __init__(self):
        self.statuses, self.events = [], []

    def write_status(self, status):
        self.statuses.append(status)

    def emit_event(self, event):
        self.events.append(event)

    def add_taint(self, node_name, taint):
        pass

    def remove_taint(self, node_name, key):
        pass


@pytest.mark.parametrize(("name", "template", "price", "skip", "reason", "type_"), CASES, ids=IDS)
def test_the_loop_writes_the_reason_in_the_status_and_emits_the_event(
    name, template, price, skip, reason, type_
):
    actions = Actions()
    view = View(ClusterSnapshot([node("n1", cpu=10)]), [pod("p", cpu=100)])
    autoscaler = Autoscaler(
        AutoscalerOptions(),
        ManualClock(1000.0),
        view,
        actions,
        Cloud(groups_with(template, price)),
        timer=WorkTimer(1e-4),
    )
    result = autoscaler.run_once()
    assert result.scaled_up == {"fine": 1}
    status = actions.statuses[-1]
    failure = ProviderFailure(reason, skip.error_code, skip.detail)
    broken, fine = status.node_group("broken"), status.node_group("fine")
    assert broken is not None and fine is not None
    assert broken.scale_up.provider_failure == failure and fine.scale_up.provider_failure is None
    # The document as the ConfigMap holds it says so too, and reads back the same.
    assert f"reason: {reason}" in status_yaml(status)
    assert parse_status_yaml(status_yaml(status)).node_group("broken").scale_up.provider_failure == failure
    assert [(e.reason, e.type.value) for e in actions.events if e.reason == reason] == [(reason, type_)]


@pytest.mark.parametrize(
    ("template", "price", "bug"),
    [
        (_raise(RuntimeError("provider bug")), lambda: 1.0, RuntimeError),
        (_raise(NotImplementedError("no templates here")), lambda: 1.0, NotImplementedError),
        (fine_template, _raise(KeyError("m9.huge")), KeyError),
        (fine_template, _raise(ValueError("price is not a number")), ValueError),
    ],
    ids=["template RuntimeError", "template NotImplementedError", "price KeyError", "price ValueError"],
)
def test_a_provider_bug_is_not_swallowed(template, price, bug):
    with pytest.raises(bug):
        plan(groups_with(template, price), [pod("p", cpu=100)])


def test_a_group_without_a_price_is_priced_none_not_skipped():
    """None is the port's normal "no price for this group": the price expander prefers a priced
    group, and the unpriced one is not passed over."""
    priced = FakeGroup("priced", node("priced-template"), max_size=5, price=0.5)
    unpriced = FakeGroup("unpriced", node("unpriced-template"), max_size=5)
    result = ScaleUp(AutoscalerOptions(expander=("price",)), timer=WorkTimer(1e-3), seed=1).plan(
        LoopInputs(1000.0, ClusterSnapshot([node("n1", cpu=10)]), pending=[pod("p", cpu=100)]),
        node_groups=[unpriced, priced],
    )
    assert not result.skipped_groups
    assert {o.group_id: o.price_per_hour for o in result.options} == {"unpriced": None, "priced": 0.5}
    assert [(i.group_id, i.delta) for i in result.increases] == [("priced", 1)]
