"""`kubetide qos`: the readable report, the --json shape, and one-line errors with exit code 2."""

import json
import textwrap
from pathlib import Path

import pytest

import kubetide.cli.main as cli_main

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "qos"
STATE = str(EXAMPLES / "node-state.yaml")
NODEQOS = str(EXAMPLES / "nodeqos.yaml")
RESULT = {"apiVersion": "kubetide.io/v1alpha1", "kind": "QOSResult"}  # what every --json output starts with
BY_NODE_METRICS = {"node_usage_source": {"cpu": "NodeMetrics", "memory": "NodeMetrics"}}
BY_PODS = {"node_usage_source": {"cpu": "sum of its pods", "memory": "sum of its pods"}}  # the fallback


@pytest.fixture
def kubetide(monkeypatch, capsys):
    # Only this subcommand: the test must not depend on the others being importable yet.
    monkeypatch.setattr(cli_main, "COMMANDS", ("qos",))

    def run(*argv):
        code = cli_main.main(["qos", *map(str, argv)])
        out, err = capsys.readouterr()
        return code, out, err

    return run


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def test_example_evicts_just_enough(kubetide):
    code, out, err = kubetide(STATE, "--nodeqos", NODEQOS)
    assert code == 0 and err == ""
    text = " ".join(out.split())  # the console wraps long lines
    assert "Node worker-1: cpu 7300m of 8 (91.2%)" in text
    assert "usage from NodeMetrics" in text
    assert "general-pool/cpu-utilization-high: cpu_total_utilization 91.2% over 80.0% -> evict-batch" in text
    assert "Evict on cpu_total_utilization: 990m" in text
    assert (
        "1. evict batch/etl-a (priority 0, BestEffort): releases 700m of cpu_total_utilization, gap 990m -> 290m"
        in text
    )
    assert (
        "2. evict batch/etl-b (priority 0, BestEffort): releases 450m of cpu_total_utilization, gap 290m -> 0 (closed)"
        in text
    )
    assert "ThrottleDown on cpu_total_usage: nothing to do (closed by the evictions)" in text
    assert "kube-system/kube-proxy-x7k2p (priority 2000001000, Burstable): critical" in text
    assert "shop/api-0 (priority 1000, Guaranteed): not needed" in text
    assert "Preview: actions it would take, not carried out" in text


def test_example_json(kubetide):
    code, out, _ = kubetide(STATE, "--nodeqos", NODEQOS, "--json")
    assert code == 0
    assert json.loads(out) == {
        **RESULT,
        "gaps": {"Evict": {"cpu_total_utilization": "990m"}, "ThrottleDown": {"cpu_total_usage": "110m"}},
        "actions": [
            {"pod": "batch/etl-a", "action": "evict", "metric": "cpu_total_utilization", "released": "700m"},
            {"pod": "batch/etl-b", "action": "evict", "metric": "cpu_total_utilization", "released": "450m"},
        ],
        **BY_NODE_METRICS,
    }


def test_no_precise_evicts_every_candidate(kubetide):
    code, out, _ = kubetide(STATE, "--nodeqos", NODEQOS, "--json", "--no-precise")
    assert code == 0
    pods = [a["pod"] for a in json.loads(out)["actions"]]
    assert pods == [
        "batch/etl-a",
        "batch/etl-b",
        "batch/report-28461",
        "shop/cache-0",
        "shop/api-0",
        "shop/api-1",
    ]


def test_the_podqos_example_keeps_the_shop_out_of_reach(kubetide):
    podqos = str(EXAMPLES / "podqos.yaml")
    code, out, _ = kubetide(STATE, "--nodeqos", NODEQOS, "--nodeqos", podqos, "--json", "--no-precise")
    assert code == 0
    pods = [a["pod"] for a in json.loads(out)["actions"]]
    assert pods == ["batch/etl-a", "batch/etl-b", "batch/report-28461"]
    code, out, _ = kubetide(STATE, "--nodeqos", NODEQOS, "--nodeqos", podqos)
    text = " ".join(out.split())
    assert "shop/api-0 (priority 1000, Guaranteed): no PodQOS selects it" in text


