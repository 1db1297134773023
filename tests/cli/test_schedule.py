"""`kubetide schedule`: the bundled example, the --json shape, warnings, and one-line errors."""

import json
import textwrap
from pathlib import Path

import pytest

import kubetide.cli.main as cli_main

EXAMPLE = str(Path(__file__).resolve().parents[2] / "examples" / "cluster.yaml")


@pytest.fixture
def kubetide(monkeypatch, capsys):
    # Only this subcommand: the test must not depend on the others being importable.
    monkeypatch.setattr(cli_main, "COMMANDS", ("schedule",))

    def run(*argv):
        code = cli_main.main(["schedule", *map(str, argv)])
        out, err = capsys.readouterr()
        return code, out, err

    return run


def test_example_json(kubetide):
    code, out, err = kubetide(EXAMPLE, "--json")
    assert code == 0 and err == ""
    result = json.loads(out)
    assert set(result) == {"apiVersion", "kind", "placements", "unschedulable"}
    placements, unschedulable = result["placements"], result["unschedulable"]
    assert len(placements) == 19
    assert set(unschedulable) == {pod for pod, node in placements.items() if node is None}
    assert all(reason.startswith("0/12 nodes are available: ") for reason in unschedulable.values())
    # The GPU workload lands on the tainted GPU nodes, and only there.
    trainers = [node for pod, node in placements.items() if pod.startswith("ml/trainer-")]
    assert sorted(trainers) == ["prod-gpu-a1", "prod-gpu-b1"]
    assert "9 node(s) didn't match Pod's node affinity/selector" in unschedulable["monitoring/prometheus-0"]
    assert (
        "9 node(s) didn't have free ports for the requested pod ports" in unschedulable["shop/legacy-gateway"]
    )
    assert "2 Insufficient nvidia.com/gpu" in unschedulable["ml/finetune-llm-8gpu"]
    web = [reason for pod, reason in unschedulable.items() if pod.startswith("shop/web-")]
    assert web and all("didn't match pod topology spread constraints" in r for r in web)
    # Higher priority first: the queue order is the output order.
    assert next(iter(placements)) == "monitoring/prometheus-0"


def test_example_table(kubetide):
    code, out, err = kubetide(EXAMPLE)
    assert code == 0 and err == ""
    lines = out.splitlines()
    assert lines[0].split() == ["pod", "┃", "priority", "┃", "node", "┃", "reason"]
    row = next(line for line in lines if "shop/legacy-gateway" in line)
    assert "│ -" in row and "didn't have free ports" in row
    assert lines[-1] == (
        "12 nodes at 2026-11-22T09:29:02Z (newest timestamp in the input): "
        "placed 11 of 19 pending pods, 8 cannot be scheduled."
    )


def write(tmp_path, text, name="cluster.yaml"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


NODE = """\
    - kind: Node
      apiVersion: v1
      metadata: {name: n1}
      status: {allocatable: {cpu: "2", memory: 4Gi, pods: "110"}}
"""


def test_bad_file_is_one_line_exit_2(kubetide, tmp_path):
    path = write(
        tmp_path,
        """\
        kind: List
        items:
        - kind: Pod
          apiVersion: v1
          metadata: {name: web-1, namespace: default}
          spec:
            containers:
            - name: c
              resources: {requests: {cpu: abc}}
        """,
    )
    code, out, err = kubetide(path)
    assert code == 2 and out == ""
    assert err == (
        f"kubetide: error: {path}: items[0] (Pod default/web-1): "
        'spec.containers[0].resources.requests.cpu: invalid quantity "abc"\n'
    )


def test_missing_file_is_one_line_exit_2(kubetide, tmp_path):
    code, _, err = kubetide(tmp_path / "nope.yaml")
    assert code == 2
    assert len(err.splitlines()) == 1 and "nope.yaml" in err and "Traceback" not in err


def test_pods_on_unknown_nodes_are_ignored_with_a_warning(kubetide, tmp_path):
    path = write(
        tmp_path,
        "kind: List\nitems:\n"
        + textwrap.dedent(NODE)
        + textwrap.dedent(
            """\
            - kind: Pod
              apiVersion: v1
              metadata: {name: ghost, namespace: default}
              spec: {nodeName: gone, containers: [{name: c, resources: {requests: {cpu: "2"}}}]}
            - kind: Pod
              apiVersion: v1
              metadata: {name: pending, namespace: default}
              spec: {containers: [{name: c, resources: {requests: {cpu: "2"}}}]}
            - kind: Pod
              apiVersion: v1
              metadata: {name: done, namespace: default}
              spec: {containers: [{name: c, resources: {requests: {cpu: "2"}}}]}
              status: {phase: Succeeded}
            """
        ),
    )
    code, out, err = kubetide(path, "--json")
    assert code == 0
    assert err == f"kubetide: warning: {path}: 1 bound pod on node gone, which is not in the dump: ignored\n"
    result = json.loads(out)
    assert (result["placements"], result["unschedulable"]) == ({"default/pending": "n1"}, {})


def test_no_pending_pods(kubetide, tmp_path):
    path = write(tmp_path, "kind: List\nitems:\n" + textwrap.dedent(NODE))
    code, out, _ = kubetide(path, "--now", "2026-01-01T00:00:00Z")
    assert code == 0
    assert out.strip() == "No pending pods (0 bound on 1 nodes) at 2026-01-01T00:00:00Z (--now)."
