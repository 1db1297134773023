"""The fuzz campaign's signatures (issue 13), rebuilt from the bundled examples and run the
fuzzer's way (a forked child with time and memory limits): every one now ends in exit 2 and one
line naming the file, where it used to end in a traceback, a signal, a hang or a silent exit 0."""

import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest
from benchmarks import fuzz

ROOT = Path(__file__).resolve().parents[2]
DEMO = (ROOT / "src/kubetide/data/scenarios/demo.yaml").read_text()
CLUSTER = (ROOT / "examples/plan-cluster.yaml").read_text()
GROUPS = (ROOT / "examples/plan-node-groups.yaml").read_text()
PODS = (ROOT / "examples/downscale-pods.yaml").read_text()
NODE = (ROOT / "examples/qos/node-state.yaml").read_text()
NODEQOS = (ROOT / "examples/qos/nodeqos.yaml").read_text()
SIMULATE = ["simulate", "s.yaml", "--duration", "3m", "--no-report", "--json", "--out", "out"]
PLAN = ["plan", "cluster.yaml", "--node-groups", "groups.yaml", "--json"]
FROM_CLUSTER = ["scenario", "from-cluster", "cluster.yaml", "--out", "scenario.yaml"]


def demo(old: str, new: str) -> dict[str, str]:
    assert old in DEMO
    return {"s.yaml": DEMO.replace(old, new, 1)}


def cluster(old: str, new: str) -> dict[str, str]:
    assert old in CLUSTER
    return {"cluster.yaml": CLUSTER.replace(old, new, 1), "groups.yaml": GROUPS}


def deep_flow(depth: int) -> str:
    return "x: " + "[" * depth + "]" * depth


def deep_in_pod(line: str, depth: int = 350) -> dict[str, str]:
    """The bundled dump with a field nested `depth` deep after `line` of its first pod that has it."""
    indent = line[: len(line) - len(line.lstrip())]
    return cluster(f"\n{line}", f"\n{line}{indent}nested: {'[' * depth}{']' * depth}\n")


FIRST_NODE = CLUSTER[CLUSTER.index("- apiVersion: v1\n  kind: Node") :].split("\n- apiVersion")[0] + "\n"
TRACE = "traces/frontend-morning.csv"
# Issue 36: inputs that ran for minutes and took gigabytes, now over the simulator's limits.
MANY_GROUPS = "".join(
    f"    - {{name: g{i}, maxSize: 1, price: 0.1, template: {{status: {{allocatable: {{cpu: '1'}}}}}}}}\n"
    for i in range(10_000)
)