NODE = """
kind: Node
metadata: {name: n1}
status: {capacity: {cpu: "4", memory: 8Gi}}
"""
QOS = """
---
kind: NodeQOS
apiVersion: ensurance.crane.io/v1alpha1
metadata: {name: q}
spec:
  rules:
  - {name: cpu, actionName: throttle, metricRule: {name: cpu_total_usage, value: 3000}}
---
kind: AvoidanceAction
metadata: {name: throttle}
spec: {throttle: {cpuThrottle: {minCPURatio: 10, stepCPURatio: 50}}}
"""


PODQOS = """
---
kind: PodQOS
apiVersion: ensurance.crane.io/v1alpha1
metadata: {name: batch}
spec:
  allowedActions: [throttle]
  scopeSelector: {matchExpressions: [{scopeName: Namespace, operator: In, values: [batch]}]}
"""


def pod(name, priority=0, annotations=None, limit=None):
    """A ReplicaSet's pod (a bare one is evicted only when a PodQOS selects it)."""
    resources = f"{{requests: {{cpu: 100m}}, limits: {{cpu: {limit}}}}}" if limit else "{}"
    owner = f"[{{kind: ReplicaSet, name: {name}-rs, controller: true}}]"
    return f"""
---
kind: Pod
metadata: {{name: {name}, namespace: ns, annotations: {annotations or {}}, ownerReferences: {owner}}}
spec: {{nodeName: n1, priority: {priority}, containers: [{{name: c, resources: {resources}}}]}}
status: {{phase: Running}}
"""


def metrics(name, cpu):
    return f"""
---
kind: PodMetrics
apiVersion: metrics.k8s.io/v1beta1
metadata: {{name: {name}, namespace: ns}}
containers: [{{name: c, usage: {{cpu: {cpu}, memory: 1Mi}}}}]
"""


def test_node_usage_is_the_sum_of_the_pods_without_node_metrics(kubetide, tmp_path):
    text = NODE + pod("a") + pod("b", priority=10) + metrics("a", "2000m") + metrics("b", "1400m") + QOS
    code, out, _ = kubetide(write(tmp_path, "s.yaml", text), "--json")
    assert code == 0
    assert json.loads(out) == {
        **RESULT,
        "gaps": {"ThrottleDown": {"cpu_total_usage": "440m"}},
        "actions": [{"pod": "ns/a", "action": "throttle", "metric": "cpu_total_usage", "released": "1"}],
        **BY_PODS,
    }


def test_a_pod_without_metrics_warns_and_the_agent_stays_precise(kubetide, tmp_path):
    text = NODE + pod("a") + pod("b", priority=10, limit="2") + metrics("a", "3500m") + QOS
    code, out, err = kubetide(write(tmp_path, "s.yaml", text), "--json")
    assert code == 0
    assert "kubetide: warning: " in err and "pod ns/b has no PodMetrics" in err
    actions = json.loads(out)["actions"]
    assert [(a["pod"], a["released"]) for a in actions] == [("ns/a", "1750m")]  # the gap closed: b stays


def test_podqos_limits_which_pods_are_touched(kubetide, tmp_path):
    text = NODE + pod("a") + metrics("a", "3500m") + QOS + PODQOS
    code, out, err = kubetide(write(tmp_path, "s.yaml", text))
    assert code == 0 and err == ""
    text = " ".join(out.split())
    assert "Actions, in execution order none" in text
    assert "ns/a (priority 0, BestEffort): no PodQOS selects it" in text


DISABLE_SCHEDULING = """
---
kind: NodeQOS
metadata: {name: busy}
spec:
  rules:
  - {name: cpu, actionName: disablescheduling, metricRule: {name: cpu_total_usage, value: 3000}}
---
kind: AvoidanceAction
metadata: {name: disablescheduling}
spec: {coolDownSeconds: 300}
"""


