"""The sweep's console table: settings named by the flags that differ, numbers with units, 100 columns."""

from rich.console import Console

from kubetide.autoscaler.options import FLAGS, parse_flag, parse_options
from kubetide.cli.sweep_table import (
    abbreviate,
    differing_flags,
    scenario_values,
    short_names,
    sweep_table,
)


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
        "below_pdb_minimum_seconds": spread(0, 0, 0),
        "below_desired_pod_seconds": spread(0, 0, 0),
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


def _printed(above, table, under, width=100) -> list[str]:
    console = Console(width=width, record=True, color_system=None)
    for line in [*above, table, *under]:
        console.print(line)
    return console.export_text().splitlines()


def test_the_table_fits_100_columns_and_says_equal_metrics_once():
    above, table, under = sweep_table(_sweep())
    lines = _printed(above, table, under)
    assert max(len(line.rstrip()) for line in lines) <= 100
    assert "…" not in "\n".join(lines)
    header = next(line for line in lines if line.lstrip().startswith("#"))
    assert header.split() == ["#", "unneeded-time", "drain-parallelism", "cost", "evictions"]
    assert lines[lines.index(header) - 1].split() == ["drain"]  # the headings' first lines
    assert "expander" not in "\n".join(lines)  # the same in every setting
    first = lines.index(header) + 1
    assert lines[first].split() == ["1", "5m", "1", "$30.5", "150"]
    assert lines[first + 1].split() == ["$30.3-30.7"]  # the range writes its unit once
    assert lines[first + 8].split() == ["5*", "10m", "5", "$34.5", "154"]  # the scenario's own
    assert under == [
        "the same for every setting: node-hours 163 [dim](162-164)[/dim], pending pod-s 0, max pending 0, "
        "drain time 55m [dim](53m-56m)[/dim], invariant breaks 0"
    ]


def test_a_setting_that_leaves_a_flag_alone_shows_the_scenarios_value():
    sweep = _sweep()
    baseline = _row("own", {}, 29.5, 140)
    sweep["settings"].insert(0, baseline)
    sweep["scenario_setting"] = "own"
    own_values = {"scale-down-unneeded-time": "7m", "max-drain-parallelism": "10", "expander": "least-waste"}
    lines = _printed(*sweep_table(sweep, own_values))
    header = next(line for line in lines if line.lstrip().startswith("#"))
    assert header.split()[:4] == ["#", "unneeded-time", "drain-parallelism", "expander"]
    baseline_line = lines[lines.index(header) + 1]
    assert baseline_line.split() == ["1*", "7m", "10", "least-waste", "$29.5", "140"]
    assert "scenario's" not in "\n".join(lines)
    assert differing_flags(sweep["settings"], own_values) == [
        "scale-down-unneeded-time",
        "max-drain-parallelism",
        "expander",
    ]


def _wide_sweep(flag_count: int, spread: float):
    """Settings over `flag_count` long-named flags, every metric varying, seeds `spread` apart."""
    names = [
        "scale-down-unneeded-time",
        "max-drain-parallelism",
        "scale-down-utilization-threshold",
        "scale-down-delay-after-add",
    ][:flag_count]
    rows = []
    for index in range(4):
        flags = {name: f"{index + 1}{'m' if name.endswith(('time', 'add')) else ''}" for name in names}
        row = _row(f"s{index}", flags, 1234.5 + index, 1000 + index)
        row["metrics"] = {
            key: {"median": 5000.0 + index, "p10": 4000.0 + index - spread, "p90": 6100.0 + index + spread}
            for key in row["metrics"]
        }
        row["metrics"]["drain_makespan"] = {"median": 500.0 + index, "p10": 401.0, "p90": 599.0 + index}
        row["invariant_breaks"] = [{"invariant": "x", "count": 1, "seed": 1}] * index
        rows.append(row)
    return {"settings": rows, "scenario_setting": "s0"}


def test_layouts_give_up_flag_columns_before_percentiles_and_never_cut_a_cell():
    for flag_count in (1, 2, 3, 4):
        above, table, under = sweep_table(_wide_sweep(flag_count, 0.0))
        lines = _printed(above, table, under)
        text = "\n".join(lines)
        assert max(len(line.rstrip()) for line in lines) <= 100, text
        assert "…" not in text
        assert above[-1] == "each cell: the median over the seeds, the 10th-90th percentile under it"
        assert "6m41s-9m59s" in text and "$4.0k-6.1k" in text
        header = next(line for line in lines if line.lstrip().startswith("#"))
        if flag_count == 1:
            assert header.split()[:2] == ["#", "unneeded-time"]
        else:  # the values side by side, aligned, the flags' order said above
            assert header.split()[:2] == ["#", "setting"]
            assert above[0] == "setting = " + " ".join(_wide_sweep(flag_count, 0.0)["settings"][0]["flags"])
            row = lines[lines.index(header) + 1].split()
            assert row[: flag_count + 1] == ["1*", "1m", "1", "1", "1m"][: flag_count + 1]


def test_percentiles_go_to_a_note_when_no_layout_fits_them():
    above, table, under = sweep_table(_wide_sweep(4, 0.0), width=80)
    lines = _printed(above, table, under, width=80)
    assert max(len(line.rstrip()) for line in lines) <= 80
    assert above[-1] == "each cell: the median over the seeds (their 10th-90th percentiles: report.html)"
    header = next(line for line in lines if line.lstrip().startswith("#"))
    body = lines[lines.index(header) + 1 :]
    assert len(body) == 4  # one line a setting, no percentile under any
    assert body[0].split() == [
        "1*",
        "1m",
        "1",
        "1",
        "1m",
        "$5.0k",
        "5.0k",
        "5.0k",
        "5.0k",
        "5.0k",
        "8m20s",
        "0",
    ]


def test_the_scenarios_values_are_written_as_the_flags_take_them():
    """Every option's value, written back as its flag, parses to the same value (the baseline's row
    shows what the scenario runs with, in the syntax the grid's values use)."""
    options = parse_options(
        {"scale-down-unneeded-time": "1h30m", "expander": "priority,least-waste", "cores-total": "4:64"},
        "test",
        warnings=[],
    )
    values = scenario_values(FLAGS, options)
    for name, field in FLAGS.items():
        if getattr(options, field.name) in ((), ""):
            assert values[name] == "none"  # no flag syntax for an empty list or an unset address
        else:
            assert parse_flag(name, values[name]) == getattr(options, field.name), name
    assert values["scale-down-unneeded-time"] == "1h30m"
    assert values["scale-down-utilization-threshold"] == "0.5"
    assert values["max-drain-parallelism"] == "10"
    assert values["skip-nodes-with-system-pods"] == "true"
    assert values["expander"] == "priority,least-waste" and values["cores-total"] == "4:64"
    # CA flags without an option: a refused flag's inert value, an implemented one's only choice,
    # else no value kubetide keeps
    assert scenario_values(["enable-provisioning-requests", "estimator", "gpu-total"], options) == {
        "enable-provisioning-requests": "false",
        "estimator": "binpacking",
        "gpu-total": "-",
    }
