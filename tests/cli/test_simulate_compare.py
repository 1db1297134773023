"""`simulate --set` and `simulate --compare` / spec.compare (issue 15, item 2)."""

import dataclasses
import json
import re
from pathlib import Path

import pytest
from tiny_scenario import TINY_SCENARIO

from kubetide.autoscaler.options import AutoscalerOptions
from kubetide.cli import main as cli_main
from kubetide.errors import UserError
from kubetide.sim.spec.scenario import CompareEntry
from kubetide.sweep.compare import parse_compare, parse_set

SCENARIO = TINY_SCENARIO + (
    """\
    - at: 12m
      scale: {kind: Deployment, name: web, replicas: 2}
"""
)
RUN_FILES = ("timeline.csv", "events.jsonl", "status.yaml")


def on_scenario_file(monkeypatch, tmp_path, capsys, command: str, *flags: str, default: str):
    """`kubetide COMMAND s.yaml FLAGS... ARGS...` in tmp_path, s.yaml holding `scenario`
    (`default` unless given): (exit code, stdout, stderr)."""
    monkeypatch.setattr(cli_main, "COMMANDS", ("simulate", "sweep"))
    monkeypatch.chdir(tmp_path)

    def run(*args: str, scenario: str = default):
        (tmp_path / "s.yaml").write_text(scenario)
        code = cli_main.main([command, "s.yaml", *flags, *args])
        out, err = capsys.readouterr()
        return code, out, err

    return run


@pytest.fixture
def simulate(monkeypatch, tmp_path, capsys):
    """`kubetide simulate s.yaml ARGS...` of SCENARIO."""
    return on_scenario_file(monkeypatch, tmp_path, capsys, "simulate", default=SCENARIO)


def _without_wall_time(path):
    summary = json.loads(path.read_text())
    summary.pop("wall_seconds")
    return summary


# (the --compare arguments, the --set arguments, for each compared setting: its --set when run alone)
COMPARISONS = [
    (
        ["fast:scale-down-unneeded-time=1m,scale-down-delay-after-add=1m", "own:"],
        [],
        {
            "fast": ["--set", "scale-down-unneeded-time=1m", "--set", "--scale-down-delay-after-add=1m"],
            "own": [],
        },
    ),
    (
        ["slow-scan:scan-interval=30s", "spread:expander=random,least-waste,max-nodes-total=4"],
        ["--set", "--max-node-provision-time=10m"],
        {
            "slow-scan": ["--set", "max-node-provision-time=10m", "--set", "scan-interval=30s"],
            "spread": [
                "--set=max-node-provision-time=10m",
                "--set",
                "expander=random,least-waste",
                "--set",
                "max-nodes-total=4",
            ],
        },
    ),
]


@pytest.mark.parametrize(("compare", "sets", "alone"), COMPARISONS)
def test_each_compared_run_is_the_run_of_its_setting_alone(simulate, tmp_path, compare, sets, alone):
    args = [arg for item in compare for arg in ("--compare", item)]
    code, out, err = simulate(*args, *sets, "--out", "cmp", "--json", "--no-report")
    assert code == 0, err
    printed = json.loads(out)
    assert printed == json.loads((tmp_path / "cmp" / "compare.json").read_text())
    assert [s["name"] for s in printed["settings"]] == list(alone)
    outcomes = set()
    for name, set_args in alone.items():
        code, _, err = simulate(*set_args, "--out", f"alone-{name}", "--no-report")
        assert code == 0, err
        for file in RUN_FILES:
            assert (tmp_path / "cmp" / name / file).read_bytes() == (
                tmp_path / f"alone-{name}" / file
            ).read_bytes()
        compared = _without_wall_time(tmp_path / "cmp" / name / "summary.json")
        assert compared == _without_wall_time(tmp_path / f"alone-{name}" / "summary.json")
        entry = next(s for s in printed["settings"] if s["name"] == name)
        assert entry["metrics"]["cost"] == compared["cost"]
        assert entry["metrics"]["pending_pod_seconds"] == compared["pods"]["pending_pod_seconds"]
        assert entry["metrics"]["drains"] == compared["scale_down"]["drained_removed"]
        outcomes.add((compared["cost"], compared["pods"]["pending_pod_seconds"]))
    assert len(outcomes) == len(alone)  # the settings really differ, so equal files mean something


