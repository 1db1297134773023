"""The simulated HPA controller (sim/runtime/hpa.py) moves replicas as kube-controller-manager would,
step by step, with each expected step computed by hand from upstream's algorithm."""

from __future__ import annotations

from sim_helpers import deployment, group, make_scenario, simulate

from kubetide.sim.runtime.simulation import NoAutoscaler

FAST = {
    "podStartupDelay": {"min": "2s", "max": "2s"},
    "controllerDelay": {"min": "1s", "max": "1s"},
}


def hpa(name="web", minimum=1, maximum=10, target=50, behavior=None, namespace="default", status=None):
    spec = {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": name},
        "minReplicas": minimum,
        "maxReplicas": maximum,
        "metrics": [
            {
                "type": "Resource",
                "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": target}},
            }
        ],
    }
    if behavior is not None:
        spec["behavior"] = behavior
    obj = {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }
    if status is not None:
        obj["status"] = status
    return obj


def rescales(sim):
    return [
        (e["time"], int(e["message"].split(";")[0].split()[-1]))
        for e in sim.log.entries
        if e["reason"] == "SuccessfulRescale"
    ]


def run(scenario, seconds):
    sim = simulate(scenario, NoAutoscaler)
    sim.engine.run_until(sim.engine.start + seconds)
    return sim


def test_replicas_follow_a_usage_trace_step_by_step(tmp_path):
    """4 pods of 1 cpu at 500m (50% of a 50% target) hold; at 10m usage doubles:
    - 600 s: 100% / 50% = 2.0 -> ceil(2 x 4) = 8 (the v1-style limit max(2 x 4, 4) = 8 allows it);
    - 615 s: the 4 new pods started at 605 s have no metric yet (first sample 15 s after start):
      on a scale-up they count at 0: 4 000m / 8 000m = 50% -> 1.0, within tolerance: 8;
    - 630 s: 8 pods at 100% -> 16, capped at maxReplicas 10;
    at 20m usage drops to 100m (10%): the downscale window (5 min) holds the last high
    recommendation (1 185 s) until 1 500 s, when ceil(0.2 x 10) = 2; the 2 left at 10% then want
    ceil(0.2 x 2) = 1, which the window holds back until 1 500 s's recommendation (2) ages out
    at 1 815 s."""
    trace = tmp_path / "web.csv"
    trace.write_text("time,cpu\n0,500m\n10m,1000m\n20m,100m\n")
    scenario = make_scenario(
        groups=[group(size=4, cpu="4")],
        objects=[deployment("web", 4, cpu="1", memory="128Mi"), hpa()],
        usage=[{"match": {"kind": "Deployment", "name": "web"}, "trace": str(trace)}],
        cluster=FAST,
        duration="40m",
    )
    sim = run(scenario, 2400)
    assert rescales(sim) == [(600.0, 8), (630.0, 10), (1500.0, 2), (1815.0, 1)]
    summary = sim.hpas.summary()["default/web"]
    assert (summary["initial"], summary["peak"], summary["final"], summary["rescales"]) == (4, 10, 1, 4)
    assert sim.world.workloads["Deployment/default/web"].replicas == 1


def test_behavior_policies_pace_the_scale_down(tmp_path):
    """behavior.scaleDown: no window, Pods 1 per 60 s: 6 pods at 10% of a 50% target want
    ceil(0.2 x 6) = 2, and the policy lets one pod go per minute (the event at 15 s is out of the
    period at 75 s: upstream counts events strictly after now - 60 s): 5 at 15 s, 4 at 75 s, 3 at
    135 s, 2 at 195 s; each pod still uses 10%, so 2 want ceil(0.4) = 1 at 255 s (minReplicas)."""
    trace = tmp_path / "web.csv"
    trace.write_text("time,cpu\n0,100m\n")
    behavior = {
        "scaleDown": {
            "stabilizationWindowSeconds": 0,
            "policies": [{"type": "Pods", "value": 1, "periodSeconds": 60}],
        }
    }
    scenario = make_scenario(
        groups=[group(size=4, cpu="4")],
        objects=[deployment("web", 6, cpu="1", memory="128Mi"), hpa(behavior=behavior)],
        usage=[{"match": {"kind": "Deployment", "name": "web"}, "trace": str(trace)}],
        cluster=FAST,
        duration="10m",
    )
    sim = run(scenario, 600)
    assert rescales(sim) == [(15.0, 5), (75.0, 4), (135.0, 3), (195.0, 2), (255.0, 1)]