REPRODUCERS = {
    # tracebacks
    "quantity 1e100 on a node": (PLAN, cluster("cpu: 1930m", 'cpu: "1e100"'), "cluster.yaml"),
    "quantity 20 nines on a pod": (
        ["downscale", "pods.yaml", "--replicas", "1", "--json"],
        {"pods.yaml": PODS.replace("cpu: 250m", "cpu: 99999999999999999999", 1)},
        "pods.yaml",
    ),
    "quantity 9999999999Ei": (SIMULATE, demo("memory: 15Gi", "memory: 9999999999Ei"), "s.yaml"),
    "duplicate node names": (PLAN, cluster("items:\n", "items:\n" + FIRST_NODE), "cluster.yaml"),
    "the same dump twice": (
        ["schedule", "cluster.yaml", "cluster.yaml", "--json"],
        {"cluster.yaml": CLUSTER},
        "cluster.yaml",
    ),
    "JSON nested 1,000 deep": (
        PLAN,
        {"cluster.yaml": "[" * 1000 + "]" * 1000, "groups.yaml": GROUPS},
        "cluster.yaml",
    ),
    "simulate --out a file": ([*SIMULATE[:-1], "s.yaml"], {"s.yaml": DEMO}, "--out"),
    "simulate --out /dev/null/x": ([*SIMULATE[:-1], "/dev/null/x"], {"s.yaml": DEMO}, "--out"),
    "simulate --out /proc": ([*SIMULATE[:-1], "/proc/self/x"], {"s.yaml": DEMO}, "--out"),
    "from-cluster: an annotation nested 350 deep": (
        FROM_CLUSTER,
        cluster(
            "    generateName: kube-proxy-\n",
            f"    generateName: kube-proxy-\n    annotations: {{a: {'[' * 350}{']' * 350}}}\n",
        ),
        "cluster.yaml",
    ),
    # crashes (SIGSEGV in libyaml's composer)
    "YAML flow sequences 100,000 deep": (SIMULATE, {"s.yaml": deep_flow(100_000)}, "s.yaml"),
    "YAML flow sequences 100,000 deep in a dump": (
        ["qos", "node.yaml", "--nodeqos", "nodeqos.yaml", "--json"],
        {"node.yaml": NODE, "nodeqos.yaml": deep_flow(100_000)},
        "nodeqos.yaml",
    ),
    # hangs
    "scan-interval 0": (SIMULATE, demo("scan-interval: 10s", "scan-interval: 0"), "scan-interval"),
    "scan-interval 1ns": (SIMULATE, demo("scan-interval: 10s", "scan-interval: 1ns"), "scan-interval"),
    "scan-interval 1us": (SIMULATE, demo("scan-interval: 10s", "scan-interval: 1us"), "scan-interval"),
    "replicas 10^9": (SIMULATE, demo("replicas: 30", "replicas: 1000000000"), "replicas"),
    "maxSize 10^18": (SIMULATE, demo("maxSize: 40", "maxSize: 1000000000000000000"), "maxSize"),
    "a scale event to 100,000 replicas": (
        SIMULATE,
        demo("replicas: 90", "replicas: 100000"),
        "spec.events[0].scale.replicas: 100,000 pods, more than the simulator's replicas limit of 50,000 "
        "(lift it with --limit replicas=N)",
    ),
    "10,000 node groups": (
        SIMULATE,
        demo("  nodeGroups:\n", "  nodeGroups:\n" + MANY_GROUPS),
        "spec.nodeGroups: 10,002 node groups, more than the simulator's node-groups limit of 1,000 "
        "(lift it with --limit node-groups=N)",
    ),
    "--duration 100000h": (["simulate", "s.yaml", "--duration", "100000h"], {"s.yaml": DEMO}, "--duration"),
    "an alias bomb of nested lists": (
        ["schedule", "cluster.yaml"],
        {
            "cluster.yaml": "kind: List\nitems: [*a6]\nx:\n"
            + "  a0: &a0 {kind: Pod, metadata: {name: p}, spec: {containers: [{name: c}]}}\n"
            + "".join(
                f"  a{i}: &a{i} {{kind: List, items: [{', '.join([f'*a{i - 1}'] * 10)}]}}\n"
                for i in range(1, 7)
            )
        },
        "aliases expand",
    ),
    # silent accepts
    "an empty dump": (PLAN, {"cluster.yaml": "", "groups.yaml": GROUPS}, "cluster.yaml"),
    "a blank dump": (PLAN, {"cluster.yaml": "  \n", "groups.yaml": GROUPS}, "cluster.yaml"),
    "two pods with one name": (
        ["downscale", "pods.yaml", "--replicas", "1", "--json"],
        {"pods.yaml": PODS + "---\n" + PODS.split("---\n")[-1]},
        "duplicate",
    ),
    "maxSize: true": (SIMULATE, demo("maxSize: 40", "maxSize: true"), "maxSize"),
    "an empty metadata.name": (
        SIMULATE,
        demo("metadata: {name: web, namespace: shop}", 'metadata: {name: ""}'),
        "name",
    ),
    "negative Job completions": (SIMULATE, demo("completions: 40", "completions: -1"), "completions"),
    "price: .inf": (SIMULATE, demo("price: 0.19", "price: .inf"), "price"),
    "--duration ''": (["simulate", "s.yaml", "--duration", ""], {"s.yaml": DEMO}, "--duration"),
}