def test_disable_scheduling_taints_the_node(kubetide, tmp_path):
    text = NODE + pod("a") + metrics("a", "3500m") + DISABLE_SCHEDULING
    code, out, _ = kubetide(write(tmp_path, "s.yaml", text))
    assert code == 0
    assert (
        "Disable scheduling: taint the node ensurance.crane.io/analyzed-pressure:NoSchedule (busy/cpu)" in out
    )
    assert "Nothing to do" not in out
    code, out, _ = kubetide(write(tmp_path, "s.yaml", text), "--json")
    assert json.loads(out) == {
        **RESULT,
        "gaps": {},
        "actions": [],
        "scheduling": "DisableScheduling",
        **BY_PODS,
    }
    tainted = NODE.replace(
        "metadata: {name: n1}",
        "metadata: {name: n1}\nspec: {taints: [{key: ensurance.crane.io/analyzed-pressure, effect: NoSchedule}]}",
    )
    code, out, _ = kubetide(
        write(tmp_path, "s.yaml", tainted + pod("a") + metrics("a", "100m") + DISABLE_SCHEDULING), "--json"
    )
    assert json.loads(out)["scheduling"] == "RestoreScheduling"


def test_throttled_pods_from_the_annotation_are_restored(kubetide, tmp_path):
    quota = {"qos.kubetide.io/cpu-quota": "400m"}
    text = NODE + pod("a", annotations=quota, limit="1") + metrics("a", "400m") + QOS
    code, out, _ = kubetide(write(tmp_path, "s.yaml", text), "--json")
    assert code == 0
    assert json.loads(out) == {
        **RESULT,
        "gaps": {"ThrottleUp": {"cpu_total_usage": "2340m"}},
        "actions": [{"pod": "ns/a", "action": "restore", "metric": "cpu_total_usage", "released": "200m"}],
        **BY_PODS,
    }
    code, out, _ = kubetide(write(tmp_path, "s.yaml", text))
    assert (
        "1. restore ns/a (priority 0, Burstable): quota 400m -> 600m, takes 200m of cpu_total_usage"
        in " ".join(out.split())
    )


def test_a_pdb_that_allows_no_disruption_refuses_the_eviction(kubetide, tmp_path):
    qos = QOS.replace("actionName: throttle", "actionName: evict") + (
        "---\nkind: AvoidanceAction\nmetadata: {name: evict}\nspec: {eviction: {}}\n"
    )
    pdb = """
---
kind: PodDisruptionBudget
metadata: {name: keep-a, namespace: ns}
spec: {minAvailable: 1, selector: {matchLabels: {app: a}}}
status: {disruptionsAllowed: 0}
"""
    pod_a = pod("a").replace("annotations: {}", "annotations: {}, labels: {app: a}")
    text = NODE + pod_a + pod("b", priority=10) + metrics("a", "2000m") + metrics("b", "1400m") + qos + pdb
    code, out, _ = kubetide(write(tmp_path, "s.yaml", text))
    assert code == 0
    flat = " ".join(out.split())
    assert "1. evict (refused) ns/a" not in flat
    assert (
        "1. evict ns/a (priority 0, BestEffort): refused by a PodDisruptionBudget, nothing released" in flat
    )
    assert "2. evict ns/b (priority 10, BestEffort): releases 1400m" in flat
    code, out, _ = kubetide(write(tmp_path, "s.yaml", text), "--json")
    assert [a["pod"] for a in json.loads(out)["actions"]] == ["ns/b"]


def test_nothing_to_do(kubetide, tmp_path):
    text = NODE + pod("a") + metrics("a", "100m") + QOS
    code, out, _ = kubetide(write(tmp_path, "s.yaml", text))
    assert code == 0 and "Nothing to do" in out
    code, out, _ = kubetide(write(tmp_path, "s.yaml", text), "--json")
    assert json.loads(out) == {**RESULT, "gaps": {}, "actions": [], **BY_PODS}


