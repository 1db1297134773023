"""PodDisruptionBudgets, Namespaces and PriorityClasses through the wire schema (model/policy_typed.py) are what the
Reader's parsers make of them, and what the Reader refuses is still refused in its words."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from kubetide.errors import ManifestError
from kubetide.model.policy import parse_namespace, parse_pdb, parse_priority_class
from kubetide.model.policy_typed import parse_namespace_typed, parse_pdb_typed, parse_priority_class_typed
from kubetide.model.reader import Reader

CREATED = datetime(2026, 11, 1, tzinfo=UTC)  # as PyYAML reads an unquoted timestamp


def meta(name, **extra):
    return {"name": name, **extra}


@pytest.mark.parametrize(
    "data",
    [
        {"kind": "Namespace", "metadata": meta("a")},
        {
            "kind": "Namespace",
            "metadata": meta("b", labels={"team": "x"}, creationTimestamp="2026-11-01T00:00:00Z"),
        },
        {"kind": "Namespace", "metadata": meta("c", labels={"kubernetes.io/metadata.name": "other"})},
        {"kind": "Namespace", "metadata": meta("d", labels={"tier": 1}, creationTimestamp=CREATED)},
        {"kind": "Namespace", "metadata": meta("e", namespace="ignored", uid="u-1")},
    ],
)
def test_a_namespace_is_what_the_reader_makes_of_it(data):
    assert parse_namespace_typed(Reader(data, "f.yaml", "ns")) == parse_namespace(
        Reader(data, "f.yaml", "ns")
    )


@pytest.mark.parametrize(
    "data",
    [
        {"kind": "PriorityClass", "metadata": meta("high"), "value": 1000, "globalDefault": True},
        {"kind": "PriorityClass", "metadata": meta("low"), "value": -5, "preemptionPolicy": "Never"},
        {"kind": "PriorityClass", "metadata": meta("system-x"), "value": 2_000_000_500},
        {"kind": "PriorityClass", "metadata": meta("text"), "value": "7"},
        {"kind": "PriorityClass", "metadata": meta("dated", creationTimestamp=CREATED), "value": 3},
    ],
)
def test_a_priority_class_is_what_the_reader_makes_of_it(data):
    typed = parse_priority_class_typed(Reader(data, "f.yaml", "pc"))
    assert typed == parse_priority_class(Reader(data, "f.yaml", "pc"))


@pytest.mark.parametrize(
    ("data", "parse"),
    [
        (
            {"kind": "PriorityClass", "metadata": meta("big"), "value": 2_000_000_000},
            parse_priority_class_typed,
        ),
        ({"kind": "PriorityClass", "metadata": meta("huge"), "value": 2**70}, parse_priority_class_typed),
        ({"kind": "PriorityClass", "metadata": meta("none")}, parse_priority_class_typed),
        ({"kind": "Namespace", "metadata": meta("Bad_Name")}, parse_namespace_typed),
        ({"kind": "Namespace", "metadata": meta("n", labels={"bad key!": "x"})}, parse_namespace_typed),
    ],
)
def test_what_the_reader_refuses_is_refused_in_its_words(data, parse):
    reference = parse_priority_class if parse is parse_priority_class_typed else parse_namespace
    with pytest.raises(ManifestError) as expected:
        reference(Reader(data, "f.yaml", "x"))
    with pytest.raises(ManifestError) as refused:
        parse(Reader(data, "f.yaml", "x"))
    assert str(refused.value) == str(expected.value)


def pdb(name="b", spec=None, status=None):
    data = {"kind": "PodDisruptionBudget", "metadata": meta(name, namespace="shop")}
    if spec is not None:
        data["spec"] = spec
    if status is not None:
        data["status"] = status
    return data


SELECTOR = {
    "matchLabels": {"app": "web"},
    "matchExpressions": [{"key": "tier", "operator": "In", "values": ["a"]}],
}


@pytest.mark.parametrize(
    "data",
    [
        pdb(spec={"minAvailable": 2, "selector": SELECTOR}),
        pdb(spec={"maxUnavailable": "30%", "selector": {}, "unhealthyPodEvictionPolicy": "AlwaysAllow"}),
        pdb(spec={"minAvailable": "3", "selector": SELECTOR}),  # IntOrString's integer as text
        pdb(spec={"minAvailable": 1}),  # no selector: selects nothing
        pdb(),
        pdb(
            spec={"maxUnavailable": 1, "selector": SELECTOR},
            status={"disruptionsAllowed": 1, "expectedPods": 3},
        ),
        pdb(spec={"maxUnavailable": 1}, status={"currentHealthy": "2"}),  # a number as text: the Reader's
    ],
)
def test_a_pdb_is_what_the_reader_makes_of_it(data):
    assert parse_pdb_typed(Reader(data, "f.yaml", "pdb")) == parse_pdb(Reader(data, "f.yaml", "pdb"))


@pytest.mark.parametrize(
    "data",
    [
        pdb(spec={"minAvailable": 1, "maxUnavailable": 1}),
        pdb(spec={"minAvailable": "150%"}),
        pdb(spec={"minAvailable": -1}),
        pdb(spec={"minAvailable": True}),
        pdb(spec={"unhealthyPodEvictionPolicy": "Never"}),
        pdb(spec={"selector": {"matchExpressions": [{"key": "a", "operator": "Near"}]}}),
        pdb(spec={"maxUnavailable": 1}, status={"expectedPods": 2**70}),
    ],
)
def test_a_pdb_the_reader_refuses_is_refused_in_its_words(data):
    with pytest.raises(ManifestError) as expected:
        parse_pdb(Reader(data, "f.yaml", "x"))
    with pytest.raises(ManifestError) as refused:
        parse_pdb_typed(Reader(data, "f.yaml", "x"))
    assert str(refused.value) == str(expected.value)
