"""PodQOS: parsing (one error line per bad field), which pods it selects, and the executor never
touching a pod outside its scope."""

import textwrap

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from qos_factories import Recorder, config, pod, ps, rules, state

from kubetide.errors import ManifestError
from kubetide.model import load_documents
from kubetide.qos import EVICT, AgentOptions, PodQOS, QosAgent, scope_refusal
from kubetide.qos.podqos import PriorityRange

BU = {"cpu": "100m"}
GU = {"cpu": "1", "cpu_limit": "1", "memory": "1Gi", "memory_limit": "1Gi"}


def podqos(spec: str, name: str = "pq") -> PodQOS:
    doc = {"apiVersion": "ensurance.crane.io/v1alpha1", "kind": "PodQOS", "metadata": {"name": name}}
    doc["spec"] = yaml.safe_load(textwrap.dedent(spec))
    return load_documents([doc], "podqos.yaml").other["PodQOS"][0]


def labelled(name, labels, **kwargs):
    p = pod(name, **kwargs)
    p.meta.labels.update(labels)
    return p


# -- parsing ----------------------------------------------------------------------------------


def test_a_full_podqos_parses():
    q = podqos(
        """
        allowedActions: [evict, throttle]
        labelSelector: {matchLabels: {tier: batch}}
        scopeSelector:
          matchExpressions:
          - {scopeName: Namespace, operator: In, values: [batch]}
          - {scopeName: Priority, operator: NotIn, values: ["1000-3000", "-10", "-20--15"]}
          - {scopeName: QOSClass, operator: In, values: [BestEffort, Burstable]}
        resourceQOS: {cpuQOS: {cpuPriority: 7}}   # crane's, ignored here
        """
    )
    assert q.allowed_actions == ("evict", "throttle")
    assert [r.scope for r in q.scope] == ["Namespace", "Priority", "QOSClass"]
    assert q.scope[1].priorities == (
        PriorityRange(1000, 3000),
        PriorityRange(-10, -10),
        PriorityRange(-20, -15),
    )


@pytest.mark.parametrize(
    ("spec", "field", "message"),
    [
        ("allowedActions: evict", "spec.allowedActions", "expected a list"),
        (
            "scopeSelector: {matchExpressions: [{scopeName: Zone, operator: In, values: [a]}]}",
            "spec.scopeSelector.matchExpressions[0].scopeName",
            'unknown scopeName "Zone"',
        ),
        (
            "scopeSelector: {matchExpressions: [{scopeName: Namespace, operator: Exists}]}",
            "spec.scopeSelector.matchExpressions[0].operator",
            'unknown operator "Exists" (expected In or NotIn)',
        ),
        (
            "scopeSelector: {matchExpressions: [{scopeName: Namespace, operator: In}]}",
            "spec.scopeSelector.matchExpressions[0].values",
            "operator In needs at least one value",
        ),
        (
            "scopeSelector: {matchExpressions: [{scopeName: Priority, operator: In, values: ['0', 'high']}]}",
            "spec.scopeSelector.matchExpressions[0].values[1]",
            'expected a priority or a range like "1000-3000", got "high"',
        ),
        (
            "scopeSelector: {matchExpressions: [{scopeName: Priority, operator: In, values: ['3000-1000']}]}",
            "spec.scopeSelector.matchExpressions[0].values[0]",
            'the range "3000-1000" ends below its start',
        ),
        (
            "scopeSelector: {matchExpressions: [{scopeName: QOSClass, operator: In, values: [Besteffort]}]}",
            "spec.scopeSelector.matchExpressions[0].values[0]",
            'unknown QoS class "Besteffort"',
        ),
        (
            "labelSelector: {matchExpressions: [{key: tier, operator: Within}]}",
            "spec.labelSelector.matchExpressions[0].operator",
            'unknown operator "Within"',
        ),
    ],
)
def test_every_bad_field_is_one_error_naming_file_object_and_field(spec, field, message):
    with pytest.raises(ManifestError) as error:
        podqos(spec)
    text = str(error.value)
    assert text.startswith(f"podqos.yaml: PodQOS pq: {field}: ")
    assert message in text and "\n" not in text


def test_references_are_checked_with_the_same_precision():
    text = """
kind: PodQOS
metadata: {name: pq}
spec: {allowedActions: [evict, evcit], scopeSelector: {matchExpressions: [{scopeName: Namespace, operator: In, values: [a]}]}}
---
kind: AvoidanceAction
metadata: {name: evict}
spec: {eviction: {}}
"""
    with pytest.raises(ManifestError) as error:
        config(text)
    assert str(error.value) == (
        'nodeqos.yaml: document 1 (PodQOS pq): spec.allowedActions[1]: unknown AvoidanceAction "evcit" (known: evict)'
    )
    valid = text.replace("evcit", "evict")
    with pytest.raises(ManifestError, match=r'metadata.name: duplicate PodQOS "pq"'):
        config(valid + "---\n" + valid.split("---")[0])


