"""A `kind: List` dump is loaded one item at a time, gives exactly what the whole-file load gives,
and falls back to the whole-file load (its bounds checks and error messages) for anything else."""

import json
import tracemalloc

import pytest
import yaml

from kubetide.errors import ManifestError
from kubetide.model import load_documents, load_file, load_files, register_kind
from kubetide.model import loader as loader_module
from kubetide.model import stream as stream_module
from kubetide.model.loader import PARSERS, parse_text, read_text, yaml_loader


def pod(name, node="", cpu="250m", **extra):
    manifest = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}", "labels": {"app": "web"}},
        "spec": {"containers": [{"name": "app", "resources": {"requests": {"cpu": cpu, "memory": "64Mi"}}}]},
        "status": {"phase": "Running" if node else "Pending"},
    }
    if node:
        manifest["spec"]["nodeName"] = node
    manifest.update(extra)
    return manifest


def node(name):
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubetide.io/node-group": "pool"}},
        "status": {"allocatable": {"cpu": "4", "memory": "16Gi", "pods": "110"}},
    }


def dump(items, kind="List"):
    # kubectl's order: items before kind, which the streaming reader must handle
    return {"apiVersion": "v1", "items": items, "kind": kind, "metadata": {"resourceVersion": ""}}


def write(path, document, fmt):
    text = json.dumps(document, indent=4) if fmt == "json" else yaml.safe_dump(document)
    path.write_text(text)
    return path


def whole_file(path):
    return load_documents(parse_text(read_text(path), str(path)), str(path))


def same_error_as_whole_file(path):
    """The error load_file raises for `path`, checked to be word for word the whole-file load's."""
    with pytest.raises(ManifestError) as streamed_error:
        load_file(path)
    with pytest.raises(ManifestError) as reference:
        whole_file(path)
    assert str(streamed_error.value) == str(reference.value)
    return str(streamed_error.value)


@pytest.fixture
def streamed(monkeypatch):
    """Records whether load_file's streaming pass completed (it is only an optimization)."""
    calls = []
    original = loader_module._load_members

    def recording(members, source, result):
        original(members, source, result)
        calls.append(source)

    monkeypatch.setattr(loader_module, "_load_members", recording)
    return calls


@pytest.mark.parametrize("fmt", ["json", "yaml"])
def test_a_list_streams_to_the_whole_file_result(tmp_path, fmt, streamed):
    items = [node("n1"), pod("a", "n1"), pod("b"), {"kind": "Secret", "metadata": {"name": "s"}}]
    path = write(tmp_path / f"dump.{fmt}", dump(items), fmt)
    m = load_file(path)
    assert streamed == [str(path)]
    reference = whole_file(path)
    assert m.nodes == reference.nodes and m.pods == reference.pods
    assert m.warnings == reference.warnings == [f"{path}: skipped unknown kinds: Secret"]
    assert m.origins == reference.origins and m.bound_requests == reference.bound_requests


@pytest.mark.parametrize("fmt", ["json", "yaml"])
def test_an_items_error_names_the_item_as_before(tmp_path, fmt):
    path = write(tmp_path / f"bad.{fmt}", dump([pod("a"), pod("b", cpu="lots")]), fmt)
    assert "items[1] (Pod default/b)" in same_error_as_whole_file(path)


@pytest.mark.parametrize(
    "document",
    [
        dump([{k: v for k, v in pod("a").items() if k != "kind"}], kind="PodList"),  # typed, kind last
        {"kind": "Pod", **pod("a"), "items": []},  # not a List though it has items
    ],
    ids=["typed-list-kind-after-items", "items-on-a-pod"],
)
def test_what_does_not_stream_loads_whole(tmp_path, document, streamed):
    path = write(tmp_path / "dump.json", document, "json")
    assert [p.key for p in load_file(path).pods] == [p.key for p in whole_file(path).pods]
    assert streamed == []