def test_the_console_shows_one_column_per_setting(simulate, tmp_path):
    code, out, err = simulate(
        "--compare", "fast:scale-down-unneeded-time=1m", "--compare", "own:", "--out", "cmp"
    )
    assert code == 0, err
    header = next(line for line in out.splitlines() if "fast" in line and "own" in line)
    assert header.split() == ["fast", "own"]
    for row in (
        "cost",
        "node-hours",
        "pending pod-seconds",
        "max pending",
        "drain evictions",
        "drains",
        "invariants",
    ):
        assert any(line.strip().startswith(row) for line in out.splitlines()), row
    assert "all held" in out
    page = (tmp_path / "cmp" / "report.html").read_text()
    # ONE report with the runs overlaid, in one plot (and the disruption ledger's bars, if any)
    assert page.count('class="plotly-graph-div"') == 1 + ('id="disruption-bars"' in page)
    for name in ("fast", "own"):
        # the setting's traces share its legend entry: nodes, pending (and those fitting no group),
        # cpu utilisation (and the least utilised node), drains, evictions, cost
        assert len(re.findall(rf'"legendgroup":"{name}"', page)) == 8
        assert not (tmp_path / "cmp" / name / "report.html").exists()


def test_spec_compare_in_the_scenario(simulate, tmp_path):
    scenario = SCENARIO + (
        "  compare:\n    - {name: quick, autoscaler: {scale-down-unneeded-time: 1m}}\n    - {name: default}\n"
    )
    code, out, err = simulate("--out", "cmp", "--json", "--no-report", scenario=scenario)
    assert code == 0, err
    assert [(s["name"], s["flags"]) for s in json.loads(out)["settings"]] == [
        ("quick", {"scale-down-unneeded-time": "1m"}),
        ("default", {}),
    ]
    # --compare replaces the scenario's; --no-compare runs the scenario once
    code, out, err = simulate(
        "--out", "cli", "--json", "--no-report", "--compare", "x:scan-interval=20s", scenario=scenario
    )
    assert code == 0 and [s["name"] for s in json.loads(out)["settings"]] == ["x"]
    code, out, err = simulate("--out", "once", "--json", "--no-report", "--no-compare", scenario=scenario)
    assert (
        code == 0 and json.loads(out)["scenario"] == "tiny" and (tmp_path / "once" / "summary.json").exists()
    )
    assert (tmp_path / "cmp" / "default" / "timeline.csv").read_bytes() == (
        tmp_path / "once" / "timeline.csv"
    ).read_bytes()


@pytest.mark.parametrize(
    ("args", "scenario_extra", "expected"),
    [
        (
            ["--set", "scan-intervl=20s"],
            "",
            "--set scan-intervl=20s: unknown flag (did you mean scan-interval?)",
        ),
        (
            ["--set", "--scan-intervl=20s"],
            "",
            "--set scan-intervl=20s: unknown flag (did you mean scan-interval?)",
        ),
        (["--set", "scan-interval=soon"], "", '--set scan-interval=soon: invalid duration "soon"'),
        (["--set", "scan-interval=0"], "", "--set scan-interval=0: must be at least 1s"),
        (["--set", "scan-interval"], "", "--set scan-interval: expected FLAG=VALUE"),
        (["--set", "=5m"], "", "--set =5m: expected FLAG=VALUE"),
        (
            ["--compare", "a:scale-down-unneded-time=1m"],
            "",
            "--compare a:scale-down-unneded-time=1m: unknown flag (did you mean scale-down-unneeded-time?)",
        ),
        (["--compare", "a:expander=biggest"], "", "--compare a:expander=biggest:"),
        (["--compare", "a"], "", "--compare a: expected NAME:FLAG=VALUE,..."),
        (
            ["--compare", "a/b:scan-interval=5s"],
            "",
            "--compare a/b:scan-interval=5s: expected NAME:FLAG=VALUE",
        ),
        (["--compare", "a:scan-interval"], "", "--compare a:scan-interval: expected FLAG=VALUE"),
        (["--compare", "report.html:"], "", "--compare report.html:: expected NAME:FLAG=VALUE"),
        ([], "  compare:\n    - {name: compare.json}\n", "s.yaml: spec.compare[0].name: "),
        (["--compare", "a:", "--compare", "a:scan-interval=5s"], "", "--compare a: the name is given twice"),
        (["--compare", "a:", "--no-compare"], "", "--compare: not with --no-compare"),
        (["--compare", "a:", "--no-autoscaler"], "", "--compare: not with --no-autoscaler"),
        (
            [],
            "  compare:\n    - {name: a, autoscaler: {scan-intervl: 5s}}\n",
            "s.yaml: spec.compare[0].autoscaler.scan-intervl: unknown flag (did you mean scan-interval?)",
        ),
        (
            [],
            "  compare:\n    - {name: a}\n    - {name: a}\n",
            's.yaml: spec.compare[1].name: duplicate name "a"',
        ),
        (
            [],
            "  compare:\n    - {name: a, qos: {precise: false}}\n",
            "s.yaml: spec.compare[0].qos: needs spec.qos",
        ),
        ([], "  compare:\n    - {name: a, autoscalr: {}}\n", "s.yaml: spec.compare[0].autoscalr"),
    ],
)
def test_bad_settings_are_one_line_before_any_work(simulate, tmp_path, args, scenario_extra, expected):
    code, out, err = simulate(*args, "--no-report", scenario=SCENARIO + scenario_extra)
    assert code == 2 and out == "", err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.removeprefix("kubetide: error: ").startswith(expected), err
    assert not (tmp_path / "kubetide-out").exists()  # refused before any work


