"""Nodes through the wire schema (model/wire.py, model/node_typed.py) are what the path-aware
Reader returns, or None (never an error of their own), from JSON text as from parsed values."""

import copy
import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mutations import assert_reader_or_nothing, mutated, odd_values, paths

from kubetide.model.node import parse_node
from kubetide.model.node_typed import convert_node, decode_node, parse_node_typed
from kubetide.model.reader import Reader

FULL_NODE = {
    "apiVersion": "v1",
    "kind": "Node",
    "metadata": {
        "name": "node-1",
        "uid": "0000-1111",
        "resourceVersion": "42",
        "creationTimestamp": "2026-11-01T00:00:00Z",
        "labels": {"topology.kubernetes.io/zone": "a", "node.kubernetes.io/instance-type": "m5.large"},
        "annotations": {"node.alpha.kubernetes.io/ttl": "0"},
        "managedFields": [{"manager": "kubelet", "fieldsV1": {"f:status": {}}}],
    },
    "spec": {
        "providerID": "aws:///us-east-1a/i-0123",
        "podCIDR": "10.0.1.0/24",
        "taints": [
            {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"},
            {
                "key": "node.kubernetes.io/not-ready",
                "effect": "NoExecute",
                "timeAdded": "2026-11-01T00:05:00Z",
            },
        ],
    },
    "status": {
        "capacity": {"cpu": "2", "memory": "8Gi", "pods": "110", "ephemeral-storage": "100Gi"},
        "allocatable": {"cpu": "1930m", "memory": "7Gi", "pods": "110"},
        "conditions": [
            {"type": "MemoryPressure", "status": "False", "lastTransitionTime": "2026-11-01T00:00:10Z"},
            {"type": "Ready", "status": "True", "lastTransitionTime": "2026-11-01T00:01:00Z"},
        ],
        "images": [{"names": ["registry.example.com/app:v1"], "sizeBytes": 123}],
        "nodeInfo": {"kubeletVersion": "v1.36.2"},
    },
}


def slow(data):
    return parse_node(Reader(copy.deepcopy(data), "dump.json", "items[0] (Node node-1)"))


def typed(data):
    return parse_node_typed(Reader(copy.deepcopy(data), "dump.json", "items[0] (Node node-1)"))


def fast(data):
    converted = convert_node(copy.deepcopy(data))
    decoded = decode_node(json.dumps(data))
    assert (decoded is None) == (converted is None)
    if converted is not None:
        assert decoded[0] == converted
        assert decoded[1] == f"Node {data['metadata']['name']}"
    return converted


def test_a_full_node_takes_the_schema_path_and_matches_the_reader():
    node = fast(FULL_NODE)
    assert node is not None and node == slow(FULL_NODE)
    assert not node.ready  # the not-ready taint
    assert node.labels["kubernetes.io/hostname"] == "node-1"


def test_a_minimal_node_matches_the_reader():
    minimal = {"kind": "Node", "metadata": {"name": "n"}}
    assert fast(minimal) is not None
    assert fast(minimal) == slow(minimal)


PATHS = list(paths(FULL_NODE))


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from(PATHS), odd_values("NoSchedule")), min_size=1, max_size=3))
def test_the_schema_path_is_the_reader_or_nothing(mutations):
    data = mutated(FULL_NODE, mutations)
    assert_reader_or_nothing(data, fast, slow, typed)
