"""Answers that are right (issue 39 items 1): each finding of the 48-node EKS dump as a small
cluster, through `kubetide plan`, every answer checked by applying it to the dump and planning
again: the working min size (not a step), no change twice, waiting told apart from blocked,
surge before evict first for a single replica, the changes in the order a user controls them, no
threshold far above the one in effect, and identical answers on one line, most actionable first."""

from __future__ import annotations

from pathlib import Path

import pytest
from unblock_cluster import SAFE_TO_EVICT, SCALE_DOWN_DISABLED, Cluster

KEPT = {SCALE_DOWN_DISABLED: "true"}


def group_at_its_minimum(nodes: int, min_size: int) -> Cluster:
    """Group `system` of `nodes` empty nodes with `min_size`, and room elsewhere."""
    c = Cluster()
    c.group("system", min_size)
    c.group("general", 0)
    for i in range(1, nodes + 1):
        c.node(f"s{i}", group="system")
    c.node("dest", **KEPT)
    return c


def removable_after(cluster: Cluster, changes: list[dict], node: str, tmp: Path) -> bool:
    return node in cluster.applied(changes).plan(tmp)["scale_down"]["candidate_set"]


def with_min_size(changes: list[dict], value: int) -> list[dict]:
    return [
        {**c, "change": f"minSize: {value}"} if c["kind"] == "node-group-min-size" else c for c in changes
    ]


@pytest.mark.parametrize(("nodes", "min_size"), [(4, 3), (5, 2), (3, 2)])
def test_a_group_minimum_answer_is_the_largest_value_that_works(tmp_path, nodes, min_size):
    """The EKS finding: group `system` of 4 nodes at min 3 got "lower it to 2 (x4)"; the node
    goes only at min 1 (for the third node blocked) or 0 (the fourth). Each answer holds one
    change, removes the node, and one more is not enough."""
    cluster = group_at_its_minimum(nodes, min_size)
    down = cluster.plan(tmp_path)["scale_down"]
    blocked = [n for n, s in down["nodes"].items() if s["reason"] == "NodeGroupMinSizeReached"]
    assert len(blocked) == min_size  # nodes - (nodes - min_size) removable
    values = []
    for name in blocked:
        unblock = down["nodes"][name]["unblock"]
        assert unblock["removable"] is True, unblock
        assert [c["kind"] for c in unblock["changes"]] == ["node-group-min-size"], unblock
        value = int(unblock["changes"][0]["change"].removeprefix("minSize: "))
        values.append(value)
        assert f"lower it to {value}" in unblock["text"] and "(x" not in unblock["text"]
        assert removable_after(cluster, unblock["changes"], name, tmp_path)
        if value + 1 < min_size:
            assert not removable_after(cluster, with_min_size(unblock["changes"], value + 1), name, tmp_path)
    # The later a node comes in the search, the lower its group must go: one value per node.
    assert sorted(values, reverse=True) == list(range(min_size - 1, -1, -1))


def budget_used_up_for_now(c: Cluster) -> None:
    """Two replicas, one per node, maxUnavailable 1: the first node takes the disruption."""
    c.replicaset("web", 2)
    c.pdb("web", {"maxUnavailable": 1}, healthy=2, expected=2)
    c.pod("web-a", "a", app="web")
    c.pod("web-b", "b", app="web")


def budget_that_never_allows(c: Cluster) -> None:
    c.replicaset("web", 2)
    c.pdb("web", {"minAvailable": 2}, healthy=2, expected=2)
    c.pod("web-a", "a", app="web")
    c.pod("web-b", "b", app="web")


def two_of_a_group() -> Cluster:
    c = Cluster()
    c.group("general", 0)
    c.node("a")
    c.node("b")
    c.node("dest", **KEPT)
    return c


WAITS = "waiting, not blocked: drained when PodDisruptionBudget prod/web allows a disruption again"