def test_yaml_anchors_and_several_documents_load_whole(tmp_path, streamed):
    anchored = tmp_path / "anchored.yaml"
    anchored.write_text(
        "kind: List\nitems:\n- &p {kind: Pod, metadata: {name: a}, spec: {containers: [{name: c}]}}\n"
    )
    several = tmp_path / "several.yaml"
    several.write_text(yaml.safe_dump(dump([pod("a")])) + "---\n" + yaml.safe_dump(pod("b")))
    assert [p.name for p in load_file(anchored).pods] == ["a"]
    assert [p.name for p in load_file(several).pods] == ["a", "b"]
    assert streamed == []


def test_an_alias_bomb_in_a_list_is_still_refused_by_the_bounds_checks(tmp_path):
    lines = ["kind: List", "items:", "- &a0 {kind: ConfigMap, metadata: {name: x}}"]
    lines += [f"- &a{i} [*a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}]" for i in range(1, 12)]
    path = tmp_path / "bomb.yaml"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(ManifestError, match="aliases expand the document"):
        load_file(path)


def test_a_duplicate_across_streamed_files_names_both(tmp_path):
    first = write(tmp_path / "a.json", dump([pod("x")]), "json")
    second = write(tmp_path / "b.json", dump([pod("y"), pod("x")]), "json")
    with pytest.raises(ManifestError, match=r"duplicate Pod default/x \(also in .*a.json: items\[0\]"):
        load_files([first, second])


@pytest.mark.parametrize("fmt", ["json", "yaml"])
def test_items_are_not_all_held_at_once(tmp_path, fmt, monkeypatch):
    """Memory while loading a List stays near one item's, not the whole document's dicts."""
    register_kind("Probe", lambda reader: reader.str("kind"))
    monkeypatch.setattr(stream_module, "CHUNK_CHARS", 4096)
    items = [
        {
            "kind": "Probe",
            "metadata": {"name": f"p{n}"},
            "data": {f"f{i}": [f"v{j}" for j in range(8)] for i in range(20)},
        }
        for n in range(500)
    ]
    path = write(tmp_path / f"dump.{fmt}", dump(items), fmt)
    try:
        tracemalloc.start()
        whole_file(path)
        whole_peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.reset_peak()
        tracemalloc.clear_traces()
        before = tracemalloc.get_traced_memory()[0]
        m = load_file(path)
        streamed_peak = tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()
        del PARSERS["Probe"]
    assert len(m.other["Probe"]) == 500
    assert streamed_peak * 5 < whole_peak, (streamed_peak, whole_peak)


def test_without_libyaml_the_pure_python_loader_is_used_and_gives_the_same(tmp_path, monkeypatch):
    assert yaml_loader() is getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    good = tmp_path / "dump.yaml"
    good.write_text(yaml.safe_dump(dump([node("n1"), pod("a", "n1")])))
    deep = tmp_path / "deep.yaml"
    deep.write_text("kind: List\nitems: " + "[" * 600 + "]" * 600 + "\n")
    expected = load_file(good)
    with pytest.raises(ManifestError) as deep_error:
        load_file(deep)

    monkeypatch.delattr(yaml, "CSafeLoader")
    assert yaml_loader() is yaml.SafeLoader
    fallback = load_file(good)
    assert fallback.pods == expected.pods and fallback.nodes == expected.nodes
    with pytest.raises(ManifestError) as fallback_error:
        load_file(deep)
    assert str(fallback_error.value) == str(deep_error.value)
    assert "nested more than 500 levels deep" in str(fallback_error.value)


SCALARS = """\
kind: List
items:
- kind: Probe
  plain: [web, 1, -2, 0x1F, 0o17, 1_000, 1.5, .inf, -.Inf, .nan, 1e3, true, False, yes, Off, null, ~, ]
  quoted: ['1', "true", 'null', "2026-11-01T00:00:00Z"]
  times: [2026-11-01, 2026-11-01T00:00:00Z, 2026-11-01 10:00:00.5 +02:00]
  block: |
    line one
    line two
  folded: >
    folded
    text
  nested: {a: {b: [c, {d: e}]}, 1: one, 2.5: two, true: three}
  empty: {}
  none: []
"""


