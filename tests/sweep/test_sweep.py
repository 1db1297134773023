"""`kubetide sweep`: the grid, the engines' agreement with each other and with `simulate`, resuming,
failures, and the decisions drawn from the runs. The scenario is tests/sweep/small.yaml (40 min)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
import yaml

from kubetide.autoscaler.options import AutoscalerOptions
from kubetide.cli.main import main
from kubetide.cli.sweep import run_sweep
from kubetide.errors import UserError
from kubetide.sim.spec.scenario import load_scenario
from kubetide.sweep.engines import DaskEngine, LocalEngine
from kubetide.sweep.front import pareto_front
from kubetide.sweep.grid import Setting, build_settings, parse_grid, scenario_setting
from kubetide.sweep.results import RunStore, better_everywhere

SMALL = Path(__file__).parent / "small.yaml"
GRID = ["--grid", "scale-down-unneeded-time=2m,5m", "--grid", "expander=least-waste,random"]
SEEDS = [1, 2, 3]


def _sweep(out: Path, *extra: str) -> dict:
    code = main(["sweep", str(SMALL), *GRID, "--seed-list", "1,2,3", "--out", str(out), "--json", *extra])
    assert code == 0
    return json.loads((out / "sweep.json").read_text())


def _without_timing(sweep: dict) -> dict:
    return {key: value for key, value in sweep.items() if key != "timing"}


def _run_files(out: Path) -> dict[str, bytes]:
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted((out / "runs").rglob("summary.json"))}


def _without_wall(text: bytes) -> dict:
    summary = json.loads(text)
    summary.pop("wall_seconds")
    return summary


@pytest.fixture(scope="module")
def local_sweep(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("local")
    _sweep(out, "--workers", "2")
    return out


def test_local_pool_and_dask_agree_run_by_run_and_in_aggregate(local_sweep, tmp_path):
    scenario = load_scenario(SMALL)
    grid = parse_grid(GRID[1::2])
    settings, own = scenario_setting(build_settings(grid, scenario.options), scenario.options)
    dask_out = tmp_path / "dask"
    store = RunStore(dask_out)
    engine = DaskEngine(workers=1, local_processes=False)
    dask = run_sweep(scenario, grid, settings, own, SEEDS, store, engine)

    local = json.loads((local_sweep / "sweep.json").read_text())
    assert local["timing"]["runs"] == 12 and dask["timing"]["runs"] == 12
    local_runs, dask_runs = _run_files(local_sweep), _run_files(dask_out)
    assert len(local_runs) == 12 and local_runs.keys() == dask_runs.keys()
    for name, text in local_runs.items():
        assert _without_wall(text) == _without_wall(dask_runs[name]), name
    assert _without_timing(local) == _without_timing(json.loads(json.dumps(dask)))
    assert (local_sweep / "summary.csv").read_bytes() == (dask_out / "summary.csv").read_bytes()
    assert local["failures"] == [] and all(not row["invariant_breaks"] for row in local["settings"])


def test_a_sweep_run_is_the_simulation_run_alone(local_sweep, tmp_path, capsys):
    """Same flags (written into the scenario's spec.autoscaler) and seed: the same summary.json."""
    document = yaml.safe_load(SMALL.read_text())
    document["spec"]["autoscaler"].update({"scale-down-unneeded-time": "2m", "expander": "random"})
    alone = tmp_path / "alone.yaml"
    alone.write_text(yaml.safe_dump(document))
    setting = Setting((("scale-down-unneeded-time", "2m"), ("expander", "random")))
    for seed in (1, 3):
        out = tmp_path / f"seed-{seed}"
        assert (
            main(["simulate", str(alone), "--seed", str(seed), "--out", str(out), "--json", "--no-report"])
            == 0
        )
        simulated = (out / "summary.json").read_bytes()
        swept = (local_sweep / "runs" / setting.id / f"seed-{seed}" / "summary.json").read_bytes()
        assert _without_wall(simulated) == _without_wall(swept)
    capsys.readouterr()


def test_outputs_hold_one_row_per_run_and_a_report(local_sweep):
    with (local_sweep / "summary.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == 12
    assert {r["expander"] for r in rows} == {"least-waste", "random"}
    sweep = json.loads((local_sweep / "sweep.json").read_text())
    assert len(sweep["settings"]) == 4  # the scenario's own (5m, least-waste) is in the grid
    assert sweep["scenario_setting"] in {row["id"] for row in sweep["settings"]}
    assert set(sweep["pareto_front"]) <= {row["id"] for row in sweep["settings"]}
    page = (local_sweep / "report.html").read_text()
    assert "Pareto front" in page


def test_the_report_is_drawn_by_the_simulators_stack(local_sweep):
    from kubetide.sim.report.plotting import CSS, TEMPLATE
    from kubetide.sweep.front import varying
    from kubetide.sweep.report import build_sweep_figure

    sweep = json.loads((local_sweep / "sweep.json").read_text())
    figure = build_sweep_figure(sweep, {})
    assert figure.layout.template == TEMPLATE
    # the trade-off plot(s), then per --grid flag one effect plot per metric the settings differ on
    axes = varying(sweep["settings"])
    pairs = max(1, len(axes) * (len(axes) - 1) // 2)
    titles = [a.text for a in figure.layout.annotations if a.yref == "paper"]
    assert len(titles) == pairs + max(1, len(axes)) * len(sweep["grid"])
    page = (local_sweep / "report.html").read_text()
    assert CSS in page and page.count('class="plotly-graph-div"') == 1
    assert page.count("plotly.js v") == 1  # inlined once
    for row in sweep["settings"]:  # a row per setting: its flags' values, then its medians
        cells = "".join(f"<th>{value}</th>" for value in row["flags"].values())
        assert f"</td>{cells}" in page


def test_rerunning_skips_stored_runs(local_sweep, tmp_path):
    again = _sweep(local_sweep, "--workers", "1")
    assert again["timing"]["runs"] == 0 and again["timing"]["reused"] == 12


def test_failed_runs_are_reported_and_the_sweep_goes_on(tmp_path, monkeypatch):
    import kubetide.sim.runtime.simulation as simulation

    real = simulation.Simulation

    class FailsOnSeedTwo(real):
        def run(self, progress=None):
            if self.seed == 2:
                raise RuntimeError("boom")
            return super().run(progress)

    monkeypatch.setattr(simulation, "Simulation", FailsOnSeedTwo)
    scenario = load_scenario(SMALL).with_duration(600)
    settings, own = scenario_setting([], scenario.options)
    sweep = run_sweep(scenario, {}, settings, own, [1, 2], RunStore(tmp_path), LocalEngine(1))
    assert sweep["failures"] == [{"setting": own.id, "flags": {}, "seed": 2, "error": "RuntimeError: boom"}]
    assert sweep["settings"][0]["runs"] == 1


def test_an_interrupted_sweep_keeps_finished_runs(tmp_path):
    class InterruptedAfterOne(LocalEngine):
        def run(self, scenario, tasks):
            for count, outcome in enumerate(super().run(scenario, tasks)):
                if count == 1:
                    raise KeyboardInterrupt
                yield outcome

    scenario = load_scenario(SMALL).with_duration(600)
    settings, own = scenario_setting([], scenario.options)
    with pytest.raises(KeyboardInterrupt):
        run_sweep(scenario, {}, settings, own, [1, 2, 3], RunStore(tmp_path), InterruptedAfterOne(1))
    assert len(list((tmp_path / "runs").rglob("summary.json"))) == 1
    sweep = run_sweep(scenario, {}, settings, own, [1, 2, 3], RunStore(tmp_path), LocalEngine(1))
    assert sweep["timing"]["reused"] == 1 and sweep["timing"]["runs"] == 2


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--grid", "scale-down-unneeded-tim=5m"], "unknown flag (did you mean scale-down-unneeded-time?)"),
        (["--grid", "scale-down-unneeded-time=5m,soon"], "--grid scale-down-unneeded-time=soon:"),
        (["--grid", "expander"], "--grid expander: expected FLAG=V1,V2"),
        (["--seed-list", "1,x"], "--seed-list 1,x: expected integers"),
        (["--seeds", "0"], "--seeds 0: must be at least 1"),
        (["--scheduler-address", "tcp://h:1"], "--scheduler-address: needs --engine dask"),
        (
            ["--engine", "dask", "--scheduler-address", "tcp://h:1"],
            "--scheduler-address tcp://h:1: not tls://",
        ),
        (["--engine", "dask", "--scheduler-address", "h:1"], "--scheduler-address h:1: not tls://"),
        (["--engine", "dask", "--scheduler-address", " "], "--scheduler-address: expected tls://HOST:PORT"),
        (["--engine", "dask", "--insecure"], "--insecure: only with --scheduler-address"),
        (["--duration=-5m"], "--duration: must be positive"),
    ],
)
def test_bad_input_is_one_line_before_any_run(tmp_path, capsys, args, message):
    out = tmp_path / "out"
    assert main(["sweep", str(SMALL), "--out", str(out), *args]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err
    assert not out.exists()


def test_grid_values_split_on_semicolons_when_present_and_repeat_adds_values():
    grid = parse_grid(
        ["expander=priority,least-waste;random", "max-drain-parallelism=1,5", "max-drain-parallelism=10"]
    )
    assert grid == {"expander": ["priority,least-waste", "random"], "max-drain-parallelism": ["1", "5", "10"]}
    settings = build_settings(grid, AutoscalerOptions())
    assert len(settings) == 6 and len({s.id for s in settings}) == 6
    with pytest.raises(UserError):
        parse_grid(["=1,2"])


def test_the_scenarios_own_setting_is_added_when_the_grid_lacks_it():
    base = AutoscalerOptions()
    settings, own = scenario_setting(build_settings({"max-drain-parallelism": ["7"]}, base), base)
    assert own.flags == () and settings[0] is own and len(settings) == 2


def _row(id_: str, cost: float, pending: float, rest: float = 1.0) -> dict:
    medians = {
        "cost": cost,
        "pending_pod_seconds": pending,
        "node_hours": rest,
        "max_pending": rest,
        "evictions": rest,
        "drain_makespan": rest,
        "below_pdb_minimum_seconds": rest,
        "below_desired_pod_seconds": rest,
    }
    return {
        "id": id_,
        "runs": 3,
        "metrics": {k: {"p10": v, "median": v, "p90": v} for k, v in medians.items()},
    }


def test_pareto_front_and_settings_better_than_the_scenarios_everywhere():
    rows = [
        _row("own", 10, 100),
        _row("cheap", 5, 200),
        _row("better", 9, 90),
        _row("worse", 11, 110),
        _row("mixed", 9, 90, rest=2.0),
    ]
    # "mixed" ties "better" on cost and pending but evicts twice as many pods: off the front, which
    # is over the three trade-offs that vary (cost vs pending alone had it on).
    assert pareto_front(rows) == (["cost", "pending_pod_seconds", "evictions"], ["cheap", "better"])
    assert better_everywhere(rows, "own") == ["better"]


def test_sweep_json_and_the_report_give_the_same_front(local_sweep):
    from kubetide.sweep.front import front, varying

    sweep = json.loads((local_sweep / "sweep.json").read_text())
    metrics = varying(sweep["settings"])
    assert metrics and sweep["pareto_front_metrics"] == metrics
    assert sweep["pareto_front"] == front(sweep["settings"], metrics)
    page = (local_sweep / "report.html").read_text()
    assert page.count('title="on the Pareto front"') == len(sweep["pareto_front"])
    assert f"Pareto front: {len(sweep['pareto_front'])} of {len(sweep['settings'])} settings" in page


def sweep_on_dask(address: str, out: Path, *flags: str) -> Path:
    """`kubetide sweep` of the small grid, seed 1, on the Dask scheduler at `address`: its four
    runs ran there, on its one worker. Returns the output directory."""
    on_dask = ["--engine", "dask", "--scheduler-address", address, *flags]
    code = main(["sweep", str(SMALL), *GRID, "--seed-list", "1", "--out", str(out), "--json", *on_dask])
    assert code == 0
    remote = json.loads((out / "sweep.json").read_text())
    assert remote["timing"] == remote["timing"] | {"engine": "dask", "workers": 1, "runs": 4}
    return out


def test_the_cli_runs_on_a_dask_scheduler_by_address(local_sweep, tmp_path):
    from distributed import LocalCluster

    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None) as cluster:
        # --insecure: an in-process scheduler, nothing crosses a network
        out = sweep_on_dask(cluster.scheduler_address, tmp_path / "remote", "--insecure")
    for name, text in _run_files(out).items():
        assert _without_wall(text) == _without_wall((local_sweep / name).read_bytes()), name


def test_the_cli_runs_on_a_tls_scheduler_with_certificates_from_dask_config(local_sweep, tmp_path):
    import dask
    from distributed import LocalCluster
    from distributed.security import Security

    # Certificates as an operator gives them: files named in Dask's config (here a throwaway CA).
    security = Security.temporary()
    pem = {"ca": security.tls_ca_file, "cert": security.tls_client_cert, "key": security.tls_client_key}
    files = {}
    for name, text in pem.items():
        files[name] = tmp_path / f"{name}.pem"
        files[name].write_text(text)
    tls = {
        "distributed.comm.tls.ca-file": str(files["ca"]),
        "distributed.comm.tls.client.cert": str(files["cert"]),
        "distributed.comm.tls.client.key": str(files["key"]),
        "distributed.comm.require-encryption": True,
    }
    with (
        LocalCluster(
            n_workers=1,
            threads_per_worker=1,
            processes=False,
            dashboard_address=None,
            protocol="tls://",
            security=security,
        ) as cluster,
        dask.config.set(tls),
    ):
        assert cluster.scheduler_address.startswith("tls://")
        sweep_on_dask(cluster.scheduler_address, tmp_path / "remote")


def test_grid_flags_are_checked_and_warned_of_once_per_flag():
    warnings: list[str] = []
    settings = build_settings(
        {"startup-taint": ["a", "b"], "kubeconfig": ["/x", "/y"], "scan-interval": ["5s", "10s"]},
        AutoscalerOptions(),
        warnings,
    )
    assert len(settings) == 8
    assert [w.split(":")[0] for w in warnings] == ["--grid startup-taint", "--grid kubeconfig"]
    assert "approximated" in warnings[0] and "ignored, an infrastructure flag" in warnings[1]


@pytest.mark.parametrize(
    ("tls", "message"),
    [
        ({}, "no TLS configuration: set Dask's distributed.comm.tls.ca-file"),
        (
            {"ca-file": "missing-ca.pem", "client.cert": "missing-cert.pem", "client.key": "missing-key.pem"},
            "Dask's TLS configuration: [Errno 2] No such file or directory",
        ),
        (
            {"ca-file": "not-a-certificate.pem", "client.cert": "not-a-certificate.pem"},
            "Dask's TLS configuration:",
        ),
    ],
)
def test_a_tls_address_without_a_usable_dask_tls_configuration_is_one_line(tmp_path, capsys, tls, message):
    """distributed only reads its TLS settings when it connects, and without them raised a
    TypeError (issue 36); kubetide checks them before connecting."""
    import dask

    (tmp_path / "not-a-certificate.pem").write_text("not a certificate\n")
    settings = {f"distributed.comm.tls.{key}": str(tmp_path / name) for key, name in tls.items()}
    with dask.config.set(settings):
        args = ["--engine", "dask", "--scheduler-address", "tls://127.0.0.1:1"]
        code = main(["sweep", str(SMALL), "--out", str(tmp_path / "out"), *GRID, "--seed-list", "1", *args])
    err = capsys.readouterr().err
    assert code == 2, err
    assert f"kubetide: error: --scheduler-address tls://127.0.0.1:1: {message}" in err
    assert err.count("kubetide: error:") == 1 and "Traceback" not in err
