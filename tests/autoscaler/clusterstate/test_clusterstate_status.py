"""The status document: Cluster Autoscaler's field names, YAML round trip, statuses and times."""

import yaml
from clusterstate_fakes import STOCKOUT, T0, FakeCloud, FakeGroup, group_with_nodes, make_registry, node

from kubetide.autoscaler.clusterstate import (
    ScaleDownSummary,
    ScaleUpSummary,
    StatusBuilder,
    parse_status_yaml,
    status_yaml,
)
from kubetide.autoscaler.ports import InstanceState
from kubetide.autoscaler.status import DrainStatus, WaitingNode, parse_status_timestamp, status_time
from kubetide.durations import rfc3339

# Cluster Autoscaler's clusterstate/api types, key by key (json/yaml tags of types.go).
CONDITION_TIMES = {"lastProbeTime": None, "lastTransitionTime": None}
NODE_COUNTS = {
    "registered": {
        "total": None,
        "ready": None,
        "notStarted": None,
        "beingDeleted": None,
        "unready": {"total": None, "resourceUnready": None},
    },
    "longUnregistered": None,
    "unregistered": None,
}
SCALE_DOWN = {"status": None, "candidates": None, **CONDITION_TIMES}
CA_SCHEMA = {
    "time": None,
    "autoscalerStatus": None,
    "message": None,
    "clusterWide": {
        "health": {"status": None, "nodeCounts": NODE_COUNTS, **CONDITION_TIMES},
        "scaleUp": {"status": None, **CONDITION_TIMES},
        "scaleDown": SCALE_DOWN,
    },
    "nodeGroups": [
        {
            "name": None,
            "health": {
                "status": None,
                "nodeCounts": NODE_COUNTS,
                "cloudProviderTarget": None,
                "minSize": None,
                "maxSize": None,
                **CONDITION_TIMES,
            },
            "scaleUp": {
                "status": None,
                "backoffInfo": {"errorCode": None, "errorMessage": None},
                **CONDITION_TIMES,
            },
            "scaleDown": SCALE_DOWN,
        }
    ],
}


def shape(value):
    """The keys of a decoded document, leaves replaced by None, lists by their first item's shape."""
    if isinstance(value, dict):
        return {k: shape(v) for k, v in value.items()}
    if isinstance(value, list):
        return [shape(value[0])] if value else []
    return None


def stocked_out_cluster():
    """Group `a` backed off after a stock-out, `b` healthy with a scale-down candidate."""
    registry = make_registry()
    a, a_nodes = group_with_nodes("a", 2, min_size=1, max_size=10)
    b, b_nodes = group_with_nodes("b", 3, max_size=5)
    cloud = FakeCloud(a, b)
    registry.update(a_nodes + b_nodes, cloud, T0)
    a.increase_size(2)
    registry.register_scale_up("a", 2, T0)
    a.add("a-x", InstanceState.CREATING, STOCKOUT)
    a.add("a-y", InstanceState.CREATING, STOCKOUT)
    registry.update(a_nodes + b_nodes, cloud, T0 + 10.25)
    return registry, cloud, a_nodes + b_nodes


def test_document_has_exactly_cluster_autoscalers_field_names():
    registry, _, _ = stocked_out_cluster()
    text = StatusBuilder().status_yaml(
        registry, T0 + 10.25, scale_down=ScaleDownSummary({"b": ["b-0"]}), message="hello"
    )
    data = yaml.safe_load(text)
    assert shape(data) == CA_SCHEMA
    assert [g["name"] for g in data["nodeGroups"]] == ["a", "b"]
    assert "backoffInfo" not in data["nodeGroups"][1]["scaleUp"]  # only when backed off


def test_round_trips_through_yaml():
    registry, _, _ = stocked_out_cluster()
    status = StatusBuilder().build(
        registry,
        T0 + 10.25,
        scale_up=ScaleUpSummary(evaluated=True, pods_needing_nodes=3, backed_off=True),
        scale_down=ScaleDownSummary({"b": ["b-0", "b-1"]}),
        message="kubetide",
    )
    text = status_yaml(status)
    assert parse_status_yaml(text) == status
    assert status_yaml(parse_status_yaml(text)) == text