@pytest.mark.parametrize(
    ("build", "expected"),
    [
        # b waits for the disruption a takes: nothing to change.
        # a's drain uses the disruption: its estimate says when b's turn comes.
        (budget_used_up_for_now, {"b": (False, True, [], WAITS + " (in about ")}),
        # Both blocked for good: one more disruption lets a go now, and b after it.
        (
            budget_that_never_allows,
            {
                "a": (
                    True,
                    False,
                    ["pdb"],
                    "PodDisruptionBudget prod/web needs 1 more disruption (minAvailable 1)",
                ),
                "b": (False, True, ["pdb"], "(minAvailable 1); then " + WAITS + " (in about "),
            },
        ),
    ],
    ids=["budget used up for now: waiting", "budget that never allows one: blocked, then waiting"],
)
def test_a_node_waiting_for_its_budget_is_waiting_not_blocked(tmp_path, build, expected):
    cluster = two_of_a_group()
    build(cluster)
    down = cluster.plan(tmp_path)["scale_down"]
    assert sorted(n for n in ("a", "b") if n not in down["candidate_set"]) == sorted(expected)
    for name, (removable, waiting, kinds, words) in expected.items():
        unblock = down["nodes"][name]["unblock"]
        assert (unblock["removable"], unblock["waiting"]) == (removable, waiting), unblock
        assert [c["kind"] for c in unblock["changes"]] == kinds
        assert words in unblock["text"]
        assert "minAvailable 0" not in unblock["text"]
        after = cluster.applied(unblock["changes"]).plan(tmp_path)["scale_down"]
        if removable:
            assert name in after["candidate_set"]
        else:  # unneeded, and only the budget it waits for holds it
            assert after["nodes"][name]["unblock"]["waiting"] is True
            assert after["nodes"][name]["unblock"]["changes"] == []
    assert "[not enough]" not in cluster.plan_text(tmp_path)


@pytest.mark.parametrize(
    ("deployment", "kind", "words"),
    [
        (
            True,
            "flag",
            "single-replica pod prod/api-1: --surge-before-evict=true or the Deployment annotation"
            ' kubetide.io/surge-before-evict: "true" would let it go',
        ),
        (False, "pdb", "PodDisruptionBudget prod/api needs 1 more disruption (minAvailable 0)"),
    ],
    ids=["Deployment: surge first", "bare ReplicaSet: no surge, the budget"],
)
def test_a_single_replica_behind_its_budget_is_offered_surge_before_evict_first(
    tmp_path, deployment, kind, words
):
    cluster = Cluster()
    cluster.group("general", 0)
    cluster.node("a")
    cluster.node("dest", **KEPT)
    cluster.replicaset("api", 1, deployment=deployment)
    cluster.pod("api-1", "a", app="api")
    cluster.pdb("api", {"minAvailable": 1}, healthy=1, expected=1)
    unblock = cluster.plan(tmp_path)["scale_down"]["nodes"]["a"]["unblock"]
    assert unblock["removable"] is True
    assert [c["kind"] for c in unblock["changes"]] == [kind]
    assert unblock["text"].startswith(words), unblock["text"]
    assert removable_after(cluster, unblock["changes"], "a", tmp_path)


def test_changes_come_in_the_order_a_user_controls_them(tmp_path):
    """The planner sees the utilization first, then the bare pod; the answer names the pod first
    and the threshold last, and needs both."""
    cluster = Cluster()
    cluster.group("general", 0)
    cluster.node("a")
    cluster.node("dest", **KEPT)
    cluster.pod("debug", "a", "2200m")  # bare, and 0.55 of 4 cores
    unblock = cluster.plan(tmp_path)["scale_down"]["nodes"]["a"]["unblock"]
    assert unblock["removable"] is True
    assert [c["kind"] for c in unblock["changes"]] == ["safe-to-evict", "flag"]
    assert unblock["text"].startswith("2 changes: pod prod/debug is bare")
    assert unblock["changes"][1]["change"] == "scale-down-utilization-threshold=0.55"
    assert removable_after(cluster, unblock["changes"], "a", tmp_path)
    for changes in ([unblock["changes"][0]], [unblock["changes"][1]]):  # neither alone
        assert not removable_after(cluster, changes, "a", tmp_path)