@pytest.mark.parametrize(
    ("text", "nodeqos", "message"),
    [
        (pod("a") + QOS, None, "s.yaml: no Node (the node-state file needs exactly one)"),
        (NODE + "---" + NODE.replace("n1", "n2") + QOS, None, "s.yaml: more than one Node (n1, n2)"),
        (NODE + pod("a"), None, "s.yaml: no NodeQOS (put it in the node-state file or pass --nodeqos)"),
        (
            NODE,
            QOS.replace("value: 3000", "value: x"),
            'q.yaml: document 1 (NodeQOS q): spec.rules[0].metricRule.value: invalid quantity "x"',
        ),
        (
            NODE,
            QOS.replace("actionName: throttle", "actionName: thorttle"),
            'q.yaml: document 1 (NodeQOS q): spec.rules[0].actionName: unknown AvoidanceAction "thorttle" (known: throttle)',
        ),
        (
            NODE + pod("a", annotations={"qos.kubetide.io/cpu-quota": "fast"}) + QOS,
            None,
            'Pod ns/a: metadata.annotations.qos.kubetide.io/cpu-quota: invalid quantity "fast"',
        ),
        (NODE + metrics("a", "1") + metrics("a", "2") + QOS, None, "s.yaml: two PodMetrics for pod ns/a"),
        (
            NODE,
            QOS + PODQOS.replace("Namespace", "Zone"),
            'q.yaml: document 3 (PodQOS batch): spec.scopeSelector.matchExpressions[0].scopeName: unknown scopeName "Zone"',
        ),
        (
            NODE,
            QOS + PODQOS.replace("[throttle]", "[throttel]"),
            'q.yaml: document 3 (PodQOS batch): spec.allowedActions[0]: unknown AvoidanceAction "throttel"',
        ),
    ],
)
def test_errors_are_one_line_with_exit_code_2(kubetide, tmp_path, text, nodeqos, message):
    argv = [write(tmp_path, "s.yaml", text)]
    if nodeqos:
        argv += ["--nodeqos", write(tmp_path, "q.yaml", nodeqos)]
    code, out, err = kubetide(*argv)
    assert code == 2 and out == ""
    assert err.startswith("kubetide: error: ") and message in err
    assert len(err.strip().splitlines()) == 1


def test_missing_file_is_a_one_line_error(kubetide, tmp_path):
    code, _, err = kubetide(tmp_path / "nope.yaml")
    assert code == 2 and "nope.yaml: no such file" in err


def test_the_report_says_when_now_is(kubetide):
    """now is the newest timestamp in the input (here the metrics samples), or --now."""
    code, out, err = kubetide(STATE, "--nodeqos", NODEQOS)
    assert code == 0
    first = out.splitlines()[0]
    assert first.endswith("usage from NodeMetrics, at 2024-05-01T12:00:00Z (newest timestamp in the input)")
    code, out, err = kubetide(STATE, "--nodeqos", NODEQOS, "--now", "2024-05-01T12:05:00Z")
    assert code == 0 and out.splitlines()[0].endswith("at 2024-05-01T12:05:00Z (--now)")
    code, out, err = kubetide(STATE, "--nodeqos", NODEQOS, "--now", "noon")
    assert code == 2 and out == "" and err.startswith("kubetide: error: --now: expected an RFC 3339 time")


def test_a_rule_on_an_unknown_metric_is_a_warning_and_the_others_apply(kubetide, tmp_path):
    """crane builds its gaps from registered metrics only; one typo no longer disables every rule."""
    typo = "  - {name: typo, actionName: throttle, metricRule: {name: cpu_total_utilisation, value: 50}}\n"
    qos = QOS.replace("  rules:\n", "  rules:\n" + typo)
    text = NODE + pod("a") + metrics("a", "3500m") + qos
    code, out, err = kubetide(write(tmp_path, "s.yaml", text))
    assert code == 0
    assert err.count("\n") == 1 and err.startswith("kubetide: warning: ")
    assert (
        's.yaml: document 4 (NodeQOS q): spec.rules[0].metricRule.name: unknown metric "cpu_total_utilisation"'
        in err
    )
    assert 'rule "typo" skipped, the other rules apply' in err
    text_out = " ".join(out.split())
    assert "q/typo: skipped, unknown metric cpu_total_utilisation" in text_out
    assert "q/cpu: cpu_total_usage 3500m over 3 -> throttle" in text_out
    assert "1. throttle ns/a" in text_out


