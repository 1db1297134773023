"""The unblock property over random clusters: for every unremovable node, applying the suggested
changes to the dump makes it removable in a fresh plan, or the suggestion says it is not enough
(more rounds needed) or that there is nothing to change (a wait, a node no group manages)."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from unblock_cluster import SAFE_TO_EVICT, SCALE_DOWN_DISABLED, Cluster

APPS = ("api", "web", "db")
KINDS = ("replicated", "replicated", "replicated", "bare", "not-safe", "kube-system", "local-storage")


@st.composite
def clusters(draw) -> Cluster:
    c = Cluster()
    nodes = [f"n{i}" for i in range(draw(st.integers(2, 4)))]
    c.group("general", draw(st.integers(0, 2)))
    for name in nodes:
        c.node(name)
    c.node("dest", cpu=draw(st.sampled_from(["1", "2", "4"])), **{SCALE_DOWN_DISABLED: "true"})
    replicas = dict.fromkeys(APPS, 0)
    anti = {app: draw(st.booleans()) for app in APPS}
    for i in range(draw(st.integers(1, 8))):
        node = draw(st.sampled_from(nodes))
        kind = draw(st.sampled_from(KINDS))
        cpu = draw(st.sampled_from(["200m", "500m", "1500m"]))
        name = f"p{i}"
        if kind == "bare":
            c.pod(name, node, cpu)
        elif kind == "kube-system":
            c.replicaset(f"sys{i}", 1, namespace="kube-system")
            c.pod(name, node, cpu, app=f"sys{i}", namespace="kube-system")
        else:
            app = draw(st.sampled_from(APPS))
            replicas[app] += 1
            annotations = {SAFE_TO_EVICT: "false"} if kind == "not-safe" else None
            volumes = [{"name": "scratch", "emptyDir": {}}] if kind == "local-storage" else None
            c.pod(
                f"{app}-{i}",
                node,
                cpu,
                app=app,
                annotations=annotations,
                volumes=volumes,
                anti_affinity=anti[app],
            )
    for app, n in replicas.items():
        if not n:
            continue
        c.replicaset(app, n, deployment=draw(st.booleans()))
        if draw(st.booleans()):
            budget = draw(
                st.sampled_from(
                    [
                        {"minAvailable": min(n, 1)},
                        {"minAvailable": n},
                        {"maxUnavailable": 0},
                        {"maxUnavailable": 1},
                    ]
                )
            )
            c.pdb(app, budget, healthy=n, expected=n)
    c.flags["scale-down-utilization-threshold"] = draw(st.sampled_from(["0.3", "0.5", "0.7"]))
    return c


# Where a change stands in an answer: the pod's own fix, then budgets, groups and the surge, then
# the other flags, the utilization thresholds last.
THRESHOLDS = ("scale-down-utilization-threshold", "scale-down-gpu-utilization-threshold")


def rank(change: dict) -> int:
    if change["kind"] in ("safe-to-evict", "safe-to-evict-local-volumes", "node-annotation"):
        return 0
    if change["kind"] != "flag" or change["change"].startswith("surge-before-evict="):
        return 1
    return 3 if change["change"].split("=")[0] in THRESHOLDS else 2


# Derandomized: CI runs the same draws (a rare one found the bug the test below pins, fixed since).
@settings(
    max_examples=20,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(cluster=clusters())
def test_applying_the_suggestion_makes_the_node_removable_or_it_says_it_needs_more(
    tmp_path: Path, cluster: Cluster
):
    """Every verified answer applied removes its node, every "waiting" answer applied leaves it
    only waiting; no object or flag changed twice; the changes in `rank` order; no threshold more
    than 0.1 above the one in effect; a min size one higher is not enough; and a second run gives
    byte-identical JSON."""
    text = cluster.plan_text(tmp_path, "--json")
    assert cluster.plan_text(tmp_path, "--json") == text
    down = json.loads(text)["scale_down"]
    threshold = float(cluster.flags["scale-down-utilization-threshold"])
    min_size = cluster.groups[0]["minSize"]
    for name, node in down["nodes"].items():
        if node["status"] != "unremovable":
            assert node["unblock"] is None
            continue
        unblock = node["unblock"]
        assert unblock is not None and unblock["text"], name
        changes = unblock["changes"]
        subjects = [(c["kind"], c["subject"]) for c in changes]
        assert len(subjects) == len(set(subjects)), unblock
        assert [rank(c) for c in changes] == sorted(rank(c) for c in changes), unblock
        for c in changes:
            if c["kind"] == "flag" and c["change"].startswith(THRESHOLDS):
                assert float(c["change"].split("=")[1]) <= threshold + 0.1 + 1e-9, c
        if not unblock["removable"]:
            if unblock["waiting"] and changes:
                after = cluster.applied(changes).plan(tmp_path)["scale_down"]["nodes"][name]
                assert after["unblock"]["waiting"] is True and not after["unblock"]["changes"], after
            elif changes:
                assert "and more: still not removable after" in unblock["text"]
            continue
        after = cluster.applied(changes).plan(tmp_path)["scale_down"]
        assert name in after["candidate_set"], (name, unblock, after["nodes"][name])
        for i, c in enumerate(changes):
            value = int(c["change"].removeprefix("minSize: ")) if c["kind"] == "node-group-min-size" else None
            if value is not None and value + 1 < min_size:
                higher = [*changes[:i], {**c, "change": f"minSize: {value + 1}"}, *changes[i + 1 :]]
                after = cluster.applied(higher).plan(tmp_path)["scale_down"]
                assert name not in after["candidate_set"], (name, unblock)


def test_a_waiting_answer_is_what_the_applied_changes_give(tmp_path: Path):
    """The cluster the property found (tests/autoscaler/scaledown/data/): n0 first waits with a
    budget's change among its answer's (prod/api +1, surge-before-evict, ...), and the answer,
    made smallest, drops that change: then n3 ahead of it surges instead of using the budget, and
    so does n0, which goes. The answer says so (removable, not "then waiting"), and applied it
    does what it says."""
    data = json.loads((Path(__file__).parent / "data" / "unblock_waiting_but_surge_removes.json").read_text())
    cluster = Cluster(items=data["items"], groups=data["groups"], flags=data["flags"])
    before = cluster.plan(tmp_path)["scale_down"]["nodes"]["n0"]["unblock"]
    kinds = {(c["kind"], c["change"]) for c in before["changes"]}
    assert ("flag", "surge-before-evict=true") in kinds and not any(k == "pdb" for k, _ in kinds), before
    assert before["removable"] and not before["waiting"] and "then waiting" not in before["text"], before
    after = cluster.applied(before["changes"]).plan(tmp_path)["scale_down"]
    assert "n0" in after["candidate_set"], after["nodes"]["n0"]