# Inputs that used to end in a traceback and now succeed: from-cluster wrote every field it did
# not know, and the YAML writer recursed once per level (RecursionError at 350, below the 500
# levels model/bounds.py lets in). It now writes only what the simulator reads.
HANDLED = {
    "from-cluster: a pod spec field nested 350 deep": (
        FROM_CLUSTER,
        deep_in_pod("    restartPolicy: Always\n"),
    ),
    "from-cluster: a container field nested 490 deep": (
        FROM_CLUSTER,
        deep_in_pod("      terminationMessagePolicy: File\n", depth=490),
    ),
    "from-cluster --keep-env: a status field nested 350 deep": (
        [*FROM_CLUSTER, "--keep-env"],
        deep_in_pod("    phase: Running\n"),
    ),
}


@pytest.fixture(scope="module")
def outcomes():
    cases = [
        fuzz.Case(
            seed=name, argv=list(argv), files={k: v.encode() for k, v in files.items()}, mutations=[name]
        )
        for name, (argv, files, _) in REPRODUCERS.items()
    ]
    results = {}
    fuzz.run_cases(
        cases, jobs=2, timeout=60.0, on_result=lambda case, result: results.update({case.seed: result})
    )
    return {case.seed: (fuzz.outcome(case, results[case.seed]), results[case.seed].stderr) for case in cases}


@pytest.mark.parametrize("name", list(REPRODUCERS))
def test_a_campaign_reproducer_ends_in_one_clear_line(outcomes, name):
    (kind, why), stderr = outcomes[name]
    assert kind == "error", f"{kind}: {why}"
    assert REPRODUCERS[name][2] in stderr, stderr


def test_a_trace_file_that_is_a_directory_or_not_utf8_is_named():
    scenario = (ROOT / "examples/morning-burst.yaml").read_text()
    cases = [
        fuzz.Case("trace dir", SIMULATE, {"s.yaml": scenario.encode()}, ["dir"], directories=[TRACE]),
        fuzz.Case(
            "trace bytes",
            SIMULATE,
            {"s.yaml": scenario.encode(), TRACE: b"time,replicas\n0,\xff\n"},
            ["bytes"],
        ),
    ]
    seen = []
    fuzz.run_cases(cases, jobs=2, timeout=60.0, on_result=lambda case, result: seen.append((case, result)))
    for case, result in seen:
        assert fuzz.outcome(case, result) == ("error", ""), result.stderr
        assert "frontend-morning.csv" in result.stderr


def test_what_used_to_end_in_a_traceback_now_succeeds():
    cases = [
        fuzz.Case(
            seed=name, argv=list(argv), files={k: v.encode() for k, v in files.items()}, mutations=[name]
        )
        for name, (argv, files) in HANDLED.items()
    ]
    seen = []
    fuzz.run_cases(cases, jobs=2, timeout=60.0, on_result=lambda case, result: seen.append((case, result)))
    assert len(seen) == len(cases)
    for case, result in seen:
        assert fuzz.outcome(case, result) == ("ok", ""), f"{case.seed}: {result.stderr[-500:]}"


# -- issue 36: the newer input kinds -----------------------------------------------------------

NEW_KINDS = (ROOT / "benchmarks/fuzz_seeds/new-kinds.yaml").read_text()
USAGE = (ROOT / "benchmarks/fuzz_seeds/traces/usage.csv").read_text()
SWEEP = ["sweep", "s.yaml", "--engine", "dask", "--seeds", "1", "--duration", "1m", "--json", "--out", "out"]


def new_kinds(*replacements: tuple[str, str], usage: str = USAGE) -> dict[str, str]:
    text = NEW_KINDS
    for old, new in replacements:
        assert old in text
        text = text.replace(old, new, 1)
    return {"s.yaml": text, "traces/usage.csv": usage}