def test_a_dump_without_profiles_holds_at_its_status_reading():
    """No usage profile: the pods use what the HPA's status last read (35% of a 50% target would
    be a scale-down; here the status says 48%, within tolerance), so nothing moves."""
    status = {
        "currentReplicas": 5,
        "desiredReplicas": 5,
        "currentMetrics": [
            {
                "type": "Resource",
                "resource": {"name": "cpu", "current": {"averageUtilization": 48, "averageValue": "480m"}},
            }
        ],
    }
    scenario = make_scenario(
        groups=[group(size=4, cpu="4")],
        objects=[deployment("web", 5, cpu="1", memory="128Mi"), hpa(status=status)],
        cluster=FAST,
        duration="30m",
    )
    sim = run(scenario, 1800)
    assert rescales(sim) == []
    # without the status, the request (100% of a 50% target) would double it at the first sync
    scenario = make_scenario(
        groups=[group(size=4, cpu="4")],
        objects=[deployment("web", 5, cpu="1", memory="128Mi"), hpa()],
        cluster=FAST,
        duration="1m",
    )
    assert rescales(run(scenario, 60))[0] == (15.0, 10)


def test_autoscaler_follows_the_hpa(tmp_path):
    """The HPA's new pods do not fit: the node autoscaler adds nodes for them."""
    from kubetide.sim.runtime.simulation import Simulation

    trace = tmp_path / "web.csv"
    trace.write_text("time,cpu\n0,500m\n5m,1500m\n")
    scenario = make_scenario(
        groups=[group(size=1, cpu="4", max_size=10)],
        objects=[deployment("web", 3, cpu="1", memory="128Mi"), hpa(maximum=9)],
        usage=[{"match": {"kind": "Deployment", "name": "web"}, "trace": str(trace)}],
        cluster=FAST,
        duration="20m",
    )
    result = Simulation(scenario).run()
    assert result.summary["hpa"]["default/web"]["final"] == 9
    assert result.summary["nodes"]["final"] > 1
    assert result.summary["pods"]["pending_at_end"] == 0
    assert any("hpa_default/web_replicas" in row for row in result.timeline)


def test_a_per_workload_trace_drives_each_workload(tmp_path):
    """One `time,workload,cpu` file for two Deployments: web doubles at 5m (50% -> 100% of a 50%
    target: ceil(2 x 2) = 4 at 300 s; at 315 s its 2 new pods have no metric yet and count at 0:
    2 000m / 4 000m = 50%, no change), api stays at its target throughout."""
    (tmp_path / "night.csv").write_text(
        "time,workload,cpu\n0,default/web,500m\n0,default/api,500m\n5m,default/web,1\n"
    )
    api_hpa = hpa(name="api")
    scenario = make_scenario(
        groups=[group(size=4, cpu="4")],
        objects=[
            deployment("web", 2, cpu="1", memory="128Mi"),
            hpa(),
            deployment("api", 2, cpu="1", memory="128Mi"),
            api_hpa,
        ],
        usage=[{"trace": str(tmp_path / "night.csv")}],
        cluster=FAST,
        duration="6m",
    )
    sim = run(scenario, 320)
    moves = [(e["time"], e["object"]) for e in sim.log.entries if e["reason"] == "SuccessfulRescale"]
    assert moves == [(300.0, "HorizontalPodAutoscaler/default/web")]
    assert sim.world.workloads["Deployment/default/web"].replicas == 4


def test_a_per_workload_trace_rejects_a_match(tmp_path):
    import pytest

    from kubetide.sim.spec.errors import ScenarioError

    (tmp_path / "night.csv").write_text("time,workload,cpu\n0,default/web,500m\n")
    with pytest.raises(ScenarioError, match="names its workloads"):
        make_scenario(
            objects=[deployment("web", 2)],
            usage=[{"match": {"kind": "Deployment", "name": "web"}, "trace": str(tmp_path / "night.csv")}],
        )
    (tmp_path / "bad.csv").write_text("time,workload,cpu\n0,web,500m\n")
    with pytest.raises(ScenarioError, match="expected namespace/name"):
        make_scenario(objects=[deployment("web", 2)], usage=[{"trace": str(tmp_path / "bad.csv")}])