def test_drains_and_nodes_waiting_for_budget_are_said_when_there_are_any():
    registry, _, _ = stocked_out_cluster()
    risky = "PodDisruptionBudget prod/api has 1 disruption left for its 2 pods here"
    summary = ScaleDownSummary(
        {"b": ["b-0", "b-1"]},
        drains=(DrainStatus("b-0", 55, 2, risky), DrainStatus("b-1", 35, 1, "")),
        waiting_for_budget=(WaitingNode("b-2", "waiting for budget: PodDisruptionBudget prod/api", 40),),
        estimated_seconds_to_last_removal=95,
    )
    status = StatusBuilder().build(registry, T0 + 10.25, scale_down=summary)
    text = status_yaml(status)
    assert parse_status_yaml(text) == status
    down = yaml.safe_load(text)["clusterWide"]["scaleDown"]
    assert down["drains"] == [
        {"node": "b-0", "estimatedDrainSeconds": 55, "waves": 2, "risky": risky},
        {"node": "b-1", "estimatedDrainSeconds": 35, "waves": 1, "risky": ""},
    ]
    assert down["waitingForBudget"] == [
        {
            "node": "b-2",
            "reason": "waiting for budget: PodDisruptionBudget prod/api",
            "estimatedDrainSeconds": 40,
        }
    ]
    assert down["estimatedSecondsToLastRemoval"] == 95
    # Nothing to say: the document keeps exactly CA's keys.
    quiet = yaml.safe_load(
        StatusBuilder().status_yaml(registry, T0, scale_down=ScaleDownSummary({"b": ["b-0"]}))
    )
    assert "drains" not in quiet["clusterWide"]["scaleDown"]
    assert "estimatedSecondsToLastRemoval" not in quiet["clusterWide"]["scaleDown"]


def test_contents_for_a_backed_off_group():
    registry, _, _ = stocked_out_cluster()
    status = StatusBuilder().build(registry, T0 + 10.25, scale_down=ScaleDownSummary({"b": ["b-0"]}))
    assert status.time == "2026-01-01 00:00:10.25 +0000 UTC"
    assert status.autoscaler_status == "Running"
    wide = status.cluster_wide
    assert wide.health.status == "Healthy"
    assert wide.health.node_counts.registered.total == 5 and wide.health.node_counts.registered.ready == 5
    assert wide.scale_up.status == "NoActivity"  # no scale-up summary given
    assert (wide.scale_down.status, wide.scale_down.candidates) == ("CandidatesPresent", 1)
    a = status.node_group("a")
    assert (a.health.cloud_provider_target, a.health.min_size, a.health.max_size) == (4, 1, 10)
    assert a.scale_up.status == "Backoff"
    assert a.scale_up.backoff_info.error_code == "STOCKOUT"
    assert "no n2-standard-8 capacity" in a.scale_up.backoff_info.error_message
    assert (a.scale_down.status, a.scale_down.candidates) == ("NoCandidates", 0)
    b = status.node_group("b")
    assert (b.scale_up.status, b.scale_up.backoff_info) == ("NoActivity", None)
    assert (b.scale_down.status, b.scale_down.candidates) == ("CandidatesPresent", 1)
    assert b.health.last_probe_time == "2026-01-01T00:00:10Z"  # RFC 3339, whole seconds
    assert b.health.last_transition_time == "2026-01-01T00:00:00Z"


