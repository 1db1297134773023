"""Pods through the wire schema (model/wire.py, model/pod_typed.py) are what the path-aware Reader
returns, or None (never an error of their own): canonical pods are built from the Structs, anything
odd is left to the Reader. JSON text decoded straight into the Structs gives the same pods."""

import copy
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mutations import assert_reader_or_nothing, mutated, odd_values, paths

from kubetide.errors import ManifestError
from kubetide.model import typed
from kubetide.model.pod import POD_SLOTS, assembled_pod, parse_pod
from kubetide.model.pod_typed import convert_pod, decode_pod, parse_pod_typed
from kubetide.model.reader import Reader, parse_time

FULL_POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {
        "name": "web-7d9f8-abcde",
        "generateName": "web-7d9f8-",
        "namespace": "shop",
        "uid": "1111-2222",
        "resourceVersion": "123456",
        "creationTimestamp": "2026-11-01T00:00:00Z",
        "labels": {"app": "web", "pod-template-hash": "7d9f8"},
        "annotations": {"prometheus.io/scrape": "true"},
        "ownerReferences": [
            {
                "apiVersion": "apps/v1",
                "kind": "ReplicaSet",
                "name": "web-7d9f8",
                "uid": "rs-uid",
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ],
        "managedFields": [{"manager": "kube-controller-manager", "fieldsV1": {"f:spec": {}}}],
    },
    "spec": {
        "containers": [
            {
                "name": "app",
                "image": "web:v1",
                "ports": [{"containerPort": 8080, "protocol": "TCP"}],
                "resources": {
                    "requests": {"cpu": "250m", "memory": "64Mi"},
                    "limits": {"cpu": "1", "memory": "128Mi", "nvidia.com/gpu": "1"},
                },
            },
            {"name": "sidecar", "resources": {"requests": {"cpu": "0.1", "ephemeral-storage": "1G"}}},
        ],
        "nodeName": "node-1",
        "nodeSelector": {"kubernetes.io/os": "linux"},
        "priority": 1000,
        "priorityClassName": "high",
        "terminationGracePeriodSeconds": 60,
        "activeDeadlineSeconds": 3600,
        "schedulerName": "default-scheduler",
        "tolerations": [
            {
                "key": "node.kubernetes.io/not-ready",
                "operator": "Exists",
                "effect": "NoExecute",
                "tolerationSeconds": 300,
            },
            {"key": "dedicated", "operator": "Equal", "value": "web", "effect": "NoSchedule"},
        ],
        "affinity": {
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "labelSelector": {"matchLabels": {"app": "web"}},
                        "topologyKey": "kubernetes.io/hostname",
                    }
                ]
            }
        },
        "topologySpreadConstraints": [
            {
                "maxSkew": 1,
                "topologyKey": "topology.kubernetes.io/zone",
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {"app": "web"}},
            }
        ],
        "volumes": [{"name": "cache", "emptyDir": {"medium": "Memory"}}, {"name": "token", "projected": {}}],
    },
    "status": {
        "phase": "Running",
        "startTime": "2026-11-01T00:01:00Z",
        "conditions": [
            {"type": "Ready", "status": "True", "lastTransitionTime": "2026-11-01T00:02:00Z"},
            {"type": "PodScheduled", "status": "True", "lastTransitionTime": "2026-11-01T00:00:30Z"},
        ],
        "containerStatuses": [{"name": "app", "restartCount": 3}, {"name": "sidecar", "restartCount": 0}],
    },
}


def slow(data):
    return parse_pod(Reader(copy.deepcopy(data), "dump.json", "items[0] (Pod shop/web)"))


def fast(data):
    converted = convert_pod(copy.deepcopy(data), "dump.json", "items[0] (Pod shop/web)")
    decoded = decode_pod(json.dumps(data))
    # From JSON text or from parsed values: the same pod, or the Reader's turn for both.
    assert (decoded is None) == (converted is None)
    if converted is not None:
        assert decoded[0] == converted and decoded[0].shape == converted.shape
        meta = data["metadata"]
        name = f"{meta['namespace']}/{meta['name']}" if meta.get("namespace") else meta["name"]
        assert decoded[1] == f"Pod {name}"  # as the loader names a pod it read as dicts
    return converted


