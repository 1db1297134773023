"""PodMetrics and NodeMetrics through the wire schema (qos/wire.py, qos/state_typed.py) are what
the Reader's parsers make of them, or the Reader's turn; a JSON List of them is decoded straight
into the schema and loads what the Reader loads, with the same errors."""

from __future__ import annotations

import copy
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mutations import mutated, paths

from kubetide.errors import ManifestError
from kubetide.model import load_file
from kubetide.model import loader as loader_module
from kubetide.model import stream as stream_module
from kubetide.model.reader import Reader
from kubetide.qos.state import parse_node_metrics, parse_pod_metrics
from kubetide.qos.state_typed import (
    decode_node_metrics,
    decode_pod_metrics,
    parse_node_metrics_typed,
    parse_pod_metrics_typed,
)

POD_METRICS = {
    "apiVersion": "metrics.k8s.io/v1beta1",
    "kind": "PodMetrics",
    "metadata": {
        "name": "api-0",
        "namespace": "shop",
        "creationTimestamp": "2026-11-01T00:00:00Z",
        "labels": {"app": "api"},
    },
    "timestamp": "2026-11-01T00:00:10Z",
    "window": "10.5s",
    "containers": [
        {"name": "api", "usage": {"cpu": "1502m", "memory": "3Gi"}},
        {"name": "proxy", "usage": {"cpu": "120365n", "memory": "20Mi"}},
    ],
}
NODE_METRICS = {
    "apiVersion": "metrics.k8s.io/v1beta1",
    "kind": "NodeMetrics",
    "metadata": {"name": "worker-1", "labels": {"pool": "general"}},
    "timestamp": "2026-11-01T00:00:10Z",
    "window": "20s",
    "usage": {"cpu": "7300m", "memory": "20Gi"},
}
KINDS = {
    "PodMetrics": (POD_METRICS, parse_pod_metrics, parse_pod_metrics_typed, decode_pod_metrics),
    "NodeMetrics": (NODE_METRICS, parse_node_metrics, parse_node_metrics_typed, decode_node_metrics),
}


def outcome(parse, data):
    try:
        return parse(Reader(copy.deepcopy(data), "state.json", "items[0]"))
    except ManifestError as exc:
        return str(exc)


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_a_full_object_is_decoded_into_the_schema_and_matches_the_reader(kind):
    data, reader_parse, typed_parse, decode = KINDS[kind]
    decoded = decode(json.dumps(data))
    assert decoded is not None
    assert decoded[0] == outcome(reader_parse, data) == outcome(typed_parse, data)
    assert decoded[1].startswith(f"{kind} ")


@pytest.mark.parametrize(
    ("kind", "path", "value"),
    [
        ("PodMetrics", ("containers", 1, "name"), "api"),  # a container twice
        ("PodMetrics", ("containers", 0, "usage", "cpu"), "-1"),
        ("PodMetrics", ("containers", 0, "usage", "cpu"), 2),  # a YAML number: the Reader reads it
        ("PodMetrics", ("apiVersion",), "metrics.k8s.io/v2"),
        ("PodMetrics", ("timestamp",), "soon"),
        ("NodeMetrics", ("usage",), None),
        ("NodeMetrics", ("usage", "memory"), "lots"),
        ("NodeMetrics", ("metadata", "name"), "Not_A_Name"),
    ],
)
def test_anything_odd_is_the_readers_in_its_words(kind, path, value):
    data, reader_parse, typed_parse, decode = KINDS[kind]
    data = copy.deepcopy(data)
    target = data
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    expected = outcome(reader_parse, data)
    assert outcome(typed_parse, data) == expected
    decoded = decode(json.dumps(data))
    assert decoded is None or decoded[0] == expected


VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-2, 2),
    st.sampled_from(["", "x", "1", "-1", "100m", "2Gi", "1e3", "api"]),
    st.just({}),
    st.just([]),
)


PATHS = {kind: list(paths(entry[0])) for kind, entry in KINDS.items()}


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(sorted(KINDS)).flatmap(
        lambda kind: st.tuples(
            st.just(kind), st.lists(st.tuples(st.sampled_from(PATHS[kind]), VALUES), max_size=3)
        )
    )
)
def test_the_schema_path_is_the_reader_or_nothing(case):
    kind, mutations = case
    original, reader_parse, typed_parse, decode = KINDS[kind]
    data = mutated(original, mutations)
    expected = outcome(reader_parse, data)
    assert outcome(typed_parse, data) == expected
    decoded = decode(json.dumps(data))
    assert decoded is None or decoded[0] == expected


def test_a_json_list_of_metrics_streams_through_the_schema_to_the_readers_result(tmp_path, monkeypatch):
    monkeypatch.setattr(stream_module, "BATCH_CHARS", 512)
    pods = []
    for index in range(30):
        item = copy.deepcopy(POD_METRICS)
        item["metadata"]["name"] = f"api-{index}"
        pods.append(item)
    pods[7]["containers"][0]["usage"]["cpu"] = 2  # a number: the Reader's
    items = [*pods, NODE_METRICS]
    path = tmp_path / "metrics.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}, indent=4))
    assert "PodMetrics" in stream_module.TYPED_KINDS and "NodeMetrics" in stream_module.TYPED_KINDS
    decoded = []
    original = loader_module._TYPED_DECODERS["PodMetrics"]

    def recording(raw):
        result = original(raw)
        decoded.append(result is not None)
        return result

    monkeypatch.setitem(loader_module._TYPED_DECODERS, "PodMetrics", recording)
    loaded = load_file(path)
    with monkeypatch.context() as patch:
        patch.setitem(loader_module.PARSERS, "PodMetrics", parse_pod_metrics)
        patch.setitem(loader_module.PARSERS, "NodeMetrics", parse_node_metrics)
        patch.setattr(stream_module, "TYPED_KINDS", stream_module.TYPED_KINDS - {"PodMetrics", "NodeMetrics"})
        reference = load_file(path)
    assert loaded.other == reference.other and loaded.origins == reference.origins
    assert len(loaded.other["PodMetrics"]) == 30
    assert loaded.other["PodMetrics"][7].containers["api"]["cpu"] == 2000
    assert decoded.count(True) == 29 and decoded.count(False) == 1  # the last item is read alone