def test_cluster_scale_up_status_from_the_summary():
    registry = make_registry()
    group, nodes = group_with_nodes("ng", 1)
    registry.update(nodes, FakeCloud(group), T0)
    builder = StatusBuilder()

    def cluster_scale_up(summary):
        return builder.build(registry, T0, scale_up=summary).cluster_wide.scale_up.status

    assert cluster_scale_up(None) == "NoActivity"
    assert cluster_scale_up(ScaleUpSummary(evaluated=True)) == "NotNeeded"
    assert cluster_scale_up(ScaleUpSummary(evaluated=True, pods_needing_nodes=2)) == "Needed"
    assert (
        cluster_scale_up(ScaleUpSummary(evaluated=True, pods_needing_nodes=2, backed_off=True)) == "Backoff"
    )
    group.increase_size(1)
    registry.register_scale_up("ng", 1, T0)
    status = builder.build(registry, T0, scale_up=ScaleUpSummary(evaluated=True))
    assert status.cluster_wide.scale_up.status == "InProgress"
    assert status.node_group("ng").scale_up.status == "InProgress"


def test_unhealthy_cluster_and_group():
    registry = make_registry()
    group = FakeGroup("ng", target=5)
    nodes = []
    for i in range(5):
        group.add(f"n{i}")
        nodes.append(node(f"n{i}", ready=i == 0, transition=T0 + 10))
    registry.update(nodes, FakeCloud(group), T0 + 3600)
    status = StatusBuilder().build(registry, T0 + 3600)
    assert status.cluster_wide.health.status == "Unhealthy"
    assert status.cluster_wide.health.node_counts.registered.unready.total == 4
    assert status.node_group("ng").health.status == "Unhealthy"
    assert status.node_group("ng").scale_up.status == "Unhealthy"  # CA's scale-up status of a sick group


def test_last_transition_time_moves_only_when_the_status_changes():
    registry = make_registry()
    group, nodes = group_with_nodes("ng", 2)
    cloud = FakeCloud(group)
    builder = StatusBuilder()
    candidates = ScaleDownSummary({"ng": ["ng-0"]})
    for now, summary in [
        (T0, ScaleDownSummary()),
        (T0 + 10, candidates),
        (T0 + 20, candidates),
        (T0 + 30, None),
    ]:
        registry.update(nodes, cloud, now)
        status = builder.build(registry, now, scale_down=summary)
    down = status.cluster_wide.scale_down
    assert down.status == "CandidatesPresent"  # None repeats the last summary
    assert down.last_probe_time == rfc3339(T0 + 20)
    assert down.last_transition_time == rfc3339(T0 + 10)
    assert status.cluster_wide.health.last_transition_time == rfc3339(T0)
    assert status.cluster_wide.health.last_probe_time == rfc3339(T0 + 30)


def test_initializing_before_the_first_update():
    status = StatusBuilder().build(make_registry(), T0)
    assert (status.autoscaler_status, status.node_groups) == ("Initializing", ())
    assert status.cluster_wide.health.status == "Healthy"


def test_time_formats():
    assert rfc3339(T0 + 59.999) == "2026-01-01T00:00:59Z"
    assert status_time(T0) == "2026-01-01 00:00:00 +0000 UTC"
    assert status_time(T0 + 1.5) == "2026-01-01 00:00:01.5 +0000 UTC"
    assert status_time(T0 + 0.9999999) == "2026-01-01 00:00:01 +0000 UTC"
    assert parse_status_timestamp(status_time(T0 + 1.5)) == T0 + 1.5
    assert parse_status_timestamp(rfc3339(T0 + 61)) == T0 + 61


def test_parse_accepts_unquoted_times_and_ignores_unknown_keys():
    text = """
time: 2026-01-01 00:00:10 +0000 UTC
autoscalerStatus: Running
futureField: 1
clusterWide:
  health:
    status: Healthy
    lastProbeTime: 2026-01-01T00:00:10Z
nodeGroups:
- name: ng
  scaleUp: {status: Backoff, backoffInfo: {errorCode: timeout}}
"""
    status = parse_status_yaml(text)
    assert status.cluster_wide.health.last_probe_time == "2026-01-01T00:00:10Z"
    assert status.node_group("ng").scale_up.backoff_info.error_code == "timeout"
    assert status.node_group("ng").health.node_counts.registered.total == 0
