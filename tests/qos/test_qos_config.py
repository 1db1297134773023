"""NodeQOS / AvoidanceAction in crane's format, metrics-server objects, and the errors that name
the file and the field."""

import re
import textwrap
from fractions import Fraction

import pytest
import yaml
from qos_factories import config

from kubetide.errors import ManifestError
from kubetide.model import load_documents, load_file
from kubetide.qos import METRICS

FULL = """
apiVersion: ensurance.crane.io/v1alpha1
kind: NodeQOS
metadata: {name: general}
spec:
  selector: {matchLabels: {pool: general}}
  nodeQualityProbe: {timeoutSeconds: 10}
  rules:
  - name: cpu-high
    actionName: evict
    avoidanceThreshold: 2
    restoreThreshold: 3
    strategy: Preview
    metricRule: {name: cpu_total_utilization, value: 80.5}
  - name: mem
    actionName: evict
    metricRule: {name: memory_total_usage, value: 8Gi}
---
apiVersion: ensurance.crane.io/v1alpha1
kind: AvoidanceAction
metadata: {name: evict}
spec:
  eviction: {terminationGracePeriodSeconds: 7}
---
kind: AvoidanceAction
metadata: {name: throttle}
spec:
  coolDownSeconds: 20
  throttle: {cpuThrottle: {minCPURatio: 30, stepCPURatio: 25}}
"""


def test_full_nodeqos_and_actions_with_defaults():
    cfg = config(FULL)
    (qos,) = cfg.nodeqos
    assert qos.name == "general"
    assert qos.selector.matches({"pool": "general"}) and not qos.selector.matches({"pool": "gpu"})
    high, mem = qos.rules
    assert (high.name, high.action_name, high.metric) == ("cpu-high", "evict", "cpu_total_utilization")
    assert high.watermark == Fraction(161, 2)
    assert (high.avoidance_threshold, high.restore_threshold, high.preview) == (2, 3, True)
    assert (mem.avoidance_threshold, mem.restore_threshold, mem.strategy) == (1, 1, "None")
    assert mem.watermark == 8 * 2**30
    evict, throttle = cfg.actions["evict"], cfg.actions["throttle"]
    assert (evict.cool_down_seconds, evict.evicts, evict.throttles, evict.grace_seconds) == (
        300,
        True,
        False,
        7,
    )
    assert (throttle.cool_down_seconds, throttle.evicts, throttle.grace_seconds) == (20, False, None)
    assert (throttle.throttle.min_cpu_ratio, throttle.throttle.step_cpu_ratio) == (30, 25)
    assert cfg.warnings == []


def test_objective_ensurances_is_the_older_name_of_rules():
    cfg = config(
        """
        kind: NodeQOS
        metadata: {name: old}
        spec:
          objectiveEnsurances:
          - {name: r, actionName: a, metricRule: {name: cpu_total_usage, value: 4000}}
        ---
        kind: AvoidanceAction
        metadata: {name: a}
        spec: {eviction: {}}
        """
    )
    assert [r.name for r in cfg.nodeqos[0].rules] == ["r"]
    assert cfg.nodeqos[0].selector is None  # no selector: every node


@pytest.mark.parametrize(
    ("value", "millicores"),
    [
        (4000, 4000),  # crane writes cpu_total_usage in millicores
        ("4000", 4000),
        ("4000m", 4000),  # a Kubernetes quantity: 4 cores
        ("4", 4),
        ("1.5k", 1500 * 1000),  # suffixed: 1500 cores
    ],
)
def test_cpu_usage_watermarks_read_like_crane(value, millicores):
    cfg = config(
        f"""
        kind: NodeQOS
        metadata: {{name: q}}
        spec: {{rules: [{{name: r, actionName: a, metricRule: {{name: cpu_total_usage, value: {value!r}}}}}]}}
        ---
        kind: AvoidanceAction
        metadata: {{name: a}}
        spec: {{eviction: {{}}}}
        """.replace("'", '"')
    )
    assert cfg.nodeqos[0].rules[0].watermark == millicores