@pytest.mark.parametrize(
    ("items", "expected"),
    [
        ([], {}),
        (["scan-interval=20s"], {"scan_interval": 20.0}),
        (["--scan-interval=20s"], {"scan_interval": 20.0}),
        (["scan-interval=20s", "scan-interval=30s"], {"scan_interval": 30.0}),  # the last one wins
        (
            ["scale-down-enabled=false", " max-nodes-total = 7 "],
            {"scale_down_enabled": False, "max_nodes_total": 7},
        ),
        (["expander=priority,least-waste"], {"expander": ("priority", "least-waste")}),
    ],
)
def test_set_is_parsed_as_spec_autoscaler_is(items, expected):
    base = AutoscalerOptions()
    options = parse_set(items, base).options(base)
    for attribute, value in expected.items():
        assert getattr(options, attribute) == value
    changed = {f for f in vars(base) if getattr(options, f) != getattr(base, f)}
    assert changed == set(expected)


@pytest.mark.parametrize(
    ("item", "name", "flags"),
    [
        ("own:", "own", ()),
        ("a:scan-interval=5s", "a", (("scan-interval", "5s"),)),
        (
            "b_2:expander=priority,least-waste,max-nodes-total=9",
            "b_2",
            (("expander", "priority,least-waste"), ("max-nodes-total", "9")),
        ),
        (
            "c:--scan-interval=5s, --new-pod-scale-up-delay=5s",
            "c",
            (("scan-interval", "5s"), ("new-pod-scale-up-delay", "5s")),
        ),
    ],
)
def test_compare_items(item, name, flags):
    (variant,) = parse_compare([item], AutoscalerOptions())
    assert (variant.name, variant.setting.flags) == (name, flags)


def test_compare_checks_flags_over_the_base():
    with pytest.raises(UserError, match="max-nodes-total=-1"):
        parse_compare(["a:max-nodes-total=-1"], AutoscalerOptions())


def test_compared_runs_in_parallel_are_the_runs_in_this_process(simulate, tmp_path):
    compare = ["--compare", "fast:scale-down-unneeded-time=1m", "--compare", "own:", "--no-report"]
    for workers in ("1", "2"):
        code, _, err = simulate(*compare, "--workers", workers, "--out", f"w{workers}", "--json")
        assert code == 0, err
    assert json.loads((tmp_path / "w1" / "compare.json").read_text()) == json.loads(
        (tmp_path / "w2" / "compare.json").read_text()
    )
    for name in ("fast", "own"):
        for file in RUN_FILES:
            assert (tmp_path / "w1" / name / file).read_bytes() == (
                tmp_path / "w2" / name / file
            ).read_bytes()


