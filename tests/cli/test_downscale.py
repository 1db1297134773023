"""`kubetide downscale`: reasons in words, the --json shape, and one-line errors with exit code 2."""

import json
import textwrap
from pathlib import Path

import pytest
from cli_subcommand import subcommand

EXAMPLE = str(Path(__file__).resolve().parents[2] / "examples" / "downscale-pods.yaml")
NOW = "2026-11-22T12:00:00Z"
NEW = "ReplicaSet/web-7f9c8d6b5"


@pytest.fixture
def kubetide(monkeypatch, capsys):
    return subcommand("downscale", monkeypatch, capsys)


def test_example_explains_each_deletion(kubetide):
    code, out, err = kubetide(EXAMPLE, "--owner", NEW, "--replicas", 4, "--now", NOW)
    assert code == 0 and err == ""
    assert "ReplicaSet shop/web-7f9c8d6b5 of Deployment web: 10 active pods -> 4, 6 to delete" in out
    assert "Related pods: 13 active in this ReplicaSet and web-6d4b7c9f8" in out
    rows = [line.split() for line in out.splitlines() if " delete " in line or " keep " in line]
    assert [row[1] for row in rows] == ["delete"] * 6 + ["keep"] * 4
    lines = {
        line.split()[2]: line for line in out.splitlines() if line.split()[1:2] in (["delete"], ["keep"])
    }
    assert lines["shop/web-7f9c8d6b5-q8x2m"].endswith("unscheduled")
    assert lines["shop/web-7f9c8d6b5-h4k7p"].endswith("not ready")
    assert lines["shop/web-7f9c8d6b5-2xkqz"].endswith("4 related pods on node-a (vs 3 on node-c)")
    assert lines["shop/web-7f9c8d6b5-k2p9s"].endswith("more restarts (6 > 0)")
    assert "cost 500" in lines["shop/web-7f9c8d6b5-vb7lc"]


@pytest.mark.parametrize(
    ("replicas", "expected"),
    [
        (6, ["ready 2h ago vs 8d23h ago (bucket 42 < 49)", "ready 5d ago vs 8d23h ago (bucket 48 < 49)"]),
        (
            2,
            [
                "ready 3d ago vs 4d ago (bucket 47 < 48)",
                "same age bucket, UID ordering (ready 4d3h ago vs 4d ago, bucket 48)",
            ],
        ),
    ],
)
def test_time_buckets_are_explained(kubetide, replicas, expected):
    code, out, _ = kubetide(EXAMPLE, "--owner", NEW, "--replicas", replicas, "--now", NOW)
    assert code == 0
    for reason in expected:
        assert reason in out


def test_json_shape_is_exactly_delete_and_keep_in_ranking_order(kubetide):
    code, out, err = kubetide(EXAMPLE, "--owner", "rs/web-7f9c8d6b5", "--replicas", 4, "--now", NOW, "--json")
    assert code == 0 and err == ""
    data = json.loads(out)
    assert (data["apiVersion"], data["kind"]) == ("kubetide.io/v1alpha1", "DownscaleResult")
    assert [p["pod"] for p in data["pods"]] == data["delete"] + data["keep"]
    assert data["delete"] == [
        "shop/web-7f9c8d6b5-q8x2m",
        "shop/web-7f9c8d6b5-h4k7p",
        "shop/web-7f9c8d6b5-2xkqz",
        "shop/web-7f9c8d6b5-8mwtd",
        "shop/web-7f9c8d6b5-rz5jn",
        "shop/web-7f9c8d6b5-k2p9s",
    ]
    assert data["keep"] == [
        "shop/web-7f9c8d6b5-f6hwx",
        "shop/web-7f9c8d6b5-w7cbm",  # ready 4d3h and 4d ago, both bucket 48: the smaller UID first
        "shop/web-7f9c8d6b5-n3gty",
        "shop/web-7f9c8d6b5-vb7lc",
    ]


def test_legacy_deletes_the_most_recently_ready_first(kubetide):
    code, out, _ = kubetide(EXAMPLE, "--owner", NEW, "--replicas", 2, "--now", NOW, "--legacy", "--json")
    assert code == 0
    data = json.loads(out)
    # node-d: 4d ready goes before 4d3h ready, whatever the UIDs say
    assert data["delete"][-1] == "shop/web-7f9c8d6b5-n3gty"
    assert data["keep"] == ["shop/web-7f9c8d6b5-w7cbm", "shop/web-7f9c8d6b5-vb7lc"]
    code, out, _ = kubetide(EXAMPLE, "--owner", NEW, "--replicas", 2, "--now", NOW, "--legacy")
    assert "newest first (--legacy)" in out
    assert "ready 4d ago vs 4d3h ago (more recently ready first)" in out