def same_pod(result, expected) -> bool:
    return result == expected and result.shape == expected.shape


def test_a_full_pod_takes_the_fast_path_and_matches_the_reader():
    assert fast(FULL_POD) is not None
    assert fast(FULL_POD) == slow(FULL_POD)


def test_a_minimal_pod_without_status_matches_the_reader():
    minimal = {"kind": "Pod", "metadata": {"name": "a"}, "spec": {"containers": [{"name": "c"}]}}
    assert fast(minimal) is not None
    assert fast(minimal) == slow(minimal)


@pytest.mark.parametrize(
    "path, value",
    [
        (("spec", "containers", 0, "resources", "requests", "cpu"), "-0.1m"),  # rounds to 0 but is negative
        (("spec", "containers", 0, "resources", "requests", "cpu"), "2"),  # over its limit
        (("spec", "containers", 0, "resources", "requests", "cpu"), 2),  # a YAML number
        (("spec", "initContainers"), [{"name": "init"}]),
        (("spec", "hostNetwork"), True),
        (("spec", "containers", 0, "ports", 0, "hostPort"), 80),
        (("spec", "containers", 0, "ports", 0, "protocol"), {"bad": 1}),
        (("spec", "tolerations", 0, "operator"), "Sometimes"),
        (("spec", "priority"), "1000"),
        (("metadata", "labels", "app"), 7),
        (("metadata", "creationTimestamp"), "yesterday"),
        (("status", "phase"), "Sleeping"),
    ],
)
def test_anything_odd_leaves_the_pod_to_the_reader(path, value):
    data = copy.deepcopy(FULL_POD)
    target = data
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    assert fast(data) is None
    try:
        expected = slow(data)
    except ManifestError as exc:
        with pytest.raises(ManifestError) as raised:
            parse_pod_typed(Reader(copy.deepcopy(data), "dump.json", "items[0] (Pod shop/web)"))
        assert str(raised.value) == str(exc)
    else:
        assert parse_pod_typed(Reader(copy.deepcopy(data), "dump.json", "")) == slow(data) == expected


PATHS = list(paths(FULL_POD))


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from(PATHS), odd_values("Exists")), min_size=1, max_size=3))
def test_fast_path_is_the_reader_or_nothing(mutations):
    data = mutated(FULL_POD, mutations)
    assert_reader_or_nothing(data, fast, slow, same=same_pod)


def test_pods_of_one_template_share_their_spec_objects_and_shape():
    # Sharing saves memory and parsing; the caches key on the shape, which both parsers compute.
    other = copy.deepcopy(FULL_POD)
    other["metadata"]["name"] = "web-7d9f8-fghij"
    first, second = fast(FULL_POD), fast(other)
    assert first.containers is second.containers
    assert first.requests is second.requests and first.limits is second.limits
    assert first.node_selector is second.node_selector
    assert first.meta.owner_references is second.meta.owner_references
    assert first.shape is second.shape is slow(other).shape
    # A different spec gets its own objects, in its own order.
    other["spec"]["containers"][0]["resources"]["requests"] = dict(
        reversed(list(FULL_POD["spec"]["containers"][0]["resources"]["requests"].items()))
    )
    third = fast(other)
    assert third.containers is not first.containers
    assert list(third.containers[0].requests)[:2] == ["memory", "cpu"]
    assert third == slow(other)


