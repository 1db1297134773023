"""Bad scenarios and flags the fuzz campaign (issue 13) found: each is one line on stderr naming
the file and the field, exit code 2, before the simulation starts (tracebacks, hangs and silent
accepts before)."""

import pytest
from tiny_scenario import TINY_SCENARIO

from kubetide.cli import main as cli_main
from kubetide.sim.spec.limits import DEFAULT_LIMITS

DEPLOYMENT = TINY_SCENARIO[
    TINY_SCENARIO.index("    - apiVersion: apps/v1") : TINY_SCENARIO.index("  events:")
]


@pytest.fixture
def simulate(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(cli_main, "COMMANDS", ("simulate",))
    monkeypatch.chdir(tmp_path)

    def run(text: str, *flags: str) -> str:
        (tmp_path / "s.yaml").write_text(text)
        code = cli_main.main(["simulate", "s.yaml", "--no-report", *flags])
        out, err = capsys.readouterr()
        assert code == 2 and out == "", err
        assert err.count("\n") == 1 and err.startswith("kubetide: error: ") and "Traceback" not in err
        assert not (tmp_path / "kubetide-out").exists()  # refused before any work
        return err.removeprefix("kubetide: error: ").strip()

    return run


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        # hangs: the loop re-armed at one simulated instant forever
        (
            "scan-interval: 10s",
            "scan-interval: 0",
            "s.yaml: spec.autoscaler.scan-interval: must be at least 1s",
        ),
        ("scan-interval: 10s", "scan-interval: 1ns", "spec.autoscaler.scan-interval: must be at least 1s"),
        ("scan-interval: 10s", "scan-interval: 1us", "spec.autoscaler.scan-interval: must be at least 1s"),
        ("scan-interval: 10s", "scan-interval: .inf", "spec.autoscaler.scan-interval: invalid duration"),
        ("scan-interval: 10s", "scale-down-utilization-threshold: .nan", "expected a number"),
        ("scan-interval: 10s", "scale-down-utilization-threshold: " + "9" * 400, "expected a number"),
        ("scan-interval: 10s", "max-graceful-termination-sec: " + "9" * 30, "out of range (int64)"),
        # hangs: sizes the simulator cannot run
        (
            "maxSize: 5",
            "maxSize: 1000000000000000000",
            "s.yaml: spec.nodeGroups[0].maxSize: 1,000,000,000,000,000,000 nodes, more than the simulator's "
            f"nodes limit of {DEFAULT_LIMITS.nodes:,} (lift it with --limit nodes=N)",
        ),
        (
            "replicas: 3",
            "replicas: 1000000000",
            "s.yaml: spec.objects[0]: Deployment web: spec.replicas: 1,000,000,000 pods, more than the "
            f"simulator's replicas limit of {DEFAULT_LIMITS.replicas:,} (lift it with --limit replicas=N)",
        ),
        (
            "replicas: 12",
            "replicas: 1000000000",
            "spec.events[0].scale.replicas: 1,000,000,000 pods, more than the simulator's replicas limit",
        ),
        ("duration: 20m", "duration: 100000h", "spec.duration: 100000h is too long for the simulator"),
        ("duration: 20m", "duration: 1e400h", "spec.duration: invalid duration"),
        # a regex that backtracked for hours on a long run of digits
        (
            "at: 5m",
            "at: '" + "9" * 5000 + "'",
            "spec.events[0].at: invalid duration: longer than 64 characters",
        ),
        # silent accepts: strict types, no infinity
        (
            "maxSize: 5",
            "maxSize: true",
            "spec.nodeGroups[0].maxSize: Input should be a valid integer, got True",
        ),
        ("maxSize: 5", 'maxSize: "5"', "spec.nodeGroups[0].maxSize: Input should be a valid integer"),
        ("price: 0.5", "price: .inf", "spec.nodeGroups[0].price: Input should be a finite number"),
        ("metadata: {name: web}", 'metadata: {name: ""}', "metadata.name: must not be empty"),
        # duplicates in spec.objects name both entries
        (
            "  events:",
            DEPLOYMENT + "  events:",
            "s.yaml: spec.objects[1]: Deployment web: duplicate Deployment default/web "
            "(also in s.yaml: spec.objects[0]: Deployment web)",
        ),
        # quantities over int64 milli-units
        ('cpu: "2"', 'cpu: "1e100"', "spec.nodeGroups[0].template.status.allocatable.cpu: quantity"),
    ],
)
def test_bad_scenarios_are_one_line_before_any_work(simulate, old, new, expected):
    assert old in TINY_SCENARIO
    message = simulate(TINY_SCENARIO.replace(old, new, 1))
    assert expected in message, message


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        (["--duration", ""], '--duration: invalid duration ""'),
        (
            ["--duration", "100000h"],
            "--duration: 100000h is too long for the simulator on this machine (at most 720h)",
        ),
        (["--duration=-5m"], "--duration: must be positive"),
        (["--out", "s.yaml"], "--out s.yaml: cannot write there: exists and is not a directory"),
        (["--out", "/dev/null/x"], "--out /dev/null/x: cannot write there: Not a directory"),
    ],
)
def test_bad_flags_are_one_line_before_any_work(simulate, flags, expected):
    assert simulate(TINY_SCENARIO, *flags).startswith(expected)


