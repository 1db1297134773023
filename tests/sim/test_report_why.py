"""Reports that explain (issue 27, item 3): the compare report marks the scenario's events, draws
each node group, utilisation against scale-down-utilization-threshold, the nodes kept by reason
and the pending pods no node group can take, on axes fitted to the data. Asserted on the data the
figures carry, not on pixels."""

import dataclasses
import textwrap
from functools import cache

import pytest

from kubetide.autoscaler.scaledown.reasons import NodeReason
from kubetide.sim import Simulation, load_scenario
from kubetide.sim.report.figures import build_comparison_figure, build_figure
from kubetide.sim.report.html import render, render_comparison
from kubetide.sim.report.plotting import fitted_range
from kubetide.sim.report.why import FITS_NO_GROUP, SCALE_UP_BLOCKED, pod_seconds
from kubetide.sweep.compare import Variant, comparison
from kubetide.sweep.grid import Setting

# 45 full nodes; at 10m the web Deployment grows by 21 pods (7 nodes: 52, the group's maximum),
# at 20m by 9 more, which the group at its maximum cannot take; a 64-cpu pod fits no node at all.
SCENARIO = textwrap.dedent(
    """\
    apiVersion: kubetide.io/v1alpha1
    kind: Scenario
    metadata: {name: why}
    spec:
      duration: 1h
      seed: 3
      autoscaler: {scan-interval: 10s, scale-down-unneeded-time: 5m}
      nodeGroups:
        - name: general
          minSize: 1
          maxSize: 52
          initialSize: 45
          price: 0.2
          provisioningDelay: 1m
          readyDelay: 10s
          template:
            status:
              allocatable: {cpu: "4", memory: 16Gi, pods: "110"}
      objects:
        - apiVersion: apps/v1
          kind: Deployment
          metadata: {name: web, namespace: default}
          spec:
            replicas: 135
            selector: {matchLabels: {app: web}}
            template:
              metadata: {labels: {app: web}}
              spec:
                containers:
                  - name: web
                    resources: {requests: {cpu: 1200m, memory: 1Gi}}
        - apiVersion: apps/v1
          kind: Deployment
          metadata: {name: giant, namespace: default}
          spec:
            replicas: 1
            selector: {matchLabels: {app: giant}}
            template:
              metadata: {labels: {app: giant}}
              spec:
                containers:
                  - name: giant
                    resources: {requests: {cpu: "64", memory: 1Gi}}
      events:
        - at: 10m
          scale: {kind: Deployment, namespace: default, name: web, replicas: 156}
        - at: 20m
          scale: {kind: Deployment, namespace: default, name: web, replicas: 165}
    """
)


@cache
def runs(tmp_dir: str) -> list:
    path = f"{tmp_dir}/why.yaml"
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(SCENARIO)
    scenario = load_scenario(path)
    strict = dataclasses.replace(
        scenario, options=dataclasses.replace(scenario.options, scale_down_utilization_threshold=0.7)
    )
    return [("default", Simulation(scenario).run()), ("strict", Simulation(strict).run())]


@pytest.fixture(scope="module")
def compared(tmp_path_factory):
    return runs(str(tmp_path_factory.mktemp("why")))


def test_the_timeline_says_which_pending_pods_fit_no_group_and_which_wait_for_a_limit(compared):
    _, result = compared[0]
    late = [row for row in result.timeline if row["time"] >= 25 * 60]
    assert late and all(row[FITS_NO_GROUP] == 1 for row in late)  # the 64-cpu pod, all along
    assert all(row[SCALE_UP_BLOCKED] == 9 for row in late)  # the group is at its max size, 52
    assert all(row["general_total"] == 52 for row in late)
    # the one pod that fits nowhere waits the whole run, within a loop
    assert pod_seconds(result, FITS_NO_GROUP) == pytest.approx(result.scenario.duration, abs=20)


def test_the_node_axes_fit_the_data_instead_of_starting_at_zero(compared):
    figure = build_comparison_figure(compared)
    layout = figure.layout.to_plotly_json()
    titles = [a["text"] for a in layout["annotations"] if a.get("yref") == "paper" and "Nodes" in a["text"]]
    assert titles[0] == "Nodes (registered)"
    nodes_axis = layout["yaxis"]
    low, high = nodes_axis["range"]
    assert 40 < low < 45 and 52 < high < 56  # 45 to 52 nodes fill the panel
    totals = [t for t in figure.data if t.yaxis == "y" and t.name == "default"]
    assert min(totals[0].y) == 45 and max(totals[0].y) == 52


def test_fitted_ranges():
    assert fitted_range(45, 52, counts=True) == pytest.approx((44.3, 52.7))
    assert fitted_range(1, 1, counts=True) == (0.5, 1.5)  # a flat line mid-panel
    assert fitted_range(0, 10, counts=True) == (0.0, 11.0)  # never below 0 for counts


