"""Crane's NodeQOS, AvoidanceAction and PodQOS through the wire schema (qos/wire.py,
qos/config_typed.py) are what the Reader's parsers make of them, where they were written
included, or the Reader's turn; what the Reader refuses is refused in its words."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mutations import mutated, paths

from kubetide.errors import ManifestError
from kubetide.model.reader import Reader
from kubetide.qos.config import parse_avoidance_action, parse_nodeqos
from kubetide.qos.config_typed import parse_avoidance_action_typed, parse_nodeqos_typed, parse_podqos_typed
from kubetide.qos.podqos import parse_podqos

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "qos"
PARSERS = {
    "NodeQOS": (parse_nodeqos, parse_nodeqos_typed),
    "AvoidanceAction": (parse_avoidance_action, parse_avoidance_action_typed),
    "PodQOS": (parse_podqos, parse_podqos_typed),
}


def example_objects():
    objects = []
    for name in ("nodeqos.yaml", "podqos.yaml"):
        objects += [doc for doc in yaml.safe_load_all((EXAMPLES / name).read_text()) if doc]
    return objects


EXAMPLE_OBJECTS = example_objects()
FULL = {
    "NodeQOS": next(o for o in EXAMPLE_OBJECTS if o["kind"] == "NodeQOS"),
    "AvoidanceAction": {
        "apiVersion": "ensurance.crane.io/v1alpha1",
        "kind": "AvoidanceAction",
        "metadata": {"name": "both", "uid": "a", "creationTimestamp": "2026-11-01T00:00:00Z"},
        "spec": {
            "coolDownSeconds": 120,
            "throttle": {"cpuThrottle": {"minCPURatio": 20, "stepCPURatio": 5}},
            "eviction": {"terminationGracePeriodSeconds": 30},
            "description": "throttle, then evict",
        },
    },
    "PodQOS": {
        "apiVersion": "ensurance.crane.io/v1alpha1",
        "kind": "PodQOS",
        "metadata": {"name": "batch"},
        "spec": {
            "allowedActions": ["evict-batch", "throttle-batch"],
            "labelSelector": {"matchLabels": {"tier": "batch"}},
            "scopeSelector": {
                "matchExpressions": [
                    {"scopeName": "Namespace", "operator": "In", "values": ["batch", "reports"]},
                    {"scopeName": "Priority", "operator": "In", "values": ["0-999", "5000"]},
                    {"scopeName": "QOSClass", "operator": "NotIn", "values": ["Guaranteed"]},
                ]
            },
            "resourceQOS": {"cpuQOS": {"cpuPriority": 7}},
        },
    },
}


def outcome(parse, data):
    try:
        return parse(Reader(copy.deepcopy(data), "qos.yaml", "document 2 (x)"))
    except ManifestError as exc:
        return str(exc)


def schema_only(kind, data):
    """The typed parse with the Reader's parser replaced by a marker: the schema's own value."""
    from kubetide.qos import config_typed
    from kubetide.qos import wire as qos_wire

    build = {
        "NodeQOS": (qos_wire.NodeQOSWire, config_typed._nodeqos),
        "AvoidanceAction": (qos_wire.AvoidanceActionWire, config_typed._avoidance_action),
        "PodQOS": (qos_wire.PodQOSWire, config_typed._podqos),
    }[kind]
    return config_typed._parser(*build, lambda reader: None)(
        Reader(copy.deepcopy(data), "qos.yaml", "document 2 (x)")
    )


@pytest.mark.parametrize("data", EXAMPLE_OBJECTS, ids=lambda o: f"{o['kind']}-{o['metadata']['name']}")
def test_the_bundled_examples_take_the_schema_path_and_match_the_reader(data):
    reader_parse, typed_parse = PARSERS[data["kind"]]
    built = schema_only(data["kind"], data)
    assert built is not None
    assert built == outcome(reader_parse, data) == outcome(typed_parse, data)
    assert built.origin.source == "qos.yaml" and built.origin.location == "document 2 (x)"


@pytest.mark.parametrize("kind", sorted(FULL))
def test_a_full_object_matches_the_reader(kind):
    built = schema_only(kind, FULL[kind])
    assert built is not None and built == outcome(PARSERS[kind][0], FULL[kind])


def test_a_rule_keeps_where_it_was_written():
    rules = schema_only("NodeQOS", FULL["NodeQOS"]).rules
    assert [r.origin.path for r in rules] == [f"spec.rules[{i}]" for i in range(len(rules))]
    older = copy.deepcopy(FULL["NodeQOS"])
    older["spec"]["objectiveEnsurances"] = older["spec"].pop("rules")
    assert schema_only("NodeQOS", older).rules[0].origin.path == "spec.objectiveEnsurances[0]"
    assert schema_only("NodeQOS", older) == outcome(parse_nodeqos, older)


@pytest.mark.parametrize(
    ("kind", "path", "value"),
    [
        ("NodeQOS", ("apiVersion",), "crane.io/v1"),
        ("NodeQOS", ("spec", "objectiveEnsurances"), []),  # both names given
        ("NodeQOS", ("spec", "rules", 1, "name"), "cpu-utilization-high"),  # a name twice
        ("NodeQOS", ("spec", "rules", 0, "strategy"), "Sometimes"),
        ("NodeQOS", ("spec", "rules", 0, "metricRule", "value"), None),
        ("NodeQOS", ("spec", "rules", 0, "metricRule", "value"), "lots"),
        ("NodeQOS", ("spec", "rules", 0, "metricRule", "name"), "no_such_metric"),  # skipped later
        ("NodeQOS", ("spec", "rules", 0, "avoidanceThreshold"), 0),  # Go's unset: 1
        ("NodeQOS", ("spec", "rules", 0, "avoidanceThreshold"), -1),
        ("NodeQOS", ("spec", "rules", 0, "avoidanceThreshold"), "2"),
        ("AvoidanceAction", ("spec", "coolDownSeconds"), -5),
        ("AvoidanceAction", ("spec", "throttle", "cpuThrottle", "minCPURatio"), 101),
        ("AvoidanceAction", ("spec", "throttle"), {}),
        ("AvoidanceAction", ("spec", "eviction"), "yes"),
        ("AvoidanceAction", ("spec", "eviction", "terminationGracePeriodSeconds"), -1),
        ("PodQOS", ("spec", "scopeSelector", "matchExpressions", 1, "values", 0), "999-0"),
        ("PodQOS", ("spec", "scopeSelector", "matchExpressions", 2, "values", 0), "Premium"),
        ("PodQOS", ("spec", "scopeSelector", "matchExpressions", 0, "operator"), "Exists"),
        ("PodQOS", ("spec", "allowedActions", 0), 7),
        ("PodQOS", ("spec", "labelSelector"), None),
    ],
)
def test_anything_odd_is_the_readers_in_its_words(kind, path, value):
    data = copy.deepcopy(FULL[kind])
    target = data
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    expected = outcome(PARSERS[kind][0], data)
    assert outcome(PARSERS[kind][1], data) == expected
    built = schema_only(kind, data)
    assert built is None or built == expected


PATHS = {kind: list(paths(data)) for kind, data in FULL.items()}
VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-2, 101),
    st.sampled_from(["", "x", "1", "80", "Preview", "In", "Priority", "0-10", "cpu_total_usage", "7200m"]),
    st.just({}),
    st.just([]),
    st.just([{}]),
)


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(sorted(FULL)).flatmap(
        lambda kind: st.tuples(
            st.just(kind), st.lists(st.tuples(st.sampled_from(PATHS[kind]), VALUES), min_size=1, max_size=3)
        )
    )
)
def test_the_schema_path_is_the_reader_or_nothing(case):
    kind, mutations = case
    data = mutated(FULL[kind], mutations)
    expected = outcome(PARSERS[kind][0], data)
    assert outcome(PARSERS[kind][1], data) == expected
    built = schema_only(kind, data)
    assert built is None or built == expected
