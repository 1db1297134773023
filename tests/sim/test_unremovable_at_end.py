"""What would unblock the nodes still unremovable when a run ends (issue 27 item 1, in the
simulator): asked once on the final state, written to summary.json (`scale_down.unremovable_at_end`)
and shown in report.html; the same run gives the same answers; applying the suggested change to
the scenario and running it again takes that blocker away."""

from __future__ import annotations

import json

from sim_helpers import deployment, group, make_scenario

from kubetide.sim.report.html import render, render_comparison
from kubetide.sim.report.output import summary_json
from kubetide.sim.runtime.simulation import NoAutoscaler, Simulation
from kubetide.sweep.compare import Variant, comparison
from kubetide.sweep.grid import Setting

SAFE_TO_EVICT = "cluster-autoscaler.kubernetes.io/safe-to-evict"


def bare_pod(annotations=None):
    meta = {"name": "debug", "namespace": "default", **({"annotations": annotations} if annotations else {})}
    spec = {"containers": [{"name": "c", "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}}}]}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def scenario(annotations=None, **autoscaler):
    return make_scenario(
        groups=[group(size=2)],
        objects=[bare_pod(annotations)],
        duration="20m",
        autoscaler={"scale-down-unneeded-time": "2m", **autoscaler},
    )


def at_end(result):
    return result.summary["scale_down"]["unremovable_at_end"]


def test_the_node_a_bare_pod_keeps_is_listed_with_what_would_unblock_it():
    result = Simulation(scenario(), explain_unremovable=True).run()
    assert result.summary["nodes"]["final"] == 1  # the empty node went
    found = at_end(result)
    assert (found["count"], found["by_reason"]) == (1, {"BlockedByPod": 1})
    (row,) = found["nodes"]
    assert (row["group"], row["reason"]) == ("general", "BlockedByPod")
    assert row["blocking_pods"] == [{"pod": "default/debug", "reason": "NotReplicated"}]
    unblock = row["unblock"]
    assert unblock["removable"] is True
    assert [c["kind"] for c in unblock["changes"]] == ["safe-to-evict", "add-node"]
    assert unblock["text"].startswith("2 changes: pod default/debug is bare: give it a controller")
    # the last node: no other node to take the pod, in kube-scheduler's words
    assert "pod default/debug fits on no other node (no nodes available to schedule pods)" in unblock["text"]


def test_applying_the_change_takes_the_blocker_away():
    result = Simulation(scenario({SAFE_TO_EVICT: "true"}), explain_unremovable=True).run()
    (row,) = at_end(result)["nodes"]
    assert row["reason"] == "NoPlaceToMovePods"  # no longer blocked by the pod: it needs a home
    assert row["blocking_pods"] == []
    assert row["unblock"]["text"].endswith("one more node of group general would take it")


def test_the_same_run_gives_the_same_answers_byte_for_byte():
    first, second = (Simulation(scenario(), explain_unremovable=True).run() for _ in range(2))
    for result in (first, second):
        result.summary["wall_seconds"] = 0
    assert summary_json(first.summary) == summary_json(second.summary)


def test_not_asked_without_kubetides_autoscaler_or_scale_down_or_the_ask():
    none = Simulation(
        scenario(), autoscaler_factory=NoAutoscaler, autoscaler_name="none", explain_unremovable=True
    ).run()
    off = Simulation(scenario(**{"scale-down-enabled": "false"}), explain_unremovable=True).run()
    unasked = Simulation(scenario()).run()  # sweeps and benchmarks: not asked, not paid for
    for result in (none, off, unasked):
        assert "unremovable_at_end" not in result.summary["scale_down"]
        assert "Nodes still unremovable at the end" not in render(result)


def test_the_report_shows_the_table_and_a_compare_report_one_per_setting():
    result = Simulation(scenario(), explain_unremovable=True).run()
    page = render(result)
    assert "Nodes still unremovable at the end, and what would unblock them" in page
    assert "default/debug (NotReplicated)" in page and "pod default/debug is bare" in page
    json.loads(json.dumps(result.summary))  # plain JSON
    busy = make_scenario(
        groups=[group(size=2)],
        objects=[deployment("web", 2, cpu="2200m")],
        duration="10m",
        autoscaler={"scale-down-unneeded-time": "2m"},
    )
    variants = [
        Variant("own", Setting(())),
        Variant("high", Setting((("scale-down-utilization-threshold", "0.7"),))),
    ]
    results = [Simulation(v.apply(busy), explain_unremovable=True).run() for v in variants]
    document = comparison(busy, 1, list(zip(variants, results, strict=True)))
    page = render_comparison(document, results)
    assert page.count("<h3>own</h3>") == 1 and page.count("<h3>high</h3>") == 1
    assert "scale-down-utilization-threshold=0.55 would let it go" in page


def test_the_most_actionable_nodes_are_listed_first():
    """Five busy nodes (in use: nothing to change) and one a bare pod keeps: of the three listed,
    the bare pod's node comes first wherever the plan's order puts it."""
    busy = make_scenario(
        groups=[group(size=7)],
        objects=[bare_pod(), deployment("busy", 5, cpu="3500m")],
        duration="20m",
        # busy-node consolidation would move a busy pod beside the bare one and remove its node
        autoscaler={"scale-down-unneeded-time": "2m", "consolidate-busy-nodes": "false"},
    )
    found = at_end(Simulation(busy, explain_unremovable=True).run())
    assert found["count"] == 6 and len(found["nodes"]) == 3
    first, *rest = found["nodes"]
    assert first["blocking_pods"] == [{"pod": "default/debug", "reason": "NotReplicated"}]
    assert first["unblock"]["removable"] is True
    assert all(row["reason"] == "NotUnderutilized" for row in rest)