HPA_METRICS = (
    "          - type: Resource\n"
    "            resource: {name: cpu, target: {type: Utilization, averageUtilization: 60}}\n"
)
JOB_RESTART = "                restartPolicy: OnFailure"

# (argv, files, what the one error line names)
NEW_KIND_REPRODUCERS = {
    # tracebacks
    "a usage-trace field over 131,072 characters": (
        SIMULATE,
        new_kinds(usage="time,workload,cpu\n0,shop/web," + "9" * 140_000 + "\n"),
        "usage.csv: line 2",
    ),
    "a creationTimestamp in year 9999": (
        SIMULATE,
        new_kinds(('creationTimestamp: "2026-11-01T00:00:00Z"', 'creationTimestamp: "9999-12-31T23:59:59Z"')),
        "spec.objects",
    ),
    "a tls:// Dask address without TLS configuration": (
        [*SWEEP, "--scheduler-address", "tls://127.0.0.1:8786"],
        new_kinds(),
        "--scheduler-address tls://127.0.0.1:8786: no TLS configuration",
    ),
    "a Dask address distributed cannot parse": (
        [*SWEEP, "--scheduler-address", "tcp://:", "--insecure"],
        new_kinds(),
        "--scheduler-address tcp://:",
    ),
    "a ucx:// Dask address (no UCX-Py)": (
        [*SWEEP, "--scheduler-address", "ucx://127.0.0.1:1", "--insecure"],
        new_kinds(),
        "--scheduler-address ucx://127.0.0.1:1: unsupported scheme 'ucx'",
    ),
    # silent accepts: what the API server refuses
    "HPA minReplicas 0": (SIMULATE, new_kinds(("minReplicas: 2", "minReplicas: 0")), "spec.minReplicas"),
    "HPA maxReplicas 2^31": (
        SIMULATE,
        new_kinds(("maxReplicas: 12", "maxReplicas: 2147483648")),
        "spec.maxReplicas",
    ),
    "HPA metric type Bogus": (
        SIMULATE,
        new_kinds(("- type: Resource", "- type: Bogus")),
        "spec.metrics[0].type",
    ),
    "HPA empty scaleTargetRef name": (
        SIMULATE,
        new_kinds(("kind: Deployment, name: web}", 'kind: Deployment, name: ""}')),
        "spec.scaleTargetRef.name",
    ),
    "CronJob restartPolicy Always": (
        SIMULATE,
        new_kinds((JOB_RESTART, "                restartPolicy: Always")),
        "spec.jobTemplate.spec.template.spec.restartPolicy",
    ),
    "CronJob name of 53 characters": (
        SIMULATE,
        new_kinds(("name: report, namespace: shop", f"name: {'r' * 53}, namespace: shop")),
        "metadata.name: must be no more than 52 characters",
    ),
    "Deployment revisionHistoryLimit -1": (
        SIMULATE,
        new_kinds(("revisionHistoryLimit: 3", "revisionHistoryLimit: -1")),
        "spec.revisionHistoryLimit",
    ),
    "Deployment maxSurge 2^31": (
        SIMULATE,
        new_kinds(("maxSurge: 1,", "maxSurge: 2147483648,")),
        "spec.strategy.rollingUpdate.maxSurge",
    ),
}

