"""Every command's real `--json` output validates against its JSON Schema in docs/schemas/, the
schemas are valid draft 2020-12 schemas, and what they enumerate is what the code produces."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator, FormatChecker

from kubetide import API_VERSION
from kubetide.autoscaler.scaledown.reasons import NodeReason, PodReason
from kubetide.cli import main as cli_main
from kubetide.cli.json_output import rfc3339
from kubetide.model.quantity import CPU, MEMORY, format_quantity, parse_resource
from kubetide.model.reader import parse_time

ROOT = Path(__file__).resolve().parents[2]
SCHEMAS = ROOT / "docs" / "schemas"
EXAMPLES = ROOT / "examples"
SCENARIO = ROOT / "tests" / "sweep" / "small.yaml"
DOWNSCALE = [
    EXAMPLES / "downscale-pods.yaml",
    "--owner",
    "ReplicaSet/web-7f9c8d6b5",
    "--now",
    "2026-11-22T12:00:00Z",
]
QOS = [EXAMPLES / "qos" / "node-state.yaml", "--nodeqos", EXAMPLES / "qos" / "nodeqos.yaml"]

# (schema, kind, argv): several runs per command, so that optional and null branches show up.
RUNS = [
    (
        "plan",
        "PlanResult",
        ["plan", EXAMPLES / "plan-cluster.yaml", "--node-groups", EXAMPLES / "plan-node-groups.yaml"],
    ),
    ("plan", "PlanResult", ["plan", EXAMPLES / "plan-cluster.yaml", "--no-expire-timers"]),
    ("plan", "PlanResult", ["plan", EXAMPLES / "cluster.yaml"]),
    ("schedule", "ScheduleResult", ["schedule", EXAMPLES / "plan-cluster.yaml"]),
    ("schedule", "ScheduleResult", ["schedule", EXAMPLES / "cluster.yaml"]),
    ("downscale", "DownscaleResult", ["downscale", *DOWNSCALE, "--replicas", "4"]),
    ("downscale", "DownscaleResult", ["downscale", *DOWNSCALE, "--replicas", "2", "--legacy"]),
    ("downscale", "DownscaleResult", ["downscale", *DOWNSCALE, "--replicas", "0"]),
    ("qos", "QOSResult", ["qos", *QOS]),
    ("qos", "QOSResult", ["qos", *QOS, "--nodeqos", EXAMPLES / "qos" / "podqos.yaml", "--no-precise"]),
]
COMMANDS = ("plan", "schedule", "downscale", "qos", "simulate", "sweep")
SCHEMA_NAMES = (*COMMANDS, "compare")  # compare: simulate --compare --json, compare.json


def schema(name: str) -> dict:
    return json.loads((SCHEMAS / f"{name}.schema.json").read_text())


def validate(name: str, document: dict) -> None:
    validator = Draft202012Validator(schema(name), format_checker=FormatChecker())
    errors = [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(document)]
    assert not errors, "\n".join(errors[:10])


def run_json(capsys, argv) -> dict:
    code = cli_main.main([*map(str, argv), "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out)


@pytest.mark.parametrize("name", SCHEMA_NAMES)
def test_every_schema_is_a_valid_draft_2020_12_schema_of_a_kubetide_document(name):
    document = schema(name)
    Draft202012Validator.check_schema(document)
    assert document["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert document["properties"]["apiVersion"] == {"const": API_VERSION}
    assert {"apiVersion", "kind"} <= set(document["required"])


def test_the_docs_page_describes_every_schema():
    page = (ROOT / "docs" / "json-output.md").read_text()
    assert {p.name.removesuffix(".schema.json") for p in SCHEMAS.glob("*.schema.json")} == set(SCHEMA_NAMES)
    for name in SCHEMA_NAMES:
        kind = schema(name)["properties"]["kind"]["const"]
        assert f"schemas/{name}.schema.json" in page and f"`{kind}`" in page


@pytest.mark.parametrize(
    ("name", "kind", "argv"), RUNS, ids=lambda v: " ".join(map(str, v[:2])) if isinstance(v, list) else None
)
def test_real_output_validates_against_its_schema(capsys, name, kind, argv):
    document = run_json(capsys, argv)
    assert (document["apiVersion"], document["kind"]) == (API_VERSION, kind)
    validate(name, document)


def test_simulate_output_and_summary_json_validate(capsys, tmp_path):
    document = run_json(capsys, ["simulate", SCENARIO, "--duration", "10m", "--no-report", "--out", tmp_path])
    assert (document["apiVersion"], document["kind"]) == (API_VERSION, "SimulationSummary")
    assert json.loads((tmp_path / "summary.json").read_text()) == document
    validate("simulate", document)


def test_summary_json_lists_the_nodes_unremovable_at_the_end_and_validates(capsys, tmp_path):
    """scale_down.unremovable_at_end, with blocking pods and what would unblock each node."""
    scenario = EXAMPLES / "nightly-scale-down.yaml"
    document = run_json(capsys, ["simulate", scenario, "--duration", "40m", "--no-report", "--out", tmp_path])
    found = document["scale_down"]["unremovable_at_end"]
    assert found["count"] == sum(found["by_reason"].values()) >= len(found["nodes"]) > 0
    assert all(node["unblock"] is not None for node in found["nodes"])
    validate("simulate", document)


def test_sweep_output_and_sweep_json_validate(capsys, tmp_path):
    argv = [
        "sweep",
        SCENARIO,
        "--grid",
        "scale-down-unneeded-time=2m,5m",
        "--seed-list",
        "1",
        "--workers",
        "1",
    ]
    document = run_json(capsys, [*argv, "--duration", "10m", "--out", tmp_path])
    assert (document["apiVersion"], document["kind"]) == (API_VERSION, "SweepResult")
    assert json.loads((tmp_path / "sweep.json").read_text()) == document
    validate("sweep", document)
    for summary in tmp_path.glob("runs/*/seed-*/summary.json"):  # each run's summary is one too
        validate("simulate", json.loads(summary.read_text()))


@pytest.mark.parametrize(
    "argv",
    [
        [SCENARIO, "--compare", "quick:scale-down-unneeded-time=1m,scan-interval=20s", "--compare", "own:"],
        [EXAMPLES / "qos-watermark.yaml"],  # spec.qos.compare: qos_precise and the agent's counts
        [SCENARIO, "--compare", "ca:policy=cluster-autoscaler", "--compare", "karpenter:policy=karpenter"],
    ],
    ids=["flags", "qos", "policies"],
)
def test_compare_output_and_compare_json_validate(capsys, tmp_path, argv):
    document = run_json(capsys, ["simulate", *argv, "--duration", "15m", "--no-report", "--out", tmp_path])
    assert (document["apiVersion"], document["kind"]) == (API_VERSION, "Comparison")
    assert json.loads((tmp_path / "compare.json").read_text()) == document
    validate("compare", document)
    for entry in document["settings"]:  # each setting's run is a SimulationSummary
        validate("simulate", json.loads((tmp_path / entry["dir"] / "summary.json").read_text()))
    assert all("qos" in entry for entry in document["settings"]) == ("qos-watermark" in str(argv[0]))
    # the policy block comes with a comparison of policies only
    assert [entry.get("policy", {}).get("autoscaler") for entry in document["settings"]] == (
        ["cluster-autoscaler", "karpenter"] if "ca:policy=cluster-autoscaler" in argv else [None, None]
    )


def test_a_document_off_its_schema_is_caught():
    """The schemas do constrain: a plan with a raw number for a node's reason, a qos gap without
    units or a document of another kind fails."""
    validator = Draft202012Validator(schema("qos"))
    good = {
        "apiVersion": API_VERSION,
        "kind": "QOSResult",
        "gaps": {"Evict": {"cpu_total_usage": "990m"}},
        "actions": [],
    }
    assert validator.is_valid(good)
    assert not validator.is_valid({**good, "gaps": {"Evict": {"cpu_total_usage": 990}}})
    assert not validator.is_valid({**good, "kind": "PlanResult"})
    assert not validator.is_valid({**good, "apiVersion": "v1"})


def test_the_sweep_schema_names_the_metrics_a_pareto_front_can_be_over():
    from kubetide.sweep.front import TRADE_OFFS

    metrics = schema("sweep")["properties"]["pareto_front_metrics"]
    assert metrics["items"]["enum"] == list(TRADE_OFFS)


def test_the_plan_schema_names_every_reason_the_autoscaler_gives():
    node = schema("plan")["properties"]["scale_down"]["properties"]["nodes"]["additionalProperties"]
    reasons = node["properties"]["reason"]["anyOf"][0]["enum"]
    blocking = schema("plan")["$defs"]["blockingPod"]["properties"]["reason"]["enum"]
    assert node["properties"]["blocking_pod"]["anyOf"][0] == {"$ref": "#/$defs/blockingPod"}
    assert node["properties"]["blocking_pods"]["items"] == {"$ref": "#/$defs/blockingPod"}
    assert set(reasons) == {str(r) for r in NodeReason}
    assert set(blocking) == {str(r) for r in PodReason}


def test_plan_json_carries_the_why_of_every_node_and_of_the_scale_up(capsys):
    document = run_json(capsys, RUNS[0][2])
    nodes = document["scale_down"]["nodes"]
    assert nodes["general-b3"]["why"].startswith("the pod uses local storage")
    assert (
        nodes["general-c2"]["why"] == 'annotated cluster-autoscaler.kubernetes.io/scale-down-disabled: "true"'
    )
    assert all(entry["why"] for entry in nodes.values())
    assert document["scale_up"]["why"][0].startswith("4 pods need a new node; growing highmem by 2 nodes")


def test_downscale_json_carries_each_pods_rank_keys(capsys):
    document = run_json(capsys, ["downscale", *DOWNSCALE, "--replicas", "4"])
    pods = {p["pod"]: p for p in document["pods"]}
    unscheduled = pods["shop/web-7f9c8d6b5-q8x2m"]
    assert (unscheduled["decision"], unscheduled["why"]) == ("delete", "unscheduled")
    assert unscheduled["rank_keys"]["assigned"] is False and unscheduled["node"] is None
    # The sort keys are the order: sorted by them, the pods come out as deleted and kept.
    by_key = sorted(document["pods"], key=lambda p: p["rank_keys"]["sort_key"])
    assert [p["pod"] for p in by_key] == document["delete"] + document["keep"]
    kept = [p for p in document["pods"] if p["decision"] == "keep"]
    assert kept and all(p["why"] is None and p["rank_keys"]["ready"] for p in kept)
    for pod in document["pods"]:
        keys = pod["rank_keys"]
        if keys["ready_time"] is not None:  # the bucket is the ready age's log2 in nanoseconds
            age_ns = round((parse_time(document["now"]) - parse_time(keys["ready_time"])) * 1e9)
            assert keys["ready_age_bucket"] == age_ns.bit_length() - 1


@pytest.mark.parametrize(
    ("resource", "units", "text"),
    [
        (CPU, 500, "500m"),
        (CPU, 2000, "2"),
        (CPU, 1, "1m"),
        (MEMORY, 2**30, "1Gi"),
        (MEMORY, 1536 * 2**20, "1536Mi"),
        (MEMORY, 1000, "1000"),
        (MEMORY, 0, "0"),
        ("nvidia.com/gpu", 2, "2"),
        ("pods", 1024, "1024"),  # a count, never "1Ki"
        ("ephemeral-storage", 20 * 2**30, "20Gi"),
        ("hugepages-2Mi", 4 * 2**20, "4Mi"),
    ],
)
def test_quantities_carry_their_unit_and_parse_back_exactly(resource, units, text):
    """One exact formatter (model.quantity.format_quantity) for --json, from-cluster and kwok."""
    assert format_quantity(resource, units) == text
    assert parse_resource(resource, text) == units


def test_times_are_rfc3339_in_utc():
    assert rfc3339(parse_time("2026-11-22T12:00:00Z")) == "2026-11-22T12:00:00Z"
    assert rfc3339(parse_time("2026-11-22T12:00:00.25Z")) == "2026-11-22T12:00:00.250000Z"
    assert rfc3339(None) is None