def test_new_nodes_of_a_group_are_one_change_with_their_count(tmp_path):
    """Three pods that repel each other, each needing its own node: "+N nodes" once, never the same
    change N times."""
    cluster = Cluster()
    cluster.group("general", 0)
    cluster.node("a")
    cluster.node("b", **KEPT)
    cluster.replicaset("web", 2)
    cluster.pod("web-1", "a", app="web", anti_affinity=True)
    cluster.pod("web-2", "b", app="web", anti_affinity=True)
    unblock = cluster.plan(tmp_path)["scale_down"]["nodes"]["a"]["unblock"]
    subjects = [(c["kind"], c["subject"]) for c in unblock["changes"]]
    assert len(subjects) == len(set(subjects))
    assert unblock["changes"] == [
        {
            "kind": "add-node",
            "subject": "node group general",
            "change": "+1 node",
            "text": unblock["changes"][0]["text"],
        }
    ]
    assert removable_after(cluster, unblock["changes"], "a", tmp_path)


def test_identical_answers_share_a_line_and_the_most_actionable_come_first(tmp_path):
    cluster = Cluster()
    cluster.group("general", 0)
    for name in ("busy-1", "busy-2", "busy-3"):
        cluster.node(name)
        cluster.replicaset(name, 1)
        cluster.pod(f"{name}-pod", name, "3600m", app=name)  # 0.9: in use, no threshold offered
    cluster.node("pinned")
    cluster.pod("debug", "pinned", "100m")  # bare: annotate it
    cluster.node("dest", **KEPT)
    text = cluster.plan_text(tmp_path)
    section = text[text.index("What would unblock them") :].splitlines()[1:]
    starts = [line for line in section if not line.startswith("      ")]
    assert starts[0].startswith("  pinned: pod prod/debug is bare"), starts
    busy = [line for line in starts if "in use, not blocked" in line]
    assert len(busy) == 1 and busy[0].startswith("  3 nodes (busy-1, busy-2, busy-3): in use, not blocked"), (
        busy
    )
    assert not any(line.startswith("  busy-") for line in starts)


def test_answers_are_byte_identical_run_after_run(tmp_path):
    cluster = group_at_its_minimum(4, 3)
    budget_that_never_allows(cluster)
    cluster.pod("debug", "s2", "100m")
    cluster.node("a")
    cluster.node("b")
    assert cluster.plan_text(tmp_path, "--json") == cluster.plan_text(tmp_path, "--json")


def test_a_safe_to_evict_answer_is_not_repeated_for_a_pod_named_twice(tmp_path):
    """Two blockers, one pod each: two changes, each pod once."""
    cluster = two_of_a_group()
    cluster.pod("debug-1", "a", annotations={SAFE_TO_EVICT: "false"})
    cluster.pod("debug-2", "a")
    unblock = cluster.plan(tmp_path)["scale_down"]["nodes"]["a"]["unblock"]
    subjects = [c["subject"] for c in unblock["changes"]]
    assert sorted(subjects) == ["Pod prod/debug-1", "Pod prod/debug-2"]
    assert removable_after(cluster, unblock["changes"], "a", tmp_path)


@pytest.mark.parametrize(
    ("threshold", "requests", "suggested"),
    [
        ("0.5", "2200m", "0.55"),  # 0.55: within 0.1 of the threshold, and under at 0.55
        ("0.5", "2440m", None),  # 0.61: more than 0.1 above it
        ("0.95", "3840m", "0.96"),  # 0.96, just above a high threshold (0.95 itself is under, CA 1.35)
        ("0.95", "3990m", None),  # 0.9975: only a threshold of 1 would do
    ],
    ids=["close", "far", "high threshold", "never 1"],
)
def test_a_threshold_is_suggested_only_close_to_the_one_in_effect_and_never_1(
    tmp_path, threshold, requests, suggested
):
    cluster = Cluster()
    cluster.group("general", 0)
    cluster.node("a")
    cluster.node("dest", **KEPT)
    cluster.flags["scale-down-utilization-threshold"] = threshold
    cluster.replicaset("batch", 1)
    cluster.pod("batch-1", "a", requests, app="batch")
    node = cluster.plan(tmp_path)["scale_down"]["nodes"]["a"]
    assert node["reason"] == "NotUnderutilized"
    changes = node["unblock"]["changes"]
    if suggested is None:
        assert changes == [] and node["unblock"]["text"].startswith("in use, not blocked")
        return
    assert [c["change"] for c in changes] == [f"scale-down-utilization-threshold={suggested}"]
    assert removable_after(cluster, changes, "a", tmp_path)