def test_runs_go_to_the_engine_one_task_per_setting(tmp_path):
    import yaml

    from kubetide.sim.spec.scenario import parse_scenario
    from kubetide.sweep.compare import run_variants
    from kubetide.sweep.engines import LocalEngine

    scenario = parse_scenario(yaml.safe_load(SCENARIO), "s.yaml", tmp_path)
    variants = parse_compare(["a:scan-interval=30s", "b:", "c:scale-down-unneeded-time=1m"], scenario.options)
    mapped = []

    class Recording(LocalEngine):
        def map(self, function, shared, items):
            items = list(items)
            mapped.append(items)
            return reversed(list(super().map(function, shared, items)))  # finished in another order

    results = run_variants(scenario, None, variants, tmp_path, Recording(1))
    assert mapped == [variants]
    assert [variant.name for variant, _ in results] == ["a", "b", "c"]  # back in the settings' order
    assert results[0][1].scenario.options.scan_interval == 30  # the scenario the run ran
    assert all((tmp_path / name / "summary.json").exists() for name in ("a", "b", "c"))


@pytest.mark.parametrize("workers", ["0", "-2"])
def test_workers_below_one_is_one_line(simulate, tmp_path, workers):
    code, out, err = simulate("--compare", "a:", "--workers", workers)
    assert code == 2 and out == "" and err.count("\n") == 1
    assert f"--workers {workers}: must be at least 1" in err


def test_workers_without_a_comparison_says_it_does_nothing(simulate, tmp_path):
    code, _, err = simulate("--workers", "2", "--json")
    assert code == 0
    assert "kubetide: warning: --workers: one run, nothing to run in parallel" in err


# -- kubetide sweep over a scenario with spec.compare --------------------------------------------------

COMPARED = SCENARIO + (
    "  compare:\n"
    "    - {name: capped, autoscaler: {max-nodes-total: 4, scale-down-enabled: false}}\n"
    "    - {name: quick, autoscaler: {scale-down-unneeded-time: 1m}}\n"
)


@pytest.fixture
def sweep(monkeypatch, tmp_path, capsys):
    """`kubetide sweep s.yaml --workers 1 --seed-list 4 ARGS...` of COMPARED."""
    flags = ("--workers", "1", "--seed-list", "4")
    return on_scenario_file(monkeypatch, tmp_path, capsys, "sweep", *flags, default=COMPARED)


def test_a_sweep_runs_the_scenarios_compared_settings(sweep, simulate, tmp_path):
    code, out, err = sweep("--json", "--out", "sw")
    assert code == 0, err
    settings = {s["label"]: s for s in json.loads(out)["settings"]}
    # each entry's flags (as text, like --grid's) and the scenario's own setting as the baseline
    assert [s["flags"] for s in settings.values()] == [
        {},
        {"max-nodes-total": "4", "scale-down-enabled": "false"},
        {"scale-down-unneeded-time": "1m"},
    ]
    # each is the run simulate --compare makes of that entry, with the same seed
    code, _, err = simulate("--out", "cmp", "--json", "--no-report", scenario=COMPARED)
    assert code == 0, err
    compared = json.loads((tmp_path / "cmp" / "compare.json").read_text())
    for entry in compared["settings"]:
        swept = next(s for s in settings.values() if s["flags"] == entry["flags"])
        assert swept["metrics"]["cost"]["median"] == entry["metrics"]["cost"]
    assert compared["settings"][0]["flags"] == {"max-nodes-total": "4", "scale-down-enabled": "false"}


def test_a_sweep_refuses_a_grid_beside_spec_compare_in_one_line(sweep, tmp_path):
    code, out, err = sweep("--grid", "scan-interval=5s,20s")
    assert code == 2 and out == "" and err.count("\n") == 1, err
    assert err == (
        "kubetide: error: --grid: s.yaml has spec.compare (2 settings); a sweep runs either those "
        "(without --grid) or the grid (add --no-compare)\n"
    )
    assert not (tmp_path / "kubetide-out").exists()