# -- the node's own usage, and saying when it falls back to its pods' sum (issue #28 item 5) ------


def node_metrics(cpu):
    return f"""
---
kind: NodeMetrics
apiVersion: metrics.k8s.io/v1beta1
metadata: {{name: n1}}
usage: {{cpu: {cpu}, memory: 2Gi}}
"""


def summary(tmp_path, node_cores, pods=(), node_name="n1"):
    """The kubelet's /stats/summary, as kubectl get --raw prints it (nanocores, bytes)."""
    document = {
        "node": {
            "nodeName": node_name,
            "cpu": {"usageNanoCores": int(node_cores * 1e9)},
            "memory": {"workingSetBytes": 2 * 2**30},
        },
        "pods": [
            {
                "podRef": {"name": name, "namespace": "ns", "uid": f"uid-{name}"},
                "cpu": {"usageNanoCores": int(c * 1e9)},
            }
            for name, c in pods
        ],
    }
    path = tmp_path / "summary.json"
    path.write_text(json.dumps(document))
    return path


def with_uid(pod_text, name):
    return pod_text.replace(f"metadata: {{name: {name},", f"metadata: {{name: {name}, uid: uid-{name},")


# The issue's node: its pods use 2500m, the node 3800m (the kubelet, the runtime, daemons), over the
# 3000m watermark. From the pods' sum nothing was done.
PODS_2500 = with_uid(pod("a"), "a") + with_uid(pod("b", priority=10), "b") + metrics("a", "1500m")


@pytest.mark.parametrize(
    ("name", "extra", "use_summary", "source", "acts"),
    [
        ("no node measurement: the pods' sum, said", metrics("b", "1000m"), False, "sum of its pods", False),
        ("NodeMetrics", metrics("b", "1000m") + node_metrics("3800m"), False, "NodeMetrics", True),
        ("the kubelet summary (b's usage from it too)", "", True, "the kubelet summary", True),
        (
            "NodeMetrics first, the summary for b's usage",
            node_metrics("3800m"),
            True,
            "NodeMetrics",
            True,
        ),
    ],
)
def test_node_usage_comes_from_the_node_and_a_fallback_is_said(
    kubetide, tmp_path, name, extra, use_summary, source, acts
):
    path = write(tmp_path, "s.yaml", NODE + PODS_2500 + extra + QOS)
    argv = [path]
    if use_summary:
        argv += ["--summary", summary(tmp_path, 3.8, pods=[("a", 1.5), ("b", 1.0)])]
    code, out, err = kubetide(*argv, "--json")
    assert code == 0 and "has no PodMetrics" not in err, name
    document = json.loads(out)
    assert document["node_usage_source"] == {"cpu": source, "memory": source}
    assert bool(document["actions"]) is acts
    if acts:  # (3800m - 3000m) +10%
        assert document["gaps"] == {"ThrottleDown": {"cpu_total_usage": "880m"}}
    code, out, _ = kubetide(*argv)
    text = " ".join(out.split())
    if source == "sum of its pods":
        assert "Node n1: cpu 2500m of 4" in text and "usage from the sum of its pods' usage" in text
        assert (
            "Fallback: no node measurement of cpu and memory (neither NodeMetrics nor --summary has it)"
            in text
        )
        assert "Nothing to do" in text
    else:
        assert "Node n1: cpu 3800m of 4" in text and f"usage from {source}," in text
        assert "Fallback" not in text


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "summary.json: not JSON ("),
        ("[1, 2]", "summary.json: not a kubelet summary (a JSON object with node and pods"),
        (
            '{"node": {"nodeName": "n2"}, "pods": []}',
            "summary.json: node.nodeName: the summary is of n2, not n1",
        ),
    ],
)
def test_a_bad_summary_is_one_line_and_exit_code_2(kubetide, tmp_path, content, message):
    path = tmp_path / "summary.json"
    path.write_text(content)
    code, out, err = kubetide(write(tmp_path, "s.yaml", NODE + PODS_2500 + QOS), "--summary", path)
    assert code == 2 and out == "" and err.count("\n") == 1 and message in err
