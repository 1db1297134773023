"""The sweep's report.html (issue 27, item 3): the Pareto front over the trade-offs the settings
differ on (cost, pending pod-seconds, evictions), never a plot of a metric that is the same
everywhere, per-flag effects on those metrics, and numbers with their units. Asserted on the data
the figure carries and on the page's text, over small constructed sweeps."""

from __future__ import annotations

from kubetide.sweep.front import front, varying
from kubetide.sweep.report import build_sweep_figure, format_spread, format_value, render, trade_off_pairs


def _summary(cost: float, pending: float, evictions: int) -> dict:
    return {
        "cost": cost,
        "node_hours": cost * 5,
        "pods": {"pending_pod_seconds": pending, "max_pending": 1 if pending else 0},
        "evictions": evictions,
        "scale_down": {"first_removal_at": 0.0, "last_removal_at": 600.0},
        "disruption": {"below_pdb_minimum_seconds": 0.0, "below_desired_pod_seconds": evictions * 30.0},
    }


def _row(id_: str, flags: dict, cost: float, pending: float, evictions: int) -> dict:
    medians = {
        "cost": cost,
        "node_hours": cost * 5,
        "pending_pod_seconds": pending,
        "max_pending": 1 if pending else 0,
        "evictions": evictions,
        "drain_makespan": 600.0,
        "below_pdb_minimum_seconds": 0.0,
        "below_desired_pod_seconds": evictions * 30.0,
    }
    return {
        "id": id_,
        "label": " ".join(f"{k}={v}" for k, v in flags.items()) or "(scenario's own)",
        "flags": flags,
        "runs": 1,
        "metrics": {k: {"p10": v, "median": v, "p90": v} for k, v in medians.items()},
        "invariant_breaks": [],
    }


# $42 with 142 evictions against $50 with 90: a trade-off only evictions show. Pending is 0 for all.
ROWS = [
    _row("cheap", {"max-drain-parallelism": "10"}, 42.0, 0.0, 142),
    _row("gentle", {"max-drain-parallelism": "1"}, 50.0, 0.0, 90),
    _row("middle", {"max-drain-parallelism": "5"}, 47.0, 0.0, 120),
    _row("worse", {"max-drain-parallelism": "3"}, 51.0, 0.0, 130),  # gentle is cheaper and gentler
]


def _sweep(rows: list[dict]) -> dict:
    grid = {"max-drain-parallelism": [r["flags"]["max-drain-parallelism"] for r in rows]}
    return {
        "scenario": "constructed",
        "simulated_seconds": 3600.0,
        "grid": grid,
        "seeds": [1],
        "scenario_setting": rows[0]["id"],
        "settings": rows,
        "pareto_front": [],
    }


def _runs(rows: list[dict]) -> dict:
    return {
        r["id"]: [
            _summary(
                r["metrics"]["cost"]["median"],
                r["metrics"]["pending_pod_seconds"]["median"],
                r["metrics"]["evictions"]["median"],
            )
        ]
        for r in rows
    }


def test_the_front_is_over_the_metrics_the_settings_differ_on():
    assert varying(ROWS) == ["cost", "evictions"]  # pending is 0 everywhere: not an axis
    assert front(ROWS, ["cost", "evictions"]) == ["cheap", "gentle", "middle"]
    assert front(ROWS, ["cost"]) == ["cheap"]
    assert front(ROWS, []) == ["cheap", "gentle", "middle", "worse"]  # nothing tells them apart


def test_three_varying_metrics_give_every_pair_as_a_trade_off_plot():
    assert trade_off_pairs(["cost", "pending_pod_seconds", "evictions"]) == [
        ("cost", "pending_pod_seconds"),
        ("cost", "evictions"),
        ("pending_pod_seconds", "evictions"),
    ]
    assert trade_off_pairs(["pending_pod_seconds", "evictions"]) == [("pending_pod_seconds", "evictions")]
    assert trade_off_pairs(["cost"]) == []


