"""Pods loaded as rows of columns (model/pod_columns.py, what `kubetide downscale` loads) hold what
the Pods hold, and load to the same answers and the same one-line errors as the Pods do."""

import json

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mutations import mutated, odd_values
from test_pod_typed import FULL_POD, PATHS
from test_streaming import INIT, RUN_ERRORS, _runs_of_pods, dump, pod, whole_file, write

from kubetide.errors import ManifestError
from kubetide.model import load_file, stream
from kubetide.model.loader import (
    Manifests,
    load_documents,
    parse_text,
    read_text,
    resolve_priorities,
    stream_list_file,
)
from kubetide.model.pod_columns import PodColumns
from kubetide.model.pod_typed import checked_pod, typed_pod
from kubetide.model.wire import PodWire

ODD_TIMES = [
    "2026-11-01T00:00:00.1234565Z",
    "2026-11-01T00:00Z",
    "2026-11-01",
    "2026-W44-7",
    "2026-11-01T01:00:00+01:00",
]
ODD_QUANTITIES = ["1e3", "0.1", "100m", "1Ki", "-1", "1.5G"]
COLUMNS = [name for name in PodColumns.__slots__ if not name.startswith("_")]


def rows_of(path) -> Manifests:
    """`path` loaded as rows (streamed when it is a List dump), priorities resolved."""
    loaded = load_file(path, into=Manifests(pod_rows=PodColumns()))
    resolve_priorities(loaded, str(path))
    return loaded


def pods_of(path) -> Manifests:
    loaded = whole_file(path)
    resolve_priorities(loaded, str(path))
    return loaded


def columns(table: PodColumns) -> dict:
    return {name: getattr(table, name) for name in COLUMNS}


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.tuples(
            st.sampled_from(PATHS),
            st.one_of(odd_values("Exists", "Ready", "Running"), st.sampled_from(ODD_TIMES + ODD_QUANTITIES)),
        ),
        min_size=1,
        max_size=3,
    )
)
def test_a_row_holds_what_the_pod_built_from_the_same_wire_holds(mutations):
    try:
        wire = msgspec.json.decode(json.dumps(mutated(FULL_POD, mutations)), type=PodWire)
    except msgspec.MsgspecError:
        return  # the Reader's: no wire, no row from one
    pod, checked = typed_pod(wire, "", ""), checked_pod(wire)
    assert (checked is None) == (pod is None)  # the same checks, the same pods taken
    if pod is None:
        return
    rows = PodColumns()
    rows.add_checked(wire, checked)
    assert columns(rows) == columns(PodColumns.of_pods([pod]))
    built = rows.pod(0)
    assert built == pod and built.shape == pod.shape
    assert rows.pod(0) is built  # built once


def test_a_row_is_built_with_its_resolved_priority_and_a_pod_row_is_its_pod():
    wire = msgspec.json.decode(json.dumps(FULL_POD), type=PodWire)
    pod = typed_pod(wire, "", "")
    rows = PodColumns()
    rows.add_checked(wire, checked_pod(wire))
    rows.add_pod(pod)
    rows.priorities[0] = pod.priority + 7
    assert rows.pod(0).priority == pod.priority + 7 and rows.pod(0).shape == pod.shape
    assert rows.pod(1) is pod
    assert rows.keys([1, 0]) == [pod.key, pod.key]


def test_runs_of_pods_with_reader_pods_among_them_load_as_rows_to_the_pods(tmp_path, monkeypatch):
    monkeypatch.setattr(stream, "BATCH_CHARS", 1024)
    runs = _runs_of_pods(monkeypatch)
    items = [
        pod(f"p{i}", f"n{i % 3}" if i % 4 else "", spec=INIT)
        if i % 5 == 2
        else pod(
            f"p{i}",
            f"n{i % 3}" if i % 4 else "",
            status={"phase": "Succeeded" if i % 7 == 0 else "Running"},
            **({"metadata": {"name": f"p{i}", "namespace": "shop"}} if i % 6 == 1 else {}),
        )
        for i in range(60)
    ]
    items[9]["spec"]["priorityClassName"] = "high"
    items[9]["spec"]["priority"] = 1000
    items[13]["spec"]["priorityClassName"] = "high"  # resolved from items[9]'s
    path = write(tmp_path / "dump.json", dump(items), "json")
    loaded, reference = Manifests(pod_rows=PodColumns()), pods_of(path)
    assert stream_list_file(path, str(path), loaded) == {"Pod"}  # streamed, not loaded whole
    resolve_priorities(loaded, str(path))
    assert len(runs) > 3
    assert loaded.pods == []  # every pod a row
    table = loaded.pod_table()
    assert len(table) == 60 and table.pods(range(60)) == reference.pods
    assert columns(table) == columns(PodColumns.of_pods(reference.pods))
    assert table.priorities[13] == 1000
    assert loaded.origins == reference.origins and loaded.bound_requests == reference.bound_requests


@pytest.mark.parametrize(
    ("items", "expected"),
    [
        *RUN_ERRORS,
        pytest.param(
            [pod("a", "n1"), pod("b", spec={**pod("b")["spec"], "priorityClassName": "nope"}), pod("c")],
            "Pod default/b: spec.priorityClassName: unknown PriorityClass",
            id="unknown-priority-class",
        ),
    ],
)
def test_an_error_inside_a_run_loaded_as_rows_is_the_pods_error(tmp_path, monkeypatch, items, expected):
    monkeypatch.setattr(stream, "BATCH_CHARS", 2048)
    runs = _runs_of_pods(monkeypatch)
    path = write(tmp_path / "dump.json", dump(items + [pod(f"pad{i}") for i in range(20)]), "json")
    with pytest.raises(ManifestError) as as_rows:
        rows_of(path)
    with pytest.raises(ManifestError) as as_pods:
        pods_of(path)
    assert str(as_rows.value) == str(as_pods.value) and expected in str(as_rows.value)
    assert runs and runs[0][:3] == [item["metadata"]["name"] for item in items[:3]]  # items[2] in a run


def test_yaml_pods_are_rows_of_the_pods_the_reader_builds(tmp_path):
    items = [pod("a", "n1"), pod("b", status={"phase": "Failed"}), pod("c", "n2", spec=INIT)]
    path = write(tmp_path / "dump.yaml", dump(items), "yaml")
    loaded = load_documents(
        parse_text(read_text(path), str(path)), str(path), Manifests(pod_rows=PodColumns())
    )
    reference = whole_file(path)
    assert loaded.pods == [] and loaded.pod_table().pods(range(3)) == reference.pods
    assert loaded.bound_requests == reference.bound_requests