@pytest.mark.parametrize("libyaml", [True, False], ids=["libyaml", "pure-python"])
def test_yaml_items_are_built_as_the_safe_loader_builds_them(tmp_path, monkeypatch, libyaml):
    if not libyaml:
        monkeypatch.delattr(yaml, "CSafeLoader", raising=False)
    path = tmp_path / "scalars.yaml"
    path.write_text(SCALARS)
    with path.open() as text:
        items = [value for what, _, value in stream_module.members(text, yaml_loader()) if what == "item"]
    expected = yaml.safe_load(SCALARS)["items"]
    # nan != nan: compare the text forms
    assert repr(items) == repr(expected)


def test_a_list_item_nested_too_deep_is_refused_as_by_the_whole_file_load(tmp_path):
    deep = "[" * 520 + "]" * 520
    path = tmp_path / "deep-item.yaml"
    path.write_text(f"kind: List\nitems:\n- kind: Widget\n  metadata: {{name: x}}\n  data: {{a: {deep}}}\n")
    assert "nested more than 500 levels deep" in same_error_as_whole_file(path)


def test_pretty_printed_json_items_decoded_in_batches_are_the_items(tmp_path, monkeypatch, streamed):
    monkeypatch.setattr(stream_module, "BATCH_CHARS", 512)
    items = [node(f"n{i}") for i in range(40)] + [pod(f"p{i}", f"n{i % 40}") for i in range(200)]
    path = write(tmp_path / "dump.json", dump(items), "json")
    decoded = []
    original = stream_module._JsonCursor.values_before

    def recording(cursor, boundary):
        values = original(cursor, boundary)
        decoded.append(len(values or ()))
        return values

    monkeypatch.setattr(stream_module._JsonCursor, "values_before", recording)
    m = load_file(path)
    assert streamed == [str(path)] and sum(decoded) > 100 and max(decoded) > 1
    reference = whole_file(path)
    assert m.nodes == reference.nodes and m.pods == reference.pods and m.origins == reference.origins


def irregular_json(count):
    """Items whose `metadata` object closes on a line of its own at the items' indentation, so
    each such line looks like the end of an item to the batch cut."""
    items = ",\n".join(
        f'        {{"kind": "Namespace", "metadata": {{"name": "ns{i}"\n        }},\n        "x": {i}}}'
        for i in range(count)
    )
    return '{\n    "kind": "List",\n    "items": [\n' + items + "\n    ]\n}\n"


COMPACT = (
    '{"kind":"List","items":[{"kind":"Namespace","metadata":{"name":"a"}},{"kind":"Namespace",'
    '"metadata":{"name":"b"}}]}'
)


@pytest.mark.parametrize("text", [irregular_json(30), COMPACT], ids=["irregular", "compact"])
def test_json_laid_out_otherwise_streams_to_the_same_result(tmp_path, monkeypatch, text):
    monkeypatch.setattr(stream_module, "BATCH_CHARS", 64)
    path = tmp_path / "dump.json"
    path.write_text(text)
    calls = []
    original = stream_module._JsonCursor.values_before

    def recording(cursor, boundary):
        values = original(cursor, boundary)
        calls.append(values is None)
        return values

    monkeypatch.setattr(stream_module._JsonCursor, "values_before", recording)
    loaded = load_file(path)
    assert [n.name for n in loaded.namespaces] == [n.name for n in whole_file(path).namespaces]
    assert len(loaded.namespaces) in (2, 30)
    assert len(calls) <= 2  # a cut that failed once is not tried again on every item