DO_NOT_DISRUPT = "karpenter.sh/do-not-disrupt"


def started_at(cluster: Cluster, pod: str, start: str) -> None:
    item = next(i for i in cluster.items if i["kind"] == "Pod" and i["metadata"]["name"] == pod)
    item["status"]["startTime"] = start


@pytest.mark.parametrize(
    ("value", "start", "words"),
    [
        # started 2026-11-20T00:00Z (the cluster's OLD), 200 h on: 2026-11-28T08:00Z, after NOW
        ("200h", "2026-11-20T00:00:00Z", "protected until 2026-11-28T08:00:00Z"),
        ("true", "2026-11-20T00:00:00Z", f'annotated {DO_NOT_DISRUPT}: "true": remove it'),
        # not started: its protection has not begun to run out (Karpenter's reading)
        ("200h", None, f'annotated {DO_NOT_DISRUPT}: "200h": remove it'),
    ],
    ids=["duration", "true", "duration, not started"],
)
def test_a_do_not_disrupt_answer_says_until_when(tmp_path, value, start, words):
    cluster = two_of_a_group()
    cluster.replicaset("web", 1)
    cluster.pod("web-a", "a", app="web", annotations={DO_NOT_DISRUPT: value})
    if start is not None:
        started_at(cluster, "web-a", start)
    status = cluster.plan(tmp_path)["scale_down"]["nodes"]["a"]
    assert status["reason"] == "BlockedByPod", status
    assert words in status["unblock"]["text"], status["unblock"]


def test_a_do_not_disrupt_duration_that_ran_out_holds_nothing(tmp_path):
    cluster = two_of_a_group()
    cluster.replicaset("web", 1)
    cluster.pod("web-a", "a", app="web", annotations={DO_NOT_DISRUPT: "1h"})
    started_at(cluster, "web-a", "2026-11-20T00:00:00Z")
    assert "a" in cluster.plan(tmp_path)["scale_down"]["candidate_set"]


@pytest.mark.parametrize(
    ("deadline", "start", "words"),
    [
        # started at NOW less an hour, activeDeadlineSeconds two hours: done by NOW plus an hour
        (7200, "2026-11-26T11:00:00Z", "pod prod/batch-1 completes at 2026-11-26T13:00:00Z at the latest"),
        (
            None,
            "2026-11-26T11:00:00Z",
            "pod prod/batch-1 completes when it is done (no activeDeadlineSeconds",
        ),
        (7200, None, "pod prod/batch-1 completes when it is done (no activeDeadlineSeconds"),  # not started
    ],
    ids=["deadline", "no deadline", "not started"],
)
def test_a_node_held_by_an_on_completion_pod_is_unneeded_and_says_what_it_waits_for(
    tmp_path, deadline, start, words
):
    """CA 1.36's rule: the node stays unneeded (nothing to unblock, it waits), its status names the
    pod, and the answer says when the pod completes at the latest where its spec says so."""
    cluster = two_of_a_group()
    cluster.pod("batch-1", "a", annotations={SAFE_TO_EVICT: "on-completion"})
    item = next(i for i in cluster.items if i["kind"] == "Pod" and i["metadata"]["name"] == "batch-1")
    if deadline is not None:
        item["spec"]["activeDeadlineSeconds"] = deadline
    if start is not None:
        started_at(cluster, "batch-1", start)
    down = cluster.plan(tmp_path)["scale_down"]
    status = down["nodes"]["a"]
    assert status["reason"] == "BlockedByOnCompletionPod", status
    assert "waits for prod/batch-1 to complete" in status["why"], status
    unblock = status["unblock"]
    assert (unblock["waiting"], unblock["changes"]) == (True, []), unblock
    assert unblock["text"].startswith("waiting, not blocked: left to finish"), unblock
    assert words in unblock["text"], unblock
    assert down["to_delete"] == {"empty": ["b"], "drain": []}, down["to_delete"]