def test_a_podqos_without_selectors_selects_nothing_and_warns():
    cfg = config(
        """
kind: PodQOS
metadata: {name: everyone}
spec: {allowedActions: [evict]}
---
kind: AvoidanceAction
metadata: {name: evict}
spec: {eviction: {}}
"""
    )
    assert not cfg.podqos[0].selects(pod("a"))
    assert 'PodQOS "everyone" has neither a labelSelector nor a scopeSelector' in cfg.warnings[0]


# -- selection --------------------------------------------------------------------------------

BATCH_NS = "scopeSelector: {matchExpressions: [{scopeName: Namespace, operator: In, values: [batch]}]}"


@pytest.mark.parametrize(
    ("spec", "p", "selected"),
    [
        ("labelSelector: {matchLabels: {tier: batch}}", labelled("a", {"tier": "batch"}), True),
        ("labelSelector: {matchLabels: {tier: batch}}", labelled("a", {"tier": "web"}), False),
        (BATCH_NS, pod("a", ns="batch"), True),
        (BATCH_NS, pod("a", ns="shop"), False),
        # Priority: single values and inclusive ranges
        (
            "scopeSelector: {matchExpressions: [{scopeName: Priority, operator: In, values: ['0-999']}]}",
            pod("a", priority=999),
            True,
        ),
        (
            "scopeSelector: {matchExpressions: [{scopeName: Priority, operator: In, values: ['0-999']}]}",
            pod("a", priority=1000),
            False,
        ),
        (
            "scopeSelector: {matchExpressions: [{scopeName: Priority, operator: In, values: ['-5', '7']}]}",
            pod("a", priority=-5),
            True,
        ),
        # NotIn excludes every listed value (crane's only honours the last one)
        (
            "scopeSelector: {matchExpressions: [{scopeName: Priority, operator: NotIn, values: ['1000', '0']}]}",
            pod("a", priority=1000),
            False,
        ),
        (
            "scopeSelector: {matchExpressions: [{scopeName: Priority, operator: NotIn, values: ['1000', '0']}]}",
            pod("a", priority=5),
            True,
        ),
        (
            "scopeSelector: {matchExpressions: [{scopeName: QOSClass, operator: In, values: [BestEffort]}]}",
            pod("a"),
            True,
        ),
        (
            "scopeSelector: {matchExpressions: [{scopeName: QOSClass, operator: NotIn, values: [Guaranteed]}]}",
            pod("a", **GU),
            False,
        ),
        # every selector must match (AND)
        (
            f"labelSelector: {{matchLabels: {{tier: batch}}}}\n{BATCH_NS}",
            labelled("a", {"tier": "batch"}, ns="shop"),
            False,
        ),
        (
            f"labelSelector: {{matchLabels: {{tier: batch}}}}\n{BATCH_NS}",
            labelled("a", {"tier": "batch"}, ns="batch"),
            True,
        ),
    ],
)
def test_which_pods_a_podqos_selects(spec, p, selected):
    assert podqos(f"allowedActions: [evict]\n{spec}").selects(p) is selected


def test_scope_refusal_explains_itself():
    evict_batch = podqos(f"allowedActions: [evict]\n{BATCH_NS}", name="batch-evict")
    assert scope_refusal((), pod("a"), ("evict",)) is None  # no PodQOS: every action, every pod
    assert scope_refusal((evict_batch,), pod("a", ns="batch"), ("throttle", "evict")) is None
    assert scope_refusal((evict_batch,), pod("a", ns="shop"), ("evict",)) == "no PodQOS selects it"
    assert scope_refusal((evict_batch,), pod("a", ns="batch"), ("throttle",)) == (
        "PodQOS batch-evict does not allow throttle"
    )


# -- the executor -----------------------------------------------------------------------------

EVICT_AT_60 = "{name: r, actionName: evict, metricRule: {name: cpu_total_utilization, value: 60}}"
THROTTLE_AT_60 = "{name: t, actionName: throttle, metricRule: {name: cpu_total_usage, value: 2400}}"


def scoped(*rule_lines, podqos_yaml=""):
    return rules(*rule_lines, actions=podqos_yaml)


BATCH_MAY_BE_EVICTED = """---
kind: PodQOS
metadata: {name: batch}
spec:
  allowedActions: [evict]
  scopeSelector: {matchExpressions: [{scopeName: Namespace, operator: In, values: [batch]}]}
"""


def test_only_pods_a_podqos_allows_are_acted_on():
    st_ = state(
        ps(pod("hog", ns="shop"), cpu=2500),  # the best pick by usage, but out of scope
        ps(pod("a", ns="batch", **BU), cpu=500),
        ps(pod("b", ns="batch", **BU), cpu=400),
    )  # 3400m of 4 cores: gap 1100m
    agent = QosAgent(scoped(EVICT_AT_60, podqos_yaml=BATCH_MAY_BE_EVICTED), AgentOptions(one_sample=True))
    result = agent.step(st_, Recorder(), now=0)
    assert [d.pod for d in result.decisions] == ["batch/a", "batch/b"]
    assert result.execution.skipped["shop/hog"] == "no PodQOS selects it"