def test_a_sweep_refuses_the_qos_modes_of_a_comparison(sweep, tmp_path):
    from kubetide.sim.spec.scenario import load_scenario
    from kubetide.sweep.compare import sweep_settings

    example = load_scenario(Path(__file__).resolve().parents[2] / "examples" / "qos-watermark.yaml")
    with pytest.raises(
        UserError, match=r"qos-watermark.yaml: spec.qos.compare: a sweep varies autoscaler flags"
    ):
        sweep_settings(example, {}, no_compare=False)
    assert sweep_settings(example, {}, no_compare=True) is None  # --no-compare: the grid, as before
    qos_entry = dataclasses.replace(
        example,
        qos=dataclasses.replace(example.qos, compare=False),
        compare=[CompareEntry("own", {}, None), CompareEntry("all", {}, False)],
    )
    with pytest.raises(UserError, match=r"spec.compare\[1\].qos: a sweep varies autoscaler flags only"):
        sweep_settings(qos_entry, {}, no_compare=False)


def test_no_compare_sweeps_the_grid(sweep):
    code, out, err = sweep("--grid", "scan-interval=5s,20s", "--no-compare", "--json", "--out", "sw")
    assert code == 0, err
    assert [s["flags"] for s in json.loads(out)["settings"]] == [
        {},
        {"scan-interval": "5s"},
        {"scan-interval": "20s"},
    ]


def test_spec_compare_flags_read_as_the_same_text_on_the_command_line():
    """YAML numbers, booleans and lists in spec.compare give the options their text gives."""
    from kubetide.sweep.compare import _entry_setting

    entry = CompareEntry(
        "x", {"max-nodes-total": 4, "scale-down-enabled": False, "expander": ["priority", "random"]}, None
    )
    base = AutoscalerOptions()
    setting = _entry_setting(entry)
    assert setting.flags == (
        ("max-nodes-total", "4"),
        ("scale-down-enabled", "false"),
        ("expander", "priority,random"),
    )
    assert setting.options(base) == parse_set(
        ["max-nodes-total=4", "scale-down-enabled=false", "expander=priority,random"], base
    ).options(base)


@pytest.mark.parametrize("workers", [1, 2])
def test_each_runs_progress_reaches_this_process(tmp_path, workers):
    """The progress bars' feed: every setting's simulated time, from the worker it runs in."""
    import yaml

    from kubetide.sim.spec.scenario import parse_scenario
    from kubetide.sweep.compare import run_variants
    from kubetide.sweep.engines import LocalEngine

    scenario = parse_scenario(yaml.safe_load(SCENARIO), "s.yaml", tmp_path)
    variants = parse_compare(["a:scan-interval=30s", "b:"], scenario.options)
    seen: dict[str, list[float]] = {}
    run_variants(
        scenario,
        None,
        variants,
        tmp_path,
        LocalEngine(workers),
        on_progress=lambda name, elapsed: seen.setdefault(name, []).append(elapsed),
    )
    assert set(seen) == {"a", "b"}
    for updates in seen.values():
        assert updates == sorted(updates) and len(updates) > 10
        assert updates[-1] == scenario.duration


# -- approximated and infrastructure flags are said, as `plan --set` says them ----------------------

APPROXIMATED = "approximated: a Ready node with the taint counts as not started"
INFRASTRUCTURE = "ignored, an infrastructure flag: the API server connection"


def _warnings(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("kubetide: warning: ")]


def test_set_says_approximated_and_infrastructure_flags(simulate):
    code, _, err = simulate(
        "--set", "startup-taint=example.com/booting", "--set", "kubeconfig=/x", "--json", "--no-report"
    )
    assert code == 0, err
    said = _warnings(err)
    assert len(said) == 2
    assert said[0].startswith(f"kubetide: warning: --set startup-taint: {APPROXIMATED}")
    assert said[1].startswith(f"kubetide: warning: --set kubeconfig: {INFRASTRUCTURE}")


def test_compare_says_each_flags_warning_once_whichever_settings_give_it(simulate):
    code, _, err = simulate(
        "--compare",
        "a:startup-taint=x,scan-interval=20s",
        "--compare",
        "b:startup-taint=y",
        "--json",
        "--no-report",
    )
    assert code == 0, err
    (said,) = _warnings(err)
    assert said.startswith(f"kubetide: warning: --compare a:startup-taint: {APPROXIMATED}")


def test_a_grid_says_each_flags_warning_once_not_once_per_value_or_run(sweep, tmp_path):
    code, _, err = sweep(
        "--no-compare",
        "--grid",
        "startup-taint=x,y",
        "--grid",
        "kubeconfig=/a,/b",
        "--json",
        scenario=SCENARIO,
    )
    assert code == 0, err
    said = _warnings(err)
    assert len(said) == 2
    assert said[0].startswith(f"kubetide: warning: --grid startup-taint: {APPROXIMATED}")
    assert said[1].startswith(f"kubetide: warning: --grid kubeconfig: {INFRASTRUCTURE}")


