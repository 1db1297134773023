"""The sweep's console table: settings named by the flags that differ, numbers with units, 100 columns."""

from rich.console import Console

from kubetide.cli.sweep_table import abbreviate, differing_flags, short_labels, short_names, sweep_table


def test_numbers_are_abbreviated_to_three_figures_with_k_and_m():
    assert [abbreviate(v) for v in (0, 0.514, 31.02, 163.2, 3275, 12670, 1_234_567)] == [
        "0",
        "0.51",
        "31.0",
        "163",
        "3.3k",
        "13k",
        "1.2M",
    ]


def test_flags_are_named_by_their_shortest_unambiguous_tail():
    assert short_names(["scale-down-unneeded-time", "max-drain-parallelism"]) == {
        "scale-down-unneeded-time": "unneeded-time",
        "max-drain-parallelism": "drain-parallelism",
    }
    assert short_names(["scale-down-unneeded-time", "scale-down-unready-time"]) == {
        "scale-down-unneeded-time": "unneeded-time",
        "scale-down-unready-time": "unready-time",
    }
    assert short_names(["scale-down-delay-after-add", "scan-interval", "expander"]) == {
        "scale-down-delay-after-add": "after-add",
        "scan-interval": "scan-interval",
        "expander": "expander",
    }


def _row(ident, flags, cost, evictions, runs=5):
    spread = lambda m, lo, hi: {"median": m, "p10": lo, "p90": hi}  # noqa: E731
    metrics = {
        "cost": spread(cost, cost - 0.2, cost + 0.2),
        "node_hours": spread(163.2, 162.1, 164.4),
        "pending_pod_seconds": spread(0, 0, 0),
        "max_pending": spread(0, 0, 0),
        "evictions": spread(evictions, evictions, evictions),
        "drain_makespan": spread(3275, 3163, 3387),
    }
    return {
        "id": ident,
        "label": " ".join(f"{k}={v}" for k, v in flags.items()),
        "flags": flags,
        "runs": runs,
        "metrics": metrics,
        "invariant_breaks": [],
    }


def _sweep():
    rows = [
        _row(
            f"s{i}",
            {"scale-down-unneeded-time": unneeded, "max-drain-parallelism": parallel, "expander": "random"},
            30.5 + i,
            150 + i,
        )
        for i, (unneeded, parallel) in enumerate(
            (u, p) for u in ("5m", "10m", "20m") for p in ("1", "5", "10")
        )
    ]
    return {"settings": rows, "scenario_setting": "s4"}


def test_only_differing_flags_name_the_settings():
    rows = _sweep()["settings"]
    assert differing_flags(rows) == ["scale-down-unneeded-time", "max-drain-parallelism"]
    assert short_labels(rows)["s0"] == "unneeded-time=5m drain-parallelism=1"


def test_the_table_fits_100_columns_and_says_equal_metrics_once():
    above, table, under = sweep_table(_sweep())
    console = Console(width=100, record=True, color_system=None)
    for line in above:
        console.print(line)
    console.print(table)
    for line in under:
        console.print(line)
    text = console.export_text()
    assert max(len(line.rstrip()) for line in text.splitlines()) <= 100
    header = next(line for line in text.splitlines() if line.startswith("unneeded-time"))
    assert header.split() == ["unneeded-time", "drain-parallelism", "cost", "drain", "evictions", "breaks"]
    assert "expander" not in text  # the same in every setting
    lines = text.splitlines()
    first = lines.index(header) + 1
    assert lines[first].split() == ["5m", "1", "$30.5", "150", "0"]
    assert lines[first + 1].split() == ["($30.3-$30.7)"]
    assert "10m            5 *" in text  # the scenario's own setting
    assert under == [
        "the same for every setting: node-hours 163 [dim](162-164)[/dim], pending pod-s 0, max pending 0, "
        "drain time 55m [dim](53m-56m)[/dim]"
    ]