# (files, what stderr's warning line says): the API server takes these, and they simulate
NEW_KIND_WARNINGS = {
    "a CronJob that never fires": (
        new_kinds(('schedule: "*/2 * * * *"', 'schedule: "0 0 31 2 *"')),
        'CronJob shop/report: spec.schedule "0 0 31 2 *" names a date that never comes',
    ),
    "an HPA with only a Pods metric": (
        new_kinds((HPA_METRICS, "")),
        "HorizontalPodAutoscaler shop/web: the simulator has no source for Pods metrics: "
        "it never scales Deployment shop/web",
    ),
    "usage-trace rows naming no workload": (
        new_kinds(usage=USAGE + "0,shop/gone,1\n1m,shop/gone,2\n0,other/nope,1\n"),
        "3 rows of traces/usage.csv name 2 workloads not in spec.objects or spec.events (shop/gone, other/nope)",
    ),
    "a creationTimestamp in year 1": (  # summary.json's start was written "1-01-01T00:00:00Z"
        new_kinds(('creationTimestamp: "2026-11-01T00:00:00Z"', 'creationTimestamp: "0001-01-01T00:00:00Z"')),
        "",
    ),
    "a lastScheduleTime in year 9999": (
        new_kinds(('lastScheduleTime: "2026-11-01T00:00:00Z"', 'lastScheduleTime: "9999-12-31T23:59:59Z"')),
        "",
    ),
}


def run_the_fuzzers_way(cases: dict[str, tuple[list[str], dict[str, str]]]) -> dict:
    built = [
        fuzz.Case(
            seed=name, argv=list(argv), files={k: v.encode() for k, v in files.items()}, mutations=[name]
        )
        for name, (argv, files) in cases.items()
    ]
    results = {}
    fuzz.run_cases(
        built, jobs=2, timeout=60.0, on_result=lambda case, result: results.update({case.seed: result})
    )
    return {case.seed: (fuzz.outcome(case, results[case.seed]), results[case.seed].stderr) for case in built}


@pytest.fixture(scope="module")
def new_kind_outcomes():
    cases = {name: (argv, files) for name, (argv, files, _) in NEW_KIND_REPRODUCERS.items()}
    cases.update({name: (SIMULATE, files) for name, (files, _) in NEW_KIND_WARNINGS.items()})
    return run_the_fuzzers_way(cases)


@pytest.mark.parametrize("name", list(NEW_KIND_REPRODUCERS))
def test_a_new_kind_reproducer_ends_in_one_clear_line(new_kind_outcomes, name):
    (kind, why), stderr = new_kind_outcomes[name]
    assert kind == "error", f"{kind}: {why}"
    assert NEW_KIND_REPRODUCERS[name][2] in stderr, stderr


@pytest.mark.parametrize("name", list(NEW_KIND_WARNINGS))
def test_what_the_api_server_takes_simulates_with_its_warning(new_kind_outcomes, name):
    (kind, why), stderr = new_kind_outcomes[name]
    assert kind == "ok", f"{kind}: {why}: {stderr}"
    expected = NEW_KIND_WARNINGS[name][1]
    warnings = [line for line in stderr.splitlines() if expected and expected in line]
    assert len(warnings) == (1 if expected else 0), stderr
    assert all(line.startswith("kubetide: warning: s.yaml: ") for line in warnings)


def test_a_huge_file_of_nul_bytes_is_one_line_under_a_4_gib_memory_limit(tmp_path):
    """1.9 GB of NULs (a sparse file: no disk) used to be read whole and decoded: a MemoryError
    under a 4 GiB address-space limit. It is refused at its first chunk, for every command that
    reads a file, before the limit comes near."""
    nul = tmp_path / "nul.yaml"
    with nul.open("wb") as handle:
        handle.truncate(1900 * 10**6)
    groups = ROOT / "examples/plan-node-groups.yaml"
    limit = 4 * 2**30

    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    for argv in (
        ["simulate", str(nul), "--no-report", "--out", str(tmp_path / "out")],
        ["schedule", str(nul)],
        ["plan", str(nul), "--node-groups", str(groups)],
    ):
        done = subprocess.run(
            [sys.executable, "-m", "kubetide", *argv],
            capture_output=True,
            text=True,
            preexec_fn=limited,
            env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
            timeout=120,
        )
        assert done.returncode == 2, done.stderr
        assert done.stderr == f"kubetide: error: {nul}: not a text file (a NUL byte at byte 0)\n"
