"""report.html (issue 15, item 4): halted and backoff periods shaded, failed scale-ups marked,
events aggregated as kubectl does, integer ticks on count axes; every figure plotly's objects in
the one look of sim/report/plotting.py."""

import dataclasses
import re
from functools import cache
from pathlib import Path

import plotly.graph_objects as go
import pytest

from kubetide.sim import Simulation, load_scenario
from kubetide.sim.report.figures import (
    build_comparison_figure,
    build_figure,
    build_qos_comparison_figure,
    build_qos_figure,
    periods,
)
from kubetide.sim.report.html import aggregate_events, render, render_comparison
from kubetide.sim.report.plotting import TEMPLATE

UNREADY = Path(__file__).resolve().parents[2] / "examples" / "unready"
HALTED = "autoscaler halted: cluster unhealthy"
BACKOFF = "scale-up held back: node group backoff"


@cache
def run(example: str):
    return Simulation(load_scenario(UNREADY / f"{example}.yaml")).run()


def _event(time, reason="ClusterUnhealthy", message="cluster unhealthy", obj="ConfigMap/kube-system/status"):
    return {
        "time": time,
        "source": "cluster-autoscaler",
        "type": "Warning",
        "reason": reason,
        "object": obj,
        "message": message,
    }


@pytest.mark.parametrize(
    ("events", "marker", "expected"),
    [
        ([], "", []),
        ([_event(300)], "", [(300, 310)]),
        ([_event(300), _event(310), _event(320)], "", [(300, 330)]),  # consecutive loops: one period
        ([_event(300), _event(310), _event(400)], "", [(300, 320), (400, 410)]),
        ([_event(300), _event(305)], "", [(300, 315)]),  # overlapping
        ([_event(300, reason="ScaleDown")], "", []),
        (
            [
                _event(
                    50, "NotTriggerScaleUp", "pod didn't trigger scale-up: 2 in backoff after failed scale-up"
                ),
                _event(
                    50, "NotTriggerScaleUp", "pod didn't trigger scale-up: 2 in backoff after failed scale-up"
                ),
                _event(60, "NotTriggerScaleUp", "pod didn't trigger scale-up: 1 max node group size reached"),
            ],
            "backoff",
            [(50, 60)],
        ),
    ],
)
def test_periods(events, marker, expected):
    reason = events[0]["reason"] if events and marker else "ClusterUnhealthy"
    assert periods(events, reason, marker, 10.0) == expected


@pytest.mark.parametrize(
    ("events", "expected"),
    [
        ([], []),
        # 90 identical rows become one, with its count and first and last seen
        (
            [_event(t) for t in range(300, 1200, 10)],
            [("ClusterUnhealthy", "ConfigMap/kube-system/status", 90, 300, 1190)],
        ),
        # another object or reason is another row, in order of first appearance; latest message kept
        (
            [
                _event(10, "TriggeredScaleUp", "up 1", "Pod/default/a"),
                _event(20, "TriggeredScaleUp", "up 2", "Pod/default/b"),
                _event(30, "TriggeredScaleUp", "up 3", "Pod/default/a"),
                _event(40, "NotTriggerScaleUp", "no", "Pod/default/a"),
            ],
            [
                ("TriggeredScaleUp", "Pod/default/a", 2, 10, 30),
                ("TriggeredScaleUp", "Pod/default/b", 1, 20, 20),
                ("NotTriggerScaleUp", "Pod/default/a", 1, 40, 40),
            ],
        ),
    ],
)
def test_events_are_aggregated_as_kubectl_does(events, expected):
    rows = aggregate_events(events)
    assert [(r["reason"], r["object"], r["count"], r["first"], r["last"]) for r in rows] == expected
    if len(events) == 4:
        assert rows[0]["message"] == "up 3"


def _shaded(figure, label):
    return [(s.x0, s.x1) for s in figure.layout.shapes if s.type == "rect" and s.name == label]


@pytest.mark.parametrize(
    ("example", "label", "reason"),
    [
        ("uc8-zone-outage", HALTED, "ClusterUnhealthy"),  # the loop halts while a zone is NotReady
        ("uc4-stockout", BACKOFF, "NotTriggerScaleUp"),  # the stocked-out group backs off
    ],
)
def test_halted_and_backoff_periods_are_shaded(example, label, reason):
    result = run(example)
    figure = build_figure(result)
    shaded = _shaded(figure, label)
    assert shaded, f"no {label!r} period shaded"
    times = [
        e["time"]
        for e in result.events
        if e["reason"] == reason and (label == HALTED or "backoff" in e["message"])
    ]
    scale = 60.0  # minutes on the axis of a run under 2 hours
    assert shaded[0][0] == min(times) / scale
    assert shaded[-1][1] == (max(times) + result.scenario.options.scan_interval) / scale
    assert label in render(result)


def test_a_healthy_run_shades_nothing():
    figure = build_figure(run("uc1-slow-provisioning"))
    assert not _shaded(figure, HALTED) and not _shaded(figure, BACKOFF)


def test_failed_scale_ups_are_marked():
    result = run("uc4-stockout")
    traces = {t.name: t for t in build_figure(result).data}
    failed = [e for e in result.events if e["reason"] == "ScaleUpFailed"]
    assert failed and len(traces["scale-up failed (instances)"].x) == len(failed)
    assert len(traces["scale-up request failed"].x) == sum(
        1 for e in result.events if e["reason"] == "FailedToScaleUpGroup"
    )