def test_disable_scheduling_action_is_accepted():
    cfg = config(
        """
        kind: NodeQOS
        metadata: {name: q}
        spec: {rules: [{name: r, actionName: disablescheduling, metricRule: {name: cpu_total_usage, value: 4000}}]}
        ---
        kind: AvoidanceAction
        metadata: {name: disablescheduling}
        spec: {coolDownSeconds: 300}
        """
    )
    assert cfg.actions["disablescheduling"].disables_scheduling and cfg.warnings == []
    assert cfg.actions["disablescheduling"].kinds(METRICS["cpu_total_usage"]) == ()


def _rule_error(rule: str, action: str = "spec: {eviction: {}}", extra: str = "") -> str:
    text = (
        "kind: NodeQOS\nmetadata: {name: q}\nspec:\n  rules:\n  - " + rule + "\n---\n"
        "kind: AvoidanceAction\nmetadata: {name: a}\n" + action + "\n" + extra
    )
    with pytest.raises(ManifestError) as error:
        config(text)
    return str(error.value)


@pytest.mark.parametrize(
    ("rule", "action", "message"),
    [
        (
            '{name: r, actionName: a, metricRule: {name: cpu_total_usage, value: "x"}}',
            "spec: {eviction: {}}",
            'nodeqos.yaml: document 1 (NodeQOS q): spec.rules[0].metricRule.value: invalid quantity "x"',
        ),
        (
            "{name: r, actionName: a, metricRule: {name: cpu_total_utilisation}}",
            "spec: {eviction: {}}",
            "spec.rules[0].metricRule.value: required field is missing",  # unknown metric or not
        ),
        (
            "{name: r, actionName: nope, metricRule: {name: cpu_total_usage, value: 1}}",
            "spec: {eviction: {}}",
            'nodeqos.yaml: document 1 (NodeQOS q): spec.rules[0].actionName: unknown AvoidanceAction "nope" (known: a)',
        ),
        (
            "{name: r, actionName: a, metricRule: {name: cpu_total_utilization, value: 120}}",
            "spec: {eviction: {}}",
            "spec.rules[0].metricRule.value: cpu_total_utilization is a percentage: must be between 0 and 100",
        ),
        (
            "{name: r, actionName: a, metricRule: {name: memory_total_usage, value: -1Gi}}",
            "spec: {eviction: {}}",
            "spec.rules[0].metricRule.value: must be non-negative",
        ),
        (
            "{name: r, actionName: a, metricRule: {name: cpu_total_usage}}",
            "spec: {eviction: {}}",
            "spec.rules[0].metricRule.value: required field is missing",
        ),
        (
            "{name: r, actionName: a}",
            "spec: {eviction: {}}",
            "spec.rules[0].metricRule: required field is missing",
        ),
        (
            "{name: r, actionName: a, strategy: DryRun, metricRule: {name: cpu_total_usage, value: 1}}",
            "spec: {eviction: {}}",
            'spec.rules[0].strategy: must be None or Preview, got "DryRun"',
        ),
        (
            "{name: r, actionName: a, avoidanceThreshold: -2, metricRule: {name: cpu_total_usage, value: 1}}",
            "spec: {eviction: {}}",
            "spec.rules[0].avoidanceThreshold: must be at least 1, got -2",
        ),
        (
            "{actionName: a, metricRule: {name: cpu_total_usage, value: 1}}",
            "spec: {eviction: {}}",
            "spec.rules[0].name: required field is missing",
        ),
        (
            # memory cannot be throttled: a throttle-only action on a memory metric would do nothing
            # here (crane throttles every pod's cpu instead)
            "{name: r, actionName: a, metricRule: {name: memory_total_usage, value: 8Gi}}",
            "spec: {throttle: {cpuThrottle: {stepCPURatio: 10}}}",
            'spec.rules[0].actionName: AvoidanceAction "a" only throttles, but memory_total_usage can only be evicted',
        ),
        (
            "{name: r, actionName: a, metricRule: {name: cpu_total_usage, value: 1}}",
            "spec: {throttle: {cpuThrottle: {minCPURatio: 101}}}",
            "document 2 (AvoidanceAction a): spec.throttle.cpuThrottle.minCPURatio: must be a percentage between 0 and 100, got 101",
        ),
        (
            "{name: r, actionName: a, metricRule: {name: cpu_total_usage, value: 1}}",
            "spec: {coolDownSeconds: -1, eviction: {}}",
            "spec.coolDownSeconds: must be non-negative, got -1",
        ),
        (
            "{name: r, actionName: a, metricRule: {name: cpu_total_usage, value: 1}}",
            "spec: {eviction: {terminationGracePeriodSeconds: -5}}",
            "spec.eviction.terminationGracePeriodSeconds: must be non-negative, got -5",
        ),
    ],
)
def test_bad_config_names_file_object_and_field(rule, action, message):
    assert message in _rule_error(rule, action)