def test_the_report_draws_each_hpa_against_its_bounds_and_target(tmp_path):
    from kubetide.sim.report.figures import build_hpa_figure
    from kubetide.sim.report.html import render
    from kubetide.sim.runtime.simulation import Simulation

    trace = tmp_path / "web.csv"
    trace.write_text("time,cpu\n0,500m\n2m,100m\n")
    scenario = make_scenario(
        groups=[group(size=2, cpu="4")],
        objects=[deployment("web", 4, cpu="1", memory="128Mi"), hpa(minimum=2, maximum=7)],
        usage=[{"match": {"kind": "Deployment", "name": "web"}, "trace": str(trace)}],
        cluster=FAST,
        duration="10m",
    )
    result = Simulation(scenario).run()
    figure = build_hpa_figure([("run", result)])
    replicas, cpu = figure.data
    assert replicas.y[0] == 4 and replicas.y[-1] == 2  # 10% of target 50%, after the window
    assert cpu.y[-1] == 10
    assert sorted(shape.y0 for shape in figure.layout.shapes) == [2, 7, 50]
    assert "HorizontalPodAutoscalers" in render(result)
    plain = Simulation(make_scenario(objects=[deployment("web", 2)], duration="1m")).run()
    assert build_hpa_figure([("run", plain)]) is None


def test_reusing_the_last_syncs_readings_changes_nothing(tmp_path, monkeypatch):
    """The controller reuses a sync's readings while nothing they depend on changed; with that
    reuse turned off (every sync reads every pod) the run is the same, event for event."""
    import kubetide.sim.runtime.hpa as sim_hpa
    from kubetide.sim.runtime.simulation import Simulation

    trace = tmp_path / "web.csv"
    trace.write_text("time,cpu\n0,400m\n4m,900m\n9m,200m\n14m,700m\n")
    behavior = {"scaleDown": {"stabilizationWindowSeconds": 60}}
    scenario = make_scenario(
        groups=[group(size=2, cpu="4", max_size=6)],
        objects=[
            deployment("web", 3, cpu="1", memory="128Mi"),
            hpa(maximum=12, behavior=behavior),
            deployment("api", 2, cpu="500m", memory="128Mi"),
            hpa(name="api", maximum=6),
        ],
        usage=[
            {"match": {"kind": "Deployment", "name": "web"}, "trace": str(trace)},
            {"match": {"kind": "Deployment", "name": "api"}, "cpu": {"base": "250m", "jitter": 0.3}},
        ],
        events=[{"at": "6m", "scale": {"kind": "Deployment", "name": "web", "replicas": 2}}],
        duration="20m",
    )
    cached = Simulation(scenario).run()
    monkeypatch.setattr(sim_hpa, "_next_flip", lambda pod, now, settings: now)  # never valid
    fresh = Simulation(scenario).run()
    assert len([e for e in cached.events if e["reason"] == "SuccessfulRescale"]) >= 3
    assert cached.events == fresh.events
    assert cached.timeline == fresh.timeline


def test_an_hpa_applied_later_and_deleted_later(tmp_path):
    """An HPA created by an `apply` event syncs from the next period on (the cluster had none
    before); a `delete` event stops it."""
    trace = tmp_path / "web.csv"
    trace.write_text("time,cpu\n0,1\n")
    scenario = make_scenario(
        groups=[group(size=4, cpu="4")],
        objects=[deployment("web", 2, cpu="1", memory="128Mi")],
        usage=[{"match": {"kind": "Deployment", "name": "web"}, "trace": str(trace)}],
        events=[
            {"at": "2m", "apply": [hpa(maximum=5)]},
            {"at": "3m", "delete": {"kind": "HorizontalPodAutoscaler", "name": "web"}},
        ],
        cluster=FAST,
        duration="10m",
    )
    sim = run(scenario, 600)
    # 120 s: applied; 135 s: 100% of 50% -> ceil(2 x 2) = 4; 150 s: the 2 new pods have no
    # metric (0 on a scale-up): 2 000 / 4 000 = 50%, no change; 165 s: 4 at 100% -> 8, max 5
    assert rescales(sim) == [(135.0, 4), (165.0, 5)]
    assert sim.world.workloads["Deployment/default/web"].replicas == 5
