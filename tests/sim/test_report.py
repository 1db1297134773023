"""report.html (issue 15, item 4): halted and backoff periods shaded, failed scale-ups marked,
events aggregated as kubectl does, integer ticks on count axes."""

import re
from functools import cache
from pathlib import Path

import pytest

from kubetide.sim import Simulation, load_scenario
from kubetide.sim.report import aggregate_events, build_figure, periods, render

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
    return [
        (s["x0"], s["x1"])
        for s in figure["layout"]["shapes"]
        if s["type"] == "rect" and s.get("name") == label
    ]


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
    traces = {t["name"]: t for t in build_figure(result)["data"]}
    failed = [e for e in result.events if e["reason"] == "ScaleUpFailed"]
    assert failed and len(traces["scale-up failed (instances)"]["x"]) == len(failed)
    assert len(traces["scale-up request failed"]["x"]) == sum(
        1 for e in result.events if e["reason"] == "FailedToScaleUpGroup"
    )


def test_count_axes_tick_at_integers():
    layout = build_figure(run("uc4-stockout"))["layout"]
    axes = {key: axis for key, axis in layout.items() if re.fullmatch(r"yaxis\d*", key)}
    counting = {
        key: axis for key, axis in axes.items() if axis["title"]["text"] in ("nodes", "pods", "evictions")
    }
    assert len(counting) == 4  # nodes, pods, drains (nodes) and the drains panel's evictions axis
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