def test_rules_and_objective_ensurances_together_is_an_error():
    text = """
kind: NodeQOS
metadata: {name: q}
spec:
  rules: [{name: r, actionName: a, metricRule: {name: cpu_total_usage, value: 1}}]
  objectiveEnsurances: [{name: s, actionName: a, metricRule: {name: cpu_total_usage, value: 1}}]
"""
    with pytest.raises(
        ManifestError, match=re.escape("spec.objectiveEnsurances: set rules or objectiveEnsurances")
    ):
        config(text)


def test_duplicates_are_errors():
    with pytest.raises(ManifestError, match=r'spec.rules\[1\].name: duplicate rule name "r"'):
        config(
            "kind: NodeQOS\nmetadata: {name: q}\nspec:\n  rules:\n"
            "  - {name: r, actionName: a, metricRule: {name: cpu_total_usage, value: 1}}\n"
            "  - {name: r, actionName: a, metricRule: {name: cpu_total_usage, value: 2}}\n"
        )
    with pytest.raises(ManifestError, match=re.escape('metadata.name: duplicate AvoidanceAction "a"')):
        config(
            "kind: AvoidanceAction\nmetadata: {name: a}\n---\nkind: AvoidanceAction\nmetadata: {name: a}\n"
        )


def test_wrong_api_group_is_an_error():
    with pytest.raises(ManifestError, match=re.escape('apiVersion: expected "ensurance.crane.io/v1alpha1"')):
        config("apiVersion: example.com/v1\nkind: NodeQOS\nmetadata: {name: q}\n")


# -- metrics-server objects -------------------------------------------------------------------


def test_pod_metrics_list_as_kubectl_get_raw_prints_it(tmp_path):
    path = tmp_path / "metrics.json"
    path.write_text(
        '{"kind":"PodMetricsList","apiVersion":"metrics.k8s.io/v1beta1","metadata":{},"items":['
        '{"metadata":{"name":"web","namespace":"shop"},"timestamp":"2024-05-01T12:00:00Z","window":"20s",'
        '"containers":[{"name":"a","usage":{"cpu":"1500001n","memory":"10Mi"}},'
        '{"name":"b","usage":{"cpu":"250m","memory":"1Ki"}}]}]}'
    )
    manifests = load_file(path)
    (pm,) = manifests.other["PodMetrics"]
    assert pm.key == "shop/web"
    assert pm.usage == {"cpu": 2 + 250, "memory": 10 * 2**20 + 1024}  # nanocores round up to millicores
    assert pm.containers["a"] == {"cpu": 2, "memory": 10 * 2**20}


