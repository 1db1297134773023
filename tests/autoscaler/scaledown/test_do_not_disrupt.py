"""Issue 27: Karpenter's `karpenter.sh/do-not-disrupt: "true"` blocks a drain exactly where CA's
`safe-to-evict: "false"` does (rule 9), with CA's reason NotSafeToEvictAnnotation. Issue 37: a
duration protects until the pod's start time plus the duration (Karpenter 1.12)."""

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scaledown_fakes import pod, workload

from kubetide.autoscaler.scaledown.planning.drainability import (
    DO_NOT_DISRUPT,
    SAFE_TO_EVICT,
    DrainContext,
    DrainRules,
    Outcome,
    drain_node,
    index_workloads,
    verdict,
)
from kubetide.autoscaler.scaledown.planning.pdb import PdbTracker
from kubetide.autoscaler.scaledown.reasons import PodReason
from kubetide.model.disruption import do_not_disrupt, do_not_disrupt_until
from kubetide.model.pod import MIRROR_ANNOTATION

NOW = 10_000.0
WORKLOADS = index_workloads([workload("ReplicaSet", "rs", 3), workload("DaemonSet", "ds", None)])
KEEP = {DO_NOT_DISRUPT: "true"}


def judge(p):
    return verdict(p, DrainContext(DrainRules(), PdbTracker([], [p], WORKLOADS), NOW, WORKLOADS))


@pytest.mark.parametrize(
    ("annotations", "owner", "outcome", "rule"),
    [
        # (pod annotations, controller, outcome, deciding rule): do-not-disrupt and
        # safe-to-evict=false side by side, so the table shows they are one rule.
        ({}, ("ReplicaSet", "rs"), Outcome.MOVE, "default"),
        (KEEP, ("ReplicaSet", "rs"), Outcome.BLOCK, "do-not-disrupt"),
        ({SAFE_TO_EVICT: "false"}, ("ReplicaSet", "rs"), Outcome.BLOCK, "not-safe-to-evict"),
        ({DO_NOT_DISRUPT: "false"}, ("ReplicaSet", "rs"), Outcome.MOVE, "default"),
        (
            {DO_NOT_DISRUPT: "True"},
            ("ReplicaSet", "rs"),
            Outcome.MOVE,
            "default",
        ),  # Karpenter: exactly "true"
        # Earlier rules win over it as over safe-to-evict=false:
        ({**KEEP, MIRROR_ANNOTATION: "x"}, ("Node", "n1"), Outcome.SKIP, "mirror"),
        (KEEP, ("DaemonSet", "ds"), Outcome.DAEMONSET, "daemonset"),
        ({**KEEP, SAFE_TO_EVICT: "true"}, ("ReplicaSet", "rs"), Outcome.MOVE, "safe-to-evict"),
        (KEEP, None, Outcome.BLOCK, "replicated"),
    ],
)
def test_do_not_disrupt_is_rule_9_like_safe_to_evict_false(annotations, owner, outcome, rule):
    result = judge(pod("p", owner=owner, annotations=annotations))
    assert (result.outcome, result.rule) == (outcome, rule)
    if rule in ("do-not-disrupt", "not-safe-to-evict"):
        assert result.reason is PodReason.NOT_SAFE_TO_EVICT_ANNOTATION


def test_a_do_not_disrupt_pod_blocks_its_node():
    pods = [pod("free"), pod("kept", annotations=KEEP)]
    drain = drain_node(pods, DrainContext(DrainRules(), PdbTracker([], pods, WORKLOADS), NOW, WORKLOADS))
    assert drain.blocking is not None
    assert drain.blocking.reason is PodReason.NOT_SAFE_TO_EVICT_ANNOTATION
    assert drain.blocking.pod.name == "kept"


def test_plan_blocks_the_node_of_a_do_not_disrupt_pod_and_says_which_annotation(tmp_path, capsys):
    from pathlib import Path

    import kubetide.cli.main as cli_main

    examples = Path(__file__).resolve().parents[3] / "examples"
    text = (examples / "plan-cluster.yaml").read_text()
    protected = "cluster-autoscaler.kubernetes.io/safe-to-evict: 'false'"
    assert text.count(protected) == 2  # the Job's template and its pod on general-c1
    dump = tmp_path / "cluster.yaml"
    dump.write_text(text.replace(protected, "karpenter.sh/do-not-disrupt: 'true'"))
    code = cli_main.main(["plan", str(dump), "--node-groups", str(examples / "plan-node-groups.yaml")])
    out = capsys.readouterr().out
    assert code == 0
    (row,) = [line for line in out.splitlines() if line.startswith("general-c1 ")]
    assert "BlockedByPod" in row and "(NotSafeToEvictAnnotation)" in row
    assert 'karpenter.sh/do-not-disrupt: "true"' in row


# -- a duration (Karpenter 1.12): protected until status.startTime + the duration ------------------
STARTED = 1_000.0


def started(annotations, start=STARTED):
    return dataclasses.replace(pod("p", annotations=annotations), start_time=start)


def judge_at(p, now):
    return verdict(p, DrainContext(DrainRules(), PdbTracker([], [p], WORKLOADS), now, WORKLOADS))


@pytest.mark.parametrize(
    ("value", "start", "now", "blocks"),
    [
        # (annotation value, pod's startTime, now, blocks the drain)
        ("30m", STARTED, STARTED, True),
        ("30m", STARTED, STARTED + 1799, True),
        ("30m", STARTED, STARTED + 1800, False),  # disruptable from start + duration on
        ("30m", STARTED, STARTED + 1801, False),
        ("1h30m", STARTED, STARTED + 5399, True),
        ("1h30m", STARTED, STARTED + 5400, False),
        ("90s", STARTED, STARTED + 89.5, True),
        ("4h", None, STARTED + 10**6, True),  # not started: its protection has not begun to run out
        ("true", STARTED, STARTED + 10**9, True),
        # Invalid values are read as no annotation (Karpenter: an event, no protection).
        ("0s", STARTED, STARTED, False),
        ("-5m", STARTED, STARTED, False),
        ("4 hours", STARTED, STARTED, False),
        (" 4h", STARTED, STARTED, False),
        ("4d", STARTED, STARTED, False),
        ("True", STARTED, STARTED, False),
        ("", STARTED, STARTED, False),
    ],
)
def test_a_do_not_disrupt_duration_protects_until_start_plus_duration(value, start, now, blocks):
    v = judge_at(started({DO_NOT_DISRUPT: value}, start), now)
    if blocks:
        assert (v.outcome, v.rule, v.reason) == (
            Outcome.BLOCK,
            "do-not-disrupt",
            PodReason.NOT_SAFE_TO_EVICT_ANNOTATION,
        )
    else:
        assert (v.outcome, v.rule) == (Outcome.MOVE, "default")


@given(
    minutes=st.integers(min_value=1, max_value=10_000),
    start=st.floats(min_value=0, max_value=1e9),
    after=st.floats(min_value=-1e6, max_value=1e6),
)
@settings(max_examples=60)
def test_protection_ends_exactly_at_start_plus_duration(minutes, start, after):
    p = started({DO_NOT_DISRUPT: f"{minutes}m"}, start)
    until = do_not_disrupt_until(p)
    assert until == start + minutes * 60
    now = until + after
    assert do_not_disrupt(p, now) is (now < until)