def test_count_axes_tick_at_integers():
    layout = build_figure(run("uc4-stockout")).layout.to_plotly_json()
    axes = {key: axis for key, axis in layout.items() if re.fullmatch(r"yaxis\d*", key)}
    counting = {
        key: axis for key, axis in axes.items() if axis["title"]["text"] in ("nodes", "pods", "evictions")
    }
    # nodes, pods, nodes kept (by reason), drains (nodes) and the drains panel's evictions axis
    assert len(counting) == 5
    assert all(axis["tickformat"] == ",d" for axis in counting.values())
    # no drains and no evictions in this run: a step of 1, not plotly's 0.2
    drains = [axis for axis in counting.values() if axis.get("side") == "right"]
    assert drains and all(axis["dtick"] == 1 for axis in drains)
    cost = next(axis for axis in axes.values() if axis["title"]["text"] == "$")
    assert "tickformat" not in cost


def test_the_events_table_has_one_row_per_repeated_event():
    page = render(run("uc8-zone-outage"))
    table = page[page.index("Decisions and scenario events") :]
    assert table.count(">ClusterUnhealthy<") == 1
    assert re.search(r'<td class="n">120</td><td>cluster-autoscaler</td><td>ClusterUnhealthy</td>', table)


# -- the node QoS agent's section, and the compare report ------------------------------------------

QOS_EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "qos-watermark.yaml"


@cache
def qos_run(precise: bool = True):
    scenario = load_scenario(QOS_EXAMPLE)
    qos = dataclasses.replace(scenario.qos, precise=precise, compare=False)
    return Simulation(dataclasses.replace(scenario, qos=qos)).run()


def test_the_qos_figure_has_the_watermarks_and_integer_counts():
    result = qos_run()
    figure = build_qos_figure(result)
    traces = {t.name: t for t in figure.data}
    assert list(traces["cpu (hottest node)"].y) == [row["qos_peak_cpu_pct"] for row in result.timeline]
    assert list(traces["nodes over a watermark"].y) == [
        row["qos_nodes_over_watermark"] for row in result.timeline
    ]
    assert traces["evictions (cumulative)"].y[-1] == result.summary["qos"]["evictions"]
    assert traces["evictions (cumulative)"].yaxis != traces["nodes over a watermark"].yaxis
    (line,) = figure.layout.shapes
    assert (line.y0, line.y1, line.yref) == (80.0, 80.0, traces["cpu (hottest node)"].yaxis)
    counting = [
        figure.layout[f"yaxis{t.yaxis[1:]}"] for t in traces.values() if t.name != "cpu (hottest node)"
    ]
    assert all(axis.tickformat == ",d" for axis in counting)  # nodes and actions: integers


def test_every_figure_is_plotly_objects_in_the_one_look():
    halted, healthy = run("uc8-zone-outage"), run("uc1-slow-provisioning")
    runs = [("precise", qos_run(True)), ("all", qos_run(False))]
    figures = [
        build_figure(halted),
        build_qos_figure(qos_run()),
        build_comparison_figure([("halts", halted), ("healthy", healthy)]),
        build_qos_comparison_figure(runs),
    ]
    for figure in figures:
        assert isinstance(figure, go.Figure)
        assert figure.layout.template == TEMPLATE
    page = render(qos_run())
    # The run's figure and the agent's (counted by their divs: plotly.js itself names newPlot too
    # in some releases).
    assert page.count('class="plotly-graph-div"') == 2
    assert 'id="timeline"' in page and 'id="qos"' in page
    assert page.count("plotly.js v") == 1  # plotly.js inlined once


def test_text_from_the_scenario_cannot_close_the_script_element():
    from kubetide.sweep.compare import metrics as compared_metrics

    scenario = load_scenario(UNREADY / "uc1-slow-provisioning.yaml")
    hostile = dataclasses.replace(scenario, name="</script><b>x</b>", description="<!-- & -->")
    result = Simulation(hostile).run()
    comparison = {
        "seed": result.summary["seed"],
        "settings": [{"name": "</script>", "flags": {}, "metrics": compared_metrics(result.summary)}],
    }
    for page in (render(result), render_comparison(comparison, [result])):
        assert "</script><b>" not in page and "<!-- & -->" not in page
        assert page.count("</script>") == page.count("<script")


def test_the_compare_report_overlays_the_qos_series():
    runs = [("precise", qos_run(True)), ("all", qos_run(False))]
    figure = build_qos_comparison_figure(runs)
    titles = [a.text for a in figure.layout.annotations if a.yref == "paper"]
    assert titles == [
        "Hottest node: cpu usage / capacity",
        "Nodes over a watermark",
        "QoS agent evictions (cumulative)",
    ]
    for name, result in runs:
        traces = [t for t in figure.data if t.name == name]
        assert [list(t.y) for t in traces] == [
            [row[column] for row in result.timeline]
            for column in ("qos_peak_cpu_pct", "qos_nodes_over_watermark", "qos_evictions_total")
        ]
    assert [s.y0 for s in figure.layout.shapes] == [80.0]


def test_the_compare_report_shades_each_settings_periods_in_its_colour():
    halted, healthy = run("uc8-zone-outage"), run("uc1-slow-provisioning")
    figure = build_comparison_figure([("halts", halted), ("healthy", healthy)])
    shapes = [s for s in figure.layout.shapes if s.type == "rect"]  # not the events, the threshold
    assert shapes and {s.legendgroup for s in shapes} == {"halts"}
    colour = next(t.line.color for t in figure.data if t.name == "halts")
    assert {s.fillcolor for s in shapes} == {colour}
    step = halted.scenario.options.scan_interval
    expected = periods(halted.events, "ClusterUnhealthy", "", step)
    assert expected and [(s.x0, s.x1) for s in shapes] == [(a / 60, b / 60) for a, b in expected]