def test_an_action_the_podqos_does_not_allow_touches_nothing():
    st_ = state(ps(pod("a", ns="batch"), cpu=3000), ps(pod("b", ns="batch"), cpu=400))
    agent = QosAgent(scoped(THROTTLE_AT_60, podqos_yaml=BATCH_MAY_BE_EVICTED), AgentOptions(one_sample=True))
    result = agent.step(st_, Recorder(), now=0)
    assert result.decisions == []
    assert result.execution.skipped["batch/a"] == "PodQOS batch does not allow throttle"


def test_act_on_all_candidates_stays_inside_the_scope():
    st_ = state(ps(pod("web", ns="shop", **GU), cpu=1000), ps(pod("a", ns="batch"), cpu=2400))
    agent = QosAgent(
        scoped(EVICT_AT_60, podqos_yaml=BATCH_MAY_BE_EVICTED), AgentOptions(precise=False, one_sample=True)
    )
    assert [d.pod for d in agent.step(st_, Recorder(), now=0).decisions] == ["batch/a"]


def test_without_podqos_daemonset_mirror_and_critical_pods_are_still_never_candidates():
    st_ = state(
        ps(pod("ds", owner="DaemonSet"), cpu=1000),
        ps(pod("static", annotations={"kubernetes.io/config.mirror": "x"}), cpu=1000),
        ps(pod("crit", priority=2_000_000_000), cpu=1000),
        ps(pod("batch"), cpu=400),
    )
    for line in (EVICT_AT_60, THROTTLE_AT_60):
        agent = QosAgent(rules(line), AgentOptions(precise=False, one_sample=True))
        assert [d.pod for d in agent.step(st_, Recorder(), now=0).decisions] == ["default/batch"]


# -- the property -----------------------------------------------------------------------------

NAMESPACES = ("batch", "shop", "kube-system")
pod_strategy = st.tuples(
    st.sampled_from(NAMESPACES),
    st.integers(-10, 2000),  # priority
    st.one_of(st.none(), st.integers(0, 3000)),  # cpu usage; None: no metrics yet
    st.sampled_from(["", "DaemonSet", "ReplicaSet"]),
)


@settings(max_examples=80)
@given(
    pods=st.lists(pod_strategy, min_size=1, max_size=8),
    watermark=st.integers(0, 16000),
    unmeasured_usage=st.integers(0, 3000),
    allowed=st.sets(st.sampled_from(NAMESPACES)),
    precise=st.booleans(),
)
def test_no_pod_outside_the_podqos_scope_is_acted_on_and_precise_never_overshoots(
    pods, watermark, unmeasured_usage, allowed, precise
):
    states = [
        ps(pod(f"p{i}", ns=ns, priority=priority, owner=owner or None), cpu=usage)
        for i, (ns, priority, usage, owner) in enumerate(pods)
    ]
    node_usage = sum(s.usage["cpu"] for s in states if s.usage is not None) + unmeasured_usage
    scope = ""
    if allowed:
        scope = (
            "---\nkind: PodQOS\nmetadata: {name: scope}\nspec:\n  allowedActions: [evict]\n"
            f"  scopeSelector: {{matchExpressions: [{{scopeName: Namespace, operator: In, values: {sorted(allowed)}}}]}}\n"
        )
    cfg = scoped(
        f"{{name: r, actionName: evict, metricRule: {{name: cpu_total_usage, value: {watermark}}}}}",
        podqos_yaml=scope,
    )
    st_ = state(*states, cpu="16", usage={"cpu": node_usage, "memory": 0})
    result = QosAgent(cfg, AgentOptions(precise=precise, one_sample=True)).step(st_, Recorder(), now=0)
    by_key = {s.key: s for s in states}
    for d in result.decisions:
        acted_on = by_key[d.pod].pod
        assert not acted_on.is_daemonset
        if allowed:
            assert acted_on.namespace in allowed
        else:
            assert acted_on.controller is not None  # a bare pod needs a PodQOS to be evicted
    assert len({d.pod for d in result.decisions}) == len(result.decisions)
    if precise:
        # the node's usage is known: never the "act on all" fallback, and never an action once the
        # gap is closed; without the last action the gap would still be open
        assert all(d.precise for d in result.decisions)
        assert all(d.gap_before > 0 for d in result.decisions)
        assert sum(d.released is None for d in result.decisions) <= 1  # one unknown per sample
        gap = result.gaps.get(EVICT, {}).get("cpu_total_usage")
        counted = [d.released or 0 for d in result.decisions]
        if counted:
            assert sum(counted[:-1]) < gap