def test_every_pod_goes_without_ranking(kubetide):
    code, out, _ = kubetide(
        EXAMPLE, "--owner", "ReplicaSet/shop/web-6d4b7c9f8", "--replicas", 0, "--now", NOW
    )
    assert code == 0
    assert out.count("every pod goes") == 3
    assert "Not counted: 1 terminating or finished pod(s): web-6d4b7c9f8-t6wqn." in out


def test_nothing_to_delete(kubetide):
    code, out, _ = kubetide(EXAMPLE, "--owner", NEW, "--replicas", 10, "--now", NOW, "--json")
    assert code == 0
    assert json.loads(out)["delete"] == []


def test_without_replicaset_objects_the_deployment_is_inferred_from_pod_template_hash(kubetide, tmp_path):
    text = Path(EXAMPLE).read_text()
    items = text.split("\n- ")
    pods_only = "\n- ".join([items[0]] + [item for item in items[1:] if item.startswith("apiVersion: v1")])
    path = tmp_path / "pods.yaml"
    path.write_text(pods_only)
    code, out, _ = kubetide(path, "--owner", NEW, "--replicas", 4, "--now", NOW, "--json")
    assert code == 0
    code, human, _ = kubetide(path, "--owner", NEW, "--replicas", 4, "--now", NOW)
    assert "of Deployment web" in human and "4 related pods on node-a" in human
    code, full, _ = kubetide(EXAMPLE, "--owner", NEW, "--replicas", 4, "--now", NOW, "--json")
    assert json.loads(out) == json.loads(full)


