"""Workloads, CronJobs, HPAs and ConfigMaps of a List dump go through the wire schema (JSON items
decoded straight into it, YAML converted) and load exactly what the Reader's parsers load, with
the same names, origins and errors."""

import copy
import functools
import json

import pytest
import yaml
from test_workloads_typed import CONFIGMAP, CRONJOB, HPA, workload

from kubetide.errors import ManifestError
from kubetide.model import load_file
from kubetide.model import loader as loader_module
from kubetide.model import stream as stream_module
from kubetide.model.cronjob import parse_cronjob
from kubetide.model.hpa import parse_hpa
from kubetide.model.loader import parse_text, read_text
from kubetide.model.policy import parse_configmap
from kubetide.model.workloads import WORKLOAD_KINDS, parse_workload

READER_PARSERS = {
    "CronJob": parse_cronjob,
    "HorizontalPodAutoscaler": parse_hpa,
    "ConfigMap": parse_configmap,
    **{kind: functools.partial(parse_workload, kind=kind) for kind in WORKLOAD_KINDS},
}


def named(item, name):
    item = copy.deepcopy(item)
    item["metadata"]["name"] = name
    return item


def items():
    """Every kind, several of each, and forms the schema leaves to the Reader."""
    found = []
    for kind in WORKLOAD_KINDS:
        found += [named(workload(kind), f"{kind.lower()}-{i}") for i in range(4)]
    odd_replicas = named(workload("Deployment"), "replicas-as-text")
    odd_replicas["spec"]["replicas"] = "3"
    odd_label = named(workload("ReplicaSet"), "label-number")
    odd_label["spec"]["template"]["metadata"]["labels"]["tier"] = 1
    odd_config = named(CONFIGMAP, "number-value")
    odd_config["data"]["count"] = 3
    found += [odd_replicas, odd_label, odd_config]
    found += [named(CRONJOB, f"cron-{i}") for i in range(3)]
    found += [named(HPA, f"hpa-{i}") for i in range(3)]
    found += [named(CONFIGMAP, f"config-{i}") for i in range(3)]
    return found


def dump(objects):
    return {"apiVersion": "v1", "items": objects, "kind": "List", "metadata": {"resourceVersion": ""}}


def reader_only(path, monkeypatch):
    """The load with the Reader's parsers for these kinds and no JSON schema decoding."""
    with monkeypatch.context() as patch:
        for kind, parser in READER_PARSERS.items():
            patch.setitem(loader_module.PARSERS, kind, parser)
            patch.delitem(loader_module._TYPED_DECODERS, kind)
        patch.setattr(stream_module, "TYPED_KINDS", stream_module.TYPED_KINDS - set(READER_PARSERS))
        return load_file(path)


def same(loaded, reference):
    assert loaded.workloads == reference.workloads
    assert loaded.configmaps == reference.configmaps
    assert loaded.other == reference.other
    assert loaded.origins == reference.origins


@pytest.mark.parametrize("fmt", ["json", "yaml"])
def test_a_dump_of_every_kind_loads_what_the_reader_loads(tmp_path, monkeypatch, fmt):
    monkeypatch.setattr(stream_module, "BATCH_CHARS", 2048)  # many batches, of mixed kinds
    decoded = []
    for kind in READER_PARSERS:
        original = loader_module._TYPED_DECODERS[kind]

        def recording(raw, original=original):
            result = original(raw)
            decoded.append(result is not None)
            return result

        monkeypatch.setitem(loader_module._TYPED_DECODERS, kind, recording)
    objects = items()
    path = tmp_path / f"dump.{fmt}"
    document = dump(objects)
    path.write_text(json.dumps(document, indent=4) if fmt == "json" else yaml.safe_dump(document))
    loaded = load_file(path)
    same(loaded, reader_only(path, monkeypatch))
    same(loaded, load_documents_whole(path))
    assert len(loaded.workloads) == 22 and len(loaded.other["CronJob"]) == 3
    assert len(loaded.other["HorizontalPodAutoscaler"]) == 3 and len(loaded.configmaps) == 4
    if fmt == "json":
        # Every item but the last (read on its own by the stdlib decoder) went through a decoder;
        # the three odd ones were declined and read by the Reader.
        assert decoded.count(False) == 3 and decoded.count(True) == len(objects) - 4


def load_documents_whole(path):
    return loader_module.load_documents(parse_text(read_text(path), str(path)), str(path))


@pytest.mark.parametrize("fmt", ["json", "yaml"])
@pytest.mark.parametrize(
    ("kind", "field", "value", "expected"),
    [
        ("Deployment", "replicas", -1, "spec.replicas: must be non-negative, got -1"),
        ("Job", "completions", 2**40, "spec.completions"),
        ("CronJob", "schedule", "every day", "spec.schedule"),
        ("HorizontalPodAutoscaler", "maxReplicas", 0, "spec.maxReplicas"),
    ],
)
def test_an_error_names_file_item_object_and_field_as_the_reader_does(
    tmp_path, monkeypatch, fmt, kind, field, value, expected
):
    bad = copy.deepcopy({"CronJob": CRONJOB, "HorizontalPodAutoscaler": HPA}.get(kind) or workload(kind))
    bad["spec"][field] = value
    objects = [named(workload("ReplicaSet"), "fine"), bad, named(CONFIGMAP, "after")]
    path = tmp_path / f"bad.{fmt}"
    document = dump(objects)
    path.write_text(json.dumps(document, indent=4) if fmt == "json" else yaml.safe_dump(document))
    with pytest.raises(ManifestError) as raised:
        load_file(path)
    with pytest.raises(ManifestError) as reference:
        reader_only(path, monkeypatch)
    message = str(raised.value)
    assert message == str(reference.value)
    assert message.startswith(f"{path}: items[1] ({kind} shop/") and expected in message