def test_json_items_read_through_the_wire_schema_are_the_whole_file_load(tmp_path, monkeypatch, streamed):
    """Runs of pods decoded as pods in one pass, batches of mixed kinds split first, items the
    schema refuses (a number as a label value, an init container, NaN) read by the Reader: the
    same objects and the same names as the whole-file load."""
    monkeypatch.setattr(stream_module, "BATCH_CHARS", 512)
    odd = [
        pod("label-number", "n1", metadata={"name": "label-number", "labels": {"tier": 1}}),
        pod("init", "n2", spec={"containers": [{"name": "a"}], "initContainers": [{"name": "i"}]}),
        pod("nan", "n3", x_unread=float("nan")),  # a field nobody reads; msgspec refuses NaN
    ]
    items = [node(f"n{i}") for i in range(20)] + [pod(f"p{i}", f"n{i % 20}") for i in range(120)]
    items[60:60] = odd
    items.append({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "b"}})
    path = tmp_path / "dump.json"
    path.write_text(json.dumps(dump(items), indent=4))  # NaN as Python's json writes it
    batches = []
    original = stream_module._batch

    def recording(text):
        values = original(text)
        if isinstance(values, stream_module.PodRun):
            batches.append("PodRun")
        else:
            batches.append(None if values is None else [type(v).__name__ for v in values])
        return values

    monkeypatch.setattr(stream_module, "_batch", recording)
    loaded = load_file(path)
    reference = whole_file(path)
    assert streamed == [str(path)]
    assert loaded.pods == reference.pods and loaded.nodes == reference.nodes
    assert loaded.origins == reference.origins
    assert len(loaded.pods) == 123 and len(loaded.nodes) == 20 and len(loaded.pdbs) == 1
    by_name = {p.name: p for p in loaded.pods}
    assert by_name["label-number"].labels["tier"] == "1" and by_name["init"].init_containers
    assert None in batches  # the NaN batch went to the standard library's decoder
    assert "PodRun" in batches  # runs of pods decoded as pods in one pass
    assert any(b and set(b) == {"JsonObject"} for b in batches if b != "PodRun")  # nodes through the schema


@pytest.mark.parametrize("indent", [4, None], ids=["pretty", "compact"])
@pytest.mark.parametrize("newline", ["\n", "\r\n"], ids=["lf", "crlf"])
def test_json_read_as_bytes_with_text_beyond_ascii_is_the_whole_file_load(
    tmp_path, monkeypatch, streamed, indent, newline
):
    """A JSON List is read as bytes: names, labels and annotations beyond ASCII (some straddling
    a chunk's end) and Windows line ends stream to what the whole-file load (text) reads."""
    monkeypatch.setattr(stream_module, "BATCH_CHARS", 256)
    monkeypatch.setattr(stream_module, "CHUNK_CHARS", 1000)
    items = [node("n1")] + [
        pod(f"p{i}", "n1", metadata={"name": f"p{i}", "annotations": {"note": "é€😀" * i}}) for i in range(40)
    ]
    items.append({"kind": "Namespace", "metadata": {"name": "ns", "annotations": {"owner": "Zoë"}}})
    path = tmp_path / "dump.json"
    path.write_bytes(
        json.dumps(dump(items), indent=indent, ensure_ascii=False).replace("\n", newline).encode()
    )
    loaded = load_file(path)
    reference = whole_file(path)
    assert streamed == [str(path)]
    assert loaded.pods == reference.pods and loaded.namespaces == reference.namespaces
    assert loaded.pods[39].annotations["note"] == "é€😀" * 39


@pytest.mark.parametrize("indent", [4, None], ids=["pretty", "compact"])
def test_bytes_that_are_not_utf8_in_a_field_nobody_reads_are_refused_as_before(tmp_path, monkeypatch, indent):
    """msgspec skips unread strings without checking them: the reader checks every batch's bytes,
    so a file that is not UTF-8 is refused exactly as the whole-file load refuses it."""
    monkeypatch.setattr(stream_module, "BATCH_CHARS", 64)
    items = [pod(f"p{i}") for i in range(40)] + [pod("a", x_unread="PLACEHOLDER"), pod("b"), pod("c")]
    text = json.dumps(dump(items), indent=indent).encode()
    path = tmp_path / "dump.json"
    path.write_bytes(text.replace(b"PLACEHOLDER", b"\xff\xfe"))
    with pytest.raises(ManifestError) as streamed_error:
        load_file(path)
    with pytest.raises(ManifestError) as reference:
        whole_file(path)
    assert str(streamed_error.value) == str(reference.value)
    assert "UTF-8" in str(streamed_error.value) or "utf-8" in str(streamed_error.value)


