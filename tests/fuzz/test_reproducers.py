"""The fuzz campaign's signatures (issue 13), rebuilt from the bundled examples and run the
fuzzer's way (a forked child with time and memory limits): every one now ends in exit 2 and one
line naming the file, where it used to end in a traceback, a signal, a hang or a silent exit 0."""

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


def demo(old: str, new: str) -> dict[str, str]:
    assert old in DEMO
    return {"s.yaml": DEMO.replace(old, new, 1)}


def cluster(old: str, new: str) -> dict[str, str]:
    assert old in CLUSTER
    return {"cluster.yaml": CLUSTER.replace(old, new, 1), "groups.yaml": GROUPS}


def deep_flow(depth: int) -> str:
    return "x: " + "[" * depth + "]" * depth


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