def test_a_single_owner_needs_no_flag(kubetide, tmp_path):
    path = tmp_path / "pods.yaml"
    path.write_text(
        textwrap.dedent(
            """
            apiVersion: v1
            kind: List
            items:
            - kind: Pod
              metadata:
                name: a
                creationTimestamp: "2026-11-22T10:00:00Z"
                ownerReferences: [{kind: ReplicaSet, name: solo, controller: true}]
              spec: {nodeName: n1, containers: [{name: c}]}
              status:
                phase: Running
                conditions: [{type: Ready, status: "True", lastTransitionTime: "2026-11-22T10:00:00Z"}]
            - kind: Pod
              metadata:
                name: b
                creationTimestamp: "2026-11-20T10:00:00Z"
                ownerReferences: [{kind: ReplicaSet, name: solo, controller: true}]
              spec: {nodeName: n2, containers: [{name: c}]}
              status:
                phase: Running
                conditions: [{type: Ready, status: "True", lastTransitionTime: "2026-11-20T10:00:00Z"}]
            """
        )
    )
    code, out, err = kubetide(path, "--replicas", 1, "--now", NOW, "--json")
    assert (code, err) == (0, "")
    result = json.loads(out)
    assert (result["delete"], result["keep"]) == (["default/a"], ["default/b"])


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--replicas", -1, "--owner", NEW], "--replicas must be 0 or more, got -1"),
        (["--replicas", 11, "--owner", NEW], "--replicas 11 is more than the 10 active pods"),
        (
            ["--replicas", 1, "--owner", NEW, "--now", "yesterday"],
            "--now: expected an RFC 3339 time (e.g. 2026-05-01T10:00:00Z) or \"now\", got 'yesterday'",
        ),
        (["--replicas", 1, "--owner", "ReplicaSet/nope"], "no ReplicaSet nope in"),
        (["--replicas", 1, "--owner", "StatefulSet/web"], "does not scale down by ranking pods"),
        (["--replicas", 1, "--owner", "web"], "expected KIND/NAME"),
        (
            ["--replicas", 1],
            "pods of 2 owners (ReplicaSet/shop/web-6d4b7c9f8 (3 pods), ReplicaSet/shop/web-7f9c8d6b5",
        ),
        (["--replicas", 1, "--owner", "Deployment/web"], "would split the scale-down between them"),
        (["--replicas", 1, "--owner", "Deployment/api"], "no ReplicaSet of Deployment api"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(kubetide, argv, message):
    code, out, err = kubetide(EXAMPLE, *argv)
    assert code == 2 and out == ""
    assert err.startswith("kubetide: error: ") and message in err
    assert len(err.strip().splitlines()) == 1


def test_missing_file_is_one_line(kubetide):
    code, _, err = kubetide("/no/such/pods.yaml", "--replicas", 1)
    assert code == 2 and len(err.strip().splitlines()) == 1 and "no such file" in err


# -- now ------------------------------------------------------------------------------------------

NEWEST = "2026-11-22T11:57:00Z"  # the newest creation, start or condition time in the example
LATER = "2028-11-22T12:00:00Z"


def test_now_defaults_to_the_newest_timestamp_in_the_input_not_the_wall_clock(kubetide, monkeypatch):
    import time

    monkeypatch.setattr(time, "time", lambda: 1_900_000_000.0)  # 2030: the wall clock must not count
    code, default, _ = kubetide(EXAMPLE, "--owner", NEW, "--replicas", 6, "--json")
    assert code == 0
    assert json.loads(default) == json.loads(
        kubetide(EXAMPLE, "--owner", NEW, "--replicas", 6, "--now", NEWEST, "--json")[1]
    )
    code, human, _ = kubetide(EXAMPLE, "--owner", NEW, "--replicas", 6)
    assert code == 0 and f"at {NEWEST} (newest timestamp in the input)." in human
    code, human, _ = kubetide(EXAMPLE, "--owner", NEW, "--replicas", 6, "--now", LATER)
    assert f"at {LATER} (--now)." in human


def test_now_changes_an_age_dependent_decision(kubetide):
    """Two years on, every pod is in the same age bucket: readiness age no longer decides."""
    order = {}
    for now in (NEWEST, LATER):
        code, out, _ = kubetide(EXAMPLE, "--owner", NEW, "--replicas", 6, "--now", now, "--json")
        order[now] = json.loads(out)["delete"]
    assert order[NEWEST] != order[LATER]
    code, out, _ = kubetide(EXAMPLE, "--owner", NEW, "--replicas", 6, "--now", NEWEST)
    assert code == 0 and "ready 1h57m ago vs 8d23h ago (bucket 42 < 49)" in out


@pytest.mark.parametrize("columns", [60, 80, 100])
def test_the_table_fits_the_terminal_and_keeps_every_word(kubetide, monkeypatch, columns):
    monkeypatch.setenv("COLUMNS", "1000")
    _, wide, _ = kubetide(EXAMPLE, "--owner", NEW, "--replicas", 2, "--now", NOW)
    monkeypatch.setenv("COLUMNS", str(columns))
    _, narrow, _ = kubetide(EXAMPLE, "--owner", NEW, "--replicas", 2, "--now", NOW)
    table = narrow.split("\n\n", 1)[1]  # the sentences above are not laid out as a table
    assert all(len(line) <= columns for line in table.splitlines())
    expected = wide.split()
    if len(narrow.split()) == len(expected) - 4:  # the header's "why it goes first" is left out
        at = next(i for i in range(len(expected)) if expected[i : i + 4] == ["why", "it", "goes", "first"])
        del expected[at : at + 4]
    assert narrow.split() == expected


@pytest.mark.parametrize(
    "argv",
    [
        ("--owner", NEW, "--replicas", 4, "--now", NOW),
        ("--owner", NEW, "--replicas", 4, "--legacy"),  # --now: the newest time in the dump
        ("--owner", "ReplicaSet/shop/web-6d4b7c9f8", "--replicas", 0, "--now", NOW),  # every pod goes
        ("--owner", "rs/web-7f9c8d6b5", "--replicas", 9, "--now", NOW),
    ],
    ids=["ranked", "legacy-newest-time", "every-pod-goes", "one-deletion"],
)
@pytest.mark.parametrize("json_output", [False, True], ids=["table", "json"])
def test_a_json_dump_streamed_as_rows_answers_as_its_yaml_read_as_pods(
    kubetide, tmp_path, monkeypatch, argv, json_output
):
    """A JSON List's pods are rows written from the wire schema (model/pod_columns.py); the YAML
    example's are rows of the Pods the Reader builds: every answer is the same, byte for byte."""
    import yaml

    from kubetide.model import loader, stream

    monkeypatch.setattr(stream, "BATCH_CHARS", 1)  # an item a batch: each pod a run of its own
    rows_from_wires = []
    add_rows = loader._add_pod_rows
    monkeypatch.setattr(
        loader, "_add_pod_rows", lambda run, *rest: (rows_from_wires.append(len(run)), add_rows(run, *rest))
    )
    document = yaml.safe_load(Path(EXAMPLE).read_text())
    path = tmp_path / "dump.json"
    path.write_text(json.dumps(document, indent=4))
    flags = (*argv, "--json") if json_output else argv
    code, out, err = kubetide(path, *flags)
    assert code == 0 and err == ""
    pods = sum(item["kind"] == "Pod" for item in document["items"])
    assert sum(rows_from_wires) >= pods - 1  # the List's last item is read alone, after the batches
    assert (code, out, err) == kubetide(EXAMPLE, *flags)