def test_namespaces_priority_classes_and_pdbs_through_the_wire_schema_are_the_whole_file_load(
    tmp_path, monkeypatch
):
    """Namespaces and PriorityClasses of a JSON List are decoded into the wire schema; the forms it
    does not take (a number as a label value, a value out of range, the value as a string)
    are read by the Reader: the same objects, names and origins as the whole-file load."""
    monkeypatch.setattr(stream_module, "BATCH_CHARS", 256)
    decoded = []
    for name in ("decode_namespace", "decode_priority_class", "decode_pdb"):
        original = getattr(loader_module, name)

        def recording(raw, original=original):
            result = original(raw)
            decoded.append(result is not None)
            return result

        monkeypatch.setattr(loader_module, name, recording)
    monkeypatch.setitem(loader_module._TYPED_DECODERS, "Namespace", loader_module.decode_namespace)
    monkeypatch.setitem(loader_module._TYPED_DECODERS, "PriorityClass", loader_module.decode_priority_class)
    monkeypatch.setitem(loader_module._TYPED_DECODERS, "PodDisruptionBudget", loader_module.decode_pdb)

    def priority_class(name, value, **extra):
        return {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": name},
            "value": value,
            **extra,
        }

    items = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": f"ns{i}", "labels": {"team": "a"}}}
        for i in range(10)
    ]
    items += [
        {"kind": "Namespace", "metadata": {"name": "odd", "labels": {"tier": 1}}},
        priority_class("high", 1000, globalDefault=True, preemptionPolicy="Never"),
        priority_class("low", -5),
        priority_class("system-huge", 2_000_000_500),
        priority_class("value-as-text", "7"),
    ]
    items += [
        {
            "kind": "PodDisruptionBudget",
            "metadata": {"name": f"b{i}", "namespace": "shop"},
            "spec": {"minAvailable": "50%", "selector": {"matchLabels": {"app": "web"}}},
            "status": {"expectedPods": i},
        }
        for i in range(3)
    ]
    items.append(pod("a"))  # last: the last item is read by value(), not in a batch
    path = write(tmp_path / "dump.json", dump(items), "json")
    loaded = load_file(path)
    reference = whole_file(path)
    assert loaded.namespaces == reference.namespaces and loaded.priority_classes == reference.priority_classes
    assert loaded.pdbs == reference.pdbs and len(loaded.pdbs) == 3
    assert loaded.origins == reference.origins
    assert loaded.namespaces[0].labels == {"team": "a", "kubernetes.io/metadata.name": "ns0"}
    assert decoded.count(True) == 16 and decoded.count(False) == 2  # "odd" and "value-as-text"


@pytest.mark.parametrize(
    ("item", "expected"),
    [
        ({"kind": "PriorityClass", "metadata": {"name": "big"}, "value": 2_000_000_000}, "value"),
        ({"kind": "PriorityClass", "metadata": {"name": "none"}}, "value"),
        ({"kind": "Namespace", "metadata": {"name": "Not_A_Name"}}, "metadata.name"),
    ],
    ids=["priority-out-of-range", "priority-without-value", "namespace-bad-name"],
)
def test_a_namespace_or_priority_class_error_names_the_item_as_before(tmp_path, item, expected):
    path = write(tmp_path / "bad.json", dump([pod("a"), item]), "json")
    message = same_error_as_whole_file(path)
    assert "items[1]" in message and expected in message


@pytest.mark.parametrize(
    "items",
    [
        [pod("x", "n1"), pod("y"), pod("x", "n2")],  # a second copy in the same dump
        # Bound pods' requests over int64 units on one node (the pods' own amounts fit): the pod
        # that takes the total over is named. A finished pod on the node counts for nothing.
        [
            pod("a", "n1", cpu="5P"),
            pod("done", "n1", cpu="5P", status={"phase": "Succeeded"}),
            pod("b", "n1", cpu="5P"),
        ],
    ],
    ids=["duplicate", "node-total-over-int64"],
)
def test_pods_added_from_the_wire_schema_fail_as_the_whole_file_load_does(tmp_path, items):
    path = write(tmp_path / "dump.json", dump(items), "json")
    message = same_error_as_whole_file(path)
    assert ("duplicate Pod default/x" in message) or ("items[2] (Pod default/b)" in message)


