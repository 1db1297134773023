"""Two topologySpreadConstraints of one pod with the same {topologyKey, whenUnsatisfiable} pair
are refused, as the API server refuses them (issue 42 item 5): one line naming the file, the object
and the field, exit 2 from the CLI; on both pod parsers. Other pairs load."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kubetide.cli.main import main
from kubetide.errors import ManifestError
from kubetide.model import load_files
from kubetide.model.pod_typed import convert_pod

HOSTNAME, ZONE = "kubernetes.io/hostname", "topology.kubernetes.io/zone"
NODE = {
    "kind": "Node",
    "metadata": {"name": "n1", "labels": {HOSTNAME: "n1", ZONE: "a"}},
    "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}},
}


def spread(key: str, when: str, skew: int = 1) -> dict:
    return {
        "maxSkew": skew,
        "topologyKey": key,
        "whenUnsatisfiable": when,
        "labelSelector": {"matchLabels": {"app": "web"}},
    }


def pod(*constraints: dict) -> dict:
    return {
        "kind": "Pod",
        "metadata": {"name": "web-1", "namespace": "default", "labels": {"app": "web"}},
        "spec": {
            "containers": [{"name": "c", "resources": {"requests": {"cpu": "100m"}}}],
            "topologySpreadConstraints": list(constraints),
        },
        "status": {"phase": "Pending"},
    }


def write_list(tmp_path: Path, *items: dict) -> Path:
    path = tmp_path / "dump.yaml"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": list(items)}))
    return path


FIELD = "spec.topologySpreadConstraints[{}].{{topologyKey, whenUnsatisfiable}}"
REFUSED = [
    # (constraints, index of the duplicate, the pair, the index it repeats)
    (
        (spread(HOSTNAME, "DoNotSchedule"), spread(HOSTNAME, "DoNotSchedule", 2)),
        1,
        (HOSTNAME, "DoNotSchedule"),
        0,
    ),
    ((spread(ZONE, "ScheduleAnyway"), spread(ZONE, "ScheduleAnyway")), 1, (ZONE, "ScheduleAnyway"), 0),
    (
        (spread(ZONE, "DoNotSchedule"), spread(HOSTNAME, "DoNotSchedule"), spread(ZONE, "DoNotSchedule", 3)),
        2,
        (ZONE, "DoNotSchedule"),
        0,
    ),
]
ACCEPTED = [
    (spread(HOSTNAME, "DoNotSchedule"), spread(HOSTNAME, "ScheduleAnyway")),
    (spread(HOSTNAME, "DoNotSchedule"), spread(ZONE, "DoNotSchedule")),
    (spread(ZONE, "DoNotSchedule"),),
]


@pytest.mark.parametrize(("constraints", "index", "pair", "first"), REFUSED)
def test_a_repeated_pair_is_one_error_naming_the_field(tmp_path, constraints, index, pair, first):
    obj = pod(*constraints)
    with pytest.raises(ManifestError) as refused:
        load_files([write_list(tmp_path, obj)])
    message = str(refused.value)
    assert "\n" not in message
    assert message.startswith(
        f"{tmp_path / 'dump.yaml'}: items[0] (Pod default/web-1): {FIELD.format(index)}: "
    )
    assert f'topologyKey "{pair[0]}" with whenUnsatisfiable {pair[1]}' in message
    assert message.endswith(f"as in topologySpreadConstraints[{first}]")
    # The wire-schema path cannot vouch for the pod and hands it to the Reader path, which words it.
    assert convert_pod(obj, "dump.yaml", "items[0]") is None


@pytest.mark.parametrize("constraints", ACCEPTED)
def test_distinct_pairs_load_on_both_paths(tmp_path, constraints):
    (loaded,) = [p for p in load_files([write_list(tmp_path, pod(*constraints))]).pods]
    assert [(c.topology_key, c.when_unsatisfiable) for c in loaded.topology_spread] == [
        (c["topologyKey"], c["whenUnsatisfiable"]) for c in constraints
    ]
    typed = convert_pod(pod(*constraints), "dump.yaml", "items[0]")
    assert typed is not None and typed.topology_spread == loaded.topology_spread


def test_the_cli_says_it_in_one_line_with_exit_code_2(tmp_path, capsys):
    duplicated = pod(spread(HOSTNAME, "DoNotSchedule"), spread(HOSTNAME, "DoNotSchedule"))
    assert main(["schedule", str(write_list(tmp_path, NODE, duplicated))]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert FIELD.format(1) in err and "duplicate value" in err