@pytest.mark.parametrize(
    "volumes",
    [
        [{"name": "data", "hostPath": {"path": "/data", "type": "Directory"}}],
        [{"name": "scratch", "emptyDir": {}}, {"name": "tmp", "emptyDir": None}],
        [{"name": "claim", "persistentVolumeClaim": {"claimName": "c"}}],
        [{"name": "api", "downwardAPI": {"items": []}}, {"name": "io", "scaleIO": {"system": "s"}}],
        [{"name": "bare"}],  # no source: the Reader calls it "unknown"
        [{"name": "two", "secret": {}, "configMap": {}}],  # two sources: the manifest's order decides
        [{"name": "new", "someFutureSource": {}}],  # a source the schema does not list
        [{"name": "odd", "hostPath": "not a mapping"}],
        [{"name": 7, "emptyDir": {}}],
    ],
)
def test_volumes_read_through_the_schema_are_what_the_reader_reads(volumes):
    data = copy.deepcopy(FULL_POD)
    data["spec"]["volumes"] = volumes
    result = fast(data)
    assert result is None or result == slow(data)
    assert parse_pod_typed(Reader(copy.deepcopy(data), "dump.json", "")).volumes == slow(data).volumes


def test_a_canonical_volume_list_takes_the_schema_path():
    data = copy.deepcopy(FULL_POD)
    data["spec"]["volumes"] = [
        {"name": "api", "projected": {"sources": [{"serviceAccountToken": {"path": "token"}}]}},
        {"name": "data", "hostPath": {"path": "/data"}},
    ]
    result = fast(data)
    assert result is not None
    assert [(v.name, v.kind) for v in result.volumes] == [("api", "projected"), ("data", "hostPath")]
    assert result == slow(data)


def test_a_pod_assembled_from_its_slots_is_the_pod_the_constructor_builds():
    reference = slow(FULL_POD)
    typed = fast(FULL_POD)
    assert all(getattr(typed, name) == getattr(reference, name) for name in POD_SLOTS)
    again = assembled_pod(tuple(getattr(reference, name) for name in POD_SLOTS))
    assert again == reference and again.shape is reference.shape
    with pytest.raises(ValueError):  # every slot, or none: a short tuple is refused
        assembled_pod(tuple(getattr(reference, name) for name in POD_SLOTS[:-1]))


@pytest.mark.parametrize(
    "path, value",
    [
        # two controllers: the owner references' cache must not remember the good answer
        (("metadata", "ownerReferences", 1), {"kind": "ReplicaSet", "name": "b", "controller": True}),
        # a request over its limit, met again in a template already cached
        (("spec", "containers", 0, "resources", "limits", "cpu"), "100m"),
        (("metadata", "creationTimestamp"), "2026-13-01T00:00:00Z"),
        (("status", "conditions", 0, "lastTransitionTime"), "2026-11-01 00:00:00"),  # no zone: UTC
        (("spec", "terminationGracePeriodSeconds"), -1),
        (("spec", "terminationGracePeriodSeconds"), 2**63),
        (("spec", "activeDeadlineSeconds"), 0),
    ],
)
def test_a_cached_answer_never_changes_what_the_reader_would_say(path, value):
    data = copy.deepcopy(FULL_POD)
    target = data
    for key in path[:-2]:
        target = target[key]
    if isinstance(target[path[-2]], list) and path[-1] == len(target[path[-2]]):
        target[path[-2]].append(value)
    else:
        target[path[-2]][path[-1]] = value
    assert fast(FULL_POD) is not None  # the good pod first: its template, owners and times cached
    for _ in range(2):
        assert_reader_or_nothing(data, fast, slow, same=same_pod)


def test_the_timestamp_cache_emptied_when_full_gives_the_same_times(monkeypatch):
    monkeypatch.setattr(typed, "_MAX_TIMES", 2)
    texts = [f"2026-11-0{day}T00:00:0{second}Z" for day in range(1, 4) for second in range(3)]
    first = [typed.timestamp(text) for text in texts]
    assert first == [typed.timestamp(text) for text in reversed(texts)][::-1]
    assert first == [parse_time(text) for text in texts] and len(typed._TIMES) <= 2


def test_pods_decoded_apart_share_their_namespace_node_and_status_strings():
    # msgspec makes a new str per value; a dump's pods keep one per distinct value instead.
    first, second = (decode_pod(json.dumps(FULL_POD))[0] for _ in range(2))
    assert first == second and first is not second
    assert first.namespace is second.namespace and first.node_name is second.node_name
    assert first.phase is second.phase and first.scheduled_status is second.scheduled_status