def test_pods_added_from_the_wire_schema_keep_the_origins_and_node_totals_of_the_whole_file_load(tmp_path):
    items = [pod("a", "n1"), pod("b", "n1", status={"phase": "Failed"}), pod("c", "n2"), pod("d")]
    path = write(tmp_path / "dump.json", dump(items), "json")
    m, reference = load_file(path), whole_file(path)
    assert m.origins == reference.origins and len(m.origins) == 4
    assert (
        m.bound_requests
        == reference.bound_requests
        == {
            "n1": {"cpu": 250, "memory": 64 * 2**20, "pods": 1},
            "n2": {"cpu": 250, "memory": 64 * 2**20, "pods": 1},
        }
    )


def _runs_of_pods(monkeypatch):
    """The PodRuns decoded while loading, each as its pods' names."""
    runs = []
    original = stream_module._batch

    def recording(text):
        values = original(text)
        if isinstance(values, stream_module.PodRun):
            runs.append([wire.metadata.name for wire in values.wires])
        return values

    monkeypatch.setattr(stream_module, "_batch", recording)
    return runs


INIT = {"containers": [{"name": "a"}], "initContainers": [{"name": "i"}]}


# Errors inside a run of pods, each with the message's part that names it (test_pod_rows.py loads
# them as rows too).
RUN_ERRORS = [
    pytest.param(
        [pod("a", "n1"), pod("b"), pod("a", "n2"), pod("c")],
        "items[2] (Pod default/a): duplicate Pod default/a",
        id="duplicate",
    ),
    pytest.param(
        [pod("a", "n1", cpu="5P"), pod("i", "n1", spec=INIT), pod("b", "n1", cpu="5P"), pod("c")],
        "items[2] (Pod default/b)",
        id="node-total-over-int64-after-a-reader-pod",
    ),
    pytest.param(
        [pod("a", "n1"), pod("i", "n1", spec=INIT), pod("bad", "n1", cpu="lots"), pod("c")],
        "items[2] (Pod default/bad)",
        id="bad-quantity",
    ),
    pytest.param(
        [pod("a", "n1"), pod("i", spec=INIT), pod("i", "n2"), pod("c")],
        "duplicate Pod default/i",
        id="duplicate-of-a-reader-pod",
    ),
]


@pytest.mark.parametrize(("items", "expected"), RUN_ERRORS)
def test_an_error_inside_a_run_of_pods_is_the_whole_file_loads(tmp_path, monkeypatch, items, expected):
    """A run of pods is built in one loop (model/stream.py's PodRun), pods the schema does not
    take read by the Reader in their place: the first error in file order, word for word."""
    monkeypatch.setattr(stream_module, "BATCH_CHARS", 2048)
    runs = _runs_of_pods(monkeypatch)
    path = write(tmp_path / "dump.json", dump(items + [pod(f"pad{i}") for i in range(20)]), "json")
    message = same_error_as_whole_file(path)
    assert expected in message
    assert runs and runs[0][:3] == [item["metadata"]["name"] for item in items[:3]]  # items[2] in a run


def test_runs_of_pods_with_reader_pods_among_them_are_the_whole_file_load(tmp_path, monkeypatch, streamed):
    monkeypatch.setattr(stream_module, "BATCH_CHARS", 1024)
    runs = _runs_of_pods(monkeypatch)
    items = [
        pod(f"p{i}", f"n{i % 3}" if i % 4 else "", spec=INIT if i % 5 == 2 else None)
        if i % 5 == 2
        else pod(
            f"p{i}", f"n{i % 3}" if i % 4 else "", status={"phase": "Succeeded" if i % 7 == 0 else "Running"}
        )
        for i in range(60)
    ]
    path = write(tmp_path / "dump.json", dump(items), "json")
    loaded, reference = load_file(path), whole_file(path)
    assert streamed == [str(path)] and len(runs) > 3
    assert loaded.pods == reference.pods and len(loaded.pods) == 60
    assert loaded.origins == reference.origins and loaded.bound_requests == reference.bound_requests
    assert sum(bool(p.init_containers) for p in loaded.pods) == 12  # the Reader's, inside runs
