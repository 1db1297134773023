"""The API server's validation rules for the fields kubetide reads: what it would refuse, kubetide
refuses too, with one line naming the file, the object and the field (exit 2 from the CLI), on
both pod parsers (the fast path hands a pod it cannot vouch for to the Reader path, which words it).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from kubetide.cli.main import main
from kubetide.errors import ManifestError
from kubetide.model import load_files
from kubetide.model.pod_typed import convert_pod
from kubetide.model.validation import label_key_problem, label_value_problem, labels_problem

NODE = {
    "kind": "Node",
    "metadata": {"name": "n1", "labels": {"kubernetes.io/hostname": "n1"}},
    "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}},
}
POD = {
    "kind": "Pod",
    "metadata": {"name": "web-1", "namespace": "default", "labels": {"app": "web"}},
    "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "100m"}}}]},
    "status": {"phase": "Pending"},
}
PDB = {
    "kind": "PodDisruptionBudget",
    "metadata": {"name": "web", "namespace": "default"},
    "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}},
}
PRIORITY_CLASS = {"kind": "PriorityClass", "metadata": {"name": "high"}, "value": 1000}
DEPLOYMENT = {
    "kind": "Deployment",
    "metadata": {"name": "web", "namespace": "default"},
    "spec": {
        "replicas": 2,
        "selector": {"matchLabels": {"app": "web"}},
        "template": {"metadata": {"labels": {"app": "web"}}, "spec": POD["spec"]},
    },
}
JOB = {
    "kind": "Job",
    "metadata": {"name": "batch", "namespace": "default"},
    "spec": {"template": {"metadata": {"labels": {"job": "batch"}}, "spec": POD["spec"]}},
}
OWNER = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-abc", "uid": "u1", "controller": True}
SPREAD = {"maxSkew": 1, "topologyKey": "", "whenUnsatisfiable": "DoNotSchedule"}
ANTI_AFFINITY = {
    "podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": ""}
        ]
    }
}


def changed(obj: dict, path: str, value) -> dict:
    """A copy of obj with the dotted path set to value (`a.b.0.c`: 0 indexes a list)."""
    result = copy.deepcopy(obj)
    *parents, last = path.split(".")
    here = result
    for part in parents:
        here = here[int(part)] if part.isdigit() else here.setdefault(part, {})
    if last.isdigit():
        here[int(last)] = value
    else:
        here[last] = value
    return result


# (object, the error's tail: "items[0] (Kind key): field: message")
CASES = {
    "PDB minAvailable over 100%": (
        changed(PDB, "spec.minAvailable", "150%"),
        "(PodDisruptionBudget default/web): spec.minAvailable: must not be greater than 100%, got 150%",
    ),
    "PDB maxUnavailable over 100%": (
        changed(PDB, "spec.minAvailable", None) | {"spec": {"maxUnavailable": "101%", "selector": {}}},
        "spec.maxUnavailable: must not be greater than 100%",
    ),
    "PDB minAvailable over int32": (
        changed(PDB, "spec.minAvailable", 2**31),
        "spec.minAvailable: 2147483648 is out of range for an int32 field",
    ),
    "label key with a space": (
        changed(POD, "metadata.labels", {"my app": "web"}),
        "(Pod default/web-1): metadata.labels.my app: label key 'my app': the name part must consist of",
    ),
    "label key with an empty prefix": (
        changed(NODE, "metadata.labels", {"/zone": "a"}),
        "(Node n1): metadata.labels./zone: label key '/zone': the prefix before '/' must not be empty",
    ),
    "label key with a bad prefix": (
        changed(NODE, "metadata.labels", {"Example.com/zone": "a"}),
        "metadata.labels.Example.com/zone: label key 'Example.com/zone': prefix 'Example.com' is not",
    ),
    "64-character label value": (
        changed(POD, "metadata.labels", {"app": "x" * 64}),
        "(Pod default/web-1): metadata.labels.app: label value must be no more than 63 characters, got 64",
    ),
    "label value with a space": (
        changed(DEPLOYMENT, "spec.template.metadata.labels", {"app": "web server"}),
        "(Deployment default/web): spec.template.metadata.labels.app: label value 'web server' must be",
    ),
    "Bad_Name pod": (
        changed(POD, "metadata.name", "Bad_Name"),
        "(Pod default/Bad_Name): metadata.name: 'Bad_Name' is not a lowercase RFC 1123 subdomain",
    ),
    "Bad_Name node": (
        changed(NODE, "metadata.name", "Bad_Name"),
        "metadata.name: 'Bad_Name' is not a lowercase RFC 1123 subdomain",
    ),
    "254-character node name": (
        changed(NODE, "metadata.name", "n" * 254),
        "metadata.name: must be no more than 253 characters, got 254",
    ),
    "namespace with a dot": (
        changed(POD, "metadata.namespace", "team.a"),
        "metadata.namespace: 'team.a' is not a lowercase RFC 1123 label",
    ),
    "Namespace object named with a dot": (
        {"kind": "Namespace", "metadata": {"name": "team.a"}},
        "(Namespace team.a): metadata.name: 'team.a' is not a lowercase RFC 1123 label",
    ),
    "duplicate container names": (
        changed(POD, "spec.containers", [{"name": "c"}, {"name": "c"}]),
        '(Pod default/web-1): spec.containers: duplicate container name "c"',
    ),
    "an init container named as a container": (
        changed(POD, "spec.initContainers", [{"name": "c"}]),
        'spec.containers: duplicate container name "c"',
    ),
    "a container name that is not a label": (
        changed(POD, "spec.containers.0.name", "Web_Server"),
        "spec.containers[0].name: 'Web_Server' is not a lowercase RFC 1123 label",
    ),
    "two controller ownerReferences": (
        changed(POD, "metadata.ownerReferences", [OWNER, {**OWNER, "name": "web-def", "uid": "u2"}]),
        "(Pod default/web-1): metadata.ownerReferences: only one reference can have controller set to true",
    ),
    "empty topologyKey in a spread constraint": (
        changed(POD, "spec.topologySpreadConstraints", [SPREAD]),
        "spec.topologySpreadConstraints[0].topologyKey: required field is missing",
    ),
    "empty topologyKey in pod anti-affinity": (
        changed(POD, "spec.affinity", ANTI_AFFINITY),
        "requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey: required field is missing",
    ),
    "pod priority above int32": (
        changed(POD, "spec.priority", 2**31),
        "(Pod default/web-1): spec.priority: 2147483648 is out of range for an int32 field",
    ),
    "pod priority below int32": (
        changed(POD, "spec.priority", -(2**31) - 1),
        "spec.priority: -2147483649 is out of range for an int32 field",
    ),
    "PriorityClass value above int32": (
        changed(PRIORITY_CLASS, "value", 2**31),
        "(PriorityClass high): value: must be between -2147483648 and 1000000000, got 2147483648",
    ),
    "replicas 2147483648": (
        changed(DEPLOYMENT, "spec.replicas", 2**31),
        "(Deployment default/web): spec.replicas: 2147483648 is out of range for an int32 field",
    ),
    "Job parallelism above int32": (
        changed(JOB, "spec.parallelism", 2**31),
        "(Job default/batch): spec.parallelism: 2147483648 is out of range for an int32 field",
    ),
}


def write_list(tmp_path: Path, *items: dict) -> Path:
    path = tmp_path / "dump.yaml"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": list(items)}))
    return path


@pytest.mark.parametrize(("obj", "expected"), list(CASES.values()), ids=list(CASES))
def test_what_the_api_server_refuses_is_one_error_naming_object_and_field(tmp_path, obj, expected):
    with pytest.raises(ManifestError) as refused:
        load_files([write_list(tmp_path, obj)])
    message = str(refused.value)
    assert "\n" not in message
    assert message.startswith(f"{tmp_path / 'dump.yaml'}: items[0] "), message
    assert expected in message, message


@pytest.mark.parametrize(
    ("obj", "expected"),
    [case for case in CASES.values() if case[0]["kind"] == "Pod"],
    ids=[name for name, case in CASES.items() if case[0]["kind"] == "Pod"],
)
def test_the_wire_schema_path_hands_every_such_pod_to_the_reader(obj, expected):
    assert convert_pod(obj, "dump.yaml", "items[0]") is None


@pytest.mark.parametrize("name", ["duplicate container names", "Bad_Name pod", "replicas 2147483648"])
def test_the_cli_says_it_in_one_line_with_exit_code_2(tmp_path, capsys, name):
    obj, expected = CASES[name]
    assert main(["schedule", str(write_list(tmp_path, NODE, obj))]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and expected in err and "Traceback" not in err, err


@pytest.mark.parametrize(
    "obj",
    [
        changed(PDB, "spec.minAvailable", "100%"),
        changed(POD, "metadata.labels", {"example.com/app": "x" * 63, "a": "", "A_b.c-d": "Z9"}),
        changed(POD, "metadata.name", "web-1.example"),
        changed(POD, "spec.priority", 2**31 - 1),
        changed(POD, "metadata.ownerReferences", [OWNER, {**OWNER, "controller": False, "name": "other"}]),
        changed(DEPLOYMENT, "spec.replicas", 2**31 - 1),
        changed(NODE, "metadata.name", "n" * 253),
    ],
)
def test_what_the_api_server_accepts_still_loads(tmp_path, obj):
    load_files([write_list(tmp_path, obj)])


@pytest.mark.parametrize(
    ("key", "ok"),
    [
        ("app", True),
        ("kubernetes.io/hostname", True),
        ("a" * 63, True),
        ("a" * 64, False),
        ("example.com/" + "a" * 63, True),
        ("-app", False),
        ("app-", False),
        ("my app", False),
        ("a/b/c", False),
        ("", False),
        ("example.com/", False),
    ],
)
def test_label_keys_are_qualified_names(key, ok):
    assert (label_key_problem(key) is None) == ok


@pytest.mark.parametrize(
    ("value", "ok"),
    [
        ("", True),
        ("a", True),
        ("a.b_c-d", True),
        ("x" * 63, True),
        ("x" * 64, False),
        ("_a", False),
        ("a b", False),
    ],
)
def test_label_values(value, ok):
    assert (label_value_problem(value) is None) == ok


def test_labels_found_valid_before_do_not_vouch_for_new_combinations():
    assert labels_problem({"app": "web", "tier": "front"}) is None
    assert labels_problem({"app": "web"}) is None  # known: the fast way
    assert labels_problem({"my app": "web"})[0] == "my app"  # a known value under a bad key
    assert labels_problem({"app": "web web"})[0] == "app"  # a bad value under a known key
    assert labels_problem({"tier": "front", "app": "x" * 64})[0] == "app"


@pytest.mark.parametrize("value", ["9" * 5000, "9" * 5000 + "%", "99999999999999999999", "99999999999%"])
def test_a_huge_int_or_percent_string_is_out_of_range_not_a_traceback(tmp_path, value):
    # The fuzz campaign of 2026-11-27: a 5,000-digit minAvailable reached int(), which refuses
    # more than 4,300 digits with a ValueError.
    with pytest.raises(ManifestError) as refused:
        load_files([write_list(tmp_path, changed(PDB, "spec.minAvailable", value))])
    message = str(refused.value)
    assert "spec.minAvailable: " in message and ("int32" in message or "100%" in message), message