def test_the_trade_off_plot_carries_the_front_and_no_collapsed_pending_axis():
    figure = build_sweep_figure(_sweep(ROWS), _runs(ROWS))
    starred = next(t for t in figure.data if t.name == "Pareto front")
    assert sorted(zip(starred.x, starred.y, strict=True)) == [(42.0, 142), (47.0, 120), (50.0, 90)]
    others = next(t for t in figure.data if t.name == "other settings")
    assert list(zip(others.x, others.y, strict=True)) == [(51.0, 130)]
    line = next(t for t in figure.data if t.mode == "lines" and t.xaxis == starred.xaxis)
    assert list(line.x) == [42.0, 47.0, 50.0]  # the front joined in cost order
    titles = [a.text for a in figure.layout.annotations]
    assert titles[0].startswith("evictions vs cost ($)")
    assert not any("pending" in title for title in titles)  # the same everywhere: not drawn
    # one effect plot per varying metric for the flag
    assert titles[1:] == ["max-drain-parallelism: cost ($)", "max-drain-parallelism: evictions"]
    effect = next(t for t in figure.data if t.name == "max-drain-parallelism: evictions")
    assert list(effect.x) == ["10", "1", "5", "3"] and list(effect.y) == [142, 90, 120, 130]


def test_one_varying_metric_lists_the_settings_best_first():
    rows = [
        _row("a", {"max-drain-parallelism": "1"}, 50.0, 0.0, 90),
        _row("b", {"max-drain-parallelism": "10"}, 42.0, 0.0, 90),
    ]
    figure = build_sweep_figure(_sweep(rows), _runs(rows))
    settings = next(t for t in figure.data if t.name == "settings")
    assert list(settings.x) == [42.0, 50.0] and list(settings.marker.symbol) == ["star", "circle"]
    assert figure.layout.annotations[0].text.startswith("cost ($) per setting")


def test_numbers_carry_their_units():
    assert format_value("cost", 44.6296) == "$44.63"
    assert format_value("pending_pod_seconds", 29220.0) == "29,220 pod-s"
    assert format_value("node_hours", 197.66) == "197.7 node-h"
    assert format_value("drain_makespan", 3275.0) == "54m35s"
    assert format_spread("cost", {"p10": 44.5323, "median": 44.6296, "p90": 44.727}) == (
        "$44.63",
        "$44.53 to $44.73",
    )
    assert format_spread("evictions", {"p10": 153.0, "median": 153.0, "p90": 153.0}) == ("153", "")


def test_the_page_says_which_metrics_the_front_is_over_and_stars_its_settings():
    page = render(_sweep(ROWS), _runs(ROWS))
    assert "Pareto front over cost ($) and evictions" in page
    assert "the same for every setting: pending pod-seconds 0 pod-s" in page
    assert page.count('title="on the Pareto front"') == 3
    assert "44.6296" not in page and "$42.00" in page


def test_a_front_over_three_metrics_is_starred_but_not_joined():
    rows = [
        _row("a", {"max-drain-parallelism": "1"}, 40.0, 0.0, 150),
        _row("b", {"max-drain-parallelism": "5"}, 38.0, 400.0, 160),
        _row("c", {"max-drain-parallelism": "10"}, 45.0, 800.0, 110),
        _row("d", {"max-drain-parallelism": "20"}, 46.0, 800.0, 120),  # c is better on all three
    ]
    assert varying(rows) == ["cost", "pending_pod_seconds", "evictions"]
    figure = build_sweep_figure(_sweep(rows), _runs(rows))
    starred = [t for t in figure.data if t.name == "Pareto front"]
    assert len(starred) == 3  # one per pair of metrics
    assert {tuple(t.text) for t in starred} == {("1", "5", "10")}
    assert not [t for t in figure.data if t.mode == "lines" and t.line.dash == "dot"]
