"""A cheaper-group replacement in flight, recorded on the nodes it stands in for and taken back by
a restarted process (scaledown/actuation/restart.py): which records come back, which are dropped
and why, and that the annotation follows the planner's pending replacements loop by loop."""

from __future__ import annotations

import dataclasses
import json

import pytest
from scaledown_fakes import FakeActions, FakeCloud, FakeGroup, node, snapshot_of, with_taints

from kubetide.autoscaler.options import AutoscalerOptions
from kubetide.autoscaler.ports import TO_BE_DELETED_TAINT, ActionError
from kubetide.autoscaler.scaledown.actuation.actuator import Actuator
from kubetide.autoscaler.scaledown.actuation.restart import (
    REPLACEMENT_ANNOTATION,
    ReplacementRecords,
    parse_replacement_record,
    recover,
    replacement_record,
)
from kubetide.autoscaler.scaledown.planning import PendingReplacement, Planner
from kubetide.clock import WorkTimer
from kubetide.durations import rfc3339
from kubetide.model import Taint

LAUNCHED = 1_800_000_000.0  # when the replacement was asked for
NOW = LAUNCHED + 60
OPTS = AutoscalerOptions()


class Actions(FakeActions):
    def __init__(self, fail_on: frozenset[str] = frozenset()):
        super().__init__()
        self.annotations: dict[str, dict[str, str]] = {}
        self.fail_on = fail_on

    def annotate_node(self, node_name: str, key: str, value: str | None) -> None:
        self.calls.append(("annotate", node_name, key, value))
        if node_name in self.fail_on:
            raise ActionError(f"conflict on {node_name}")
        if value is None:
            self.annotations.get(node_name, {}).pop(key, None)
        else:
            self.annotations.setdefault(node_name, {})[key] = value


def created(n, at: float | None):
    return dataclasses.replace(n, meta=dataclasses.replace(n.meta, creation_timestamp=at))


def record(group: str = "small", at: float = LAUNCHED) -> str:
    return json.dumps({"nodeGroup": group, "launchedAt": rfc3339(at)})


def world(old_annotation: str | None, *, options=OPTS, tainted=False, fail_on=frozenset()):
    """Node "big" (group large) carries `old_annotation`; group small has "s-old", there before
    the launch, "s-new", created in the launch's second, and "s-unknown", of unknown age."""
    big = node("big", annotations={REPLACEMENT_ANNOTATION: old_annotation} if old_annotation else None)
    if tainted:
        big = with_taints(big, Taint(TO_BE_DELETED_TAINT, f"{NOW - 5:.0f}", "NoSchedule"))
    nodes = [
        created(big, LAUNCHED - 3600),
        created(node("s-old"), LAUNCHED - 1),
        created(node("s-new"), float(int(LAUNCHED))),
        created(node("s-unknown"), None),
    ]
    cloud = FakeCloud()
    cloud.add(FakeGroup("large"), "big")
    cloud.add(FakeGroup("small"), "s-old", "s-new", "s-unknown")
    actions = Actions(fail_on)
    planner = Planner(options, timer=WorkTimer(1e-3), timers_expired=True)
    actuator = Actuator(options, actions, cloud, planner)
    return snapshot_of(nodes, []), cloud, actions, planner, actuator


def test_a_record_is_taken_back_with_the_group_nodes_there_before_the_launch():
    snapshot, cloud, actions, planner, actuator = world(record())
    records = ReplacementRecords()
    report = recover(planner, actuator, snapshot, cloud=cloud, now=NOW, records=records)
    assert report.replacing == {"big": "small"} and not report.replacement_dropped
    pending = planner.replacing["big"]
    assert (pending.group_id, pending.launched_at) == ("small", LAUNCHED)
    # A node created in the launch's own second is the new one; of unknown age, an old one.
    assert pending.before == {"s-old", "s-unknown"}
    assert pending.arrival(snapshot, cloud) == ("s-new", True)
    assert records.written == {"big": record()}
    assert not [c for c in actions.calls if c[0] == "annotate"]  # nothing to write: it is there
    assert [(e[1], e[3]) for e in actions.events] == [("big", "ScaleDownReplacing")]
    assert "taken back after a restart" in actions.events[0][4]


@pytest.mark.parametrize(
    ("annotation", "kwargs", "why"),
    [
        ("small", {}, "is not JSON"),
        (json.dumps({"nodeGroup": "small"}), {}, 'expected {"nodeGroup": ID, "launchedAt"'),
        (json.dumps({"nodeGroup": "small", "launchedAt": "yesterday"}), {}, "Invalid isoformat"),
        (record("medium"), {}, "node group medium is not managed any more"),
        (record(), {"tainted": True}, "its deletion had started"),
        (record(at=NOW - 900), {}, "is past max-node-provision-time"),
        (
            record(),
            {"options": AutoscalerOptions(consolidate_onto_cheaper_groups=False)},
            "consolidate-onto-cheaper-groups is off",
        ),
    ],
    ids=["not json", "no launch time", "bad time", "group gone", "deleting", "too old", "switched off"],
)
def test_a_record_that_cannot_come_back_is_dropped_with_its_reason(annotation, kwargs, why):
    snapshot, cloud, actions, planner, actuator = world(annotation, **kwargs)
    records = ReplacementRecords()
    report = recover(planner, actuator, snapshot, cloud=cloud, now=NOW, records=records)
    assert not planner.replacing and not report.replacing
    assert why in report.replacement_dropped["big"]
    assert ("annotate", "big", REPLACEMENT_ANNOTATION, None) in actions.calls
    assert not records.written
    failed = [e for e in actions.events if e[3] == "ScaleDownFailed"]
    assert [e[1] for e in failed] == ["big"] and why in failed[0][4]


def test_a_record_that_could_not_be_removed_is_removed_by_the_next_sync():
    snapshot, cloud, actions, planner, actuator = world("small", fail_on=frozenset({"big"}))
    records = ReplacementRecords()
    recover(planner, actuator, snapshot, cloud=cloud, now=NOW, records=records)
    assert records.written == {"big": "small"}
    actions.fail_on = frozenset()
    records.sync(actions, planner.replacing, snapshot)
    assert actions.calls[-1] == ("annotate", "big", REPLACEMENT_ANNOTATION, None) and not records.written


def test_the_records_follow_the_pending_replacements():
    """Written once when a replacement starts, not again while it lasts, removed when the planner
    forgets the node; a node no longer there is not written to; a failed write is retried."""
    snapshot = snapshot_of([node("a"), node("b")], [])
    actions = Actions(frozenset({"b"}))
    records = ReplacementRecords()
    pending = PendingReplacement("small", LAUNCHED, frozenset())
    records.sync(actions, {"a": pending, "b": pending, "gone": pending}, snapshot)
    assert actions.annotations == {"a": {REPLACEMENT_ANNOTATION: replacement_record(pending)}}
    assert parse_replacement_record(actions.annotations["a"][REPLACEMENT_ANNOTATION]) == ("small", LAUNCHED)
    actions.fail_on = frozenset()
    records.sync(actions, {"a": pending, "b": pending}, snapshot)
    assert [c[1] for c in actions.calls] == ["a", "b", "b"]  # "a" is not written again
    records.sync(actions, {}, snapshot)
    assert actions.annotations == {"a": {}, "b": {}} and not records.written
