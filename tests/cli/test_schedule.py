"""`kubetide schedule`: the bundled example, the --json shape, warnings, and one-line errors."""

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import kubetide.cli.main as cli_main
from kubetide.model import load_files
from kubetide.scheduling import PredicateChecker, schedule_pods
from kubetide.snapshot import snapshot_from_dump

ZONE = "topology.kubernetes.io/zone"
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


def test_each_pod_explained_as_if_alone(kubetide, tmp_path):
    """Pods of one shape whose labels differ (some read by a bound pod's anti-affinity) each get
    the reason a checker asked about that pod alone gives, however the answers are shared."""
    nodes = [
        {
            "kind": "Node",
            "metadata": {"name": f"n{i}", "labels": {"kubernetes.io/hostname": f"n{i}", ZONE: "ab"[i % 2]}},
            "status": {"allocatable": {"cpu": "2", "memory": "4Gi", "pods": "110"}},
        }
        for i in range(6)
    ]
    anti = {"topologyKey": ZONE, "labelSelector": {"matchLabels": {"app": "a"}}}
    guard = {
        "kind": "Pod",
        "metadata": {"name": "guard", "namespace": "default"},
        "spec": {
            "nodeName": "n0",
            "containers": [{"name": "c", "resources": {"requests": {"cpu": "500m"}}}],
            "affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [anti]}},
        },
    }
    pending = [
        {
            "kind": "Pod",
            "metadata": {
                "name": f"p{i}",
                "namespace": "default",
                "labels": {"app": "aaab"[i % 4], "id": str(i)},
            },
            "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1200m"}}}]},
        }
        for i in range(8)
    ]
    path = tmp_path / "cluster.json"
    path.write_text(json.dumps({"kind": "List", "items": [*nodes, guard, *pending]}))
    code, out, err = kubetide(path, "--json")
    assert code == 0 and err == ""
    unschedulable = json.loads(out)["unschedulable"]

    manifests = load_files([str(path)])
    snapshot, waiting, _ = snapshot_from_dump(manifests.nodes, manifests.pods, str(path))
    with PredicateChecker(snapshot) as checker:
        placements = schedule_pods(snapshot, waiting, checker)
    left = [p for p in waiting if placements[p.uid] is None]
    alone = {}
    for pod in left:
        with PredicateChecker(snapshot) as fresh:
            alone[pod.key] = fresh.explain(pod)
    assert unschedulable == alone
    # Zone a keeps one node with room that only the guard's anti-affinity keeps the app=a pods off.
    assert alone and all("5 Insufficient cpu" in r and "anti-affinity" in r for r in alone.values())


def test_schedule_imports_only_its_own_command():
    """Every other command's imports cost `kubetide schedule` about a second of its whole run."""
    code = (
        "import sys, kubetide.cli.main as m; m.build_parser(m.chosen_command(['schedule', 'x.json', '--json'])); "
        "print(' '.join(n for n in sys.modules if n.startswith('kubetide.cli.')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    others = {f"kubetide.cli.{name}" for name in cli_main.COMMANDS if name != "schedule"}
    assert "kubetide.cli.schedule" in out.split() and not others & set(out.split())


def test_an_over_committed_dump_is_said_in_one_warning_line_naming_the_first_nodes(kubetide, tmp_path):
    import yaml

    items = []
    for i in range(5):
        items.append(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": f"n{i}"},
                "status": {"allocatable": {"cpu": "1", "memory": "1Gi", "pods": "10"}},
            }
        )
        items.append(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": f"p{i}", "namespace": "default"},
                "spec": {
                    "nodeName": f"n{i}",
                    "containers": [
                        {"name": "c", "image": "i", "resources": {"requests": {"cpu": f"{1 + i}"}}}
                    ],
                },
                "status": {"phase": "Running"},
            }
        )
    dump = tmp_path / "dump.yaml"
    dump.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": items}))
    code, _, err = kubetide(dump)
    assert code == 0
    assert err.splitlines() == [
        f"kubetide: warning: {dump}: 4 nodes are over-committed, their pods requesting more than allocatable "
        "(taken as they are): n1 (cpu 2 requested of 1, 200%), n2 (cpu 3 requested of 1, 300%), "
        "n3 (cpu 4 requested of 1, 400%) and 1 more"
    ]