def test_each_settings_threshold_is_drawn_on_the_utilisation_panel(compared):
    figure = build_comparison_figure(compared)
    lines = [s for s in figure.layout.shapes if s.type == "line" and s.xref.endswith("domain")]
    assert sorted(s.y0 for s in lines) == [50.0, 70.0]
    labels = {a.text for a in figure.layout.annotations}
    assert "default: scale-down-utilization-threshold 0.5" in labels
    assert "strict: scale-down-utilization-threshold 0.7" in labels
    # the least utilised node is drawn beside the cluster's utilisation, per setting
    dotted = [t for t in figure.data if t.hovertemplate and "least utilised node" in t.hovertemplate]
    assert len(dotted) == 2


def test_the_scenario_events_are_marked_across_the_compare_figure(compared):
    figure = build_comparison_figure(compared)
    marks = [s for s in figure.layout.shapes if s.type == "line" and s.yref == "paper"]
    assert sorted(s.x0 for s in marks) == [10.0, 20.0]  # minutes
    texts = [a.text for a in figure.layout.annotations if a.yref == "paper" and a.y == 1.03]
    assert any("web" in text and "156" in text for text in texts)


def test_the_nodes_kept_are_stacked_by_reason_per_setting(compared):
    figure = build_comparison_figure(compared)
    kept = [t for t in figure.data if t.stackgroup and t.stackgroup.startswith("kept-")]
    assert {t.stackgroup for t in kept} == {"kept-default", "kept-strict"}
    assert {t.name for t in kept} <= {str(r) for r in NodeReason}
    # full nodes are kept as not underutilised
    _, result = compared[0]
    underutilised = next(t for t in kept if t.name == "NotUnderutilized" and t.stackgroup == "kept-default")
    assert list(underutilised.y) == [row.get("unremovable_NotUnderutilized", 0) for row in result.timeline]
    assert max(underutilised.y) >= 45


def test_the_compare_page_says_the_waiting_is_a_pod_that_fits_no_group(compared):
    results = [(Variant(name, Setting(())), result) for name, result in compared]
    data = comparison(compared[0][1].scenario, 3, results)
    page = render_comparison(data, [result for _, result in compared])
    assert "of which fit no node group" in page
    assert "are one pod that no node group can take: default/giant-" in page
    assert "nodes kept at the end, by reason" in page
    assert "NotUnderutilized" in page


def test_the_single_report_has_the_same_explanations(compared):
    _, result = compared[0]
    figure = build_figure(result)
    names = {t.name for t in figure.data}
    assert {"pending: fits no node group", "pending: scale-up blocked (limits, backoff)"} <= names
    assert "least utilised node" in names
    assert "NotUnderutilized" in names
    assert [s.y0 for s in figure.layout.shapes if s.type == "line" and s.xref.endswith("domain")] == [50.0]


def test_timeline_csv_has_every_reason_column_and_zero_before_a_reason_appears(compared, tmp_path):
    import csv

    from kubetide.sim.report.output import write_outputs

    _, result = compared[0]
    write_outputs(result, tmp_path, report=False)
    with (tmp_path / "timeline.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    columns = set(rows[0])
    assert {FITS_NO_GROUP, SCALE_UP_BLOCKED, "pending_awaiting_node", "lowest_node_utilization"} <= columns
    reasons = {c for c in columns if c.startswith("unremovable_")}
    assert "unremovable_NotUnderutilized" in reasons
    first = {c: next(i for i, r in enumerate(result.timeline) if c in r) for c in reasons}
    for column, index in first.items():  # rows before the reason's first node say 0, not nothing
        assert all(row[column] == "0" for row in rows[:index])
    assert len(rows) == len(result.timeline)


def test_no_threshold_is_drawn_for_a_setting_without_scale_down(compared):
    (_, default), (_, strict) = compared
    off = dataclasses.replace(
        strict,
        scenario=dataclasses.replace(
            strict.scenario, options=dataclasses.replace(strict.scenario.options, scale_down_enabled=False)
        ),
    )
    figure = build_comparison_figure([("default", default), ("off", off)])
    lines = [s for s in figure.layout.shapes if s.type == "line" and s.xref.endswith("domain")]
    assert [s.y0 for s in lines] == [50.0]
    assert "default: scale-down-utilization-threshold 0.5" in {a.text for a in figure.layout.annotations}


def test_the_pages_name_the_pod_no_group_can_take_and_why(compared):
    _, result = compared[0]
    [(pod, why)] = result.unfit_pods.items()
    assert pod.startswith("default/giant-") and "Insufficient cpu" in why
    results = [(Variant(name, Setting(())), r) for name, r in compared]
    data = comparison(result.scenario, 3, results)
    assert pod in render_comparison(data, [r for _, r in compared])
    page = render(result)
    assert pod in page and "for no group" in page  # the Pending card and the note under the plots
