"""The unblock property over random clusters: for every unremovable node, applying the suggested
changes to the dump makes it removable in a fresh plan, or the suggestion says it is not enough
(more rounds needed) or that there is nothing to change (a wait, a node no group manages)."""

from __future__ import annotations

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
        c.replicaset(app, n)
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


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cluster=clusters())
def test_applying_the_suggestion_makes_the_node_removable_or_it_says_it_needs_more(
    tmp_path: Path, cluster: Cluster
):
    down = cluster.plan(tmp_path)["scale_down"]
    for name, node in down["nodes"].items():
        if node["status"] != "unremovable":
            assert node["unblock"] is None
            continue
        unblock = node["unblock"]
        assert unblock is not None and unblock["text"], name
        if not unblock["removable"]:
            if unblock["changes"]:
                assert "and more: still not removable after" in unblock["text"]
            continue
        after = cluster.applied(unblock["changes"]).plan(tmp_path)["scale_down"]
        assert name in after["candidate_set"], (name, unblock, after["nodes"][name])