def test_implemented_flags_are_not_warned_of(simulate, sweep):
    code, _, err = simulate("--set", "scan-interval=20s", "--json", "--no-report")
    assert code == 0 and _warnings(err) == []
    code, _, err = sweep("--no-compare", "--grid", "scan-interval=10s,20s", "--json", scenario=SCENARIO)
    assert code == 0 and _warnings(err) == []


# Five settings whose flags, written out, are far wider than 100 columns; two names share initials.
FIVE = {
    "a": {"scale-down-unneeded-time": "5m", "scale-down-budget-wait-keeps-unneeded-time": "false"},
    "bb": {"scale-down-unneeded-time": "7m", "scale-down-delay-after-add": "3m"},
    "c": {"scale-down-utilization-threshold": "0.6", "max-graceful-termination-sec": "45"},
    "d": {},
    "e": {"expander": "priority,least-waste"},
}


def test_the_compare_console_at_100_columns_abbreviates_flag_names_never_values(simulate, monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")
    args = []
    for name, flags in FIVE.items():
        args += ["--compare", f"{name}:" + ",".join(f"{k}={v}" for k, v in flags.items())]
    code, out, err = simulate(*args, "--workers", "1", "--no-report", "--duration", "6m")
    assert code == 0, err
    lines = out.splitlines()
    assert max(len(line) for line in lines) <= 100
    assert "…" not in out
    start = next(i for i, line in enumerate(lines) if line.startswith("flags:"))
    table = "\n".join(lines[:start])
    said = " ".join(" ".join(lines[start:]).split()).removeprefix("flags: ").split(" wrote ")[0]
    key = dict(pair.split(" = ") for pair in said.split(", "))
    names = {name: short for short, name in key.items()}
    cells = table.split()
    for flags in FIVE.values():
        for flag, value in flags.items():
            # every value whole (a list broken after its commas), its flag's name abbreviated
            first, *rest = value.split(",")
            assert f"{names.get(flag, flag)}={first}" + ("," if rest else "") in cells
            assert all(piece in cells for piece in rest)
    assert names["scale-down-unneeded-time"] != names["scale-down-utilization-threshold"]
    for row in ("nodes final", "last removal", "pending p99", "below PDB minimum", "below desired pod-s"):
        assert any(line.startswith(row) for line in lines), row


@pytest.mark.parametrize(
    ("names", "expected"),
    [
        (["scale-down-unneeded-time"], {"scale-down-unneeded-time": "sdut"}),
        (
            ["scale-down-unneeded-time", "scale-down-utilization-threshold"],
            {"scale-down-unneeded-time": "sdut1", "scale-down-utilization-threshold": "sdut2"},
        ),
        (["expander"], {"expander": "e"}),
        (["ok"], {"ok": "o"}),
        (["a"], {}),  # no shorter than its initials: stays whole
        (["max-nodes-total", "max-nodes-total"], {"max-nodes-total": "mnt"}),
    ],
)
def test_flag_abbreviations(names, expected):
    from kubetide.cli.simulate import flag_abbreviations

    assert flag_abbreviations(names) == expected


def test_each_compared_example_says_which_rows_to_read():
    """An example that compares settings names, in its header, the console rows that show its
    point, and each is a row the console prints."""
    from kubetide.sim.report.columns import METRICS

    rows = {heading for _, heading, _ in METRICS} | {"QoS agent evictions", "QoS agent throttles"}
    examples = Path(__file__).parents[2] / "examples"
    compared = [
        path for path in sorted(examples.glob("*.yaml")) if re.search(r"^\s+compare:", path.read_text(), re.M)
    ]
    assert len(compared) >= 4
    for path in compared:
        header = [line for line in path.read_text().splitlines() if line.startswith("#")]
        said = [line for line in header if line.startswith("# Rows to read: ")]
        assert len(said) == 1, path.name
        named = re.findall(r'"([^"]+)"', said[0])
        assert named and set(named) <= rows, (path.name, named)