def test_node_metrics_and_node_metrics_list():
    docs = yaml.safe_load_all(
        textwrap.dedent(
            """
            apiVersion: metrics.k8s.io/v1beta1
            kind: NodeMetricsList
            items:
            - metadata: {name: n1}
              usage: {cpu: 3500m, memory: 8Gi}
            ---
            kind: PodMetricsList
            apiVersion: metrics.k8s.io/v1beta1
            metadata: {}
            """
        )
    )
    manifests = load_documents(list(docs), "m.yaml")
    (nm,) = manifests.other["NodeMetrics"]
    assert (nm.name, nm.usage) == ("n1", {"cpu": 3500, "memory": 8 * 2**30})
    assert manifests.warnings == []


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        (
            {"kind": "NodeMetrics", "metadata": {"name": "n1"}},
            "m.yaml: NodeMetrics n1: usage: required field is missing",
        ),
        (
            {
                "kind": "PodMetrics",
                "apiVersion": "metrics.k8s.io/v1beta1",
                "metadata": {"name": "p"},
                "containers": [{"name": "c", "usage": {"cpu": "lots"}}],
            },
            'm.yaml: PodMetrics p: containers[0].usage.cpu: invalid quantity "lots"',
        ),
        (
            {"kind": "PodMetrics", "apiVersion": "metrics.k8s.io/v1", "metadata": {"name": "p"}},
            'apiVersion: expected "metrics.k8s.io/v1beta1", got "metrics.k8s.io/v1"',
        ),
    ],
)
def test_bad_metrics_name_the_field(doc, message):
    with pytest.raises(ManifestError) as error:
        load_documents([doc], "m.yaml")
    assert message in str(error.value)


# -- a rule on an unknown metric is skipped, the others apply (issue #28 item 3) -----------------

MIXED = """
kind: NodeQOS
metadata: {name: q}
spec:
  rules:
  - {name: typo, actionName: a, metricRule: {name: cpu_total_utilisation, value: 80}}
  - {name: cpu, actionName: a, metricRule: {name: cpu_total_usage, value: 3000}}
  - {name: custom, actionName: a, metricRule: {name: gpu_total_usage, value: 2}}
---
kind: NodeQOS
metadata: {name: other}
spec:
  rules:
  - {name: memory, actionName: a, metricRule: {name: memory_total_utilization, value: 90}}
---
kind: AvoidanceAction
metadata: {name: a}
spec: {eviction: {}}
"""


@pytest.mark.parametrize(
    ("registry_names", "kept", "skipped"),
    [
        (
            None,  # the default registry
            {"q": ["cpu"], "other": ["memory"]},
            [("q", "typo", "cpu_total_utilisation"), ("q", "custom", "gpu_total_usage")],
        ),
        (
            ["cpu_total_usage"],  # a registry without the memory metrics: that rule goes too
            {"q": ["cpu"], "other": []},
            [
                ("q", "typo", "cpu_total_utilisation"),
                ("q", "custom", "gpu_total_usage"),
                ("other", "memory", "memory_total_utilization"),
            ],
        ),
    ],
)
def test_rules_on_unknown_metrics_are_skipped_and_the_others_apply(registry_names, kept, skipped):
    registry = None
    if registry_names is not None:
        registry = METRICS.copy()
        for name in registry.names():
            if name not in registry_names:
                registry.unregister(name)
    cfg = config(MIXED, registry)
    assert {q.name: [r.name for r in q.rules] for q in cfg.nodeqos} == kept
    assert [(s.nodeqos, s.rule, s.metric) for s in cfg.skipped] == skipped
    assert [s.warning for s in cfg.skipped] == cfg.warnings
    assert cfg.warnings[0] == (
        "nodeqos.yaml: document 1 (NodeQOS q): spec.rules[0].metricRule.name: unknown metric "
        f'"cpu_total_utilisation" (known: {", ".join((registry or METRICS).names())}): '
        'rule "typo" skipped, the other rules apply'
    )