@pytest.mark.parametrize(
    ("trace", "expected"),
    [
        (None, "spec.traces[0].file: trace.csv: is a directory, not a file"),
        (b"time,replicas\n0,\xff\n", "spec.traces[0].file: trace.csv: not UTF-8 text (byte 16)"),
        (b"time,replicas\n0,1000000000\n", "line 2: replicas: 1,000,000,000 pods, more than the simulator's"),
        (b"time,replicas\n0,-1\n", "line 2: replicas: expected a non-negative integer, got '-1'"),
    ],
)
def test_bad_trace_files_name_the_file(simulate, tmp_path, trace, expected):
    if trace is None:
        (tmp_path / "trace.csv").mkdir()
    else:
        (tmp_path / "trace.csv").write_bytes(trace)
    text = TINY_SCENARIO + "  traces: [{name: web, file: trace.csv}]\n"
    assert expected in simulate(text)


def test_an_empty_scenario_file_is_named(simulate):
    assert simulate("  \n") == "s.yaml: no YAML or JSON document in the file (is it empty?)"


# -- the simulator's limits (sim/spec/limits.py; tests/sim/test_sim_limits.py has them all) ------
OVER_THE_LIMITS = (
    TINY_SCENARIO.replace("duration: 20m", "duration: 30m")
    .replace("at: 5m", "at: 20m")
    .replace("replicas: 12", "replicas: 100000")
)


def test_a_scale_event_to_100000_replicas_is_refused_naming_the_flag(simulate):
    assert simulate(OVER_THE_LIMITS) == (
        "s.yaml: spec.events[0].scale.replicas: 100,000 pods, more than the simulator's replicas limit of "
        f"{DEFAULT_LIMITS.replicas:,} (lift it with --limit replicas=N)"
    )
    assert simulate(OVER_THE_LIMITS, "--limit", "replicas=100000").startswith(
        "s.yaml: spec.events[0].scale.replicas: up to 100,000 pods in all, more than the simulator's pods limit"
    )


def test_the_limit_flag_lifts_a_limit(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(cli_main, "COMMANDS", ("simulate",))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "s.yaml").write_text(OVER_THE_LIMITS)
    # the event at 20m is past --duration: what runs is small, what loads is over the defaults
    flags = ["--limit", "replicas=100000", "--limit=pods=100,000", "--duration", "2m", "--json"]
    code = cli_main.main(["simulate", "s.yaml", "--no-report", *flags])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert '"simulated_seconds": 120.0' in out


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        (
            ["--limit", "pods"],
            "--limit pods: expected KIND=N with KIND one of pods, replicas, nodes, node-groups",
        ),
        (["--limit", "replicas=-5"], "--limit replicas=-5: must be at least 1"),
        (["--limit", "nodes=lots"], "--limit nodes=lots: expected a whole number, got 'lots'"),
    ],
)
def test_bad_limit_flags_are_one_line_before_any_work(simulate, flags, expected):
    assert simulate(TINY_SCENARIO, *flags).startswith(expected)


def test_a_run_past_the_recorded_events_limit_writes_nothing(simulate, tmp_path):
    """The limit is checked as the run goes: the output directory it created is removed."""
    message = simulate(TINY_SCENARIO, "--limit", "recorded-events=5", "--out", "out")
    assert not (tmp_path / "out").exists()
    assert message.startswith("s.yaml: the run had recorded 5 events after ")
    assert message.endswith("(lift it with --limit recorded-events=N); nothing written")


def test_sweep_is_held_to_the_limits_and_lifts_them_too(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(cli_main, "COMMANDS", ("sweep",))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "s.yaml").write_text(OVER_THE_LIMITS)
    sweep = ["sweep", "s.yaml", "--grid", "scan-interval=10s,20s", "--seeds", "1", "--workers", "1"]
    assert cli_main.main([*sweep, "--duration", "2m"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.strip() == (
        "kubetide: error: s.yaml: spec.events[0].scale.replicas: 100,000 pods, more than the simulator's "
        f"replicas limit of {DEFAULT_LIMITS.replicas:,} (lift it with --limit replicas=N)"
    )
    assert not (tmp_path / "kubetide-out").exists()
    lifted = ["--limit", "replicas=100000", "--limit", "pods=100000", "--duration", "2m", "--json"]
    assert cli_main.main([*sweep, *lifted]) == 0, capsys.readouterr().err
