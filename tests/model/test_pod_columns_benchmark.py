"""benchmarks/pod_columns.py times reading pods as columns against building Pods: its figures
mean something only if the columns hold what the Pods would (checked here on randomly broken pods,
odd timestamps and quantities included) and its checks refuse no pod the loader builds."""

import json

import msgspec
from benchmarks import dumps, pod_columns
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mutations import mutated, odd_values
from test_pod_typed import FULL_POD, PATHS

from kubetide.model.pod_typed import typed_pod
from kubetide.model.wire import PodWire

ODD_TIMES = [
    "2026-11-01T00:00:00.1234565Z",
    "2026-11-01T00:00Z",
    "2026-11-01",
    "2026-W44-7",
    "2026-11-01T01:00:00+01:00",
]
ODD_QUANTITIES = ["1e3", "0.1", "100m", "1Ki", "-1", "1.5G"]


def pod_fields(pod) -> dict:
    """What the columns step reads, as the Pod holds it."""
    return {
        "name": pod.name,
        "namespace": pod.namespace,
        "uid": pod.uid,
        "node": pod.node_name,
        "phase": pod.phase,
        "ready": pod.ready,
        "ready_transition": pod.ready_transition,
        "restarts": pod.restarts,
        "created": pod.meta.creation_timestamp,
        "deleted": pod.meta.deletion_timestamp,
        "cost": pod.annotations.get("controller.kubernetes.io/pod-deletion-cost"),
        "controller": pod.controller,
    }


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
def test_the_columns_hold_what_the_pods_built_from_the_same_wires_hold(mutations):
    data = mutated(FULL_POD, mutations)
    try:
        wire = msgspec.json.decode(json.dumps(data), type=PodWire)
    except msgspec.MsgspecError:
        return  # the loader's Reader reads it: no wire, no columns
    pod = typed_pod(wire, "", "")
    if pod is None:
        return  # left to the Reader: a columns loader would leave it there too
    columns = pod_columns._columns([wire])
    assert {field: values[0] for field, values in columns.items()} == pod_fields(pod)


def test_the_benchmark_reads_every_pod_of_a_dump_both_ways(tmp_path):
    path = dumps.filter_out_schedulable(tmp_path, "json", nodes=3, scheduled=5, pending=7)
    figures = pod_columns.measure(str(path))
    assert figures["pods_count"] == 12 and figures["pods_for_the_reader"] == 0
    assert set(figures) == {"split", "decode", "pods", "columns", "pods_count", "pods_for_the_reader"}
